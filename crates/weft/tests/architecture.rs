//! The map in `docs/architecture.md` matches the workspace: its crate map
//! names every crate under `crates/` and no other.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/weft sits two levels below the workspace root")
}

/// The crate names in the first fenced block after `## Crates`.
fn mapped_crates(doc: &str) -> BTreeSet<String> {
    let section = doc
        .split("\n## Crates")
        .nth(1)
        .expect("docs/architecture.md has a `## Crates` section");
    let block = section
        .split("```")
        .nth(1)
        .expect("the Crates section has a fenced crate map");
    block
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w == "weft" || w.starts_with("weft-"))
        .map(str::to_owned)
        .collect()
}

fn workspace_crates() -> BTreeSet<String> {
    std::fs::read_dir(root().join("crates"))
        .expect("crates/ is readable")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_crate_map_names_exactly_the_workspace_crates() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md"))
        .expect("docs/architecture.md is readable");
    let mapped = mapped_crates(&doc);
    let present = workspace_crates();
    let missing: Vec<_> = mapped.difference(&present).collect();
    let unmapped: Vec<_> = present.difference(&mapped).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names crates that do not exist: {missing:?}"
    );
    assert!(
        unmapped.is_empty(),
        "crates missing from the map in docs/architecture.md: {unmapped:?}"
    );
}

#[test]
fn the_map_reader_sees_a_crate_that_is_not_there() {
    let doc = "intro\n## Crates\n\n```\nweft    x\nweft-nowhere  y\n```\n";
    let mapped = mapped_crates(doc);
    assert!(mapped.contains("weft-nowhere"));
    assert!(!workspace_crates().contains("weft-nowhere"));
}
