//! The Gemini fake refuses what the Generative Language API refuses.

use serde_json::{Value, json};
use weft_fakes::gemini::stream_path;
use weft_fakes::{Api, Behaviour, spawn};

/// Posts `body` (with `key` as `x-goog-api-key`) to `fake`: status and body.
async fn post_to(fake: &weft_fakes::Fake, key: Option<&str>, body: &Value) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(format!("{}{}", fake.url, stream_path("gemini-fake")))
        .json(body);
    if let Some(k) = key {
        req = req.header("x-goog-api-key", k);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

async fn post(body: Value) -> (u16, String) {
    let fake = spawn(Api::Gemini, Behaviour::default()).await.unwrap();
    post_to(&fake, Some("g-key"), &body).await
}

fn refused(status: u16, text: &str, want_status: u16, says: &str) {
    assert_eq!(status, want_status, "{text}");
    let body: Value = serde_json::from_str(text).unwrap();
    assert_eq!(body["error"]["code"], want_status, "{text}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message:?} does not say {says:?}");
}

async fn rejected(body: Value, says: &str) {
    let (status, text) = post(body).await;
    refused(status, &text, 400, says);
    assert!(text.contains("INVALID_ARGUMENT"), "{text}");
}

fn tools() -> Value {
    json!([{"functionDeclarations": [{"name": "calc__add", "description": "adds",
        "parameters": {"type": "OBJECT", "properties": {"a": {"type": "NUMBER"}}}}]}])
}

fn request(contents: Value) -> Value {
    json!({"contents": contents, "tools": tools()})
}

/// The data lines of an SSE answer, parsed.
fn events(stream: &str) -> Vec<Value> {
    stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The answer text an SSE answer spells.
fn text_of(stream: &str) -> String {
    events(stream)
        .iter()
        .flat_map(|e| {
            e["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn gemini_needs_a_key_and_contents_with_known_roles() {
    let fake = spawn(Api::Gemini, Behaviour::default()).await.unwrap();
    let hi = request(json!([{"role": "user", "parts": [{"text": "hi"}]}]));
    let (status, text) = post_to(&fake, None, &hi).await;
    refused(status, &text, 403, "unregistered callers");
    assert!(text.contains("PERMISSION_DENIED"), "{text}");
    rejected(json!({"contents": []}), "contents is not specified").await;
    rejected(json!({}), "contents is not specified").await;
    rejected(
        request(json!([{"role": "assistant", "parts": [{"text": "hi"}]}])),
        "Please use a valid role: user, model.",
    )
    .await;
    rejected(
        request(json!([{"role": "user", "parts": []}])),
        "contents.parts must not be empty",
    )
    .await;
    let (status, text) = post_to(&fake, Some("g-key"), &hi).await;
    assert_eq!(status, 200, "{text}");
    let call = &events(&text)[0]["candidates"][0]["content"]["parts"][0];
    assert_eq!(call["functionCall"]["name"], "calc__add", "{text}");
    assert!(call["thoughtSignature"].is_string(), "{text}");
}

#[tokio::test]
async fn gemini_wants_its_signature_back_on_the_current_turns_calls() {
    let fake = spawn(Api::Gemini, Behaviour::default()).await.unwrap();
    let question = json!({"role": "user", "parts": [{"text": "2+3?"}]});
    let (_, text) = post_to(&fake, Some("g-key"), &request(json!([question]))).await;
    let call = events(&text)[0]["candidates"][0]["content"]["parts"][0].clone();
    let result = json!({"role": "user", "parts": [{"functionResponse": {"name": "calc__add", "response": {"result": 5}}}]});
    // Sent back as received: accepted, and the model answers.
    let kept = request(json!([question, {"role": "model", "parts": [call]}, result]));
    let (status, text) = post_to(&fake, Some("g-key"), &kept).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(text_of(&text), weft_fakes::ANSWER, "{text}");
    // The signature dropped.
    let mut bare = call.clone();
    bare.as_object_mut().unwrap().remove("thoughtSignature");
    let dropped = request(json!([question, {"role": "model", "parts": [bare]}, result]));
    let (status, text) = post_to(&fake, Some("g-key"), &dropped).await;
    refused(
        status,
        &text,
        400,
        "Function call is missing a thought_signature",
    );
    // The signature changed.
    let mut forged = call.clone();
    forged["thoughtSignature"] = json!("c2ln-forged");
    let changed = request(json!([question, {"role": "model", "parts": [forged]}, result]));
    let (status, text) = post_to(&fake, Some("g-key"), &changed).await;
    refused(status, &text, 400, "Corrupted thought signature.");
    // An earlier turn's calls are not checked for their signatures.
    let later = request(json!([question, {"role": "model", "parts": [bare]}, result,
        {"role": "model", "parts": [{"text": "5"}]}, {"role": "user", "parts": [{"text": "again?"}]}]));
    let (status, text) = post_to(&fake, Some("g-key"), &later).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn gemini_function_responses_are_objects_answering_every_call_of_the_turn_before() {
    let question = json!({"role": "user", "parts": [{"text": "2+3?"}]});
    // A made-up call without a signature opens no current-turn check when
    // the responses are wrong first; keep the call in an earlier turn.
    let calls = json!({"role": "model", "parts": [
        {"functionCall": {"name": "calc__add", "args": {"a": 2}}},
        {"functionCall": {"name": "calc__add", "args": {"a": 3}}}]});
    let one = json!({"functionResponse": {"name": "calc__add", "response": {"result": 5}}});
    let scalar = json!({"functionResponse": {"name": "calc__add", "response": 5}});
    let again = json!({"role": "user", "parts": [{"text": "again?"}]});
    rejected(
        request(json!([question, calls, {"role": "user", "parts": [one]}, again])),
        "the number of function response parts is equal to the number of function call parts",
    )
    .await;
    rejected(
        request(json!([question, calls, {"role": "user", "parts": [one, scalar]}, again])),
        "function_response.response",
    )
    .await;
    rejected(
        request(json!([question, {"role": "user", "parts": [one]}])),
        "function response turn comes immediately after a function call turn",
    )
    .await;
    let (status, text) = post(request(
        json!([question, calls, {"role": "user", "parts": [one, one]}, again]),
    ))
    .await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn gemini_declarations_use_only_the_schema_subset() {
    let question = json!([{"role": "user", "parts": [{"text": "2+3?"}]}]);
    for (key, value) in [
        ("additionalProperties", json!(false)),
        ("$ref", json!("#/$defs/A")),
        ("oneOf", json!([{"type": "STRING"}])),
    ] {
        let mut params = json!({"type": "OBJECT", "properties": {"a": {"type": "NUMBER"}}});
        params["properties"]["a"][key] = value;
        let body = json!({"contents": question,
            "tools": [{"functionDeclarations": [{"name": "calc__add", "parameters": params}]}]});
        rejected(body, &format!("Unknown name \"{key}\"")).await;
    }
    rejected(
        json!({"contents": question, "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}),
        "Function calling config is set without function_declarations.",
    )
    .await;
    // Forbidden tools: the model answers in text.
    let mut none = request(question);
    none["toolConfig"] = json!({"functionCallingConfig": {"mode": "NONE"}});
    let (status, text) = post(none).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(text_of(&text), weft_fakes::FINAL, "{text}");
}
