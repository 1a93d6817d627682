//! A server on 127.0.0.1:0 over a fixture's state, called with reqwest.

use std::net::SocketAddr;

use serde_json::{Value, json};
use weft_server::AppState;

/// A running server and a client for it; it serves until the test ends.
pub struct Served {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
}

impl Served {
    /// Serves `state` on a fresh port.
    pub async fn start(state: AppState) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(weft_server::serve_with_shutdown(
            listener,
            state,
            std::future::pending(),
        ));
        Self {
            addr,
            client: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn get(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Asks to start a run of `agent` in a new session.
    pub async fn start_run(&self, token: &str, agent: &str) -> reqwest::Response {
        self.post("/v1/runs", token, json!({"agent": agent, "input": "go"}))
            .await
    }

    /// Starts a run of `agent` and returns its id.
    pub async fn started(&self, token: &str, agent: &str) -> String {
        let r = self.start_run(token, agent).await;
        assert_eq!(r.status(), 201);
        let body: Value = r.json().await.unwrap();
        body["run_id"].as_str().unwrap().to_owned()
    }
}

/// The status, `Retry-After` seconds and problem body of a 429.
pub async fn too_many(r: reqwest::Response) -> (u64, Value) {
    assert_eq!(r.status(), 429);
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let retry_after = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], 429);
    assert_eq!(body["type"], "urn:weft:problem:too-many-requests");
    (retry_after, body)
}
