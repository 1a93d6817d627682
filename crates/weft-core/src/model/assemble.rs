//! The stream assembler: a sans-IO fold of [`StreamChunk`]s into a
//! [`ModelSummary`], forwarding each chunk to a [`PlannerEvents`] sink as it
//! arrives (text, argument fragments, completed thinking blocks, usage).

use crate::ids::ToolCallId;
use crate::message::Thinking;
use crate::model::{ModelSummary, ModelToolCall, StreamChunk, Usage};
use crate::planner::PlannerEvents;

/// Why a chunk sequence cannot be assembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssembleError {
    /// An argument delta or end refers to a call that never started.
    #[error("tool call index {index} was not started")]
    UnknownCallIndex {
        /// The index given.
        index: u32,
    },
    /// Two calls started with the same index.
    #[error("tool call index {index} started twice")]
    DuplicateCallIndex {
        /// The index given.
        index: u32,
    },
    /// A signature arrived with no thinking block open.
    #[error("thinking signature without a thinking block")]
    SignatureWithoutThinking,
}

/// Folds stream chunks into a summary; see the module docs.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    summary: ModelSummary,
    open_thinking: Option<(String, Option<String>)>,
    calls: Vec<(u32, ModelToolCall)>,
}

impl StreamAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one chunk, forwarding it to `events`.
    pub fn push(
        &mut self,
        chunk: StreamChunk,
        events: &dyn PlannerEvents,
    ) -> Result<(), AssembleError> {
        match chunk {
            StreamChunk::TextDelta { text } => {
                self.close_thinking(events);
                events.assistant_chunk(&text);
                self.summary.text.push_str(&text);
            }
            StreamChunk::ThinkingDelta { text } => match &mut self.open_thinking {
                Some((buf, None)) => buf.push_str(&text),
                _ => {
                    self.close_thinking(events);
                    self.open_thinking = Some((text, None));
                }
            },
            StreamChunk::ThinkingSignature { signature } => match &mut self.open_thinking {
                Some((_, sig)) => sig.get_or_insert_with(String::new).push_str(&signature),
                None => return Err(AssembleError::SignatureWithoutThinking),
            },
            StreamChunk::ThinkingBlock { thinking } => {
                self.close_thinking(events);
                events.thinking_block(&thinking);
                self.summary.thinking.push(thinking);
            }
            StreamChunk::ToolCallStart { index, id, name } => {
                self.close_thinking(events);
                if self.calls.iter().any(|(i, _)| *i == index) {
                    return Err(AssembleError::DuplicateCallIndex { index });
                }
                self.calls.push((
                    index,
                    ModelToolCall {
                        id,
                        name,
                        arguments: String::new(),
                    },
                ));
            }
            StreamChunk::ToolCallArgsDelta { index, delta } => {
                let call = self.call_mut(index)?;
                call.arguments.push_str(&delta);
                let (id, name): (&ToolCallId, &str) = (&call.id, &call.name);
                events.tool_call_args_delta(id, name, &delta);
            }
            StreamChunk::ToolCallEnd { index } => {
                self.call_mut(index)?;
            }
            StreamChunk::Usage { usage } => {
                // Chunks carry running totals; events carry what changed, so
                // a consumer summing `Usage` events counts each token once.
                let before = self.summary.usage;
                merge_usage(&mut self.summary.usage, &usage);
                let delta = usage_change(&before, &self.summary.usage);
                if delta != Usage::default() {
                    events.usage_delta(&delta);
                }
            }
            StreamChunk::Stop { reason } => {
                self.close_thinking(events);
                self.summary.stop_reason = Some(reason);
            }
        }
        Ok(())
    }

    /// The assembled summary.
    pub fn finish(mut self, events: &dyn PlannerEvents) -> ModelSummary {
        self.close_thinking(events);
        self.summary.tool_calls = self.calls.into_iter().map(|(_, c)| c).collect();
        self.summary
    }

    fn call_mut(&mut self, index: u32) -> Result<&mut ModelToolCall, AssembleError> {
        self.calls
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, c)| c)
            .ok_or(AssembleError::UnknownCallIndex { index })
    }

    fn close_thinking(&mut self, events: &dyn PlannerEvents) {
        if let Some((text, signature)) = self.open_thinking.take() {
            let thinking = Thinking::Text { text, signature };
            events.thinking_block(&thinking);
            self.summary.thinking.push(thinking);
        }
    }
}

/// A whole answer as the chunks a stream would have carried, in order: its
/// thinking blocks, its text, each tool call, its usage and why it stopped.
/// Pushed through a [`StreamAssembler`], they give the same summary back and
/// the same planner events as the stream would have.
pub fn summary_chunks(summary: &ModelSummary) -> Vec<StreamChunk> {
    let mut chunks: Vec<StreamChunk> = summary
        .thinking
        .iter()
        .map(|t| StreamChunk::ThinkingBlock {
            thinking: t.clone(),
        })
        .collect();
    if !summary.text.is_empty() {
        chunks.push(StreamChunk::TextDelta {
            text: summary.text.clone(),
        });
    }
    for (index, call) in (0u32..).zip(&summary.tool_calls) {
        chunks.push(StreamChunk::ToolCallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        if !call.arguments.is_empty() {
            chunks.push(StreamChunk::ToolCallArgsDelta {
                index,
                delta: call.arguments.clone(),
            });
        }
        chunks.push(StreamChunk::ToolCallEnd { index });
    }
    if summary.usage != Usage::default() {
        chunks.push(StreamChunk::Usage {
            usage: summary.usage,
        });
    }
    if let Some(reason) = &summary.stop_reason {
        chunks.push(StreamChunk::Stop {
            reason: reason.clone(),
        });
    }
    chunks
}

/// Usage chunks carry running totals: a non-zero field replaces the earlier value.
/// What rose from `before` to `after` (totals never fall; a field that did
/// counts as unchanged).
fn usage_change(before: &Usage, after: &Usage) -> Usage {
    Usage {
        input_tokens: after.input_tokens.saturating_sub(before.input_tokens),
        output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
        cache_read_tokens: after
            .cache_read_tokens
            .saturating_sub(before.cache_read_tokens),
        cache_creation_tokens: after
            .cache_creation_tokens
            .saturating_sub(before.cache_creation_tokens),
        cost_usd: None,
        estimated: after.estimated,
    }
}

fn merge_usage(into: &mut Usage, chunk: &Usage) {
    for (dst, src) in [
        (&mut into.input_tokens, chunk.input_tokens),
        (&mut into.output_tokens, chunk.output_tokens),
        (&mut into.cache_read_tokens, chunk.cache_read_tokens),
        (&mut into.cache_creation_tokens, chunk.cache_creation_tokens),
    ] {
        if src != 0 {
            *dst = src;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::model::StopReason;
    use crate::tool::Labels;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl PlannerEvents for Recorder {
        fn assistant_chunk(&self, text: &str) {
            self.0.lock().unwrap().push(format!("text:{text}"));
        }
        fn tool_call_args_delta(&self, id: &ToolCallId, tool: &str, delta: &str) {
            self.0
                .lock()
                .unwrap()
                .push(format!("args:{id}:{tool}:{delta}"));
        }
        fn thinking_block(&self, thinking: &Thinking) {
            self.0
                .lock()
                .unwrap()
                .push(format!("thinking:{thinking:?}"));
        }
        fn planner_thought(&self, text: &str, _labels: &Labels) {
            self.0.lock().unwrap().push(format!("thought:{text}"));
        }
        fn usage_delta(&self, usage: &Usage) {
            self.0
                .lock()
                .unwrap()
                .push(format!("usage:{}", usage.output_tokens));
        }
    }

    #[test]
    fn assembles_text_thinking_calls_and_forwards_events() {
        let rec = Recorder::default();
        let mut asm = StreamAssembler::new();
        let chunks = vec![
            StreamChunk::ThinkingDelta { text: "hm".into() },
            StreamChunk::ThinkingDelta { text: "m".into() },
            StreamChunk::ThinkingSignature {
                signature: "sig".into(),
            },
            StreamChunk::TextDelta { text: "Hi".into() },
            StreamChunk::ToolCallStart {
                index: 1,
                id: "c1".into(),
                name: "calc.add".into(),
            },
            StreamChunk::ToolCallArgsDelta {
                index: 1,
                delta: "{\"a\":".into(),
            },
            StreamChunk::ToolCallArgsDelta {
                index: 1,
                delta: "1}".into(),
            },
            StreamChunk::ToolCallEnd { index: 1 },
            StreamChunk::Usage {
                usage: Usage {
                    input_tokens: 5,
                    output_tokens: 1,
                    ..Usage::default()
                },
            },
            StreamChunk::Usage {
                usage: Usage {
                    output_tokens: 9,
                    ..Usage::default()
                },
            },
            StreamChunk::Stop {
                reason: StopReason::ToolUse,
            },
        ];
        for c in chunks {
            asm.push(c, &rec).unwrap();
        }
        let summary = asm.finish(&rec);
        assert_eq!(summary.text, "Hi");
        assert_eq!(
            summary.thinking,
            vec![Thinking::Text {
                text: "hmm".into(),
                signature: Some("sig".into())
            }]
        );
        assert_eq!(summary.tool_calls.len(), 1);
        assert_eq!(summary.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(summary.usage.input_tokens, 5);
        assert_eq!(summary.usage.output_tokens, 9);
        assert_eq!(summary.stop_reason, Some(StopReason::ToolUse));
        let log = rec.0.lock().unwrap();
        assert_eq!(log[1], "text:Hi");
        assert!(log[0].starts_with("thinking:"));
        assert_eq!(log[2], "args:c1:calc.add:{\"a\":");
        // Usage chunks are running totals (1, then 9 output tokens); the
        // events carry the changes, which sum to the totals: 1 + 8.
        let usage: Vec<&String> = log.iter().filter(|l| l.starts_with("usage:")).collect();
        assert_eq!(usage, ["usage:1", "usage:8"]);
    }

    #[test]
    fn rejects_unknown_and_duplicate_indices() {
        let rec = Recorder::default();
        let mut asm = StreamAssembler::new();
        assert_eq!(
            asm.push(
                StreamChunk::ToolCallArgsDelta {
                    index: 0,
                    delta: "x".into()
                },
                &rec
            ),
            Err(AssembleError::UnknownCallIndex { index: 0 })
        );
        asm.push(
            StreamChunk::ToolCallStart {
                index: 0,
                id: "a".into(),
                name: "t".into(),
            },
            &rec,
        )
        .unwrap();
        assert_eq!(
            asm.push(
                StreamChunk::ToolCallStart {
                    index: 0,
                    id: "b".into(),
                    name: "t".into()
                },
                &rec
            ),
            Err(AssembleError::DuplicateCallIndex { index: 0 })
        );
    }
}
