//! What the A2A end-to-end tests share: the agents they serve, a staller
//! (an agent whose model holds back its first answer), and the official
//! SDK's client (`client.py`) run against served agents.
// Each test binary uses only some of these.
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;
use weft_fakes::{Api, Behaviour};

/// Answers every task at once.
pub const ANSWERER: &str = r#"id = "answerer"
instructions = "Answers questions."
toolsets = ["calc"]

[planner]
kind = "scripted"

[[planner.turns]]
text = "The answer is 42."
"#;

/// Asks "What is your name?", then answers "greeted".
pub const ASKER: &str = r#"id = "asker"

[planner]
kind = "scripted"

[[planner.turns]]
ask = "What is your name?"

[[planner.turns]]
text = "greeted"
"#;

/// The agent file of staller `name`: a calculator agent whose model (a
/// strict OpenAI fake, returned: keep it alive) holds back its answer to
/// the first request, so its first task stays working until cancelled.
pub async fn staller(name: &str) -> (String, weft_fakes::Fake) {
    let behaviour = Behaviour {
        stall: Some(1),
        ..Behaviour::default()
    };
    let fake = weft_fakes::spawn(Api::OpenAiChat, behaviour).await.unwrap();
    let text = format!(
        "id = \"{name}\"\ntoolsets = [\"calc\"]\n[planner]\nkind = \"model\"\n\
         model = \"openai/gpt-fake\"\nbase_url = \"{}/v1\"\n",
        fake.url
    );
    (text, fake)
}

/// The python of `scripts/a2a-sdk.sh` (`WEFT_A2A_PYTHON`); `None` skips
/// the test, unless `WEFT_REQUIRE_A2A_SDK=1` (as in `scripts/test`) makes
/// its absence a failure.
pub fn sdk_python() -> Option<String> {
    let Ok(python) = std::env::var("WEFT_A2A_PYTHON") else {
        let why = "set WEFT_A2A_PYTHON to the python of scripts/a2a-sdk.sh";
        assert!(
            std::env::var("WEFT_REQUIRE_A2A_SDK").as_deref() != Ok("1"),
            "the A2A SDK is required: {why}"
        );
        eprintln!("skipped: {why}");
        return None;
    };
    Some(python)
}

/// Runs the SDK's client (`client.py`) against the agents at `urls`, which
/// must pass every check; its output. `logs` gives the servers' logs for a
/// failure message.
pub async fn sdk_client(python: &str, urls: &Value, logs: impl Fn() -> String) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/client.py");
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(urls.to_string())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "the SDK client failed ({}):\n{stdout}\n{}\nserver logs:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        logs()
    );
    println!("{stdout}");
    for check in [
        "1.0: stream ok",
        "0.3: stream ok",
        "0.3: input-required round trip (streaming) ok",
    ] {
        assert!(
            stdout.contains(check),
            "`{check}` was not checked:\n{stdout}"
        );
    }
    stdout
}
