//! Standard input for answers, read by one thread and handed out a line at
//! a time: a question that stops being asked while its answer is read
//! ([`Reading::stop`]) lets go at once, and the next line typed goes to
//! the next question, not to the one withdrawn.

use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// How often a waiting reader checks whether its question was withdrawn.
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// The lines of an input, read ahead by their own thread.
pub struct Lines {
    rx: Mutex<Receiver<io::Result<Vec<u8>>>>,
}

impl Lines {
    /// The lines of `input`, read on a thread of their own.
    pub fn spawn(mut input: impl BufRead + Send + 'static) -> Self {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = Vec::new();
                match input.read_until(b'\n', &mut line) {
                    Ok(0) => break,
                    Ok(_) => {
                        if tx.send(Ok(line)).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        Self { rx: Mutex::new(rx) }
    }

    /// The process's standard input, its thread started on first use.
    pub fn stdin() -> &'static Lines {
        static STDIN: OnceLock<Lines> = OnceLock::new();
        STDIN.get_or_init(|| Lines::spawn(io::BufReader::new(io::stdin())))
    }

    /// A reader of the next lines until it is stopped.
    pub fn reader(&self) -> Reading<'_> {
        Reading {
            lines: self,
            stopped: Arc::new(AtomicBool::new(false)),
            buf: Vec::new(),
            pos: 0,
        }
    }
}

/// Reads lines from [`Lines`]; ends (as at end of input) once stopped.
pub struct Reading<'a> {
    lines: &'a Lines,
    stopped: Arc<AtomicBool>,
    buf: Vec<u8>,
    pos: usize,
}

impl Reading<'_> {
    /// What stops this reader from another thread.
    pub fn stopper(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stopped)
    }
}

impl Read for Reading<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Reading<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.buf.len() {
            if self.stopped.load(Ordering::Acquire) {
                return Ok(&[]);
            }
            let rx = self.lines.rx.lock().unwrap_or_else(PoisonError::into_inner);
            match rx.recv_timeout(CHECK_EVERY) {
                Ok(line) => {
                    self.buf = line?;
                    self.pos = 0;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(&[]),
            }
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;

    use super::*;

    /// An input whose lines are written by the test, one at a time.
    fn pipe() -> (Lines, std::os::unix::net::UnixStream) {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        (Lines::spawn(io::BufReader::new(theirs)), ours)
    }

    #[test]
    fn a_stopped_reader_lets_the_next_line_go_to_the_next_question() {
        let (lines, mut input) = pipe();
        let mut withdrawn = lines.reader();
        let stop = withdrawn.stopper();
        let waiting = std::thread::scope(|s| {
            let waiting = s.spawn(move || {
                let mut line = String::new();
                withdrawn.read_line(&mut line).map(|_| line)
            });
            stop.store(true, Ordering::Release);
            waiting.join().unwrap()
        });
        assert_eq!(
            waiting.unwrap(),
            "",
            "a stopped reader ends as at end of input"
        );

        input.write_all(b"done\nsecond\n").unwrap();
        let mut next = lines.reader();
        let mut line = String::new();
        next.read_line(&mut line).unwrap();
        assert_eq!(line, "done\n");
        line.clear();
        next.read_line(&mut line).unwrap();
        assert_eq!(line, "second\n");

        drop(input);
        line.clear();
        assert_eq!(next.read_line(&mut line).unwrap(), 0);
    }
}
