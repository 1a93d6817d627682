//! weft's compatible-server client against llama.cpp's own OpenAI-compatible
//! server (`llama_cpp.server` from llama-cpp-python, chat format
//! `chatml-function-calling`) on the offline SmolLM2-135M weights, through
//! the real `weft` binary: streamed text, and the calculator agent through
//! a tool call to an answer in at least two turns, tokens counted.
//!
//! `scripts/llama-server-test` builds llama-cpp-python once into a cached
//! virtual environment and runs this test with `WEFT_LLAMA_CPP_PYTHON`
//! (that environment's python) and `WEFT_LLAMA_GGUF` (the weights) set;
//! without them the test says what it needs and passes, unless
//! `WEFT_REQUIRE_LLAMA_SERVER=1` (as in `scripts/test`) makes it fail.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The server process, killed when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts llama.cpp's server, or says why it cannot.
fn server() -> Option<Server> {
    let (Ok(python), Ok(gguf)) = (
        std::env::var("WEFT_LLAMA_CPP_PYTHON"),
        std::env::var("WEFT_LLAMA_GGUF"),
    ) else {
        let why = "set WEFT_LLAMA_CPP_PYTHON and WEFT_LLAMA_GGUF (scripts/llama-server-test does)";
        assert!(
            std::env::var("WEFT_REQUIRE_LLAMA_SERVER").as_deref() != Ok("1"),
            "llama.cpp's server is required: {why}"
        );
        eprintln!("skipped: {why}");
        return None;
    };
    let port = free_port();
    let child = Command::new(python)
        .args([
            "-m",
            "llama_cpp.server",
            "--model",
            &gguf,
            "--host",
            "127.0.0.1",
        ])
        .args(["--port", &port.to_string(), "--n_ctx", "2048"])
        .args([
            "--chat_format",
            "chatml-function-calling",
            "--model_alias",
            "smollm2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("llama_cpp.server starts");
    let mut server = Server {
        child,
        base: format!("http://127.0.0.1:{port}/v1"),
    };
    // Its log is long (llama.cpp prints every tensor): drained from the
    // start, so a full pipe never blocks it, and its tail kept for a failure.
    let tail = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    if let Some(stderr) = server.child.stderr.take() {
        let tail = tail.clone();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                t.push_str(&line);
                t.push('\n');
                if t.len() > 8_000 {
                    let cut = t.len() - 4_000;
                    let cut = (cut..t.len()).find(|&i| t.is_char_boundary(i)).unwrap_or(0);
                    t.drain(..cut);
                }
            }
        });
    }
    // The model loads in a second or two; allow a slow machine a minute.
    let deadline = Instant::now() + Duration::from_secs(60);
    let probe = format!("127.0.0.1:{port}");
    while std::net::TcpStream::connect(&probe).is_err() {
        let log = || tail.lock().map(|t| t.clone()).unwrap_or_default();
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("llama_cpp.server exited ({status}): {}", log());
        }
        assert!(
            Instant::now() < deadline,
            "llama_cpp.server did not listen within 60 s: {}",
            log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    Some(server)
}

fn run(agent: &str, prompt: &str) -> Vec<Value> {
    let dir =
        std::env::temp_dir().join(format!("weft-llama-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("agent.toml");
    std::fs::write(&path, agent).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--output", "jsonl"])
        .arg(&path)
        .arg(prompt)
        .output()
        .expect("weft starts");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "weft failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

fn of<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

fn tokens(lines: &[Value]) -> (u64, u64) {
    of(lines, "usage").iter().fold((0, 0), |(i, o), l| {
        (
            i + l["usage"]["input_tokens"].as_u64().unwrap_or(0),
            o + l["usage"]["output_tokens"].as_u64().unwrap_or(0),
        )
    })
}

#[test]
fn llama_cpp_server_streams_text_and_runs_a_tool_loop_to_an_answer() {
    let Some(server) = server() else { return };
    let base = &server.base;

    let chat = format!(
        "id = \"chat\"\ninstructions = \"Answer in one short sentence.\"\n\
         [planner]\nkind = \"model\"\nmodel = \"compat/smollm2\"\nbase_url = \"{base}\"\n\
         max_tokens = 32\ntemperature = 0.0\n"
    );
    let lines = run(&chat, "Say hello.");
    let chunks = of(&lines, "assistant_chunk");
    assert!(!chunks.is_empty(), "no streamed text: {lines:?}");
    let outcome = &lines.last().unwrap()["outcome"];
    assert_eq!(outcome["kind"], "response", "{outcome}");
    let (input, output) = tokens(&lines);
    assert!(
        input > 0 && output > 0,
        "tokens not counted: {input} in, {output} out"
    );

    let calculator = format!(
        "id = \"calculator\"\n\
         instructions = \"You are a calculator. For arithmetic, call a calc tool, then state the result in one short sentence.\"\n\
         toolsets = [\"calc\"]\n\
         [planner]\nkind = \"model\"\nmodel = \"compat/smollm2\"\nbase_url = \"{base}\"\n\
         max_tokens = 64\ntemperature = 0.0\ntool_choice = \"calc.add\"\n\
         [policy]\nmax_tool_calls = 3\ntime_budget_ms = 120000\n"
    );
    let lines = run(&calculator, "What is 17 + 25?");
    let finished = of(&lines, "tool_finished");
    assert!(!finished.is_empty(), "no tool ran: {lines:?}");
    assert_eq!(finished[0]["output"]["name"], "calc.add", "{}", finished[0]);
    assert_eq!(
        finished[0]["output"]["result"]["kind"], "json",
        "{}",
        finished[0]
    );
    let outcome = &lines.last().unwrap()["outcome"];
    assert_eq!(outcome["kind"], "response", "{outcome}");
    let answer = outcome["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(!answer.trim().is_empty(), "an empty answer: {outcome}");
    // At least two model calls: the tool call, then the answer.
    assert!(of(&lines, "model_output").len() >= 2, "{lines:?}");
    let (input, output) = tokens(&lines);
    assert!(
        input > 0 && output > 0,
        "tokens not counted: {input} in, {output} out"
    );
}
