//! Connections to Redis: one multiplexed connection for pipelined writes
//! (reconnecting with backoff), and a bounded pool of dedicated connections
//! for blocking reads, which have no response timeout. Every socket sets
//! `TCP_NODELAY`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::io::tcp::TcpSettings;
use redis::{AsyncConnectionConfig, IntoConnectionInfo};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::RegistryError;

/// Most dedicated blocking connections open at once, by default.
pub const DEFAULT_MAX_BLOCKING: usize = 256;

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
    /// Connects to `url` (`redis://host:port[/db]`).
    pub async fn connect(url: &str) -> Result<Self, RegistryError> {
        Self::connect_with(url, DEFAULT_MAX_BLOCKING).await
    }

    /// Connects with at most `max_blocking` dedicated blocking connections.
    pub async fn connect_with(url: &str, max_blocking: usize) -> Result<Self, RegistryError> {
        if max_blocking == 0 {
            return Err(RegistryError::Config(
                "max_blocking must be at least 1".into(),
            ));
        }
        let info = url
            .into_connection_info()?
            .set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let client = redis::Client::open(info)?;
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
