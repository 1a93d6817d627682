//! An input-required task's question put to the person of the weft run
//! through the call's elicitor (a form whose one field is `answer`), and
//! the remote task cancelled when no answer comes.

use serde_json::json;
use weft_core::elicitation::{ElicitationAction, ElicitationRequest};
use weft_core::tool::{ToolError, ToolRequest};
use weft_tools::ToolFailure;

use super::A2aToolSet;
use super::remote::RemoteTask;

impl A2aToolSet {
    /// Asks the run's person `task`'s question; the answer, or why the call ends.
    pub(super) async fn ask(
        &self,
        request: &ToolRequest,
        task: &RemoteTask,
    ) -> Result<String, ToolFailure> {
        let question = task
            .said
            .clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| format!("A2A agent `{}` asks for input.", self.name));
        let form = ElicitationRequest::form(
            question,
            json!({
                "type": "object",
                "properties": {"answer": {"type": "string", "description": "Your answer"}},
                "required": ["answer"],
            }),
        );
        let (code, why) = match request.elicit.elicit(form).await {
            Ok(r) if r.action == ElicitationAction::Accept => {
                let answer = r.content.as_ref().and_then(|c| c["answer"].as_str());
                match answer.filter(|a| !a.trim().is_empty()) {
                    Some(answer) => return Ok(answer.to_owned()),
                    None => (ToolError::CANCELLED, "the answer was empty".to_owned()),
                }
            }
            Ok(r) => (
                ToolError::CANCELLED,
                format!("the person chose {} for its question", r.action),
            ),
            Err(e) => (
                ToolError::UNAVAILABLE,
                format!("its question could not be asked: {e}"),
            ),
        };
        let cancelled = match self.cancel(&task.id).await {
            None => "the remote task was cancelled".to_owned(),
            Some(e) => format!("cancelling the remote task failed: {e}"),
        };
        let text = format!(
            "A2A agent `{}`, task `{}`: {why}; {cancelled}",
            self.name, task.id
        );
        Err(ToolError::new(code, text).into())
    }
}
