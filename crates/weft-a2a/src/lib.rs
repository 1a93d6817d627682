//! weft's A2A adapter (the Agent2Agent protocol), both ways. As a server
//! (`weft a2a serve`, and `weft serve`'s `/a2a/{agent}` routes behind its
//! tenant tokens) an agent answers A2A 1.0's JSON-RPC methods (`SendMessage`,
//! `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`,
//! behind the `A2A-Version` header) and 0.3's (`message/send`,
//! `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`),
//! and describes itself in an Agent Card. A task is a weft run (the task id
//! is the run id, its context the run's session); a run waiting for a
//! person is an `input-required` task, answered by the client's next
//! message naming it. Push notifications are not offered (the card says
//! so; their methods answer `PushNotificationNotSupported`): a client
//! streams or polls.
//!
//! `wire` and `v03` hold the two releases' shapes, `rpc` JSON-RPC,
//! `card` the Agent Card, `tasks` a run seen as a task, `service` what
//! each method does to runs, `tenancy` whose tasks a caller sees, `follow`
//! a task's stream, `dispatch` the endpoint, `listen` the accept loop; `client` the other way round, a
//! remote A2A agent as a toolset (agent files' `type = "a2a"`: streamed,
//! its questions put to the run's person, authenticated as its card asks).

pub mod card;
pub mod client;
pub mod dispatch;
pub mod follow;
pub mod listen;
pub mod rpc;
pub mod service;
pub mod tasks;
pub mod tenancy;
pub mod v03;
pub mod wire;

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};

pub use card::{AgentCard, Skill};
pub use service::Service;
pub use tenancy::{Open, Tenancy};

/// The most streams open at once.
pub const MAX_STREAMS: usize = 256;

/// What the routes share.
pub struct App {
    /// The agent's runs as tasks.
    pub service: Service,
    /// The Agent Card, as served.
    pub card: Arc<serde_json::Value>,
    /// One permit per open stream.
    pub streams: Arc<tokio::sync::Semaphore>,
}

impl App {
    /// The routes' state for `service`, described by `card`.
    pub fn new(service: Service, card: &AgentCard) -> Self {
        Self {
            service,
            card: Arc::new(serde_json::to_value(card).unwrap_or_default()),
            streams: Arc::new(tokio::sync::Semaphore::new(MAX_STREAMS)),
        }
    }
}

/// The A2A routes: the card at `/.well-known/agent-card.json`, the
/// JSON-RPC endpoint at `/` (and at `/v0.3`, the 0.3 card's `url`).
pub fn router(app: App) -> Router {
    Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/", post(dispatch::endpoint))
        .route(card::V03_PATH, post(dispatch::endpoint))
        .with_state(Arc::new(app))
}

async fn agent_card(State(app): State<Arc<App>>) -> Response {
    Json(app.card.as_ref().clone()).into_response()
}
