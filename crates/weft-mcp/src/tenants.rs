//! [`TenantScopedToolSet`]: an OAuth MCP server reached with one connection
//! and one token file per tenant, so no tenant's call carries another's
//! token. A call of a run labelled with a tenant (`weft.tenant`) goes
//! through that tenant's connection, whose tokens live in an owner-only
//! directory of its own under the token directory (`tenants/<tenant>/`);
//! its first call authorizes, the URL asked of that run as a URL
//! elicitation ([`CallPresenter`]). Runs without a tenant, and the listing
//! of tools, use the operator's connection and token file, as an unscoped
//! toolset does. At most [`DEFAULT_MAX_TENANTS`] tenant connections are
//! open at once; the least recently used idle one is closed for a new one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use weft_core::session::TENANT_LABEL;
use weft_core::tool::{ToolError, ToolRequest, ToolSpec};
use weft_tools::{
    ElicitationHandler, ElicitationSupport, Lifecycle, OAuthTokenSource, PublicDescription,
    ToolFailure, ToolListChanges, ToolReply, ToolSet,
};

use crate::client::McpToolSet;
use crate::config::McpConfig;
use crate::oauth::CallPresenter;

/// How many tenant connections may be open at once by default.
pub const DEFAULT_MAX_TENANTS: usize = 64;

/// An MCP server's tools with one OAuth identity per tenant.
pub struct TenantScopedToolSet {
    config: McpConfig,
    operator: Connection,
    tenants: Mutex<HashMap<String, Tenant>>,
    max_tenants: usize,
    handler: Mutex<Option<Arc<dyn ElicitationHandler>>>,
}

/// One connection and the calls that may be asked to authorize it.
#[derive(Clone)]
struct Connection {
    set: Arc<McpToolSet>,
    asker: Arc<CallPresenter>,
}

struct Tenant {
    connection: Connection,
    used: Instant,
}

impl TenantScopedToolSet {
    /// The toolset for `config`; without an `oauth` section every call
    /// uses one connection, as [`McpToolSet`] does.
    pub fn new(config: McpConfig) -> Self {
        let operator = connection(&config, None);
        Self {
            config,
            operator,
            tenants: Mutex::new(HashMap::new()),
            max_tenants: DEFAULT_MAX_TENANTS,
            handler: Mutex::new(None),
        }
    }

    /// Keeps at most `max` tenant connections open (at least 1).
    pub fn with_max_tenants(mut self, max: usize) -> Self {
        self.max_tenants = max.max(1);
        self
    }

    /// How many tenant connections are open.
    pub fn tenant_connections(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tenant>> {
        self.tenants.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection of `tenant`, opening one (and closing the least
    /// recently used idle one when at the bound).
    async fn tenant(&self, tenant: &str) -> Result<Connection, ToolError> {
        let (connection, evicted) = {
            let mut tenants = self.lock();
            if let Some(t) = tenants.get_mut(tenant) {
                t.used = Instant::now();
                return Ok(t.connection.clone());
            }
            let mut evicted = None;
            if tenants.len() >= self.max_tenants {
                let idle = tenants
                    .iter()
                    .filter(|(_, t)| Arc::strong_count(&t.connection.set) == 1)
                    .min_by_key(|(_, t)| t.used)
                    .map(|(name, _)| name.clone());
                let Some(idle) = idle else {
                    return Err(ToolError::new(
                        ToolError::UNAVAILABLE,
                        format!(
                            "toolset `{}`: {} tenants have calls in progress, the most at once; try again when one ends",
                            self.config.name, self.max_tenants
                        ),
                    ));
                };
                evicted = tenants.remove(&idle).map(|t| t.connection);
            }
            let connection = connection(&self.config, Some(tenant));
            let handler = self
                .handler
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            connection.set.set_elicitation_handler(handler);
            tenants.insert(
                tenant.to_owned(),
                Tenant {
                    connection: connection.clone(),
                    used: Instant::now(),
                },
            );
            (connection, evicted)
        };
        if let Some(old) = evicted {
            let _ = Lifecycle::stop(&*old.set).await;
        }
        Ok(connection)
    }
}

/// The connection of `tenant` (`None` for the operator): its tokens in the
/// tenant's own directory, its authorization URL asked of its calls.
fn connection(config: &McpConfig, tenant: Option<&str>) -> Connection {
    let mut config = config.clone();
    let fallback = config
        .oauth
        .as_ref()
        .map(|o| Arc::clone(&o.open))
        .unwrap_or_else(|| Arc::new(crate::oauth::StderrPresenter));
    let asker = CallPresenter::new(fallback);
    if let Some(oauth) = &mut config.oauth {
        if let Some(tenant) = tenant {
            oauth.token_dir = oauth
                .resolved_token_dir()
                .map(|dir| dir.join("tenants").join(dir_name(tenant)));
        }
        oauth.open = asker.clone();
    }
    Connection {
        set: Arc::new(McpToolSet::new(config)),
        asker,
    }
}

/// A directory name for `tenant`: letters, digits, `-` and `_` kept, every
/// other byte as `~XX`, so two tenants never share one and none escapes.
fn dir_name(tenant: &str) -> String {
    let mut name = String::with_capacity(tenant.len());
    for byte in tenant.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("~{byte:02X}"));
        }
    }
    if name.is_empty() {
        name.push('~');
    }
    name
}

#[async_trait]
impl ToolSet for TenantScopedToolSet {
    fn name(&self) -> &str {
        &self.config.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        self.operator.set.list_tools().await
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let connection = match request.labels.get(TENANT_LABEL) {
            Some(tenant) if self.config.oauth.is_some() => self.tenant(tenant).await?,
            _ => self.operator.clone(),
        };
        let _asking = connection.asker.enter(request.elicit.clone());
        connection.set.call_tool(request).await
    }

    fn lifecycle(&self) -> Option<&dyn Lifecycle> {
        Some(self)
    }

    fn tool_list_changes(&self) -> Option<&dyn ToolListChanges> {
        self.operator.set.tool_list_changes()
    }

    fn public_description(&self) -> Option<&dyn PublicDescription> {
        self.operator.set.public_description()
    }

    fn oauth(&self) -> Option<&dyn OAuthTokenSource> {
        self.operator.set.oauth()
    }

    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        Some(self)
    }
}

#[async_trait]
impl Lifecycle for TenantScopedToolSet {
    async fn start(&self) -> Result<(), ToolError> {
        Lifecycle::start(&*self.operator.set).await
    }

    async fn stop(&self) -> Result<(), ToolError> {
        let tenants: Vec<_> = self.lock().drain().map(|(_, t)| t.connection).collect();
        for t in tenants {
            let _ = Lifecycle::stop(&*t.set).await;
        }
        Lifecycle::stop(&*self.operator.set).await
    }
}

impl ElicitationSupport for TenantScopedToolSet {
    fn set_elicitation_handler(&self, handler: Option<Arc<dyn ElicitationHandler>>) {
        self.operator.set.set_elicitation_handler(handler.clone());
        for t in self.lock().values() {
            t.connection.set.set_elicitation_handler(handler.clone());
        }
        *self.handler.lock().unwrap_or_else(PoisonError::into_inner) = handler;
    }
}

#[cfg(test)]
mod tests {
    use super::dir_name;

    #[test]
    fn tenant_directories_are_distinct_and_stay_inside() {
        assert_eq!(dir_name("acme"), "acme");
        assert_eq!(dir_name("a/b"), "a~2Fb");
        assert_eq!(dir_name(".."), "~2E~2E");
        assert_ne!(dir_name("a b"), dir_name("a_b"));
        assert_ne!(dir_name("a~20b"), dir_name("a b"));
        assert_eq!(dir_name(""), "~");
    }
}
