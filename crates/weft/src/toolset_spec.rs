//! The `toolsets` entries of agent files: a built-in toolset's name, or a
//! `[[toolsets]]` table whose `type` says what it is (`type = "mcp"`: an MCP
//! server over stdio or streamable HTTP; `type = "registry"`: a toolset
//! served by providers through the Redis Streams registry; `type =
//! "agent"`: other agents, each from its own agent file, called as tools;
//! `type = "a2a"`: a remote agent over A2A; `type = "builtin"`: a built-in one).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use weft_mcp::{McpConfig, McpToolSet, TenantScopedToolSet, Transport};
use weft_tools::{StartableToolSet, ToolSet};

use crate::builtin;

mod a2a;
mod agent;
mod oauth;

pub use a2a::A2aSpec;
pub use agent::{AgentToolSpec, AgentToolsetSpec, MAX_AGENT_TOOLS};
pub use oauth::McpOAuthSpec;

/// One entry of an agent file's `toolsets`.
#[derive(Debug, Clone)]
pub enum ToolsetSpec {
    /// A built-in toolset by name (`calc`, `text`, `journal`).
    Builtin(String),
    /// A toolset described by a table with a `type`.
    Table(ToolsetTable),
}

/// A string names a built-in toolset; a table is read by its `type`, so a
/// wrong field in it gets that table's own message.
impl<'de> Deserialize<'de> for ToolsetSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match toml::Value::deserialize(deserializer)? {
            toml::Value::String(name) => Ok(ToolsetSpec::Builtin(name)),
            table @ toml::Value::Table(_) => ToolsetTable::deserialize(table)
                .map(ToolsetSpec::Table)
                .map_err(|e| D::Error::custom(e.message())),
            other => Err(D::Error::custom(format!(
                "a toolset is a built-in toolset's name or a table with a `type`, not {}",
                other.type_str()
            ))),
        }
    }
}

/// A `[[toolsets]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolsetTable {
    /// A built-in toolset, as a table (so `[[toolsets]]` can list it too).
    Builtin {
        /// Its name.
        name: String,
    },
    /// An MCP server.
    Mcp(Box<McpSpec>),
    /// A toolset served by providers through the Redis Streams registry.
    Registry(RegistrySpec),
    /// Other agents called as tools (each call runs a child run).
    Agent(AgentToolsetSpec),
    /// A remote agent over A2A, as one tool.
    A2a(A2aSpec),
}

/// `type = "registry"`: a registry toolset.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistrySpec {
    /// The toolset's name in the registry.
    pub name: String,
    /// The gateway's base URL (`http://127.0.0.1:8790`).
    pub gateway: String,
    /// The registry's Redis.
    #[serde(default = "default_redis")]
    pub redis: String,
    /// The toolset's name in this agent (its tools are `<alias>.<tool>`).
    #[serde(default)]
    pub alias: Option<String>,
    /// The registry's key prefix in Redis.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The absolute deadline of one call, in milliseconds.
    #[serde(default)]
    pub call_timeout_ms: Option<u64>,
    /// The variable of weft's environment holding the caller token sent to
    /// the gateway (default `WEFT_REGISTRY_TOKEN`); an agent file never
    /// holds the token itself.
    #[serde(default)]
    pub token_env: Option<String>,
    /// PEM file of the CA a `rediss://` Redis's certificate must chain to.
    #[serde(default)]
    pub redis_ca_file: Option<PathBuf>,
    /// Whether `weft run` may go on without the toolset when it cannot
    /// start (with a warning); by default it stops before the first turn.
    #[serde(default)]
    pub optional: bool,
}

fn default_redis() -> String {
    "redis://127.0.0.1:6379".to_owned()
}

impl RegistrySpec {
    /// The toolset, connected to Redis and the gateway on first use.
    pub fn toolset(&self) -> Arc<dyn ToolSet> {
        let mut config = weft_registry::ExecutorConfig::new(&self.gateway, &self.name);
        config.alias = self.alias.clone();
        if let Some(ns) = &self.namespace {
            config.namespace = weft_registry::Namespace::new(ns.clone());
        }
        if let Some(ms) = self.call_timeout_ms {
            config.call_timeout = Duration::from_millis(ms);
        }
        config.token = crate::cli::registry::env_token(self.token_env.as_deref());
        let mut toolset = weft_registry::LazyRegistryToolSet::new(&self.redis, config);
        if let Some(ca) = &self.redis_ca_file {
            toolset = toolset.with_redis_ca_file(ca.clone());
        }
        Arc::new(toolset)
    }
}

/// A `type = "mcp"` toolset: give `command` (stdio) or `url` (streamable HTTP).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSpec {
    /// The toolset's name: the part before the dot in its tools' names.
    pub name: String,
    /// The server program, for a stdio server.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it. A stdio server never inherits
    /// weft's environment (it holds tokens and keys): it gets these, a few
    /// a program needs (`PATH`, `HOME`, the locale, ...) and `inherit_env`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of variables of weft's environment to pass on to the server.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// Its working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The endpoint, for a streamable HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Put before every tool name of the server.
    #[serde(default)]
    pub prefix: Option<String>,
    /// How long starting may take, in milliseconds.
    #[serde(default)]
    pub start_timeout_ms: Option<u64>,
    /// How long one call may take, in milliseconds.
    #[serde(default)]
    pub call_timeout_ms: Option<u64>,
    /// OAuth 2.1 for a streamable HTTP server that asks for it (`[toolsets.oauth]`).
    #[serde(default)]
    pub oauth: Option<McpOAuthSpec>,
    /// Whether `weft run` may go on without the server when it cannot
    /// start (with a warning); by default it stops before the first turn.
    #[serde(default)]
    pub optional: bool,
}

impl ToolsetSpec {
    /// The toolset's name.
    pub fn name(&self) -> &str {
        match self {
            ToolsetSpec::Builtin(name) | ToolsetSpec::Table(ToolsetTable::Builtin { name }) => name,
            ToolsetSpec::Table(ToolsetTable::Mcp(m)) => &m.name,
            ToolsetSpec::Table(ToolsetTable::Registry(r)) => r.alias.as_deref().unwrap_or(&r.name),
            ToolsetSpec::Table(ToolsetTable::Agent(a)) => &a.name,
            ToolsetSpec::Table(ToolsetTable::A2a(a)) => &a.name,
        }
    }

    /// What the toolset is, for messages.
    pub fn describe(&self) -> String {
        match self {
            ToolsetSpec::Builtin(name) | ToolsetSpec::Table(ToolsetTable::Builtin { name }) => {
                format!("built-in `{name}`")
            }
            ToolsetSpec::Table(ToolsetTable::Mcp(m)) => match m.transport() {
                Ok(t) => format!("MCP server {}", t.describe()),
                Err(_) => "MCP server".to_owned(),
            },
            ToolsetSpec::Table(ToolsetTable::Registry(r)) => {
                format!("registry toolset `{}` at {}", r.name, r.gateway)
            }
            ToolsetSpec::Table(ToolsetTable::Agent(a)) => format!("agent toolset `{}`", a.name),
            ToolsetSpec::Table(ToolsetTable::A2a(a)) => format!("A2A agent at {}", a.url),
        }
    }

    /// What kind of toolset it is, for messages: `builtin`, `mcp`,
    /// `registry`, `agent` or `a2a`.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolsetSpec::Builtin(_) | ToolsetSpec::Table(ToolsetTable::Builtin { .. }) => "builtin",
            ToolsetSpec::Table(ToolsetTable::Mcp(_)) => "mcp",
            ToolsetSpec::Table(ToolsetTable::Registry(_)) => "registry",
            ToolsetSpec::Table(ToolsetTable::Agent(_)) => "agent",
            ToolsetSpec::Table(ToolsetTable::A2a(_)) => "a2a",
        }
    }

    /// Whether the file lets `weft run` go on without the toolset when it
    /// cannot start (`optional = true`).
    pub fn optional(&self) -> bool {
        match self {
            ToolsetSpec::Table(ToolsetTable::Mcp(m)) => m.optional,
            ToolsetSpec::Table(ToolsetTable::Registry(r)) => r.optional,
            ToolsetSpec::Table(ToolsetTable::A2a(a)) => a.optional,
            _ => false,
        }
    }

    /// Checks what parsing cannot; the message says what is wrong.
    pub fn check(&self) -> Result<(), String> {
        match self {
            ToolsetSpec::Builtin(name) | ToolsetSpec::Table(ToolsetTable::Builtin { name }) => {
                match builtin::by_name(name) {
                    Some(_) => Ok(()),
                    None => Err(format!(
                        "unknown toolset `{name}` (built-in toolsets: {})",
                        builtin::NAMES.join(", ")
                    )),
                }
            }
            ToolsetSpec::Table(ToolsetTable::Mcp(m)) => {
                if m.name.is_empty() || m.name.contains('.') {
                    return Err(format!(
                        "MCP toolset name `{}` must be non-empty and without dots",
                        m.name
                    ));
                }
                if m.oauth.is_some() && m.url.is_none() {
                    return Err(format!(
                        "MCP toolset `{}`: `oauth` needs a streamable HTTP `url`",
                        m.name
                    ));
                }
                m.config().map(drop)
            }
            ToolsetSpec::Table(ToolsetTable::Registry(r)) => {
                if r.name.trim().is_empty() || !r.gateway.starts_with("http") {
                    return Err(format!(
                        "registry toolset `{}` needs a `name` and an http(s) `gateway` URL",
                        r.name
                    ));
                }
                Ok(())
            }
            ToolsetSpec::Table(ToolsetTable::Agent(a)) => a.check(),
            ToolsetSpec::Table(ToolsetTable::A2a(a)) => a.check(),
        }
    }

    /// The toolset. MCP servers start lazily, on first use.
    pub fn build(&self) -> Option<Arc<dyn ToolSet>> {
        match self {
            ToolsetSpec::Builtin(name) | ToolsetSpec::Table(ToolsetTable::Builtin { name }) => {
                builtin::by_name(name)
            }
            // An OAuth server: one identity per tenant.
            ToolsetSpec::Table(ToolsetTable::Mcp(m)) => match &m.oauth {
                Some(oauth) => {
                    let mut set = TenantScopedToolSet::new(m.config().ok()?);
                    if let Some(max) = oauth.max_tenants {
                        set = set.with_max_tenants(max);
                    }
                    Some(Arc::new(StartableToolSet::new(set)))
                }
                None => Some(Arc::new(StartableToolSet::new(McpToolSet::new(
                    m.config().ok()?,
                )))),
            },
            ToolsetSpec::Table(ToolsetTable::Registry(r)) => Some(r.toolset()),
            ToolsetSpec::Table(ToolsetTable::Agent(a)) => Some(Arc::new(a.toolset())),
            ToolsetSpec::Table(ToolsetTable::A2a(a)) => Some(a.toolset()),
        }
    }
}

impl McpSpec {
    fn transport(&self) -> Result<Transport, String> {
        match (&self.command, &self.url) {
            (Some(command), None) => Ok(Transport::Stdio {
                command: command.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                inherit_env: self.inherit_env.clone(),
                cwd: self.cwd.clone(),
            }),
            (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(Transport::Http {
                    url: url.clone(),
                    headers: self.headers.clone(),
                })
            }
            (None, Some(_)) => Err(format!(
                "MCP toolset `{}`: `url` must be an http:// or https:// URL",
                self.name
            )),
            _ => Err(format!(
                "MCP toolset `{}`: give exactly one of `command` (stdio) or `url` (streamable HTTP)",
                self.name
            )),
        }
    }

    /// The client configuration.
    pub fn config(&self) -> Result<McpConfig, String> {
        let mut config = McpConfig::new(self.name.clone(), self.transport()?);
        config.prefix = self.prefix.clone();
        if let Some(ms) = self.start_timeout_ms {
            config.start_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.call_timeout_ms {
            config.call_timeout = Duration::from_millis(ms);
        }
        if let Some(oauth) = &self.oauth {
            let oauth = oauth.config();
            config.oauth = Some(oauth.map_err(|e| format!("MCP toolset `{}`: {e}", self.name))?);
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests;
