//! `weft run`'s toolset check: before the first turn, the toolsets of every
//! agent the run may use are started ([`Runtime::toolset_failures`]). One
//! that cannot start stops the command with one line naming it and the
//! cause (and, with `--json`, an `{"error": ...}` line on stdout), unless
//! its agent file marks it `optional = true`: then a warning, and the run
//! goes on without its tools.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use weft_core::tool::ToolError;
use weft_runtime::{Runtime, ToolsetFailure};

use crate::agent_file::team_files;
use crate::render::OutputFormat;
use crate::toolset_spec::{RegistrySpec, ToolsetSpec, ToolsetTable};

/// How long the check waits to learn why a gateway could not be reached.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the agent files say about one toolset.
struct Declared {
    agent: String,
    spec: ToolsetSpec,
}

/// A toolset that could not start, as `weft run` tells it.
struct Failed {
    failure: ToolsetFailure,
    kind: &'static str,
    optional: bool,
    cause: String,
}

impl Failed {
    fn line(&self) -> String {
        format!(
            "toolset `{}` ({}) could not start: {}",
            self.failure.toolset, self.kind, self.cause
        )
    }
}

/// Starts the toolsets of `first` and then of the runtime's other agents
/// (read from `file` and its team, when given); fails naming every
/// required toolset that could not start, and warns about optional ones.
pub(super) async fn check(
    runtime: &Runtime,
    first: &str,
    file: Option<&Path>,
    output: OutputFormat,
) -> anyhow::Result<()> {
    let declared = declared(file);
    let mut agents = vec![first.to_owned()];
    agents.extend(
        runtime
            .agent_ids()
            .into_iter()
            .map(|id| id.as_str().to_owned())
            .filter(|id| id != first),
    );
    let mut failed = Vec::new();
    for agent in &agents {
        for failure in runtime.toolset_failures(agent).await? {
            let spec = declared
                .iter()
                .find(|d| d.agent == *agent && d.spec.name() == failure.toolset)
                .map(|d| &d.spec);
            failed.push(Failed {
                kind: spec.map_or("toolset", ToolsetSpec::kind),
                optional: spec.is_some_and(ToolsetSpec::optional),
                cause: cause(&failure.toolset, spec, &failure.error).await,
                failure,
            });
        }
    }
    let mut err = std::io::stderr().lock();
    for f in failed.iter().filter(|f| f.optional) {
        writeln!(
            err,
            "weft: warning: {} (optional: the run goes on without its tools)",
            f.line()
        )?;
    }
    let required: Vec<&Failed> = failed.iter().filter(|f| !f.optional).collect();
    if required.is_empty() {
        return Ok(());
    }
    let message = required
        .iter()
        .map(|f| f.line())
        .collect::<Vec<_>>()
        .join("; ");
    if output == OutputFormat::Jsonl {
        let toolsets: Vec<_> = required
            .iter()
            .map(|f| {
                json!({
                    "agent": f.failure.agent,
                    "toolset": f.failure.toolset,
                    "type": f.kind,
                    "cause": f.cause,
                    "error": f.failure.error,
                })
            })
            .collect();
        let line = json!({ "error": {
            "code": "toolset_unavailable",
            "message": message,
            "toolsets": toolsets,
        }});
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &line)?;
        writeln!(out)?;
    }
    anyhow::bail!("{message}")
}

/// The toolsets the agent files declare, by agent; none without a file.
fn declared(file: Option<&Path>) -> Vec<Declared> {
    let Some(files) = file.and_then(|path| team_files(path).ok()) else {
        return Vec::new();
    };
    files
        .into_iter()
        .flat_map(|f| {
            let agent = f.id.clone();
            f.toolsets.into_iter().map(move |spec| Declared {
                agent: agent.clone(),
                spec,
            })
        })
        .collect()
}

/// Why `toolset` could not start, without the wrappers' repetitions of its
/// name, and for a registry toolset in the registry's terms.
async fn cause(toolset: &str, spec: Option<&ToolsetSpec>, error: &ToolError) -> String {
    let registry = match spec {
        Some(ToolsetSpec::Table(ToolsetTable::Registry(r))) => Some(r),
        _ => None,
    };
    let mut prefixes = vec![
        format!("toolset `{toolset}` failed to start: "),
        format!("toolset `{toolset}`: "),
    ];
    if let Some(r) = registry {
        prefixes.push(format!("registry toolset `{}`: ", r.name));
    }
    let mut text = error.message.as_str();
    while let Some(rest) = prefixes.iter().find_map(|p| text.strip_prefix(p.as_str())) {
        text = rest;
    }
    match (registry, spec) {
        (Some(r), _) => registry_cause(r, text).await,
        (None, Some(ToolsetSpec::Table(ToolsetTable::Mcp(m)))) => match &m.url {
            Some(url) => http_mcp_cause(url, text).await,
            None => text.to_owned(),
        },
        _ => text.to_owned(),
    }
}

/// A streamable HTTP MCP server's start failure without the client
/// library's transport type names, and for a server that could not be
/// reached, why.
async fn http_mcp_cause(url: &str, text: &str) -> String {
    const WRAPPER: &str = "Send message error Transport [";
    let mut text = text.to_owned();
    if let Some(at) = text.find(WRAPPER)
        && let Some(len) = text[at..].find("] error: ")
    {
        text.replace_range(at..at + len + "] error: ".len(), "");
    }
    if text.contains("error sending request")
        && let Some(why) = probe(url).await
    {
        return format!("the server at {url} is unreachable: {why}");
    }
    text
}

/// A registry toolset's start failure told in the registry's terms: the
/// gateway unreachable (and why), the toolset not registered, the caller
/// token refused.
async fn registry_cause(spec: &RegistrySpec, text: &str) -> String {
    let gateway = spec.gateway.trim_end_matches('/');
    if text == format!("toolset `{}` is not registered", spec.name) {
        return format!(
            "registry toolset `{}` is not registered at the gateway {gateway}",
            spec.name
        );
    }
    if let Some(rest) = text.strip_prefix("redis: ") {
        return format!("the registry's Redis: {rest}");
    }
    // `gateway <request url>: <what went wrong>`
    let Some((_, said)) = text
        .strip_prefix("gateway ")
        .and_then(|rest| rest.split_once(": "))
    else {
        return text.to_owned();
    };
    let status = said
        .get(..3)
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit()));
    if let Some(status @ ("401" | "403")) = status {
        let var = spec
            .token_env
            .as_deref()
            .unwrap_or(crate::cli::registry::TOKEN_VAR);
        let sent = if std::env::var(var).is_ok_and(|t| !t.trim().is_empty()) {
            format!("the caller token in {var}")
        } else {
            format!("no token: {var} is not set")
        };
        return format!("the gateway at {gateway} refused the token ({status}; {sent}): {said}");
    }
    if status.is_some() {
        return format!("the gateway at {gateway} answered {said}");
    }
    match probe(gateway).await {
        Some(why) => format!("the gateway at {gateway} is unreachable: {why}"),
        None => format!("the gateway at {gateway} could not be reached: {said}"),
    }
}

/// Why a TCP connection to the host and port of `url` fails, if it does.
async fn probe(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?.to_owned();
    let port = url.port_or_known_default()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let connect = tokio::net::TcpStream::connect((host, port));
    match tokio::time::timeout(PROBE_TIMEOUT, connect).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.kind().to_string()),
        Err(_) => Some(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
    }
}
