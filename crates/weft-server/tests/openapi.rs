//! The OpenAPI document, walked: every route is documented with every error
//! it can give as a problem, every `$ref` names a schema that exists, and the
//! run input, await answers, outcomes and each event type have real schemas.

mod common;

use common::Fixture;
use common::served::Served;
use serde_json::{Value, json};

/// Every route the router serves.
const ROUTES: [(&str, &str); 23] = [
    ("get", "/healthz"),
    ("get", "/openapi.json"),
    ("get", "/metrics"),
    ("get", "/v1/agents"),
    ("post", "/v1/sessions"),
    ("get", "/v1/sessions"),
    ("get", "/v1/sessions/{session_id}"),
    ("delete", "/v1/sessions/{session_id}"),
    ("post", "/v1/sessions/{session_id}/end"),
    ("post", "/v1/runs"),
    ("get", "/v1/runs"),
    ("get", "/v1/runs/{run_id}"),
    ("get", "/v1/runs/{run_id}/events"),
    ("post", "/v1/runs/{run_id}/answers"),
    ("post", "/v1/runs/{run_id}/pause"),
    ("post", "/v1/runs/{run_id}/continue"),
    ("post", "/v1/runs/{run_id}/cancel"),
    ("get", "/v1/prompts"),
    ("post", "/v1/prompts"),
    ("post", "/v1/prompts/clear"),
    ("get", "/a2a/{agent}/.well-known/agent-card.json"),
    ("post", "/a2a/{agent}"),
    ("post", "/a2a/{agent}/v0.3"),
];

/// The error statuses a route can give.
fn errors_of(method: &str, path: &str) -> Vec<&'static str> {
    if path == "/metrics" || path.starts_with("/a2a/") {
        return vec!["401", "404"];
    }
    if !path.starts_with("/v1/") {
        return Vec::new();
    }
    let mut statuses = vec!["400", "401", "500"];
    if path.contains('{') {
        statuses.push("404");
    }
    if method == "post" {
        statuses.extend(["408", "413", "415"]);
        if path.starts_with("/v1/runs") {
            statuses.extend(["409", "503"]);
        }
    }
    if (method, path) == ("post", "/v1/runs") || path.ends_with("/events") {
        statuses.push("429");
    }
    // A prompt override's scope may name a session the caller does not have.
    if method == "post" && path.starts_with("/v1/prompts") {
        statuses.push("404");
    }
    statuses
}

async fn document() -> Value {
    let f = Fixture::new().await;
    let server = Served::start(f.state.clone()).await;
    let r = server
        .client
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_documents_every_error_as_a_problem() {
    let doc = document().await;
    let paths = doc["paths"].as_object().unwrap();
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(documented, ROUTES.len(), "{:?}", paths.keys());
    for (method, path) in ROUTES {
        let op = &paths[path][method];
        assert!(op.is_object(), "{method} {path} is not documented");
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|s| s.starts_with('2')),
            "{method} {path} has no success"
        );
        for status in errors_of(method, path) {
            let response = responses
                .get(status)
                .unwrap_or_else(|| panic!("{method} {path} lacks {status}"));
            let schema = &response["content"]["application/problem+json"]["schema"]["$ref"];
            assert_eq!(
                schema, "#/components/schemas/Problem",
                "{method} {path} {status}"
            );
        }
    }
}

/// Every operation takes the optional `x-request-id` request header, and
/// every response of it (successes and problems alike) declares the
/// `x-request-id` header the server sets on it; and the server does set it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_documents_the_request_id_header() {
    let doc = document().await;
    let paths = doc["paths"].as_object().unwrap();
    for (method, path) in ROUTES {
        let op = &paths[path][method];
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        let ids: Vec<&Value> = params
            .iter()
            .filter(|p| p["name"] == "x-request-id" && p["in"] == "header")
            .collect();
        assert_eq!(ids.len(), 1, "{method} {path}: {params:?}");
        assert_ne!(ids[0]["required"], json!(true), "{method} {path}");
        assert_eq!(ids[0]["schema"]["type"], "string", "{method} {path}");
        assert_eq!(ids[0]["schema"]["maxLength"], 64, "{method} {path}");
        let responses = op["responses"].as_object().unwrap();
        assert!(!responses.is_empty(), "{method} {path}");
        for (status, response) in responses {
            let header = &response["headers"]["x-request-id"];
            assert_eq!(
                header["schema"]["type"], "string",
                "{method} {path} {status}: {response}"
            );
            assert!(
                header["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{method} {path} {status}"
            );
        }
    }
    // What the document says is what the server does, for a success and
    // for a problem, with and without a client's id.
    let f = Fixture::new().await;
    let server = Served::start(f.state.clone()).await;
    let r = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert!(r.headers().contains_key("x-request-id"));
    let r = server
        .client
        .get(server.url("/v1/runs"))
        .header("x-request-id", "mine-1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["x-request-id"], "mine-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_referenced_schema_exists() {
    let doc = document().await;
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(found.len() > 50, "{found:?}");
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r} is not a schema reference"));
        assert!(schemas.contains_key(name), "{r} does not exist");
    }
}

/// The values the tag `tag` takes across the `oneOf` of schema `name`.
/// The `type` names of every `EventKind`, as serde lists them when it
/// meets an unknown one.
fn event_kinds() -> Vec<String> {
    let err = serde_json::from_value::<weft_core::event::EventKind>(json!({"type": "?"}))
        .expect_err("an unknown event type is refused");
    let message = err.to_string();
    let list = message
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("serde names the variants: {message}"));
    list.split(", ")
        .map(|v| v.trim().trim_matches('`').to_owned())
        .filter(|v| v != "run_resumed") // an alias of `run_continued` in old logs
        .collect()
}

fn tags(doc: &Value, name: &str, tag: &str) -> Vec<String> {
    let schema = &doc["components"]["schemas"][name];
    let variants = schema["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: {schema}"));
    let mut out = Vec::new();
    for v in variants {
        let mut found = Vec::new();
        tag_values(v, tag, &mut found);
        assert_eq!(found.len(), 1, "{name}: one `{tag}` per variant: {v}");
        out.extend(found);
    }
    out
}

fn tag_values(v: &Value, tag: &str, out: &mut Vec<String>) {
    if let Some(values) = v["properties"][tag]["enum"].as_array() {
        out.extend(values.iter().filter_map(|s| s.as_str().map(str::to_owned)));
    }
    for part in v["allOf"].as_array().into_iter().flatten() {
        tag_values(part, tag, out);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_answers_outcomes_and_events_have_typed_schemas() {
    let doc = document().await;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["StartRun"]["properties"]["input"]["$ref"],
        "#/components/schemas/RunInput"
    );
    assert_eq!(
        schemas["ProvideAnswer"]["properties"]["answer"]["$ref"],
        "#/components/schemas/AwaitAnswer"
    );
    // A run counts the child runs it started (agents called as tools).
    let child_count = &schemas["RunView"]["properties"]["child_count"];
    assert!(
        child_count["type"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("integer")))
            || child_count["type"] == "integer",
        "{child_count}"
    );
    let mut events = tags(&doc, "RunEvent", "type");
    events.sort();
    // Every event type weft-core has, read from its own deserializer: a
    // new event kind without a schema fails here.
    let mut expected = event_kinds();
    expected.sort();
    assert_eq!(events, expected);
    let kinds = [
        "clarification",
        "questions",
        "external_tools",
        "confirmation",
        "elicitation",
    ];
    assert_eq!(tags(&doc, "AwaitAnswer", "kind"), kinds);
    assert_eq!(tags(&doc, "AwaitItem", "kind"), kinds);
    assert_eq!(
        tags(&doc, "RunOutcome", "kind"),
        ["response", "tool_result", "failed", "cancelled"]
    );
    let parts = tags(&doc, "Part", "type");
    assert!(parts.contains(&"text".to_owned()) && parts.contains(&"image".to_owned()));
    // Bodies that may be left out are not required.
    for path in [
        "/v1/sessions",
        "/v1/sessions/{session_id}/end",
        "/v1/runs/{run_id}/pause",
        "/v1/runs/{run_id}/continue",
        "/v1/runs/{run_id}/cancel",
    ] {
        let body = &doc["paths"][path]["post"]["requestBody"];
        assert_ne!(body["required"], true, "{path}: {body}");
    }
    let events = &doc["paths"]["/v1/runs/{run_id}/events"]["get"]["responses"]["200"];
    assert_eq!(
        events["content"]["text/event-stream"]["schema"]["$ref"],
        "#/components/schemas/RunEvent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_documents_its_cost_as_an_optional_number() {
    let doc = document().await;
    let usage = &doc["components"]["schemas"]["Usage"];
    assert_eq!(usage["properties"]["cost_usd"]["type"], "number", "{usage}");
    let required: Vec<&str> = usage["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(required.contains(&"input_tokens"), "{usage}");
    assert!(
        !required.contains(&"cost_usd"),
        "absent when unknown: {usage}"
    );
}
