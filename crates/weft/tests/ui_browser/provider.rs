//! A slow model provider for the viewer's browser test: a local HTTP server
//! speaking OpenAI's streaming Chat Completions, which answers the first
//! request of each pair with a `calc.add` call and the second with text
//! sent word by word, [`WORD_PAUSE`] apart, so a browser watching the run
//! sees the text grow.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// Between two streamed pieces of the answer.
pub const WORD_PAUSE: Duration = Duration::from_millis(700);

/// The answer's pieces, in order.
pub const WORDS: [&str; 4] = ["Streaming ", "the answer ", "word ", "by word."];

/// Starts the provider; its base URL (`http://127.0.0.1:<port>/v1`).
pub fn start() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let count = count.clone();
            std::thread::spawn(move || answer(stream, count.fetch_add(1, Ordering::SeqCst)));
        }
    });
    format!("http://{addr}/v1")
}

fn chunk(delta: Value, finish: Value) -> String {
    let body = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

fn usage() -> String {
    let body = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}});
    format!("data: {body}\n\ndata: [DONE]\n\n")
}

/// Reads one request and streams request `n`'s answer, then closes.
fn answer(stream: TcpStream, n: usize) {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let mut out = reader.into_inner();
    let mut send = |text: &str| {
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_ok()
    };
    if !send("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n") {
        return;
    }
    let mut frames = Vec::new();
    let calls = n.is_multiple_of(2);
    if calls {
        frames.push(chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": format!("call_{n}"),
                "type": "function", "function": {"name": "calc__add", "arguments": ""}}]}),
            Value::Null,
        ));
        for part in ["{\"a\":20,", "\"b\":22}"] {
            frames.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                Value::Null,
            ));
        }
        frames.push(chunk(json!({}), json!("tool_calls")));
    } else {
        frames.push(chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        ));
        for word in WORDS {
            frames.push(chunk(json!({"content": word}), Value::Null));
        }
        frames.push(chunk(json!({}), json!("stop")));
    }
    frames.push(usage());
    for frame in frames {
        if !send(&frame) {
            return;
        }
        if frame.contains("\"content\":\"") && !calls {
            std::thread::sleep(WORD_PAUSE);
        }
    }
}
