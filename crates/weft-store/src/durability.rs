//! [`Durability`]: what a commit survives once the store acknowledged it,
//! and what each store does to make it so.
//!
//! | mode | survives | SQLite | PostgreSQL |
//! |------|----------|--------|------------|
//! | `sync` (default) | a crash of the process, of the database server, of the machine, power loss | `synchronous = FULL`: the WAL is synced before the commit returns (one sync per group of concurrent commits) | the server's own setting (`synchronous_commit = on` unless changed): the WAL is flushed before the commit returns |
//! | `process` | a crash (or SIGKILL) of the weft process | `synchronous = NORMAL`: the commit is in the WAL, in the OS's page cache; synced at checkpoints | `synchronous_commit = off` for weft's connections: the server flushes the WAL within its `wal_writer_delay` |
//!
//! In `process` mode an OS crash or power loss (and, on PostgreSQL, a crash
//! of the database server) may roll back the commits of the last moments:
//! the runs continue from an earlier step, as after any crash, so a tool
//! call of the lost steps may run again (an idempotent tool's, or one the
//! run machine had answered as interrupted). The database is never
//! corrupted and a run is never half-written in either mode: a commit lands
//! whole or not at all.

use std::fmt;
use std::str::FromStr;

/// What an acknowledged commit survives; see the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Survives power loss: every commit (group) is synced to disk.
    #[default]
    Sync,
    /// Survives a crash of the weft process, not of the machine: no sync
    /// per commit.
    Process,
}

impl Durability {
    /// The name used on the command line and in URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Process => "process",
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A durability name that is neither `sync` nor `process`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown durability `{0}`: expected `sync` (survives power loss) or `process` (survives a crash of the process)"
)]
pub struct UnknownDurability(pub String);

impl FromStr for Durability {
    type Err = UnknownDurability;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "sync" => Ok(Self::Sync),
            "process" => Ok(Self::Process),
            _ => Err(UnknownDurability(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_say_what_is_expected() {
        for mode in [Durability::Sync, Durability::Process] {
            assert_eq!(mode.to_string().parse::<Durability>(), Ok(mode));
        }
        assert_eq!("PROCESS".parse::<Durability>(), Ok(Durability::Process));
        assert_eq!(Durability::default(), Durability::Sync);
        let err = "fast".parse::<Durability>().unwrap_err();
        assert!(err.to_string().contains("`fast`"), "{err}");
        assert!(err.to_string().contains("`sync`"), "{err}");
    }
}
