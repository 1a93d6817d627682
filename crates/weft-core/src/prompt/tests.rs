use serde_json::json;

use super::*;

#[test]
fn renders_strictly_and_names_what_went_wrong() {
    let t = PromptTemplate::new(
        "greet",
        "Hi {{ name }}{% for x in items %}, {{ x }}{% endfor %}!",
    );
    let vars = json!({"name": "Ada", "items": [1, 2]});
    assert_eq!(render_template(&t, &vars).as_deref(), Ok("Hi Ada, 1, 2!"));
    match render_template(&t, &json!({"items": []})) {
        Err(PromptError::Render {
            id,
            version,
            message,
        }) => {
            assert_eq!(id, "greet");
            assert_eq!(version, t.version);
            assert!(message.contains("undefined"), "{message}");
        }
        other => panic!("expected a render error, got {other:?}"),
    }
    assert!(matches!(
        check_template("bad", "{% if %}"),
        Err(PromptError::Render { .. })
    ));
    assert!(matches!(
        render_template(
            &PromptTemplate::new("loop", "{% for i in range(100000) %}{{ i }}{% endfor %}"),
            &json!({})
        ),
        Err(PromptError::Render { .. })
    ));
    let long = "x".repeat(MAX_TEMPLATE_BYTES + 1);
    assert!(matches!(
        check_template("long", &long),
        Err(PromptError::TooLong { .. })
    ));
}

#[test]
fn versions_follow_the_text() {
    assert_eq!(template_version("a"), template_version("a"));
    assert_ne!(template_version("a"), template_version("b"));
    assert_eq!(template_version(""), "cbf29ce484222325");
}

#[test]
fn an_override_wins_and_is_named_in_the_render() {
    let prompts = [("system".to_owned(), "agent {{ x }}".to_owned())];
    let registry = PromptRegistry::new(prompts.iter().map(|(k, v)| (k, v)));
    let vars = json!({"x": 1});
    let (text, rendered) = registry
        .render("system", None, &vars)
        .unwrap_or_default_pair();
    assert_eq!(text, "agent 1");
    assert_eq!(rendered.override_scope, None);
    assert_eq!(rendered.version, template_version("agent {{ x }}"));

    let scope = PromptScope {
        tenant: Some("acme".into()),
        session_id: Some(SessionId::new("s1")),
        ..PromptScope::default()
    };
    let registry = registry.with_overrides([PromptOverride {
        name: "system".into(),
        scope: scope.clone(),
        template: "override {{ x }}".into(),
        updated_at: Timestamp::from_millis(1),
    }]);
    let (text, rendered) = registry
        .render("system", None, &vars)
        .unwrap_or_default_pair();
    assert_eq!(text, "override 1");
    assert_eq!(rendered.override_scope, Some(scope));

    let (text, rendered) = registry
        .render("other", Some("fallback {{ x }}"), &vars)
        .unwrap_or_default_pair();
    assert_eq!(
        (text.as_str(), rendered.template_id.as_str()),
        ("fallback 1", "other")
    );
    assert_eq!(
        registry.render("other", None, &vars),
        Err(PromptError::Unknown { id: "other".into() })
    );
}

trait OrDefault {
    fn unwrap_or_default_pair(self) -> (String, PromptRendered);
}

impl OrDefault for Result<(String, PromptRendered), PromptError> {
    fn unwrap_or_default_pair(self) -> (String, PromptRendered) {
        match self {
            Ok(pair) => pair,
            Err(e) => panic!("render failed: {e}"),
        }
    }
}
