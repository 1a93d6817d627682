//! The `[history]` section of an agent file: which of its session's earlier
//! messages a run starts from (`weft_core::history::HistoryPolicy`).
//!
//! ```toml
//! [history]
//! keep_turns = 10                  # the last 10 turns (default 20)
//! # keep_all = true                # every turn, up to 200
//! # summarize = { model = "..." }  # older turns as one summary; `keep_turns` stay verbatim
//! ```

use serde::Deserialize;
use weft_core::history::{DEFAULT_KEEP_TURNS, HistoryPolicy, MAX_KEEP_TURNS};

/// The history section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistorySpec {
    /// How many recent turns a run starts from (0: none).
    #[serde(default)]
    pub keep_turns: Option<u32>,
    /// Every earlier turn, up to the most any policy keeps.
    #[serde(default)]
    pub keep_all: bool,
    /// Compress the turns before the kept ones into one summary.
    #[serde(default)]
    pub summarize: Option<SummarizeSpec>,
}

/// How older turns are summarized.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummarizeSpec {
    /// The model that summarizes (the planner's when absent).
    #[serde(default)]
    pub model: Option<String>,
}

impl HistorySpec {
    /// Checks the section; the message says what is wrong.
    pub(super) fn check(&self) -> Result<(), String> {
        if self.keep_all && (self.keep_turns.is_some() || self.summarize.is_some()) {
            return Err("[history]: `keep_all` excludes `keep_turns` and `summarize`".into());
        }
        if let Some(n) = self.keep_turns
            && n > MAX_KEEP_TURNS
        {
            return Err(format!(
                "[history]: `keep_turns` is {n}, above the most kept ({MAX_KEEP_TURNS})"
            ));
        }
        if let Some(SummarizeSpec { model: Some(m) }) = &self.summarize
            && m.trim().is_empty()
        {
            return Err("[history]: `summarize.model` must not be empty".into());
        }
        Ok(())
    }

    /// The policy the section describes.
    pub fn policy(&self) -> HistoryPolicy {
        let keep_turns = self.keep_turns.unwrap_or(DEFAULT_KEEP_TURNS);
        match &self.summarize {
            _ if self.keep_all => HistoryPolicy::KeepAll,
            Some(s) => HistoryPolicy::Summarize {
                keep_turns,
                model: s.model.clone(),
            },
            None => HistoryPolicy::LastTurns { turns: keep_turns },
        }
    }
}

/// `builder` with the model that summarizes older turns, when `history`
/// asks for a summary: its own model, else the agent's (`own_model`). The
/// summarizer is looked up by id when a run starts; one that cannot be
/// built is missing then, and the start says so.
pub(super) fn with_summarizer(
    builder: weft_runtime::AgentBuilder,
    history: &HistoryPolicy,
    own_model: Option<String>,
) -> weft_runtime::AgentBuilder {
    let HistoryPolicy::Summarize { model, .. } = history else {
        return builder;
    };
    let Some(id) = model.clone().or(own_model) else {
        return builder;
    };
    match weft_models::build_model(&weft_models::ModelConfig {
        local_loader: super::model::local_loader(),
        ..weft_models::ModelConfig::new(&id)
    }) {
        Ok(client) => builder.model(id, client),
        Err(e) => {
            tracing::warn!(model = %id, error = %e, "the history summarizer cannot be built");
            builder
        }
    }
}
