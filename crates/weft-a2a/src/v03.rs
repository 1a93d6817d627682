//! A2A 0.3's JSON shapes, for clients not yet on 1.0 (`message/send`,
//! `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`):
//! objects tagged by `kind`, parts by `kind` (`text`, `data`, `file`),
//! states in kebab-case, a status update's `final` flag. Each converts
//! from or to the 1.0 shapes of `wire`, which the server works in.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rpc::RpcError;
use super::wire;

/// A 0.3 part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Structured data (an object).
    Data {
        /// The data.
        data: Value,
    },
    /// A file (not taken by weft; read to refuse it by name).
    File {
        /// The file.
        file: Value,
    },
}

/// A 0.3 message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Always `message`.
    #[serde(default = "message_kind")]
    pub kind: String,
    /// The sender's id for it.
    pub message_id: String,
    /// `user` or `agent`.
    pub role: String,
    /// Its content.
    pub parts: Vec<Part>,
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

fn message_kind() -> String {
    "message".to_owned()
}

/// `message/send` and `message/stream`'s params.
#[derive(Debug, Clone, Deserialize)]
pub struct SendParams {
    /// The message.
    pub message: Message,
    /// How to answer.
    #[serde(default)]
    pub configuration: Option<SendConfiguration>,
}

/// How `message/send` answers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration {
    /// Wait for the task to end or ask for input (the default), or answer at once.
    #[serde(default)]
    pub blocking: Option<bool>,
    /// Most messages of history in the answer.
    #[serde(default)]
    pub history_length: Option<u32>,
}

impl SendParams {
    /// The 1.0 request these params are.
    pub fn into_wire(self) -> Result<wire::SendMessageRequest, RpcError> {
        let role = match self.message.role.as_str() {
            "user" => wire::Role::User,
            "agent" => wire::Role::Agent,
            other => {
                return Err(RpcError::invalid_params(format!(
                    "unknown role `{}`",
                    super::rpc::clip(other)
                )));
            }
        };
        let parts = self
            .message
            .parts
            .into_iter()
            .map(|p| match p {
                Part::Text { text } => Ok(wire::Part::text(text)),
                Part::Data { data } => Ok(wire::Part::data(data)),
                Part::File { .. } => Err(RpcError::content_type(
                    "file parts are not taken: send text or data parts",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let config = self.configuration.unwrap_or_default();
        let blocking = config.blocking.unwrap_or(true);
        Ok(wire::SendMessageRequest {
            message: wire::Message {
                message_id: self.message.message_id,
                context_id: self.message.context_id,
                task_id: self.message.task_id,
                role,
                parts,
            },
            configuration: Some(wire::SendMessageConfiguration {
                return_immediately: !blocking,
                history_length: config.history_length,
            }),
        })
    }
}

/// A 0.3 task status.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
}

/// A 0.3 artifact.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    artifact_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    parts: Vec<Part>,
}

/// A 0.3 task.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    kind: &'static str,
    id: String,
    context_id: String,
    status: Status,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    artifacts: Vec<Artifact>,
    history: Vec<Message>,
}

/// A 0.3 stream event: `task`, `status-update` (with `final`) or `artifact-update`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Event {
    /// The task.
    Task(Task),
    /// A status change.
    #[serde(rename_all = "camelCase")]
    Status {
        /// `status-update`.
        kind: &'static str,
        /// The task.
        task_id: String,
        /// Its context.
        context_id: String,
        /// The status.
        status: Status,
        /// Whether the stream ends with it.
        #[serde(rename = "final")]
        last: bool,
    },
    /// An artifact.
    #[serde(rename_all = "camelCase")]
    Artifact {
        /// `artifact-update`.
        kind: &'static str,
        /// The task.
        task_id: String,
        /// Its context.
        context_id: String,
        /// The artifact.
        artifact: Artifact,
        /// Whether it adds to one sent before.
        append: bool,
        /// Whether it is the last piece.
        last_chunk: bool,
    },
}

fn state(s: wire::TaskState) -> &'static str {
    match s {
        wire::TaskState::Submitted => "submitted",
        wire::TaskState::Working => "working",
        wire::TaskState::Completed => "completed",
        wire::TaskState::Failed => "failed",
        wire::TaskState::Canceled => "canceled",
        wire::TaskState::InputRequired => "input-required",
    }
}

fn part(p: &wire::Part) -> Part {
    match (&p.text, &p.data) {
        (Some(text), _) => Part::Text { text: text.clone() },
        // 0.3's data parts are objects: anything else is wrapped.
        (None, Some(data @ Value::Object(_))) => Part::Data { data: data.clone() },
        (None, Some(other)) => Part::Data {
            data: serde_json::json!({ "value": other }),
        },
        (None, None) => Part::Text {
            text: String::new(),
        },
    }
}

fn message(m: &wire::Message) -> Message {
    Message {
        kind: message_kind(),
        message_id: m.message_id.clone(),
        role: match m.role {
            wire::Role::Agent => "agent",
            _ => "user",
        }
        .to_owned(),
        parts: m.parts.iter().map(part).collect(),
        context_id: m.context_id.clone(),
        task_id: m.task_id.clone(),
    }
}

fn status(s: &wire::TaskStatus) -> Status {
    Status {
        state: state(s.state),
        message: s.message.as_ref().map(message),
        timestamp: s.timestamp.clone(),
    }
}

fn artifact(a: &wire::Artifact) -> Artifact {
    Artifact {
        artifact_id: a.artifact_id.clone(),
        name: a.name.clone(),
        parts: a.parts.iter().map(part).collect(),
    }
}

/// The 0.3 form of a task.
pub fn task(t: &wire::Task) -> Task {
    Task {
        kind: "task",
        id: t.id.clone(),
        context_id: t.context_id.clone(),
        status: status(&t.status),
        artifacts: t.artifacts.iter().map(artifact).collect(),
        history: t.history.iter().map(message).collect(),
    }
}

/// The 0.3 form of a stream event.
pub fn event(e: &wire::StreamResponse) -> Value {
    let event = match e {
        wire::StreamResponse::Task(t) => Event::Task(task(t)),
        wire::StreamResponse::Message(m) => {
            return serde_json::to_value(message(m)).unwrap_or_default();
        }
        wire::StreamResponse::StatusUpdate(u) => Event::Status {
            kind: "status-update",
            task_id: u.task_id.clone(),
            context_id: u.context_id.clone(),
            status: status(&u.status),
            last: u.status.state.ends_stream(),
        },
        wire::StreamResponse::ArtifactUpdate(u) => Event::Artifact {
            kind: "artifact-update",
            task_id: u.task_id.clone(),
            context_id: u.context_id.clone(),
            artifact: artifact(&u.artifact),
            append: u.append,
            last_chunk: u.last_chunk,
        },
    };
    serde_json::to_value(event).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_03_message_reads_as_a_10_request() {
        let params: SendParams = serde_json::from_value(json!({
            "message": {"kind": "message", "messageId": "m1", "role": "user",
                        "parts": [{"kind": "text", "text": "hi"}], "taskId": "t1"},
            "configuration": {"blocking": false}
        }))
        .unwrap();
        let request = params.into_wire().unwrap();
        assert_eq!(request.message.parts, vec![wire::Part::text("hi")]);
        assert_eq!(request.message.task_id.as_deref(), Some("t1"));
        assert!(request.configuration.unwrap().return_immediately);
    }

    #[test]
    fn a_file_part_is_refused_with_its_code() {
        let params: SendParams = serde_json::from_value(json!({
            "message": {"messageId": "m1", "role": "user",
                        "parts": [{"kind": "file", "file": {"uri": "http://x/y"}}]}
        }))
        .unwrap();
        assert_eq!(params.into_wire().unwrap_err().code, -32005);
    }

    #[test]
    fn a_final_status_update_says_so() {
        let update = wire::StreamResponse::StatusUpdate(wire::TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: wire::TaskStatus {
                state: wire::TaskState::InputRequired,
                message: None,
                timestamp: None,
            },
        });
        let value = event(&update);
        assert_eq!(value["kind"], "status-update");
        assert_eq!(value["final"], true);
        assert_eq!(value["status"]["state"], "input-required");
    }
}
