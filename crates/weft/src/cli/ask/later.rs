//! What a command says when a run's question got no answer: which item of
//! which run waits, where the run is kept, and the commands that answer or
//! cancel it later (`weft runs answer`, `weft runs cancel`). A question of
//! a running tool (an elicitation) cannot wait beyond the process that runs
//! the tool: the run is cancelled instead, and the message says so.

use std::io::Write;
use std::path::PathBuf;

use weft_core::awaiting::AwaitItem;

/// The exit code of a command whose run asked a question that got no
/// answer.
pub const UNANSWERED: u8 = 3;

/// How the run was started: what a later command needs to go on with it.
#[derive(Debug, Clone, Default)]
pub struct Resume {
    /// The store (`--db`); the run is lost with the process without one.
    pub db: Option<String>,
    /// The agent file.
    pub agent: Option<PathBuf>,
    /// The model id overriding the file's planner (`--model`).
    pub model: Option<String>,
}

/// Whether `item` is a running tool's question, which cannot outlive the
/// process running the tool.
pub fn asked_by_a_running_tool(item: &AwaitItem) -> bool {
    matches!(item, AwaitItem::Elicitation(_))
}

/// A value quoted for a POSIX shell when it needs it.
fn quoted(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// An example answer line for `item`, shown in the commands.
fn example(item: &AwaitItem) -> &'static str {
    match item {
        AwaitItem::Clarification(_) => "<answer>",
        AwaitItem::Questions(_) => "<option>",
        AwaitItem::Confirmation(_) => "<y|n>",
        AwaitItem::Elicitation(_) => "<answer>",
        AwaitItem::ExternalTools(_) => "<result as JSON>",
    }
}

/// Says on `out` that run `run_id` awaits `pending` (the first got no
/// answer, for `why`) and how to answer or cancel it later.
pub fn left_awaiting(
    out: &mut dyn Write,
    run_id: &str,
    pending: &[AwaitItem],
    why: &str,
    how: &Resume,
) -> std::io::Result<()> {
    let Some(first) = pending.first() else {
        return Ok(());
    };
    writeln!(
        out,
        "weft: run {run_id} awaits an answer to {} and got none: {why}",
        first.id()
    )?;
    let Some(db) = &how.db else {
        writeln!(
            out,
            "  the run was not stored (no --db) and ends here: give its answers on standard \
             input, one line per question, or add --db <file> to keep it awaiting"
        )?;
        return Ok(());
    };
    let mut tail = format!(" --db {}", quoted(db));
    if let Some(agent) = &how.agent {
        tail.push_str(&format!(
            " --agent {}",
            quoted(&agent.display().to_string())
        ));
    }
    if let Some(model) = &how.model {
        tail.push_str(&format!(" --model {}", quoted(model)));
    }
    writeln!(
        out,
        "  it stays awaiting in {db}; answer it (one argument per line of answer) with"
    )?;
    for item in pending {
        writeln!(
            out,
            "    weft runs answer {run_id} {} {}{tail}",
            quoted(item.id().as_str()),
            quoted(example(item))
        )?;
    }
    writeln!(out, "  or cancel it with")?;
    writeln!(out, "    weft runs cancel {run_id} --db {}", quoted(db))
}

/// Says on `out` that run `run_id` was cancelled because a running tool's
/// question `item` got no answer, for `why`.
pub fn cancelled_for(
    out: &mut dyn Write,
    run_id: &str,
    item: &AwaitItem,
    why: &str,
) -> std::io::Result<()> {
    let tool = match item {
        AwaitItem::Elicitation(e) => e.tool.to_string(),
        _ => "a tool".to_owned(),
    };
    writeln!(
        out,
        "weft: run {run_id} was cancelled: {tool} asked {} while it ran and got no answer ({why}); \
         a running tool's question cannot wait beyond this process: run it again with the \
         answer on standard input, one line per question",
        item.id()
    )
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(quoted("w.db"), "w.db");
        assert_eq!(quoted("<answer>"), "'<answer>'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
    }
}
