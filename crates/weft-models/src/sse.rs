//! An incremental Server-Sent Events decoder following the WHATWG rules.
//!
//! Bytes arrive in chunks split anywhere (mid-line, mid-UTF-8 character); the
//! decoder keeps the unfinished line and hands out one [`SseEvent`] per
//! dispatch: a blank line dispatches, one leading space after `field:` is
//! stripped, several `data:` lines are joined with `\n`, lines starting with
//! `:` are comments, and lines end with LF, CRLF or CR.
//!
//! Lines are only decoded once complete, so a UTF-8 character split across
//! chunks is reassembled before it is validated. [`SseDecoder::finish`]
//! dispatches an event left unterminated at the end of the stream; whether
//! that stream was complete is the provider decoder's call (it knows its
//! terminal event).

use memchr::memchr2;

/// One dispatched event, borrowed from the decoder until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, empty when absent (the WHATWG default is `message`).
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
}

/// A line the decoder could not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid UTF-8 in SSE line `{line}`")]
pub struct SseError {
    /// The offending line, lossily decoded and shortened.
    pub line: String,
}

/// The incremental decoder; see the module docs.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the line not yet terminated.
    pending: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// The previous chunk ended with CR: a leading LF in the next one belongs to it.
    after_cr: bool,
    /// A first line was read (a byte-order mark may only open the stream).
    past_first_line: bool,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk, calling `on_event` for each event it completes.
    pub fn feed<E>(
        &mut self,
        mut chunk: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<SseError>,
    {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(pos) = memchr2(b'\n', b'\r', chunk) {
            let line_end = pos;
            let mut next = pos + 1;
            if chunk[pos] == b'\r' {
                if next < chunk.len() {
                    if chunk[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.after_cr = true;
                }
            }
            if self.pending.is_empty() {
                self.line(&chunk[..line_end], on_event)?;
            } else {
                self.pending.extend_from_slice(&chunk[..line_end]);
                let line = std::mem::take(&mut self.pending);
                let res = self.line(&line, on_event);
                self.pending = line;
                self.pending.clear();
                res?;
            }
            chunk = &chunk[next..];
        }
        self.pending.extend_from_slice(chunk);
        Ok(())
    }

    /// Ends the stream: an unterminated last line is read, and an event with
    /// data still pending is dispatched.
    pub fn finish<E>(
        &mut self,
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<SseError>,
    {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, on_event)?;
        }
        self.dispatch(on_event)
    }

    fn line<E>(
        &mut self,
        mut line: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<SseError>,
    {
        if !self.past_first_line {
            self.past_first_line = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                let value = utf8(value, line)?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            b"event" => {
                let value = utf8(value, line)?;
                self.event.clear();
                self.event.push_str(value);
            }
            // `id` and `retry` matter for reconnecting EventSource clients only.
            _ => {}
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.has_data {
            self.event.clear();
            return Ok(());
        }
        let res = on_event(SseEvent {
            event: &self.event,
            data: &self.data,
        });
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        res
    }
}

fn utf8<'a>(value: &'a [u8], line: &[u8]) -> Result<&'a str, SseError> {
    std::str::from_utf8(value).map_err(|_| SseError {
        line: crate::util::shorten(&String::from_utf8_lossy(line)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_split(input: &[u8], sizes: &[usize]) -> Vec<(String, String)> {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| -> Result<(), SseError> {
            out.push((e.event.to_owned(), e.data.to_owned()));
            Ok(())
        };
        let mut rest = input;
        let mut i = 0;
        while !rest.is_empty() {
            let n = sizes[i % sizes.len()].min(rest.len());
            dec.feed(&rest[..n], &mut push).unwrap();
            rest = &rest[n..];
            i += 1;
        }
        dec.finish(&mut push).unwrap();
        out
    }

    #[test]
    fn whatwg_rules() {
        let input =
            "event: a\ndata: x\ndata:  y\n\n: comment\ndata:z\r\n\r\nevent:b\rdata: é\r\rdata\n\n"
                .as_bytes();
        let expected = vec![
            ("a".to_owned(), "x\n y".to_owned()),
            (String::new(), "z".to_owned()),
            ("b".to_owned(), "é".to_owned()),
            (String::new(), String::new()),
        ];
        for size in 1..input.len() {
            assert_eq!(
                decode_split(input, &[size]),
                expected,
                "split every {size} bytes"
            );
        }
    }

    #[test]
    fn leading_byte_order_mark_is_skipped_even_when_split() {
        let input = b"\xEF\xBB\xBFdata: a\n\n";
        for n in 1..input.len() {
            assert_eq!(
                decode_split(input, &[n]),
                vec![(String::new(), "a".to_owned())]
            );
        }
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_unterminated_last_event_is() {
        let input = b"event: ping\n\nevent: stop\ndata: {}";
        assert_eq!(
            decode_split(input, &[3]),
            vec![("stop".to_owned(), "{}".to_owned())]
        );
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let mut dec = SseDecoder::new();
        let err = dec
            .feed(
                b"data: \xff\xfe\n\n",
                &mut |_e: SseEvent<'_>| -> Result<(), SseError> { Ok(()) },
            )
            .unwrap_err();
        assert_eq!(err.line, "data: \u{fffd}\u{fffd}");
    }
}
