//! A scripted model: a [`ModelClient`] whose replies are read from a JSON or
//! YAML script, for tests, examples and benchmarks.
//!
//! A script is a list of turns (or `{"turns": [...]}`); each call to
//! `complete` or `stream` plays the next turn. A turn is text, tool calls
//! (with optional preamble text and thinking), explicit stream chunks, or an
//! error:
//!
//! ```yaml
//! - text: "Let me add those."
//!   tool_calls:
//!     - { name: calc.add, arguments: { a: 2, b: 3 } }
//! - text: "2 + 3 = 5"
//! - chunks:
//!     - { type: text_delta, text: "raw " }
//!     - { type: stop, reason: end_turn }
//! - error: { kind: stream, error_type: overloaded_error, message: Overloaded, retryable: true }
//! ```
//!
//! Tool names are written as weft names (`toolset.tool`) and sent encoded as
//! a provider would, so the model planner decodes them like real answers.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use weft_core::model::{
    ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary, StopReason, StreamChunk,
    Usage,
};

use crate::names::encode;
use crate::util::assemble;

/// One scripted reply.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// Assistant text (the preamble when there are tool calls).
    #[serde(default)]
    pub text: Option<String>,
    /// Reasoning text, sent as one thinking block before the text.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
    /// Explicit stream chunks, played as they are (other fields ignored).
    #[serde(default)]
    pub chunks: Option<Vec<StreamChunk>>,
    /// Usage to report.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Fail the call with this error instead.
    #[serde(default)]
    pub error: Option<ModelError>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The call id; generated when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// The weft tool name.
    pub name: String,
    /// The arguments: a JSON string is sent as raw text (it may be malformed on purpose).
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    List(Vec<ScriptTurn>),
    Object { turns: Vec<ScriptTurn> },
}

/// Why a script cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The JSON is not a script.
    #[error("invalid JSON script: {0}")]
    Json(#[from] serde_json::Error),
    /// The YAML is not a script.
    #[error("invalid YAML script: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    /// The script file could not be read.
    #[error("cannot read script {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
}

/// The scripted model; see the module docs.
#[derive(Debug)]
pub struct ScriptedModel {
    id: String,
    turns: Mutex<VecDeque<ScriptTurn>>,
    requests: Mutex<Vec<ModelRequest>>,
    calls: Mutex<u32>,
}

impl ScriptedModel {
    /// A model `scripted/<name>` playing `turns`.
    pub fn new(name: &str, turns: Vec<ScriptTurn>) -> Self {
        Self {
            id: format!("scripted/{name}"),
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
            calls: Mutex::new(0),
        }
    }

    /// A model from a JSON script.
    pub fn from_json(name: &str, script: &str) -> Result<Self, ScriptError> {
        Ok(Self::new(name, turns(serde_json::from_str(script)?)))
    }

    /// A model from a YAML script.
    pub fn from_yaml(name: &str, script: &str) -> Result<Self, ScriptError> {
        Ok(Self::new(name, turns(serde_yaml_ng::from_str(script)?)))
    }

    /// A model from a script file: YAML for `.yaml`/`.yml`, JSON otherwise.
    /// Its id is `scripted/<path>`.
    pub fn from_path(path: &std::path::Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let name = path.display().to_string();
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => Self::from_yaml(&name, &text),
            _ => Self::from_json(&name, &text),
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// How many turns are left.
    pub fn remaining(&self) -> usize {
        self.turns.lock().map(|t| t.len()).unwrap_or(0)
    }

    fn next(&self, request: &ModelRequest) -> Result<Vec<StreamChunk>, ModelError> {
        let poisoned = || ModelError::Other {
            message: "scripted model lock poisoned".into(),
        };
        self.requests
            .lock()
            .map_err(|_| poisoned())?
            .push(request.clone());
        let turn = self
            .turns
            .lock()
            .map_err(|_| poisoned())?
            .pop_front()
            .ok_or_else(|| ModelError::Other {
                message: format!("{}: the script has no turn left", self.id),
            })?;
        let n = {
            let mut calls = self.calls.lock().map_err(|_| poisoned())?;
            *calls += 1;
            *calls
        };
        if let Some(e) = turn.error {
            return Err(e);
        }
        Ok(chunks(turn, n))
    }
}

fn turns(file: ScriptFile) -> Vec<ScriptTurn> {
    match file {
        ScriptFile::List(t) | ScriptFile::Object { turns: t } => t,
    }
}

/// The chunks a turn streams as: text in word-sized pieces, each call's
/// arguments in two fragments, then usage and the stop reason.
fn chunks(turn: ScriptTurn, call_no: u32) -> Vec<StreamChunk> {
    if let Some(chunks) = turn.chunks {
        return chunks;
    }
    let mut out = Vec::new();
    if let Some(thinking) = turn.thinking {
        out.push(StreamChunk::ThinkingDelta { text: thinking });
        out.push(StreamChunk::ThinkingSignature {
            signature: format!("scripted-signature-{call_no}"),
        });
    }
    if let Some(text) = turn.text {
        out.extend(
            text.split_inclusive(' ')
                .map(|w| StreamChunk::TextDelta { text: w.to_owned() }),
        );
    }
    let has_calls = !turn.tool_calls.is_empty();
    for (i, call) in turn.tool_calls.into_iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let args = match call.arguments {
            Value::String(raw) => raw,
            Value::Null => "{}".to_owned(),
            v => v.to_string(),
        };
        out.push(StreamChunk::ToolCallStart {
            index,
            id: call
                .id
                .unwrap_or_else(|| format!("call_{call_no}_{index}"))
                .into(),
            name: encode(&call.name),
        });
        let mut mid = args.len() / 2;
        while !args.is_char_boundary(mid) {
            mid -= 1;
        }
        for piece in [&args[..mid], &args[mid..]] {
            if !piece.is_empty() {
                out.push(StreamChunk::ToolCallArgsDelta {
                    index,
                    delta: piece.to_owned(),
                });
            }
        }
        out.push(StreamChunk::ToolCallEnd { index });
    }
    out.push(StreamChunk::Usage {
        usage: turn.usage.unwrap_or(Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        }),
    });
    out.push(StreamChunk::Stop {
        reason: if has_calls {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        },
    });
    out
}

#[async_trait]
impl ModelClient for ScriptedModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelSummary, ModelError> {
        assemble(self.next(request)?)
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        let chunks = self.next(request)?;
        Ok(Box::pin(futures_util::stream::iter(
            chunks.into_iter().map(Ok),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn json_and_yaml_scripts_play_in_order() {
        let yaml = "
- text: \"Adding.\"
  tool_calls:
    - { id: c1, name: calc.add, arguments: { a: 2, b: 3 } }
- text: \"5\"
- error: { kind: stream, error_type: overloaded_error, message: Overloaded, retryable: true }
";
        let m = ScriptedModel::from_yaml("t", yaml).unwrap();
        let s = m.complete(&ModelRequest::default()).await.unwrap();
        assert_eq!(s.text, "Adding.");
        assert_eq!(s.tool_calls[0].name, "calc__add");
        assert_eq!(s.tool_calls[0].arguments, "{\"a\":2,\"b\":3}");
        assert_eq!(s.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            m.complete(&ModelRequest::default()).await.unwrap().text,
            "5"
        );
        assert!(matches!(
            m.complete(&ModelRequest::default()).await,
            Err(ModelError::Stream {
                retryable: true,
                ..
            })
        ));
        assert!(matches!(
            m.complete(&ModelRequest::default()).await,
            Err(ModelError::Other { .. })
        ));
        assert_eq!(m.requests().len(), 4);

        let json = r#"{"turns": [{"chunks": [{"type": "text_delta", "text": "raw"}, {"type": "stop", "reason": "end_turn"}]}]}"#;
        let m = ScriptedModel::from_json("t", json).unwrap();
        let s = m.complete(&ModelRequest::default()).await.unwrap();
        assert_eq!(
            (s.text.as_str(), s.stop_reason),
            ("raw", Some(StopReason::EndTurn))
        );
    }
}
