//! [`TokenStore`]: one MCP server's OAuth credentials in a JSON file of
//! their own, bound to the server's URL (a file naming another resource is
//! never used), written atomically (temporary file, then rename) with
//! owner-only permissions (0600 in a 0700 directory). It is rmcp's
//! [`CredentialStore`], so the flow's tokens land in it directly.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, AuthorizationMetadata, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use super::error::OAuthFlowError;
use weft_core::time::Clock;

/// The largest token file read.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// The token file format.
const VERSION: u32 = 1;

/// The token file of one server.
#[derive(Clone)]
pub(crate) struct TokenStore {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    path: PathBuf,
    resource: String,
    clock: Arc<dyn Clock>,
    context: Mutex<Context>,
}

/// What the file keeps besides the credentials, for refreshing and
/// authorizing again without a new discovery from scratch.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct Context {
    /// The server's last `WWW-Authenticate` challenge (it names the resource metadata).
    #[serde(default)]
    pub challenge: Option<String>,
    /// The authorization server's metadata.
    #[serde(default)]
    pub metadata: Option<AuthorizationMetadata>,
}

/// The file's contents.
#[derive(Serialize, Deserialize)]
pub(crate) struct TokenFile {
    version: u32,
    /// The MCP server URL the tokens were issued for.
    pub resource: String,
    #[serde(flatten)]
    pub context: Context,
    pub credentials: StoredCredentials,
}

impl TokenStore {
    /// The store of `resource`'s tokens in `dir`.
    pub fn new(dir: &Path, resource: &str, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                path: dir.join(file_name(resource)),
                resource: resource.to_owned(),
                clock,
                context: Mutex::new(Context::default()),
            }),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The context kept in memory (filled from the file by [`TokenStore::read`]).
    pub fn context(&self) -> Context {
        self.inner.lock_context().clone()
    }

    /// Sets what the next save writes besides the credentials.
    pub fn set_context(&self, context: Context) {
        *self.inner.lock_context() = context;
    }

    /// The stored file, if there is one for this very resource.
    pub async fn read(&self) -> Result<Option<TokenFile>, OAuthFlowError> {
        let path = self.inner.path.clone();
        let bytes = blocking(move || read_bounded(&path)).await?;
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        let file = match serde_json::from_slice::<TokenFile>(&bytes) {
            Ok(file) if file.version == VERSION => file,
            Ok(_) | Err(_) => {
                tracing::warn!(path = %self.inner.path.display(), "token file unreadable; ignored");
                return Ok(None);
            }
        };
        if file.resource != self.inner.resource {
            tracing::warn!(
                path = %self.inner.path.display(),
                "token file belongs to another server; ignored"
            );
            return Ok(None);
        }
        {
            let mut context = self.inner.lock_context();
            if context.metadata.is_none() {
                context.metadata = file.context.metadata.clone();
            }
            if context.challenge.is_none() {
                context.challenge = file.context.challenge.clone();
            }
        }
        Ok(Some(file))
    }

    /// Writes `credentials`, stamped with the clock's now, with the context.
    pub async fn write(&self, mut credentials: StoredCredentials) -> Result<(), OAuthFlowError> {
        let now = self.inner.clock.now().as_millis() / 1_000;
        credentials.token_received_at = Some(now);
        let file = TokenFile {
            version: VERSION,
            resource: self.inner.resource.clone(),
            context: self.context(),
            credentials,
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(OAuthFlowError::store)?;
        let (dir, path) = (self.inner.dir.clone(), self.inner.path.clone());
        blocking(move || write_atomic(&dir, &path, &bytes)).await
    }

    /// Deletes the file.
    pub async fn remove(&self) -> Result<(), OAuthFlowError> {
        let path = self.inner.path.clone();
        blocking(move || match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await
    }
}

impl Inner {
    fn lock_context(&self) -> std::sync::MutexGuard<'_, Context> {
        self.context.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let file = self.read().await.map_err(store_error)?;
        Ok(file.map(|f| f.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials).await.map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove().await.map_err(store_error)
    }
}

fn store_error(e: OAuthFlowError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

/// The file name for `resource`: its host, port and path, other characters as `_`.
fn file_name(resource: &str) -> String {
    let without_scheme = resource
        .split_once("://")
        .map_or(resource, |(_, rest)| rest);
    let mut name: String = without_scheme
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    name.push_str(".json");
    name
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, OAuthFlowError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(OAuthFlowError::store)?
        .map_err(OAuthFlowError::store)
}

/// The file's bytes, `None` when it does not exist; larger files are an error.
fn read_bounded(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes",
            path.display()
        )));
    }
    Ok(Some(bytes))
}

/// Writes `bytes` to a fresh owner-only temporary file in `dir`, then renames it to `path`.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700);
        builder.create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    #[cfg(not(unix))]
    builder.create(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_come_from_the_url() {
        assert_eq!(
            file_name("http://127.0.0.1:8080/mcp"),
            "127.0.0.1_8080_mcp.json"
        );
        assert_eq!(file_name("https://a.example/x?y"), "a.example_x_y.json");
    }
}
