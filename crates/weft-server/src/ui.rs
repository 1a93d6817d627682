//! The run viewer: a static web app (HTML, ES modules, CSS from the
//! crate's `ui/` folder, embedded in the binary) served at `/ui/`.
//!
//! The viewer is not part of the JSON API: it is a client of it, in the
//! browser, and uses only the public routes (`/v1/runs`, its events over
//! SSE, answers, `/v1/agents`), sending the bearer token the user pastes. These routes
//! serve files only and need no token.
//!
//! Every file is answered with its content type, `Cache-Control: no-cache`
//! and a strong `ETag` (a hash of its bytes, computed at compile time), so a
//! browser revalidates each time and gets a 304 while the binary is the
//! same; and with a strict Content-Security-Policy ([`CONTENT_SECURITY_POLICY`]):
//! scripts and styles from this origin only, no inline script, requests to
//! this origin only, no framing.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use crate::AppState;
use crate::error::ApiError;

/// Where the viewer is served.
pub const UI_PATH: &str = "/ui/";

/// The Content-Security-Policy of every viewer file.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; \
     base-uri 'none'; frame-ancestors 'none'";

/// One embedded file of the viewer.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    etag: &'static str,
}

/// A strong ETag for `body`: its 64-bit FNV-1a hash in hex, quoted.
const fn etag_of(body: &[u8]) -> [u8; 18] {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < body.len() {
        hash ^= body[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    let digits = b"0123456789abcdef";
    let mut out = [b'"'; 18];
    let mut k = 0;
    while k < 16 {
        out[1 + k] = digits[((hash >> (60 - 4 * k)) & 0xf) as usize];
        k += 1;
    }
    out
}

macro_rules! asset {
    ($name:literal, $type:expr) => {{
        const BODY: &[u8] = include_bytes!(concat!("../ui/", $name));
        const TAG: [u8; 18] = etag_of(BODY);
        Asset {
            name: $name,
            content_type: $type,
            body: BODY,
            etag: match std::str::from_utf8(&TAG) {
                Ok(tag) => tag,
                Err(_) => panic!("an ETag is ASCII"),
            },
        }
    }};
}

const JS: &str = "text/javascript; charset=utf-8";

/// The viewer's files; `index.html` is served at `/ui/`.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("awaits.js", JS),
    asset!("dom.js", JS),
    asset!("parts.js", JS),
    asset!("runs.js", JS),
    asset!("run.js", JS),
    asset!("sse.js", JS),
    asset!("start.js", JS),
    asset!("timeline.js", JS),
    asset!("timing.js", JS),
];

/// The viewer's routes: `/ui` (a redirect), `/ui/` and `/ui/{file}`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent(UI_PATH) }))
        .route(UI_PATH, get(index))
        .route("/ui/{file}", get(file))
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn file(Path(name): Path<String>, headers: HeaderMap) -> Response {
    serve(&name, &headers)
}

/// The file `name`, or a 304 when the client's copy is current, or a 404.
fn serve(name: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return ApiError::NotFound(format!("the viewer has no file `{name}`")).into_response();
    };
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim() == asset.etag || t.trim() == "*")
        });
    let status = if fresh {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    };
    let mut response = if fresh {
        status.into_response()
    } else {
        (status, asset.body).into_response()
    };
    let h = response.headers_mut();
    let set = |h: &mut HeaderMap, name: HeaderName, value: &'static str| {
        h.insert(name, HeaderValue::from_static(value));
    };
    set(h, header::CONTENT_TYPE, asset.content_type);
    set(h, header::CACHE_CONTROL, "no-cache");
    set(h, header::ETAG, asset.etag);
    set(h, header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY);
    set(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(h, header::REFERRER_POLICY, "no-referrer");
    set(h, header::X_FRAME_OPTIONS, "DENY");
    set(
        h,
        HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_are_quoted_hex_and_differ_per_file() {
        for a in ASSETS {
            assert_eq!(a.etag.len(), 18, "{}", a.name);
            assert!(a.etag.starts_with('"') && a.etag.ends_with('"'));
            assert!(a.etag[1..17].bytes().all(|b| b.is_ascii_hexdigit()));
        }
        let mut tags: Vec<&str> = ASSETS.iter().map(|a| a.etag).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), ASSETS.len());
        assert_ne!(etag_of(b"a"), etag_of(b"b"));
    }

    #[test]
    fn no_script_is_inline_and_every_module_is_served() {
        let index = ASSETS
            .iter()
            .find(|a| a.name == "index.html")
            .map(|a| String::from_utf8_lossy(a.body).into_owned())
            .unwrap_or_default();
        assert!(index.contains("<script type=\"module\" src=\"app.js\"></script>"));
        assert!(!index.contains("<script>"), "inline script in index.html");
        assert!(!index.contains("style="), "inline style in index.html");
        // Every module a module imports is one of the served files.
        for a in ASSETS.iter().filter(|a| a.content_type == JS) {
            let text = String::from_utf8_lossy(a.body);
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let target = line
                    .rsplit_once("from \"./")
                    .and_then(|(_, rest)| rest.split_once('"'))
                    .map(|(file, _)| file);
                assert!(
                    target.is_some_and(|t| ASSETS.iter().any(|b| b.name == t)),
                    "{}: `{line}` imports a file that is not served",
                    a.name
                );
            }
        }
    }
}
