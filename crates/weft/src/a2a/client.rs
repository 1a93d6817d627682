//! A remote A2A agent as a toolset of a weft agent (agent files'
//! `type = "a2a"`): one tool, `<name>.send`, that sends the remote agent a
//! message over A2A 1.0 JSON-RPC (`SendMessage`, `A2A-Version: 1.0`) and
//! answers with its task: `{"task_id", "context_id", "state", "answer"}`,
//! or, when the remote agent asks for input, `"question"` instead of
//! `"answer"`; the model answers it with another call naming `task_id`.
//! Answers are read under [`MAX_ANSWER`] bytes.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use weft_core::tool::{ToolAnnotations, ToolError, ToolIdent, ToolRequest, ToolSpec};
use weft_tools::{ToolFailure, ToolReply, ToolSet};

use super::wire::{Message, Part, Role, SendMessageResponse, Task, TaskState};

/// The largest answer read from the remote agent (4 MiB).
pub const MAX_ANSWER: usize = 4 << 20;

/// A remote A2A agent as a toolset.
pub struct A2aToolSet {
    name: String,
    card_url: String,
    http: reqwest::Client,
    /// The JSON-RPC 1.0 endpoint and the description, from the card.
    remote: tokio::sync::OnceCell<(String, String)>,
}

impl A2aToolSet {
    /// The agent whose Agent Card is at `url` (or, for a URL not ending in
    /// `.json`, at its `/.well-known/agent-card.json`), as toolset `name`;
    /// each request waits at most `timeout`. The card is read on first use.
    pub fn new(name: &str, url: &str, timeout: Duration) -> Self {
        let url = url.trim_end_matches('/');
        let card_url = if url.ends_with(".json") {
            url.to_owned()
        } else {
            format!("{url}/.well-known/agent-card.json")
        };
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap_or_default();
        Self {
            name: name.to_owned(),
            card_url,
            http,
            remote: tokio::sync::OnceCell::new(),
        }
    }

    /// The endpoint and description the card gives.
    async fn remote(&self) -> Result<&(String, String), ToolFailure> {
        self.remote
            .get_or_try_init(|| async {
                let card = self.get_json(self.http.get(&self.card_url)).await?;
                let interfaces = card["supportedInterfaces"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let endpoint = interfaces
                    .iter()
                    .find(|i| {
                        i["protocolBinding"] == "JSONRPC"
                            && i["protocolVersion"]
                                .as_str()
                                .is_some_and(|v| v.starts_with("1."))
                    })
                    .and_then(|i| i["url"].as_str())
                    .ok_or_else(|| {
                        self.unavailable("its card offers no A2A 1.0 JSON-RPC interface")
                    })?;
                let description = card["description"].as_str().unwrap_or_default();
                Ok((endpoint.to_owned(), description.to_owned()))
            })
            .await
    }

    /// The JSON answer to `request`, read under [`MAX_ANSWER`] bytes.
    async fn get_json(&self, request: reqwest::RequestBuilder) -> Result<Value, ToolFailure> {
        let mut response = request.send().await.map_err(|e| self.unavailable(e))?;
        if !response.status().is_success() {
            return Err(self.unavailable(format!("HTTP {}", response.status())));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.unavailable(e))? {
            if bytes.len() + chunk.len() > MAX_ANSWER {
                return Err(self.unavailable(format!("an answer over {MAX_ANSWER} bytes")));
            }
            bytes.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| self.unavailable(format!("an answer that is not JSON: {e}")))
    }

    fn unavailable(&self, why: impl std::fmt::Display) -> ToolFailure {
        ToolError::new(
            ToolError::UNAVAILABLE,
            format!("A2A agent `{}` ({}): {why}", self.name, self.card_url),
        )
        .into()
    }

    async fn send(&self, message: Message) -> Result<Task, ToolFailure> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::new_v4().to_string(),
            "method": "SendMessage",
            "params": {"message": message},
        });
        let (endpoint, _) = self.remote().await?;
        let request = self
            .http
            .post(endpoint)
            .header("A2A-Version", "1.0")
            .json(&body);
        let value = self.get_json(request).await?;
        if let Some(error) = value.get("error") {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
            let text = format!(
                "A2A agent `{}` refused the message ({code}): {message}",
                self.name
            );
            return Err(ToolError::new(ToolError::INTERNAL, text).into());
        }
        let result = value.get("result").cloned().unwrap_or(Value::Null);
        match serde_json::from_value::<SendMessageResponse>(result) {
            Ok(SendMessageResponse::Task(task)) => Ok(task),
            Err(e) => Err(self.unavailable(format!("an answer that is not a task: {e}"))),
        }
    }
}

fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| {
            p.text
                .clone()
                .or_else(|| p.data.as_ref().map(Value::to_string))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tool's result for `task`.
fn result_of(task: &Task) -> Value {
    let state = serde_json::to_value(task.status.state).unwrap_or(Value::Null);
    let mut result = json!({"task_id": task.id, "context_id": task.context_id, "state": state});
    let said = task.status.message.as_ref().map(|m| text_of(&m.parts));
    match task.status.state {
        TaskState::InputRequired => result["question"] = json!(said.unwrap_or_default()),
        TaskState::Completed => {
            let answer: Vec<String> = task.artifacts.iter().map(|a| text_of(&a.parts)).collect();
            result["answer"] = json!(answer.join("\n"));
        }
        _ => {
            if let Some(said) = said {
                result["message"] = json!(said);
            }
        }
    }
    result
}

#[async_trait]
impl ToolSet for A2aToolSet {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        let (_, description) = self.remote().await.map_err(|f| f.error)?;
        Ok(vec![ToolSpec {
            name: ToolIdent::new(format!("{}.send", self.name)),
            description: format!(
                "{} Sends the agent a message; answers with its task's state and answer, or its \
                 question (answer it with another call giving `task_id`).",
                description
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "What to tell the agent"},
                    "task_id": {"type": "string", "description": "The task whose question this answers"}
                },
                "required": ["message"],
                "additionalProperties": false
            }),
            output_schema: None,
            annotations: ToolAnnotations {
                open_world: true,
                ..ToolAnnotations::default()
            },
            tags: vec!["a2a".to_owned()],
        }])
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let text = request.payload.get("message").and_then(Value::as_str);
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            let e = ToolError::new(
                ToolError::INVALID_ARGUMENTS,
                "`message` must be non-empty text",
            );
            return Err(e.into());
        };
        let task_id = request.payload.get("task_id").and_then(Value::as_str);
        let message = Message {
            message_id: format!("{}-{}", request.run_id, request.tool_call_id),
            context_id: None,
            task_id: task_id.map(str::to_owned),
            role: Role::User,
            parts: vec![Part::text(text)],
        };
        let task = self.send(message).await?;
        Ok(ToolReply::json(result_of(&task)))
    }
}
