//! The gateway over HTTP against the real Redis: validation with field
//! issues, unknown names, the queue bound, oversized payloads, invalid
//! schemas, health after missed pings, and stale pongs.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use weft_registry::dto::{RegisterRequest, ToolsetView};
use weft_registry::{
    ExecutorConfig, GatewayClient, Redis, RegistryToolSet, ToolSchema, pulse, wire,
};
use weft_tools::ToolSet;

fn registration(name: &str, max_queue: Option<u64>) -> RegisterRequest {
    RegisterRequest {
        name: name.to_owned(),
        description: "adds".into(),
        version: Some("1.0.0".into()),
        tags: vec!["math".into()],
        tools: vec![ToolSchema {
            name: format!("{name}.add"),
            description: "Adds".into(),
            tags: vec![],
            payload_schema: json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }),
            result_schema: Some(json!({"type": "integer"})),
            sidecar_schema: None,
            idempotent: false,
        }],
        max_queue,
    }
}

async fn post(url: &str, body: Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn call_body(payload: Value) -> Value {
    json!({"payload": payload, "meta": {"run_id": "r", "session_id": "s"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_validated_bounded_and_routed() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    // No pings during the test: an unread ping counts toward the queue's
    // bound like a call, which a slow run would otherwise see.
    let gw = gateway(&redis, |c| {
        c.max_payload_bytes = 2048;
        c.ping_interval = Duration::from_secs(60);
    })
    .await;
    let name = unique("gw");
    let client = GatewayClient::new(&gw.url).unwrap();
    client
        .register(&registration(&name, Some(2)))
        .await
        .unwrap();
    let call_url = format!("{}/v1/toolsets/{name}/tools/add/call", gw.url);

    let (status, body) = post(&call_url, call_body(json!({"a": "x"}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "validation_error");
    let issues = body["issues"].as_array().unwrap();
    assert!(
        issues
            .iter()
            .any(|i| i["Field"] == "b" && i["Constraint"] == "missing_field"),
        "{body}"
    );
    assert!(
        issues
            .iter()
            .any(|i| i["Field"] == "a" && i["Constraint"] == "invalid_field_type"),
        "{body}"
    );

    let (status, body) = post(
        &format!("{}/v1/toolsets/nope-{name}/tools/add/call", gw.url),
        call_body(json!({})),
    )
    .await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));
    let (status, _) = post(
        &format!("{}/v1/toolsets/{name}/tools/sub/call", gw.url),
        call_body(json!({})),
    )
    .await;
    assert_eq!(status, 404);
    let (status, body) = post(
        &call_url,
        call_body(json!({"a": 1, "b": 2, "pad": "x".repeat(4096)})),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (413, Some("payload_too_large"))
    );

    // No provider reads the queue: two calls fit, the third is refused.
    for _ in 0..2 {
        let (status, body) = post(&call_url, call_body(json!({"a": 1, "b": 2}))).await;
        assert_eq!(status, 200, "{body}");
        assert!(body["tool_use_id"].as_str().is_some_and(|s| !s.is_empty()));
    }
    let (status, body) = post(&call_url, call_body(json!({"a": 1, "b": 2}))).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("queue_full")),
        "{body}"
    );
    // The executor honours the same bound, straight through Redis.
    let mut ec = ExecutorConfig::new(&gw.url, &name);
    ec.namespace = gw.ns.clone();
    let ex = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    let (req, _) = request(
        &format!("{name}.add"),
        json!({"a": 1, "b": 2}),
        &unique("run"),
        "c",
    );
    let err = ex.call_tool(req).await.unwrap_err();
    assert_eq!(err.error.code, "queue_full");

    // Discovery.
    let list: Value = reqwest::get(format!("{}/v1/toolsets?tag=math", gw.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        list["toolsets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == name.as_str())
    );
    let found: Value = reqwest::get(format!("{}/v1/search?q={name}", gw.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(found["toolsets"][0]["tool_count"], 1);
    let spec: Value = reqwest::get(format!("{}/openapi.json", gw.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(spec["paths"]["/v1/toolsets/{name}/tools/{tool}/call"].is_object());

    // A bad schema is refused at registration.
    let mut bad = registration(&unique("gw"), None);
    bad.tools[0].payload_schema = json!({"type": 7});
    let err = client.register(&bad).await.unwrap_err().to_string();
    assert!(
        err.contains("validation_error") && err.contains("invalid payload schema"),
        "{err}"
    );

    client.unregister(&name).await.unwrap();
    assert!(client.unregister(&name).await.is_err());
    let key = pulse::key(&wire::toolset_stream(&name));
    let _: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
}

async fn view(gw: &TestGateway, name: &str) -> ToolsetView {
    GatewayClient::new(&gw.url)
        .unwrap()
        .toolset(name)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missed_pongs_make_a_toolset_unhealthy_and_stale_pongs_are_ignored() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |c| {
        c.ping_interval = Duration::from_millis(100);
        c.missed_pongs = 2;
    })
    .await;
    let name = unique("health");
    let client = GatewayClient::new(&gw.url).unwrap();
    let old = client.register(&registration(&name, None)).await.unwrap();
    let new = client.register(&registration(&name, None)).await.unwrap();
    assert_ne!(old.registration_token, new.registration_token);
    assert!(
        view(&gw, &name).await.healthy,
        "registration counts as a pong"
    );

    // Nobody answers the pings.
    assert!(eventually(200, || async { !view(&gw, &name).await.healthy }).await);
    let mut ec = ExecutorConfig::new(&gw.url, &name);
    ec.namespace = gw.ns.clone();
    let ex = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    let (req, _) = request(
        &format!("{name}.add"),
        json!({"a": 1, "b": 2}),
        &unique("run"),
        "c",
    );
    assert_eq!(
        ex.call_tool(req).await.unwrap_err().error.code,
        "service_unavailable"
    );
    let (status, body) = post(
        &format!("{}/v1/toolsets/{name}/tools/add/call", gw.url),
        call_body(json!({"a": 1, "b": 2})),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("service_unavailable"))
    );

    // A pong for the older registration changes nothing.
    let pong_url = format!("{}/v1/toolsets/{name}/pong", gw.url);
    let (status, body) = post(
        &pong_url,
        json!({"ping_id": format!("{}/x", old.registration_token)}),
    )
    .await;
    assert_eq!((status, body["accepted"].as_bool()), (200, Some(false)));
    assert!(!view(&gw, &name).await.healthy);

    // Answering a real ping (read from the request stream) makes it healthy.
    let key = pulse::key(&wire::toolset_stream(&name));
    let entries: redis::Value = redis::cmd("XREVRANGE")
        .arg(&key)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    let entry = pulse::parse_entries(entries).unwrap().pop().unwrap();
    let pulse::Body::Event {
        name: event,
        payload,
    } = entry.body
    else {
        panic!("garbage ping")
    };
    assert_eq!(event, "ping");
    let ping: wire::ToolCallMessage = wire::decode(&payload).unwrap();
    assert!(
        ping.ping_id
            .starts_with(&format!("{}/", new.registration_token))
    );
    let (_, body) = post(&pong_url, json!({"ping_id": ping.ping_id})).await;
    assert_eq!(body["accepted"], true);
    assert!(view(&gw, &name).await.healthy);
    let (status, _) = post(
        &format!("{}/v1/toolsets/nope-{name}/pong", gw.url),
        json!({"ping_id": "a/b"}),
    )
    .await;
    assert_eq!(status, 404);

    client.unregister(&name).await.unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
}
