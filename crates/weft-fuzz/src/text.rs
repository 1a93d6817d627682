//! Strings built from pieces that trouble text handling: multi-byte and
//! combining characters, a byte-order mark, controls, quotes, line ends and
//! the delimiters of SSE, JSON and TOML, mixed with a target's own words.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

/// Pieces every generated string may contain.
pub const PIECES: &[&str] = &[
    "",
    " ",
    "a",
    "Z",
    "0",
    "é",
    "€",
    "😀",
    "\u{301}",
    "\u{feff}",
    "\u{2028}",
    "\u{10ffff}",
    "\0",
    "\u{7f}",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\"",
    "'",
    "\\",
    "\\u0000",
    ":",
    "=",
    ".",
    "#",
    "[",
    "]",
    "{",
    "}",
    "data:",
    "event:",
    "[DONE]",
    "weft.",
    "\"\"\"",
    "'''",
];

/// A string of up to `max_pieces` pieces from [`PIECES`], `words` and any
/// character.
pub fn tricky(words: &'static [&'static str], max_pieces: usize) -> BoxedStrategy<String> {
    let piece = prop_oneof![
        select(PIECES).prop_map(str::to_owned),
        select(if words.is_empty() { PIECES } else { words }).prop_map(str::to_owned),
        any::<char>().prop_map(String::from),
    ];
    vec(piece, 0..=max_pieces)
        .prop_map(|pieces| pieces.concat())
        .boxed()
}

/// A word from `words` most of the time, else a [`tricky`] string.
pub fn word_or_tricky(words: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(words).prop_map(str::to_owned),
        1 => tricky(words, 4),
    ]
    .boxed()
}
