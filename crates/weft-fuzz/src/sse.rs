//! Server-Sent Events framing: turns events (an optional `event:` name and
//! a data text) into bytes the way different servers write them, with
//! random line ends, spacing, comments, unknown fields and data split over
//! several `data:` lines.

use proptest::prelude::*;
use proptest::sample::select;

/// How a line ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnd {
    /// `\n`.
    Lf,
    /// `\r\n`.
    CrLf,
    /// `\r`.
    Cr,
}

impl LineEnd {
    fn bytes(self) -> &'static [u8] {
        match self {
            LineEnd::Lf => b"\n",
            LineEnd::CrLf => b"\r\n",
            LineEnd::Cr => b"\r",
        }
    }
}

/// How one event is written.
#[derive(Debug, Clone)]
pub struct Framing {
    /// The line end of every line of the event.
    pub line_end: LineEnd,
    /// Whether a space follows each field's colon.
    pub space: bool,
    /// A comment line (`: ...`) before the event.
    pub comment: bool,
    /// An `id:` line after the data.
    pub id: bool,
    /// Put the `event:` line after the data lines instead of before.
    pub event_last: bool,
}

/// A random [`Framing`], mostly the common `\n`, one space, no extras.
pub fn framing() -> impl Strategy<Value = Framing> {
    (
        prop_oneof![
            6 => Just(LineEnd::Lf),
            2 => Just(LineEnd::CrLf),
            1 => Just(LineEnd::Cr)
        ],
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(line_end, space, comment, id, event_last)| Framing {
            line_end,
            space,
            comment,
            id,
            event_last,
        })
}

/// A random event name from `names`, or none.
pub fn event_name(names: &'static [&'static str]) -> BoxedStrategy<Option<String>> {
    prop_oneof![
        1 => Just(None),
        3 => select(names).prop_map(|n| Some(n.to_owned())),
    ]
    .boxed()
}

/// Appends one event to `out`: each line of `data` becomes a `data:` line
/// (text with `\n` inside arrives as several lines, joined again by the
/// reader), then a blank line dispatches it. Neither `name` nor `data` may
/// hold a `\r`, nor `name` a `\n`: they would end the line.
pub fn write_event(out: &mut Vec<u8>, name: Option<&str>, data: &str, f: &Framing) {
    let end = f.line_end.bytes();
    let sep: &[u8] = if f.space { b": " } else { b":" };
    let field = |out: &mut Vec<u8>, key: &[u8], value: &[u8]| {
        out.extend_from_slice(key);
        out.extend_from_slice(sep);
        out.extend_from_slice(value);
        out.extend_from_slice(end);
    };
    if f.comment {
        field(out, b"", b"keep-alive");
    }
    if let (Some(name), false) = (name, f.event_last) {
        field(out, b"event", name.as_bytes());
    }
    for line in data.split('\n') {
        // A value starting with a space would lose it to the optional one.
        let sep_space = !f.space && line.starts_with(' ');
        out.extend_from_slice(b"data");
        out.extend_from_slice(if sep_space { b": " } else { sep });
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(end);
    }
    if f.id {
        field(out, b"id", b"7");
    }
    if let (Some(name), true) = (name, f.event_last) {
        field(out, b"event", name.as_bytes());
    }
    out.extend_from_slice(end);
}
