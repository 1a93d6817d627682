//! JSON values over a target's vocabulary (the keys and strings its decoder
//! knows), and structural edits of a JSON tree for mutating valid inputs.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Map, Value, json};

use crate::text::word_or_tricky;

/// The words a decoder knows: object keys, and string values such as tags.
#[derive(Debug)]
pub struct Vocab {
    /// Object keys.
    pub keys: &'static [&'static str],
    /// String values.
    pub strings: &'static [&'static str],
}

/// Numbers at the edges of the integer types decoders read, and a few floats.
pub fn number() -> BoxedStrategy<Value> {
    let edges = [
        json!(0),
        json!(1),
        json!(-1),
        json!(u32::MAX),
        json!(u64::from(u32::MAX) + 1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(0.5),
        json!(-0.0),
        json!(1e300),
    ];
    prop_oneof![
        select(edges.to_vec()),
        any::<u32>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
    ]
    .boxed()
}

/// A scalar: null, a boolean, a [`number`] or a string.
pub fn scalar(vocab: &'static Vocab) -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => number(),
        4 => word_or_tricky(vocab.strings).prop_map(Value::String),
    ]
    .boxed()
}

/// A key from the vocabulary, now and then another string.
pub fn key(vocab: &'static Vocab) -> BoxedStrategy<String> {
    word_or_tricky(vocab.keys)
}

/// Any JSON value, nested at most `depth` levels.
pub fn value(vocab: &'static Vocab, depth: u32) -> BoxedStrategy<Value> {
    scalar(vocab)
        .prop_recursive(depth, 24, 5, move |inner| {
            prop_oneof![
                vec(inner.clone(), 0..5).prop_map(Value::Array),
                vec((key(vocab), inner), 0..5)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
        .boxed()
}

/// An object whose `tag_key` is one of `tags` (an event's `type`), with up
/// to five more fields from the vocabulary.
pub fn tagged(
    vocab: &'static Vocab,
    tag_key: &'static str,
    tags: &'static [&'static str],
) -> BoxedStrategy<Value> {
    (
        word_or_tricky(tags),
        vec((key(vocab), value(vocab, 3)), 0..6),
    )
        .prop_map(move |(tag, fields)| {
            let mut map: Map<String, Value> = fields.into_iter().collect();
            map.insert(tag_key.to_owned(), Value::String(tag));
            Value::Object(map)
        })
        .boxed()
}

/// One structural edit; the node it applies to is picked by its position in
/// a preorder walk of the tree.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Replaces a node.
    Replace(Index, Value),
    /// Removes a child of an object or array node.
    Remove(Index, Index),
    /// Adds a field to an object node, or an element to an array node.
    Insert(Index, String, Value),
}

/// A random [`Edit`] with values from `vocab`.
pub fn edit(vocab: &'static Vocab) -> BoxedStrategy<Edit> {
    prop_oneof![
        (any::<Index>(), value(vocab, 2)).prop_map(|(i, v)| Edit::Replace(i, v)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Edit::Remove(i, j)),
        (any::<Index>(), key(vocab), value(vocab, 2)).prop_map(|(i, k, v)| Edit::Insert(i, k, v)),
    ]
    .boxed()
}

/// Applies `edit` to `root`.
pub fn apply(root: &mut Value, edit: &Edit) {
    let nodes = count(root);
    let at = |i: &Index| i.index(nodes);
    match edit {
        Edit::Replace(i, v) => *nth(root, at(i)) = v.clone(),
        Edit::Remove(i, j) => match nth(root, at(i)) {
            Value::Object(map) if !map.is_empty() => {
                let key = map.keys().nth(j.index(map.len())).cloned();
                if let Some(key) = key {
                    map.remove(&key);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                items.remove(j.index(items.len()));
            }
            _ => {}
        },
        Edit::Insert(i, k, v) => match nth(root, at(i)) {
            Value::Object(map) => {
                map.insert(k.clone(), v.clone());
            }
            Value::Array(items) => items.push(v.clone()),
            _ => {}
        },
    }
}

/// How many nodes `v` has, itself included.
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(map) => map.values().map(count).sum(),
        _ => 0,
    }
}

/// The `n`th node of `v` in preorder (`n < count(v)`).
fn nth(v: &mut Value, mut n: usize) -> &mut Value {
    if n == 0 {
        return v;
    }
    n -= 1;
    let children: Box<dyn Iterator<Item = &mut Value>> = match v {
        Value::Array(items) => Box::new(items.iter_mut()),
        Value::Object(map) => Box::new(map.values_mut()),
        _ => unreachable!("a scalar has no descendants"),
    };
    for child in children {
        let size = count(child);
        if n < size {
            return nth(child, n);
        }
        n -= size;
    }
    unreachable!("n is below the node count")
}

#[cfg(test)]
mod tests {
    use super::*;

    static VOCAB: Vocab = Vocab {
        keys: &["a", "b"],
        strings: &["x"],
    };

    proptest! {
        #[test]
        fn edits_apply_to_any_tree(root in value(&VOCAB, 3), edits in vec(edit(&VOCAB), 1..4)) {
            let mut root = root;
            for e in &edits {
                apply(&mut root, e);
            }
        }
    }
}
