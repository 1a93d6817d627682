//! The Vertex AI fake refuses what Vertex refuses: no or another access
//! token, another project or location, a content without a role, and
//! Gemini's rules, a streamed request's errors inside a JSON array.

use serde_json::{Value, json};
use weft_fakes::vertex::{ACCESS_TOKEN, LOCATION, PROJECT, stream_path};
use weft_fakes::{Api, Behaviour, spawn};

/// Posts `body` to `path` on `fake` with `token` as a bearer token: status and body.
async fn post_to(
    fake: &weft_fakes::Fake,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("{}{path}", fake.url))
        .json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The Google error object of a refusal, and whether it came inside an array.
fn error_of(body: &Value) -> (&Value, bool) {
    match body {
        Value::Array(all) => (&all[0]["error"], true),
        other => (&other["error"], false),
    }
}

fn refused(got: (u16, Value), status: u16, name: &str, says: &str, in_array: bool) {
    let (code, body) = got;
    assert_eq!(code, status, "{body}");
    let (error, array) = error_of(&body);
    assert_eq!(array, in_array, "{body}");
    assert_eq!(error["code"], status, "{body}");
    assert_eq!(error["status"], name, "{body}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(says), "{message:?} does not say {says:?}");
}

fn hi() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "calc__add", "description": "adds",
            "parameters": {"type": "OBJECT", "properties": {"a": {"type": "NUMBER"}}}}]}]})
}

#[tokio::test]
async fn vertex_needs_its_access_token_as_a_bearer_token() {
    let fake = spawn(Api::Vertex, Behaviour::default()).await.unwrap();
    let path = stream_path("gemini-fake");
    let missing = post_to(&fake, &path, None, &hi()).await;
    refused(
        missing,
        401,
        "UNAUTHENTICATED",
        "missing required authentication credential",
        false,
    );
    let other = post_to(&fake, &path, Some("ya29.someone-else"), &hi()).await;
    refused(
        other,
        401,
        "UNAUTHENTICATED",
        "invalid authentication credentials",
        false,
    );
    let (status, body) = post_to(&fake, &path, Some(ACCESS_TOKEN), &hi()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(fake.stats.rejections().len(), 2);
}

#[tokio::test]
async fn vertex_serves_its_project_and_location_only() {
    let fake = spawn(Api::Vertex, Behaviour::default()).await.unwrap();
    let at = |project: &str, location: &str| {
        format!(
            "/v1/projects/{project}/locations/{location}/publishers/google/models/gemini-fake:streamGenerateContent?alt=sse"
        )
    };
    let other = post_to(
        &fake,
        &at("someone-else", LOCATION),
        Some(ACCESS_TOKEN),
        &hi(),
    )
    .await;
    refused(
        other,
        403,
        "PERMISSION_DENIED",
        "Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/someone-else/",
        false,
    );
    let far = post_to(
        &fake,
        &at(PROJECT, "europe-west4"),
        Some(ACCESS_TOKEN),
        &hi(),
    )
    .await;
    refused(
        far,
        404,
        "NOT_FOUND",
        "Publisher Model `projects/weft-fake-project/locations/europe-west4/publishers/google/models/gemini-fake` was not found",
        false,
    );
    let (status, body) = post_to(&fake, &at(PROJECT, LOCATION), Some(ACCESS_TOKEN), &hi()).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn vertex_requires_a_role_on_every_content_where_gemini_takes_the_users() {
    let mut roleless = hi();
    roleless["contents"][0]
        .as_object_mut()
        .unwrap()
        .remove("role");
    let vertex = spawn(Api::Vertex, Behaviour::default()).await.unwrap();
    let path = stream_path("gemini-fake");
    let got = post_to(&vertex, &path, Some(ACCESS_TOKEN), &roleless).await;
    refused(
        got,
        400,
        "INVALID_ARGUMENT",
        "Please use a valid role: user, model.",
        true,
    );
    let gemini = spawn(Api::Gemini, Behaviour::default()).await.unwrap();
    let res = reqwest::Client::new()
        .post(format!(
            "{}{}",
            gemini.url,
            weft_fakes::gemini::stream_path("gemini-fake")
        ))
        .header("x-goog-api-key", "g-key")
        .json(&roleless)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
}

#[tokio::test]
async fn vertex_keeps_gemini_s_rules_and_answers_their_breach_in_an_array() {
    let fake = spawn(Api::Vertex, Behaviour::default()).await.unwrap();
    let path = stream_path("gemini-fake");
    let empty = post_to(&fake, &path, Some(ACCESS_TOKEN), &json!({"contents": []})).await;
    refused(
        empty,
        400,
        "INVALID_ARGUMENT",
        "contents is not specified",
        true,
    );
    let mut unknown = hi();
    unknown["tools"][0]["functionDeclarations"][0]["parameters"]["$ref"] = json!("#/$defs/A");
    let got = post_to(&fake, &path, Some(ACCESS_TOKEN), &unknown).await;
    refused(got, 400, "INVALID_ARGUMENT", "Unknown name \"$ref\"", true);
    // A made-up signature is refused as Gemini refuses it.
    let forged = json!({"contents": [
        {"role": "user", "parts": [{"text": "2+3?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "calc__add", "args": {}},
            "thoughtSignature": "c2ln-forged"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "calc__add", "response": {"result": 5}}}]}],
        "tools": hi()["tools"]});
    let got = post_to(&fake, &path, Some(ACCESS_TOKEN), &forged).await;
    refused(
        got,
        400,
        "INVALID_ARGUMENT",
        "Corrupted thought signature.",
        true,
    );
    assert_eq!(fake.stats.rejections().len(), 3);
}
