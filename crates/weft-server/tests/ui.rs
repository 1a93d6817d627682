//! The run viewer's files over a real socket: served without a token, with
//! their content types, a strict Content-Security-Policy, revalidation by
//! ETag (304), and a 404 problem for a file the viewer does not have. The
//! viewer itself is driven in a browser by `crates/weft/tests/ui_browser.rs`.

mod common;

use common::Fixture;
use common::served::Served;

/// Every file the viewer's pages load, with its content type.
const FILES: [(&str, &str); 13] = [
    ("/ui/", "text/html; charset=utf-8"),
    ("/ui/app.css", "text/css; charset=utf-8"),
    ("/ui/favicon.svg", "image/svg+xml"),
    ("/ui/app.js", "text/javascript; charset=utf-8"),
    ("/ui/api.js", "text/javascript; charset=utf-8"),
    ("/ui/awaits.js", "text/javascript; charset=utf-8"),
    ("/ui/dom.js", "text/javascript; charset=utf-8"),
    ("/ui/runs.js", "text/javascript; charset=utf-8"),
    ("/ui/run.js", "text/javascript; charset=utf-8"),
    ("/ui/sse.js", "text/javascript; charset=utf-8"),
    ("/ui/start.js", "text/javascript; charset=utf-8"),
    ("/ui/timeline.js", "text/javascript; charset=utf-8"),
    ("/ui/timing.js", "text/javascript; charset=utf-8"),
];

fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_served_with_types_csp_and_etags() {
    let f = Fixture::new().await;
    let server = Served::start(f.state.clone()).await;
    for (path, content_type) in FILES {
        // No Authorization header: the files are public, the API is not.
        let r = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(header(&r, "content-type"), content_type, "{path}");
        assert_eq!(header(&r, "cache-control"), "no-cache", "{path}");
        assert_eq!(header(&r, "x-content-type-options"), "nosniff", "{path}");
        let csp = header(&r, "content-security-policy");
        assert_eq!(csp, weft_server::CONTENT_SECURITY_POLICY, "{path}");
        assert!(csp.contains("script-src 'self';"), "{csp}");
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
        assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
        let etag = header(&r, "etag").to_owned();
        assert!(etag.starts_with('"') && etag.len() == 18, "{path}: {etag}");
        assert!(!r.bytes().await.unwrap().is_empty(), "{path} is empty");
        // The same ETag again: not modified, no body.
        let again = server
            .client
            .get(server.url(path))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(header(&again, "etag"), etag);
        assert!(again.bytes().await.unwrap().is_empty());
        // Another ETag: the file again.
        let stale = server
            .client
            .get(server.url(path))
            .header("if-none-match", "\"0000000000000000\"")
            .send()
            .await
            .unwrap();
        assert_eq!(stale.status(), 200, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_redirects_and_unknown_files_are_problems() {
    let f = Fixture::new().await;
    let server = Served::start(f.state.clone()).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client.get(server.url("/ui")).send().await.unwrap();
    assert_eq!(r.status(), 308);
    assert_eq!(header(&r, "location"), weft_server::UI_PATH);
    for path in ["/ui/nope.js", "/ui/..%2FCargo.toml", "/ui/index.html.bak"] {
        let r = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(header(&r, "content-type"), "application/problem+json");
    }
    // The page is the same at /ui/ and /ui/index.html.
    let a = server.client.get(server.url("/ui/")).send().await.unwrap();
    let b = server
        .client
        .get(server.url("/ui/index.html"))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&a, "etag"), header(&b, "etag"));
    // The viewer is not in the JSON API's document, which says so.
    let doc: serde_json::Value = server
        .client
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.keys().all(|p| !p.starts_with("/ui")));
    let description = doc["info"]["description"].as_str().unwrap_or("");
    assert!(description.contains("/ui/"), "{description}");
}
