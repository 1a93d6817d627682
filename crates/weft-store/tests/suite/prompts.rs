//! Prompt override tests: precedence across session, tenant and labels, and
//! paged listings within a tenant.

use weft_core::session::{
    FullStore, PromptCursor, PromptFilter, PromptOverride, PromptScope, TENANT_LABEL,
};
use weft_core::tool::Labels;
use weft_core::{SessionId, Timestamp};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn scope(tenant: Option<&str>, session: Option<&str>, l: &[(&str, &str)]) -> PromptScope {
    PromptScope {
        tenant: tenant.map(str::to_owned),
        session_id: session.map(SessionId::new),
        labels: labels(l),
    }
}

fn set(name: &str, scope: PromptScope, template: &str, at: u64) -> PromptOverride {
    PromptOverride {
        name: name.into(),
        scope,
        template: template.into(),
        updated_at: Timestamp::from_millis(at),
    }
}

/// Session beats tenant, tenant beats labels alone, more labels beat
/// fewer, and another tenant's overrides never apply.
pub async fn prompt_override_precedence_with_tenants(store: &dyn FullStore) {
    for o in [
        set("system", scope(None, None, &[]), "global", 1),
        set(
            "system",
            scope(None, None, &[("env", "prod"), ("tier", "a")]),
            "labels2",
            2,
        ),
        set("system", scope(Some("acme"), None, &[]), "acme", 3),
        set(
            "system",
            scope(Some("acme"), None, &[("env", "prod")]),
            "acme prod",
            4,
        ),
        set("system", scope(Some("globex"), None, &[]), "globex", 5),
        set("system", scope(None, Some("s1"), &[]), "s1", 6),
        set(
            "system",
            scope(Some("globex"), Some("s2"), &[]),
            "globex s2",
            7,
        ),
        set("other", scope(Some("acme"), None, &[]), "acme other", 8),
    ] {
        store.set_prompt_override(&o).await.unwrap();
    }
    let resolve = |session: &'static str, l: Labels| async move {
        store
            .resolve_prompt("system", &SessionId::new(session), &l)
            .await
            .unwrap()
            .map(|o| o.template)
    };
    let acme = |extra: &[(&str, &str)]| {
        let mut l = labels(extra);
        l.insert(TENANT_LABEL.to_owned(), "acme".to_owned());
        l
    };
    // No tenant: labels decide, then the global one.
    assert_eq!(
        resolve("s9", Labels::new()).await.as_deref(),
        Some("global")
    );
    assert_eq!(
        resolve("s9", labels(&[("env", "prod"), ("tier", "a")]))
            .await
            .as_deref(),
        Some("labels2")
    );
    // A tenant beats any number of labels without one.
    assert_eq!(
        resolve("s9", acme(&[("env", "prod"), ("tier", "a")]))
            .await
            .as_deref(),
        Some("acme prod")
    );
    assert_eq!(resolve("s9", acme(&[])).await.as_deref(), Some("acme"));
    // A session beats a tenant.
    assert_eq!(
        resolve("s1", acme(&[("env", "prod")])).await.as_deref(),
        Some("s1")
    );
    // Another tenant's session override never applies.
    assert_eq!(resolve("s2", acme(&[])).await.as_deref(), Some("acme"));

    let all = store
        .resolve_prompts(&SessionId::new("s9"), &acme(&[("env", "prod")]))
        .await
        .unwrap();
    let picked: Vec<(&str, &str)> = all
        .iter()
        .map(|o| (o.name.as_str(), o.template.as_str()))
        .collect();
    assert_eq!(picked, [("other", "acme other"), ("system", "acme prod")]);

    // Clearing the most specific one falls back to the next.
    assert!(
        store
            .delete_prompt_override("system", &scope(Some("acme"), None, &[("env", "prod")]))
            .await
            .unwrap()
    );
    assert_eq!(
        resolve("s9", acme(&[("env", "prod")])).await.as_deref(),
        Some("acme")
    );
}

/// A tenant's listing holds its overrides only, page after page, each once.
pub async fn prompt_listings_page_within_a_tenant(store: &dyn FullStore) {
    for i in 0..7 {
        let name = format!("p{i}");
        store
            .set_prompt_override(&set(&name, scope(Some("acme"), None, &[]), "a", i))
            .await
            .unwrap();
        store
            .set_prompt_override(&set(&name, scope(Some("acme"), Some("s1"), &[]), "b", i))
            .await
            .unwrap();
        store
            .set_prompt_override(&set(&name, scope(Some("globex"), None, &[]), "c", i))
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_prompt_overrides(&PromptFilter {
                tenant: Some("acme".into()),
                limit: Some(4),
                after: after.take(),
                ..PromptFilter::default()
            })
            .await
            .unwrap();
        assert!(page.len() <= 4);
        let Some(last) = page.last() else { break };
        after = Some(PromptCursor {
            name: last.name.clone(),
            scope: last.scope.clone(),
        });
        seen.extend(page);
    }
    assert_eq!(seen.len(), 14);
    assert!(
        seen.iter()
            .all(|o| o.scope.tenant.as_deref() == Some("acme"))
    );
    let mut keys: Vec<String> = seen
        .iter()
        .map(|o| format!("{}/{:?}", o.name, o.scope.session_id))
        .collect();
    let listed = keys.clone();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 14);
    assert_eq!(listed, keys, "listed in key order");
    let named = store
        .list_prompt_overrides(&PromptFilter {
            name: Some("p3".into()),
            ..PromptFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(named.len(), 3);
}
