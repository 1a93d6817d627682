//! `weft run`'s question that stops being asked while it waits for its
//! answer: withdrawn by the tool that asked (an OAuth authorization that
//! completed in the browser, a call that ended) or answered elsewhere (the
//! API, the viewer). The prompt then moves on instead of waiting for a line
//! nobody needs.

use weft_core::event::EventKind;
use weft_core::{AwaitItemId, RunId};
use weft_runtime::Runtime;

/// Resolves once item `item` of run `run_id` is withdrawn or answered;
/// stays pending when the run's events cannot be followed.
pub(super) async fn settled(runtime: &Runtime, run_id: &RunId, item: &AwaitItemId) {
    if let Ok(mut events) = runtime.subscribe(run_id, 0).await {
        while let Some(Ok(e)) = events.next().await {
            match &e.kind {
                EventKind::AwaitWithdrawn { item_id }
                | EventKind::AwaitSatisfied { item_id, .. }
                    if item_id == item =>
                {
                    return;
                }
                _ => {}
            }
        }
    }
    std::future::pending().await
}
