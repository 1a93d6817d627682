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
#[error("invalid UTF-8 in SSE field `{line}`")]
pub struct SseError {
    /// The offending field value, lossily decoded and shortened.
    pub line: String,
}

/// The incremental decoder; see the module docs.
///
/// An event's only `data:` line is usually complete inside one chunk; it is
/// then handed out as a slice of that chunk (`borrowed`) instead of being
/// copied, which is most of the decoder's cost. Anything else (several data
/// lines, a line split across chunks, an event left open at the end of a
/// chunk) goes through the `data` buffer.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the line not yet terminated.
    pending: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// The event's single data value, as a range of the chunk being fed.
    borrowed: Option<(usize, usize)>,
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
        input: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<SseError>,
    {
        let mut pos = 0;
        // An empty chunk leaves the question of a LF after the CR open.
        if self.after_cr && !input.is_empty() {
            self.after_cr = false;
            if input[0] == b'\n' {
                pos = 1;
            }
        }
        let res = self.lines(input, &mut pos, on_event);
        // Nothing may borrow from this chunk once it is gone.
        let borrowed = self.borrowed.take();
        res?;
        if let Some((start, end)) = borrowed {
            self.data.push_str(utf8(&input[start..end])?);
        }
        self.pending.extend_from_slice(&input[pos..]);
        Ok(())
    }

    fn lines<E>(
        &mut self,
        input: &[u8],
        pos: &mut usize,
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<SseError>,
    {
        while let Some(rel) = memchr2(b'\n', b'\r', &input[*pos..]) {
            let end = *pos + rel;
            let mut next = end + 1;
            if input[end] == b'\r' {
                if next < input.len() {
                    if input[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.after_cr = true;
                }
            }
            if self.pending.is_empty() {
                self.line(input, *pos, end, true, on_event)?;
            } else {
                self.pending.extend_from_slice(&input[*pos..end]);
                let line = std::mem::take(&mut self.pending);
                let res = self.line(&line, 0, line.len(), false, on_event);
                self.pending = line;
                self.pending.clear();
                res?;
            }
            *pos = next;
        }
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
            self.line(&line, 0, line.len(), false, on_event)?;
        }
        self.dispatch(&[], on_event)
    }

    /// Reads the line `input[start..end]`; `borrowable` when `input` is the
    /// chunk being fed (not the pending buffer).
    fn line<E>(
        &mut self,
        input: &[u8],
        mut start: usize,
        end: usize,
        borrowable: bool,
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<SseError>,
    {
        if !self.past_first_line {
            self.past_first_line = true;
            if input[start..end].starts_with(b"\xEF\xBB\xBF") {
                start += 3;
            }
        }
        let line = &input[start..end];
        if line.is_empty() {
            return self.dispatch(input, on_event);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value_start) = match memchr::memchr(b':', line) {
            Some(i) if line.get(i + 1) == Some(&b' ') => (&line[..i], start + i + 2),
            Some(i) => (&line[..i], start + i + 1),
            None => (line, end),
        };
        match name {
            b"data" => {
                if !self.has_data && borrowable {
                    self.borrowed = Some((value_start, end));
                } else {
                    if let Some((s, e)) = self.borrowed.take() {
                        self.data.push_str(utf8(&input[s..e])?);
                    }
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(utf8(&input[value_start..end])?);
                }
                self.has_data = true;
            }
            b"event" => {
                let value = utf8(&input[value_start..end])?;
                self.event.clear();
                self.event.push_str(value);
            }
            // `id` and `retry` matter for reconnecting EventSource clients only.
            _ => {}
        }
        Ok(())
    }

    /// Dispatches the event; `input` is the chunk a borrowed value points into.
    fn dispatch<E>(
        &mut self,
        input: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<SseError>,
    {
        if !self.has_data {
            self.event.clear();
            return Ok(());
        }
        self.has_data = false;
        let res = match self.borrowed.take() {
            Some((s, e)) => match utf8(&input[s..e]) {
                Ok(data) => on_event(SseEvent {
                    event: &self.event,
                    data,
                }),
                Err(err) => Err(err.into()),
            },
            None => on_event(SseEvent {
                event: &self.event,
                data: &self.data,
            }),
        };
        self.event.clear();
        self.data.clear();
        res
    }
}

fn utf8(value: &[u8]) -> Result<&str, SseError> {
    std::str::from_utf8(value).map_err(|_| SseError {
        line: crate::util::shorten(&String::from_utf8_lossy(value)),
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
        assert_eq!(err.line, "\u{fffd}\u{fffd}");
    }
}
