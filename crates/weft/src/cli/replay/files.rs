//! Which agent file replays a run: one of the files given with `--agent`
//! (or of the agents their `type = "agent"` toolsets call, so a
//! coordinator's file also replays its child runs), the only file given
//! for a single run whatever its agent, or, without `--agent`, the file
//! the run names in its [`AGENT_FILE_LABEL`] label (`weft run` sets it;
//! child runs inherit it from their parent).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use weft_core::tool::Labels;

use crate::agent_file::{AgentFile, team_files};

/// The run label naming the agent file a run was started from (its
/// absolute path), set by `weft run` when the file's own planner drives it.
pub const AGENT_FILE_LABEL: &str = "weft.agent_file";

/// The label value for a run of the file at `path`, when it has one.
pub fn agent_file_label(path: &Path) -> Option<String> {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
}

/// The agent files of a replay; see the module docs.
pub struct AgentFiles {
    /// The files given, each followed by its team.
    given: Vec<AgentFile>,
    /// The file given alone, when exactly one was.
    only: Option<AgentFile>,
    /// The teams of files named by runs' labels, read once each.
    named: HashMap<String, Result<Vec<AgentFile>, String>>,
}

impl AgentFiles {
    /// Reads the files at `paths` and their teams.
    pub fn load(paths: &[PathBuf]) -> anyhow::Result<Self> {
        let mut given = Vec::new();
        let mut only = None;
        for path in paths {
            let team = team_files(path)?;
            if paths.len() == 1 {
                only = team.first().cloned();
            }
            given.extend(team);
        }
        Ok(Self {
            given,
            only,
            named: HashMap::new(),
        })
    }

    /// The file for a run of `agent_id` with `labels`; `lone`: the run is
    /// replayed alone, so a single file given replays it whatever its
    /// agent. `Err` says why there is none.
    pub fn find(
        &mut self,
        agent_id: &str,
        labels: &Labels,
        lone: bool,
    ) -> Result<AgentFile, String> {
        if !self.given.is_empty() {
            return self
                .given
                .iter()
                .find(|f| f.id == agent_id)
                .or(self.only.as_ref().filter(|_| lone))
                .cloned()
                .ok_or_else(|| format!("no agent file given for agent `{agent_id}`"));
        }
        let Some(path) = labels.get(AGENT_FILE_LABEL) else {
            return Err(format!(
                "no agent file given, and the run does not name the file of agent `{agent_id}` \
                 (runs started by `weft run` do): give one with --agent"
            ));
        };
        let team = self.named.entry(path.clone()).or_insert_with(|| {
            team_files(Path::new(path))
                .map_err(|e| format!("the agent file it was started from: {}", causes(&e)))
        });
        match team {
            Ok(team) => team
                .iter()
                .find(|f| f.id == agent_id)
                .cloned()
                .ok_or_else(|| {
                    format!("its agent file {path} no longer defines agent `{agent_id}`")
                }),
            Err(e) => Err(e.clone()),
        }
    }
}

/// An error and its causes, each said once (a cause a message already
/// quotes is not repeated).
fn causes(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let said = cause.to_string();
        if !out.contains(&said) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&said);
        }
    }
    out
}
