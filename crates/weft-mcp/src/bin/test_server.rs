//! A small MCP server for weft's tests and benchmarks, written with rmcp.
//!
//! `weft-mcp-test-server [--http ADDR] [--garbage] [--bad-schema]`: over
//! stdio by default; with `--http` it serves streamable HTTP at `/mcp` and
//! prints its URL on the first line of stdout. `--garbage` prints a line
//! that is not JSON-RPC before serving; `--bad-schema` adds a tool whose
//! input schema is not a JSON Schema.
//!
//! Tools: `echo`, `kinds` (one block of every content kind, some annotated,
//! plus structured content its output schema describes), `fail` (isError), `big` (a long text), `sleep`, `crash` (the
//! process exits mid-call), `add_tool` (adds `extra` and sends
//! `tools/list_changed`), `extra` (once added), `delete` (annotated
//! destructive), `read` (annotated read-only, with a title), `ask_name`
//! (elicits a form `{name: string}`; says "hello <name>", "declined" or
//! "cancelled"), `order` (elicits a form whose fields carry constraints
//! and defaults; says the content it got back, as JSON) and `open_url`
//! (elicits a URL; says "accepted", "declined" or "cancelled").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, JsonObject, ListToolsResult, PaginatedRequestParams,
    Resource, ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use weft_mcp::serve::{HttpServer, serve_stdio};

#[derive(Clone, Default)]
struct TestServer {
    extra: Arc<AtomicBool>,
    bad_schema: bool,
}

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn object_schema(props: Value, required: &[&str]) -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": props, "required": required}))
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let none = || object_schema(json!({}), &[]);
        let mut tools = vec![
            Tool::new(
                "echo",
                "Returns its text",
                object_schema(json!({"text": {"type": "string"}}), &["text"]),
            ),
            Tool::new("kinds", "One content block of every kind", none()).with_raw_output_schema(
                object_schema(json!({"count": {"type": "integer"}}), &["count"]),
            ),
            Tool::new("fail", "Reports a tool error", none()),
            Tool::new(
                "big",
                "Returns `bytes` bytes of text",
                object_schema(json!({"bytes": {"type": "integer"}}), &["bytes"]),
            ),
            Tool::new(
                "sleep",
                "Sleeps `ms` milliseconds",
                object_schema(json!({"ms": {"type": "integer"}}), &["ms"]),
            ),
            Tool::new("crash", "Exits the server process mid-call", none()),
            Tool::new("add_tool", "Adds the tool `extra`", none()),
            Tool::new(
                "add_tool_late",
                "Adds the tool `extra`, announced on the standalone stream after the answer",
                none(),
            ),
            Tool::new("delete", "Deletes everything", none()).with_annotations(
                ToolAnnotations::from_raw(None, Some(false), Some(true), Some(false), Some(false)),
            ),
            Tool::new("read", "Reads", none()).with_annotations(ToolAnnotations::from_raw(
                Some("Read things".into()),
                Some(true),
                None,
                None,
                Some(false),
            )),
            Tool::new("ask_name", "Asks the user's name and greets them", none()),
            Tool::new(
                "ask_later",
                "Sleeps `ms` milliseconds, then asks the user's name and greets them",
                object_schema(json!({"ms": {"type": "integer"}}), &["ms"]),
            ),
            Tool::new("order", "Asks for an order's details", none()),
            Tool::new("open_url", "Asks the user to visit a page", none()),
            Tool::new(
                "traceparent",
                "Returns the `traceparent` of its request's `_meta`",
                none(),
            ),
        ];
        if self.extra.load(Ordering::Acquire) {
            tools.push(Tool::new("extra", "Added at run time", none()));
        }
        if self.bad_schema {
            tools.push(Tool::new(
                "bad",
                "Has a broken schema",
                schema(json!({"type": 12})),
            ));
        }
        tools
    }

    async fn call(
        &self,
        name: &str,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let arg_u64 = |key: &str| args.get(key).and_then(Value::as_u64).unwrap_or(0);
        Ok(match name {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            "kinds" => {
                use rmcp::model::{Annotations, EmbeddedResource, Role, TextContent};
                let for_user = Annotations::default()
                    .with_audience(vec![Role::User])
                    .with_priority(0.8);
                let mut result = CallToolResult::success(vec![
                    ContentBlock::Text(
                        TextContent::new("plain text").with_annotations(for_user.clone()),
                    ),
                    ContentBlock::image("aW1hZ2U=", "image/png"),
                    ContentBlock::audio("YXVkaW8=", "audio/wav"),
                    ContentBlock::resource_link(
                        Resource::new("file:///notes.txt", "notes")
                            .with_title("Notes")
                            .with_mime_type("text/plain")
                            .with_description("the notes")
                            .with_size(12)
                            .with_annotations(Annotations::default().with_priority(0.5)),
                    ),
                    ContentBlock::resource(ResourceContents::text(
                        "embedded body",
                        "mem://embedded",
                    )),
                    ContentBlock::Resource(
                        EmbeddedResource::new(ResourceContents::BlobResourceContents {
                            uri: "mem://blob".into(),
                            mime_type: Some("application/octet-stream".into()),
                            blob: "AAECAw==".into(),
                            meta: None,
                        })
                        .with_annotations(for_user),
                    ),
                ]);
                result.structured_content = Some(json!({"count": 6}));
                result
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it broke")]),
            "big" => {
                let n = usize::try_from(arg_u64("bytes")).unwrap_or(0);
                CallToolResult::success(vec![ContentBlock::text("x".repeat(n))])
            }
            "sleep" => {
                tokio::time::sleep(Duration::from_millis(arg_u64("ms"))).await;
                CallToolResult::success(vec![ContentBlock::text("slept")])
            }
            "crash" => {
                eprintln!("weft-mcp-test-server: crashing as asked");
                std::process::exit(3)
            }
            "add_tool" => {
                self.extra.store(true, Ordering::Release);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("added")])
            }
            "add_tool_late" => {
                self.extra.store(true, Ordering::Release);
                // A spawned task is outside the request's scope: rmcp sends
                // its notification on the standalone stream, not the call's.
                let peer = context.peer.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let _ = peer.notify_tool_list_changed().await;
                });
                CallToolResult::success(vec![ContentBlock::text("added")])
            }
            "extra" if self.extra.load(Ordering::Acquire) => {
                CallToolResult::success(vec![ContentBlock::text("extra")])
            }
            "ask_name" | "ask_later" => {
                tokio::time::sleep(Duration::from_millis(arg_u64("ms"))).await;
                let schema = ElicitationSchema::builder()
                    .required_string("name")
                    .build()
                    .map_err(|e| ErrorData::internal_error(e, None))?;
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: "What is your name?".into(),
                    requested_schema: schema,
                };
                elicited(&context, params, |content| {
                    let name = content
                        .and_then(|c| c.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    format!("hello {name}")
                })
                .await
            }
            "order" => {
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: "How many, and where to?".into(),
                    requested_schema: order_schema()?,
                };
                elicited(&context, params, |content| {
                    content.map(Value::to_string).unwrap_or_default()
                })
                .await
            }
            "open_url" => {
                let params = ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message: "Please approve at the page".into(),
                    url: "https://example.test/consent".into(),
                    elicitation_id: "consent-1".into(),
                };
                elicited(&context, params, |_| "accepted".to_owned()).await
            }
            "delete" => CallToolResult::success(vec![ContentBlock::text("deleted")]),
            "read" => CallToolResult::success(vec![ContentBlock::text("read")]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                ));
            }
        })
    }
}

/// The `order` form: a bounded integer, an email, a titled enum and a
/// boolean, the last two with defaults.
fn order_schema() -> Result<ElicitationSchema, ErrorData> {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
            "email": {"type": "string", "format": "email"},
            "size": {"type": "string", "oneOf": [
                {"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"}],
                "default": "m"},
            "gift": {"type": "boolean", "default": false}
        },
        "required": ["quantity", "size"]
    }))
    .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// Elicits `params` and says what came back (`accepted` names the content).
async fn elicited(
    context: &RequestContext<RoleServer>,
    params: ElicitRequestParams,
    accepted: impl FnOnce(Option<&Value>) -> String,
) -> CallToolResult {
    match context.peer.create_elicitation(params).await {
        Ok(result) => {
            let text = match result.action {
                ElicitationAction::Accept => accepted(result.content.as_ref()),
                ElicitationAction::Decline => "declined".to_owned(),
                ElicitationAction::Cancel => "cancelled".to_owned(),
                _ => "unknown action".to_owned(),
            };
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
        Err(e) => {
            CallToolResult::error(vec![ContentBlock::text(format!("elicitation failed: {e}"))])
        }
    }
}

impl ServerHandler for TestServer {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "traceparent" {
            // rmcp hands the request's `_meta` over in the context.
            let parent = request
                .meta
                .as_ref()
                .and_then(|m| m.get_traceparent())
                .or_else(|| context.meta.get_traceparent())
                .unwrap_or_default();
            return Ok(CallToolResult::success(vec![ContentBlock::text(parent)]).into());
        }
        let args = request.arguments.unwrap_or_default();
        self.call(&request.name, args, context)
            .await
            .map(Into::into)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let http = args
        .iter()
        .position(|a| a == "--http")
        .and_then(|i| args.get(i + 1).cloned());
    let server = TestServer {
        extra: Arc::default(),
        bad_schema: has("--bad-schema"),
    };
    if has("--garbage") {
        println!("this is not JSON-RPC");
    }
    let result = match http {
        Some(addr) => match HttpServer::bind(&addr).await {
            Ok(listener) => {
                println!("{}", listener.url());
                listener
                    .serve(move || server.clone(), CancellationToken::new())
                    .await
            }
            Err(e) => Err(e),
        },
        None => serve_stdio(server).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weft-mcp-test-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
