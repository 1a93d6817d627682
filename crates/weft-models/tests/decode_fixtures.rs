//! Every recorded provider stream and body decoded offline, with chunk
//! boundaries at every possible position, against its `*.expected.json`.

mod common;

use common::{ANTHROPIC_OK, Api, check_summary, expected, fixture, split, streamed_text};
use serde_json::Value;
use weft_core::message::Thinking;
use weft_core::model::{ModelError, StreamChunk};
use weft_core::planner::NoopEvents;
use weft_models::anthropic::{self, AnthropicDecoder};
use weft_models::decode::{EventDecoder, StreamDecoder};
use weft_models::openai_chat::{self, ChatDecoder};
use weft_models::openai_responses::{self, ResponsesDecoder};

/// Decodes `bytes` fed in `chunks`, returning the chunks and the final result.
fn decode<D: EventDecoder>(
    dec: D,
    chunks: &[bytes::Bytes],
) -> (Vec<StreamChunk>, Result<(), ModelError>) {
    let mut dec = StreamDecoder::new(dec);
    let mut out = Vec::new();
    for c in chunks {
        if let Err(e) = dec.feed(c, &mut out) {
            return (out, Err(e));
        }
    }
    let res = dec.finish(&mut out);
    (out, res)
}

fn summary(chunks: Vec<StreamChunk>) -> weft_core::model::ModelSummary {
    let mut asm = weft_core::model::StreamAssembler::new();
    for c in chunks {
        asm.push(c, &NoopEvents).unwrap();
    }
    asm.finish(&NoopEvents)
}

/// Every split size from 1 to 40 bytes, plus the whole body at once.
fn split_plans(bytes: &[u8]) -> Vec<Vec<bytes::Bytes>> {
    let mut plans: Vec<Vec<bytes::Bytes>> = (1..=40).map(|n| split(bytes, &[n])).collect();
    plans.push(split(bytes, &[1, 7, 2, 64, 3]));
    plans.push(vec![bytes::Bytes::copy_from_slice(bytes)]);
    plans
}

#[test]
fn anthropic_streams_decode_exactly_at_any_split() {
    for name in ANTHROPIC_OK {
        let bytes = fixture(&format!("anthropic/{name}.sse"));
        let want = expected(&format!("anthropic/{name}.expected.json"));
        for plan in split_plans(&bytes) {
            let (chunks, res) = decode(AnthropicDecoder::default(), &plan);
            res.unwrap_or_else(|e| panic!("{name}: {e}"));
            check_summary(Api::Anthropic, &summary(chunks), &want);
        }
    }
}

#[test]
fn anthropic_stream_with_crlf_line_ends_decodes_the_same() {
    let bytes = fixture("anthropic/a4_thinking_tool_use_captured.sse");
    let crlf = String::from_utf8(bytes).unwrap().replace('\n', "\r\n");
    let want = expected("anthropic/a4_thinking_tool_use_captured.expected.json");
    for plan in split_plans(crlf.as_bytes()) {
        let (chunks, res) = decode(AnthropicDecoder::default(), &plan);
        res.unwrap();
        check_summary(Api::Anthropic, &summary(chunks), &want);
    }
}

#[test]
fn anthropic_midstream_error_is_a_retryable_stream_error_after_partial_text() {
    for (name, partial_text) in [
        ("a7_error_midstream_overloaded_docs", "Hello there"),
        ("a8_error_midstream_overloaded_observed", ""),
    ] {
        let bytes = fixture(&format!("anthropic/{name}.sse"));
        for plan in split_plans(&bytes) {
            let (chunks, res) = decode(AnthropicDecoder::default(), &plan);
            assert_eq!(
                res,
                Err(ModelError::Stream {
                    error_type: "overloaded_error".into(),
                    message: "Overloaded".into(),
                    retryable: true,
                })
            );
            let text = streamed_text(&chunks);
            assert_eq!(text, partial_text, "{name}");
        }
    }
}

#[test]
fn anthropic_truncated_max_tokens_call_keeps_raw_arguments_that_are_not_json() {
    let bytes = fixture("anthropic/a6_tool_use_truncated_max_tokens.sse");
    let (chunks, res) = decode(AnthropicDecoder::default(), &split(&bytes, &[5]));
    res.unwrap();
    assert!(
        !chunks
            .iter()
            .any(|c| matches!(c, StreamChunk::ToolCallEnd { .. })),
        "the call never ended"
    );
    let s = summary(chunks);
    assert!(serde_json::from_str::<Value>(&s.tool_calls[0].arguments).is_err());
}

#[test]
fn anthropic_stream_cut_before_message_stop_is_truncated() {
    let bytes = fixture("anthropic/a3_tool_use_docs.sse");
    let cut = &bytes[..bytes.len() / 2];
    let (_, res) = decode(AnthropicDecoder::default(), &split(cut, &[9]));
    assert_eq!(
        res,
        Err(ModelError::Truncated {
            message: "the stream ended before `message_stop`".into()
        })
    );
}

#[test]
fn malformed_data_line_is_a_typed_error_naming_the_line() {
    let body = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"\n\n";
    let (_, res) = decode(AnthropicDecoder::default(), &split(body, &[4]));
    match res {
        Err(ModelError::Malformed { line, .. }) => assert_eq!(
            line,
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\""
        ),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn multibyte_text_split_mid_character_decodes_intact() {
    let text = "héllo 🌍 日本語";
    let body = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":3,\"output_tokens\":1}}}}}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n\
         event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":7}}}}\n\n\
         event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    );
    for n in 1..=16 {
        let (chunks, res) = decode(AnthropicDecoder::default(), &split(body.as_bytes(), &[n]));
        res.unwrap();
        let s = summary(chunks);
        assert_eq!(s.text, text);
        assert_eq!((s.usage.input_tokens, s.usage.output_tokens), (3, 7));
    }
}

#[test]
fn anthropic_bodies_decode_exactly() {
    for name in [
        "a9_nonstream_tool_use",
        "a10_nonstream_parallel_tool_use_sdk",
    ] {
        let body = String::from_utf8(fixture(&format!("anthropic/{name}.body.json"))).unwrap();
        let s = summary(anthropic::decode_body(&body).unwrap());
        check_summary(
            Api::Anthropic,
            &s,
            &expected(&format!("anthropic/{name}.expected.json")),
        );
    }
}

#[test]
fn chat_streams_decode_exactly_at_any_split() {
    for name in ["c1_text_include_usage", "c2_parallel_tool_calls"] {
        let bytes = fixture(&format!("openai_chat/{name}.sse"));
        let want = expected(&format!("openai_chat/{name}.expected.json"));
        for plan in split_plans(&bytes) {
            let (chunks, res) = decode(ChatDecoder::new(false), &plan);
            res.unwrap();
            check_summary(Api::Chat, &summary(chunks), &want);
        }
    }
}

#[test]
fn chat_stream_without_done_is_truncated_for_openai_and_accepted_for_compat() {
    let bytes = fixture("openai_chat/c1_text_include_usage.sse");
    let text = String::from_utf8(bytes).unwrap();
    let cut = text.replace("data: [DONE]\n\n", "");
    let (_, res) = decode(ChatDecoder::new(false), &split(cut.as_bytes(), &[11]));
    assert_eq!(
        res,
        Err(ModelError::Truncated {
            message: "the stream ended before `data: [DONE]`".into()
        })
    );
    let (chunks, res) = decode(ChatDecoder::new(true), &split(cut.as_bytes(), &[11]));
    res.unwrap();
    check_summary(
        Api::Chat,
        &summary(chunks),
        &expected("openai_chat/c1_text_include_usage.expected.json"),
    );
}

#[test]
fn chat_bodies_decode_exactly() {
    for name in [
        "c3_nonstream_tool_call",
        "c4_nonstream_parallel_tool_calls_sdk",
    ] {
        let body = String::from_utf8(fixture(&format!("openai_chat/{name}.body.json"))).unwrap();
        let s = summary(openai_chat::decode_body(&body).unwrap());
        check_summary(
            Api::Chat,
            &s,
            &expected(&format!("openai_chat/{name}.expected.json")),
        );
    }
}

#[test]
fn responses_streams_decode_exactly_at_any_split() {
    for name in [
        "r1_text",
        "r2_function_call",
        "r3_reasoning_summary_function_call",
    ] {
        let bytes = fixture(&format!("openai_responses/{name}.sse"));
        let want = expected(&format!("openai_responses/{name}.expected.json"));
        for plan in split_plans(&bytes) {
            let (chunks, res) = decode(ResponsesDecoder::default(), &plan);
            res.unwrap();
            check_summary(Api::Responses, &summary(chunks), &want);
        }
    }
}

#[test]
fn responses_reasoning_item_is_kept_byte_for_byte_from_output_item_done() {
    let bytes = fixture("openai_responses/r3_reasoning_summary_function_call.sse");
    let want = expected("openai_responses/r3_reasoning_summary_function_call.expected.json");
    let (chunks, res) = decode(ResponsesDecoder::default(), &split(&bytes, &[13]));
    res.unwrap();
    let s = summary(chunks);
    let [Thinking::OpenAiReasoning { item }] = s.thinking.as_slice() else {
        panic!("one reasoning item expected, got {:?}", s.thinking);
    };
    // The item's text appears verbatim in the stream's output_item.done event.
    let text = String::from_utf8(bytes).unwrap();
    let done_line = text
        .lines()
        .find(|l| {
            l.starts_with("data: {\"type\":\"response.output_item.done\"")
                && l.contains("\"reasoning\"")
        })
        .unwrap();
    assert!(done_line.contains(item.as_str()));
    let parsed: Value = serde_json::from_str(item).unwrap();
    assert_eq!(
        parsed["encrypted_content"],
        want["alt_encrypted_content_from_output_item_done"]
    );
    assert_eq!(parsed["encrypted_content"].as_str().unwrap().len(), 1572);
    assert_eq!(
        parsed["summary"],
        want["items_to_send_back_next_turn"][0]["summary"]
    );
    assert_eq!(parsed["id"], want["items_to_send_back_next_turn"][0]["id"]);
}

#[test]
fn responses_body_decodes_exactly() {
    let body = String::from_utf8(fixture(
        "openai_responses/r4_nonstream_function_call.body.json",
    ))
    .unwrap();
    let s = summary(openai_responses::decode_body(&body).unwrap());
    check_summary(
        Api::Responses,
        &s,
        &expected("openai_responses/r4_nonstream_function_call.expected.json"),
    );
}

#[test]
fn responses_done_events_are_checked_against_the_deltas() {
    let text = String::from_utf8(fixture("openai_responses/r1_text.sse")).unwrap();
    // A server that skips the deltas: the text comes from `output_text.done`.
    let no_deltas: String = text
        .split("\n\n")
        .filter(|e| !e.contains("response.output_text.delta"))
        .map(|e| format!("{e}\n\n"))
        .collect();
    let (chunks, res) = decode(
        ResponsesDecoder::default(),
        &split(no_deltas.as_bytes(), &[19]),
    );
    res.unwrap();
    assert_eq!(summary(chunks).text, "Hi in Portuguese is \"Oi!\"");
    // A `.done` that contradicts the deltas is a typed error.
    let tampered = text.replace(
        "\"text\":\"Hi in Portuguese is \\\"Oi!\\\"\"",
        "\"text\":\"Bye\"",
    );
    assert_ne!(tampered, text);
    let (_, res) = decode(
        ResponsesDecoder::default(),
        &split(tampered.as_bytes(), &[19]),
    );
    match res {
        Err(ModelError::Malformed { message, .. }) => {
            assert_eq!(message, "output text differs from its streamed deltas")
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn chat_refusal_streams_as_text_with_a_refusal_stop() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I'm sorry, I can't \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"help with that.\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let (chunks, res) = decode(ChatDecoder::new(false), &split(body.as_bytes(), &[7]));
    res.unwrap();
    let s = summary(chunks);
    assert_eq!(s.text, "I'm sorry, I can't help with that.");
    assert_eq!(s.stop_reason, Some(weft_core::model::StopReason::Refusal));
}
