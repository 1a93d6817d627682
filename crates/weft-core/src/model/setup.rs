//! [`ModelSetup`]: what a model planner asked its model with (the model,
//! the system prompt, the tools and the settings), kept in the run's state
//! under [`MODEL_SETUP_KEY`] as first asked, so that a replay can list how
//! the agent replaying a run differs from the one recorded
//! ([`ModelSetup::changes`]). Texts are kept as digests (a prompt's and a
//! tool description's version, a schema's), not whole.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::prompt::template_version;
use crate::tool::ToolSpec;

/// The run state key of the [`ModelSetup`] a run's model was first asked with.
pub const MODEL_SETUP_KEY: &str = "weft.model.setup";

/// What a model planner asked its model with; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSetup {
    /// The model's id.
    pub model: String,
    /// The system prompt's version (its digest); empty for none.
    pub system_prompt: String,
    /// The system prompt's length in characters.
    pub system_chars: usize,
    /// The tools offered, by name.
    pub tools: BTreeMap<String, ToolDigest>,
    /// The settings asked with, by name (`temperature`, `max_tokens`,
    /// `tool_choice`, ...), as shown; a setting left unset is absent.
    pub settings: BTreeMap<String, String>,
}

/// A tool as offered, by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDigest {
    /// Its description's digest.
    pub description: String,
    /// Its input schema's digest.
    pub schema: String,
}

impl ModelSetup {
    /// The setup of `model` asked with `system`, `tools` and `settings`.
    pub fn new(
        model: &str,
        system: Option<&str>,
        tools: &[ToolSpec],
        settings: BTreeMap<String, String>,
    ) -> Self {
        Self {
            model: model.to_owned(),
            system_prompt: system.map(template_version).unwrap_or_default(),
            system_chars: system.map_or(0, |s| s.chars().count()),
            tools: tools
                .iter()
                .map(|t| {
                    let digest = ToolDigest {
                        description: template_version(&t.description),
                        schema: template_version(&t.input_schema.to_string()),
                    };
                    (t.name.to_string(), digest)
                })
                .collect(),
            settings,
        }
    }

    /// How `now` differs from this (recorded) setup, one line per
    /// difference: the model, the system prompt, each tool added, removed
    /// or changed, each setting. Empty when they are the same.
    pub fn changes(&self, now: &ModelSetup) -> Vec<String> {
        let mut lines = Vec::new();
        if self.model != now.model {
            lines.push(format!(
                "model: `{}` recorded, `{}` now",
                self.model, now.model
            ));
        }
        if self.system_prompt != now.system_prompt {
            lines.push(format!(
                "system prompt differs ({} characters recorded, {} now)",
                self.system_chars, now.system_chars
            ));
        }
        for (name, then) in &self.tools {
            match now.tools.get(name) {
                None => lines.push(format!("tool `{name}` removed")),
                Some(t) => {
                    let changed: Vec<&str> = [
                        (then.description != t.description, "description"),
                        (then.schema != t.schema, "schema"),
                    ]
                    .into_iter()
                    .filter_map(|(differs, what)| differs.then_some(what))
                    .collect();
                    if !changed.is_empty() {
                        lines.push(format!(
                            "tool `{name}`: its {} changed",
                            changed.join(" and ")
                        ));
                    }
                }
            }
        }
        for name in now.tools.keys().filter(|n| !self.tools.contains_key(*n)) {
            lines.push(format!("tool `{name}` added"));
        }
        let names: std::collections::BTreeSet<&String> =
            self.settings.keys().chain(now.settings.keys()).collect();
        for name in names {
            let (then, later) = (self.settings.get(name), now.settings.get(name));
            if then != later {
                let show = |v: Option<&String>| v.map_or("unset".to_owned(), |v| format!("`{v}`"));
                lines.push(format!(
                    "{name}: {} recorded, {} now",
                    show(then),
                    show(later)
                ));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.to_owned(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            tags: Vec::new(),
        }
    }

    #[test]
    fn the_same_setup_has_no_changes_and_each_change_is_one_line() {
        let settings = |t: &str| BTreeMap::from([("temperature".to_owned(), t.to_owned())]);
        let then = ModelSetup::new(
            "m/a",
            Some("Be brief."),
            &[tool("calc.add", "Adds"), tool("calc.divide", "Divides")],
            settings("0.2"),
        );
        assert!(then.changes(&then.clone()).is_empty());
        let now = ModelSetup::new(
            "m/b",
            Some("Be verbose."),
            &[tool("calc.add", "Adds two"), tool("text.upper", "Upper")],
            BTreeMap::new(),
        );
        assert_eq!(
            then.changes(&now),
            [
                "model: `m/a` recorded, `m/b` now",
                "system prompt differs (9 characters recorded, 11 now)",
                "tool `calc.add`: its description changed",
                "tool `calc.divide` removed",
                "tool `text.upper` added",
                "temperature: `0.2` recorded, unset now",
            ]
        );
    }
}
