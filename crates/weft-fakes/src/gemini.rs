//! The Gemini fake (Generative Language API, `v1beta`): the API's request
//! rules and its `streamGenerateContent?alt=sse` stream.
//!
//! Rules (status and error messages as the API words them):
//! - The key comes in `x-goog-api-key` (else 403 `PERMISSION_DENIED`).
//! - `contents` is required and non-empty; roles are `user` and `model`
//!   (a content without one is the user's; Vertex AI refuses it, see
//!   [`crate::vertex`]); no content has empty `parts`.
//! - A `functionResponse` turn comes right after a `functionCall` turn and
//!   answers all of its calls (as many responses as calls); each
//!   `response` is a JSON object.
//! - Thought signatures: every signature sent back is one the API issued,
//!   unchanged, and in the current turn (after the last user message with
//!   text) the first `functionCall` of each model step carries its
//!   signature. The fake signs every call it makes, as Gemini 3 does.
//! - Function declarations use only the fields of Gemini's `Schema`;
//!   `toolConfig` only with function declarations.

use serde_json::{Value, json};

use crate::{Issued, Rejection, Reply, View, sse};

/// The fields of Gemini's `Schema` object.
const SCHEMA_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// The path a streamed request for `model` is posted to, with its query.
pub fn stream_path(model: &str) -> String {
    format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
}

/// Gemini's error body: a `google.rpc.Status` with its HTTP code.
pub(crate) fn error(status: u16, name: &str, message: &str) -> Rejection {
    Rejection {
        status,
        body: json!({"error": {"code": status, "message": message, "status": name}}),
        error_type: None,
    }
}

fn reject(message: impl Into<String>) -> Rejection {
    error(400, "INVALID_ARGUMENT", &message.into())
}

/// Checks the request's key header: Gemini refuses callers without one.
pub fn check_key(key: Option<&str>) -> Result<(), Rejection> {
    if key.is_some_and(|k| !k.is_empty()) {
        return Ok(());
    }
    Err(error(
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    ))
}

/// Checks a request body against the rules; its [`View`] when it keeps them.
pub fn check(req: &Value, issued: &Issued) -> Result<View, Rejection> {
    let contents = match &req["contents"] {
        Value::Array(c) if !c.is_empty() => c,
        _ => {
            return Err(reject(
                "* GenerateContentRequest.contents: contents is not specified\n",
            ));
        }
    };
    let mut view = tools(req)?;
    // Where the current turn starts: the last user content with text.
    let turn_start = contents
        .iter()
        .rposition(|c| {
            role_of(c) == "user"
                && c["parts"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_none()))
        })
        .unwrap_or(0);
    // The calls of the previous content, when it was a model turn calling tools.
    let mut open = 0usize;
    for (i, c) in contents.iter().enumerate() {
        let role = role_of(c);
        if role != "user" && role != "model" {
            return Err(reject(format!(
                "Please use a valid role: user, model. (contents[{i}].role: `{role}`)"
            )));
        }
        let parts = match &c["parts"] {
            Value::Array(p) if !p.is_empty() => p,
            _ => {
                return Err(reject(format!(
                    "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n"
                )));
            }
        };
        let mut calls = 0usize;
        let mut responses = 0usize;
        for (j, p) in parts.iter().enumerate() {
            if let Some(sig) = p.get("thoughtSignature") {
                let known = sig.as_str().is_some_and(|s| {
                    issued
                        .lock()
                        .is_ok_and(|m| m.contains_key(&format!("gemini-sig/{s}")))
                });
                if !known {
                    return Err(reject(format!(
                        "Corrupted thought signature. (contents[{i}].parts[{j}])"
                    )));
                }
            }
            if let Some(call) = p.get("functionCall") {
                if role != "model" {
                    return Err(reject(format!(
                        "contents[{i}].parts[{j}]: a function call must come from the model."
                    )));
                }
                let name = call["name"].as_str().unwrap_or_default();
                if calls == 0 && i > turn_start && p.get("thoughtSignature").is_none() {
                    return Err(reject(format!(
                        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                        i + 1
                    )));
                }
                view.calls.push(name.to_owned());
                calls += 1;
            }
            if let Some(r) = p.get("functionResponse") {
                if !r["response"].is_object() {
                    return Err(reject(format!(
                        "Invalid value at 'contents[{i}].parts[{j}].function_response.response' (type.googleapis.com/google.protobuf.Struct), {}",
                        r["response"]
                    )));
                }
                responses += 1;
            }
        }
        if responses > 0 && open == 0 {
            return Err(reject(
                "Please ensure that function response turn comes immediately after a function call turn.",
            ));
        }
        if open > 0 && responses != open {
            return Err(reject(
                "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
            ));
        }
        view.results += responses;
        open = calls;
    }
    Ok(view)
}

/// A content's role: the user's when it names none.
fn role_of(content: &Value) -> &str {
    match &content["role"] {
        Value::Null => "user",
        role => role.as_str().unwrap_or_default(),
    }
}

/// The function declarations (their schemas checked) and calling mode.
fn tools(req: &Value) -> Result<View, Rejection> {
    let mut names = Vec::new();
    for (t, tool) in req["tools"].as_array().into_iter().flatten().enumerate() {
        let declarations = tool["functionDeclarations"].as_array();
        for (d, decl) in declarations.into_iter().flatten().enumerate() {
            if let Some(params) = decl.get("parameters") {
                let at = format!("tools[{t}].function_declarations[{d}].parameters");
                schema(params, &at)?;
            }
            names.push(decl["name"].as_str().unwrap_or_default().to_owned());
        }
    }
    let mode = &req["toolConfig"]["functionCallingConfig"]["mode"];
    if !req["toolConfig"].is_null() && names.is_empty() {
        return Err(reject(
            "Function calling config is set without function_declarations.",
        ));
    }
    Ok(View {
        tools: names,
        forbidden: mode == "NONE",
        ..View::default()
    })
}

/// A `Schema` object: only Gemini's fields, its sub-schemas likewise.
fn schema(s: &Value, at: &str) -> Result<(), Rejection> {
    let Some(obj) = s.as_object() else {
        return Err(reject(format!(
            "Invalid JSON payload received. Invalid value at '{at}': a schema must be an object."
        )));
    };
    for (key, value) in obj {
        if !SCHEMA_FIELDS.contains(&key.as_str()) {
            return Err(reject(format!(
                "Invalid JSON payload received. Unknown name \"{key}\" at '{at}': Cannot find field."
            )));
        }
        match key.as_str() {
            "properties" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    schema(sub, &format!("{at}.properties[{name}].value"))?;
                }
            }
            "items" => schema(value, &format!("{at}.items"))?,
            "anyOf" => {
                for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                    schema(sub, &format!("{at}.any_of[{i}]"))?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The stream answering request `n` with `reply`: a tool call (signed, and
/// after a thought summary when `thinking`) or text.
pub fn stream(reply: &Reply, thinking: bool, n: usize, issued: &Issued) -> String {
    let id = format!("resp-{n}");
    let chunk = |parts: Value, finish: Option<&str>, usage: Value| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
        }
        json!({"candidates": [candidate], "usageMetadata": usage,
            "modelVersion": "gemini-fake", "responseId": id})
    };
    let sign = |what: &str| {
        let sig = format!("c2ln-{what}-{n}");
        if let Ok(mut m) = issued.lock() {
            m.insert(
                format!("gemini-sig/{sig}"),
                (what.to_owned(), String::new()),
            );
        }
        sig
    };
    let start = json!({"promptTokenCount": 40, "totalTokenCount": 40});
    let end = json!({"promptTokenCount": 40, "candidatesTokenCount": 9,
        "thoughtsTokenCount": if thinking { 12 } else { 0 }, "totalTokenCount": 61});
    let mut ev: Vec<(Option<&str>, Value)> = Vec::new();
    match reply {
        Reply::Call { name, args } => {
            if thinking {
                let thought =
                    json!([{"text": format!("I should call {name} (turn {n})."), "thought": true}]);
                ev.push((None, chunk(thought, None, start.clone())));
            }
            let part = json!([{"functionCall": {"name": name, "args": args},
                "thoughtSignature": sign("call")}]);
            ev.push((None, chunk(part, Some("STOP"), end)));
        }
        Reply::Text(text) => {
            let mid = (0..=text.len() / 2)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            let (a, b) = text.split_at(mid);
            ev.push((None, chunk(json!([{"text": a}]), None, start)));
            let last = json!([{"text": b, "thoughtSignature": sign("text")}]);
            ev.push((None, chunk(last, Some("STOP"), end)));
        }
    }
    sse::frame(&ev)
}
