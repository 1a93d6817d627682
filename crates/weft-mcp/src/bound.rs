//! Bounding a result to the payload budget: parts are kept in order while
//! they fit, the first text that does not fit is cut, and [`Bounds`] say how
//! many parts were returned out of how many.

use weft_core::message::Part;
use weft_core::tool::{Bounds, ToolContent};

/// What a model is told about narrowing a cut result.
const REFINEMENT: &str =
    "the result was cut to the payload budget; ask for less (filter, page or a narrower request)";

/// `content` cut to at most `budget` serialized bytes (approximately: each
/// part's JSON size), and the bounds when something was cut.
pub fn bound_content(content: ToolContent, budget: u64) -> (ToolContent, Option<Bounds>) {
    let total_parts = content.parts.len() as u64;
    let mut used = json_len(&content.meta);
    let mut out = ToolContent {
        parts: Vec::with_capacity(content.parts.len()),
        structured: None,
        meta: content.meta,
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
    let mut returned = 0u64;
    for part in content.parts {
        if cut {
            break;
        }
        let size = json_len(&Some(&part));
        if used + size <= budget {
            used += size;
            out.parts.push(part);
            returned += 1;
            continue;
        }
        cut = true;
        if let Part::Text { mut text } = part {
            // Keep what fits of the text, minus room for its JSON framing.
            let room = budget.saturating_sub(used).saturating_sub(32);
            truncate_str(&mut text, usize::try_from(room).unwrap_or(usize::MAX));
            if !text.is_empty() {
                out.parts.push(Part::Text { text });
                returned += 1;
            }
        }
    }
    let bounds = cut.then(|| Bounds {
        returned,
        total: Some(total_parts),
        truncated: true,
        next_cursor: None,
        refinement_hint: Some(REFINEMENT.to_owned()),
    });
    (out, bounds)
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
