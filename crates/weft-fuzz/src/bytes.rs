//! Byte strings: arbitrary ones, biased towards the bytes decoders branch
//! on, and mutations of seed inputs (recorded fixtures, valid files).

use std::sync::Arc;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};

/// Bytes decoders branch on: line ends, field separators, JSON and TOML
/// punctuation, a byte-order mark's bytes, UTF-8 lead and continuation bytes.
pub const INTERESTING: &[u8] =
    b"\n\r: \t\"'{}[],=.#\\0123456789aedtx\xEF\xBB\xBF\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF\xC0";

/// Arbitrary bytes, shorter than `max_len`, half of them from [`INTERESTING`].
pub fn arbitrary(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(prop_oneof![any::<u8>(), select(INTERESTING)], 0..max_len)
}

/// One edit of a byte string; positions are fractions of its length.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Flips one bit of a byte.
    FlipBit(Index, u8),
    /// Overwrites a byte.
    Set(Index, u8),
    /// Inserts bytes.
    Insert(Index, Vec<u8>),
    /// Deletes up to `len` bytes.
    Delete(Index, usize),
    /// Repeats a range of up to `len` bytes right after itself.
    Duplicate(Index, usize),
    /// Cuts the input short.
    Truncate(Index),
    /// Moves a range of up to `len` bytes elsewhere.
    Move(Index, usize, Index),
}

/// A random [`Mutation`].
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<Index>;
    prop_oneof![
        (at(), 0..8u8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        (at(), prop_oneof![any::<u8>(), select(INTERESTING)])
            .prop_map(|(i, b)| Mutation::Set(i, b)),
        (at(), arbitrary(8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (at(), 1..64usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (at(), 1..64usize).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        at().prop_map(Mutation::Truncate),
        (at(), 1..64usize, at()).prop_map(|(i, n, j)| Mutation::Move(i, n, j)),
    ]
}

/// Applies `m` to `input`.
pub fn apply(input: &mut Vec<u8>, m: &Mutation) {
    let len = input.len();
    // A position in `0..=len`.
    let pos = |i: &Index| if len == 0 { 0 } else { i.index(len + 1) };
    match m {
        Mutation::FlipBit(i, bit) if len > 0 => input[i.index(len)] ^= 1 << bit,
        Mutation::Set(i, b) if len > 0 => input[i.index(len)] = *b,
        Mutation::FlipBit(..) | Mutation::Set(..) => {}
        Mutation::Insert(i, bytes) => {
            let at = pos(i);
            input.splice(at..at, bytes.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let at = pos(i);
            input.drain(at..(at + n).min(len));
        }
        Mutation::Duplicate(i, n) => {
            let at = pos(i);
            let range = input[at..(at + n).min(len)].to_vec();
            let end = at + range.len();
            input.splice(end..end, range);
        }
        Mutation::Truncate(i) => input.truncate(pos(i)),
        Mutation::Move(i, n, j) => {
            let at = pos(i);
            let range: Vec<u8> = input.drain(at..(at + n).min(len)).collect();
            let to = j.index(input.len() + 1);
            input.splice(to..to, range);
        }
    }
}

/// One of `seeds`, changed by up to `max_edits` random mutations.
pub fn mutated(seeds: Arc<Vec<Vec<u8>>>, max_edits: usize) -> impl Strategy<Value = Vec<u8>> {
    assert!(!seeds.is_empty(), "mutated() needs at least one seed");
    (any::<Index>(), vec(mutation(), 0..=max_edits)).prop_map(move |(seed, edits)| {
        let mut input = seeds[seed.index(seeds.len())].clone();
        for m in &edits {
            apply(&mut input, m);
        }
        input
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest! {
        #[test]
        fn mutations_stay_in_bounds(input in vec(any::<u8>(), 0..4), edits in vec(mutation(), 1..4)) {
            let mut input = input;
            for m in &edits {
                apply(&mut input, m);
            }
        }
    }
}
