//! Helpers shared by the `weft` binary's end-to-end tests.

use std::path::PathBuf;

/// The path of a file in the repository's `examples/` directory.
pub fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}
