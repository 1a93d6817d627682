//! Tests of typed tools: schemas, validation before the handler, replies, errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use weft_core::ids::{RunId, SessionId, ToolCallId, TurnId};
use weft_core::tool::{
    FieldIssueKind, RetryHint, RetryHintProvider, RetryReason, ToolError, ToolIdent, ToolRequest,
    ToolResultBody,
};

use super::*;
use crate::reply::Content;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    query: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("city `{0}` is unknown")]
struct UnknownCity(String);

impl RetryHintProvider for UnknownCity {
    fn retry_hint(&self) -> Option<RetryHint> {
        Some(RetryHint::new(RetryReason::InvalidArguments).with_message("use a capital city"))
    }
}

impl DomainError for UnknownCity {
    fn code(&self) -> weft_core::tool::ToolErrorCode {
        "unknown_city".into()
    }
}

#[derive(Deserialize, JsonSchema)]
struct CityArgs {
    city: String,
}

#[derive(Serialize, JsonSchema)]
struct Weather {
    celsius: f64,
}

fn request(name: &str, payload: Value) -> ToolRequest {
    ToolRequest {
        name: ToolIdent::new(name),
        payload: payload.into(),
        run_id: RunId::new("run-1"),
        session_id: SessionId::new("s"),
        turn_id: TurnId::new("t"),
        tool_call_id: ToolCallId::new("c"),
        parent_tool_call_id: None,
        labels: Default::default(),
        output: Default::default(),
        elicit: Default::default(),
        children: Default::default(),
    }
}

fn calc(calls: Arc<AtomicUsize>) -> FnToolSet {
    FnToolSet::new("calc")
        .tool("add", "Adds two integers", move |args: AddArgs| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(args.a.wrapping_add(args.b)) }
        })
        .read_only()
        .idempotent()
        .title("Add")
        .tag("math")
        .tool("search", "Searches", |args: SearchArgs| async move {
            Ok::<_, ToolError>(args.query.unwrap_or_default())
        })
}

#[tokio::test]
async fn a_typed_tool_has_a_schema_and_returns_json() {
    let set = calc(Arc::default());
    let specs = set.list_tools().await.unwrap();
    let add = &specs[0];
    assert_eq!(add.name, ToolIdent::from_parts("calc", "add"));
    assert_eq!(add.description, "Adds two integers");
    assert_eq!(add.input_schema["type"], "object");
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");
    assert!(add.annotations.read_only && add.annotations.idempotent);
    assert!(
        !specs[1].annotations.read_only,
        "annotations apply to the last tool only"
    );
    assert_eq!(add.annotations.title.as_deref(), Some("Add"));
    assert_eq!(add.tags, vec!["math".to_string()]);
    let reply = set
        .call_tool(request("calc.add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(5)));
}

#[tokio::test]
async fn missing_fields_fail_before_the_handler_with_a_hint() {
    let calls = Arc::new(AtomicUsize::new(0));
    let set = calc(Arc::clone(&calls));
    for payload in [json!({"a": 1}), Value::Null] {
        let failure = set
            .call_tool(request("calc.add", payload.clone()))
            .await
            .unwrap_err();
        assert_eq!(failure.error.code, ToolError::INVALID_ARGUMENTS);
        assert!(
            failure
                .error
                .field_issues
                .iter()
                .any(|i| i.field == "/b" && i.kind == FieldIssueKind::Missing)
        );
        let hint = failure.retry_hint.unwrap();
        assert_eq!(hint.reason, RetryReason::MissingFields);
        assert!(hint.missing_fields.contains(&"/b".to_string()));
        assert_eq!(hint.example_input, Some(json!({"a": 0, "b": 0})));
        assert_eq!(hint.prior_input, Some(payload));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn wrong_types_are_invalid_arguments_not_coercions() {
    let set = calc(Arc::default());
    let failure = set
        .call_tool(request("calc.add", json!({"a": "1", "b": 2})))
        .await
        .unwrap_err();
    assert_eq!(
        failure.error.field_issues[0].kind,
        FieldIssueKind::WrongType
    );
    assert_eq!(
        failure.retry_hint.unwrap().reason,
        RetryReason::InvalidArguments
    );
    let failure = set
        .call_tool(request("calc.add", json!([1, 2])))
        .await
        .unwrap_err();
    assert_eq!(failure.error.field_issues[0].field, "");
}

#[tokio::test]
async fn null_payload_is_fine_without_required_fields() {
    let set = calc(Arc::default());
    let reply = set
        .call_tool(request("calc.search", Value::Null))
        .await
        .unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!("")));
}

#[tokio::test]
async fn domain_errors_carry_their_hint() {
    let set = FnToolSet::new("weather")
        .tool("now", "Current weather", |args: CityArgs| async move {
            if args.city == "Atlantis" {
                return Err(UnknownCity(args.city));
            }
            Ok(Weather { celsius: 21.5 })
        })
        .output_schema::<Weather>();
    assert!(set.specs()[0].output_schema.is_some());
    let failure = set
        .call_tool(request("weather.now", json!({"city": "Atlantis"})))
        .await
        .unwrap_err();
    assert_eq!(failure.error.code, "unknown_city");
    assert_eq!(failure.error.message, "city `Atlantis` is unknown");
    assert_eq!(
        failure.retry_hint.unwrap().message.as_deref(),
        Some("use a capital city")
    );
    let ok = set
        .call_tool(request("weather.now", json!({"city": "Paris"})))
        .await
        .unwrap();
    assert_eq!(ok.body, ToolResultBody::Json(json!({"celsius": 21.5})));
}

#[tokio::test]
async fn rich_replies_and_context() {
    let set = FnToolSet::new("media")
        .reply_tool("chart", "Draws a chart", |_: SearchArgs| async move {
            Ok::<_, ToolError>(ToolReply::content(
                Content::new()
                    .text("chart")
                    .image_base64("image/png", "AA=="),
            ))
        })
        .reply_tool_with_context(
            "who",
            "Names the run",
            |req: ToolRequest, _: SearchArgs| async move {
                Ok::<_, ToolFailure>(
                    ToolReply::text(req.run_id.to_string()).with_server_data(json!({"x": 1})),
                )
            },
        )
        .tool_with_context(
            "payload",
            "Echoes the payload",
            |req: ToolRequest, _: SearchArgs| async move { Ok::<_, ToolError>(req.payload) },
        );
    let chart = set
        .call_tool(request("media.chart", json!({})))
        .await
        .unwrap();
    assert!(matches!(chart.body, ToolResultBody::Content(ref c) if c.parts.len() == 2));
    let who = set
        .call_tool(request("media.who", json!({})))
        .await
        .unwrap();
    assert_eq!(
        who,
        ToolReply::text("run-1").with_server_data(json!({"x": 1}))
    );
    let echoed = set
        .call_tool(request("media.payload", Value::Null))
        .await
        .unwrap();
    assert_eq!(
        echoed.body,
        ToolResultBody::Json(json!({})),
        "the handler sees the normalized payload"
    );
}

#[tokio::test]
async fn unknown_tools_and_registration_errors() {
    let set = calc(Arc::default());
    let failure = set
        .call_tool(request("calc.mul", json!({})))
        .await
        .unwrap_err();
    assert_eq!(failure.error.code, ToolError::UNAVAILABLE);
    let failure = set
        .call_tool(request("other.add", json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    assert_eq!(failure.error.code, ToolError::UNAVAILABLE);

    let dup = calc(Arc::default()).tool("add", "again", |a: AddArgs| async move {
        Ok::<_, ToolError>(a.a)
    });
    assert!(dup.list_tools().await.is_err());
    assert!(matches!(
        dup.check(),
        Err(RegistrationError::DuplicateTool { .. })
    ));
    assert!(matches!(
        FnToolSet::new("x")
            .tool("", "nameless", |a: AddArgs| async move {
                Ok::<_, ToolError>(a.a)
            })
            .check(),
        Err(RegistrationError::EmptyName { .. })
    ));
    assert!(calc(Arc::default()).check().is_ok());
}

#[test]
fn instructions_and_description_are_capabilities() {
    let set = FnToolSet::new("x")
        .with_instructions("be nice")
        .with_public_description("X tools");
    assert_eq!(
        crate::capability::find_instructions(&set)
            .unwrap()
            .instructions_text(),
        "be nice"
    );
    assert_eq!(
        crate::capability::find_public_description(&set)
            .unwrap()
            .public_description_text(),
        "X tools"
    );
    assert!(crate::capability::find_instructions(&FnToolSet::new("y")).is_none());
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nested {
    #[allow(dead_code)]
    items: Vec<Item>,
    #[allow(dead_code)]
    mode: Option<Mode>,
}

#[derive(Deserialize, JsonSchema)]
struct Item {
    #[allow(dead_code)]
    n: u8,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Slow,
}

fn arb_payload() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop_oneof![Just("fast".to_string()), "[a-z]{0,4}"].prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        let key = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("items".to_string()),
            Just("n".to_string()),
            Just("mode".to_string()),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// Whatever the payload, a typed tool answers: a result, or invalid
    /// arguments with at least one field issue. It never panics.
    #[test]
    fn random_payloads_yield_a_result_or_field_issues(payload in arb_payload()) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let set = calc(Arc::default())
            .tool("nested", "Nested", |_: Nested| async move { Ok::<_, ToolError>(true) });
        for tool in ["calc.add", "calc.search", "calc.nested"] {
            let result = runtime.block_on(set.call_tool(request(tool, payload.clone())));
            if let Err(failure) = result {
                proptest::prop_assert_eq!(&failure.error.code, ToolError::INVALID_ARGUMENTS);
                proptest::prop_assert!(!failure.error.field_issues.is_empty());
                proptest::prop_assert!(failure.retry_hint.is_some());
            }
        }
    }
}

#[test]
fn generated_schemas_carry_definitions_and_bounds() {
    let schema = input_schema_for::<Nested>();
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(
        schema["$defs"]["Item"]["properties"]["n"]["maximum"],
        json!(255)
    );
    assert_eq!(crate::schema::example_input(&schema), json!({"items": []}));
}

async fn multiply(args: AddArgs) -> Result<i64, ToolError> {
    Ok(args.a * args.b)
}

#[tokio::test]
async fn async_fn_items_are_handlers() {
    let set = FnToolSet::new("calc")
        .tool("mul", "Multiplies", multiply)
        .check()
        .unwrap();
    let reply = set
        .call_tool(request("calc.mul", json!({"a": 6, "b": 7})))
        .await
        .unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(42)));
}
