//! Turning a [`ModelRequest`] into the chat turns a local model's own chat
//! template renders: the system prompt with the tools and the call format,
//! assistant tool calls written exactly as the grammar makes the model write
//! them, and tool results as `<tool_response>` blocks in user turns.

use std::fmt::Write as _;

use weft_core::message::{Media, Part, Role};
use weft_core::model::{ModelError, ModelRequest, ToolChoice};

use super::grammar::{CALL_CLOSE, CALL_OPEN};

/// One turn for the chat template: a role name and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The turn's text.
    pub content: String,
    /// Whether the text comes from outside the agent (a user's message or
    /// a tool's result): it is then never read as chat-template tokens.
    pub literal: bool,
}

/// The turns for `request`; `with_tools` says whether tools are described.
pub fn turns(request: &ModelRequest, with_tools: bool) -> Result<Vec<Turn>, ModelError> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    let mut system = request.system.clone().unwrap_or_default();
    if with_tools {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&tools_section(request));
    }
    if !system.is_empty() {
        out.push(Turn {
            role: "system",
            content: system,
            literal: false,
        });
    }
    for message in &request.messages {
        let (role, literal) = match message.role {
            Role::System => ("system", false),
            Role::User | Role::Tool => ("user", true),
            Role::Assistant => ("assistant", false),
        };
        let mut content = String::new();
        for part in &message.parts {
            render_part(part, &mut content)?;
        }
        // Consecutive turns of one role (tool results after a user turn) merge.
        match out.last_mut() {
            Some(last) if last.role == role && role != "system" => {
                last.content.push_str("\n\n");
                last.content.push_str(&content);
            }
            _ => out.push(Turn {
                role,
                content,
                literal,
            }),
        }
    }
    Ok(out)
}

fn render_part(part: &Part, out: &mut String) -> Result<(), ModelError> {
    let sep = |out: &mut String| {
        if !out.is_empty() {
            out.push('\n');
        }
    };
    match part {
        Part::Text { text } => {
            sep(out);
            out.push_str(text);
        }
        // Local models have no reasoning blocks to carry back.
        Part::Thinking(_) => {}
        Part::ToolUse { name, input, .. } => {
            sep(out);
            let _ = write!(
                out,
                "{CALL_OPEN}\n{{\"name\": {}, \"arguments\": {input}}}\n{CALL_CLOSE}",
                serde_json::Value::String(name.clone())
            );
        }
        Part::ToolResult {
            content, is_error, ..
        } => {
            sep(out);
            out.push_str("<tool_response>\n");
            if *is_error {
                out.push_str("error: ");
            }
            let mut inner = String::new();
            for p in content {
                render_part(p, &mut inner)?;
            }
            out.push_str(&inner);
            out.push_str("\n</tool_response>");
        }
        Part::Image(media) | Part::Audio(media) => return Err(media_error(media)),
        Part::Resource(r) => {
            sep(out);
            out.push_str(&r.model_text());
        }
    }
    Ok(())
}

fn media_error(media: &Media) -> ModelError {
    ModelError::Config {
        message: format!(
            "local models read text only; the request holds {} media",
            media.media_type
        ),
    }
}

/// The system prompt's description of the tools and of the call format.
fn tools_section(request: &ModelRequest) -> String {
    let mut s = String::from("You can call these tools:\n");
    for tool in &request.tools {
        let spec = serde_json::json!({
            "name": tool.name.as_str(),
            "description": tool.description,
            "parameters": tool.input_schema,
        });
        let _ = writeln!(s, "{spec}");
    }
    let _ = write!(
        s,
        "\nTo call a tool, reply with exactly:\n{CALL_OPEN}\n{{\"name\": \"<tool name>\", \"arguments\": <arguments as JSON>}}\n{CALL_CLOSE}\n"
    );
    match &request.tool_choice {
        ToolChoice::Required => s.push_str("You must call a tool now."),
        ToolChoice::Tool(name) => {
            let _ = write!(s, "You must call the tool {name} now.");
        }
        ToolChoice::Auto | ToolChoice::None => s.push_str(
            "Results come back in <tool_response> blocks. When you have what you need, answer in plain text.",
        ),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use weft_core::ToolCallId;
    use weft_core::message::Message;

    #[test]
    fn calls_and_results_render_as_the_grammar_writes_them() {
        let request = ModelRequest {
            system: Some("Be brief.".into()),
            messages: vec![
                Message::user("add 1 and 2"),
                Message {
                    role: Role::Assistant,
                    parts: vec![Part::ToolUse {
                        id: ToolCallId::new("c1"),
                        name: "calc__add".into(),
                        input: Arc::new(serde_json::json!({"a": 1, "b": 2})),
                    }],
                },
                Message {
                    role: Role::Tool,
                    parts: vec![Part::ToolResult {
                        tool_use_id: ToolCallId::new("c1"),
                        content: vec![Part::Text { text: "3".into() }],
                        is_error: false,
                    }],
                },
            ],
            ..ModelRequest::default()
        };
        let t = turns(&request, false).unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t[0].content, "Be brief.");
        assert_eq!(
            t[2].content,
            "<tool_call>\n{\"name\": \"calc__add\", \"arguments\": {\"a\":1,\"b\":2}}\n</tool_call>"
        );
        assert_eq!(t[3].role, "user");
        assert_eq!(t[3].content, "<tool_response>\n3\n</tool_response>");
    }
}
