//! Bounding a result to the payload budget: parts are kept in order while
//! they fit, the first text that does not fit is cut and ends the result; a
//! binary part that does not fit (an image, audio, a resource's blob) is
//! replaced by a statement of what was left out (URI, MIME type, size) and
//! the parts after it are still tried. [`Bounds`] say how many parts were
//! returned out of how many.

use weft_core::message::{Media, MediaSource, Part, ResourceBody, base64_len};
use weft_core::tool::{Bounds, ToolContent};

/// What a model is told about narrowing a cut result.
const REFINEMENT: &str =
    "the result was cut to the payload budget; ask for less (filter, page or a narrower request)";

/// Room kept for a cut text's JSON framing.
const FRAMING: u64 = 32;

/// `content` cut to at most `budget` serialized bytes (approximately: each
/// part's JSON size), and the bounds when something was cut.
pub fn bound_content(content: ToolContent, budget: u64) -> (ToolContent, Option<Bounds>) {
    let total_parts = content.parts.len() as u64;
    let mut used = json_len(&content.meta) + json_len(&Some(&content.annotations));
    let mut out = ToolContent {
        parts: Vec::with_capacity(content.parts.len()),
        structured: None,
        meta: content.meta,
        annotations: content.annotations,
    };
    let mut cut = false;
    if let Some(s) = content.structured {
        let size = json_len(&Some(&s));
        if used + size <= budget {
            used += size;
            out.structured = Some(s);
        } else {
            cut = true;
        }
    }
    let mut ended = cut;
    for part in content.parts {
        if ended {
            break;
        }
        let size = json_len(&Some(&part));
        if used + size <= budget {
            used += size;
            out.parts.push(part);
            continue;
        }
        cut = true;
        let room = budget.saturating_sub(used);
        let (kept, go_on) = over_budget(part, room);
        if let Some(kept) = kept {
            used += json_len(&Some(&kept));
            out.parts.push(kept);
        }
        ended = !go_on;
    }
    // Parts are kept in place or not at all: annotations past the end go.
    let returned = out.parts.len();
    out.annotations.retain(|a| a.part < returned);
    let bounds = cut.then(|| Bounds {
        returned: returned as u64,
        total: Some(total_parts),
        truncated: true,
        next_cursor: None,
        refinement_hint: Some(REFINEMENT.to_owned()),
    });
    (out, bounds)
}

/// What stays of a part that does not fit in `room` bytes, and whether the
/// parts after it may still be tried: what fits of a text (then nothing
/// more), or a statement in place of binary contents.
fn over_budget(part: Part, room: u64) -> (Option<Part>, bool) {
    let max = |framing: u64| usize::try_from(room.saturating_sub(framing)).unwrap_or(usize::MAX);
    let kept = match part {
        Part::Text { mut text } => {
            truncate_str(&mut text, max(FRAMING));
            let kept = (!text.is_empty()).then_some(Part::Text { text });
            return (kept, false);
        }
        Part::Resource(mut r) => {
            match std::mem::replace(&mut r.body, ResourceBody::Omitted { size: 0 }) {
                ResourceBody::Text { mut text } => {
                    r.body = ResourceBody::Text {
                        text: String::new(),
                    };
                    let header = json_len(&Some(&r)) + FRAMING;
                    truncate_str(&mut text, max(header));
                    r.body = ResourceBody::Text { text };
                    let kept = Part::Resource(r);
                    return (fits(&kept, room).then_some(kept), false);
                }
                ResourceBody::Blob { data } => {
                    r.body = ResourceBody::Omitted {
                        size: base64_len(&data),
                    };
                    Part::Resource(r)
                }
                _ => return (None, false),
            }
        }
        Part::Image(m) => media_omission("image", &m),
        Part::Audio(m) => media_omission("audio", &m),
        _ => return (None, false),
    };
    let ok = fits(&kept, room);
    (ok.then_some(kept), ok)
}

/// The statement standing for image or audio contents over the budget.
fn media_omission(kind: &str, media: &Media) -> Part {
    let size = match &media.source {
        MediaSource::Base64(data) => format!(", {} bytes", base64_len(data)),
        MediaSource::Url(url) => format!(" at {url}"),
    };
    Part::Text {
        text: format!(
            "[{kind} omitted: {}{size}, over the payload budget]",
            media.media_type
        ),
    }
}

fn fits(part: &Part, room: u64) -> bool {
    json_len(&Some(part)) <= room
}

fn json_len<T: serde::Serialize>(value: &Option<T>) -> u64 {
    match value {
        None => 0,
        Some(v) => serde_json::to_vec(v).map_or(0, |b| b.len() as u64),
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub(crate) fn truncate_str(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
}
