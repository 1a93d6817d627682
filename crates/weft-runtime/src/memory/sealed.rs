//! [`Sealed`]: the compact form the in-memory store keeps a finished run's
//! parts in (its event log, its last snapshot): the value's JSON, compressed
//! with LZ4 (`lz4_flex`, pure Rust). JSON of a run repeats its keys and
//! texts, so this is a small fraction of the memory the decoded values
//! take; sealing and opening cost a few microseconds per kilobyte, paid once
//! when the run finishes and again on each read of the finished run.

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use weft_core::RunId;
use weft_core::run::RunMachine;
use weft_core::store::StoreError;

/// A value of type `T`, kept as compressed JSON.
pub(super) struct Sealed<T> {
    bytes: Box<[u8]>,
    kind: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Sealed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sealed({} bytes)", self.bytes.len())
    }
}

impl<T: Serialize + DeserializeOwned> Sealed<T> {
    /// Seals `value`; `None` when it cannot be encoded (keep it as it is).
    pub(super) fn seal(value: &T) -> Option<Self> {
        let json = serde_json::to_vec(value).ok()?;
        Some(Self {
            bytes: lz4_flex::compress_prepend_size(&json).into_boxed_slice(),
            kind: PhantomData,
        })
    }

    /// The value again, or why it could not be decoded.
    pub(super) fn open(&self) -> Result<T, String> {
        let json = lz4_flex::decompress_size_prepended(&self.bytes).map_err(|e| e.to_string())?;
        serde_json::from_slice(&json).map_err(|e| e.to_string())
    }
}

/// A run's last snapshot: a value while the run may still move, sealed
/// once it has finished (boxed, so a sealed one does not keep a machine's
/// worth of bytes inline).
#[derive(Debug)]
pub(super) enum Snapshot {
    Live(Box<RunMachine>),
    Sealed(Sealed<RunMachine>),
}

impl Snapshot {
    /// The snapshot as a value (decoded when sealed).
    pub(super) fn get(&self, run_id: &RunId) -> Result<RunMachine, StoreError> {
        match self {
            Self::Live(machine) => Ok((**machine).clone()),
            Self::Sealed(sealed) => sealed.open().map_err(|e| StoreError::Corrupt {
                message: format!("the snapshot of run `{run_id}` cannot be decoded: {e}"),
            }),
        }
    }

    /// Keeps the snapshot compactly; one that cannot be encoded stays as it is.
    pub(super) fn seal(&mut self) {
        if let Self::Live(machine) = self
            && let Some(sealed) = Sealed::seal(&**machine)
        {
            *self = Self::Sealed(sealed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_to_itself_in_fewer_bytes() {
        let value: Vec<String> = (0..200)
            .map(|i| format!("{{\"kind\":\"tool_started\",\"seq\":{i}}}"))
            .collect();
        let sealed = Sealed::seal(&value).unwrap();
        assert_eq!(sealed.open().unwrap(), value);
        let json = serde_json::to_vec(&value).unwrap().len();
        assert!(
            sealed.bytes.len() * 3 < json,
            "{} of {json}",
            sealed.bytes.len()
        );
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let mut sealed = Sealed::seal(&vec![1u32, 2, 3]).unwrap();
        let mut bytes = sealed.bytes.to_vec();
        bytes.truncate(bytes.len() - 2);
        sealed.bytes = bytes.into_boxed_slice();
        assert!(sealed.open().is_err());
    }
}
