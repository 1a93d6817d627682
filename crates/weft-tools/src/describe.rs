//! Call descriptions: an optional `description` string parameter ("what this
//! call is doing") injected into every tool's input schema, and the helpers
//! the runtime uses to take it out of the arguments before the handler runs
//! (so handlers never see it and the runtime can show it in events).
//!
//! A tool that already declares its own `description` parameter is left
//! alone: its schema is not changed and its spec does not get
//! [`DESCRIPTION_TAG`]. Use [`strip_description_for`] to respect that.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use weft_core::tool::{ToolError, ToolIdent, ToolRequest, ToolSpec};

use crate::toolset::{ToolFailure, ToolReply, ToolSet};

/// The injected parameter's name.
pub const DESCRIPTION_PARAM: &str = "description";

/// The tag added to a spec whose schema received the parameter.
pub const DESCRIPTION_TAG: &str = "weft:call-description";

/// The injected parameter's description, as the model reads it.
const PARAM_DOC: &str = "What this call is doing, in a few words, for the user watching.";

/// Adds the `description` parameter to `spec`'s input schema (required when
/// `required`) and tags the spec. Returns false, changing nothing, when the
/// schema is not an object schema or already has a `description` property.
pub fn inject_description(spec: &mut ToolSpec, required: bool) -> bool {
    let Some(schema) = spec.input_schema.as_object_mut() else {
        return false;
    };
    let is_object = match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => true,
    };
    if !is_object {
        return false;
    }
    let props = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(props) = props.as_object_mut() else {
        return false;
    };
    if props.contains_key(DESCRIPTION_PARAM) {
        return false;
    }
    props.insert(
        DESCRIPTION_PARAM.to_owned(),
        json!({"type": "string", "description": PARAM_DOC}),
    );
    if required {
        let list = schema
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = list.as_array_mut() {
            list.push(Value::String(DESCRIPTION_PARAM.to_owned()));
        }
    }
    spec.tags.push(DESCRIPTION_TAG.to_owned());
    true
}

/// Removes the `description` argument from `payload`, returning it when it is a string.
pub fn strip_description(payload: &mut Value) -> Option<String> {
    match payload.as_object_mut()?.remove(DESCRIPTION_PARAM)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// [`strip_description`], but only for a spec that received the injected parameter.
pub fn strip_description_for(spec: &ToolSpec, payload: &mut Value) -> Option<String> {
    if spec.tags.iter().any(|t| t == DESCRIPTION_TAG) {
        strip_description(payload)
    } else {
        None
    }
}

/// A wrapper that injects the `description` parameter into every tool of
/// the toolset it wraps, and strips it from calls before they reach it.
pub struct DescribedToolSet<T> {
    inner: T,
    required: bool,
    /// Tools that declare their own `description`, seen by the last `list_tools`.
    own_description: RwLock<HashSet<ToolIdent>>,
}

impl<T: ToolSet> DescribedToolSet<T> {
    /// Wraps `inner`; the parameter is optional.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            required: false,
            own_description: RwLock::new(HashSet::new()),
        }
    }

    /// Makes the parameter required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
}

#[async_trait]
impl<T: ToolSet> ToolSet for DescribedToolSet<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        let mut specs = self.inner.list_tools().await?;
        let mut own = HashSet::new();
        for spec in &mut specs {
            if !inject_description(spec, self.required) {
                own.insert(spec.name.clone());
            }
        }
        *self
            .own_description
            .write()
            .unwrap_or_else(PoisonError::into_inner) = own;
        Ok(specs)
    }

    async fn call_tool(&self, mut request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let keep = self
            .own_description
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&request.name);
        if !keep && request.payload.get(DESCRIPTION_PARAM).is_some() {
            strip_description(Arc::make_mut(&mut request.payload));
        }
        self.inner.call_tool(request).await
    }

    fn inner(&self) -> Option<&dyn ToolSet> {
        Some(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use weft_core::ids::{RunId, SessionId, ToolCallId, TurnId};

    use super::*;
    use crate::typed::FnToolSet;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Echo {
        text: String,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Ticket {
        description: String,
    }

    fn toolset() -> DescribedToolSet<FnToolSet> {
        let set = FnToolSet::new("t")
            .tool("echo", "Echoes", |a: Echo| async move {
                Ok::<_, ToolError>(a.text)
            })
            .tool("file", "Files a ticket", |a: Ticket| async move {
                Ok::<_, ToolError>(a.description)
            });
        DescribedToolSet::new(set)
    }

    fn request(name: &str, payload: Value) -> ToolRequest {
        ToolRequest {
            name: ToolIdent::new(name),
            payload: payload.into(),
            run_id: RunId::new("r"),
            session_id: SessionId::new("s"),
            turn_id: TurnId::new("t"),
            tool_call_id: ToolCallId::new("c"),
            parent_tool_call_id: None,
            labels: Default::default(),
            output: Default::default(),
            elicit: Default::default(),
            children: Default::default(),
        }
    }

    #[test]
    fn strip_returns_the_string_and_removes_the_key() {
        let mut v = json!({"a": 1, "description": "adding"});
        assert_eq!(strip_description(&mut v), Some("adding".into()));
        assert_eq!(v, json!({"a": 1}));
        assert_eq!(strip_description(&mut json!(null)), None);
    }

    #[tokio::test]
    async fn injects_into_schemas_and_strips_before_the_handler() {
        let set = toolset();
        let specs = set.list_tools().await.unwrap();
        let echo = specs.iter().find(|s| s.name.as_str() == "t.echo").unwrap();
        assert_eq!(
            echo.input_schema["properties"]["description"]["type"],
            "string"
        );
        assert!(echo.tags.contains(&DESCRIPTION_TAG.to_string()));
        // deny_unknown_fields: the handler would fail if it saw the description.
        let reply = set
            .call_tool(request(
                "t.echo",
                json!({"text": "hi", "description": "saying hi"}),
            ))
            .await
            .unwrap();
        assert_eq!(reply, ToolReply::json(json!("hi")));
    }

    #[tokio::test]
    async fn a_tool_with_its_own_description_is_left_alone() {
        let set = toolset();
        let specs = set.list_tools().await.unwrap();
        let file = specs.iter().find(|s| s.name.as_str() == "t.file").unwrap();
        assert!(file.tags.is_empty());
        let mut payload = json!({"description": "printer on fire"});
        assert_eq!(strip_description_for(file, &mut payload), None);
        let reply = set.call_tool(request("t.file", payload)).await.unwrap();
        assert_eq!(reply, ToolReply::json(json!("printer on fire")));
    }

    #[test]
    fn required_flag_adds_to_required() {
        let mut spec = FnToolSet::new("t")
            .tool("echo", "Echoes", |a: Echo| async move {
                Ok::<_, ToolError>(a.text)
            })
            .specs()
            .remove(0);
        assert!(inject_description(&mut spec, true));
        assert!(
            spec.input_schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!("description"))
        );
        assert!(!inject_description(&mut spec, true), "already present");
    }
}
