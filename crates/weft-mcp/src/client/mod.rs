//! [`McpToolSet`]: one MCP server as a weft toolset.
//!
//! The connection opens on [`Lifecycle::start`] (wrap the toolset in
//! `StartableToolSet` for a lazy, single-flight start) under the start
//! timeout. Tools are listed once per connection and cached; a
//! `notifications/tools/list_changed` marks the cache stale and the next
//! listing asks again. A connection that died (a crashed child process, a
//! restarted remote server) is reopened by the next use, after the restart
//! backoff, and its tools are listed again. Each call runs under the call
//! timeout; a call that times out is cancelled on the server. A change is
//! applied before the next turn: the transport marks the list stale as it
//! reads the notification ([`watch`]), and over streamable HTTP, where the
//! notification may come on another stream after the call's answer, a
//! server that says its tools can change is listed again after each call.
//! An HTTP server with an `oauth` section is authorized on its 401 (see
//! [`crate::oauth`]).
//! A server's elicitation during a call goes to that call's elicitor, never
//! to another run's ([`elicit`]).

mod call;
mod capabilities;
pub mod child_env;
mod connect;
mod elicit;
mod handler;
mod oauth;
mod progress;
mod stderr;
mod watch;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use rmcp::model::CallToolRequestParams;
use weft_core::tool::{ToolError, ToolRequest, ToolSpec};
use weft_tools::{
    ElicitationSupport, Lifecycle, OAuthTokenSource, PublicDescription, ToolFailure,
    ToolListChanges, ToolListNotifier, ToolReply, ToolSet,
};

use self::connect::{Session, connect};
use self::elicit::Fallback;
use self::handler::Handler;
use self::oauth::{OAuthLink, link, oauth_error};
use crate::config::McpConfig;
use crate::convert::{call_result, tool_spec};
use crate::error::McpError;
pub use crate::tls::install_crypto_provider;

/// An MCP server's tools as a toolset.
pub struct McpToolSet {
    config: McpConfig,
    /// The single flight for (re)connecting and re-listing.
    gate: tokio::sync::Mutex<Restarts>,
    live: Mutex<Option<Arc<Live>>>,
    notifier: Arc<ToolListNotifier>,
    /// The OAuth session and client of an HTTP server with an `oauth` section.
    oauth: Result<Option<OAuthLink>, McpError>,
    /// Answers elicitations that come with no call able to take them.
    fallback: Fallback,
}

/// One open connection and the tools listed on it.
struct Live {
    session: Session,
    handler: Handler,
    specs: Mutex<Arc<Vec<ToolSpec>>>,
    /// Whether the tools are listed again after each call: over streamable
    /// HTTP a server may announce a change on its standalone stream, which
    /// is not ordered with the call's answer, so a tool the call added
    /// could be missing from the next turn. Only for servers that say their
    /// tools can change.
    relist_after_call: bool,
}

/// Failed (re)starts in a row, for the backoff.
#[derive(Default)]
struct Restarts {
    failures: u32,
    last_failure: Option<Instant>,
}

impl McpToolSet {
    /// A toolset for the server `config` describes; nothing happens until it starts.
    pub fn new(config: McpConfig) -> Self {
        Self {
            oauth: link(&config),
            config,
            gate: tokio::sync::Mutex::new(Restarts::default()),
            live: Mutex::new(None),
            notifier: Arc::new(ToolListNotifier::new()),
            fallback: Fallback::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &McpConfig {
        &self.config
    }

    /// The OAuth link, if any; a config whose OAuth could not be set up fails every use.
    fn oauth_link(&self) -> Result<Option<&OAuthLink>, McpError> {
        self.oauth
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }

    fn current(&self) -> Option<Arc<Live>> {
        let guard = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        guard.clone().filter(|l| !l.session.is_closed())
    }

    /// The open connection, opening one (after the backoff) when there is none.
    async fn ensure(&self) -> Result<Arc<Live>, McpError> {
        if let Some(link) = self.oauth_link()? {
            link.session
                .prepare()
                .await
                .map_err(|e| oauth_error(&self.config, e))?;
        }
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let mut restarts = self.gate.lock().await;
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let delay = self.config.restart_backoff.delay(restarts.failures);
        if let Some(at) = restarts.last_failure {
            let waited = at.elapsed();
            if waited < delay {
                return Err(McpError::Restarting {
                    toolset: self.config.name.clone(),
                    tool: String::new(),
                    retry_in: delay - waited,
                });
            }
        }
        match self.open().await {
            Ok(live) => {
                restarts.failures = 0;
                restarts.last_failure = None;
                let previous = self
                    .live
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .replace(live.clone());
                // A reconnect may bring other tools (a server upgraded meanwhile).
                if let Some(previous) = previous
                    && *previous.specs() != *live.specs()
                {
                    self.notifier.notify();
                }
                Ok(live)
            }
            Err(e) => {
                restarts.failures = restarts.failures.saturating_add(1);
                restarts.last_failure = Some(Instant::now());
                Err(e)
            }
        }
    }

    /// Connects and lists the tools; when the server asks for OAuth
    /// authorization (401), authorizes (on its own timeouts) and connects again.
    async fn open(&self) -> Result<Arc<Live>, McpError> {
        let link = self.oauth_link()?;
        let Some(link) = link else {
            return self.open_once(None).await;
        };
        link.client.take_challenge();
        match self.open_once(Some(link)).await {
            Err(e) => match link.client.take_challenge() {
                Some(challenge) => {
                    link.session
                        .authorize(Some(&challenge))
                        .await
                        .map_err(|e| oauth_error(&self.config, e))?;
                    let opened = self.open_once(Some(link)).await;
                    opened.map_err(|e| self.oauth_failure(e))
                }
                None => Err(self.oauth_failure(e)),
            },
            live => live,
        }
    }

    /// Connects and lists the tools, all under the start timeout.
    async fn open_once(&self, oauth: Option<&OAuthLink>) -> Result<Arc<Live>, McpError> {
        let handler = Handler::new(self.notifier.clone(), self.fallback.clone());
        let attempt = async {
            let client = oauth.map(|l| &l.client);
            let session = connect(&self.config, handler.clone(), client).await?;
            let specs = self.list(&session).await?;
            let changing = session
                .peer_info()
                .and_then(|info| info.capabilities.tools.as_ref()?.list_changed)
                .unwrap_or(false);
            Ok::<_, McpError>(Arc::new(Live {
                session,
                handler: handler.clone(),
                specs: Mutex::new(Arc::new(specs)),
                relist_after_call: changing
                    && matches!(self.config.transport, crate::config::Transport::Http { .. }),
            }))
        };
        tokio::time::timeout(self.config.start_timeout, attempt)
            .await
            .map_err(|_| McpError::StartTimeout {
                toolset: self.config.name.clone(),
                server: self.config.transport.describe(),
                after: self.config.start_timeout,
            })?
    }

    /// `tools/list` (every page) as weft specs. A tool with an unusable
    /// schema is left out (and logged); a name listed twice is an error.
    async fn list(&self, session: &Session) -> Result<Vec<ToolSpec>, McpError> {
        let name = &self.config.name;
        let tools = session.list_all_tools().await.map_err(|e| McpError::List {
            toolset: name.clone(),
            message: e.to_string(),
        })?;
        let prefix = self.config.prefix.as_deref().unwrap_or_default();
        let mut seen = HashSet::new();
        let mut specs = Vec::with_capacity(tools.len());
        for tool in &tools {
            if !seen.insert(tool.name.as_ref()) {
                return Err(McpError::DuplicateTool {
                    toolset: name.clone(),
                    tool: tool.name.to_string(),
                });
            }
            match tool_spec(name, prefix, tool) {
                Ok(spec) => specs.push(spec),
                Err(e) => tracing::warn!(toolset = %name, error = %e, "tool not offered"),
            }
        }
        Ok(specs)
    }

    /// Forgets a connection that failed under a call, so the next use reopens it.
    fn drop_live(&self, live: &Arc<Live>) {
        let mut guard = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.as_ref().is_some_and(|l| Arc::ptr_eq(l, live)) {
            *guard = None;
        }
    }
}

impl Live {
    fn specs(&self) -> Arc<Vec<ToolSpec>> {
        self.specs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl ToolSet for McpToolSet {
    fn name(&self) -> &str {
        &self.config.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        let live = self.ensure().await?;
        if live.handler.stale.swap(false, Ordering::AcqRel) {
            match self.list(&live.session).await {
                Ok(specs) => {
                    *live.specs.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(specs);
                }
                Err(e) => {
                    live.handler.stale.store(true, Ordering::Release);
                    return Err(e.into());
                }
            }
        }
        Ok(live.specs().to_vec())
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let tool = request.name.tool();
        let prefix = self.config.prefix.as_deref().unwrap_or_default();
        let Some(mcp_name) = tool.strip_prefix(prefix) else {
            return Err(McpError::UnknownTool {
                toolset: self.config.name.clone(),
                tool: tool.to_owned(),
            }
            .into_failure(&request.name));
        };
        let live = match self.ensure().await {
            Ok(live) => live,
            Err(McpError::Restarting {
                toolset, retry_in, ..
            }) => {
                let e = McpError::Restarting {
                    toolset,
                    tool: tool.to_owned(),
                    retry_in,
                };
                return Err(e.into_failure(&request.name));
            }
            Err(e) => return Err(e.into_failure(&request.name)),
        };
        let mut params = CallToolRequestParams::new(mcp_name.to_owned());
        params.meta = crate::trace::request_meta();
        match Arc::unwrap_or_clone(request.payload) {
            serde_json::Value::Object(args) => params = params.with_arguments(args),
            serde_json::Value::Null => {}
            other => {
                let e = ToolError::new(
                    ToolError::INVALID_ARGUMENTS,
                    format!(
                        "toolset `{}`, tool `{tool}`: arguments must be a JSON object, not {other}",
                        self.config.name
                    ),
                );
                return Err(e.into());
            }
        }
        let timeout = self.config.call_timeout;
        // The server may elicit while the call runs; a question waits at
        // most as long as the call may take.
        let in_flight = live
            .handler
            .calls
            .enter(request.run_id.clone(), request.elicit.clone());
        // The server's progress for this call, and its log lines while it
        // runs alone, go to the call's output.
        let sent = call::call(
            live.session.peer(),
            &live.handler.listeners,
            params,
            &request.output,
            &in_flight,
        );
        let result = match tokio::time::timeout(timeout, sent).await {
            Err(_) => Err(McpError::CallTimeout {
                toolset: self.config.name.clone(),
                tool: tool.to_owned(),
                after: timeout,
            }),
            Ok(Err(e)) => {
                let mut e = call::error(&self.config.name, tool, e);
                if let McpError::Closed { detail, .. } = &mut e {
                    *detail = live.handler.stderr.describe().await;
                    self.drop_live(&live);
                    let mut restarts = self.gate.lock().await;
                    restarts.failures = restarts.failures.saturating_add(1);
                    restarts.last_failure = Some(Instant::now());
                    // The runtime lists again before its next turn, and
                    // learns whether the server came back.
                    self.notifier.notify();
                }
                Err(self.oauth_failure(e))
            }
            Ok(Ok(result)) => {
                if live.relist_after_call {
                    live.handler.stale.store(true, Ordering::Release);
                    self.notifier.notify();
                }
                call_result(&self.config.name, tool, result, self.config.result_budget)
            }
        };
        result.map_err(|e| e.into_failure(&request.name))
    }

    fn lifecycle(&self) -> Option<&dyn Lifecycle> {
        Some(self)
    }

    fn tool_list_changes(&self) -> Option<&dyn ToolListChanges> {
        Some(&*self.notifier)
    }

    fn public_description(&self) -> Option<&dyn PublicDescription> {
        Some(self)
    }

    fn oauth(&self) -> Option<&dyn OAuthTokenSource> {
        match &self.oauth {
            Ok(Some(link)) => Some(&*link.session),
            _ => None,
        }
    }

    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        Some(self)
    }
}
