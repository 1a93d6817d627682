//! Golden fixtures of every wire message, written from loom-mcp's struct
//! definitions: weft decodes each fixture and encodes exactly its bytes, and
//! messages built in code encode to the same bytes.

use serde_json::json;
use weft_registry::wire::{
    self, ServerDataItem, ToolCallMessage, ToolCallMeta, ToolOutputDeltaMessage, ToolResultMessage,
    WireBounds, WireFieldIssue, WireToolError,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn roundtrip<T>(name: &str)
where
    T: serde::Serialize + for<'a> serde::Deserialize<'a>,
{
    let bytes = fixture(name);
    let msg: T = wire::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let again = wire::encode(&msg);
    assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(&bytes),
        "{name}"
    );
}

#[test]
fn every_fixture_decodes_and_encodes_to_the_same_bytes() {
    roundtrip::<ToolCallMessage>("tool_call_message.call.json");
    roundtrip::<ToolCallMessage>("tool_call_message.call_minimal.json");
    roundtrip::<ToolCallMessage>("tool_call_message.ping.json");
    roundtrip::<ToolResultMessage>("tool_result_message.ok.json");
    roundtrip::<ToolResultMessage>("tool_result_message.ok_bounds_minimal.json");
    roundtrip::<ToolResultMessage>("tool_result_message.error.json");
    roundtrip::<ToolResultMessage>("tool_result_message.error_plain.json");
    roundtrip::<ToolOutputDeltaMessage>("tool_output_delta_message.json");
}

fn assert_encodes<T: serde::Serialize>(msg: &T, name: &str) {
    assert_eq!(
        String::from_utf8(wire::encode(msg)).unwrap(),
        String::from_utf8(fixture(name)).unwrap(),
        "{name}"
    );
}

#[test]
fn a_full_call_encodes_to_the_fixture() {
    let msg = ToolCallMessage {
        kind: wire::TYPE_CALL.into(),
        tool_use_id: "call_01J3K9Q9T6E2G7N0G2ZQH2KX1A".into(),
        tool: "calc.add".into(),
        payload: Some(wire::raw(&json!({"a": 1, "b": 2}))),
        meta: Some(ToolCallMeta {
            run_id: "run_01J3K9".into(),
            session_id: "sess_01J3K9".into(),
            turn_id: "run_01J3K9/1".into(),
            tool_call_id: "call_01J3K9Q9T6E2G7N0G2ZQH2KX1A".into(),
            parent_tool_call_id: "call_parent".into(),
        }),
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
        tracestate: "vendor=value".into(),
        baggage: "user=alice".into(),
        ..Default::default()
    };
    assert_encodes(&msg, "tool_call_message.call.json");
    let decoded: ToolCallMessage = wire::decode(&fixture("tool_call_message.call.json")).unwrap();
    assert_eq!(decoded, msg);
}

#[test]
fn a_minimal_call_keeps_run_and_session_and_escapes_like_go() {
    let msg = ToolCallMessage {
        kind: wire::TYPE_CALL.into(),
        tool_use_id: "5f0c6c1e-8f0d-4c4e-9d55-0b8f3f5f2a10".into(),
        tool: "text.upper".into(),
        payload: Some(wire::raw(&json!({"text": "a <b> & c"}))),
        meta: Some(ToolCallMeta {
            run_id: "run_1".into(),
            session_id: "sess_1".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_encodes(&msg, "tool_call_message.call_minimal.json");
    let decoded: ToolCallMessage =
        wire::decode(&fixture("tool_call_message.call_minimal.json")).unwrap();
    let payload: serde_json::Value =
        serde_json::from_str(decoded.payload.as_ref().unwrap().get()).unwrap();
    assert_eq!(payload, json!({"text": "a <b> & c"}));
}

#[test]
fn a_ping_encodes_to_the_fixture() {
    let msg = ToolCallMessage {
        kind: wire::TYPE_PING.into(),
        ping_id: "9c1d1a6f0e5b4f6a8a7d3c2b1a0f9e8d/0b7e4f3a-2c1d-4e5f-8a9b-0c1d2e3f4a5b".into(),
        ..Default::default()
    };
    assert_encodes(&msg, "tool_call_message.ping.json");
}

#[test]
fn results_encode_to_the_fixtures() {
    let ok = ToolResultMessage {
        tool_use_id: "call_01J3K9Q9T6E2G7N0G2ZQH2KX1A".into(),
        result: Some(wire::raw(&json!({"items": ["a", "b"], "sum": 3}))),
        bounds: Some(WireBounds {
            returned: 2,
            total: Some(10),
            truncated: true,
            next_cursor: Some("cursor-2".into()),
            refinement_hint: "filter by date".into(),
        }),
        server_data: vec![
            ServerDataItem {
                kind: "chart".into(),
                audience: "timeline".into(),
                data: Some(wire::raw(&json!({"points": [1, 2]}))),
            },
            ServerDataItem {
                kind: "note".into(),
                audience: "internal".into(),
                data: None,
            },
        ],
        error: None,
    };
    assert_encodes(&ok, "tool_result_message.ok.json");
    let minimal = ToolResultMessage {
        tool_use_id: "call_2".into(),
        result: Some(wire::raw(&json!({"n": 1}))),
        bounds: Some(WireBounds {
            returned: 1,
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_encodes(&minimal, "tool_result_message.ok_bounds_minimal.json");
    let issue = |field: &str, constraint: &str| WireFieldIssue {
        field: field.into(),
        constraint: constraint.into(),
        ..Default::default()
    };
    let err = ToolResultMessage {
        tool_use_id: "call_3".into(),
        error: Some(WireToolError {
            code: "invalid_arguments".into(),
            message: "payload does not match the schema".into(),
            issues: vec![
                issue("a", "missing_field"),
                WireFieldIssue {
                    allowed: Some(vec!["fast".into(), "slow".into()]),
                    ..issue("mode", "invalid_enum_value")
                },
                WireFieldIssue {
                    min_len: Some(1),
                    max_len: Some(8),
                    ..issue("name", "invalid_length")
                },
            ],
        }),
        ..Default::default()
    };
    assert_encodes(&err, "tool_result_message.error.json");
    let plain = ToolResultMessage {
        tool_use_id: "call_4".into(),
        error: Some(WireToolError {
            code: "timeout".into(),
            message: "tool did not finish within 30000 ms".into(),
            issues: vec![],
        }),
        ..Default::default()
    };
    assert_encodes(&plain, "tool_result_message.error_plain.json");
}

#[test]
fn a_delta_encodes_to_the_fixture() {
    let msg = ToolOutputDeltaMessage {
        tool_use_id: "call_01J3K9Q9T6E2G7N0G2ZQH2KX1A".into(),
        stream: "stdout".into(),
        delta: "step 1 of 3\n".into(),
    };
    assert_encodes(&msg, "tool_output_delta_message.json");
}

#[test]
fn lower_case_issue_and_bounds_names_decode_too() {
    let msg: ToolResultMessage = wire::decode(
        br#"{"tool_use_id":"x","bounds":{"returned":1,"truncated":true},"error":{"code":"c","message":"m","issues":[{"field":"a","constraint":"missing_field"}]}}"#,
    )
    .unwrap();
    assert_eq!(msg.bounds.unwrap().returned, 1);
    assert_eq!(msg.error.unwrap().issues[0].field, "a");
}

#[test]
fn stream_names_match_loom_mcp() {
    assert_eq!(wire::toolset_stream("calc"), "toolset:calc:requests");
    assert_eq!(wire::result_stream("abc"), "result:abc");
}
