//! Tests of capability lookup through wrapper layers.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use weft_core::tool::{ToolError, ToolRequest, ToolSpec};

use super::*;
use crate::toolset::{ToolFailure, ToolReply, ToolSet};

/// The innermost toolset: it has instructions, a public description,
/// tool-list notifications, elicitation and OAuth.
#[derive(Default)]
struct Core {
    notifier: ToolListNotifier,
    handler: Mutex<Option<Arc<dyn ElicitationHandler>>>,
}

#[async_trait]
impl ToolSet for Core {
    fn name(&self) -> &str {
        "core"
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(Vec::new())
    }
    async fn call_tool(&self, _request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        Ok(ToolReply::json(json!(null)))
    }
    fn instructions(&self) -> Option<&dyn Instructions> {
        Some(self)
    }
    fn public_description(&self) -> Option<&dyn PublicDescription> {
        Some(self)
    }
    fn tool_list_changes(&self) -> Option<&dyn ToolListChanges> {
        Some(&self.notifier)
    }
    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        Some(self)
    }
    fn oauth(&self) -> Option<&dyn OAuthTokenSource> {
        Some(self)
    }
}

impl Instructions for Core {
    fn instructions_text(&self) -> String {
        "use core tools wisely".into()
    }
}

impl PublicDescription for Core {
    fn public_description_text(&self) -> String {
        "the core toolset".into()
    }
}

impl ElicitationSupport for Core {
    fn set_elicitation_handler(&self, handler: Option<Arc<dyn ElicitationHandler>>) {
        *self.handler.lock().unwrap() = handler;
    }
}

#[async_trait]
impl OAuthTokenSource for Core {
    async fn token(&self) -> Result<OAuthToken, OAuthError> {
        Ok(OAuthToken {
            access_token: "secret-token".into(),
            expires_at: None,
            scopes: vec!["read".into()],
        })
    }
    async fn refresh(&self) -> Result<OAuthToken, OAuthError> {
        Err(OAuthError::RefreshRejected("expired".into()))
    }
}

/// A pass-through wrapper; `label` optionally overrides the public description.
struct Wrap<T> {
    inner: T,
    label: Option<&'static str>,
}

#[async_trait]
impl<T: ToolSet> ToolSet for Wrap<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        self.inner.list_tools().await
    }
    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        self.inner.call_tool(request).await
    }
    fn inner(&self) -> Option<&dyn ToolSet> {
        Some(&self.inner)
    }
    fn public_description(&self) -> Option<&dyn PublicDescription> {
        self.label.map(|_| self as &dyn PublicDescription)
    }
}

impl<T: ToolSet> PublicDescription for Wrap<T> {
    fn public_description_text(&self) -> String {
        self.label.unwrap_or_default().into()
    }
}

fn wrapped(label: Option<&'static str>) -> Wrap<Wrap<Core>> {
    Wrap {
        inner: Wrap {
            inner: Core::default(),
            label: None,
        },
        label,
    }
}

struct Answer;

#[async_trait]
impl ElicitationHandler for Answer {
    async fn elicit(&self, _request: ElicitationRequest) -> Result<ElicitationResponse, ToolError> {
        Ok(ElicitationResponse::decline())
    }
}

#[tokio::test]
async fn capabilities_are_found_through_two_wrapper_layers() {
    let set = wrapped(None);
    let dyn_set: &dyn ToolSet = &set;
    assert!(
        dyn_set.instructions().is_none(),
        "the outer layer has none itself"
    );
    assert_eq!(
        find_instructions(&set).unwrap().instructions_text(),
        "use core tools wisely"
    );
    assert_eq!(
        find_public_description(&set)
            .unwrap()
            .public_description_text(),
        "the core toolset"
    );
    assert!(find_lifecycle(&set).is_none());

    let mut changes = find_tool_list_changes(&set).unwrap().subscribe_tool_list();
    set.inner.inner.notifier.notify();
    changes.changed().await.unwrap();
    assert_eq!(*changes.borrow(), 1);

    find_elicitation(&set)
        .unwrap()
        .set_elicitation_handler(Some(Arc::new(Answer)));
    let handler = set.inner.inner.handler.lock().unwrap().clone().unwrap();
    let request = ElicitationRequest::form("which?", json!({"type": "string"}));
    assert_eq!(
        handler.elicit(request).await.unwrap(),
        ElicitationResponse::decline()
    );

    let oauth = find_oauth(&set).unwrap();
    let token = oauth.token().await.unwrap();
    assert!(
        !format!("{token:?}").contains("secret-token"),
        "Debug hides the token"
    );
    assert!(oauth.refresh().await.is_err());
}

#[test]
fn the_outermost_layer_wins() {
    let set = wrapped(Some("outer label"));
    assert_eq!(
        find_public_description(&set)
            .unwrap()
            .public_description_text(),
        "outer label"
    );
    let generic = find_capability(&set, |s| s.public_description()).unwrap();
    assert_eq!(generic.public_description_text(), "outer label");
}

/// A broken wrapper that names itself as its inner toolset.
struct Loop;

#[async_trait]
impl ToolSet for Loop {
    fn name(&self) -> &str {
        "loop"
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(Vec::new())
    }
    async fn call_tool(&self, _request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        Ok(ToolReply::json(json!(null)))
    }
    fn inner(&self) -> Option<&dyn ToolSet> {
        Some(self)
    }
}

#[test]
fn a_self_wrapping_toolset_does_not_hang_the_lookup() {
    assert!(find_oauth(&Loop).is_none());
}
