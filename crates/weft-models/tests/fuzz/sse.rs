//! The SSE parser target: any bytes, cut anywhere, decode as a plain
//! whole-input reading of the rules (the reference below) does: the same
//! events, and the same error at the same place.

use std::sync::Arc;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use weft_fuzz::split::{Cuts, chunks, cuts};
use weft_fuzz::text::tricky;
use weft_models::sse::{SseDecoder, SseError, SseEvent};

use crate::seeds::all_streams;

/// Dispatched events, and how decoding ended.
type Decoded = (Vec<(String, String)>, Result<(), SseError>);

const FIELDS: &[&str] = &["data", "event", "id", "retry", "", "dat", "data ", "Data"];
const SEPARATORS: &[&str] = &["", ":", ": ", ":  ", "::"];
const LINE_ENDS: &[&str] = &["\n", "\r\n", "\r", "\n\r"];

/// Lines of known and unknown fields, values with invalid UTF-8 now and then.
fn lines() -> impl Strategy<Value = Vec<u8>> {
    let value = prop_oneof![
        4 => tricky(&["{}", "[DONE]", "message"], 6).prop_map(String::into_bytes),
        1 => weft_fuzz::bytes::arbitrary(8),
    ];
    let line = (select(FIELDS), select(SEPARATORS), value, select(LINE_ENDS)).prop_map(
        |(field, sep, value, end)| {
            [field.as_bytes(), sep.as_bytes(), &value, end.as_bytes()].concat()
        },
    );
    (any::<bool>(), vec(line, 0..12), any::<bool>()).prop_map(|(bom, lines, cut_end)| {
        let mut out = if bom {
            b"\xEF\xBB\xBF".to_vec()
        } else {
            Vec::new()
        };
        out.extend(lines.concat());
        if cut_end {
            out.pop();
        }
        out
    })
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => weft_fuzz::bytes::arbitrary(512),
        3 => lines(),
        2 => weft_fuzz::bytes::mutated(Arc::new(all_streams()), 8),
    ]
}

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn sse(input in input(), cuts in cuts()) {
        check(&input, &cuts)?;
    }
}

/// Both readings must dispatch the same events and fail alike. Which bad
/// value an error quotes may differ: the decoder checks a lone data value
/// only when it hands the event out, the reference checks each line.
fn check(input: &[u8], cuts: &Cuts) -> Result<(), TestCaseError> {
    let (events, res) = reference(input);
    for (name, (got, got_res)) in [
        ("whole input", decode(&[input])),
        ("cut input", decode(&chunks(input, cuts))),
    ] {
        prop_assert_eq!(&got, &events, "{}", name);
        prop_assert_eq!(got_res.is_ok(), res.is_ok(), "{}: {:?}", name, got_res);
    }
    Ok(())
}

fn decode(chunks: &[&[u8]]) -> Decoded {
    let mut events = Vec::new();
    let mut push = |e: SseEvent<'_>| -> Result<(), SseError> {
        events.push((e.event.to_owned(), e.data.to_owned()));
        Ok(())
    };
    let mut dec = SseDecoder::new();
    let mut res = Ok(());
    for c in chunks {
        res = dec.feed(c, &mut push);
        if res.is_err() {
            break;
        }
    }
    if res.is_ok() {
        res = dec.finish(&mut push);
    }
    (events, res)
}

/// The rules read over the whole input at once: a leading byte-order mark
/// is dropped; lines end at LF, CRLF or CR; a blank line dispatches an event
/// with data; `:` opens a comment; one space after a field's colon is
/// dropped; `data` lines join with `\n`; `event` names the event; other
/// fields are ignored; an unterminated last line is read and an event with
/// data left at the end is dispatched. A `data` or `event` value that is not
/// UTF-8 ends decoding with an error naming it.
fn reference(input: &[u8]) -> Decoded {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let mut events = Vec::new();
    let (mut event, mut data, mut has_data) = (String::new(), String::new(), false);
    let mut rest = input;
    while !rest.is_empty() {
        let (line, next) = match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            Some(i) if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') => (&rest[..i], i + 2),
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        rest = &rest[next..];
        if line.is_empty() {
            if has_data {
                events.push((std::mem::take(&mut event), std::mem::take(&mut data)));
            }
            (event, data, has_data) = (String::new(), String::new(), false);
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (name, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        if name != b"data" && name != b"event" {
            continue;
        }
        let Ok(value) = std::str::from_utf8(value) else {
            return (events, Err(error(value)));
        };
        if name == b"event" {
            event = value.to_owned();
        } else {
            if has_data {
                data.push('\n');
            }
            data.push_str(value);
            has_data = true;
        }
    }
    if has_data {
        events.push((event, data));
    }
    (events, Ok(()))
}

/// The error the decoder gives for a value: lossy, at most 200 characters.
fn error(value: &[u8]) -> SseError {
    let lossy = String::from_utf8_lossy(value);
    let line = match lossy.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &lossy[..i]),
        None => lossy.into_owned(),
    };
    SseError { line }
}

/// Found by `sse`: an empty chunk between a CR and its LF made the LF a
/// blank line, which dispatched the event early.
#[test]
fn an_empty_chunk_between_cr_and_lf_is_no_blank_line() {
    let input = b"data:\r\ndata:\n";
    let got = decode(&[b"data:\r", b"", b"\ndata:\n"]);
    assert_eq!(got, reference(input));
    assert_eq!(got, (vec![(String::new(), "\n".to_owned())], Ok(())));
}

/// Found by `anthropic_stream`: with two bad values in one event, the error
/// quotes the `event` value when the stream arrives whole (a lone data value
/// is checked when the event is handed out) but the data value when the
/// stream is cut between them. Both fail at the same event.
#[test]
fn two_bad_values_fail_at_the_same_event_wherever_the_chunks_end() {
    let input = b"data:\x80a\nevent:\xa0b\n\n";
    let whole = decode(&[input]);
    let cut = decode(&[&input[..8], &input[8..]]);
    assert_eq!((whole.0.len(), cut.0.len()), (0, 0));
    // FIXME: the same bytes should quote the same value however they are cut.
    assert_eq!(whole.1.unwrap_err().line, "\u{fffd}b");
    assert_eq!(cut.1.unwrap_err().line, "\u{fffd}a");
}
