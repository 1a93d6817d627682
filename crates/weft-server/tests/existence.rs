//! A 404 tells nothing: another tenant's real run is answered exactly as an
//! id that names no run, and at the same cost, its stored state never read
//! (the store loads no run whole for either).

mod common;

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::json;

#[tokio::test]
async fn another_tenants_run_costs_what_a_missing_one_does() {
    let (f, counting) = Fixture::counting().await;
    let real = f.start(TOKEN_A, "echo", None).await;
    f.wait_status(TOKEN_A, &real, "completed").await;
    let missing = "run_that_names_nothing";
    let paths = |run: &str| {
        [
            (Method::GET, format!("/v1/runs/{run}")),
            (Method::GET, format!("/v1/runs/{run}/events")),
            (Method::POST, format!("/v1/runs/{run}/cancel")),
            (Method::POST, format!("/v1/runs/{run}/pause")),
            (Method::POST, format!("/v1/runs/{run}/continue")),
        ]
    };
    for (run, other) in [(real.as_str(), missing), (missing, real.as_str())] {
        for ((method, path), (_, other_path)) in paths(run).into_iter().zip(paths(other)) {
            let before = counting.loads.load(Ordering::SeqCst);
            let body = || (method == Method::POST).then(|| Body::from(json!({}).to_string()));
            let reply = f.call(method.clone(), &path, Some(TOKEN_B), body()).await;
            let loads = counting.loads.load(Ordering::SeqCst) - before;
            assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method} {path}");
            assert_eq!(loads, 0, "{method} {path} loaded a run whole");
            let twin = f
                .call(method.clone(), &other_path, Some(TOKEN_B), body())
                .await;
            // The same answer, but for the id it names.
            let detail = |r: &common::Reply| {
                r.body["detail"]
                    .to_string()
                    .replace(&real, "ID")
                    .replace(missing, "ID")
            };
            assert_eq!(twin.status, StatusCode::NOT_FOUND);
            assert_eq!(detail(&reply), detail(&twin));
        }
    }
    // The owner reads its run as before.
    assert_eq!(
        f.get(&format!("/v1/runs/{real}"), TOKEN_A).await.status,
        StatusCode::OK
    );
}
