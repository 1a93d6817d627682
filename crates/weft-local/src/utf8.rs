//! Token bytes to text across token boundaries.

/// Token bytes to text: a token may end inside a UTF-8 sequence, which the
/// next token completes; bytes that can never be UTF-8 become U+FFFD.
#[derive(Debug, Default)]
pub(super) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub(super) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // Safe split: `valid` bytes are UTF-8 by the error's word.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }

    pub(super) fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any byte string cut anywhere decodes as it does whole.
        #[test]
        fn utf8_stream_is_independent_of_cuts(s in "\\PC{0,40}", cut in 0usize..200) {
            let bytes = s.as_bytes();
            let cut = cut.min(bytes.len());
            let mut u = Utf8Stream::default();
            let mut out = u.push(&bytes[..cut]);
            out.push_str(&u.push(&bytes[cut..]));
            out.push_str(&u.finish());
            prop_assert_eq!(out, s);
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut u = Utf8Stream::default();
        let mut out = u.push(b"a\xffb\xe2\x82");
        out.push_str(&u.finish());
        assert_eq!(out, "a\u{fffd}b\u{fffd}");
    }
}
