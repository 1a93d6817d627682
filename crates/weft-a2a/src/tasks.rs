//! A weft run seen as an A2A task (the task id is the run id, the context
//! id its session's): its state from the stored run, its artifact from the
//! final answer, the question of a run waiting for a person as the status
//! message of an `input-required` task, and the client's next message
//! turned into the answer to that question.

use serde_json::{Value, json};
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::elicitation::ElicitationAction;
use weft_core::run::{PhaseName, RunMachine, RunOutcome, Step};
use weft_core::store::{RunStatus, StoredRun};

use super::rpc::RpcError;
use super::wire::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};

/// The id of the artifact holding a task's final answer.
pub const ANSWER_ARTIFACT: &str = "answer";

/// The await items of `machine` still waiting for an answer, oldest first.
pub fn open_items(machine: &RunMachine, updated_ms: u64) -> Vec<AwaitItem> {
    if !machine.elicitations().is_empty() {
        return machine
            .elicitations()
            .iter()
            .cloned()
            .map(AwaitItem::Elicitation)
            .collect();
    }
    if machine.phase_name() != PhaseName::Awaiting {
        return Vec::new();
    }
    // `next_step` of an awaiting machine changes nothing; it runs on a clone.
    let mut probe = machine.clone();
    match probe.next_step(weft_core::Timestamp::from_millis(updated_ms)) {
        Step::Await { items, answers } => items
            .iter()
            .zip(answers.iter())
            .filter(|(_, answer)| answer.is_none())
            .map(|(item, _)| item.clone())
            .collect(),
        _ => Vec::new(),
    }
}

/// The task a stored run is.
pub fn task_of(stored: &StoredRun) -> Task {
    let id = stored.record.run_id.to_string();
    let context_id = stored.record.session_id.to_string();
    let updated = stored.record.updated_at.as_millis();
    let open = open_items(&stored.snapshot, updated);
    let mut artifacts = Vec::new();
    let (state, message) = match stored.snapshot.outcome() {
        Some(RunOutcome::Response { message, .. }) => {
            artifacts.push(answer(Part::text(message.joined_text())));
            (TaskState::Completed, None)
        }
        Some(RunOutcome::ToolResult { result, .. }) => {
            artifacts.push(answer(Part::data(result.clone())));
            (TaskState::Completed, None)
        }
        Some(RunOutcome::Failed { failure }) => {
            let why = serde_json::to_value(failure).unwrap_or(Value::Null);
            let text = format!("the run failed: {why}");
            (
                TaskState::Failed,
                Some(agent_message(&id, &context_id, vec![Part::text(text)])),
            )
        }
        Some(RunOutcome::Cancelled { reason }) => {
            let text = format!("the run was cancelled: {reason}");
            (
                TaskState::Canceled,
                Some(agent_message(&id, &context_id, vec![Part::text(text)])),
            )
        }
        None if !open.is_empty() => {
            let parts = question_parts(&open);
            (
                TaskState::InputRequired,
                Some(agent_message(&id, &context_id, parts)),
            )
        }
        None => match stored.record.status {
            RunStatus::Paused => {
                let text = "paused by an operator; it goes on when continued";
                (
                    TaskState::Working,
                    Some(agent_message(&id, &context_id, vec![Part::text(text)])),
                )
            }
            _ => (TaskState::Working, None),
        },
    };
    let history = history(&stored.snapshot, &id, &context_id);
    Task {
        id,
        context_id,
        status: TaskStatus {
            state,
            message,
            timestamp: rfc3339(updated),
        },
        artifacts,
        history,
    }
}

/// The most messages of history a task carries (the newest).
pub const MAX_HISTORY: usize = 100;

/// The task's own conversation (after its session's history): the user's
/// messages and the agent's text, at most [`MAX_HISTORY`], newest last.
fn history(machine: &RunMachine, task_id: &str, context_id: &str) -> Vec<Message> {
    let skip = machine
        .state()
        .get("weft.session.history_len")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let mut messages: Vec<Message> = Vec::new();
    for (index, message) in machine.transcript().iter().enumerate().skip(skip) {
        let role = match message.role {
            weft_core::message::Role::User => Role::User,
            weft_core::message::Role::Assistant => Role::Agent,
            _ => continue,
        };
        let text = message.joined_text();
        if text.is_empty() {
            continue;
        }
        messages.push(Message {
            message_id: format!("{task_id}-{index}"),
            context_id: Some(context_id.to_owned()),
            task_id: Some(task_id.to_owned()),
            role,
            parts: vec![Part::text(text)],
        });
    }
    let extra = messages.len().saturating_sub(MAX_HISTORY);
    messages.drain(..extra);
    messages
}

/// `task` with at most its last `length` messages of history (all without one).
pub fn trim_history(mut task: Task, length: Option<u32>) -> Task {
    if let Some(length) = length {
        let extra = task.history.len().saturating_sub(length as usize);
        task.history.drain(..extra);
    }
    task
}

/// `millis` since the Unix epoch in RFC 3339 (UTC, milliseconds), as A2A
/// writes a status's time.
fn rfc3339(millis: u64) -> Option<String> {
    let at = chrono::DateTime::from_timestamp_millis(i64::try_from(millis).ok()?)?;
    Some(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// The answer artifact holding `part`.
pub fn answer(part: Part) -> Artifact {
    Artifact {
        artifact_id: ANSWER_ARTIFACT.to_owned(),
        name: Some(ANSWER_ARTIFACT.to_owned()),
        parts: vec![part],
    }
}

/// A message of the agent about task `task_id`.
pub fn agent_message(task_id: &str, context_id: &str, parts: Vec<Part>) -> Message {
    Message {
        message_id: format!("{task_id}-{}", uuid::Uuid::new_v4()),
        context_id: Some(context_id.to_owned()),
        task_id: Some(task_id.to_owned()),
        role: Role::Agent,
        parts,
    }
}

/// What a person is asked: the first open item's question in words, and
/// every open item as data (`{"awaiting": [...]}`, weft's await items).
fn question_parts(open: &[AwaitItem]) -> Vec<Part> {
    let mut parts = Vec::new();
    if let Some(first) = open.first() {
        parts.push(Part::text(question(first)));
    }
    let items = serde_json::to_value(open).unwrap_or(Value::Null);
    parts.push(Part::data(json!({ "awaiting": items })));
    parts
}

/// An await item's question in words.
fn question(item: &AwaitItem) -> String {
    match item {
        AwaitItem::Clarification(c) => c.question.clone(),
        AwaitItem::Questions(q) => q
            .questions
            .iter()
            .map(|q| {
                let options: Vec<String> = q
                    .options
                    .iter()
                    .map(|o| format!("{} ({})", o.label, o.id))
                    .collect();
                format!("{} Options: {}", q.prompt, options.join(", "))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        AwaitItem::ExternalTools(e) => format!(
            "{} tool call(s) wait for their results (send them as a data part)",
            e.items.len()
        ),
        AwaitItem::Confirmation(c) => format!(
            "May the agent call `{}` with {}? Answer yes or no.",
            c.tool_name, c.payload
        ),
        AwaitItem::Elicitation(e) => e.message.clone(),
    }
}

/// The answer to `item` a client's message gives: a data part that is a
/// weft await answer (`{"kind": ...}`) as it is; otherwise the message's
/// text, read as the item's kind takes it (a clarification's free text, a
/// confirmation's yes or no, one question's option id or label) or a data
/// part as an elicitation form's content.
pub fn answer_for(item: &AwaitItem, message: &Message) -> Result<AwaitAnswer, RpcError> {
    let data: Vec<&Value> = message
        .parts
        .iter()
        .filter_map(|p| p.data.as_ref())
        .collect();
    for value in &data {
        if value.get("kind").is_some()
            && let Ok(answer) = serde_json::from_value::<AwaitAnswer>((*value).clone())
        {
            return Ok(answer);
        }
    }
    let text = message
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect::<Vec<_>>()
        .join("\n");
    let word = text.trim().to_lowercase();
    match item {
        AwaitItem::Clarification(_) if !text.trim().is_empty() => {
            Ok(AwaitAnswer::Clarification { text })
        }
        AwaitItem::Confirmation(_) => match word.as_str() {
            "yes" | "y" | "approve" | "approved" | "ok" | "true" => Ok(AwaitAnswer::Confirmation {
                approved: true,
                reason: None,
            }),
            "" => Err(RpcError::invalid_params(
                "the answer to a confirmation is yes or no",
            )),
            _ => Ok(AwaitAnswer::Confirmation {
                approved: false,
                reason: Some(text),
            }),
        },
        AwaitItem::Questions(q) if q.questions.len() == 1 => {
            let question = &q.questions[0];
            let chosen = question
                .options
                .iter()
                .find(|o| o.id.to_lowercase() == word || o.label.to_lowercase() == word)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "`{}` is none of the options of `{}`",
                        super::rpc::clip(&text),
                        question.id
                    ))
                })?;
            Ok(AwaitAnswer::Questions {
                answers: [(question.id.clone(), vec![chosen.id.clone()])].into(),
            })
        }
        AwaitItem::Elicitation(_) => match (data.first(), word.as_str()) {
            (Some(content), _) => Ok(AwaitAnswer::Elicitation {
                action: ElicitationAction::Accept,
                content: Some((*content).clone()),
            }),
            (None, "decline") => Ok(AwaitAnswer::Elicitation {
                action: ElicitationAction::Decline,
                content: None,
            }),
            (None, "cancel") => Ok(AwaitAnswer::Elicitation {
                action: ElicitationAction::Cancel,
                content: None,
            }),
            (None, _) => Err(RpcError::invalid_params(
                "answer the form with a data part of its fields, or the text `decline` or `cancel`",
            )),
        },
        _ => Err(RpcError::invalid_params(format!(
            "the task waits for a `{}` answer: send it as a data part (`{{\"kind\": ...}}`)",
            serde_json::to_value(item.kind())
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::AwaitItemId;
    use weft_core::awaiting::Clarification;

    fn user(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m".into(),
            context_id: None,
            task_id: Some("t".into()),
            role: Role::User,
            parts,
        }
    }

    fn clarification() -> AwaitItem {
        AwaitItem::Clarification(Clarification {
            id: AwaitItemId::new("ask-0"),
            question: "Who?".into(),
            missing_fields: Vec::new(),
            restrict_to_tool: None,
            example_input: None,
            clarifying_prompt: None,
        })
    }

    #[test]
    fn text_answers_a_clarification_and_nothing_is_refused() {
        let answer = answer_for(&clarification(), &user(vec![Part::text("Ada")])).unwrap();
        assert_eq!(answer, AwaitAnswer::Clarification { text: "Ada".into() });
        let err = answer_for(&clarification(), &user(vec![Part::text("  ")])).unwrap_err();
        assert_eq!(err.code, -32602);
    }

    #[test]
    fn a_data_part_that_is_an_answer_is_taken_as_it_is() {
        let data = json!({"kind": "clarification", "text": "from data"});
        let answer = answer_for(&clarification(), &user(vec![Part::data(data)])).unwrap();
        assert_eq!(
            answer,
            AwaitAnswer::Clarification {
                text: "from data".into()
            }
        );
    }
}
