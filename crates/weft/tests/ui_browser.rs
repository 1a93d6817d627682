//! The run viewer in a real headless browser: the real `weft serve` binary
//! serves `examples/clarify.toml` (add, ask a clarification, answer), and
//! `node tests/ui/viewer.spec.mjs` drives Chromium through playwright-core
//! against it: start a run from the form, watch the timeline live, answer
//! the clarification in the form, see the run finish, then the run list's
//! filters, paging and auto-refresh.
//!
//! A second agent, `streamer`, is a model planner on a local provider
//! (`ui_browser/provider.rs`) that streams its answer word by word: the
//! browser sees the assistant text grow, and the token and cost totals
//! (at the price its agent file gives).
//!
//! A third, `coordinator` (`examples/coordinator.toml`), calls the agents
//! `researcher` and `writer` as tools: each call runs a child run, whose
//! events the browser sees nested under the call, and the writer's question
//! is answered in the coordinator's page.
//!
//! A fourth, `slow` (written below), calls a tool that takes [`SLOW_TOOL_MS`],
//! then asks a question: the browser sees what the run is doing and for how
//! long while it runs, each call's and wait's duration, and the run's
//! (`tests/ui/time.mjs`); the start form lists the served agents.
//!
//! Without a browser, Node.js alone runs the viewer's event-stream reader
//! (`tests/ui/sse.spec.mjs`), its totals (`tests/ui/totals.spec.mjs`) and
//! its time (`tests/ui/timing.spec.mjs`).
//!
//! Midway the script has the server killed and started again on the same
//! address and store, and the page reconnects with Last-Event-ID.
//!
//! Needs Node.js, the npm packages of `tests/ui` (`npm ci` there) and
//! Chromium (`/usr/bin/chromium`, or `WEFT_CHROMIUM`); `scripts/ui-deps.sh`
//! installs them. Without them the test says how to install them and
//! passes, unless `WEFT_REQUIRE_BROWSER=1` (as `scripts/test` sets), when
//! it fails. On success the finished run's page is saved as a screenshot
//! (as `docs/viewer.png`, the README's, with `WEFT_UPDATE_SCREENSHOT=1`); on
//! failure the script saves a screenshot in a directory it prints.

mod common;
#[path = "ui_browser/provider.rs"]
mod provider;

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::example;

/// How long a script may take, start to end (about 15 s alone; the rest is
/// headroom for a machine busy with the other tests).
const BUDGET: Duration = Duration::from_secs(90);

const TOKEN: &str = "viewer-token";

/// How long the `slow` agent's tool call takes.
const SLOW_TOOL_MS: u64 = 3000;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Kills a child process when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What is missing to run the browser test, if anything.
fn missing(chromium: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    if !repo()
        .join("tests/ui/node_modules/playwright-core")
        .is_dir()
    {
        missing.push("playwright-core (`npm ci` in tests/ui)".to_owned());
    }
    if !chromium.is_file() {
        missing.push(format!("Chromium at {}", chromium.display()));
    }
    missing
}

/// Starts `weft serve` on `addr` (`127.0.0.1:0`: a free port) with
/// `clarify`, `streamer` (on the provider at `provider`), `coordinator`
/// (with its team) and `slow`, over the store in `dir`; its address and the
/// process.
fn serve(dir: &Path, provider: &str, addr: &str) -> (String, Killed) {
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("viewer={TOKEN}\n")).unwrap();
    let streamer = dir.join("streamer.toml");
    std::fs::write(
        &streamer,
        "id = \"streamer\"\ntoolsets = [\"calc\"]\n[planner]\nkind = \"model\"\nmodel = \"openai/gpt-test\"\n\
         [planner.price]\ninput = 100\noutput = 1000\n",
    )
    .unwrap();
    // A slow tool call (the journal's, which sleeps as asked), then a
    // question, then the answer.
    let slow = dir.join("slow.toml");
    std::fs::write(
        &slow,
        format!(
            "id = \"slow\"\ntoolsets = [\"journal\"]\n[planner]\nkind = \"scripted\"\nfinalize = \"stopped\"\n\
             [[planner.turns]]\ntool_calls = [{{ name = \"journal.put\", args = {{ text = \"slow\", sleep_ms = {SLOW_TOOL_MS} }} }}]\n\
             [[planner.turns]]\nask = \"Shall I go on?\"\n[[planner.turns]]\ntext = \"Done, slowly.\"\n\
             [policy]\nmax_tool_calls = 4\ntool_timeout_ms = 20000\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("serve")
        .arg("--agent")
        .arg(example("clarify.toml"))
        .arg("--agent")
        .arg(&streamer)
        .arg("--agent")
        .arg(example("coordinator.toml"))
        .arg("--agent")
        .arg(&slow)
        .env("WEFT_JOURNAL_DIR", dir)
        .env("OPENAI_BASE_URL", provider)
        .env("OPENAI_API_KEY", "sk-test")
        .arg("--db")
        .arg(dir.join("w.db"))
        .args(["--addr", addr])
        .arg("--tokens-file")
        .arg(&tokens)
        .env_remove("WEFT_TOKENS")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = common::served_address(&mut stderr);
    // Keep draining the server's log so it never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stderr.read_to_end(&mut sink);
    });
    (format!("http://{addr}"), Killed(child))
}

/// Whether `node` runs; when not, says so (and fails under
/// `WEFT_REQUIRE_BROWSER=1`).
fn have_node() -> bool {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        let message = "the viewer's tests need Node.js (`node`)";
        assert!(
            std::env::var("WEFT_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "{message} (WEFT_REQUIRE_BROWSER=1)"
        );
        eprintln!("skipped: {message}");
    }
    node
}

/// Runs `node <script>` in `tests/ui` with `env`, at most [`BUDGET`],
/// calling `tick` every 100 ms while it runs.
fn run_node(script: &str, env: &[(&str, &std::ffi::OsStr)], out: &Path, tick: &mut dyn FnMut()) {
    let mut command = Command::new("node");
    command
        .arg(repo().join("tests/ui").join(script))
        .current_dir(repo().join("tests/ui"))
        .stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut node = Killed(command.spawn().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = node.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < BUDGET,
            "{script} took longer than {BUDGET:?}; screenshots, if any, are in {}",
            out.display()
        );
        tick();
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "{script} failed ({status}); see its output above, and screenshots, if any, in {}",
        out.display()
    );
}

#[test]
fn the_event_stream_reader_decodes_any_chunking_and_reconnects() {
    if have_node() {
        run_node("sse.spec.mjs", &[], &std::env::temp_dir(), &mut || {});
    }
}

#[test]
fn the_viewer_totals_sum_usage_and_its_cost() {
    if have_node() {
        run_node("totals.spec.mjs", &[], &std::env::temp_dir(), &mut || {});
    }
}

#[test]
fn the_viewer_times_runs_calls_and_waits() {
    if have_node() {
        run_node("timing.spec.mjs", &[], &std::env::temp_dir(), &mut || {});
    }
}

#[test]
fn the_viewer_follows_a_run_and_answers_its_clarification_in_a_browser() {
    let chromium = std::env::var_os("WEFT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !have_node() {
        return;
    }
    let missing = missing(&chromium);
    if !missing.is_empty() {
        let message = format!(
            "the browser test needs {}; install them with `bash scripts/ui-deps.sh`",
            missing.join(", ")
        );
        if std::env::var("WEFT_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("{message} (WEFT_REQUIRE_BROWSER=1)");
        }
        eprintln!("skipped: {message}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let provider = provider::start();
    let (url, server) = serve(dir.path(), &provider, "127.0.0.1:0");
    // Failure screenshots outlive the test's temporary directory.
    let out = std::env::temp_dir().join(format!("weft-ui-browser-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    // When the script asks, the server is killed and started again on the
    // same address and store: the page must reconnect by itself.
    let (restart, restarted) = (out.join("restart-server"), out.join("server-restarted"));
    let mut server = Some(server);
    let mut tick = || {
        if restart.exists() && !restarted.exists() {
            drop(server.take());
            let addr = url.trim_start_matches("http://");
            server = Some(serve(dir.path(), &provider, addr).1);
            std::fs::write(&restarted, "").unwrap();
        }
    };
    // The README's screenshot is rewritten only when asked, so a test run
    // leaves the checkout as it was.
    let screenshot = if std::env::var_os("WEFT_UPDATE_SCREENSHOT").is_some() {
        repo().join("docs/viewer.png")
    } else {
        out.join("viewer.png")
    };
    let words = provider::WORDS.join("|");
    let pause = provider::WORD_PAUSE.as_millis().to_string();
    let slow_ms = SLOW_TOOL_MS.to_string();
    let env: [(&str, &std::ffi::OsStr); 8] = [
        ("WEFT_SLOW_TOOL_MS", slow_ms.as_ref()),
        ("WEFT_STREAM_WORDS", words.as_ref()),
        ("WEFT_STREAM_PAUSE_MS", pause.as_ref()),
        ("WEFT_URL", url.as_ref()),
        ("WEFT_TOKEN", TOKEN.as_ref()),
        ("WEFT_CHROMIUM", chromium.as_os_str()),
        ("WEFT_OUT_DIR", out.as_os_str()),
        ("WEFT_SCREENSHOT", screenshot.as_os_str()),
    ];
    run_node("viewer.spec.mjs", &env, &out, &mut tick);
    assert!(
        screenshot.is_file(),
        "no screenshot at {}",
        screenshot.display()
    );
    // Kept only when something failed.
    let _ = std::fs::remove_dir_all(&out);
}
