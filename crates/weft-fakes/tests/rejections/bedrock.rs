//! The Bedrock fake refuses what the Bedrock runtime refuses: requests not
//! signed with SigV4 by the known key, and Converse requests breaking its
//! rules, each with Bedrock's status, `x-amzn-ErrorType` and message.

use std::time::SystemTime;

use aws_smithy_eventstream::frame::read_message_from;
use serde_json::{Value, json};
use weft_fakes::bedrock::sigv4::{SECRET_ACCESS_KEY, SESSION_TOKEN, sign_request};
use weft_fakes::{Api, Behaviour, Fake, spawn};

/// The path of a streamed request for a model id with a version.
const STREAM: &str = "/model/anthropic.claude-fake-v1%3A0/converse-stream";

/// Posts `body` to `path` of `fake`, signed with `secret` (and `token`):
/// the status, the error type header and the body.
async fn post_signed(
    fake: &Fake,
    path: &str,
    body: &Value,
    secret: &str,
    token: Option<&str>,
) -> (u16, String, Vec<u8>) {
    let url = format!("{}{path}", fake.url);
    let bytes = serde_json::to_vec(body).unwrap();
    let plain = [("content-type", "application/json")];
    let signed = sign_request(&url, &plain, &bytes, SystemTime::now(), secret, token);
    let mut req = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .body(bytes);
    for (k, v) in signed {
        req = req.header(k, v);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let kind = res
        .headers()
        .get("x-amzn-errortype")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, kind, res.bytes().await.unwrap().to_vec())
}

async fn post(body: &Value) -> (u16, String, Vec<u8>) {
    let fake = spawn(Api::Bedrock, Behaviour::default()).await.unwrap();
    post_signed(&fake, STREAM, body, SECRET_ACCESS_KEY, None).await
}

fn refused(got: (u16, String, Vec<u8>), status: u16, kind: &str, says: &str) {
    let (got_status, got_kind, body) = got;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(got_status, status, "{text}");
    assert!(got_kind.starts_with(&format!("{kind}:")), "{got_kind}");
    let body: Value = serde_json::from_slice(&body).unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(says), "{message:?} does not say {says:?}");
}

async fn rejected(body: Value, says: &str) {
    refused(post(&body).await, 400, "ValidationException", says);
}

/// The event types and payloads of an event stream answer.
fn events(mut bytes: &[u8]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let total = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        let m = read_message_from(&bytes[..total]).unwrap();
        let kind = m
            .headers()
            .iter()
            .find(|h| h.name().as_str() == ":event-type")
            .map(|h| h.value().as_string().unwrap().as_str().to_owned())
            .unwrap();
        out.push((kind, serde_json::from_slice(m.payload()).unwrap()));
        bytes = &bytes[total..];
    }
    out
}

fn tools() -> Value {
    json!({"tools": [{"toolSpec": {"name": "calc__add", "inputSchema": {"json": {"type": "object"}}}}]})
}

fn exchange(call: Value) -> Value {
    json!([
        {"role": "user", "content": [{"text": "2+3?"}]},
        {"role": "assistant", "content": call},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "5"}]}}]}
    ])
}

fn call() -> Value {
    json!([{"toolUse": {"toolUseId": "tooluse_1", "name": "calc__add", "input": {}}}])
}

#[tokio::test]
async fn bedrock_checks_the_sigv4_signature_of_every_request() {
    let fake = spawn(Api::Bedrock, Behaviour::default()).await.unwrap();
    let hi = json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}]});
    let wrong = post_signed(&fake, STREAM, &hi, "not-the-secret", None).await;
    refused(
        wrong,
        403,
        "InvalidSignatureException",
        "The request signature we calculated does not match the signature you provided.",
    );
    let token = post_signed(&fake, STREAM, &hi, SECRET_ACCESS_KEY, Some("other")).await;
    refused(
        token,
        403,
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
    );
    let unsigned = reqwest::Client::new()
        .post(format!("{}{STREAM}", fake.url))
        .json(&hi)
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 403);
    assert!(
        unsigned
            .text()
            .await
            .unwrap()
            .contains("Missing Authentication Token")
    );
    // Signed for one body, sent with another.
    let url = format!("{}{STREAM}", fake.url);
    let plain = [("content-type", "application/json")];
    let signed = sign_request(
        &url,
        &plain,
        b"{}",
        SystemTime::now(),
        SECRET_ACCESS_KEY,
        None,
    );
    let mut req = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .json(&hi);
    for (k, v) in signed {
        req = req.header(k, v);
    }
    assert_eq!(req.send().await.unwrap().status(), 403);
    // Signed right, with or without a session token: answered.
    let (status, _, body) =
        post_signed(&fake, STREAM, &hi, SECRET_ACCESS_KEY, Some(SESSION_TOKEN)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let kinds: Vec<String> = events(&body).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        [
            "messageStart",
            "contentBlockDelta",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata"
        ]
    );
    assert_eq!(fake.stats.rejections().len(), 4);
}

#[tokio::test]
async fn bedrock_wants_a_tool_config_beside_tool_blocks_and_every_call_answered() {
    rejected(
        json!({"messages": exchange(call())}),
        "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
    )
    .await;
    let mut missing = json!({"messages": exchange(call()), "toolConfig": tools()});
    missing["messages"][2]["content"] = json!([{"text": "well?"}]);
    rejected(
        missing,
        "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_1",
    )
    .await;
    let (status, _, body) =
        post(&json!({"messages": exchange(call()), "toolConfig": tools()})).await;
    assert_eq!(status, 200);
    let text: String = events(&body)
        .iter()
        .filter_map(|(_, p)| p["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, weft_fakes::ANSWER);
}

#[tokio::test]
async fn bedrock_refuses_empty_content_bad_role_order_and_unknown_fields() {
    rejected(
        json!({"messages": [{"role": "user", "content": []}]}),
        "The content field in the Message object at messages.0 is empty.",
    )
    .await;
    rejected(
        json!({"messages": [{"role": "user", "content": [{"text": "  "}]}]}),
        "is blank",
    )
    .await;
    rejected(
        json!({"messages": [{"role": "assistant", "content": [{"text": "hi"}]}]}),
        "A conversation must start with a user message.",
    )
    .await;
    let twice = json!({"messages": [{"role": "user", "content": [{"text": "a"}]}, {"role": "user", "content": [{"text": "b"}]}]});
    rejected(
        twice,
        "A conversation must alternate between user and assistant roles.",
    )
    .await;
    let extra =
        json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}], "stream": true});
    rejected(extra, "extraneous key [stream] is not permitted").await;
    let block = json!({"messages": [{"role": "user", "content": [{"text": "hi", "cache": 1}]}]});
    rejected(block, "extraneous key [cache] is not permitted").await;
}

#[tokio::test]
async fn bedrock_wants_reasoning_back_with_its_signature_unchanged() {
    let thinking = Behaviour {
        thinking: true,
        ..Behaviour::default()
    };
    let fake = spawn(Api::Bedrock, thinking).await.unwrap();
    let question = json!([{"role": "user", "content": [{"text": "2+3?"}]}]);
    let body = json!({"messages": question, "toolConfig": tools(),
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}}});
    let (_, _, answer) = post_signed(&fake, STREAM, &body, SECRET_ACCESS_KEY, None).await;
    let ev = events(&answer);
    let text = ev[1].1["delta"]["reasoningContent"]["text"].clone();
    let signature = ev[2].1["delta"]["reasoningContent"]["signature"].clone();
    let id = ev[4].1["start"]["toolUse"]["toolUseId"].clone();
    let with = |reasoning: Value| {
        let mut b = body.clone();
        b["messages"] = json!([question[0], {"role": "assistant", "content": [reasoning,
            {"toolUse": {"toolUseId": id, "name": "calc__add", "input": {"a": 2, "b": 3}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": id, "content": [{"text": "5"}]}}]}]);
        b
    };
    let kept = with(
        json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}),
    );
    let (status, _, _) = post_signed(&fake, STREAM, &kept, SECRET_ACCESS_KEY, None).await;
    assert_eq!(status, 200);
    let unsigned = with(json!({"reasoningContent": {"reasoningText": {"text": text}}}));
    let got = post_signed(&fake, STREAM, &unsigned, SECRET_ACCESS_KEY, None).await;
    refused(
        got,
        400,
        "ValidationException",
        "messages.1.content.0.thinking.signature: Field required",
    );
    let forged = with(
        json!({"reasoningContent": {"reasoningText": {"text": "changed", "signature": signature}}}),
    );
    let got = post_signed(&fake, STREAM, &forged, SECRET_ACCESS_KEY, None).await;
    refused(
        got,
        400,
        "ValidationException",
        "Invalid `signature` in `thinking` block",
    );
    let mut dropped = with(json!({"text": "thinking..."}));
    dropped["messages"][1]["content"] = json!([dropped["messages"][1]["content"][1]]);
    let got = post_signed(&fake, STREAM, &dropped, SECRET_ACCESS_KEY, None).await;
    refused(
        got,
        400,
        "ValidationException",
        "a final `assistant` message must start with a thinking block",
    );
}

#[tokio::test]
async fn bedrock_answers_converse_in_json() {
    let fake = spawn(Api::Bedrock, Behaviour::default()).await.unwrap();
    let body = json!({"messages": [{"role": "user", "content": [{"text": "2+3?"}]}], "toolConfig": tools()});
    let path = "/model/anthropic.claude-fake-v1%3A0/converse";
    let (status, _, answer) = post_signed(&fake, path, &body, SECRET_ACCESS_KEY, None).await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["stopReason"], "tool_use");
    assert_eq!(
        answer["output"]["message"]["content"][0]["toolUse"]["name"],
        "calc__add"
    );
    assert_eq!(answer["usage"]["inputTokens"], 40);
}
