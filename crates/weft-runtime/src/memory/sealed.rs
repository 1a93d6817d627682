//! [`Sealed`]: the compact form the in-memory store keeps a finished run's
//! parts in (its event log, its last snapshot): the value's JSON, compressed
//! with LZ4 (`lz4_flex`, pure Rust). JSON of a run repeats its keys and
//! texts, so this is a small fraction of the memory the decoded values
//! take; sealing and opening cost a few microseconds per kilobyte, paid once
//! when the run finishes and again on each read of the finished run.

use std::marker::PhantomData;
use std::sync::Arc;

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
    /// Seals `value`, which encodes as a `T` does (a slice for a vector);
    /// `None` when it cannot be encoded (keep it as it is).
    pub(super) fn seal(value: &(impl Serialize + ?Sized)) -> Option<Self> {
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

/// A run's last snapshot: a value while the run may still move (shared
/// with the sealer while it encodes it), sealed once it has finished.
#[derive(Debug)]
pub(super) enum Snapshot {
    Live(Arc<RunMachine>),
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

    /// The live snapshot, shared; `None` when it is sealed.
    pub(super) fn live(&self) -> Option<Arc<RunMachine>> {
        match self {
            Self::Live(machine) => Some(machine.clone()),
            Self::Sealed(_) => None,
        }
    }

    /// Takes `sealed` in place of the live snapshot `was`, if it is still
    /// the one kept.
    pub(super) fn replace_with(&mut self, was: &Arc<RunMachine>, sealed: Sealed<RunMachine>) {
        if let Self::Live(machine) = self
            && Arc::ptr_eq(machine, was)
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
        let sealed = Sealed::<Vec<String>>::seal(&value).unwrap();
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
        let mut sealed = Sealed::<Vec<u32>>::seal(&vec![1u32, 2, 3]).unwrap();
        let mut bytes = sealed.bytes.to_vec();
        bytes.truncate(bytes.len() - 2);
        sealed.bytes = bytes.into_boxed_slice();
        assert!(sealed.open().is_err());
    }
}
