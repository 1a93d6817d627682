//! [`Asker`]: a run's questions put to the MCP client that called the
//! agent, as elicitation (when the client says it supports it), so a run
//! served over MCP can ask instead of being cancelled.
//!
//! Each await item becomes one form:
//! - a clarification: one required text field, `answer`;
//! - multiple-choice questions: one field per question, a titled enum
//!   (single choice) or a titled multi-select array;
//! - a confirmation: one required boolean, `approve`, the call's tool and
//!   arguments in the message (declining denies the call);
//! - a running tool's own elicitation: forwarded as it was asked (a URL
//!   only to a client that supports URL mode).
//!
//! Calls to run outside the runtime (external tools) cannot be answered by
//! a person, nor can a question the client declines or cancels: the caller
//! cancels the run then. The request is sent from the call's own task, so
//! over streamable HTTP it goes on the call's response stream.

use rmcp::model::{ElicitRequestParams, ElicitationAction as McpAction, ElicitationSchema};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Confirmation, Questions};
use weft_core::elicitation::{ElicitationAction, ElicitationMode};

/// Why an item got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAnswered {
    /// The client cannot be asked this (no elicitation, no URL mode, or an
    /// item no person answers).
    #[error("the MCP client cannot answer {0}")]
    Unsupported(&'static str),
    /// The client declined to answer.
    #[error("the MCP client declined the question")]
    Declined,
    /// The client cancelled the question.
    #[error("the MCP client cancelled the question")]
    Cancelled,
    /// Asking failed (the request, or an answer that does not fit).
    #[error("asking the MCP client failed: {0}")]
    Failed(String),
}

/// Puts a run's questions to the client of one call.
#[derive(Clone)]
pub struct Asker {
    peer: Peer<RoleServer>,
}

impl Asker {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }

    /// Whether the client said it answers elicitations (forms).
    pub fn can_ask(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some())
    }

    fn can_open_urls(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| {
            info.capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| e.url.is_some())
        })
    }

    /// Asks the client about `item`; the answer the run takes.
    pub async fn ask(&self, item: &AwaitItem) -> Result<AwaitAnswer, NotAnswered> {
        if !self.can_ask() {
            return Err(NotAnswered::Unsupported("elicitation"));
        }
        let params = match item {
            AwaitItem::Clarification(c) => {
                let mut message = c.question.clone();
                if let Some(prompt) = &c.clarifying_prompt {
                    message = format!("{message}\n\n{prompt}");
                }
                let schema = json!({
                    "type": "object",
                    "properties": {"answer": {"type": "string", "title": "Answer"}},
                    "required": ["answer"]
                });
                form(message, schema)?
            }
            AwaitItem::Questions(q) => form(
                q.title
                    .clone()
                    .unwrap_or_else(|| "Please choose".to_owned()),
                questions_schema(q),
            )?,
            AwaitItem::Confirmation(c) => form(confirm_message(c), confirm_schema())?,
            AwaitItem::Elicitation(e) => match &e.mode {
                ElicitationMode::Form { requested_schema } => {
                    form(e.message.clone(), requested_schema.clone())?
                }
                ElicitationMode::Url { .. } if !self.can_open_urls() => {
                    return Err(NotAnswered::Unsupported("a URL to open"));
                }
                ElicitationMode::Url {
                    url,
                    elicitation_id,
                } => ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message: e.message.clone(),
                    url: url.clone(),
                    elicitation_id: elicitation_id.clone(),
                },
            },
            AwaitItem::ExternalTools(_) => {
                return Err(NotAnswered::Unsupported("calls to run outside the runtime"));
            }
        };
        let result = self
            .peer
            .create_elicitation(params)
            .await
            .map_err(|e| NotAnswered::Failed(e.to_string()))?;
        let content = result.content;
        match (item, result.action) {
            (AwaitItem::Elicitation(_), action) => Ok(AwaitAnswer::Elicitation {
                action: match action {
                    McpAction::Accept => ElicitationAction::Accept,
                    McpAction::Decline => ElicitationAction::Decline,
                    _ => ElicitationAction::Cancel,
                },
                content,
            }),
            (AwaitItem::Confirmation(_), McpAction::Decline) => Ok(AwaitAnswer::Confirmation {
                approved: false,
                reason: Some("declined by the MCP client".to_owned()),
            }),
            (_, McpAction::Decline) => Err(NotAnswered::Declined),
            (_, McpAction::Accept) => answer_of(item, content.as_ref()),
            _ => Err(NotAnswered::Cancelled),
        }
    }
}

/// A form request, its schema as rmcp takes it.
fn form(message: String, schema: Value) -> Result<ElicitRequestParams, NotAnswered> {
    let requested_schema: ElicitationSchema = serde_json::from_value(schema)
        .map_err(|e| NotAnswered::Failed(format!("the form cannot be sent: {e}")))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

fn questions_schema(q: &Questions) -> Value {
    let mut properties = Map::new();
    for question in &q.questions {
        let options: Vec<Value> = question
            .options
            .iter()
            .map(|o| json!({"const": o.id, "title": o.label}))
            .collect();
        let field = if question.allow_multiple {
            json!({"type": "array", "title": question.prompt, "minItems": 1,
                   "items": {"anyOf": options}})
        } else {
            json!({"type": "string", "title": question.prompt, "oneOf": options})
        };
        properties.insert(question.id.clone(), field);
    }
    let required: Vec<&str> = q.questions.iter().map(|q| q.id.as_str()).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fn confirm_message(c: &Confirmation) -> String {
    let args = serde_json::to_string(&c.payload).unwrap_or_default();
    format!("Allow the call of `{}` with {args}?", c.tool_name)
}

fn confirm_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"approve": {"type": "boolean", "title": "Approve"}},
        "required": ["approve"]
    })
}

/// The run's answer for an accepted form's `content`.
fn answer_of(item: &AwaitItem, content: Option<&Value>) -> Result<AwaitAnswer, NotAnswered> {
    let field = |name: &str| content.and_then(|c| c.get(name));
    let missing = |name: &str| NotAnswered::Failed(format!("the answer has no `{name}`"));
    match item {
        AwaitItem::Clarification(_) => {
            let text = field("answer").and_then(Value::as_str);
            let text = text.ok_or_else(|| missing("answer"))?;
            Ok(AwaitAnswer::Clarification {
                text: text.to_owned(),
            })
        }
        AwaitItem::Confirmation(_) => {
            let approved = field("approve").and_then(Value::as_bool);
            let approved = approved.ok_or_else(|| missing("approve"))?;
            Ok(AwaitAnswer::Confirmation {
                approved,
                reason: (!approved).then(|| "denied by the MCP client".to_owned()),
            })
        }
        AwaitItem::Questions(q) => {
            let mut answers = std::collections::BTreeMap::new();
            for question in &q.questions {
                let chosen = match field(&question.id) {
                    Some(Value::String(s)) => vec![s.clone()],
                    Some(Value::Array(items)) => items
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect(),
                    _ => return Err(missing(&question.id)),
                };
                answers.insert(question.id.clone(), chosen);
            }
            Ok(AwaitAnswer::Questions { answers })
        }
        AwaitItem::Elicitation(_) | AwaitItem::ExternalTools(_) => {
            Err(NotAnswered::Unsupported("this item"))
        }
    }
}
