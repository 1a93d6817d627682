//! `weft prompts ...`: list, set and clear prompt overrides directly in a
//! store (an operator's tool: any tenant, or none for every tenant).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::json;
use weft_core::SessionId;
use weft_core::prompt::{check_template, template_version};
use weft_core::session::{
    MAX_PROMPT_PAGE, PromptCursor, PromptFilter, PromptOverride, PromptScope,
};
use weft_core::tool::Labels;
use weft_runtime::Clock as _;

/// A `weft prompts` command.
#[derive(Debug, Clone, Subcommand)]
pub enum PromptsCmd {
    /// Lists overrides, one JSON line each, by name then scope; a full page
    /// ends with a line `{"next_cursor": ...}` to pass as `--cursor`.
    List {
        /// Only overrides of this prompt.
        #[arg(long)]
        name: Option<String>,
        /// Only overrides scoped to this tenant.
        #[arg(long)]
        tenant: Option<String>,
        /// At most this many (at most 500).
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// Continue after the page that printed this cursor.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Sets (or replaces) the override of a prompt within a scope.
    Set {
        /// The prompt's name (`system` is the model planner's system prompt).
        name: String,
        /// The MiniJinja template.
        #[arg(long, conflicts_with = "file", required_unless_present = "file")]
        template: Option<String>,
        /// Read the template from this file.
        #[arg(long)]
        file: Option<PathBuf>,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Clears the override of a prompt within exactly this scope.
    Clear {
        /// The prompt's name.
        name: String,
        #[command(flatten)]
        scope: ScopeArgs,
    },
}

/// Where an override applies; every part left out means "every".
#[derive(Debug, Clone, Args)]
pub struct ScopeArgs {
    /// Only runs of this tenant.
    #[arg(long)]
    tenant: Option<String>,
    /// Only runs of this session.
    #[arg(long)]
    session: Option<String>,
    /// Only runs carrying this label (`key=value`; repeatable).
    #[arg(long = "label", value_parser = parse_label)]
    labels: Vec<(String, String)>,
}

impl ScopeArgs {
    fn scope(self) -> PromptScope {
        PromptScope {
            tenant: self.tenant.filter(|t| !t.is_empty()),
            session_id: self.session.map(SessionId::from),
            labels: self.labels.into_iter().collect::<Labels>(),
        }
    }
}

fn parse_label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!("`{s}` is not a `key=value` pair")),
    }
}

/// Runs a `weft prompts` command against the store at `db`.
pub fn run(db: &str, cmd: PromptsCmd) -> anyhow::Result<ExitCode> {
    super::async_runtime()?.block_on(async move {
        let store = weft_store::connect(db).await?;
        match cmd {
            PromptsCmd::List {
                name,
                tenant,
                limit,
                cursor,
            } => {
                let after = cursor
                    .map(|c| {
                        PromptCursor::decode(&c).context("`--cursor` is not a cursor weft printed")
                    })
                    .transpose()?;
                let filter = PromptFilter {
                    name,
                    tenant,
                    limit: Some(limit.clamp(1, MAX_PROMPT_PAGE)),
                    after,
                };
                let page = store.list_prompt_overrides(&filter).await?;
                for o in &page {
                    println!("{}", view(o));
                }
                if page.len() >= filter.page_size() as usize
                    && let Some(last) = page.last()
                {
                    let next = PromptCursor {
                        name: last.name.clone(),
                        scope: last.scope.clone(),
                    };
                    println!("{}", json!({"next_cursor": next.encode()}));
                }
            }
            PromptsCmd::Set {
                name,
                template,
                file,
                scope,
            } => {
                let template = match (template, file) {
                    (Some(t), _) => t,
                    (None, Some(path)) => std::fs::read_to_string(&path)
                        .with_context(|| format!("reading the template {}", path.display()))?,
                    (None, None) => anyhow::bail!("give `--template TEXT` or `--file PATH`"),
                };
                check_template(&name, &template)?;
                let o = PromptOverride {
                    name,
                    scope: scope.scope(),
                    template,
                    updated_at: weft_runtime::SystemClock.now(),
                };
                store.set_prompt_override(&o).await?;
                println!("{}", view(&o));
            }
            PromptsCmd::Clear { name, scope } => {
                let cleared = store.delete_prompt_override(&name, &scope.scope()).await?;
                println!("{}", json!({"name": name, "cleared": cleared}));
                if !cleared {
                    return Ok(ExitCode::from(1));
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn view(o: &PromptOverride) -> serde_json::Value {
    json!({
        "name": o.name,
        "scope": o.scope,
        "version": template_version(&o.template),
        "template": o.template,
        "updated_at": o.updated_at.as_millis(),
    })
}
