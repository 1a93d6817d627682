//! The OpenAI Responses fake: the API's request rules and its stream.
//!
//! Rules (error messages as the API words them, status 400), for requests
//! with `store: false`, where the whole conversation travels each time:
//! - `model` and `input` are required; `tool_choice` only with `tools`.
//! - Every `function_call` has a `function_call_output` with its `call_id`,
//!   and every output answers an earlier call.
//! - A reasoning item is one the API issued, its encrypted content
//!   unchanged; a function call that followed a reasoning item is sent
//!   back with that item before it.

use serde_json::{Value, json};

use crate::{Api, Issued, Rejection, Reply, View, invalid, openai_tools, sse};

fn reject(param: &str, message: String) -> Rejection {
    invalid(Api::OpenAiResponses, param, &message)
}

/// Checks a request body against the rules; its [`View`] when it keeps them.
pub fn check(req: &Value, issued: &Issued) -> Result<View, Rejection> {
    if !req["model"].is_string() {
        return Err(reject(
            "model",
            "Missing required parameter: 'model'.".into(),
        ));
    }
    let items: Vec<Value> = match &req["input"] {
        Value::String(s) => vec![json!({"role": "user", "content": s})],
        Value::Array(a) => a.clone(),
        _ => {
            return Err(reject(
                "input",
                "Missing required parameter: 'input'.".into(),
            ));
        }
    };
    let mut view = openai_tools(Api::OpenAiResponses, req, |t| &t["name"])?;
    let lookup = |key: &str| issued.lock().ok().and_then(|m| m.get(key).cloned());
    let mut seen_reasoning: Vec<String> = Vec::new();
    let mut calls: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    for item in &items {
        match item["type"].as_str().unwrap_or("message") {
            "reasoning" => {
                let id = item["id"].as_str().unwrap_or_default();
                let sent = item["encrypted_content"].as_str().unwrap_or_default();
                match lookup(&format!("reasoning/{id}")) {
                    Some((_, enc)) if enc == sent => seen_reasoning.push(id.to_owned()),
                    Some(_) => {
                        return Err(reject(
                            "input",
                            format!("The encrypted content for item {id} could not be verified."),
                        ));
                    }
                    None => {
                        return Err(reject(
                            "input",
                            format!(
                                "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                            ),
                        ));
                    }
                }
            }
            "function_call" => {
                let call_id = item["call_id"].as_str().unwrap_or_default().to_owned();
                if let Some((rs, _)) = lookup(&format!("requires/{call_id}"))
                    && !seen_reasoning.contains(&rs)
                {
                    let id = item["id"].as_str().unwrap_or(call_id.as_str());
                    return Err(reject(
                        "input",
                        format!(
                            "Item '{id}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
                        ),
                    ));
                }
                view.calls
                    .push(item["name"].as_str().unwrap_or_default().to_owned());
                calls.push(call_id);
            }
            "function_call_output" => {
                let call_id = item["call_id"].as_str().unwrap_or_default().to_owned();
                if !calls.contains(&call_id) {
                    return Err(reject(
                        "input",
                        format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                    ));
                }
                view.results += 1;
                answered.push(call_id);
            }
            "message" => {
                let role = item["role"].as_str().unwrap_or_default();
                if !matches!(role, "user" | "assistant" | "system" | "developer") {
                    return Err(reject(
                        "input",
                        format!(
                            "Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'."
                        ),
                    ));
                }
            }
            other => {
                return Err(reject("input", format!("Invalid value: '{other}'.")));
            }
        }
    }
    if let Some(c) = calls.iter().find(|c| !answered.contains(c)) {
        return Err(reject(
            "input",
            format!("No tool output found for function call {c}."),
        ));
    }
    Ok(view)
}

/// The stream answering request `n` with `reply`; a tool call follows an
/// encrypted reasoning item when `thinking`.
pub fn stream(reply: &Reply, thinking: bool, n: usize, issued: &Issued) -> String {
    let mut seq = 0;
    let mut ev: Vec<(Option<&str>, Value)> = Vec::new();
    let mut push = |name: &'static str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        ev.push((Some(name), data));
    };
    let id = format!("resp_{n}");
    push(
        "response.created",
        json!({"response": {"id": id, "object": "response",
        "status": "in_progress", "output": [], "usage": null}}),
    );
    let mut output = Vec::new();
    match reply {
        Reply::Call { name, args } => {
            let call_id = format!("call_{n}");
            if thinking {
                let rs = format!("rs_{n}");
                let enc = format!("gAAAA-enc-{n}");
                let summary = format!("Calling {name}.");
                if let Ok(mut m) = issued.lock() {
                    m.insert(format!("reasoning/{rs}"), (summary.clone(), enc.clone()));
                    m.insert(format!("requires/{call_id}"), (rs.clone(), String::new()));
                }
                push(
                    "response.output_item.added",
                    json!({"output_index": 0,
                    "item": {"id": rs, "type": "reasoning", "summary": []}}),
                );
                let item = json!({"id": rs, "type": "reasoning", "encrypted_content": enc,
                    "summary": [{"type": "summary_text", "text": summary}]});
                push(
                    "response.output_item.done",
                    json!({"output_index": 0, "item": item}),
                );
                output.push(item);
            }
            let index = output.len();
            let full = args.to_string();
            let fc = format!("fc_{n}");
            push(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": fc,
                "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id, "name": name}}),
            );
            let (a, b) = full.split_at(full.len() / 2);
            for part in [a, b] {
                push(
                    "response.function_call_arguments.delta",
                    json!({"item_id": fc, "output_index": index, "delta": part}),
                );
            }
            push(
                "response.function_call_arguments.done",
                json!({"item_id": fc, "output_index": index, "arguments": full}),
            );
            let item = json!({"id": fc, "type": "function_call", "status": "completed",
                "arguments": full, "call_id": call_id, "name": name});
            push(
                "response.output_item.done",
                json!({"output_index": index, "item": item}),
            );
            output.push(item);
        }
        Reply::Text(text) => {
            let msg = format!("msg_{n}");
            push(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"id": msg,
                "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
            );
            push(
                "response.content_part.added",
                json!({"item_id": msg, "output_index": 0,
                "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ""}}),
            );
            push(
                "response.output_text.delta",
                json!({"item_id": msg, "output_index": 0,
                "content_index": 0, "delta": text}),
            );
            push(
                "response.output_text.done",
                json!({"item_id": msg, "output_index": 0,
                "content_index": 0, "text": text}),
            );
            push(
                "response.content_part.done",
                json!({"item_id": msg, "output_index": 0,
                "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": text}}),
            );
            let item = json!({"id": msg, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": text}]});
            push(
                "response.output_item.done",
                json!({"output_index": 0, "item": item}),
            );
            output.push(item);
        }
    }
    push(
        "response.completed",
        json!({"response": {"id": id, "object": "response",
        "status": "completed", "output": output,
        "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}}}),
    );
    sse::frame(&ev)
}
