//! How much of a client's input an error may repeat: a short prefix.
//! Every message built from input (serde's complaints, label keys, ids,
//! query words) goes through here, and every problem's detail and field
//! messages once more as a backstop, so a huge input never comes back in
//! an error body.

/// The most characters of one quoted piece of input an error repeats.
pub(crate) const QUOTE_CHARS: usize = 64;

/// The most characters of one error message built from input.
pub(crate) const MESSAGE_CHARS: usize = 512;

/// At most the first `max` characters of `s`, with `…` when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// `message` with each piece quoted in backticks or double quotes cut to
/// [`QUOTE_CHARS`] characters, and the whole to [`MESSAGE_CHARS`].
pub(crate) fn clip_quoted(message: &str) -> String {
    clip_quoted_to(message, QUOTE_CHARS, MESSAGE_CHARS)
}

/// `message` with each quoted piece cut to `piece` characters and the
/// whole to `total`.
pub(crate) fn clip_quoted_to(message: &str, piece: usize, total: usize) -> String {
    if message.len() <= piece.min(total) {
        return message.to_owned();
    }
    let mut out = String::new();
    let mut quote = None;
    let mut quoted = 0usize;
    for c in message.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => {
                quoted += 1;
                if quoted <= piece {
                    out.push(c);
                } else if quoted == piece + 1 {
                    out.push('…');
                }
            }
            None => {
                if c == '`' || c == '"' {
                    quote = Some(c);
                    quoted = 0;
                }
                out.push(c);
            }
        }
        if out.len() > 4 * total {
            break;
        }
    }
    clip(&out, total)
}
