//! Opening one connection to an MCP server: spawning the child process (in
//! a clean environment, see [`super::child_env`]; its stderr forwarded to
//! the log) or opening the streamable HTTP transport,
//! then the `initialize` handshake. Every transport is [`Watched`] for
//! tool-list changes.

use std::process::Stdio;

use axum::http::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::child_env::child_env;
use super::handler::Handler;
use super::watch::Watched;
use crate::config::{McpConfig, Transport};
use crate::error::McpError;
use crate::oauth::BearerClient;
use crate::tls::install_crypto_provider;

/// A live MCP client session.
pub(crate) type Session = RunningService<RoleClient, Handler>;

/// Connects to the server `config` names and completes `initialize`; an
/// HTTP server's requests go through `oauth` when given.
pub(crate) async fn connect(
    config: &McpConfig,
    handler: Handler,
    oauth: Option<&BearerClient>,
) -> Result<Session, McpError> {
    let server = config.transport.describe();
    let connect_error = |message: String| McpError::Connect {
        toolset: config.name.clone(),
        server: server.clone(),
        message,
    };
    match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            inherit_env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            // A clean environment: weft's own holds every tenant's secrets.
            cmd.args(args)
                .env_clear()
                .envs(child_env(inherit_env, env, |name| std::env::var_os(name)));
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| McpError::Spawn {
                    toolset: config.name.clone(),
                    server: server.clone(),
                    message: e.to_string(),
                })?;
            let tail = handler.stderr.clone();
            match stderr {
                Some(stderr) => {
                    let toolset = config.name.clone();
                    tokio::spawn(async move {
                        let mut lines = BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::debug!(toolset = %toolset, "server stderr: {line}");
                            tail.push(&line);
                        }
                        tail.end();
                    });
                }
                None => tail.end(),
            }
            let transport = Watched::new(transport, &handler);
            match handler.clone().serve(transport).await {
                Ok(session) => Ok(session),
                Err(e) => {
                    let said = handler.stderr.describe().await;
                    Err(connect_error(format!("{e}{said}")))
                }
            }
        }
        Transport::Http { url, headers } => {
            // No process, no stderr.
            handler.stderr.end();
            install_crypto_provider();
            let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            // A server that lost our session is reconnected by the toolset,
            // which then lists the tools again.
            http.reinit_on_expired_session = false;
            for (name, value) in headers {
                let name = HeaderName::try_from(name.as_str())
                    .map_err(|e| connect_error(format!("header `{name}`: {e}")))?;
                let value = HeaderValue::try_from(value.as_str())
                    .map_err(|_| connect_error(format!("header `{name}`: invalid value")))?;
                http.custom_headers.insert(name, value);
            }
            let served = match oauth {
                Some(client) => {
                    let transport =
                        StreamableHttpClientTransport::with_client(client.clone(), http);
                    let transport = Watched::new(transport, &handler);
                    handler.serve(transport).await
                }
                None => {
                    let transport = StreamableHttpClientTransport::from_config(http);
                    let transport = Watched::new(transport, &handler);
                    handler.serve(transport).await
                }
            };
            served.map_err(|e| connect_error(e.to_string()))
        }
    }
}
