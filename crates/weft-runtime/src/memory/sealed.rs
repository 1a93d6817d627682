//! [`Sealed`]: the compact form the in-memory store keeps a finished run's
//! parts in (its event log, its last snapshot): the value in MessagePack,
//! compressed with LZ4 (`lz4_flex`, pure Rust). A run repeats its keys and
//! texts, so this is a small fraction of the memory the decoded values
//! take; sealing and opening cost a few microseconds per kilobyte, paid once
//! when the run finishes and again on each read of the finished run.
//!
//! MessagePack rather than JSON because the bytes never leave the process
//! and it is cheaper to write: strings are copied, not scanned for escapes,
//! and numbers are not formatted. Structs keep their field names (so a
//! skipped field does not shift the others) and values encode as they do
//! in JSON (human-readable), so any type that round-trips through JSON
//! round-trips here.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use weft_core::RunId;
use weft_core::run::RunMachine;
use weft_core::store::StoreError;

/// A value of type `T`, kept as compressed MessagePack.
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
        SCRATCH.with_borrow_mut(|scratch| {
            let bytes = scratch.seal(value);
            scratch.trim();
            Some(Self {
                bytes: bytes?,
                kind: PhantomData,
            })
        })
    }

    /// The value again, or why it could not be decoded.
    pub(super) fn open(&self) -> Result<T, String> {
        let raw = lz4_flex::decompress_size_prepended(&self.bytes).map_err(|e| e.to_string())?;
        let mut de = rmp_serde::Deserializer::from_read_ref(&raw).with_human_readable();
        T::deserialize(&mut de).map_err(|e| e.to_string())
    }
}

/// Buffers a thread reuses from one seal to the next: the encoded value, the
/// compressed bytes and LZ4's hash table. Allocating and zeroing them for
/// every finished run cost more than the encoding itself.
struct Scratch {
    encoded: Vec<u8>,
    out: Vec<u8>,
    table: lz4_flex::block::CompressTable,
}

/// A scratch buffer larger than this is given back after use, so one huge
/// run does not pin its size on the thread for good.
const SCRATCH_KEEP: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch {
        encoded: Vec::new(),
        out: Vec::new(),
        table: lz4_flex::block::CompressTable::default(),
    });
}

impl Scratch {
    /// `value` encoded, compressed, after its length as 4 little-endian
    /// bytes (the layout `lz4_flex::decompress_size_prepended` reads).
    fn seal(&mut self, value: &(impl Serialize + ?Sized)) -> Option<Box<[u8]>> {
        self.encoded.clear();
        encode(&mut self.encoded, value).ok()?;
        let len = u32::try_from(self.encoded.len()).ok()?;
        let max = 4 + lz4_flex::block::get_maximum_output_size(self.encoded.len());
        if self.out.len() < max {
            self.out.resize(max, 0);
        }
        self.out[..4].copy_from_slice(&len.to_le_bytes());
        let n = lz4_flex::block::compress_into_with_table(
            &self.encoded,
            &mut self.out[4..],
            &mut self.table,
        )
        .ok()?;
        Some(self.out[..4 + n].into())
    }

    fn trim(&mut self) {
        for buf in [&mut self.encoded, &mut self.out] {
            if buf.capacity() > SCRATCH_KEEP {
                *buf = Vec::new();
            }
        }
        if matches!(self.table, lz4_flex::block::CompressTable::Large(_)) {
            self.table = lz4_flex::block::CompressTable::default();
        }
    }
}

/// `value` in MessagePack, structs as maps, human-readable.
fn encode(
    out: &mut Vec<u8>,
    value: &(impl Serialize + ?Sized),
) -> Result<(), rmp_serde::encode::Error> {
    let mut ser = rmp_serde::Serializer::new(out)
        .with_struct_map()
        .with_human_readable();
    value.serialize(&mut ser)
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
    fn reused_buffers_seal_any_size_in_turn() {
        // Small, past LZ4's 64 KiB small-table limit, past the size a thread
        // keeps its buffers at, then small again: each opens to itself.
        for n in [3usize, 20_000, 300_000, 5] {
            let value: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
            let sealed = Sealed::<Vec<String>>::seal(&value).unwrap();
            assert_eq!(sealed.open().unwrap(), value, "{n} items");
            let mut encoded = Vec::new();
            encode(&mut encoded, &value).unwrap();
            assert_eq!(
                lz4_flex::decompress_size_prepended(&sealed.bytes).unwrap(),
                encoded
            );
        }
        SCRATCH.with_borrow(|s| {
            assert!(s.encoded.capacity() <= SCRATCH_KEEP && s.out.capacity() <= SCRATCH_KEEP);
        });
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
