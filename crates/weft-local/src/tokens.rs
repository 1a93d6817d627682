//! Prompt text to tokens: the template's markup with its special tokens,
//! the literal ranges (users' and tools' text) as plain text only.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use weft_core::model::ModelError;

use super::generation::Prompt;
use super::prompt::Turn;

/// Where each literal turn's text landed in `text`. Every turn is looked
/// for in order (its trimmed text when the template trims), so a literal
/// turn is never matched inside an earlier turn that holds the same words.
/// A literal turn the template rewrote is an error: its text could not be
/// kept apart from the markup.
pub(crate) fn literal_ranges(
    text: &str,
    turns: &[Turn],
) -> Result<Vec<std::ops::Range<usize>>, ModelError> {
    let mut ranges = Vec::new();
    let mut from = 0;
    for turn in turns {
        let rest = &text[from..];
        let needle = if rest.contains(turn.content.as_str()) {
            turn.content.as_str()
        } else {
            turn.content.trim()
        };
        if needle.is_empty() {
            continue;
        }
        match rest.find(needle) {
            Some(at) => {
                let at = from + at;
                if turn.literal {
                    ranges.push(at..at + needle.len());
                }
                from = at + needle.len();
            }
            None if turn.literal => {
                return Err(ModelError::Config {
                    message: "the chat template rewrote a message's text; it cannot be kept \
                              apart from the template's markup"
                        .to_owned(),
                });
            }
            // The agent's own text may be reshaped by the template; its
            // tokens are read with special tokens anyway.
            None => {}
        }
    }
    Ok(ranges)
}

/// The prompt's tokens: markup read with special tokens, literal ranges
/// without.
pub(crate) fn tokenize(model: &LlamaModel, prompt: &Prompt) -> Vec<LlamaToken> {
    let vocab = model.vocab();
    let text = prompt.text.as_bytes();
    let mut out = Vec::with_capacity(text.len() / 3 + 8);
    let mut at = 0;
    for range in &prompt.literal {
        let (start, end) = (range.start.min(text.len()), range.end.min(text.len()));
        if start > at {
            out.extend(vocab.tokenize(&text[at..start], false, true));
        }
        if end > start.max(at) {
            out.extend(vocab.tokenize(&text[start.max(at)..end], false, false));
        }
        at = at.max(end);
    }
    if at < text.len() {
        out.extend(vocab.tokenize(&text[at..], false, true));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(role: &'static str, content: &str, literal: bool) -> Turn {
        Turn {
            role,
            content: content.to_owned(),
            literal,
        }
    }

    #[test]
    fn literal_turns_are_found_in_order_past_the_markup() {
        let text = "<s>system\nhi</s><s>user\nhi</s><s>assistant\nok</s><s>user\n x </s>";
        let turns = [
            turn("system", "hi", false),
            turn("user", "hi", true),
            turn("assistant", "ok", false),
            turn("user", " x ", true),
        ];
        let ranges = literal_ranges(text, &turns).unwrap();
        assert_eq!(ranges.len(), 2);
        assert_eq!(&text[ranges[0].clone()], "hi");
        assert!(
            ranges[0].start > text.find("hi").unwrap(),
            "the system text is not literal"
        );
        assert_eq!(&text[ranges[1].clone()], " x ");
    }

    #[test]
    fn a_trimming_template_still_finds_the_text_and_a_rewriting_one_is_an_error() {
        let turns = [turn("user", "  padded  ", true)];
        let ranges = literal_ranges("<u>padded</u>", &turns).unwrap();
        assert_eq!(ranges, vec![3..9]);
        assert!(literal_ranges("<u>PADDED</u>", &turns).is_err());
    }
}
