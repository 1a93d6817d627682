//! A call's fate when Redis failed around it: never published (calling
//! again is safe) or published with its result lost (`outcome_unknown`: it
//! may have taken effect).
//!
//! The admission script makes the call's result stream and publishes the
//! call in one atomic step, so after a failed admission the stream's
//! existence tells whether the call went out.

use weft_core::tool::{ToolError, ToolIdent};
use weft_tools::ToolFailure;

use super::{RegistryToolSet, failure};
use crate::admission::Admission;
use crate::error::RegistryError;
use crate::provider::reply::OUTCOME_UNKNOWN;
use crate::{pulse, wire};

/// After the admission of `tool_use_id` failed with `error`: re-attach when
/// the call was published after all, a `tool_unavailable` failure when it
/// was not, `outcome_unknown` when Redis cannot tell.
// The error is a `ToolFailure`, as in `ToolSet::call_tool`.
#[allow(clippy::result_large_err)]
pub(super) async fn after_failed_admission(
    ex: &RegistryToolSet,
    tool: &ToolIdent,
    tool_use_id: &str,
    error: &RegistryError,
) -> Result<Admission, ToolFailure> {
    let key = pulse::key(&wire::result_stream(tool_use_id));
    let exists: Result<i64, _> = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut ex.redis.mux())
        .await;
    match exists {
        Ok(0) => Err(failure(
            tool,
            ToolError::UNAVAILABLE,
            format!("the call was not published: admission failed: {error}"),
        )),
        Ok(_) => {
            tracing::info!(tool_use_id, error = %error, "an admission whose reply was lost had published its call; waiting for its result");
            Ok(Admission::Reattach)
        }
        Err(probe) => Err(unknown(
            tool,
            tool_use_id,
            &format!(
                "its admission failed ({error}) and Redis could not tell whether it was published ({probe})"
            ),
        )),
    }
}

/// The failure of a call that may or may not have taken effect.
pub(super) fn unknown(tool: &ToolIdent, tool_use_id: &str, why: &str) -> ToolFailure {
    failure(
        tool,
        OUTCOME_UNKNOWN,
        format!("whether `{tool_use_id}` ran is unknown: {why}"),
    )
}
