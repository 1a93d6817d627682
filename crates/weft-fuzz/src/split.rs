//! Cutting an input into the chunks a decoder is fed, as a network would:
//! at random points (empty chunks included), after every byte, or inside
//! every multi-byte UTF-8 sequence.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

/// Where to cut an input.
#[derive(Debug, Clone)]
pub enum Cuts {
    /// At these points (fractions of the length; equal points give empty chunks).
    At(Vec<Index>),
    /// After every byte.
    EveryByte,
    /// After the first byte of every multi-byte UTF-8 sequence, and
    /// between a `\r` and the byte after it; an empty chunk follows each.
    Inside,
}

/// Random [`Cuts`], mostly at random points (feeding every byte alone is
/// slow on long inputs, so it is rarer).
pub fn cuts() -> impl Strategy<Value = Cuts> {
    prop_oneof![
        14 => vec(any::<Index>(), 1..10).prop_map(Cuts::At),
        1 => Just(Cuts::EveryByte),
        1 => Just(Cuts::Inside),
    ]
}

/// `input` cut into chunks as `cuts` says; they join back to `input`.
pub fn chunks<'a>(input: &'a [u8], cuts: &Cuts) -> Vec<&'a [u8]> {
    let points: Vec<usize> = match cuts {
        Cuts::At(at) => {
            let mut p: Vec<usize> = at.iter().map(|i| i.index(input.len() + 1)).collect();
            p.sort_unstable();
            p
        }
        Cuts::EveryByte => (1..input.len()).collect(),
        Cuts::Inside => input
            .iter()
            .enumerate()
            .filter(|(_, b)| **b >= 0xC0 || **b == b'\r')
            .flat_map(|(i, _)| [i + 1, i + 1])
            .collect(),
    };
    let mut out = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for p in points {
        out.push(&input[start..p]);
        start = p;
    }
    out.push(&input[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest! {
        #[test]
        fn chunks_join_back_to_the_input(input in vec(any::<u8>(), 0..16), cuts in cuts()) {
            prop_assert_eq!(chunks(&input, &cuts).concat(), input);
        }
    }
}
