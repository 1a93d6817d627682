//! An agent file and the agents its `type = "agent"` toolsets call, read
//! from their own files: what `weft run` and `weft serve` register together.

use std::path::Path;

use weft_runtime::Agent;

use super::AgentFile;

/// Most agents one agent file may bring in through its agent toolsets,
/// itself included, however deep.
pub const MAX_TEAM: usize = 64;

/// The agent of the file at `path` first (its planner asking `model` when
/// given), then every agent its `type = "agent"` toolsets call, read from
/// their own files (paths relative to the file naming them), each once.
pub fn load_team(path: &Path, model: Option<&str>) -> anyhow::Result<Vec<Agent>> {
    let mut agents = Vec::new();
    for (i, file) in team_files(path)?.iter().enumerate() {
        let model = if i == 0 { model } else { None };
        agents.push(file.agent(file.planner(model)?)?);
    }
    Ok(agents)
}

/// The files of [`load_team`]'s agents, in the same order.
pub fn team_files(path: &Path) -> anyhow::Result<Vec<AgentFile>> {
    use anyhow::Context as _;
    let root = AgentFile::load(path)?;
    let mut files = vec![root.clone()];
    let mut ids = vec![(root.id.clone(), path.to_path_buf())];
    let mut queue = vec![(root, path.to_path_buf())];
    while let Some((file, at)) = queue.pop() {
        let dir = at.parent().map(Path::to_path_buf).unwrap_or_default();
        for spec in &file.toolsets {
            let crate::toolset_spec::ToolsetSpec::Table(crate::toolset_spec::ToolsetTable::Agent(
                set,
            )) = spec
            else {
                continue;
            };
            for member in &set.agents {
                let member_path = dir.join(&member.file);
                if let Some((_, known)) = ids.iter().find(|(id, _)| id == &member.id) {
                    let same = known.canonicalize().ok() == member_path.canonicalize().ok();
                    anyhow::ensure!(
                        same,
                        "agent `{}` is read from both {} and {}",
                        member.id,
                        known.display(),
                        member_path.display()
                    );
                    continue;
                }
                anyhow::ensure!(
                    ids.len() < MAX_TEAM,
                    "{} brings in more than {MAX_TEAM} agents",
                    path.display()
                );
                let child = AgentFile::load(&member_path).with_context(|| {
                    format!(
                        "agent `{}` of toolset `{}` in {}",
                        member.id,
                        set.name,
                        at.display()
                    )
                })?;
                anyhow::ensure!(
                    child.id == member.id,
                    "{} defines agent `{}`, but toolset `{}` in {} calls it `{}`",
                    member_path.display(),
                    child.id,
                    set.name,
                    at.display(),
                    member.id
                );
                files.push(child.clone());
                ids.push((child.id.clone(), member_path.clone()));
                queue.push((child, member_path));
            }
        }
    }
    Ok(files)
}
