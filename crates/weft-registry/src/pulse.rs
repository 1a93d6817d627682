//! Pulse stream entries as loom-mcp writes them: the Pulse stream `X` is the
//! Redis stream `pulse:stream:X`, and an event is an entry with field `n`
//! (event name), `p` (payload bytes) and optionally `t` (topic). This module
//! builds the commands that write them and parses the replies that read them.

use redis::Value;

/// The Redis key prefix of every Pulse stream.
pub const KEY_PREFIX: &str = "pulse:stream:";

/// The Redis key of the Pulse stream `name`.
pub fn key(name: &str) -> String {
    format!("{KEY_PREFIX}{name}")
}

/// One event read from a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The Redis entry id (`<ms>-<seq>`).
    pub id: String,
    /// What the entry holds.
    pub body: Body,
}

/// An entry's contents: a Pulse event, or something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A well-formed Pulse event.
    Event {
        /// The event name (field `n`).
        name: String,
        /// The payload (field `p`).
        payload: Vec<u8>,
    },
    /// An entry that is not a Pulse event, with why.
    Garbage(String),
}

/// An `XADD` of a Pulse event (no trimming: readers bound their queues).
pub fn xadd(stream_key: &str, name: &str, payload: &[u8]) -> redis::Cmd {
    let mut cmd = redis::cmd("XADD");
    cmd.arg(stream_key)
        .arg("*")
        .arg("n")
        .arg(name)
        .arg("p")
        .arg(payload);
    cmd
}

/// Why a reply could not be read as stream entries.
#[derive(Debug, thiserror::Error)]
#[error("unexpected stream reply from Redis: {0}")]
pub struct ReplyError(pub String);

/// Parses an `XREAD`/`XREADGROUP` reply into `(stream key, entries)` pairs;
/// a nil reply (the block timed out) is no streams.
pub fn parse_read(reply: Value) -> Result<Vec<(String, Vec<Entry>)>, ReplyError> {
    let streams = match reply {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Array(mut pair) if pair.len() == 2 => {
                    let entries = pair.pop().unwrap_or(Value::Nil);
                    let key = pair.pop().unwrap_or(Value::Nil);
                    Ok((key, entries))
                }
                other => Err(ReplyError(format!("stream item {other:?}"))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Value::Map(pairs) => pairs,
        other => return Err(ReplyError(format!("read reply {other:?}"))),
    };
    streams
        .into_iter()
        .map(|(key, entries)| Ok((string(key)?, parse_entries(entries)?)))
        .collect()
}

/// Parses a list of `[id, [field, value, ...]]` entries.
pub fn parse_entries(value: Value) -> Result<Vec<Entry>, ReplyError> {
    let items = match value {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(ReplyError(format!("entry list {other:?}"))),
    };
    items.into_iter().map(parse_entry).collect()
}

fn parse_entry(value: Value) -> Result<Entry, ReplyError> {
    let Value::Array(mut parts) = value else {
        return Err(ReplyError(format!("entry {value:?}")));
    };
    if parts.len() != 2 {
        return Err(ReplyError(format!("entry with {} parts", parts.len())));
    }
    let fields = parts.pop().unwrap_or(Value::Nil);
    let id = string(parts.pop().unwrap_or(Value::Nil))?;
    let body = match fields {
        Value::Array(fields) => event(fields),
        Value::Map(pairs) => event(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()),
        Value::Nil => Body::Garbage("the entry was deleted".to_owned()),
        other => Body::Garbage(format!("fields {other:?}")),
    };
    Ok(Entry { id, body })
}

fn event(fields: Vec<Value>) -> Body {
    let mut name = None;
    let mut payload = None;
    let mut it = fields.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        match (bytes(k).as_deref(), bytes(v)) {
            (Some(b"n"), Some(v)) => name = Some(v),
            (Some(b"p"), Some(v)) => payload = Some(v),
            _ => {}
        }
    }
    match (name.map(String::from_utf8), payload) {
        (Some(Ok(name)), Some(payload)) => Body::Event { name, payload },
        (Some(Ok(name)), None) => Body::Garbage(format!("event `{name}` has no `p` field")),
        (Some(Err(_)), _) => Body::Garbage("the `n` field is not UTF-8".to_owned()),
        (None, _) => Body::Garbage("the entry has no `n` field".to_owned()),
    }
}

fn bytes(v: Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        _ => None,
    }
}

fn string(v: Value) -> Result<String, ReplyError> {
    bytes(v)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| ReplyError("a key or id is not a string".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn parses_events_and_flags_garbage() {
        let reply = Value::Array(vec![Value::Array(vec![
            bulk("pulse:stream:x"),
            Value::Array(vec![
                Value::Array(vec![
                    bulk("1-0"),
                    Value::Array(vec![bulk("n"), bulk("call"), bulk("p"), bulk("{}")]),
                ]),
                Value::Array(vec![bulk("2-0"), Value::Array(vec![bulk("x"), bulk("y")])]),
                Value::Array(vec![bulk("3-0"), Value::Nil]),
            ]),
        ])]);
        let streams = parse_read(reply).unwrap();
        assert_eq!(streams[0].0, "pulse:stream:x");
        let entries = &streams[0].1;
        assert_eq!(
            entries[0].body,
            Body::Event {
                name: "call".into(),
                payload: b"{}".to_vec()
            }
        );
        assert!(matches!(entries[1].body, Body::Garbage(_)));
        assert!(matches!(entries[2].body, Body::Garbage(_)));
        assert!(parse_read(Value::Nil).unwrap().is_empty());
        assert!(parse_read(Value::Int(3)).is_err());
    }
}
