//! Every provider weft supports, through the real `weft` binary, against a
//! strict fake of it (`weft-fakes`): a local server speaking the provider's
//! wire format that refuses, with the provider's own status and error body,
//! every request breaking one of its documented rules. Each scenario must
//! end with an answer and no refused request: a tool loop, a finalization
//! forced by a cap (the finalizing request keeps the tool definitions and
//! forbids their use), thinking beside tool calls (its signed blocks or
//! reasoning items or thought signatures sent back unchanged), both at once, the advisor after a
//! tool exchange, a session's second run, and `weft replay` of a recorded
//! run (its model outputs, thinking included, as this provider's decoder
//! read them). Each scenario is a test per
//! API, named `<api>::<scenario>` (e.g. `bedrock::a_tool_loop_answers`).

use std::path::Path;

use serde_json::Value;
use weft_fakes::{ADVICE, ANSWER, Api, Behaviour, FINAL, spawn};

/// One test per scenario, each playing it on `$api`.
macro_rules! tests {
    ($api:expr; $($name:ident),*) => {$(
        #[tokio::test(flavor = "multi_thread")]
        async fn $name() {
            super::$name($api).await
        }
    )*};
}

/// Every scenario, as a test per API.
macro_rules! per_api {
    ($($module:ident => $api:expr),* $(,)?) => {$(
        mod $module {
            use weft_fakes::Api;
            tests!($api;
                a_tool_loop_answers,
                a_cap_forced_finalization_answers_with_the_tools_declared_and_forbidden,
                thinking_beside_tool_calls_is_sent_back_unchanged_with_and_without_a_cap,
                the_advisor_answers_after_a_tool_exchange,
                a_session_s_second_run_sends_the_first_run_s_exchange_and_answers,
                a_child_run_answers_its_parent,
                a_run_killed_in_a_model_call_is_recovered_and_answers,
                a_recorded_run_replays_identically_without_a_request);
        }
    )*};
}

per_api!(
    anthropic => Api::Anthropic,
    openai_chat => Api::OpenAiChat,
    openai_responses => Api::OpenAiResponses,
    compat => Api::Compat,
    gemini => Api::Gemini,
    vertex => Api::Vertex,
    bedrock => Api::Bedrock,
);

/// The model id and base URL of `api` served at `url`.
fn model(api: Api, url: &str) -> (&'static str, String) {
    match api {
        Api::Anthropic => ("anthropic/claude-fake", url.to_owned()),
        Api::OpenAiChat => ("openai/gpt-fake", format!("{url}/v1")),
        Api::OpenAiResponses => ("openai-responses/gpt-fake", format!("{url}/v1")),
        Api::Compat => ("compat/llama-fake", format!("{url}/v1")),
        Api::Gemini => ("gemini/gemini-fake", format!("{url}/v1beta")),
        Api::Vertex => ("vertex/gemini-fake", weft_fakes::vertex::endpoint(url)),
        Api::Bedrock => ("bedrock/anthropic.claude-fake-v1:0", url.to_owned()),
    }
}

/// The providers' keys (Bedrock's the fake's AWS key and region), and no
/// base URL from the environment.
fn keys(cmd: &mut std::process::Command) -> &mut std::process::Command {
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-fake")
        .env("OPENAI_API_KEY", "sk-fake")
        .env("GEMINI_API_KEY", "g-fake")
        .env(
            "GOOGLE_CLOUD_ACCESS_TOKEN",
            weft_fakes::vertex::ACCESS_TOKEN,
        )
        .env(
            "AWS_ACCESS_KEY_ID",
            weft_fakes::bedrock::sigv4::ACCESS_KEY_ID,
        )
        .env(
            "AWS_SECRET_ACCESS_KEY",
            weft_fakes::bedrock::sigv4::SECRET_ACCESS_KEY,
        )
        .env("AWS_REGION", weft_fakes::bedrock::sigv4::REGION);
    let unset = "ANTHROPIC_BASE_URL OPENAI_BASE_URL GEMINI_BASE_URL BEDROCK_BASE_URL \
                 AWS_ENDPOINT_URL_BEDROCK_RUNTIME AWS_SESSION_TOKEN AWS_PROFILE \
                 GOOGLE_CLOUD_PROJECT GOOGLE_CLOUD_LOCATION";
    for var in unset.split_whitespace() {
        cmd.env_remove(var);
    }
    cmd
}

/// A calculator agent on the fake; `extra` goes into its `[planner]`
/// table, `tail` after it (more tables).
fn agent(dir: &Path, api: Api, url: &str, extra: &str, tail: &str) -> std::path::PathBuf {
    let (id, base) = model(api, url);
    let text = format!(
        "id = \"strict\"\ninstructions = \"Use the calc tools.\"\ntoolsets = [\"calc\"]\n\
         [planner]\nkind = \"model\"\nmodel = \"{id}\"\nbase_url = \"{base}\"\n{extra}\n{tail}\n"
    );
    let path = dir.join("agent.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `weft run --output jsonl` with `args` after the agent file; its
/// JSON lines (it must succeed).
fn run(api: Api, agent: &Path, args: &[&str]) -> Vec<Value> {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_weft"));
    keys(cmd.args(["run", "--output", "jsonl"]).arg(agent).args(args));
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{api:?}: weft run failed ({}): {}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The fake refused no request.
fn refused_nothing(api: Api, fake: &weft_fakes::Fake) {
    assert_eq!(
        fake.stats.rejections(),
        Vec::<String>::new(),
        "{api:?} refused a request"
    );
}

fn answer(lines: &[Value]) -> String {
    let outcome = &lines.last().unwrap()["outcome"];
    outcome["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no answer: {outcome}"))
        .to_owned()
}

fn of<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

/// Plays one scenario on `api`: the run's lines, after checking that the
/// fake refused nothing.
async fn each_api(
    behaviour: Behaviour,
    extra: &str,
    tail: &str,
    api: Api,
    check: impl Fn(Api, &[Value]),
) {
    let fake = spawn(api, behaviour.clone()).await.unwrap();
    let dir = tempfile_dir();
    let tail = tail
        .replace("{model}", model(api, &fake.url).0)
        .replace("{base}", &model(api, &fake.url).1);
    let path = agent(dir.path(), api, &fake.url, extra, &tail);
    let lines = tokio::task::spawn_blocking(move || run(api, &path, &["What is 2 + 3?"]))
        .await
        .unwrap();
    refused_nothing(api, &fake);
    check(api, &lines);
}

/// A temporary directory removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> TempDir {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("weft-strict-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

async fn a_tool_loop_answers(api: Api) {
    each_api(Behaviour::default(), "", "", api, |api, lines| {
        assert_eq!(answer(lines), ANSWER, "{api:?}");
        let finished = of(lines, "tool_finished");
        assert_eq!(finished.len(), 1, "{api:?}");
        assert_eq!(finished[0]["output"]["result"]["value"], 5, "{api:?}");
    })
    .await;
}

async fn a_cap_forced_finalization_answers_with_the_tools_declared_and_forbidden(api: Api) {
    let always = Behaviour {
        rounds: usize::MAX,
        ..Behaviour::default()
    };
    each_api(
        always,
        "",
        "[policy]\nmax_tool_calls = 2\n",
        api,
        |api, lines| {
            assert_eq!(answer(lines), FINAL, "{api:?}");
            assert_eq!(of(lines, "tool_finished").len(), 2, "{api:?}");
        },
    )
    .await;
}

async fn thinking_beside_tool_calls_is_sent_back_unchanged_with_and_without_a_cap(api: Api) {
    // (how often the model calls the tool, the policy, the answer)
    let cases = [
        (1, "", ANSWER),
        (usize::MAX, "[policy]\nmax_tool_calls = 1\n", FINAL),
    ];
    for (rounds, policy, expected) in cases {
        let thinking = Behaviour {
            thinking: true,
            rounds,
            ..Behaviour::default()
        };
        each_api(
            thinking,
            "thinking_budget = 2048",
            policy,
            api,
            |api, lines| {
                assert_eq!(answer(lines), expected, "{api:?}");
            },
        )
        .await;
    }
}

async fn the_advisor_answers_after_a_tool_exchange(api: Api) {
    let advised = Behaviour {
        advisor: true,
        ..Behaviour::default()
    };
    let advisor = "[advisor]\nmodel = \"{model}\"\nbase_url = \"{base}\"\nmax_uses_per_run = 1\n";
    each_api(advised, "", advisor, api, |api, lines| {
        assert_eq!(answer(lines), ANSWER, "{api:?}");
        let advice: Vec<&Value> = of(lines, "tool_finished")
            .into_iter()
            .filter(|l| l["output"]["name"] == "advisor")
            .collect();
        assert_eq!(advice.len(), 1, "{api:?}");
        let result = &advice[0]["output"]["result"]["value"];
        assert_eq!(result["type"], "advice", "{api:?}: {result}");
        assert_eq!(result["advice"], ADVICE, "{api:?}");
    })
    .await;
}

async fn a_session_s_second_run_sends_the_first_run_s_exchange_and_answers(api: Api) {
    let fake = spawn(api, Behaviour::default()).await.unwrap();
    let dir = tempfile_dir();
    let path = agent(dir.path(), api, &fake.url, "", "");
    let db = dir.path().join("weft.db");
    let db = db.to_str().unwrap().to_owned();
    let lines = tokio::task::spawn_blocking(move || {
        let first = run(
            api,
            &path,
            &["What is 2 + 3?", "--db", &db, "--session", "s1"],
        );
        assert_eq!(answer(&first), ANSWER);
        run(api, &path, &["And again?", "--db", &db, "--session", "s1"])
    })
    .await
    .unwrap();
    refused_nothing(api, &fake);
    assert_eq!(answer(&lines), ANSWER, "{api:?}");
    // The second run's first request carries the first run's exchange.
    let bodies = fake.stats.bodies();
    let second = bodies[bodies.len() - 1].to_string();
    assert!(
        second.contains("What is 2 + 3?") && second.contains("And again?"),
        "{api:?}: {second}"
    );
}

async fn a_child_run_answers_its_parent(api: Api) {
    let calls_child = Behaviour {
        tool: "team__helper".into(),
        args: serde_json::json!({"input": "What is 2 + 3?"}),
        ..Behaviour::default()
    };
    let fake = spawn(api, calls_child).await.unwrap();
    let dir = tempfile_dir();
    let (id, base) = model(api, &fake.url);
    let planner = format!("[planner]\nkind = \"model\"\nmodel = \"{id}\"\nbase_url = \"{base}\"\n");
    std::fs::write(
        dir.path().join("helper.toml"),
        format!("id = \"helper\"\ninstructions = \"Answer.\"\n{planner}"),
    )
    .unwrap();
    let parent = dir.path().join("parent.toml");
    std::fs::write(
        &parent,
        format!(
            "id = \"parent\"\ninstructions = \"Delegate.\"\n\
             [[toolsets]]\ntype = \"agent\"\nname = \"team\"\n\
             agents = [{{ id = \"helper\", file = \"helper.toml\", description = \"Helps\" }}]\n{planner}"
        ),
    )
    .unwrap();
    let lines = tokio::task::spawn_blocking(move || run(api, &parent, &["What is 2 + 3?"]))
        .await
        .unwrap();
    refused_nothing(api, &fake);
    assert_eq!(answer(&lines), ANSWER, "{api:?}");
    let linked = of(&lines, "child_run_linked");
    assert_eq!(linked.len(), 1, "{api:?}: {lines:?}");
    // The parent's two calls and the child's one.
    assert_eq!(fake.stats.requests(), 3, "{api:?}");
}

async fn a_run_killed_in_a_model_call_is_recovered_and_answers(api: Api) {
    // The second model call (after the tool ran) never answers in time.
    let stalls = Behaviour {
        stall: Some(2),
        ..Behaviour::default()
    };
    let fake = spawn(api, stalls).await.unwrap();
    let dir = tempfile_dir();
    let agent = agent(dir.path(), api, &fake.url, "", "");
    let db = dir.path().join("weft.db").to_str().unwrap().to_owned();
    let weft = env!("CARGO_BIN_EXE_weft");
    let mut child = keys(
        std::process::Command::new(weft)
            .args(["run", "--output", "jsonl", "--db", &db])
            .arg(&agent)
            .arg("What is 2 + 3?"),
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while fake.stats.requests() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "{api:?}: no second model call"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // kill -9, in the middle of the second model call.
    child.kill().unwrap();
    child.wait().unwrap();
    let (agent2, db2) = (agent.clone(), db.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        let list = std::process::Command::new(weft)
            .args(["runs", "list", "--db", &db2])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&list.stdout).into_owned();
        let first: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
        let run_id = first["run_id"]
            .as_str()
            .or(first["id"].as_str())
            .unwrap()
            .to_owned();
        let recover = keys(
            std::process::Command::new(weft)
                .args(["runs", "recover", &run_id, "--db", &db2, "--agent"])
                .arg(&agent2),
        )
        .output()
        .unwrap();
        assert!(
            recover.status.success(),
            "{api:?}: recover failed: {}",
            String::from_utf8_lossy(&recover.stderr)
        );
        let show = std::process::Command::new(weft)
            .args(["runs", "show", &run_id, "--json", "--db", &db2])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&show.stdout).unwrap()["outcome"].clone()
    })
    .await
    .unwrap();
    refused_nothing(api, &fake);
    assert_eq!(
        outcome["message"]["parts"][0]["text"], ANSWER,
        "{api:?}: {outcome}"
    );
    // The recovered call carried the tool exchange made before the kill.
    let last = fake.stats.bodies().pop().unwrap().to_string();
    assert!(last.contains("calc__add"), "{api:?}: {last}");
}

async fn a_recorded_run_replays_identically_without_a_request(api: Api) {
    let thinking = Behaviour {
        thinking: true,
        ..Behaviour::default()
    };
    let fake = spawn(api, thinking).await.unwrap();
    let dir = tempfile_dir();
    let path = agent(dir.path(), api, &fake.url, "thinking_budget = 2048", "");
    let db = dir.path().join("weft.db");
    let (agent_file, store) = (path.clone(), db.clone());
    let lines = tokio::task::spawn_blocking(move || {
        let store = store.to_str().unwrap().to_owned();
        run(api, &agent_file, &["What is 2 + 3?", "--db", &store])
    })
    .await
    .unwrap();
    assert_eq!(answer(&lines), ANSWER, "{api:?}");
    refused_nothing(api, &fake);
    let asked = fake.stats.requests();
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_weft"));
        keys(
            cmd.args(["replay", "--all", "--since", "1d", "--agent"])
                .arg(&path)
                .arg("--store")
                .arg(&db),
        );
        cmd.output().unwrap()
    })
    .await
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{api:?}: {text}");
    assert!(
        text.contains("1 replayed, 1 identical, 0 differ, 0 not replayable"),
        "{api:?}: {text}"
    );
    assert_eq!(
        fake.stats.requests(),
        asked,
        "{api:?}: replay asked the model"
    );
}
