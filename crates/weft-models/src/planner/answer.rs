//! One model call of the model planner: streamed, or whole (asked without
//! streaming, and told to the event sink as the chunks a stream would have
//! carried), with the fallback from one to the other and the usage estimate
//! for an answer that reports none.

use std::sync::atomic::Ordering;

use futures_util::StreamExt;
use weft_core::model::{
    ModelError, ModelRequest, ModelSummary, StreamAssembler, Usage, summary_chunks,
};
use weft_core::planner::{PlannerError, PlannerEvents};

use super::{DecodingEvents, ModelPlanner, Streaming, error_kind};

impl ModelPlanner {
    /// One model call, its answer streamed through `events`; a failure
    /// comes with its kind for the call's span.
    pub(super) async fn ask(
        &self,
        request: &ModelRequest,
        events: &DecodingEvents<'_>,
    ) -> Result<ModelSummary, (&'static str, PlannerError)> {
        let with_tools = !request.tools.is_empty();
        let whole = match self.config.streaming {
            Streaming::Never => true,
            Streaming::Always => false,
            Streaming::Auto => with_tools && self.whole_with_tools.load(Ordering::Relaxed),
        };
        let mut summary = if whole {
            self.ask_whole(request, events).await?
        } else {
            match self.ask_streamed(request, events).await {
                Err(Failed::BeforeFirstChunk(e))
                    if self.config.streaming == Streaming::Auto
                        && with_tools
                        && cannot_stream(&e) =>
                {
                    tracing::info!(
                        model = %self.model.id(),
                        error = %e,
                        "streaming with tools failed; asking for whole answers from now on"
                    );
                    self.whole_with_tools.store(true, Ordering::Relaxed);
                    self.ask_whole(request, events).await?
                }
                Err(Failed::BeforeFirstChunk(e)) => return Err((error_kind(&e), self.error(&e))),
                Err(Failed::Later(kind, e)) => return Err((kind, e)),
                Ok(summary) => summary,
            }
        };
        if summary.usage == Usage::default() {
            // The server reported none: count about four bytes per token.
            let estimate = estimated_usage(request, &summary);
            events.usage_delta(&estimate);
            summary.usage = estimate;
        }
        Ok(summary)
    }

    /// A streamed call.
    async fn ask_streamed(
        &self,
        request: &ModelRequest,
        events: &DecodingEvents<'_>,
    ) -> Result<ModelSummary, Failed> {
        let mut stream = self
            .model
            .stream(request)
            .await
            .map_err(Failed::BeforeFirstChunk)?;
        let mut asm = StreamAssembler::new();
        let mut first = true;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) if first => return Err(Failed::BeforeFirstChunk(e)),
                Err(e) => return Err(Failed::Later(error_kind(&e), self.error(&e))),
            };
            first = false;
            asm.push(chunk, events)
                .map_err(|e| Failed::Later("inconsistent_stream", self.inconsistent(&e)))?;
        }
        if first {
            // A stream that ended with nothing is a failure before the first chunk.
            return Err(Failed::BeforeFirstChunk(ModelError::Truncated {
                message: "the stream carried no answer".into(),
            }));
        }
        Ok(asm.finish(events))
    }

    /// A whole-answer call (`stream = false`), told to `events` as the
    /// chunks a stream would have carried.
    async fn ask_whole(
        &self,
        request: &ModelRequest,
        events: &DecodingEvents<'_>,
    ) -> Result<ModelSummary, (&'static str, PlannerError)> {
        let whole = self
            .model
            .complete(request)
            .await
            .map_err(|e| (error_kind(&e), self.error(&e)))?;
        let mut asm = StreamAssembler::new();
        for chunk in summary_chunks(&whole) {
            asm.push(chunk, events)
                .map_err(|e| ("inconsistent_stream", self.inconsistent(&e)))?;
        }
        Ok(asm.finish(events))
    }

    fn inconsistent(&self, e: &weft_core::model::AssembleError) -> PlannerError {
        PlannerError {
            message: format!("model {} sent an inconsistent answer: {e}", self.model.id()),
            retryable: true,
        }
    }
}

/// How a streamed call failed.
enum Failed {
    /// Before any chunk arrived: the request may be asked again another way.
    BeforeFirstChunk(ModelError),
    /// After part of the answer was told to the event sink.
    Later(&'static str, PlannerError),
}

/// Whether a failure before the first chunk says the server cannot stream
/// this request (rather than being down, slow or rate limited).
fn cannot_stream(e: &ModelError) -> bool {
    match e {
        ModelError::Http { status, .. } => *status != 429 && (400..600).contains(status),
        ModelError::Truncated { .. } | ModelError::Malformed { .. } | ModelError::Stream { .. } => {
            true
        }
        ModelError::Config { .. }
        | ModelError::Timeout { .. }
        | ModelError::Connection { .. }
        | ModelError::Overloaded { .. }
        | ModelError::Other { .. } => false,
    }
}

/// About four bytes per token: the request's messages, system prompt and
/// tools in, the answer's text, thinking and calls out.
fn estimated_usage(request: &ModelRequest, answer: &ModelSummary) -> Usage {
    let tokens = |bytes: usize| (bytes as u64).div_ceil(4);
    let input = serde_json::to_vec(&request.messages).map_or(0, |v| v.len())
        + request.system.as_ref().map_or(0, String::len)
        + serde_json::to_vec(&request.tools).map_or(0, |v| v.len());
    let output = answer.text.len()
        + serde_json::to_vec(&answer.thinking).map_or(0, |v| v.len())
        + answer
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>();
    Usage {
        input_tokens: tokens(input),
        output_tokens: tokens(output),
        estimated: true,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use weft_core::message::Message;

    use super::*;

    #[test]
    fn an_estimate_says_it_is_one() {
        let request = ModelRequest {
            messages: vec![Message::user("What is 2 + 3?")],
            ..ModelRequest::default()
        };
        let answer = ModelSummary {
            text: "5".into(),
            ..ModelSummary::default()
        };
        let usage = estimated_usage(&request, &answer);
        assert!(usage.estimated);
        assert!(
            usage.input_tokens > 0 && usage.output_tokens == 1,
            "{usage:?}"
        );
    }
}
