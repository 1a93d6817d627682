//! `weft bench mcp`: the per-call cost of weft's MCP client toolset over
//! stdio against the same server called directly with rmcp's client, in the
//! same run. The server is `weft mcp serve --expose-toolsets` on an agent
//! with the built-in `calc` toolset; each sample is one `calc.add` call.
//! Both clients are open at once and take turns, a block of calls each.
//! Prints one JSON line per client and one with the ratios.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use weft_core::ids::{RunId, SessionId, ToolCallId, TurnId};
use weft_core::tool::{ToolIdent, ToolRequest};
use weft_mcp::{McpConfig, McpToolSet, Transport};
use weft_tools::{StartableToolSet, ToolSet};

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Measured calls per client.
    pub calls: usize,
    /// Unmeasured calls first, per client.
    pub warmup: usize,
}

const AGENT: &str =
    "id = \"bench\"\ntoolsets = [\"calc\"]\n[planner]\nkind = \"scripted\"\nturns = []\n";

/// Runs the benchmark; returns its JSON lines.
pub fn run(settings: Settings) -> anyhow::Result<Vec<Value>> {
    let dir = tempfile::tempdir().context("a temporary directory")?;
    let agent = dir.path().join("bench.toml");
    std::fs::write(&agent, AGENT).context("writing the bench agent")?;
    let exe = std::env::current_exe().context("finding the weft binary")?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(async move {
        // Both clients stay open and take turns, a block of calls each, so
        // drift in the machine's load falls on both alike.
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.args(args(&agent));
        let client = ().serve(TokioChildProcess::new(cmd)?).await?;
        let config = McpConfig::new(
            "remote",
            Transport::stdio(exe.display().to_string(), args(&agent)),
        );
        let set = StartableToolSet::new(McpToolSet::new(config));
        let (mut direct, mut weft) = (Vec::new(), Vec::new());
        let total = settings.warmup + settings.calls;
        let mut i = 0;
        while i < total {
            let block = BLOCK.min(total - i);
            for j in i..i + block {
                let took = direct_call(&client, j).await?;
                if j >= settings.warmup {
                    direct.push(took);
                }
            }
            for j in i..i + block {
                let took = weft_call(&set, j).await?;
                if j >= settings.warmup {
                    weft.push(took);
                }
            }
            i += block;
        }
        client.cancel().await?;
        set.stop().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let (d, w) = (
            summary("rmcp_direct", &direct),
            summary("weft_toolset", &weft),
        );
        let ratio = |k: &str| {
            let (a, b) = (w[k].as_f64().unwrap_or(0.0), d[k].as_f64().unwrap_or(0.0));
            if b > 0.0 { a / b } else { 0.0 }
        };
        let ratios = json!({
            "bench": "mcp",
            "what": "weft_over_direct",
            "p50_ratio": ratio("p50_us"),
            "p99_ratio": ratio("p99_us"),
        });
        Ok(vec![d, w, ratios])
    })
}

/// Calls per client before the other takes its turn.
const BLOCK: usize = 100;

fn args(agent: &Path) -> Vec<String> {
    vec![
        "mcp".into(),
        "serve".into(),
        "--expose-toolsets".into(),
        agent.display().to_string(),
    ]
}

fn add_args(i: usize) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("a".into(), json!(i));
    m.insert("b".into(), json!(1));
    m
}

/// One call with rmcp's client; how long it took.
async fn direct_call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    i: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    client
        .call_tool(CallToolRequestParams::new("calc.add").with_arguments(add_args(i)))
        .await?;
    Ok(started.elapsed())
}

/// One call through weft's toolset; how long it took.
async fn weft_call(set: &StartableToolSet<McpToolSet>, i: usize) -> anyhow::Result<Duration> {
    let request = ToolRequest {
        // The server's tool is `calc.add`; the client toolset is `remote`.
        name: ToolIdent::from_parts("remote", "calc.add"),
        payload: Value::Object(add_args(i)).into(),
        run_id: RunId::new("bench"),
        session_id: SessionId::new("bench"),
        turn_id: TurnId::new("bench"),
        tool_call_id: ToolCallId::new("bench"),
        parent_tool_call_id: None,
        labels: Default::default(),
        output: Default::default(),
        elicit: Default::default(),
        children: Default::default(),
    };
    let started = Instant::now();
    set.call_tool(request)
        .await
        .map_err(|f| anyhow::anyhow!("{}", f.error))?;
    Ok(started.elapsed())
}

fn summary(client: &str, samples: &[Duration]) -> Value {
    let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        let i = ((us.len() as f64 - 1.0) * q).round() as usize;
        us.get(i).copied().unwrap_or(0.0)
    };
    json!({
        "bench": "mcp",
        "client": client,
        "transport": "stdio",
        "calls": us.len(),
        "p50_us": pick(0.50),
        "p99_us": pick(0.99),
    })
}
