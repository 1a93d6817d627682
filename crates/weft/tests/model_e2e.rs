//! End to end through the real binary: `weft run --model <provider>/<m>` drives
//! a two-tool agent (calc.add, then calc.multiply, then an answer) against a
//! local server speaking each provider's streaming wire format, and the run's
//! event stream is checked: argument deltas, tool start and finish, text
//! chunks, usage, and the final answer.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::{Response, header};
use axum::routing::post;
use serde_json::{Value, json};

/// One scripted model turn.
enum Turn {
    Call {
        id: &'static str,
        name: &'static str,
        args: [&'static str; 2],
    },
    Text([&'static str; 2]),
}

const TURNS: [Turn; 3] = [
    Turn::Call {
        id: "call_1",
        name: "calc__add",
        args: ["{\"a\":2,", "\"b\":3}"],
    },
    Turn::Call {
        id: "call_2",
        name: "calc__multiply",
        args: ["{\"a\":5,", "\"b\":7}"],
    },
    Turn::Text(["(2 + 3) * 7", " = 35"]),
];

fn sse(events: &[(Option<&str>, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(n) = name {
            out.push_str(&format!("event: {n}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}

fn chat(turn: &Turn) -> String {
    let chunk = |delta: Value, finish: Value| {
        (
            None,
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut ev = Vec::new();
    match turn {
        Turn::Call { id, name, args } => {
            ev.push(chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            for a in args {
                ev.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}),
                    Value::Null,
                ));
            }
            ev.push(chunk(json!({}), json!("tool_calls")));
        }
        Turn::Text(parts) => {
            ev.push(chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
            ));
            for p in parts {
                ev.push(chunk(json!({"content": p}), Value::Null));
            }
            ev.push(chunk(json!({}), json!("stop")));
        }
    }
    ev.push((None, json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}})));
    let mut body = sse(&ev);
    body.push_str("data: [DONE]\n\n");
    body
}

fn anthropic(turn: &Turn) -> String {
    let mut ev = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "model": "m", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 40, "output_tokens": 1}}}),
    )];
    let stop = match turn {
        Turn::Call { id, name, args } => {
            ev.push((
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ));
            ev.push((Some("ping"), json!({"type": "ping"})));
            for a in args {
                ev.push((
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": a}}),
                ));
            }
            "tool_use"
        }
        Turn::Text(parts) => {
            ev.push((
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ));
            for p in parts {
                ev.push((
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": p}}),
                ));
            }
            "end_turn"
        }
    };
    ev.push((
        Some("content_block_stop"),
        json!({"type": "content_block_stop", "index": 0}),
    ));
    ev.push((
        Some("message_delta"),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": 9}}),
    ));
    ev.push((Some("message_stop"), json!({"type": "message_stop"})));
    sse(&ev)
}

fn responses(turn: &Turn) -> String {
    let mut seq = 0;
    let mut ev: Vec<(Option<&str>, Value)> = Vec::new();
    let mut push = |name: &'static str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        ev.push((Some(name), data));
    };
    push(
        "response.created",
        json!({"response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": [], "usage": null}}),
    );
    let item = match turn {
        Turn::Call { id, name, args } => {
            let full = args.concat();
            push(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"id": "fc_1", "type": "function_call",
                "status": "in_progress", "arguments": "", "call_id": id, "name": name}}),
            );
            for a in args {
                push(
                    "response.function_call_arguments.delta",
                    json!({"item_id": "fc_1", "output_index": 0, "delta": a}),
                );
            }
            push(
                "response.function_call_arguments.done",
                json!({"item_id": "fc_1", "output_index": 0, "arguments": full}),
            );
            json!({"id": "fc_1", "type": "function_call", "status": "completed", "arguments": full, "call_id": id, "name": name})
        }
        Turn::Text(parts) => {
            let full = parts.concat();
            push(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"id": "msg_1", "type": "message",
                "status": "in_progress", "content": [], "role": "assistant"}}),
            );
            push(
                "response.content_part.added",
                json!({"item_id": "msg_1", "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "annotations": [], "text": ""}}),
            );
            for p in parts {
                push(
                    "response.output_text.delta",
                    json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": p}),
                );
            }
            push(
                "response.output_text.done",
                json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "text": full}),
            );
            push(
                "response.content_part.done",
                json!({"item_id": "msg_1", "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "annotations": [], "text": full}}),
            );
            json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": full}]})
        }
    };
    push(
        "response.output_item.done",
        json!({"output_index": 0, "item": item.clone()}),
    );
    push(
        "response.completed",
        json!({"response": {"id": "resp_1", "object": "response", "status": "completed",
        "output": [item], "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}}}),
    );
    sse(&ev)
}

/// Serves turn n of the script to the n-th request; returns the base address.
async fn serve(path: &'static str, body: fn(&Turn) -> String) -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let app = Router::new().route(
        path,
        post(move || {
            let c = c.clone();
            async move {
                let n = c.fetch_add(1, Ordering::SeqCst).min(TURNS.len() - 1);
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from(body(&TURNS[n])))
                    .unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), count)
}

async fn run_weft(model: &str, env: Vec<(&'static str, String)>) -> Vec<Value> {
    let model = model.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        let agent = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/calculator.toml"
        );
        std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
            .args([
                "run",
                "--output",
                "jsonl",
                "--model",
                &model,
                agent,
                "What is (2 + 3) * 7?",
            ])
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .envs(env)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    common::output_json_lines(out)
}

fn check(lines: &[Value]) {
    let of = |t: &str| lines.iter().filter(|l| l["type"] == t).collect::<Vec<_>>();
    let deltas: String = of("tool_call_args_delta")
        .iter()
        .map(|l| l["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "{\"a\":2,\"b\":3}{\"a\":5,\"b\":7}");
    assert!(
        of("tool_call_args_delta")
            .iter()
            .all(|l| l["tool"] == "calc.add" || l["tool"] == "calc.multiply")
    );
    let started: Vec<&str> = of("tool_started")
        .iter()
        .map(|l| l["tool"].as_str().unwrap())
        .collect();
    assert_eq!(started, vec!["calc.add", "calc.multiply"]);
    let results: Vec<&Value> = of("tool_finished")
        .iter()
        .map(|l| &l["output"]["result"]["value"])
        .collect();
    assert_eq!(results, vec![&json!(5), &json!(35)]);
    let text: String = of("assistant_chunk")
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "(2 + 3) * 7 = 35");
    // Usage events are changes: summed, they give each of the three model
    // calls' 40 input and 9 output tokens once.
    let sum = |field: &str| -> u64 {
        of("usage")
            .iter()
            .map(|l| l["usage"][field].as_u64().unwrap())
            .sum()
    };
    assert_eq!((sum("input_tokens"), sum("output_tokens")), (120, 27));
    let seqs: Vec<u64> = lines.iter().filter_map(|l| l["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let outcome = &lines.last().unwrap()["outcome"];
    assert_eq!(outcome["kind"], "response");
    assert_eq!(outcome["message"]["parts"][0]["text"], "(2 + 3) * 7 = 35");
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_chat_completions() {
    let (base, count) = serve("/v1/chat/completions", chat).await;
    let lines = run_weft(
        "openai/gpt-test",
        vec![
            ("OPENAI_BASE_URL", format!("{base}/v1")),
            ("OPENAI_API_KEY", "sk-test".into()),
        ],
    )
    .await;
    check(&lines);
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_messages() {
    let (base, count) = serve("/v1/messages", anthropic).await;
    let lines = run_weft(
        "anthropic/claude-test",
        vec![
            ("ANTHROPIC_BASE_URL", base),
            ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
        ],
    )
    .await;
    check(&lines);
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_responses() {
    let (base, count) = serve("/v1/responses", responses).await;
    let lines = run_weft(
        "openai-responses/gpt-test",
        vec![
            ("OPENAI_BASE_URL", format!("{base}/v1")),
            ("OPENAI_API_KEY", "sk-test".into()),
        ],
    )
    .await;
    check(&lines);
    assert_eq!(count.load(Ordering::SeqCst), 3);
}
