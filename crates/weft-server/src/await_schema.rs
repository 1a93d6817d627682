//! OpenAPI schemas of await items, answers and tool outputs. They document
//! weft-core's serde shapes (which derive no schemas) and are never built.

#![allow(dead_code)] // These types exist for their schemas only.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::elicit_schema::{ElicitationAnswerSchema, ElicitationItemSchema};

/// One thing a run awaits, tagged by `kind`.
#[derive(Serialize, ToSchema)]
#[schema(as = AwaitItem)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum AwaitItemSchema {
    /// A free-text answer to a question.
    Clarification {
        /// The item's id (answer with it).
        id: String,
        /// The question.
        question: String,
        /// Fields the planner lacks.
        missing_fields: Option<Vec<String>>,
        /// The tool the answer is for.
        restrict_to_tool: Option<String>,
        /// An example of the tool's input.
        example_input: Option<Value>,
        /// A prompt to show with the question.
        clarifying_prompt: Option<String>,
    },
    /// Multiple-choice questions tied to a tool call.
    Questions {
        /// The item's id.
        id: String,
        /// The tool that asks.
        tool_name: String,
        /// The call that asks.
        tool_call_id: String,
        /// The call's arguments.
        payload: Value,
        /// A title for the form.
        title: Option<String>,
        /// The questions, in order.
        questions: Vec<QuestionSchema>,
    },
    /// Tool calls to execute outside the runtime; answer with their results.
    ExternalTools {
        /// The item's id.
        id: String,
        /// The calls, in order.
        items: Vec<ExternalToolCallSchema>,
    },
    /// A tool call that needs approval before it executes.
    Confirmation {
        /// The item's id.
        id: String,
        /// The tool.
        tool_name: String,
        /// The call.
        tool_call_id: String,
        /// The call's arguments.
        payload: Value,
    },
    /// A running tool's question: the run stays `running` while it waits.
    Elicitation(ElicitationItemSchema),
}

/// One multiple-choice question.
#[derive(Serialize, ToSchema)]
#[schema(as = Question)]
pub(crate) struct QuestionSchema {
    /// The question's id (a key of the answer's `answers`).
    id: String,
    /// The question text.
    prompt: String,
    /// The options offered.
    options: Vec<QuestionOptionSchema>,
    /// Whether several options may be chosen.
    allow_multiple: bool,
}

/// One option of a question.
#[derive(Serialize, ToSchema)]
#[schema(as = QuestionOption)]
pub(crate) struct QuestionOptionSchema {
    /// The option's id (what the answer names).
    id: String,
    /// What the human sees.
    label: String,
}

/// One call to execute outside the runtime.
#[derive(Serialize, ToSchema)]
#[schema(as = ExternalToolCall)]
pub(crate) struct ExternalToolCallSchema {
    /// The tool.
    tool_name: String,
    /// The call's id (its result names it).
    tool_call_id: String,
    /// The call's arguments.
    payload: Value,
}

/// The answer to one await item, tagged by `kind` (the item's kind).
#[derive(Serialize, ToSchema)]
#[schema(as = AwaitAnswer)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum AwaitAnswerSchema {
    /// Free text for a clarification.
    Clarification {
        /// The answer.
        text: String,
    },
    /// Chosen option ids, by question id.
    Questions {
        /// Option ids chosen for each question.
        answers: BTreeMap<String, Vec<String>>,
    },
    /// One result per external tool call.
    ExternalTools {
        /// The results.
        results: Vec<ToolOutputSchema>,
    },
    /// Approval or denial of a tool call.
    Confirmation {
        /// Whether the call may execute.
        approved: bool,
        /// Why, shown to the planner when denied.
        reason: Option<String>,
    },
    /// What the human did with a running tool's question.
    Elicitation(ElicitationAnswerSchema),
}

/// A tool call's result.
#[derive(Serialize, ToSchema)]
#[schema(as = ToolOutput)]
pub(crate) struct ToolOutputSchema {
    /// The call.
    tool_call_id: String,
    /// The tool.
    name: String,
    /// The call's arguments.
    payload: Value,
    /// What the tool returned.
    result: ToolResultBodySchema,
    /// Data for UIs and storage, never sent to a model.
    server_data: Option<Value>,
    /// The result's size in bytes.
    result_bytes: Option<u64>,
    /// How the result was truncated (returned, total, cursor).
    #[schema(value_type = Option<Object>)]
    bounds: Option<Value>,
    /// Guidance after a failure (reason, missing fields, example input).
    #[schema(value_type = Option<Object>)]
    retry_hint: Option<Value>,
    /// Timings and the like.
    #[schema(value_type = Option<Object>)]
    telemetry: Option<Value>,
    /// Whether the output spent one of the run's uses of its tool (an
    /// advice); absent when it did not.
    charged: Option<bool>,
}

/// A tool result: `{"kind": ..., "value": ...}`.
#[derive(Serialize, ToSchema)]
#[schema(as = ToolResultBody)]
pub(crate) struct ToolResultBodySchema {
    /// `json`, `content` (parts and structured data), `omitted` (over the
    /// payload budget) or `error` (a tool error with its `code`).
    kind: ToolResultKindSchema,
    /// The result of that kind.
    value: Value,
}

/// The kinds of tool result.
#[derive(Serialize, ToSchema)]
#[schema(as = ToolResultKind)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolResultKindSchema {
    /// Any JSON.
    Json,
    /// Message parts (text, image, audio, resource), structured data,
    /// meta, and the annotations of text, image and audio parts
    /// (`annotations`: `[{"part": index, "annotations": {...}}]`).
    Content,
    /// Replaced by an omission marker.
    Omitted,
    /// A tool error.
    Error,
}
