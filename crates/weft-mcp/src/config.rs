//! [`McpConfig`]: how to reach one MCP server (a child process over stdio or
//! a streamable HTTP endpoint) and the limits weft applies to it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use weft_core::backoff::BackoffPolicy;

use crate::oauth::OAuthConfig;

/// The default time a server gets to start and answer `initialize` and `tools/list`.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time one tool call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default largest result (serialized bytes) a call returns; larger ones are cut.
pub const DEFAULT_RESULT_BUDGET: u64 = 64 * 1024;

/// One MCP server as a toolset.
#[derive(Clone, PartialEq)]
pub struct McpConfig {
    /// The toolset's name: the part before the dot in its tools' names.
    pub name: String,
    /// How to reach the server.
    pub transport: Transport,
    /// Put before every tool name of the server (`prefix` + MCP name).
    pub prefix: Option<String>,
    /// How long starting (spawn or connect, `initialize`, `tools/list`) may take.
    pub start_timeout: Duration,
    /// How long one tool call may take.
    pub call_timeout: Duration,
    /// The largest result in serialized bytes; larger results are cut, and `Bounds` say so.
    pub result_budget: u64,
    /// Restart backoff after a server died or failed to start: first delay and cap.
    pub restart_backoff: Backoff,
    /// OAuth 2.1 for a streamable HTTP server that asks for it (401); `None` for none.
    pub oauth: Option<OAuthConfig>,
}

impl McpConfig {
    /// A config with the default limits.
    pub fn new(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            prefix: None,
            start_timeout: DEFAULT_START_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            result_budget: DEFAULT_RESULT_BUDGET,
            restart_backoff: Backoff::default(),
            oauth: None,
        }
    }

    /// Sets the tool-name prefix.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Sets the start timeout.
    pub fn with_start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Sets the per-call timeout.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets the result budget in bytes.
    pub fn with_result_budget(mut self, bytes: u64) -> Self {
        self.result_budget = bytes;
        self
    }

    /// Authorizes with the (HTTP) server over OAuth when it asks.
    pub fn with_oauth(mut self, oauth: OAuthConfig) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Sets the restart backoff.
    pub fn with_restart_backoff(mut self, backoff: Backoff) -> Self {
        self.restart_backoff = backoff;
        self
    }
}

/// Header values and environment values may hold secrets: `Debug` shows only their names.
impl fmt::Debug for McpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("prefix", &self.prefix)
            .field("start_timeout", &self.start_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("result_budget", &self.result_budget)
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

/// How to reach an MCP server.
#[derive(Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program (a path, or a name looked up on `PATH` at each start).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it. The server never inherits
        /// weft's environment: it gets these, the variables of
        /// [`crate::client::child_env::INHERITED`] and those named in
        /// `inherit_env`.
        env: BTreeMap<String, String>,
        /// Variables of weft's environment passed on to it, beyond the
        /// defaults (for example a token the server needs).
        inherit_env: Vec<String>,
        /// The working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Extra request headers (for example an API key).
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// A stdio server run as `command args...`.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Transport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            inherit_env: Vec::new(),
            cwd: None,
        }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Transport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
        }
    }

    /// What the server is, for messages: the command or the URL, never secrets.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, .. } => format!("`{command}`"),
            Transport::Http { url, .. } => format!("<{}>", redact_url(url)),
        }
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("inherit_env", inherit_env)
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &redact_url(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// The URL without user info or query (they may carry credentials).
fn redact_url(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or(url);
    match no_query.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host)) if !host.contains('/') || rest.find('@') < rest.find('/') => {
                format!("{scheme}://{host}")
            }
            _ => no_query.to_owned(),
        },
        None => no_query.to_owned(),
    }
}

/// Exponential restart backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay after the first failure.
    pub initial: Duration,
    /// The largest delay.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(250),
            max: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// The delay after `failures` failures in a row (none after zero).
    pub fn delay(&self, failures: u32) -> Duration {
        match failures {
            0 => Duration::ZERO,
            n => BackoffPolicy::new(self.initial, self.max).delay(n - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_credentials_in_messages() {
        assert_eq!(
            redact_url("https://user:pw@example.com/mcp?key=s"),
            "https://example.com/mcp"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp"
        );
        let t = Transport::Http {
            url: "https://a.example/mcp?token=x".into(),
            headers: [("Authorization".to_owned(), "Bearer secret".to_owned())].into(),
        };
        let shown = format!("{t:?}");
        assert!(
            !shown.contains("secret") && !shown.contains("token=x"),
            "{shown}"
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let b = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        assert_eq!(b.delay(0), Duration::ZERO);
        assert_eq!(b.delay(1), Duration::from_millis(100));
        assert_eq!(b.delay(3), Duration::from_millis(400));
        assert_eq!(b.delay(40), Duration::from_secs(1));
    }
}
