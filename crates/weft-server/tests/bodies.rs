//! Request bodies over a real socket: every POST route reads its body under
//! the body limit (413 past it) and refuses a body that is not JSON (415),
//! both as problems, before it looks at the resource named.

mod common;

use common::served::Served;
use common::{Fixture, TOKEN_A};
use serde_json::Value;

/// Every POST route, with ids of nothing: the body is refused first.
const POST_ROUTES: [&str; 7] = [
    "/v1/sessions",
    "/v1/sessions/ses_none/end",
    "/v1/runs",
    "/v1/runs/run_none/answers",
    "/v1/runs/run_none/pause",
    "/v1/runs/run_none/continue",
    "/v1/runs/run_none/cancel",
];

async fn post_raw(server: &Served, path: &str, content_type: &str, body: String) -> (u16, Value) {
    let r = server
        .client
        .post(server.url(path))
        .bearer_auth(TOKEN_A)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/problem+json",
        "{path}"
    );
    (status, r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_gets_413_on_every_post_route() {
    let f = Fixture::new().await;
    let server = Served::start(f.state.clone().with_body_limit(1024)).await;
    let big = format!("{{\"reason\": \"{}\"}}", "x".repeat(4096));
    for path in POST_ROUTES {
        let (status, body) = post_raw(&server, path, "application/json", big.clone()).await;
        assert_eq!(status, 413, "{path}: {body}");
        assert_eq!(body["type"], "urn:weft:problem:payload-too-large", "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_gets_415_on_every_post_route() {
    let f = Fixture::new().await;
    let server = Served::start(f.state.clone()).await;
    for path in POST_ROUTES {
        let (status, body) = post_raw(&server, path, "text/plain", "hello".to_owned()).await;
        assert_eq!(status, 415, "{path}: {body}");
        assert_eq!(
            body["type"], "urn:weft:problem:unsupported-media-type",
            "{path}"
        );
    }
}
