//! The gateway's authentication against the real Redis, over HTTP: no or a
//! bad token is refused (401) on every endpoint; callers call but never
//! register or delete; a provider registers only the toolsets of its scope
//! and never one another provider registered; an admin deletes; a gateway
//! without tokens does not start unless authentication is explicitly off.

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use common::*;
use serde_json::{Value, json};
use weft_core::tool::ToolResultBody;
use weft_registry::dto::RegisterRequest;
use weft_registry::{
    BearerToken, ExecutorConfig, Gateway, GatewayAuth, GatewayClient, GatewayConfig, Provider,
    ProviderConfig, Redis, RegistryTokens, RegistryToolSet, ToolSchema,
};
use weft_tools::ToolSet;

const CALLER: &str = "caller-secret-1";
const ALPHA: &str = "alpha-secret-2";
const BETA: &str = "beta-secret-3";
const ADMIN: &str = "admin-secret-4";

/// A gateway whose provider `alpha` may serve `own` and `shared`, `beta`
/// only `shared`.
async fn secured(redis: &Redis, own: &str, shared: &str) -> TestGateway {
    let tokens = RegistryTokens::parse(&format!(
        "caller:agents={CALLER}\nprovider:alpha={ALPHA}:{own}|{shared}\n\
         provider:beta={BETA}:{shared}\nadmin:ops={ADMIN}"
    ))
    .unwrap();
    gateway(redis, |c| c.auth = GatewayAuth::Tokens(tokens)).await
}

fn registration(name: &str, description: &str) -> RegisterRequest {
    RegisterRequest {
        name: name.to_owned(),
        description: description.to_owned(),
        version: None,
        tags: vec![],
        tools: vec![ToolSchema {
            name: format!("{name}.add"),
            description: description.to_owned(),
            tags: vec![],
            payload_schema: json!({"type": "object"}),
            result_schema: None,
            sidecar_schema: None,
            idempotent: false,
        }],
        max_queue: None,
    }
}

/// Sends `method path` with `token` as bearer (none when `None`); the
/// status, the content type and the body.
async fn send(
    gw: &TestGateway,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, String, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", gw.url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, ctype, resp.json().await.unwrap_or(Value::Null))
}

fn client(gw: &TestGateway, token: &str) -> GatewayClient {
    GatewayClient::new(&gw.url)
        .unwrap()
        .with_token(BearerToken::new(token))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_refuses_a_missing_or_unknown_token() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let (own, shared) = (unique("own"), unique("shared"));
    let gw = secured(&redis, &own, &shared).await;
    client(&gw, ALPHA)
        .register(&registration(&own, "adds"))
        .await
        .unwrap();
    let reg = serde_json::to_value(registration(&own, "INJECTED")).unwrap();
    let call = json!({"payload": {}, "meta": {"run_id": "r", "session_id": "s"}});
    let endpoints = [
        ("GET", "/v1/toolsets".to_owned(), None),
        ("POST", "/v1/toolsets".to_owned(), Some(reg)),
        ("GET", format!("/v1/toolsets/{own}"), None),
        ("DELETE", format!("/v1/toolsets/{own}"), None),
        (
            "POST",
            format!("/v1/toolsets/{own}/pong"),
            Some(json!({"ping_id": "x/1"})),
        ),
        (
            "POST",
            format!("/v1/toolsets/{own}/tools/add/call"),
            Some(call),
        ),
        ("GET", "/v1/search?q=add".to_owned(), None),
    ];
    let auth = reqwest::Client::new();
    for (method, path, body) in &endpoints {
        for token in [None, Some("wrong"), Some("caller-secret"), Some("")] {
            let (status, ctype, problem) = send(&gw, method, path, token, body.clone()).await;
            assert_eq!(status, 401, "{method} {path} with {token:?}: {problem}");
            assert_eq!(ctype, "application/problem+json", "{method} {path}");
            assert_eq!(problem["code"], "unauthorized", "{method} {path}");
            assert_eq!(problem["status"], 401);
        }
        // Another scheme is no bearer token.
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let resp = auth
            .request(m, format!("{}{path}", gw.url))
            .header("authorization", format!("Basic {CALLER}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 401, "{method} {path}");
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    }
    // Nothing was deleted or overwritten.
    let view = client(&gw, CALLER).toolset(&own).await.unwrap();
    assert_eq!(view.toolset.description, "adds");
    // Liveness stays open to probes; the API document says what needs a token.
    let (status, _, _) = send(&gw, "GET", "/healthz", None, None).await;
    assert_eq!(status, 200);
    let (status, _, spec) = send(&gw, "GET", "/openapi.json", None, None).await;
    assert_eq!(status, 200);
    assert_eq!(
        spec["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert_eq!(spec["security"], json!([{"bearer": []}]));
    assert_eq!(spec["paths"]["/healthz"]["get"]["security"], json!([{}]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_scopes_decide_who_registers_calls_and_deletes() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let (own, shared) = (unique("own"), unique("shared"));
    let gw = secured(&redis, &own, &shared).await;

    // Provider alpha serves its toolset; a caller's executor calls it.
    let provider = Provider::new(
        redis.clone(),
        &own,
        toolset(&own, Arc::new(AtomicUsize::new(0))),
        Some(client(&gw, ALPHA)),
        ProviderConfig::default(),
    )
    .await
    .unwrap();
    provider.register().await.unwrap();
    let serving = tokio::spawn(async move {
        let _ = provider.serve(std::future::pending()).await;
    });
    let mut ec = ExecutorConfig::new(&gw.url, &own);
    ec.namespace = gw.ns.clone();
    let anonymous = RegistryToolSet::connect(redis.clone(), ec.clone()).await;
    let err = anonymous
        .expect_err("an executor without a token")
        .to_string();
    assert!(err.contains("401"), "{err}");
    ec.token = BearerToken::new(CALLER);
    let executor = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    let (req, _) = request(&format!("{own}.add"), json!({"a": 2, "b": 3}), "r1", "c1");
    let reply = executor.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(5)));
    let (status, _, list) = send(&gw, "GET", "/v1/toolsets", Some(CALLER), None).await;
    assert_eq!(status, 200);
    assert!(
        list["toolsets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == own.as_str())
    );

    // A caller neither registers, pongs nor deletes.
    let reg = |name: &str, d: &str| Some(serde_json::to_value(registration(name, d)).unwrap());
    for (method, path, body) in [
        ("POST", "/v1/toolsets".to_owned(), reg(&own, "INJECTED")),
        ("DELETE", format!("/v1/toolsets/{own}"), None),
        (
            "POST",
            format!("/v1/toolsets/{own}/pong"),
            Some(json!({"ping_id": "x/1"})),
        ),
    ] {
        let (status, ctype, problem) = send(&gw, method, &path, Some(CALLER), body).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (403, Some("forbidden")),
            "{path}"
        );
        assert_eq!(ctype, "application/problem+json");
    }

    // A provider neither calls, lists, nor registers outside its scope.
    let call = json!({"payload": {"a": 1, "b": 1}, "meta": {"run_id": "r", "session_id": "s"}});
    let path = format!("/v1/toolsets/{own}/tools/add/call");
    assert_eq!(
        send(&gw, "POST", &path, Some(ALPHA), Some(call.clone()))
            .await
            .0,
        403
    );
    assert_eq!(
        send(&gw, "GET", "/v1/toolsets", Some(ALPHA), None).await.0,
        403
    );
    let outside = unique("outside");
    let (status, _, problem) =
        send(&gw, "POST", "/v1/toolsets", Some(BETA), reg(&outside, "x")).await;
    assert_eq!(status, 403, "{problem}");
    assert_eq!(
        send(
            &gw,
            "GET",
            &format!("/v1/toolsets/{outside}"),
            Some(CALLER),
            None
        )
        .await
        .0,
        404
    );
    // Beta may not take over alpha's toolset (outside its scope) either.
    assert_eq!(
        send(
            &gw,
            "POST",
            "/v1/toolsets",
            Some(BETA),
            reg(&own, "INJECTED")
        )
        .await
        .0,
        403
    );

    // Beta registers `shared`; alpha, whose scope also names it, may not
    // re-register it, pong it or unregister it.
    client(&gw, BETA)
        .register(&registration(&shared, "beta's"))
        .await
        .unwrap();
    let (status, _, problem) = send(
        &gw,
        "POST",
        "/v1/toolsets",
        Some(ALPHA),
        reg(&shared, "INJECTED"),
    )
    .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("conflict")),
        "{problem}"
    );
    let pong = format!("/v1/toolsets/{shared}/pong");
    assert_eq!(
        send(
            &gw,
            "POST",
            &pong,
            Some(ALPHA),
            Some(json!({"ping_id": "x/1"}))
        )
        .await
        .0,
        409
    );
    let (status, _, problem) = send(
        &gw,
        "DELETE",
        &format!("/v1/toolsets/{shared}"),
        Some(ALPHA),
        None,
    )
    .await;
    assert_eq!(status, 403, "{problem}");
    let view = client(&gw, CALLER).toolset(&shared).await.unwrap();
    assert_eq!(view.toolset.description, "beta's");
    assert_eq!(view.toolset.tools[0].description, "beta's");
    // Its owner re-registers it at will.
    client(&gw, BETA)
        .register(&registration(&shared, "beta's v2"))
        .await
        .unwrap();

    // An admin neither registers nor calls, but deletes any toolset.
    assert_eq!(
        send(&gw, "POST", "/v1/toolsets", Some(ADMIN), reg(&shared, "x"))
            .await
            .0,
        403
    );
    assert_eq!(
        send(&gw, "POST", &path, Some(ADMIN), Some(call)).await.0,
        403
    );
    let (status, _, _) = send(
        &gw,
        "DELETE",
        &format!("/v1/toolsets/{shared}"),
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(
        send(
            &gw,
            "GET",
            &format!("/v1/toolsets/{shared}"),
            Some(ADMIN),
            None
        )
        .await
        .0,
        404
    );
    // Deleted, the name is free for a provider whose scope names it.
    client(&gw, ALPHA)
        .register(&registration(&shared, "alpha's"))
        .await
        .unwrap();
    // A provider unregisters its own toolset.
    client(&gw, ALPHA).unregister(&shared).await.unwrap();
    assert_eq!(
        send(
            &gw,
            "GET",
            &format!("/v1/toolsets/{shared}"),
            Some(CALLER),
            None
        )
        .await
        .0,
        404
    );
    serving.abort();
}

#[tokio::test]
async fn a_gateway_without_tokens_does_not_start() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let err = Gateway::new(redis.clone(), GatewayConfig::default())
        .err()
        .expect("a gateway without tokens");
    let msg = err.to_string();
    assert!(
        msg.contains("--insecure-no-auth") && msg.contains("WEFT_REGISTRY_TOKENS"),
        "{msg}"
    );
    let open = GatewayConfig {
        auth: GatewayAuth::InsecureNoAuth,
        ..GatewayConfig::default()
    };
    assert!(Gateway::new(redis, open).is_ok());
}
