//! [`CallbackListener`]: the loopback HTTP listener on 127.0.0.1 the
//! authorization server redirects the browser to; it hands over the `code`
//! once the `state` matches the one sent.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::Html;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::error::OAuthFlowError;

/// The path the authorization server redirects to.
const CALLBACK_PATH: &str = "/callback";

/// A bound callback listener; it stops when dropped.
pub(crate) struct CallbackListener {
    redirect_uri: String,
    received: mpsc::Receiver<HashMap<String, String>>,
    task: JoinHandle<()>,
}

impl CallbackListener {
    /// Listens on 127.0.0.1:`port` (0 for any free port).
    pub async fn bind(port: u16) -> Result<Self, OAuthFlowError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| OAuthFlowError::Callback {
                message: format!("cannot listen on 127.0.0.1:{port}: {e}"),
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| OAuthFlowError::Callback {
                message: e.to_string(),
            })?;
        let (sender, received) = mpsc::channel(4);
        let router = axum::Router::new()
            .route(CALLBACK_PATH, axum::routing::get(callback))
            .with_state(sender);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::warn!(error = %e, "authorization callback listener stopped");
            }
        });
        Ok(Self {
            redirect_uri: format!("http://{addr}{CALLBACK_PATH}"),
            received,
            task,
        })
    }

    /// The redirect URI to register and send.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits up to `timeout` for the redirect and returns its `code`, once its
    /// `state` is `expected_state`.
    pub async fn code(
        mut self,
        expected_state: &str,
        timeout: Duration,
    ) -> Result<String, OAuthFlowError> {
        let wait = async {
            let params = self
                .received
                .recv()
                .await
                .ok_or_else(|| OAuthFlowError::Callback {
                    message: "the listener stopped".to_owned(),
                })?;
            if params.get("state").map(String::as_str) != Some(expected_state) {
                return Err(OAuthFlowError::StateMismatch);
            }
            if let Some(error) = params.get("error") {
                let error = match params.get("error_description") {
                    Some(description) => format!("{error}: {description}"),
                    None => error.clone(),
                };
                return Err(OAuthFlowError::Denied { error });
            }
            params
                .get("code")
                .cloned()
                .ok_or_else(|| OAuthFlowError::Callback {
                    message: "the redirect carries no `code`".to_owned(),
                })
        };
        OAuthFlowError::timed("authorization in the browser", timeout, wait).await
    }
}

impl Drop for CallbackListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn callback(
    State(sender): State<mpsc::Sender<HashMap<String, String>>>,
    Query(params): Query<HashMap<String, String>>,
) -> Html<&'static str> {
    // Only the first redirect counts; later ones find the channel full or closed.
    let _ = sender.try_send(params);
    Html(
        "<html><body><p>weft: authorization received. You may close this window.</p></body></html>",
    )
}
