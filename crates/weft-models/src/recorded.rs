//! A recorded model: a [`ModelClient`] that plays back the answers a run's
//! log recorded (`model_output` events), one per call, for replay. It sends
//! nothing anywhere; a call past the recording is a typed error.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use weft_core::model::{
    ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary, StreamChunk,
};

/// Plays back recorded model answers in order; see the module docs.
#[derive(Debug)]
pub struct RecordedModel {
    id: String,
    outputs: Mutex<VecDeque<ModelSummary>>,
    played: Mutex<u32>,
}

impl RecordedModel {
    /// A model named `id` answering with `outputs`, in order.
    pub fn new(id: impl Into<String>, outputs: Vec<ModelSummary>) -> Self {
        Self {
            id: id.into(),
            outputs: Mutex::new(outputs.into()),
            played: Mutex::new(0),
        }
    }

    /// How many recorded answers are left.
    pub fn remaining(&self) -> usize {
        self.outputs.lock().map(|o| o.len()).unwrap_or(0)
    }

    fn next(&self) -> Result<ModelSummary, ModelError> {
        let poisoned = || ModelError::Other {
            message: "recorded model lock poisoned".into(),
        };
        let mut played = self.played.lock().map_err(|_| poisoned())?;
        *played += 1;
        self.outputs
            .lock()
            .map_err(|_| poisoned())?
            .pop_front()
            .ok_or_else(|| ModelError::Other {
                message: format!("the recorded run has no model output for call {}", *played),
            })
    }
}

/// The chunks that assemble back into `output`: thinking blocks, the text,
/// each tool call whole, usage, and the stop reason.
pub fn chunks_of(output: ModelSummary) -> Vec<StreamChunk> {
    let mut out: Vec<StreamChunk> = output
        .thinking
        .into_iter()
        .map(|thinking| StreamChunk::ThinkingBlock { thinking })
        .collect();
    if !output.text.is_empty() {
        out.push(StreamChunk::TextDelta { text: output.text });
    }
    for (i, call) in output.tool_calls.into_iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        out.push(StreamChunk::ToolCallStart {
            index,
            id: call.id,
            name: call.name,
        });
        if !call.arguments.is_empty() {
            out.push(StreamChunk::ToolCallArgsDelta {
                index,
                delta: call.arguments,
            });
        }
        out.push(StreamChunk::ToolCallEnd { index });
    }
    out.push(StreamChunk::Usage {
        usage: output.usage,
    });
    if let Some(reason) = output.stop_reason {
        out.push(StreamChunk::Stop { reason });
    }
    out
}

#[async_trait]
impl ModelClient for RecordedModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, _request: &ModelRequest) -> Result<ModelSummary, ModelError> {
        self.next()
    }

    async fn stream(&self, _request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        let chunks = chunks_of(self.next()?);
        Ok(Box::pin(futures_util::stream::iter(
            chunks.into_iter().map(Ok),
        )))
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;
    use weft_core::message::Thinking;
    use weft_core::model::{ModelToolCall, StopReason, StreamAssembler, Usage};
    use weft_core::planner::NoopEvents;

    use super::*;

    fn answer() -> ModelSummary {
        ModelSummary {
            text: "Adding.".into(),
            thinking: vec![Thinking::Text {
                text: "hm".into(),
                signature: Some("sig".into()),
            }],
            tool_calls: vec![
                ModelToolCall {
                    id: "c1".into(),
                    name: "calc__add".into(),
                    arguments: "{\"a\":2,\"b\":3}".into(),
                },
                ModelToolCall {
                    id: "c2".into(),
                    name: "calc__now".into(),
                    arguments: String::new(),
                },
            ],
            usage: Usage {
                input_tokens: 12,
                output_tokens: 7,
                ..Usage::default()
            },
            stop_reason: Some(StopReason::ToolUse),
        }
    }

    #[tokio::test]
    async fn streams_assemble_back_into_the_recorded_answer_then_run_out() {
        let m = RecordedModel::new("openai/gpt-x", vec![answer()]);
        let mut stream = m.stream(&ModelRequest::default()).await.unwrap();
        let mut asm = StreamAssembler::new();
        while let Some(chunk) = stream.next().await {
            asm.push(chunk.unwrap(), &NoopEvents).unwrap();
        }
        assert_eq!(asm.finish(&NoopEvents), answer());
        assert_eq!(m.remaining(), 0);
        let err = m.complete(&ModelRequest::default()).await.unwrap_err();
        assert!(
            err.to_string().contains("no model output for call 2"),
            "{err}"
        );
    }
}
