//! `weft serve` observed from outside, through the real binary: its GenAI
//! traces reach an OTLP/HTTP receiver started here (protobuf, decoded with
//! opentelemetry-proto), and its `GET /metrics` exposition counts the run.
//!
//! The agent's model is a local server speaking OpenAI's chat completions
//! stream: it asks for `calc.add`, then answers. It records the
//! `traceparent` of each request, which must name the `chat` span of that
//! call. (The waits on a human are in `telemetry_awaits.rs`.)

mod common;
#[path = "telemetry/harness.rs"]
mod harness;

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use axum::http::header;
use harness::{
    Received, TENANT_TOKEN, assert_no_bridge_attributes, attr, hex, interrupt, model_server,
    otlp_receiver, serve, strings, wait_for_spans,
};
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{Value, json};

const METRICS_TOKEN: &str = "scrape-token";

/// Starts `weft serve` on the calculator agent (on the model at
/// `model_url`), over a store in `dir`; returns it and its address.
fn start_server(dir: &std::path::Path, model_url: &str, otlp_url: &str) -> (Child, String) {
    let agent = dir.join("agent.toml");
    std::fs::write(
        &agent,
        "id = \"calculator\"\ninstructions = \"Add with the tools.\"\ntoolsets = [\"calc\"]\n\
         [planner]\nkind = \"model\"\nmodel = \"openai/gpt-test\"\n",
    )
    .unwrap();
    let base_url = format!("{model_url}/v1");
    serve(
        dir,
        &agent,
        otlp_url,
        &[
            ("WEFT_METRICS_TOKEN", METRICS_TOKEN),
            ("OPENAI_BASE_URL", &base_url),
            ("OPENAI_API_KEY", "sk-test"),
        ],
    )
}

/// Starts a run and waits until it completed; returns its id.
async fn complete_a_run(http: &reqwest::Client, addr: &str) -> String {
    let started: Value = http
        .post(format!("http://{addr}/v1/runs"))
        .bearer_auth(TENANT_TOKEN)
        .json(&json!({"agent": "calculator", "input": "What is 2 + 3?"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view: Value = http
            .get(format!("http://{addr}/v1/runs/{run_id}"))
            .bearer_auth(TENANT_TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if view["status"] == "completed" {
            return run_id;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not complete: {view}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One exposition sample: its name with labels, and its value.
fn samples(text: &str) -> Vec<(String, f64)> {
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.pop(), Some("# EOF"), "the exposition ends with # EOF");
    lines
        .into_iter()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("no value: {l}"));
            let name_end = series.find('{').unwrap_or(series.len());
            let name = &series[..name_end];
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "bad metric name in {l}"
            );
            if name_end < series.len() {
                assert!(series.ends_with('}'), "unclosed labels in {l}");
            }
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {l}"));
            (series.to_owned(), value)
        })
        .collect()
}

fn sample(samples: &[(String, f64)], series: &str) -> f64 {
    samples
        .iter()
        .find(|(s, _)| s == series)
        .unwrap_or_else(|| panic!("no sample {series} in {samples:?}"))
        .1
}

async fn check_metrics(http: &reqwest::Client, addr: &str) {
    let url = format!("http://{addr}/metrics");
    let anonymous = http.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let tenant = http
        .get(&url)
        .bearer_auth(TENANT_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(tenant.status(), 401, "a tenant token does not read metrics");
    let scraped = http
        .get(&url)
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    assert!(
        scraped.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let s = samples(&scraped.text().await.unwrap());
    assert_eq!(
        sample(&s, r#"weft_runs_started_total{agent="calculator"}"#),
        1.0
    );
    assert_eq!(
        sample(
            &s,
            r#"weft_runs_finished_total{agent="calculator",outcome="completed"}"#
        ),
        1.0
    );
    assert_eq!(sample(&s, r#"weft_run_steps_total{step="plan"}"#), 2.0);
    assert_eq!(
        sample(&s, r#"weft_run_steps_total{step="execute_tools"}"#),
        1.0
    );
    assert_eq!(
        sample(
            &s,
            r#"weft_tool_call_duration_seconds_count{tool="calc.add",outcome="ok"}"#
        ),
        1.0
    );
    assert_eq!(
        sample(
            &s,
            r#"weft_model_tokens_total{model="openai/gpt-test",type="input"}"#
        ),
        80.0
    );
    assert_eq!(
        sample(
            &s,
            r#"weft_model_tokens_total{model="openai/gpt-test",type="output"}"#
        ),
        18.0
    );
    // The plan with its call, then the answer: the call's result is
    // committed with the answer's plan, or on its own when that plan takes
    // longer than a flush interval.
    assert!(sample(&s, "weft_store_commit_duration_seconds_count") >= 2.0);
    assert!(sample(&s, "weft_store_commit_events_sum") >= 5.0);
    assert_eq!(sample(&s, "weft_event_streams_open"), 0.0);
}

/// Waits until the receiver holds the run's spans (three GenAI spans and the agent's).
async fn wait_for_run_spans(received: &Received) -> Vec<Span> {
    wait_for_spans(received, |spans| {
        spans.iter().filter(|s| s.name.starts_with("chat ")).count() >= 2
            && spans.iter().any(|s| s.name.starts_with("invoke_agent "))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_exports_genai_traces_and_counts_the_run() {
    let (otlp, received) = otlp_receiver().await;
    let (model, traceparents) = model_server().await;
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = start_server(dir.path(), &model, &otlp);
    let http = reqwest::Client::new();
    let run_id = complete_a_run(&http, &addr).await;
    check_metrics(&http, &addr).await;
    tokio::task::spawn_blocking(move || interrupt(child))
        .await
        .unwrap();
    let spans = wait_for_run_spans(&received).await;

    // Only GenAI spans are exported, not the log spans.
    for s in &spans {
        assert!(
            ["invoke_agent ", "chat ", "execute_tool "]
                .iter()
                .any(|p| s.name.starts_with(p)),
            "unexpected span {}",
            s.name
        );
    }
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let invoke = named("invoke_agent calculator");
    assert_eq!(invoke.len(), 1, "one driver task");
    let invoke = invoke[0];
    assert_eq!(
        attr(invoke, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        attr(invoke, "gen_ai.agent.name").as_deref(),
        Some("calculator")
    );
    assert_eq!(
        attr(invoke, "weft.run.id").as_deref(),
        Some(run_id.as_str())
    );
    assert_eq!(
        attr(invoke, "weft.run.outcome").as_deref(),
        Some("completed")
    );

    let chats = named("chat gpt-test");
    assert_eq!(chats.len(), 2, "two model calls");
    let mut reasons = Vec::new();
    for chat in &chats {
        assert_eq!(chat.trace_id, invoke.trace_id);
        assert_eq!(
            chat.parent_span_id, invoke.span_id,
            "chat is a child of invoke_agent"
        );
        assert_eq!(chat.kind, 3, "a client span");
        assert_eq!(attr(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(
            attr(chat, "gen_ai.provider.name").as_deref(),
            Some("openai")
        );
        assert_eq!(
            attr(chat, "gen_ai.request.model").as_deref(),
            Some("gpt-test")
        );
        assert_eq!(
            attr(chat, "gen_ai.usage.input_tokens").as_deref(),
            Some("40")
        );
        assert_eq!(
            attr(chat, "gen_ai.usage.output_tokens").as_deref(),
            Some("9")
        );
        assert_eq!(
            attr(chat, "gen_ai.input.messages"),
            None,
            "content is opt-in"
        );
        reasons.extend(strings(chat, "gen_ai.response.finish_reasons").expect("an array"));
    }
    reasons.sort();
    assert_eq!(reasons, ["stop", "tool_calls"]);
    assert_no_bridge_attributes(&spans);

    let tools = named("execute_tool calc.add");
    assert_eq!(tools.len(), 1);
    let tool = tools[0];
    assert_eq!(tool.trace_id, invoke.trace_id);
    assert_eq!(
        tool.parent_span_id, invoke.span_id,
        "execute_tool is a child of invoke_agent"
    );
    assert_eq!(
        attr(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attr(tool, "gen_ai.tool.name").as_deref(), Some("calc.add"));
    assert_eq!(attr(tool, "gen_ai.tool.call.id").as_deref(), Some("call_1"));
    assert_eq!(
        attr(tool, "gen_ai.tool.call.arguments"),
        None,
        "content is opt-in"
    );

    // Each model request carried the context of its own chat span.
    let mut sent: Vec<String> = traceparents
        .lock()
        .unwrap()
        .iter()
        .map(|t| {
            t.clone()
                .expect("every model request carries a traceparent")
        })
        .collect();
    let mut expected: Vec<String> = chats
        .iter()
        .map(|c| format!("00-{}-{}-01", hex(&c.trace_id), hex(&c.span_id)))
        .collect();
    sent.sort();
    expected.sort();
    assert_eq!(sent, expected);
}

/// `weft run` on the test model at `model`, with `env` set and any
/// `OTEL_EXPORTER_OTLP_ENDPOINT` of the test's own environment removed;
/// fails the test unless it succeeds.
async fn run_on_model(model: &str, env: Vec<(&'static str, String)>) {
    let model = model.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .args([
                "run",
                "--output",
                "jsonl",
                "--model",
                "openai/gpt-test",
                "What is 2 + 3?",
            ])
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env("OPENAI_BASE_URL", format!("{model}/v1"))
            .env("OPENAI_API_KEY", "sk-test")
            .envs(env)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn run_flushes_its_traces_on_exit() {
    let (otlp, received) = otlp_receiver().await;
    let (model, traceparents) = model_server().await;
    run_on_model(
        &model,
        vec![(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{otlp}/v1/traces"),
        )],
    )
    .await;
    // The default batch delay is 5 s; the spans are there at exit all the same.
    let spans = received.lock().unwrap().clone();
    let invoke = spans
        .iter()
        .find(|s| s.name == "invoke_agent assistant")
        .unwrap_or_else(|| panic!("no invoke_agent span in {spans:?}"));
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat gpt-test").collect();
    assert_eq!(chats.len(), 2);
    assert!(chats.iter().all(|c| c.parent_span_id == invoke.span_id));
    let sent = traceparents.lock().unwrap().clone();
    assert_eq!(sent.len(), 2);
    for (header, chat) in sent.iter().zip(&chats) {
        let header = header.as_deref().expect("a traceparent");
        assert!(
            header.starts_with(&format!("00-{}-", hex(&invoke.trace_id))),
            "{header}"
        );
        assert!(
            chats.iter().any(|c| header.contains(&hex(&c.span_id))),
            "{header} names no chat span"
        );
        assert_eq!(chat.trace_id, invoke.trace_id);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn message_content_is_exported_only_when_opted_in() {
    let (otlp, received) = otlp_receiver().await;
    let (model, _) = model_server().await;
    run_on_model(
        &model,
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp),
            (
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                "true".to_owned(),
            ),
        ],
    )
    .await;
    let spans = received.lock().unwrap().clone();
    let first_chat = spans
        .iter()
        .filter(|s| s.name == "chat gpt-test")
        .min_by_key(|s| s.start_time_unix_nano)
        .expect("a chat span");
    let input = attr(first_chat, "gen_ai.input.messages").expect("the prompt, opted in");
    assert!(input.contains("What is 2 + 3?"), "{input}");
    let output = attr(first_chat, "gen_ai.output.messages").expect("the answer, opted in");
    assert!(output.contains("call_1"), "{output}");
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool calc.add")
        .expect("the tool span");
    assert_eq!(
        attr(tool, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"a":2,"b":3}"#)
    );
    let result = attr(tool, "gen_ai.tool.call.result").expect("the result, opted in");
    assert!(result.contains('5'), "{result}");
}
