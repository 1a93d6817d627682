//! The HTTP transport every provider client shares: POST with retries
//! (exponential backoff with jitter, `retry-after` honoured), connect,
//! first-byte and idle timeouts, provider error bodies mapped to
//! [`ModelError::Http`], and SSE (or other framed) bodies turned into a
//! [`ChunkStream`].

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use weft_core::backoff::BackoffPolicy;
use weft_core::model::{ChunkStream, ModelError, StreamChunk};

mod errors;

pub use errors::http_error;
pub(crate) use errors::{aws_retryable, one_line};

use crate::decode::{BodyDecoder, EventDecoder, StreamDecoder};
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
        BackoffPolicy::new(self.initial_backoff, self.max_backoff)
            .jittered()
            .delay(attempt)
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

/// Redirects followed (at most 5) only within the first request's origin:
/// the API key headers (`x-api-key`, `api-key`, ...) are not ones reqwest
/// strips on a redirect to another host, so such a redirect is not followed
/// and its 3xx answer becomes the error.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt.previous().first().is_some_and(|first| {
            let next = attempt.url();
            first.scheme() == next.scheme()
                && first.host_str() == next.host_str()
                && first.port_or_known_default() == next.port_or_known_default()
        });
        if !same || attempt.previous().len() > 5 {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
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
            .redirect(same_origin_redirects())
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
        self.post_with(url, bytes, &|_| Ok(headers.clone())).await
    }

    /// POSTs `bytes` to `url` as [`Transport::post`] does, with the headers
    /// `headers` makes for each attempt from the body (a signature over the
    /// body and the time of the attempt).
    pub(crate) async fn post_with(
        &self,
        url: &str,
        bytes: Bytes,
        headers: &(dyn Fn(&[u8]) -> Result<HeaderMap, ModelError> + Sync),
    ) -> Result<reqwest::Response, ModelError> {
        let retry = self.config.retry;
        let mut attempt = 0u32;
        loop {
            let err = match self.attempt(url, &headers(&bytes)?, bytes.clone()).await {
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
        let mut headers = headers.clone();
        crate::trace::inject(&mut headers);
        let send = self.client.post(url).headers(headers).body(body).send();
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
                    message: send_failure(url, &e),
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

    /// The HTTP client, for the calls a provider makes besides the model's
    /// (fetching credentials).
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
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
        self.framed(resp, StreamDecoder::new(decoder))
    }

    /// Turns a streamed response into a chunk stream decoded by `decoder`,
    /// whatever its framing.
    pub(crate) fn framed<D: BodyDecoder + 'static>(
        &self,
        resp: reqwest::Response,
        decoder: D,
    ) -> ChunkStream {
        let state = SseState {
            body: Box::pin(resp.bytes_stream()),
            decoder,
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
    decoder: D,
    queue: VecDeque<StreamChunk>,
    error: Option<ModelError>,
    finished: bool,
    idle: Duration,
}

impl<D: BodyDecoder> SseState<D> {
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

/// A header value holding a secret: hidden from `Debug` output.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| ModelError::Config {
        message: "the API key contains characters not allowed in an HTTP header".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// Why a request could not be sent, naming where it went (the URL without
/// credentials or query) and every cause down to the OS error, e.g. `POST
/// http://127.0.0.1:9/v1/messages: error sending request: client error
/// (Connect): tcp connect error: Connection refused (os error 111)`.
fn send_failure(url: &str, e: &reqwest::Error) -> String {
    let mut text = format!("POST {}", redacted(url));
    let mut last = String::new();
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        let mut said = c.to_string();
        if let Some(url) = e.url() {
            // reqwest names the URL itself: said once, without secrets.
            said = said.replace(&format!(" for url ({url})"), "");
        }
        if !said.is_empty() && !last.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        last = said;
        cause = c.source();
    }
    text
}

/// `url` without user name, password, query or fragment.
fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "the provider's URL".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
