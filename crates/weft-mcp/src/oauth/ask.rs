//! [`CallPresenter`]: the authorization URL asked of the run whose call
//! needs the server, as a URL elicitation (an await the API, the viewer and
//! the terminal show), instead of a line on the process's stderr. The
//! calls in progress on a connection register their elicitor; the latest
//! one asks. A decline or cancel ends the authorization at once; the
//! question is withdrawn once the browser's callback arrives. With no call
//! able to ask (an authorization while tools are listed, a detached
//! elicitor, a run with its questions full) the fallback presenter shows it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use weft_core::elicitation::{ElicitationAction, ElicitationError, ElicitationRequest, Elicitor};

use super::config::{AuthorizationPresenter, AuthorizationPrompt, Refusal};

/// Presents the authorization URL through the calls waiting on it.
pub struct CallPresenter {
    calls: Mutex<Vec<(u64, Elicitor)>>,
    next: AtomicU64,
    fallback: Arc<dyn AuthorizationPresenter>,
}

impl CallPresenter {
    /// Asks through calls, else through `fallback`.
    pub fn new(fallback: Arc<dyn AuthorizationPresenter>) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            fallback,
        })
    }

    /// Registers a call's elicitor while the call runs; dropping the guard
    /// removes it. A detached elicitor is not registered.
    pub fn enter(self: &Arc<Self>, elicitor: Elicitor) -> CallEntry {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if elicitor.is_attached() {
            self.lock().push((id, elicitor));
        }
        CallEntry {
            presenter: Arc::clone(self),
            id,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Elicitor)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call registered with a [`CallPresenter`].
pub struct CallEntry {
    presenter: Arc<CallPresenter>,
    id: u64,
}

impl Drop for CallEntry {
    fn drop(&mut self) {
        self.presenter.lock().retain(|(id, _)| *id != self.id);
    }
}

impl AuthorizationPresenter for CallPresenter {
    fn present(&self, prompt: &AuthorizationPrompt) -> Refusal {
        let latest = self.lock().last().map(|(_, e)| e.clone());
        let Some(elicitor) = latest else {
            return self.fallback.present(prompt);
        };
        let request = ElicitationRequest::url(
            format!(
                "The toolset `{}` ({}) needs your authorization: open the URL, sign in and allow access; the call goes on once the server has answered.",
                prompt.toolset, prompt.server
            ),
            prompt.url.clone(),
            "",
        );
        let asked = elicitor.elicit(request);
        let fallback = Arc::clone(&self.fallback);
        let prompt = prompt.clone();
        Box::pin(async move {
            match asked.await {
                Ok(answer) if answer.action == ElicitationAction::Accept => {
                    // Done in the browser: the callback carries the code.
                    std::future::pending().await
                }
                Ok(answer) => answer.action,
                // The call ended; the authorization goes with it.
                Err(ElicitationError::Withdrawn) => std::future::pending().await,
                Err(e) => {
                    tracing::debug!(toolset = %prompt.toolset, error = %e, "cannot ask the run; showing the authorization URL instead");
                    fallback.present(&prompt).await
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use futures_util::FutureExt;

    use weft_core::elicitation::{ElicitationMode, ElicitationResponse};

    use super::*;

    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl AuthorizationPresenter for Counting {
        fn present(&self, _prompt: &AuthorizationPrompt) -> Refusal {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { ElicitationAction::Cancel })
        }
    }

    fn prompt() -> AuthorizationPrompt {
        AuthorizationPrompt {
            toolset: "web".into(),
            server: "https://mcp.example/mcp".into(),
            url: "https://auth.example/authorize?state=s".into(),
        }
    }

    /// An elicitor answering `action`, recording the URL asked.
    fn answering(action: ElicitationAction, asked: Arc<Mutex<Vec<String>>>) -> Elicitor {
        Elicitor::new(move |request| {
            if let ElicitationMode::Url { url, .. } = &request.mode {
                asked.lock().unwrap().push(url.clone());
            }
            Box::pin(async move {
                Ok(ElicitationResponse {
                    action,
                    content: None,
                })
            })
        })
    }

    #[tokio::test]
    async fn the_latest_call_asks_and_a_decline_refuses() {
        let fallback = Arc::new(Counting::default());
        let presenter = CallPresenter::new(fallback.clone());
        let first = Arc::new(Mutex::new(Vec::new()));
        let second = Arc::new(Mutex::new(Vec::new()));
        let _a = presenter.enter(answering(ElicitationAction::Accept, first.clone()));
        let b = presenter.enter(answering(ElicitationAction::Decline, second.clone()));
        let refused = presenter.present(&prompt()).await;
        assert_eq!(refused, ElicitationAction::Decline);
        assert_eq!(second.lock().unwrap().as_slice(), [prompt().url]);
        assert!(first.lock().unwrap().is_empty());

        // The call that ended no longer asks; an accept leaves the flow waiting.
        drop(b);
        let waiting = presenter.present(&prompt()).now_or_never();
        assert!(
            waiting.is_none(),
            "an accepted authorization is not a refusal"
        );
        assert_eq!(first.lock().unwrap().len(), 1);
        assert_eq!(fallback.0.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn without_a_call_that_can_ask_the_fallback_shows_it() {
        let fallback = Arc::new(Counting::default());
        let presenter = CallPresenter::new(fallback.clone());
        let _detached = presenter.enter(Elicitor::detached());
        assert_eq!(
            presenter.present(&prompt()).await,
            ElicitationAction::Cancel
        );
        assert_eq!(fallback.0.load(Ordering::SeqCst), 1);

        // A run that cannot take the question: the fallback too.
        let _full = presenter.enter(Elicitor::new(|_| {
            Box::pin(async { Err(ElicitationError::Refused("too many".into())) })
        }));
        assert_eq!(
            presenter.present(&prompt()).await,
            ElicitationAction::Cancel
        );
        assert_eq!(fallback.0.load(Ordering::SeqCst), 2);
    }
}
