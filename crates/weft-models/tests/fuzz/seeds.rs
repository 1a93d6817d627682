//! The recorded provider fixtures as seeds: each stream's bytes, its events
//! (name and data, JSON where it parses), and each whole-body JSON.

use serde_json::Value;
use weft_models::sse::{SseDecoder, SseError, SseEvent};

use crate::common::FIXTURES;

/// One event's data: JSON, or other text (such as `[DONE]`).
#[derive(Debug, Clone)]
pub enum Data {
    /// A JSON value.
    Json(Value),
    /// Text that is not JSON.
    Raw(String),
}

/// One event of a stream.
pub type Event = (Option<String>, Data);

/// The fixtures of one provider directory.
pub struct Seeds {
    /// Each `.sse` file's bytes.
    pub streams: Vec<Vec<u8>>,
    /// Each `.sse` file's events.
    pub events: Vec<Vec<Event>>,
    /// Each `.body.json` file's bytes.
    pub bodies: Vec<Vec<u8>>,
}

/// The fixtures under `dir` (`anthropic`, `openai_chat`, ...).
pub fn load(dir: &str) -> Seeds {
    let mut names: Vec<String> = std::fs::read_dir(format!("{FIXTURES}/{dir}"))
        .unwrap_or_else(|e| panic!("fixtures {dir}: {e}"))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let read = |name: &str| std::fs::read(format!("{FIXTURES}/{dir}/{name}")).unwrap();
    let streams: Vec<Vec<u8>> = names
        .iter()
        .filter(|n| n.ends_with(".sse"))
        .map(|n| read(n))
        .collect();
    let bodies = names
        .iter()
        .filter(|n| n.ends_with(".body.json"))
        .map(|n| read(n))
        .collect();
    let events = streams.iter().map(|s| events(s)).collect();
    Seeds {
        streams,
        events,
        bodies,
    }
}

/// Every `.sse` fixture of every provider.
pub fn all_streams() -> Vec<Vec<u8>> {
    ["anthropic", "openai_chat", "openai_responses", "gemini"]
        .into_iter()
        .flat_map(|dir| load(dir).streams)
        .collect()
}

fn events(bytes: &[u8]) -> Vec<Event> {
    let mut out = Vec::new();
    let mut push = |e: SseEvent<'_>| -> Result<(), SseError> {
        let name = (!e.event.is_empty()).then(|| e.event.to_owned());
        let data = match serde_json::from_str(e.data) {
            Ok(v) => Data::Json(v),
            Err(_) => Data::Raw(e.data.to_owned()),
        };
        out.push((name, data));
        Ok(())
    };
    let mut dec = SseDecoder::new();
    dec.feed(bytes, &mut push).unwrap();
    dec.finish(&mut push).unwrap();
    out
}
