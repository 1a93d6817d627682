//! Connections to Redis: one multiplexed connection for pipelined writes
//! (reconnecting with backoff), and a bounded pool of dedicated connections
//! for blocking reads, which have no response timeout. Every socket sets
//! `TCP_NODELAY`. `rediss://` URLs connect over TLS (rustls with ring),
//! trusting the system's roots or a private CA ([`RedisOptions::ca_pem`]);
//! `redis://user:password@host` logs in as a Redis ACL user.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::io::tcp::TcpSettings;
use redis::{AsyncConnectionConfig, IntoConnectionInfo};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::RegistryError;

/// Most dedicated blocking connections open at once, by default.
pub const DEFAULT_MAX_BLOCKING: usize = 256;

/// How to connect beyond the URL.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// Most dedicated blocking connections open at once.
    pub max_blocking: usize,
    /// PEM certificates of the CA a `rediss://` server's certificate must
    /// chain to, instead of the system's roots.
    pub ca_pem: Option<Vec<u8>>,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            max_blocking: DEFAULT_MAX_BLOCKING,
            ca_pem: None,
        }
    }
}

/// A handle on one Redis server; cheap to clone.
#[derive(Clone)]
pub struct Redis {
    client: redis::Client,
    mux: ConnectionManager,
    pool: Arc<Pool>,
}

struct Pool {
    idle: Mutex<Vec<MultiplexedConnection>>,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("addr", &self.client.get_connection_info().addr())
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// Connects to `url` (`redis[s]://[user:password@]host:port[/db]`).
    pub async fn connect(url: &str) -> Result<Self, RegistryError> {
        Self::connect_opts(url, RedisOptions::default()).await
    }

    /// Connects with at most `max_blocking` dedicated blocking connections.
    pub async fn connect_with(url: &str, max_blocking: usize) -> Result<Self, RegistryError> {
        let options = RedisOptions {
            max_blocking,
            ..RedisOptions::default()
        };
        Self::connect_opts(url, options).await
    }

    /// Connects with `options`.
    pub async fn connect_opts(url: &str, options: RedisOptions) -> Result<Self, RegistryError> {
        let max_blocking = options.max_blocking;
        if max_blocking == 0 {
            return Err(RegistryError::Config(
                "max_blocking must be at least 1".into(),
            ));
        }
        let info = url
            .into_connection_info()?
            .set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let tls = matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. });
        if tls {
            install_crypto_provider();
        }
        let client = match options.ca_pem {
            Some(pem) if tls => redis::Client::build_with_tls(
                info,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                },
            )?,
            Some(_) => {
                return Err(RegistryError::Config(
                    "a CA file applies only to a `rediss://` URL".into(),
                ));
            }
            None => redis::Client::open(info)?,
        };
        let config = ConnectionManagerConfig::new()
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(Duration::from_secs(2))
            .set_number_of_retries(6)
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(10)));
        let mux = client.get_connection_manager_with_config(config).await?;
        Ok(Self {
            client,
            mux,
            pool: Arc::new(Pool {
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(max_blocking)),
            }),
        })
    }

    /// The shared multiplexed connection; concurrent commands are pipelined.
    pub fn mux(&self) -> ConnectionManager {
        self.mux.clone()
    }

    /// A dedicated connection for one blocking reader, returned to the pool
    /// when dropped unless it was marked broken. Waits while the pool is
    /// exhausted.
    pub async fn blocking(&self) -> Result<Blocking, RegistryError> {
        let permit = self
            .pool
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| RegistryError::Config("the connection pool was closed".into()))?;
        self.take(permit).await
    }

    /// A dedicated connection if the pool has one to spare now (`None`
    /// when it is exhausted).
    pub async fn try_blocking(&self) -> Option<Result<Blocking, RegistryError>> {
        let permit = self.pool.permits.clone().try_acquire_owned().ok()?;
        Some(self.take(permit).await)
    }

    /// An idle pooled connection, or a new one, held under `permit`.
    async fn take(&self, permit: OwnedSemaphorePermit) -> Result<Blocking, RegistryError> {
        let idle = self.pool.idle.lock().ok().and_then(|mut v| v.pop());
        let conn = match idle {
            Some(c) => c,
            None => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(2)))
                    .set_response_timeout(None);
                self.client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?
            }
        };
        Ok(Blocking {
            conn: Some(conn),
            pool: self.pool.clone(),
            _permit: permit,
            broken: false,
        })
    }
}

/// A dedicated connection borrowed from the pool.
pub struct Blocking {
    conn: Option<MultiplexedConnection>,
    pool: Arc<Pool>,
    _permit: OwnedSemaphorePermit,
    broken: bool,
}

impl Blocking {
    /// Runs one command on the dedicated connection; an IO error marks it broken.
    pub async fn query(&mut self, cmd: &redis::Cmd) -> Result<redis::Value, RegistryError> {
        let res = cmd.query_async(self.begin()?).await;
        self.settle(res)
    }

    /// Runs a pipeline on the dedicated connection: one result per command
    /// (a command's server error is its own result); an IO error marks the
    /// connection broken.
    pub async fn query_pipe(
        &mut self,
        pipe: &mut redis::Pipeline,
    ) -> Result<Vec<redis::RedisResult<redis::Value>>, RegistryError> {
        let res = pipe.ignore_errors().query_async(self.begin()?).await;
        self.settle(res)
    }

    /// The connection, marked broken until its reply is in: a reader
    /// dropped mid-command leaves a reply pending on the socket, and such a
    /// connection is not reused.
    fn begin(&mut self) -> Result<&mut MultiplexedConnection, RegistryError> {
        self.broken = true;
        self.conn
            .as_mut()
            .ok_or_else(|| RegistryError::Config("connection already closed".into()))
    }

    /// A reply came: the connection is usable again unless the error says
    /// it is not.
    fn settle<T>(&mut self, res: redis::RedisResult<T>) -> Result<T, RegistryError> {
        self.broken = res.as_ref().is_err_and(|e| {
            e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error()
        });
        res.map_err(Into::into)
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        if self.broken {
            return;
        }
        if let (Some(conn), Ok(mut idle)) = (self.conn.take(), self.pool.idle.lock()) {
            idle.push(conn);
        }
    }
}

/// Installs ring as the process's rustls crypto provider, once; a provider
/// installed before by another part of the process is kept.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `url` with its password replaced by `***`, for messages and logs.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(u, _)| u);
            let hidden = if user_info.contains(':') {
                format!("{user}:***")
            } else {
                "***".to_owned()
            };
            format!("{scheme}://{hidden}@{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacts_passwords() {
        use super::redacted;
        assert_eq!(
            redacted("redis://127.0.0.1:6379/2"),
            "redis://127.0.0.1:6379/2"
        );
        assert_eq!(
            redacted("rediss://app:s3cr:et@h:6380/1"),
            "rediss://app:***@h:6380/1"
        );
        assert_eq!(redacted("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redacted("redis://pw@h"), "redis://***@h");
        assert_eq!(redacted("nonsense"), "nonsense");
    }
}
