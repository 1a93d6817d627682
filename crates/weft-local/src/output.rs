//! The sans-IO splitter turning a local model's generated text into answer
//! text and tool calls, and stopping at stop sequences.
//!
//! Text is released as soon as it cannot be the start of a stop sequence or
//! of a call's opening tag, so streaming lags the model by at most the
//! longest such marker. Stop sequences apply to text only: inside a call the
//! grammar governs. A call is released whole once its closing tag arrives.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::grammar::{CALL_CLOSE, CALL_OPEN};

/// What the splitter releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Answer text.
    Text(String),
    /// A complete tool call.
    Call {
        /// The tool's name as the model wrote it.
        name: String,
        /// The arguments' JSON text exactly as the model wrote it.
        arguments: String,
    },
}

/// Why output could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// A call block is not `{"name": …, "arguments": …}`.
    #[error("tool call is not {{\"name\", \"arguments\"}} JSON: {message} (in `{text}`)")]
    BadCall {
        /// The block's text.
        text: String,
        /// What was wrong.
        message: String,
    },
    /// Output ended inside a call.
    #[error("output ended inside a tool call (`{text}`)")]
    Unfinished {
        /// The call's text so far.
        text: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Call,
}

/// Splits generated text; see the module docs.
#[derive(Debug)]
pub struct Splitter {
    stops: Vec<String>,
    calls: bool,
    mode: Mode,
    buf: String,
    stopped: bool,
    after_call: bool,
}

#[derive(Deserialize)]
struct CallWire<'a> {
    name: String,
    #[serde(borrow)]
    arguments: &'a RawValue,
}

impl Splitter {
    /// A splitter stopping at `stops` (empty ones are ignored), recognising
    /// calls when `calls` is set.
    pub fn new(stops: &[String], calls: bool) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            calls,
            mode: Mode::Text,
            buf: String::new(),
            stopped: false,
            after_call: false,
        }
    }

    /// Whether a stop sequence has been seen; later input is ignored.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Whether the splitter is inside a call.
    pub fn in_call(&self) -> bool {
        self.mode == Mode::Call
    }

    /// Feeds generated text; releases what is settled into `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<Piece>) -> Result<(), SplitError> {
        if self.stopped {
            return Ok(());
        }
        self.buf.push_str(text);
        loop {
            match self.mode {
                Mode::Text => {
                    if self.after_call {
                        // Blank lines between calls are not answer text.
                        let blank = self.buf.len() - self.buf.trim_start().len();
                        self.buf.drain(..blank);
                        if self.buf.is_empty() {
                            return Ok(());
                        }
                        self.after_call = false;
                    }
                    let stop = self
                        .stops
                        .iter()
                        .filter_map(|s| self.buf.find(s.as_str()))
                        .min();
                    let open = if self.calls {
                        self.buf.find(CALL_OPEN)
                    } else {
                        None
                    };
                    let stop_first = match (stop, open) {
                        (Some(s), Some(o)) => s < o,
                        (stop, _) => stop.is_some(),
                    };
                    if let Some(s) = stop.filter(|_| stop_first) {
                        emit_text(out, &self.buf[..s]);
                        self.buf.clear();
                        self.stopped = true;
                        return Ok(());
                    }
                    if let Some(o) = open {
                        emit_text(out, &self.buf[..o]);
                        self.buf.drain(..o + CALL_OPEN.len());
                        self.mode = Mode::Call;
                        continue;
                    }
                    let cut = self.buf.len() - self.held_back();
                    emit_text(out, &self.buf[..cut]);
                    self.buf.drain(..cut);
                    return Ok(());
                }
                Mode::Call => {
                    let Some(close) = self.buf.find(CALL_CLOSE) else {
                        return Ok(());
                    };
                    out.push(parse_call(&self.buf[..close])?);
                    self.buf.drain(..close + CALL_CLOSE.len());
                    self.mode = Mode::Text;
                    self.after_call = true;
                }
            }
        }
    }

    /// Ends the output; releases held text, or fails inside a call.
    pub fn finish(&mut self, out: &mut Vec<Piece>) -> Result<(), SplitError> {
        match self.mode {
            Mode::Text => {
                if !self.stopped {
                    emit_text(out, &self.buf);
                }
                self.buf.clear();
                Ok(())
            }
            Mode::Call => Err(SplitError::Unfinished {
                text: std::mem::take(&mut self.buf),
            }),
        }
    }

    /// Length of the longest tail of the buffer that may begin a marker.
    fn held_back(&self) -> usize {
        let markers = self
            .stops
            .iter()
            .map(String::as_str)
            .chain(self.calls.then_some(CALL_OPEN));
        let mut keep = 0;
        for m in markers {
            for (i, _) in m.char_indices().skip(1) {
                if i > keep && self.buf.ends_with(&m[..i]) {
                    keep = i;
                }
            }
        }
        keep
    }
}

fn emit_text(out: &mut Vec<Piece>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Piece::Text(last)) = out.last_mut() {
        last.push_str(text);
    } else {
        out.push(Piece::Text(text.to_owned()));
    }
}

fn parse_call(text: &str) -> Result<Piece, SplitError> {
    let wire: CallWire<'_> =
        serde_json::from_str(text.trim()).map_err(|e| SplitError::BadCall {
            text: text.to_owned(),
            message: e.to_string(),
        })?;
    Ok(Piece::Call {
        name: wire.name,
        arguments: wire.arguments.get().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split_all(chunks: &[&str], stops: &[&str], calls: bool) -> Result<Vec<Piece>, SplitError> {
        let stops: Vec<String> = stops.iter().map(|s| (*s).to_owned()).collect();
        let mut s = Splitter::new(&stops, calls);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out)?;
        }
        s.finish(&mut out)?;
        Ok(out)
    }

    #[test]
    fn text_stops_at_the_first_stop_sequence() {
        let out = split_all(&["Hello", " wor", "ld END more"], &["END", "world"], false).unwrap();
        assert_eq!(out, vec![Piece::Text("Hello ".into())]);
    }

    #[test]
    fn calls_are_cut_out_of_text() {
        let text = "Let me add.<tool_call>\n{\"name\": \"calc__add\", \"arguments\": {\"a\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n</tool_call>";
        let out = split_all(&[text], &[], true).unwrap();
        assert_eq!(
            out,
            vec![
                Piece::Text("Let me add.".into()),
                Piece::Call {
                    name: "calc__add".into(),
                    arguments: "{\"a\": 1}".into()
                },
                Piece::Call {
                    name: "x".into(),
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn stop_sequences_do_not_apply_inside_calls() {
        let text = "<tool_call>{\"name\": \"n\", \"arguments\": {\"s\": \"STOP\"}}</tool_call>";
        let out = split_all(&[text], &["STOP"], true).unwrap();
        assert_eq!(
            out,
            vec![Piece::Call {
                name: "n".into(),
                arguments: "{\"s\": \"STOP\"}".into()
            }]
        );
    }

    #[test]
    fn an_unfinished_call_is_an_error() {
        let err = split_all(&["<tool_call>{\"name\""], &[], true).unwrap_err();
        assert!(matches!(err, SplitError::Unfinished { .. }));
        let bad = split_all(&["<tool_call>{\"nam\": 1}</tool_call>"], &[], true).unwrap_err();
        assert!(matches!(bad, SplitError::BadCall { .. }));
    }

    #[test]
    fn without_calls_the_tag_is_text() {
        let out = split_all(&["a <tool_call> b"], &[], false).unwrap();
        assert_eq!(out, vec![Piece::Text("a <tool_call> b".into())]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// However the output is cut into pieces, the split is the same, and
        /// text released before a stop never holds a stop sequence.
        #[test]
        fn splitting_does_not_depend_on_chunking(
            text in "[ab<>/_clot ]{0,60}",
            cuts in proptest::collection::vec(0usize..60, 0..8),
            stop in "[ab]{1,3}",
        ) {
            let whole = split_all(&[&text], &[&stop], true);
            let mut bounds: Vec<usize> = cuts.into_iter().filter(|c| *c <= text.len()).collect();
            bounds.sort_unstable();
            bounds.dedup();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for b in bounds {
                chunks.push(&text[prev..b]);
                prev = b;
            }
            chunks.push(&text[prev..]);
            let pieces = split_all(&chunks, &[&stop], true);
            prop_assert_eq!(&pieces, &whole);
            if let Ok(pieces) = whole {
                for p in pieces {
                    if let Piece::Text(t) = p {
                        prop_assert!(!t.contains(stop.as_str()));
                        prop_assert!(!t.contains(CALL_OPEN));
                    }
                }
            }
        }
    }
}
