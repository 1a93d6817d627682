//! Typed tools: [`FnToolSet`] turns async Rust functions taking a
//! `Deserialize + JsonSchema` argument struct into tools whose input schema
//! comes from `schemars` and whose arguments are validated before the
//! handler runs.

mod handler;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use weft_core::tool::{ToolAnnotations, ToolError, ToolIdent, ToolRequest, ToolSpec};

use crate::capability::{Instructions, PublicDescription};
use crate::schema::ArgsValidator;
use crate::toolset::{ToolFailure, ToolReply, ToolSet};

pub use handler::{DomainError, IntoToolFailure};
use handler::{ErasedHandler, checked_payload, decode, json_reply};

/// Why a tool could not be registered on a [`FnToolSet`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// The generated input schema does not compile.
    #[error("the input schema of `{tool}` is invalid: {message}")]
    InvalidSchema {
        /// The tool.
        tool: ToolIdent,
        /// The compiler's message.
        message: String,
    },
    /// Two tools share a name.
    #[error("tool `{tool}` is registered twice")]
    DuplicateTool {
        /// The tool.
        tool: ToolIdent,
    },
    /// The tool's name is empty.
    #[error("a tool of toolset `{toolset}` has an empty name")]
    EmptyName {
        /// The toolset.
        toolset: String,
    },
}

/// A toolset of typed tools built from async Rust functions.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use weft_core::tool::ToolError;
/// use weft_tools::FnToolSet;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     a: i64,
///     b: i64,
/// }
///
/// let calc = FnToolSet::new("calc")
///     .tool("add", "Adds two integers", |args: AddArgs| async move { Ok::<_, ToolError>(args.a + args.b) })
///     .read_only()
///     .idempotent()
///     .check()
///     .expect("valid registrations");
/// assert_eq!(calc.specs()[0].name.as_str(), "calc.add");
/// ```
///
/// Annotation methods ([`FnToolSet::read_only`], ...) apply to the tool
/// registered last. Registration problems are collected: [`FnToolSet::check`]
/// returns the first, and [`ToolSet::list_tools`] fails while there is one.
pub struct FnToolSet {
    name: String,
    tools: Vec<TypedTool>,
    index: HashMap<String, usize>,
    errors: Vec<RegistrationError>,
    instructions: Option<String>,
    public_description: Option<String>,
}

struct TypedTool {
    spec: ToolSpec,
    validator: ArgsValidator,
    handler: ErasedHandler,
}

impl FnToolSet {
    /// An empty toolset called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tools: Vec::new(),
            index: HashMap::new(),
            errors: Vec::new(),
            instructions: None,
            public_description: None,
        }
    }

    /// Adds a tool whose handler's `Ok` value is serialized as the JSON result.
    pub fn tool<A, F, Fut, R, E>(self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Serialize,
        E: IntoToolFailure,
    {
        self.tool_with_context(name, description, move |_req, args| handler(args))
    }

    /// Adds a tool whose handler also receives the [`ToolRequest`] (run, session, call ids, labels).
    pub fn tool_with_context<A, F, Fut, R, E>(
        self,
        name: &str,
        description: &str,
        handler: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(ToolRequest, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Serialize,
        E: IntoToolFailure,
    {
        self.reply_tool_with_context(name, description, move |req, args: A| {
            let fut = handler(req, args);
            async move {
                match fut.await {
                    Ok(value) => json_reply(&value),
                    Err(e) => Err(e.into_tool_failure()),
                }
            }
        })
    }

    /// Adds a tool whose handler builds its own [`ToolReply`] (rich content, server data, bounds).
    pub fn reply_tool<A, F, Fut, E>(self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolReply, E>> + Send + 'static,
        E: IntoToolFailure,
    {
        self.reply_tool_with_context(name, description, move |_req, args| handler(args))
    }

    /// Adds a tool whose handler receives the [`ToolRequest`] and builds its own [`ToolReply`].
    pub fn reply_tool_with_context<A, F, Fut, E>(
        mut self,
        name: &str,
        description: &str,
        handler: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(ToolRequest, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolReply, E>> + Send + 'static,
        E: IntoToolFailure,
    {
        let ident = ToolIdent::from_parts(&self.name, name);
        let erased: ErasedHandler = Arc::new(move |req: ToolRequest| {
            let args = decode::<A>(&req.name, &req.payload);
            let fut = args.map(|args| handler(req, args));
            Box::pin(async move {
                match fut {
                    Ok(fut) => fut.await.map_err(IntoToolFailure::into_tool_failure),
                    Err(failure) => Err(failure),
                }
            })
        });
        self.register(name, ident, description, input_schema_for::<A>(), erased);
        self
    }

    /// Sets the instructions this toolset adds to the system prompt.
    pub fn with_instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Sets the description shown to users.
    pub fn with_public_description(mut self, text: impl Into<String>) -> Self {
        self.public_description = Some(text.into());
        self
    }

    /// Marks the last tool read-only.
    pub fn read_only(self) -> Self {
        self.annotate(|a| a.read_only = true)
    }

    /// Marks the last tool destructive.
    pub fn destructive(self) -> Self {
        self.annotate(|a| a.destructive = true)
    }

    /// Marks the last tool idempotent.
    pub fn idempotent(self) -> Self {
        self.annotate(|a| a.idempotent = true)
    }

    /// Marks the last tool as talking to the open world.
    pub fn open_world(self) -> Self {
        self.annotate(|a| a.open_world = true)
    }

    /// Sets the last tool's human-readable title.
    pub fn title(self, title: impl Into<String>) -> Self {
        let title = title.into();
        self.annotate(move |a| a.title = Some(title))
    }

    /// Changes the last tool's annotations.
    pub fn annotate(mut self, f: impl FnOnce(&mut ToolAnnotations)) -> Self {
        if let Some(tool) = self.tools.last_mut() {
            f(&mut tool.spec.annotations);
        }
        self
    }

    /// Adds a tag to the last tool.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        if let Some(tool) = self.tools.last_mut() {
            tool.spec.tags.push(tag.into());
        }
        self
    }

    /// Sets the last tool's output schema from a Rust type.
    pub fn output_schema<T: JsonSchema>(mut self) -> Self {
        if let Some(tool) = self.tools.last_mut() {
            tool.spec.output_schema = Some(input_schema_for::<T>());
        }
        self
    }

    /// The first registration problem, if any.
    pub fn check(self) -> Result<Self, RegistrationError> {
        match self.errors.first() {
            Some(e) => Err(e.clone()),
            None => Ok(self),
        }
    }

    /// Every registration problem.
    pub fn registration_errors(&self) -> &[RegistrationError] {
        &self.errors
    }

    /// The specs of every registered tool.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec.clone()).collect()
    }

    fn register(
        &mut self,
        name: &str,
        ident: ToolIdent,
        description: &str,
        schema: Value,
        handler: ErasedHandler,
    ) {
        if name.is_empty() {
            self.errors.push(RegistrationError::EmptyName {
                toolset: self.name.clone(),
            });
            return;
        }
        if self.index.contains_key(name) {
            self.errors
                .push(RegistrationError::DuplicateTool { tool: ident });
            return;
        }
        let validator = match ArgsValidator::compile(&schema) {
            Ok(v) => v,
            Err(e) => {
                self.errors.push(RegistrationError::InvalidSchema {
                    tool: ident,
                    message: e.message,
                });
                return;
            }
        };
        let spec = ToolSpec {
            name: ident,
            description: description.to_owned(),
            input_schema: schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            tags: Vec::new(),
        };
        self.index.insert(name.to_owned(), self.tools.len());
        self.tools.push(TypedTool {
            spec,
            validator,
            handler,
        });
    }

    fn find(&self, ident: &ToolIdent) -> Option<&TypedTool> {
        if ident.toolset() != self.name {
            return None;
        }
        self.index
            .get(ident.tool())
            .and_then(|&i| self.tools.get(i))
    }
}

#[async_trait]
impl ToolSet for FnToolSet {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        if !self.errors.is_empty() {
            let list: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
            return Err(ToolError::new(ToolError::INTERNAL, list.join("; ")));
        }
        Ok(self.specs())
    }

    async fn call_tool(&self, mut request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let Some(tool) = self.find(&request.name) else {
            let message = format!("toolset `{}` has no tool `{}`", self.name, request.name);
            return Err(ToolError::new(ToolError::UNAVAILABLE, message).into());
        };
        checked_payload(&tool.validator, &tool.spec.name, &mut request.payload)?;
        (tool.handler)(request).await
    }

    fn instructions(&self) -> Option<&dyn Instructions> {
        self.instructions
            .as_ref()
            .map(|_| self as &dyn Instructions)
    }

    fn public_description(&self) -> Option<&dyn PublicDescription> {
        self.public_description
            .as_ref()
            .map(|_| self as &dyn PublicDescription)
    }
}

impl Instructions for FnToolSet {
    fn instructions_text(&self) -> String {
        self.instructions.clone().unwrap_or_default()
    }
}

impl PublicDescription for FnToolSet {
    fn public_description_text(&self) -> String {
        self.public_description.clone().unwrap_or_default()
    }
}

/// The JSON Schema (draft 2020-12, for deserialization) of a handler's argument type.
pub fn input_schema_for<A: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with(|s| s.meta_schema = None)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("title");
    }
    schema
}
