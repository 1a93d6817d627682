//! [`AppendOnly`]: the list type of a run's growing parts (its transcript,
//! its tool outputs), cheap to clone at any length.
//!
//! A run's snapshot is cloned on every step (the in-memory store keeps a
//! copy of each committed machine), so a list that copied one pointer per
//! element would make every step cost more as the run grows. Elements are
//! kept in sealed chunks of [`CHUNK`] shared by every clone, plus an open
//! tail: a clone copies one pointer per chunk and at most `CHUNK - 1`
//! elements, whatever the length.

use std::fmt;
use std::ops::Index;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Elements per sealed chunk.
const CHUNK: usize = 32;

/// An append-only list whose clones share their full chunks.
#[derive(Clone, PartialEq)]
pub struct AppendOnly<T> {
    sealed: Vec<Arc<[T]>>,
    tail: Vec<T>,
}

impl<T> Default for AppendOnly<T> {
    fn default() -> Self {
        Self {
            sealed: Vec::new(),
            tail: Vec::new(),
        }
    }
}

impl<T: Clone> AppendOnly<T> {
    /// A list holding `items`, in order.
    pub fn from_vec(items: Vec<T>) -> Self {
        let mut list = Self::default();
        list.extend(items);
        list
    }

    /// Appends `item`.
    pub fn push(&mut self, item: T) {
        self.tail.push(item);
        if self.tail.len() == CHUNK {
            let full = std::mem::replace(&mut self.tail, Vec::with_capacity(CHUNK));
            self.sealed.push(full.into());
        }
    }

    /// Appends every item of `items`, in order.
    pub fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.push(item);
        }
    }
}

impl<T> AppendOnly<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.sealed.len() * CHUNK + self.tail.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.sealed.is_empty() && self.tail.is_empty()
    }

    /// The elements, oldest first.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            sealed: self.sealed.iter(),
            current: [].iter(),
            tail: Some(self.tail.iter()),
            left: self.len(),
        }
    }

    /// The element at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&T> {
        match self.sealed.get(index / CHUNK) {
            Some(chunk) => chunk.get(index % CHUNK),
            None => self.tail.get(index - self.sealed.len() * CHUNK),
        }
    }

    /// The first element.
    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    /// The last element.
    pub fn last(&self) -> Option<&T> {
        match self.tail.last() {
            Some(last) => Some(last),
            None => self.sealed.last().and_then(|c| c.last()),
        }
    }
}

impl<T> Index<usize> for AppendOnly<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        match self.get(index) {
            Some(item) => item,
            None => panic!("index {index} out of range for a list of {}", self.len()),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for AppendOnly<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a, T> IntoIterator for &'a AppendOnly<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// The elements of an [`AppendOnly`], oldest first.
#[derive(Debug, Clone)]
pub struct Iter<'a, T> {
    sealed: std::slice::Iter<'a, Arc<[T]>>,
    current: std::slice::Iter<'a, T>,
    tail: Option<std::slice::Iter<'a, T>>,
    left: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        loop {
            if let Some(item) = self.current.next() {
                self.left -= 1;
                return Some(item);
            }
            self.current = match self.sealed.next() {
                Some(chunk) => chunk.iter(),
                None => self.tail.take()?,
            };
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

impl<T: Serialize> Serialize for AppendOnly<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de, T: Deserialize<'de> + Clone> Deserialize<'de> for AppendOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(d).map(Self::from_vec)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn behaves_like_a_vec_and_clones_stay_apart(
            items in proptest::collection::vec(any::<u16>(), 0..200),
            split in 0usize..200,
        ) {
            let split = split.min(items.len());
            let mut list = AppendOnly::from_vec(items[..split].to_vec());
            let frozen = list.clone();
            list.extend(items[split..].iter().copied());
            prop_assert_eq!(list.len(), items.len());
            prop_assert_eq!(list.iter().copied().collect::<Vec<_>>(), items.clone());
            prop_assert_eq!(list.iter().len(), items.len());
            for (i, item) in items.iter().enumerate() {
                prop_assert_eq!(list.get(i), Some(item));
                prop_assert_eq!(&list[i], item);
            }
            prop_assert_eq!(list.get(items.len()), None);
            prop_assert_eq!(list.last(), items.last());
            prop_assert_eq!(list.first(), items.first());
            // The clone taken before the appends still holds the prefix.
            prop_assert_eq!(frozen.iter().copied().collect::<Vec<_>>(), items[..split].to_vec());
            let json = serde_json::to_string(&list).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(&items).unwrap());
            let back: AppendOnly<u16> = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back, list);
        }
    }
}
