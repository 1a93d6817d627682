//! Provider HTTP error responses (Anthropic, OpenAI, Google and AWS shapes)
//! mapped to [`ModelError::Http`]: error type, message, whether to retry
//! (status, the `x-should-retry` hint, and quota codes that must never be
//! retried) and how long the provider asked to wait (`retry-after`
//! headers, or a Google `RetryInfo` detail's `retryDelay`). Vertex AI
//! answers some streamed requests' errors with a JSON array holding the
//! Google error object; its first element is read.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use weft_core::model::ModelError;

use crate::util::shorten;

/// `text` on one line: whitespace runs (line breaks included) become one
/// space, and the result is cut to [`shorten`]'s length.
pub(crate) fn one_line(text: &str) -> String {
    shorten(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    /// Google's canonical status, e.g. `RESOURCE_EXHAUSTED`.
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    details: Option<serde_json::Value>,
}

/// Error codes that share a retryable status but must not be retried.
const NOT_RETRYABLE_CODES: &[&str] = &[
    "insufficient_quota",
    "credit_balance_exhausted",
    "enforced_spend_limit_reached",
    "billing_hard_limit_reached",
];

/// Maps an HTTP error response (Anthropic, OpenAI, Google or AWS shape) to a [`ModelError`].
pub fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ModelError {
    if let Some(e) = aws_error(status, headers, body) {
        return e;
    }
    let parsed = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .map(|v| match v {
            serde_json::Value::Array(mut all) if !all.is_empty() => all.swap_remove(0),
            v => v,
        })
        .and_then(|v| serde_json::from_value::<ErrorEnvelope>(v).ok())
        .map(|e| e.error);
    let kind = parsed.as_ref().and_then(|e| e.kind.clone());
    let status_name = parsed.as_ref().and_then(|e| e.status.clone());
    let retry_delay = parsed
        .as_ref()
        .and_then(|e| e.details.as_ref())
        .and_then(google_retry_delay);
    let code = parsed
        .as_ref()
        .and_then(|e| e.code.as_ref())
        .and_then(|c| c.as_str().map(str::to_owned));
    let details_code = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/details/error_code")
                .and_then(|c| c.as_str())
                .map(str::to_owned)
        });
    // One line: a server's message may carry a traceback, and a body that
    // is no error object may be a whole HTML page.
    let message = one_line(
        &parsed
            .and_then(|e| e.message)
            .unwrap_or_else(|| body.to_owned()),
    );
    let quota = [kind.as_deref(), code.as_deref(), details_code.as_deref()]
        .into_iter()
        .flatten()
        .any(|c| NOT_RETRYABLE_CODES.contains(&c));
    let by_status = matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529);
    let hint = headers
        .get("x-should-retry")
        .and_then(|v| v.to_str().ok())
        .map(|v| v == "true");
    let retryable = !quota && hint.unwrap_or(by_status);
    ModelError::Http {
        status,
        error_type: kind.or(code).or(status_name),
        message,
        retryable,
        retry_after: retry_after(headers).or(retry_delay),
    }
}

/// AWS errors (Bedrock's): `{"message": ...}` (or `Message`), the type in
/// the `x-amzn-ErrorType` header (`ThrottlingException:http://...`) or the
/// body's `__type` (`com.amazon...#ThrottlingException`); `None` for a
/// response naming no AWS error type.
fn aws_error(status: u16, headers: &HeaderMap, body: &str) -> Option<ModelError> {
    let parsed = serde_json::from_str::<serde_json::Value>(body).ok();
    let kind = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(':').next().unwrap_or(v))
        .or_else(|| {
            let t = parsed.as_ref()?.get("__type")?.as_str()?;
            Some(t.rsplit('#').next().unwrap_or(t))
        })
        .filter(|k| !k.is_empty())?
        .to_owned();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("message").or_else(|| v.get("Message")))
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| one_line(body), one_line);
    Some(ModelError::Http {
        status,
        retryable: aws_retryable(&kind)
            || (matches!(status, 500 | 502 | 503 | 504) && !kind.contains("Validation")),
        error_type: Some(kind),
        message,
        retry_after: retry_after(headers),
    })
}

/// The AWS error types worth retrying (throttled, overloaded, not ready, or
/// failed inside the service).
pub(crate) fn aws_retryable(kind: &str) -> bool {
    let kind = kind.to_ascii_lowercase();
    [
        "throttlingexception",
        "serviceunavailableexception",
        "modelnotreadyexception",
        "internalserverexception",
        "modeltimeoutexception",
        "modelstreamerrorexception",
    ]
    .contains(&kind.as_str())
}

/// The `retryDelay` of a `google.rpc.RetryInfo` among an error's details
/// (a protobuf duration: `"12s"`, `"0.5s"`).
fn google_retry_delay(details: &serde_json::Value) -> Option<Duration> {
    details
        .as_array()?
        .iter()
        .find(|d| {
            d.get("@type").and_then(serde_json::Value::as_str)
                == Some("type.googleapis.com/google.rpc.RetryInfo")
        })?
        .get("retryDelay")?
        .as_str()?
        .strip_suffix('s')?
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// The wait a response asks for, from `retry-after-ms` or `retry-after` (seconds).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    get("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn overloaded_529_is_retryable_without_retry_after() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            http_error(529, &headers(&[("x-should-retry", "true")]), body),
            ModelError::Http {
                status: 529,
                error_type: Some("overloaded_error".into()),
                message: "Overloaded".into(),
                retryable: true,
                retry_after: None,
            }
        );
    }

    #[test]
    fn quota_and_spend_limit_429s_are_not_retryable() {
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert!(!http_error(429, &HeaderMap::new(), quota).is_retryable());
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert!(!http_error(429, &headers(&[("x-should-retry", "true")]), spend).is_retryable());
    }

    #[test]
    fn retry_after_ms_wins_over_seconds_and_server_hint_overrides_status() {
        let e = http_error(
            429,
            &headers(&[("retry-after", "7"), ("retry-after-ms", "1500")]),
            "{}",
        );
        assert!(
            matches!(e, ModelError::Http { retry_after: Some(d), retryable: true, .. } if d == Duration::from_millis(1500))
        );
        let e = http_error(503, &headers(&[("x-should-retry", "false")]), "oops");
        assert_eq!(
            e,
            ModelError::Http {
                status: 503,
                error_type: None,
                message: "oops".into(),
                retryable: false,
                retry_after: None,
            }
        );
        assert!(!http_error(400, &HeaderMap::new(), "{}").is_retryable());
    }

    #[test]
    fn google_errors_name_their_status_and_retry_delay() {
        let body = r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
        assert_eq!(
            http_error(429, &HeaderMap::new(), body),
            ModelError::Http {
                status: 429,
                error_type: Some("RESOURCE_EXHAUSTED".into()),
                message: "Quota exceeded".into(),
                retryable: true,
                retry_after: Some(Duration::from_millis(1500)),
            }
        );
    }

    #[test]
    fn a_vertex_error_array_is_read_as_its_google_error() {
        let body = r#"[{"error":{"code":400,"message":"Please use a valid role: user, model.","status":"INVALID_ARGUMENT"}}]"#;
        assert_eq!(
            http_error(400, &HeaderMap::new(), body),
            ModelError::Http {
                status: 400,
                error_type: Some("INVALID_ARGUMENT".into()),
                message: "Please use a valid role: user, model.".into(),
                retryable: false,
                retry_after: None,
            }
        );
    }

    #[test]
    fn aws_errors_are_typed_by_their_header_or_type_and_retried_when_throttled() {
        let throttled = http_error(
            429,
            &headers(&[(
                "x-amzn-errortype",
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            )]),
            r#"{"message":"Too many requests, please wait before trying again."}"#,
        );
        assert_eq!(
            throttled,
            ModelError::Http {
                status: 429,
                error_type: Some("ThrottlingException".into()),
                message: "Too many requests, please wait before trying again.".into(),
                retryable: true,
                retry_after: None,
            }
        );
        let invalid = http_error(
            400,
            &HeaderMap::new(),
            r#"{"__type":"com.amazon.coral.validate#ValidationException","message":"bad"}"#,
        );
        assert!(
            matches!(invalid, ModelError::Http { retryable: false, error_type: Some(ref t), .. } if t == "ValidationException")
        );
        assert!(aws_retryable("modelNotReadyException"));
        assert!(!aws_retryable("AccessDeniedException"));
    }

    #[test]
    fn a_message_with_a_traceback_or_a_raw_page_becomes_one_short_line() {
        let trace = format!(
            r#"{{"error":{{"message":"Traceback (most recent call last):\n  File \"app.py\", line 1\n{}TypeError: bad","type":"internal_server_error"}}}}"#,
            "x ".repeat(2000)
        );
        let ModelError::Http { message, .. } = http_error(500, &HeaderMap::new(), &trace) else {
            panic!("an HTTP error");
        };
        assert!(!message.contains('\n'), "{message}");
        assert!(
            message.starts_with("Traceback (most recent call last): File \"app.py\", line 1 x x")
        );
        assert!(message.chars().count() <= 1000, "{}", message.len());
        let ModelError::Http { message, .. } = http_error(
            502,
            &HeaderMap::new(),
            "<html>\n<body>\nBad gateway\n</body>\n</html>\n",
        ) else {
            panic!("an HTTP error");
        };
        assert_eq!(message, "<html> <body> Bad gateway </body> </html>");
    }
}
