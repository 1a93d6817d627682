//! weft-fuzz: the settings and input generators shared by weft's fuzz
//! targets, which are property tests over arbitrary and structured bytes.
//! It is a dev-dependency only: no weft crate links it into a build.
//!
//! The targets run on stable Rust inside the normal test suite, at
//! [`DEFAULT_CASES`] inputs each unless a target asks for fewer; set
//! [`CASES_VAR`] (`WEFT_FUZZ_CASES=10000000`) to run each target that many
//! times, best in release mode.
//!
//! Organization:
//! - [`bytes`]: arbitrary bytes drawn from an alphabet that favours the
//!   delimiters decoders look for, and byte-level mutations of seed inputs.
//! - [`text`]: strings with multi-byte characters, controls and delimiters.
//! - [`json`]: JSON values over a vocabulary of keys and strings, and
//!   structural edits of a JSON tree.
//! - [`sse`]: Server-Sent Events framing with random line endings, comments,
//!   spacing and multi-line data.
//! - [`split`]: ways to cut an input into chunks (random points, every byte,
//!   inside every UTF-8 sequence).

pub mod bytes;
pub mod json;
pub mod split;
pub mod sse;
pub mod text;

use proptest::test_runner::Config;

/// The environment variable that sets how many inputs each target runs.
pub const CASES_VAR: &str = "WEFT_FUZZ_CASES";

/// Inputs per target in a normal test run: a few seconds in a debug build.
pub const DEFAULT_CASES: u32 = 2_000;

/// The runner settings of a target: `default_cases` inputs, or as many as
/// [`CASES_VAR`] says. Failures are not persisted to files: each crash found
/// becomes a named regression test next to its target instead.
pub fn config(default_cases: u32) -> Config {
    let cases = std::env::var(CASES_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default_cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}
