//! A remote A2A agent as a toolset of a weft agent (agent files'
//! `type = "a2a"`): one tool, `<name>.send`, that sends the remote agent a
//! message over A2A 1.0 JSON-RPC (`A2A-Version: 1.0`) and answers with its
//! task once it has ended: `{"task_id", "context_id", "state", "answer"}`.
//!
//! When the card says the agent streams, the message goes by
//! `SendStreamingMessage` and the task's status messages and artifacts are
//! published as the call's live output (`progress` and `stdout`) as they
//! arrive; otherwise by `SendMessage`. When the task asks for input
//! (`input-required`), the call asks the person of the weft run (an
//! elicitation form with one field, `answer`, and the agent's question as
//! its message) and sends the answer as the task's next message; a
//! declined or dismissed question cancels the remote task (`CancelTask`)
//! and the call fails saying so. The card's security requirements (HTTP
//! bearer, API key) are met with the secrets the agent file names
//! (`auth`). Answers and streams are read under [`MAX_ANSWER`] bytes, a
//! stream under [`MAX_EVENTS`] events, a task asks at most
//! [`MAX_QUESTIONS`] questions; every request waits at most the call's
//! timeout.

mod ask;
pub mod auth;
pub mod remote;

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::{Value, json};
use weft_core::tool::{OutputSink, ToolAnnotations, ToolError, ToolIdent, ToolRequest, ToolSpec};
use weft_tools::{ElicitationHandler, ElicitationSupport, ToolFailure, ToolReply, ToolSet};

use auth::{Credential, Secrets};
use remote::{Progress, RemoteTask};

/// The largest answer, or stream, read from the remote agent (4 MiB).
pub const MAX_ANSWER: usize = 4 << 20;
/// The most events read from one stream.
pub const MAX_EVENTS: usize = 4096;
/// The most questions one call answers for its task.
pub const MAX_QUESTIONS: usize = 32;

/// What the card says.
struct Remote {
    endpoint: String,
    description: String,
    streaming: bool,
    credentials: Vec<Credential>,
}

/// A remote A2A agent as a toolset.
pub struct A2aToolSet {
    name: String,
    card_url: String,
    http: reqwest::Client,
    secrets: Secrets,
    remote: tokio::sync::OnceCell<Remote>,
}

impl A2aToolSet {
    /// The agent whose Agent Card is at `url` (or, for a URL not ending in
    /// `.json`, at its `/.well-known/agent-card.json`), as toolset `name`;
    /// each request waits at most `timeout`; `secrets` meet the card's
    /// security requirements. The card is read on first use.
    pub fn new(name: &str, url: &str, timeout: Duration, secrets: Secrets) -> Self {
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
            secrets,
            remote: tokio::sync::OnceCell::new(),
        }
    }

    /// What the card gives.
    async fn remote(&self) -> Result<&Remote, ToolFailure> {
        self.remote
            .get_or_try_init(|| async {
                let response = self.http.get(&self.card_url).send().await;
                let card = self
                    .read_json(response.map_err(|e| self.unavailable(e.without_url()))?)
                    .await?;
                let interfaces = card["supportedInterfaces"].as_array().cloned();
                let endpoint = interfaces
                    .unwrap_or_default()
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
                    })?
                    .to_owned();
                let credentials =
                    auth::credentials(&card, &self.secrets).map_err(|e| self.unavailable(e))?;
                Ok(Remote {
                    endpoint,
                    description: card["description"].as_str().unwrap_or_default().to_owned(),
                    streaming: card["capabilities"]["streaming"] == true,
                    credentials,
                })
            })
            .await
    }

    /// The JSON body of `response`, read under [`MAX_ANSWER`] bytes.
    async fn read_json(&self, mut response: reqwest::Response) -> Result<Value, ToolFailure> {
        if !response.status().is_success() {
            return Err(self.unavailable(format!("HTTP {}", response.status())));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.unavailable(e.without_url()))?
        {
            if bytes.len() + chunk.len() > MAX_ANSWER {
                return Err(self.unavailable(format!("an answer over {MAX_ANSWER} bytes")));
            }
            bytes.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| self.unavailable(format!("an answer that is not JSON: {e}")))
    }

    /// A failure naming the agent (the request's URL, which may carry an
    /// API key, is left out of HTTP errors).
    fn unavailable(&self, why: impl std::fmt::Display) -> ToolFailure {
        ToolError::new(
            ToolError::UNAVAILABLE,
            format!("A2A agent `{}` ({}): {why}", self.name, self.card_url),
        )
        .into()
    }

    /// The result of a JSON-RPC answer, or the agent's error.
    fn result_of(&self, method: &str, mut value: Value) -> Result<Value, Box<ToolError>> {
        if let Some(error) = value.get("error") {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
            let text = format!(
                "A2A agent `{}` refused {method} ({code}): {message}",
                self.name
            );
            return Err(ToolError::new(ToolError::INTERNAL, text).into());
        }
        Ok(value
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }

    /// A request for `method` with `params`, authenticated as the card asks.
    async fn post(
        &self,
        method: &str,
        params: Value,
    ) -> Result<reqwest::RequestBuilder, ToolFailure> {
        let remote = self.remote().await?;
        let body = json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::new_v4().to_string(),
            "method": method,
            "params": params,
        });
        let request = self
            .http
            .post(&remote.endpoint)
            .header("A2A-Version", "1.0")
            .json(&body);
        Ok(remote.credentials.iter().fold(request, |r, c| c.apply(r)))
    }

    /// Calls `method` with `params`; its result.
    async fn call(&self, method: &str, params: Value) -> Result<Value, ToolFailure> {
        let response = self.post(method, params).await?.send().await;
        let value = self
            .read_json(response.map_err(|e| self.unavailable(e.without_url()))?)
            .await?;
        self.result_of(method, value).map_err(|e| (*e).into())
    }

    /// Sends `message`; the task once it has ended or asks for input, its
    /// progress published on `output` when the agent streams.
    async fn exchange(
        &self,
        message: Value,
        output: &OutputSink,
    ) -> Result<RemoteTask, ToolFailure> {
        let mut task = RemoteTask::default();
        let params = json!({"message": message});
        if !self.remote().await?.streaming {
            let result = self.call("SendMessage", params).await?;
            return match task.fold(&result) {
                Some(_) => Ok(task),
                None => Err(self.unavailable(format!("an answer that is not a task: {result}"))),
            };
        }
        self.stream(params, &mut task, output).await?;
        if !task.ended() && !task.asks() && !task.id.is_empty() {
            // The stream closed early: ask for the task as it is.
            let result = self.call("GetTask", json!({"id": task.id})).await?;
            task.fold(&json!({"task": result}));
        }
        if task.id.is_empty() && !task.ended() {
            return Err(self.unavailable("a stream that named no task"));
        }
        Ok(task)
    }

    /// Reads `SendStreamingMessage`'s events into `task` until it ends or
    /// asks for input.
    async fn stream(
        &self,
        params: Value,
        task: &mut RemoteTask,
        output: &OutputSink,
    ) -> Result<(), ToolFailure> {
        const METHOD: &str = "SendStreamingMessage";
        let request = self
            .post(METHOD, params)
            .await?
            .header("Accept", "text/event-stream");
        let response = request
            .send()
            .await
            .map_err(|e| self.unavailable(e.without_url()))?;
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json || !response.status().is_success() {
            let value = self.read_json(response).await?;
            self.result_of(METHOD, value)
                .map_err(|e| ToolFailure::from(*e))?;
            return Err(self.unavailable("a stream answered with no events"));
        }
        // Server-Sent Events framed by `sse-stream`, over the body read
        // under MAX_ANSWER bytes.
        let limited = response.bytes_stream().scan(0usize, |read, chunk| {
            let chunk = chunk.map_err(|e| std::io::Error::other(e.without_url()));
            if let Ok(bytes) = &chunk {
                *read += bytes.len();
            }
            let over = *read > MAX_ANSWER;
            std::future::ready(Some(if over {
                Err(std::io::Error::other(format!(
                    "a stream over {MAX_ANSWER} bytes"
                )))
            } else {
                chunk
            }))
        });
        let mut stream = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(limited));
        let mut events = 0;
        while let Some(event) = stream.next().await {
            let event = event.map_err(|e| self.unavailable(format!("a broken stream: {e}")))?;
            let Some(data) = event.data else { continue };
            events += 1;
            if events > MAX_EVENTS {
                return Err(self.unavailable(format!("a stream of over {MAX_EVENTS} events")));
            }
            let value: Value = serde_json::from_str(&data)
                .map_err(|e| self.unavailable(format!("a stream event that is not JSON: {e}")))?;
            let result = self
                .result_of(METHOD, value)
                .map_err(|e| ToolFailure::from(*e))?;
            for progress in task.fold(&result).unwrap_or_default() {
                match progress {
                    Progress::Status(t) => output.publish("progress", &t),
                    Progress::Artifact(t) => output.publish("stdout", &t),
                }
            }
            if task.ended() || task.asks() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Cancels task `id`; why it could not be, if so.
    async fn cancel(&self, id: &str) -> Option<String> {
        self.call("CancelTask", json!({"id": id}))
            .await
            .err()
            .map(|f| f.error.message)
    }
}

fn message(text: &str, id: String, task: Option<&RemoteTask>) -> Value {
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(task) = task {
        message["taskId"] = json!(task.id);
        message["contextId"] = json!(task.context_id);
    }
    message
}

#[async_trait]
impl ToolSet for A2aToolSet {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        let remote = self.remote().await.map_err(|f| f.error)?;
        Ok(vec![ToolSpec {
            name: ToolIdent::new(format!("{}.send", self.name)),
            description: format!(
                "{} Sends the agent a message; answers with its task's state and answer \
                 (the agent's questions are put to the user on the way).",
                remote.description
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "What to tell the agent"}
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
        let id = |n: usize| format!("{}-{}-{n}", request.run_id, request.tool_call_id);
        let mut task = self
            .exchange(message(text, id(0), None), &request.output)
            .await?;
        let mut asked = 0;
        while task.asks() {
            asked += 1;
            if asked > MAX_QUESTIONS {
                let cancelled = self
                    .cancel(&task.id)
                    .await
                    .unwrap_or_else(|| "cancelled".to_owned());
                let text = format!(
                    "A2A agent `{}`, task `{}`: over {MAX_QUESTIONS} questions; {cancelled}",
                    self.name, task.id
                );
                return Err(ToolError::new(ToolError::CANCELLED, text).into());
            }
            let answer = self.ask(&request, &task).await?;
            let next = message(&answer, id(asked), Some(&task));
            task = self.exchange(next, &request.output).await?;
        }
        Ok(ToolReply::json(task.result()))
    }

    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        Some(self)
    }
}

/// The task's questions are asked through the call's own elicitor, which
/// the runtime attaches; there is no handler to set.
impl ElicitationSupport for A2aToolSet {
    fn set_elicitation_handler(&self, _handler: Option<std::sync::Arc<dyn ElicitationHandler>>) {}
}
