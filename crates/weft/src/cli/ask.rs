//! Answering awaits at the terminal: numbered options for questions, free
//! text for clarifications, approve/deny for confirmations, JSON for
//! external tool results, a form or a URL for a running tool's elicitation
//! ([`elicit`]); without a terminal, one line per question ([`piped`]),
//! and what is said of a question left unanswered ([`later`]). Standard
//! input is read a line at a time by one thread ([`lines`]).

mod elicit;
pub mod later;
pub mod lines;
pub mod piped;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde_json::Value;
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::tool::ToolOutput;

/// Why no answer could be read.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Standard input ended.
    #[error("standard input closed before the answer")]
    Closed,
    /// Reading or writing the terminal failed.
    #[error("terminal: {0}")]
    Io(#[from] std::io::Error),
    /// A line that does not answer the question (without a terminal,
    /// nothing is asked twice).
    #[error("{0}")]
    Unfit(String),
    /// `--on-question=fail`: questions are not asked.
    #[error("questions are not asked (--on-question=fail)")]
    NotAsked,
}

/// What `weft run` does when its run asks a question.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OnQuestion {
    /// Ask: at the terminal, or else on standard error, reading the answer
    /// from standard input (one line per question).
    #[default]
    Ask,
    /// Do not ask: exit with code 3, leaving the run awaiting its answer.
    Fail,
}

/// Asks for an answer to `item` on `input`/`output`, re-asking on invalid input.
pub fn ask(
    item: &AwaitItem,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<AwaitAnswer, AskError> {
    match item {
        AwaitItem::Clarification(c) => {
            writeln!(output, "? {}", c.question)?;
            if let Some(p) = &c.clarifying_prompt {
                writeln!(output, "  {p}")?;
            }
            loop {
                let text = prompt(input, output, "> ")?;
                if !text.trim().is_empty() {
                    return Ok(AwaitAnswer::Clarification { text });
                }
            }
        }
        AwaitItem::Questions(q) => {
            if let Some(t) = &q.title {
                writeln!(output, "? {t}")?;
            }
            let mut answers = BTreeMap::new();
            for question in &q.questions {
                writeln!(output, "? {}", question.prompt)?;
                for (i, o) in question.options.iter().enumerate() {
                    writeln!(output, "  {}. {}", i + 1, o.label)?;
                }
                let hint = if question.allow_multiple {
                    "numbers, separated by spaces"
                } else {
                    "a number"
                };
                let chosen = loop {
                    let line = prompt(input, output, &format!("({hint}) > "))?;
                    let picks: Option<Vec<String>> = line
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|s| !s.is_empty())
                        .map(|s| {
                            s.parse::<usize>()
                                .ok()
                                .and_then(|n| n.checked_sub(1))
                                .and_then(|i| question.options.get(i))
                                .map(|o| o.id.clone())
                        })
                        .collect();
                    match picks {
                        Some(p) if !p.is_empty() && (question.allow_multiple || p.len() == 1) => {
                            break p;
                        }
                        _ => writeln!(output, "  please answer with {hint} from the list")?,
                    }
                };
                answers.insert(question.id.clone(), chosen);
            }
            Ok(AwaitAnswer::Questions { answers })
        }
        AwaitItem::Confirmation(c) => {
            writeln!(output, "? allow {} {} ?", c.tool_name, c.payload)?;
            loop {
                let line = prompt(input, output, "[y/n] > ")?;
                match line.trim().to_lowercase().as_str() {
                    "y" | "yes" => {
                        return Ok(AwaitAnswer::Confirmation {
                            approved: true,
                            reason: None,
                        });
                    }
                    "n" | "no" => {
                        let reason = prompt(input, output, "reason > ")?;
                        let reason = Some(reason.trim().to_owned()).filter(|r| !r.is_empty());
                        return Ok(AwaitAnswer::Confirmation {
                            approved: false,
                            reason,
                        });
                    }
                    _ => {}
                }
            }
        }
        AwaitItem::Elicitation(e) => elicit::ask_elicitation(e, input, output),
        AwaitItem::ExternalTools(e) => {
            let mut results = Vec::new();
            for call in &e.items {
                writeln!(
                    output,
                    "? result of {} {} (JSON)",
                    call.tool_name, call.payload
                )?;
                let value = loop {
                    let line = prompt(input, output, "> ")?;
                    match serde_json::from_str::<Value>(&line) {
                        Ok(v) => break v,
                        Err(err) => writeln!(output, "  not JSON: {err}")?,
                    }
                };
                results.push(ToolOutput::ok(
                    call.tool_call_id.clone(),
                    call.tool_name.clone(),
                    call.payload.clone(),
                    value,
                ));
            }
            Ok(AwaitAnswer::ExternalTools { results })
        }
    }
}

fn prompt(input: &mut dyn BufRead, output: &mut dyn Write, text: &str) -> Result<String, AskError> {
    write!(output, "{text}")?;
    output.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Err(AskError::Closed);
    }
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use weft_core::awaiting::{Confirmation, Question, QuestionOption, Questions};

    use super::*;

    #[test]
    fn questions_take_numbers_and_reask_on_nonsense() {
        let item = AwaitItem::Questions(Questions {
            id: "f".into(),
            tool_name: "ask.pick".into(),
            tool_call_id: "c".into(),
            payload: json!({}),
            title: None,
            questions: vec![Question {
                id: "color".into(),
                prompt: "Which?".into(),
                options: vec![
                    QuestionOption {
                        id: "r".into(),
                        label: "red".into(),
                    },
                    QuestionOption {
                        id: "g".into(),
                        label: "green".into(),
                    },
                ],
                allow_multiple: false,
            }],
        });
        let mut input = &b"7\n1 2\n2\n"[..];
        let mut out = Vec::new();
        let answer = ask(&item, &mut input, &mut out).unwrap();
        assert_eq!(
            answer,
            AwaitAnswer::Questions {
                answers: [("color".to_owned(), vec!["g".to_owned()])].into()
            }
        );
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("1. red") && shown.contains("2. green"));
        assert_eq!(shown.matches("please answer").count(), 2);
        item.validate(&answer).unwrap();
    }

    #[test]
    fn confirmation_denial_carries_the_reason_and_eof_is_an_error() {
        let item = AwaitItem::Confirmation(Confirmation {
            id: "c".into(),
            tool_name: "fs.delete".into(),
            tool_call_id: "1".into(),
            payload: json!({"path": "/"}),
        });
        let mut input = &b"maybe\nn\ntoo risky\n"[..];
        let answer = ask(&item, &mut input, &mut Vec::new()).unwrap();
        assert_eq!(
            answer,
            AwaitAnswer::Confirmation {
                approved: false,
                reason: Some("too risky".into())
            }
        );
        let mut empty = &b""[..];
        assert!(matches!(
            ask(&item, &mut empty, &mut Vec::new()),
            Err(AskError::Closed)
        ));
    }
}
