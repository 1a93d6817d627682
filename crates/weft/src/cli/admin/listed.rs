//! How `weft runs list` and `weft sessions list` print a listing whose rows
//! may not decode: the rows that decode on stdout, and the ones that do not
//! named on stderr (how many, and their ids), so one corrupt row never
//! hides the others. With `--json`, one object shaped as the HTTP API's
//! list: `runs`, and `skipped` marking each row left out.

use serde_json::json;
use weft_core::session::ListedSession;
use weft_core::store::ListedRun;

/// Prints `rows`: JSON lines of the runs, or one JSON object with `json`;
/// the skipped rows on stderr either way.
pub(super) fn print_runs(rows: Vec<ListedRun>, json: bool) -> anyhow::Result<()> {
    let (mut runs, mut skipped) = (Vec::new(), Vec::new());
    for row in rows {
        match row {
            ListedRun::Run(record) => runs.push(record),
            ListedRun::Corrupt { run_id, error, .. } => skipped.push(json!({
                "run_id": run_id,
                "corrupt": true,
                "error": error,
            })),
        }
    }
    if json {
        let mut body = json!({ "runs": runs });
        if !skipped.is_empty() {
            body["skipped"] = json!(skipped);
        }
        println!("{}", serde_json::to_string(&body)?);
    } else {
        for run in &runs {
            println!("{}", serde_json::to_string(run)?);
        }
    }
    report_skipped("run", "run_id", &skipped);
    Ok(())
}

/// Prints the sessions of `rows` as JSON lines; the skipped rows on stderr.
pub(super) fn print_sessions(rows: Vec<ListedSession>) -> anyhow::Result<()> {
    let mut skipped = Vec::new();
    for row in rows {
        match row {
            ListedSession::Session(record) => println!("{}", serde_json::to_string(&record)?),
            ListedSession::Corrupt {
                session_id, error, ..
            } => skipped.push(json!({
                "session_id": session_id,
                "corrupt": true,
                "error": error,
            })),
        }
    }
    report_skipped("session", "session_id", &skipped);
    Ok(())
}

/// Tells stderr how many `what`s were skipped, with their ids and why.
fn report_skipped(what: &str, id_key: &str, skipped: &[serde_json::Value]) {
    if skipped.is_empty() {
        return;
    }
    let plural = if skipped.len() == 1 { "" } else { "s" };
    eprintln!(
        "skipped {} {what}{plural} whose stored data cannot be read:",
        skipped.len()
    );
    for entry in skipped {
        let id = entry[id_key].as_str().unwrap_or_default();
        let error = entry["error"].as_str().unwrap_or_default();
        eprintln!("  {id}: {error}");
    }
}
