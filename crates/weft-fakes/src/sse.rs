//! Server-Sent Events framing of the fakes' answers.

use serde_json::Value;

/// `events` as an event stream: an `event:` line when named, one `data:`
/// line, a blank line.
pub(crate) fn frame(events: &[(Option<&str>, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(n) = name {
            out.push_str("event: ");
            out.push_str(n);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    }
    out
}
