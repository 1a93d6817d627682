//! Checkpoints off the commit path: a thread of its own copies the WAL's
//! pages into the database file while commits go on.
//!
//! SQLite checkpoints by itself inside the commit that grew the WAL past
//! `wal_autocheckpoint` pages: that commit, and every commit queued behind
//! it, waits while thousands of pages are copied and the WAL and the
//! database file are synced. With `synchronous = NORMAL` (the `process`
//! durability) that sync flushes every commit since the last checkpoint,
//! and it was a sixth of a step's time. There, with group commit on, the
//! commit side instead asks this thread for a checkpoint every
//! [`CHECKPOINT_EVERY`] commits ([`Checkpointer::request`]), and the thread
//! runs a `PASSIVE` checkpoint through its own connection: it never blocks
//! a writer, and a writer never waits for it. Once every frame is copied,
//! the next commit starts the WAL over from its beginning.
//!
//! With `synchronous = FULL` every commit syncs the WAL itself: a
//! checkpoint running beside the commits made their syncs wait behind its
//! own writes to the same disk (a sequential step went from 265 to 300 µs),
//! so there SQLite checkpoints inside commits as before.
//!
//! SQLite's own checkpoint stays on as the backstop ([`BACKSTOP_PAGES`]):
//! the commit that reaches it copies what this thread has not yet (little,
//! unless the thread fell behind or a long read held it back) and lets the
//! WAL start over, so the WAL never grows past it for long.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use rusqlite::Connection;

use std::path::Path;
use std::time::Duration;

/// Commits between two requests for a checkpoint: a step commits about 7
/// WAL pages, so a checkpoint copies a few thousand frames, about half the
/// backstop.
pub(crate) const CHECKPOINT_EVERY: u64 = 512;

/// WAL pages past which a commit checkpoints by itself even so (32 MiB of
/// 4 KiB pages). Under a steady stream of commits the background checkpoint
/// never sees every frame copied at a moment no commit is under way, and
/// only then can the next commit start the WAL over; a commit reaching this
/// bound does, and finds all but the newest frames copied already, so the
/// WAL stays within it at little cost to that commit.
const BACKSTOP_PAGES: i64 = 8192;

/// WAL pages after which a commit checkpoints when nothing checkpoints
/// off the commit path (group commit off): 32 MiB, so the pages that every
/// commit changes (run rows, the newest log pages) are copied to the
/// database once per checkpoint rather than every 1,000 pages (SQLite's
/// default), which cost a busy store a seventh of its commit time.
const WAL_AUTOCHECKPOINT: i64 = 8192;

/// What checkpointing needs to know of a store's options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup<'a> {
    /// The database file.
    pub(crate) path: &'a Path,
    /// The store's busy timeout.
    pub(crate) busy_timeout: Duration,
    /// Whether group commit is on.
    pub(crate) group_commit: bool,
    /// Whether commits skip the sync (`synchronous = NORMAL`).
    pub(crate) no_sync_per_commit: bool,
}

impl Setup<'_> {
    /// Whether checkpoints run off the commit path.
    pub(crate) fn in_background(&self) -> bool {
        self.group_commit && self.no_sync_per_commit
    }

    /// The store's connections' `wal_autocheckpoint`: when checkpoints run
    /// off the commit path, SQLite's own is the backstop.
    pub(crate) fn autocheckpoint_pages(&self) -> i64 {
        if self.in_background() {
            BACKSTOP_PAGES
        } else {
            WAL_AUTOCHECKPOINT
        }
    }
}

/// How many background checkpoints ran and how far the WAL grew: a
/// benchmark's figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Checkpoints run.
    pub checkpoints: u64,
    /// The most frames the WAL held when a checkpoint began: how far the
    /// WAL grows between checkpoints.
    pub largest_wal_frames: u64,
}

#[derive(Debug, Default)]
struct Counters {
    checkpoints: AtomicU64,
    largest_wal_frames: AtomicU64,
}

/// A handle to the checkpoint thread; the thread ends when every handle is
/// dropped.
#[derive(Debug, Clone)]
pub(crate) struct Checkpointer {
    signal: mpsc::SyncSender<()>,
    counters: Arc<Counters>,
}

/// Why the checkpoint thread could not start.
#[derive(Debug)]
pub(crate) enum StartError {
    /// Its connection did not open.
    Connection(rusqlite::Error),
    /// The thread did not spawn.
    Thread(std::io::Error),
}

impl Checkpointer {
    /// Opens a connection of its own to the store's file (syncing as the
    /// store's commits do) and starts the thread.
    pub(crate) fn open(setup: Setup<'_>) -> Result<Self, StartError> {
        let connect = || -> Result<Connection, rusqlite::Error> {
            let conn = Connection::open(setup.path)?;
            conn.busy_timeout(setup.busy_timeout)?;
            let sync = if setup.no_sync_per_commit {
                "NORMAL"
            } else {
                "FULL"
            };
            conn.pragma_update(None, "synchronous", sync)?;
            conn.pragma_update(None, "wal_autocheckpoint", 0)?;
            Ok(conn)
        };
        let conn = connect().map_err(StartError::Connection)?;
        Self::start(conn).map_err(StartError::Thread)
    }

    /// Starts the thread, checkpointing through `conn`.
    fn start(conn: Connection) -> std::io::Result<Self> {
        // One request waiting is enough: it covers every frame written
        // before the checkpoint starts.
        let (signal, requests) = mpsc::sync_channel(1);
        let counters = Arc::new(Counters::default());
        let thread_counters = counters.clone();
        std::thread::Builder::new()
            .name("weft-sqlite-checkpoint".into())
            .spawn(move || run(&conn, &requests, &thread_counters))?;
        Ok(Self { signal, counters })
    }

    /// Asks for a checkpoint; returns at once (a request already waiting
    /// covers this one).
    pub(crate) fn request(&self) {
        let _ = self.signal.try_send(());
    }

    /// The checkpoints so far.
    pub(crate) fn stats(&self) -> CheckpointStats {
        CheckpointStats {
            checkpoints: self.counters.checkpoints.load(Ordering::Relaxed),
            largest_wal_frames: self.counters.largest_wal_frames.load(Ordering::Relaxed),
        }
    }
}

fn run(conn: &Connection, requests: &mpsc::Receiver<()>, counters: &Counters) {
    while requests.recv().is_ok() {
        // (busy, frames in the WAL, frames copied)
        let done = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        });
        match done {
            Ok((_, log, copied)) => {
                counters.checkpoints.fetch_add(1, Ordering::Relaxed);
                counters
                    .largest_wal_frames
                    .fetch_max(u64::try_from(log).unwrap_or(0), Ordering::Relaxed);
                tracing::debug!(log, copied, "background checkpoint");
            }
            // Another connection checkpointing, or the file busy: the next
            // request tries again, and the backstop bounds the WAL.
            Err(e) => tracing::debug!(error = %e, "background checkpoint skipped"),
        }
    }
}
