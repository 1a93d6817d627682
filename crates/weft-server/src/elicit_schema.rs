//! OpenAPI schemas of elicitation await items and answers (without their
//! `kind`, which the `AwaitItem` and `AwaitAnswer` unions add). They
//! document weft-core's serde shapes (which derive no schemas) and are never
//! built.

#![allow(dead_code)] // These types exist for their schemas only.

use serde::Serialize;
use utoipa::ToSchema;

/// An await item of kind `elicitation`: a running tool's question, a form
/// (`mode: form`, with `requested_schema`) or a URL to open (`mode: url`).
/// The run stays `running` while it waits; the tool gets the answer.
#[derive(Serialize, ToSchema)]
#[schema(as = ElicitationItem)]
pub(crate) struct ElicitationItemSchema {
    /// The item's id (answer with it).
    id: String,
    /// The running call that asks.
    tool_call_id: String,
    /// The tool that asks.
    tool: String,
    /// What it asks, in words.
    message: String,
    /// `form` or `url`.
    mode: ElicitationModeSchema,
    /// For a form: a flat JSON Schema object of primitive properties.
    #[schema(value_type = Option<Object>)]
    requested_schema: Option<serde_json::Value>,
    /// For a URL: where to go.
    url: Option<String>,
    /// For a URL: the server's id of the elicitation.
    elicitation_id: Option<String>,
}

/// How an elicitation is answered.
#[derive(Serialize, ToSchema)]
#[schema(as = ElicitationMode)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ElicitationModeSchema {
    /// Fill in the form's fields.
    Form,
    /// Open the URL, then accept or decline.
    Url,
}

/// An answer of kind `elicitation`, e.g.
/// `{"kind": "elicitation", "action": "accept", "content": {"name": "Ada"}}`.
#[derive(Serialize, ToSchema)]
#[schema(as = ElicitationAnswer)]
pub(crate) struct ElicitationAnswerSchema {
    /// What the human did.
    action: ElicitationActionSchema,
    /// The form's fields; only to accept a form. A missing required field,
    /// a value of the wrong type, or one not offered is a 400 naming
    /// `answer.content.<field>`.
    #[schema(value_type = Option<Object>)]
    content: Option<serde_json::Value>,
}

/// What the human did with an elicitation.
#[derive(Serialize, ToSchema)]
#[schema(as = ElicitationAction)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ElicitationActionSchema {
    /// Answered.
    Accept,
    /// Refused to answer.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}
