//! Helpers shared by the `weft` binary's end-to-end tests.
// Each test binary uses only some of these helpers.
#![allow(dead_code)]

pub mod replay;

use std::io::BufRead;
use std::path::PathBuf;

/// Runs `cmd`, which must succeed (its stderr is the failure message), and
/// parses each line of its stdout as JSON.
pub fn json_lines(cmd: &mut std::process::Command) -> Vec<serde_json::Value> {
    output_json_lines(cmd.output().unwrap())
}

/// The JSON lines of a finished command's stdout; it must have succeeded.
pub fn output_json_lines(out: std::process::Output) -> Vec<serde_json::Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The path of a file in the repository's `examples/` directory.
pub fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// The address `weft serve` says it listens on, read from its stderr (the
/// lines before it are consumed; the reader stays usable for later ones).
pub fn served_address(stderr: &mut impl BufRead) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "weft serve exited early"
        );
        if let Some(rest) = line.split("serving on http://").nth(1) {
            return rest.split_whitespace().next().unwrap().to_owned();
        }
    }
}

/// The last lines a server wrote to its log, kept by [`keep_log`] so a
/// failing test can show them.
#[derive(Clone, Default)]
pub struct LogTail(std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<String>>>);

impl LogTail {
    /// Most lines kept.
    const LINES: usize = 60;

    /// The kept lines, oldest first.
    pub fn text(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("")
    }
}

/// Drains `stderr` on a thread of its own (so the server never blocks on a
/// full pipe), keeping its last lines.
pub fn keep_log(mut stderr: impl BufRead + Send + 'static) -> LogTail {
    let tail = LogTail::default();
    let kept = tail.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
            let mut lines = kept.0.lock().unwrap_or_else(|e| e.into_inner());
            if lines.len() == LogTail::LINES {
                lines.pop_front();
            }
            lines.push_back(std::mem::take(&mut line));
        }
    });
    tail
}

/// The PostgreSQL server the tests use: `WEFT_TEST_POSTGRES_URL`, by default
/// `postgres://postgres@127.0.0.1:5432/test`.
pub fn postgres_url() -> String {
    std::env::var("WEFT_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A store URL for a fresh schema named after `prefix` on the test
/// PostgreSQL server, and the guard that drops the schema. Fails with how
/// to start the server when it is not reachable.
pub async fn postgres_schema(prefix: &str) -> (String, DropSchema) {
    use sqlx::Connection as _;
    let base = postgres_url();
    if let Err(e) = sqlx::PgConnection::connect(&base).await {
        panic!(
            "PostgreSQL is not reachable at {base}: {e}\n\
             Start the local cluster with\n    \
             pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n\
             or point WEFT_TEST_POSTGRES_URL at another server."
        );
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("{prefix}_{}_{nanos:08x}", std::process::id());
    let separator = if base.contains('?') { '&' } else { '?' };
    let db = format!("{base}{separator}schema={schema}");
    (db, DropSchema { base, schema })
}

/// Drops a PostgreSQL schema when dropped, even when the test panicked.
pub struct DropSchema {
    /// The server's URL.
    pub base: String,
    /// The schema.
    pub schema: String,
}

impl Drop for DropSchema {
    fn drop(&mut self) {
        use sqlx::Connection as _;
        let base = self.base.clone();
        let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema);
        // Drop runs inside the test's runtime: use a thread with its own.
        let outcome = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut conn = sqlx::PgConnection::connect(&base).await?;
                sqlx::query(&sql).execute(&mut conn).await?;
                Ok::<_, sqlx::Error>(())
            })
        })
        .join();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("could not drop schema {}: {e}", self.schema),
            Err(_) => eprintln!("could not drop schema {}: the thread panicked", self.schema),
        }
    }
}
