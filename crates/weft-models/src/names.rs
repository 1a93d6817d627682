//! Reversible tool-name mapping between weft (`toolset.tool`) and providers,
//! which restrict function names to `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! A name is encoded by writing `.` as `__` and any other forbidden character
//! as `_`. When that cannot be decoded back unambiguously (the name already
//! holds `__`, a `_` next to a `.`, another forbidden character) or is longer
//! than 64 characters, the encoding is shortened and suffixed with a hash of
//! the full name. Decoding looks names up in a [`ToolNames`] table built from
//! the tools in play; a name the model invented and no table knows is
//! decoded by reversing the `__` rule, so the run machine reports it as an
//! unknown tool under a readable name.

use std::collections::HashMap;

/// Longest function name providers accept.
const MAX_LEN: usize = 64;

/// Encodes a weft tool name for a provider; deterministic and stateless.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        match c {
            '.' => out.push_str("__"),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => out.push(c),
            _ => out.push('_'),
        }
    }
    if !out.is_empty() && out.len() <= MAX_LEN && decode_plain(&out) == name {
        return out;
    }
    let hash = format!("{:08x}", fnv1a(name));
    let keep = MAX_LEN - hash.len() - 1;
    let mut cut = out.len().min(keep);
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out.push('-');
    out.push_str(&hash);
    out
}

/// Reverses the `__` rule only; see the module docs.
pub fn decode_plain(encoded: &str) -> String {
    encoded.replace("__", ".")
}

/// 32-bit FNV-1a: a stable hash, identical across processes and versions.
fn fnv1a(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The names in play for one request, for decoding what the model answers.
#[derive(Debug, Clone, Default)]
pub struct ToolNames {
    by_encoded: HashMap<String, String>,
}

impl ToolNames {
    /// A table over `names` (weft names).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let by_encoded = names
            .into_iter()
            .map(|n| (encode(n), n.to_owned()))
            .collect();
        Self { by_encoded }
    }

    /// Adds a weft name.
    pub fn add(&mut self, name: &str) {
        self.by_encoded.insert(encode(name), name.to_owned());
    }

    /// The weft name for a provider name.
    pub fn decode(&self, encoded: &str) -> String {
        self.by_encoded
            .get(encoded)
            .cloned()
            .unwrap_or_else(|| decode_plain(encoded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= MAX_LEN
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }

    #[test]
    fn plain_names_encode_readably_and_round_trip() {
        assert_eq!(encode("calc.add"), "calc__add");
        assert_eq!(encode("weather"), "weather");
        assert_eq!(encode("fs.read-file"), "fs__read-file");
        let t = ToolNames::new(["calc.add", "weather"]);
        assert_eq!(t.decode("calc__add"), "calc.add");
        assert_eq!(t.decode("invented__tool"), "invented.tool");
    }

    #[test]
    fn ambiguous_long_or_odd_names_get_a_hash_and_still_round_trip() {
        let names = [
            "a_.b",
            "a.__b",
            "my__set.tool",
            "set.tool with space",
            "ünï.cödé",
            &"x".repeat(100),
            &format!("{}.y", "s".repeat(70)),
        ];
        let table = ToolNames::new(names.iter().copied());
        for n in names {
            let e = encode(n);
            assert!(valid(&e), "{n} -> {e}");
            assert_eq!(table.decode(&e), n);
        }
        assert_ne!(encode("a_.b"), encode("a._b"));
    }
}
