//! A stdio MCP server started by the real `weft` binary never sees weft's
//! environment: tenant tokens, the metrics token and provider keys stay in
//! weft. The "server" here writes its environment to a file and exits; the
//! test reads that file.

use std::process::Command;

#[test]
fn a_stdio_server_gets_a_clean_environment() {
    let dir = std::env::temp_dir().join(format!("weft-child-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join("env.txt");
    let agent = dir.join("agent.toml");
    std::fs::write(
        &agent,
        format!(
            r#"id = "envcheck"
instructions = "Check."
[[toolsets]]
type = "mcp"
name = "dump"
command = "sh"
args = ["-c", "env > \"$DUMP_TO\""]
env = {{ DUMP_TO = "{}" }}
inherit_env = ["WEFT_TEST_PASSED_ON"]
start_timeout_ms = 5000

[planner]
kind = "scripted"
[[planner.turns]]
text = "done"
"#,
            dump.display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--output", "jsonl"])
        .arg(&agent)
        .arg("go")
        .env("WEFT_TOKENS", "alice=alice-secret,bob=bob-secret")
        .env("WEFT_METRICS_TOKEN", "metrics-secret")
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .env("WEFT_TEST_PASSED_ON", "named-in-the-file")
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&dump).unwrap_or_else(|e| {
        panic!(
            "the server did not run ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let _ = std::fs::remove_dir_all(&dir);
    for secret in [
        "alice-secret",
        "bob-secret",
        "metrics-secret",
        "sk-ant-secret",
    ] {
        assert!(!text.contains(secret), "the server saw {secret}:\n{text}");
    }
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(names.contains(&"PATH"), "{names:?}");
    assert!(
        text.contains("WEFT_TEST_PASSED_ON=named-in-the-file"),
        "{text}"
    );
    assert!(names.contains(&"DUMP_TO"), "{names:?}");
    for name in names {
        assert!(
            weft_mcp_allowed(name),
            "{name} reached the server though nothing allows it"
        );
    }
}

/// What may reach the server: the default list, what the file names and
/// sets, and what `sh` sets itself.
fn weft_mcp_allowed(name: &str) -> bool {
    [
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "WEFT_TEST_PASSED_ON",
        "DUMP_TO",
        "PWD",
        "SHLVL",
        "OLDPWD",
        "_",
    ]
    .contains(&name)
}
