//! The HTTP transport every provider client shares: POST with retries
//! (exponential backoff with jitter, `retry-after` honoured), connect,
//! first-byte and idle timeouts, provider error bodies mapped to
//! [`ModelError::Http`], and SSE bodies turned into a [`ChunkStream`].

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use weft_core::model::{ChunkStream, ModelError, StreamChunk};

use crate::decode::{EventDecoder, StreamDecoder};
use crate::util::shorten;

/// The three timeouts of a model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP/TLS connection.
    pub connect: Duration,
    /// From sending the request to the response headers.
    pub first_byte: Duration,
    /// Between two body chunks of a response.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(90),
        }
    }
}

/// How failed requests are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Backoff before the first retry; doubled for each further one.
    pub initial_backoff: Duration,
    /// Backoff ceiling.
    pub max_backoff: Duration,
    /// A `retry-after` longer than this is not waited for: the error is returned.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `attempt` (0-based), with jitter in [50%, 100%].
    pub fn backoff(&self, attempt: u32) -> Duration {
        let base = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(self.max_backoff);
        base.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// Connection settings shared by the provider clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpConfig {
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Retries.
    pub retry: RetryPolicy,
}

/// A reqwest client plus the retry and timeout policy.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    config: HttpConfig,
}

impl Transport {
    pub(crate) fn new(config: HttpConfig) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .build()
            .map_err(|e| ModelError::Config {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Self { client, config })
    }

    /// POSTs `body` to `url`, retrying retryable failures, and returns the
    /// successful response (headers read, body not yet).
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &(impl serde::Serialize + ?Sized),
    ) -> Result<reqwest::Response, ModelError> {
        let bytes = Bytes::from(serde_json::to_vec(body).map_err(|e| ModelError::Other {
            message: format!("cannot serialize the request: {e}"),
        })?);
        let retry = self.config.retry;
        let mut attempt = 0u32;
        loop {
            let err = match self.attempt(url, headers, bytes.clone()).await {
                Ok(resp) => return Ok(resp),
                Err(e) => e,
            };
            if !err.is_retryable() || attempt >= retry.max_retries {
                return Err(err);
            }
            let wait = match &err {
                ModelError::Http {
                    retry_after: Some(after),
                    ..
                } => {
                    if *after > retry.max_retry_after {
                        return Err(err);
                    }
                    *after
                }
                _ => retry.backoff(attempt),
            };
            tracing::debug!(attempt, ?wait, error = %err, "retrying model request");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, ModelError> {
        let send = self
            .client
            .post(url)
            .headers(headers.clone())
            .body(body)
            .send();
        let first_byte = self.config.timeouts.first_byte;
        let resp = match tokio::time::timeout(first_byte, send).await {
            Err(_) => {
                return Err(ModelError::Timeout {
                    phase: "first byte".into(),
                    after: first_byte,
                });
            }
            Ok(Err(e)) if e.is_timeout() => {
                return Err(ModelError::Timeout {
                    phase: "connect".into(),
                    after: self.config.timeouts.connect,
                });
            }
            Ok(Err(e)) => {
                return Err(ModelError::Connection {
                    message: e.without_url().to_string(),
                });
            }
            Ok(Ok(resp)) => resp,
        };
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status().as_u16();
        let resp_headers = resp.headers().clone();
        let text = match tokio::time::timeout(self.config.timeouts.idle, resp.text()).await {
            Ok(Ok(t)) => t,
            _ => String::new(),
        };
        Err(http_error(status, &resp_headers, &text))
    }

    /// Reads a whole response body with the idle timeout.
    pub(crate) async fn text(&self, resp: reqwest::Response) -> Result<String, ModelError> {
        let idle = self.config.timeouts.idle;
        let mut body = resp.bytes_stream();
        let mut buf = Vec::new();
        loop {
            match tokio::time::timeout(idle, body.next()).await {
                Err(_) => {
                    return Err(ModelError::Timeout {
                        phase: "idle".into(),
                        after: idle,
                    });
                }
                Ok(None) => break,
                Ok(Some(Ok(b))) => buf.extend_from_slice(&b),
                Ok(Some(Err(e))) => {
                    return Err(ModelError::Truncated {
                        message: format!("the connection failed mid-body: {}", e.without_url()),
                    });
                }
            }
        }
        String::from_utf8(buf).map_err(|e| ModelError::Malformed {
            line: shorten(&String::from_utf8_lossy(e.as_bytes())),
            message: "invalid UTF-8 in the response body".into(),
        })
    }

    /// Turns an SSE response into a chunk stream decoded by `decoder`.
    pub(crate) fn sse<D: EventDecoder + 'static>(
        &self,
        resp: reqwest::Response,
        decoder: D,
    ) -> ChunkStream {
        let state = SseState {
            body: Box::pin(resp.bytes_stream()),
            decoder: StreamDecoder::new(decoder),
            queue: VecDeque::new(),
            error: None,
            finished: false,
            idle: self.config.timeouts.idle,
        };
        Box::pin(futures_util::stream::unfold(state, SseState::next))
    }
}

type ByteStream =
    std::pin::Pin<Box<dyn futures_core::Stream<Item = reqwest::Result<Bytes>> + Send>>;

struct SseState<D> {
    body: ByteStream,
    decoder: StreamDecoder<D>,
    queue: VecDeque<StreamChunk>,
    error: Option<ModelError>,
    finished: bool,
    idle: Duration,
}

impl<D: EventDecoder> SseState<D> {
    async fn next(mut self) -> Option<(Result<StreamChunk, ModelError>, Self)> {
        loop {
            if let Some(chunk) = self.queue.pop_front() {
                return Some((Ok(chunk), self));
            }
            if let Some(err) = self.error.take() {
                return Some((Err(err), self));
            }
            if self.finished {
                return None;
            }
            let mut out = Vec::new();
            let res = match tokio::time::timeout(self.idle, self.body.next()).await {
                Err(_) => Err(ModelError::Timeout {
                    phase: "idle".into(),
                    after: self.idle,
                }),
                Ok(Some(Ok(bytes))) => self.decoder.feed(&bytes, &mut out),
                Ok(Some(Err(e))) => Err(ModelError::Truncated {
                    message: format!("the connection failed mid-stream: {}", e.without_url()),
                }),
                Ok(None) => {
                    self.finished = true;
                    self.decoder.finish(&mut out)
                }
            };
            self.queue.extend(out);
            if let Err(e) = res {
                self.error = Some(e);
                self.finished = true;
            } else if self.decoder.is_done() {
                self.finished = true;
            }
        }
    }
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
}

/// Error codes that share a retryable status but must not be retried.
const NOT_RETRYABLE_CODES: &[&str] = &[
    "insufficient_quota",
    "credit_balance_exhausted",
    "enforced_spend_limit_reached",
    "billing_hard_limit_reached",
];

/// Maps an HTTP error response (Anthropic or OpenAI shape) to a [`ModelError`].
pub fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ModelError {
    let parsed = serde_json::from_str::<ErrorEnvelope>(body)
        .ok()
        .map(|e| e.error);
    let kind = parsed.as_ref().and_then(|e| e.kind.clone());
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
    let message = parsed
        .and_then(|e| e.message)
        .unwrap_or_else(|| shorten(body.trim()));
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
        error_type: kind.or(code),
        message,
        retryable,
        retry_after: retry_after(headers),
    }
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

/// A header value holding a secret: hidden from `Debug` output.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| ModelError::Config {
        message: "the API key contains characters not allowed in an HTTP header".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
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
    fn backoff_grows_with_jitter_and_stays_under_the_ceiling() {
        let p = RetryPolicy::default();
        for attempt in 0..10 {
            let base = p
                .initial_backoff
                .saturating_mul(1 << attempt.min(20))
                .min(p.max_backoff);
            let d = p.backoff(attempt);
            assert!(
                d >= base / 2 && d <= base,
                "attempt {attempt}: {d:?} vs {base:?}"
            );
        }
    }
}
