//! A remote task as an A2A toolset sees it, read leniently from any A2A
//! 1.0 agent's JSON (proto3's JSON mapping leaves out default fields, and
//! agents may use states weft does not serve): its ids, state, status
//! message and artifacts' text, folded from `SendMessage`'s result or from
//! the events of a stream (`task`, `statusUpdate`, `artifactUpdate`,
//! `message`).

use serde_json::{Value, json};

/// A remote task, as far as it is known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteTask {
    /// Its id.
    pub id: String,
    /// Its context.
    pub context_id: String,
    /// Its state (`TASK_STATE_…`).
    pub state: String,
    /// The text of its status message.
    pub said: Option<String>,
    /// Its artifacts: id and text.
    pub artifacts: Vec<(String, String)>,
}

/// What one event added, for the call's live output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Status message text.
    Status(String),
    /// Artifact text.
    Artifact(String),
}

/// The text of `parts` (text parts, and data parts as JSON).
pub fn text_of(parts: &Value) -> String {
    parts
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| {
                    p["text"]
                        .as_str()
                        .map(str::to_owned)
                        .or_else(|| p.get("data").map(Value::to_string))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn string(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

impl RemoteTask {
    /// Whether the task has ended.
    pub fn ended(&self) -> bool {
        matches!(
            self.state.as_str(),
            "TASK_STATE_COMPLETED"
                | "TASK_STATE_FAILED"
                | "TASK_STATE_CANCELED"
                | "TASK_STATE_REJECTED"
        )
    }

    /// Whether the task waits for the client's next message.
    pub fn asks(&self) -> bool {
        self.state == "TASK_STATE_INPUT_REQUIRED"
    }

    fn set_status(&mut self, status: &Value) -> Option<Progress> {
        if let Some(state) = status["state"].as_str() {
            self.state = state.to_owned();
        }
        self.said = status.get("message").map(|m| text_of(&m["parts"]));
        self.said
            .clone()
            .filter(|s| !s.is_empty())
            .map(Progress::Status)
    }

    /// Folds one result (`{"task": …}`, `{"message": …}`, `{"statusUpdate": …}`
    /// or `{"artifactUpdate": …}`) into the task; what it added, if anything.
    /// `None` when the result is none of those.
    pub fn fold(&mut self, result: &Value) -> Option<Vec<Progress>> {
        if let Some(task) = result.get("task") {
            self.id = string(&task["id"]);
            self.context_id = string(&task["contextId"]);
            let mut progress: Vec<Progress> =
                self.set_status(&task["status"]).into_iter().collect();
            self.artifacts.clear();
            for a in task["artifacts"].as_array().into_iter().flatten() {
                let text = text_of(&a["parts"]);
                self.artifacts
                    .push((string(&a["artifactId"]), text.clone()));
                progress.push(Progress::Artifact(text));
            }
            return Some(progress);
        }
        if let Some(update) = result.get("statusUpdate") {
            self.ids(update);
            return Some(self.set_status(&update["status"]).into_iter().collect());
        }
        if let Some(update) = result.get("artifactUpdate") {
            self.ids(update);
            let artifact = &update["artifact"];
            let id = string(&artifact["artifactId"]);
            let text = text_of(&artifact["parts"]);
            let append = update["append"].as_bool().unwrap_or(false);
            // What is new: a replacement that goes on from what was
            // streamed (an answer's last chunk) adds only its rest.
            let new = match self.artifacts.iter_mut().find(|(i, _)| *i == id) {
                Some((_, had)) if append => {
                    had.push_str(&text);
                    text
                }
                Some((_, had)) => {
                    let rest = text.strip_prefix(had.as_str()).unwrap_or(&text).to_owned();
                    *had = text;
                    rest
                }
                None => {
                    self.artifacts.push((id, text.clone()));
                    text
                }
            };
            let progress = (!new.is_empty()).then_some(Progress::Artifact(new));
            return Some(progress.into_iter().collect());
        }
        if let Some(message) = result.get("message") {
            // A direct answer without a task: the exchange is complete.
            self.ids(message);
            self.state = "TASK_STATE_COMPLETED".to_owned();
            let text = text_of(&message["parts"]);
            self.artifacts = vec![(String::new(), text.clone())];
            return Some(vec![Progress::Artifact(text)]);
        }
        None
    }

    fn ids(&mut self, v: &Value) {
        if let Some(id) = v["taskId"].as_str() {
            self.id = id.to_owned();
        }
        if let Some(id) = v["contextId"].as_str() {
            self.context_id = id.to_owned();
        }
    }

    /// The tool's result: `{"task_id", "context_id", "state", "answer"}`,
    /// with `message` for a task that ended otherwise than completed.
    pub fn result(&self) -> Value {
        let mut result =
            json!({"task_id": self.id, "context_id": self.context_id, "state": self.state});
        let answer: Vec<&str> = self.artifacts.iter().map(|(_, t)| t.as_str()).collect();
        result["answer"] = json!(answer.join("\n"));
        if let Some(said) = &self.said {
            result["message"] = json!(said);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_folds_into_its_task() {
        let mut task = RemoteTask::default();
        let first = json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}});
        assert_eq!(task.fold(&first), Some(vec![]));
        let working = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {
            "state": "TASK_STATE_WORKING", "message": {"role": "ROLE_AGENT", "parts": [{"text": "thinking"}]}}}});
        assert_eq!(
            task.fold(&working),
            Some(vec![Progress::Status("thinking".into())])
        );
        for (text, append) in [("4", false), ("2", true)] {
            let piece = json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": append,
                "artifact": {"artifactId": "a", "parts": [{"text": text}]}}});
            assert_eq!(
                task.fold(&piece),
                Some(vec![Progress::Artifact(text.into())])
            );
        }
        // The whole answer as the last chunk: nothing new to show.
        let whole = |text: &str| {
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c",
            "append": false, "lastChunk": true, "artifact": {"artifactId": "a", "parts": [{"text": text}]}}})
        };
        assert_eq!(task.fold(&whole("42")), Some(vec![]));
        assert_eq!(
            task.fold(&whole("42!")),
            Some(vec![Progress::Artifact("!".into())])
        );
        assert_eq!(
            task.fold(&whole("other")),
            Some(vec![Progress::Artifact("other".into())])
        );
        let done = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
        task.fold(&done);
        assert!(task.ended());
        assert_eq!(task.result()["answer"], "other");
        assert_eq!(task.fold(&json!({"other": 1})), None);
    }
}
