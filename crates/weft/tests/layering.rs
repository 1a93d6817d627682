//! The layering inside each crate: no two files import each other, directly
//! or through others, and no source file grows past [`MAX_LINES`] lines.
//!
//! A file's module path comes from where it sits under `src/`; an import is
//! any `crate::…` or `super::…` path in its code (comments are skipped). A
//! module and the modules below it may use each other (a parent re-exports
//! its children, a child uses its parent's items); between any other two
//! files, imports must form no cycle. Test files (`tests.rs`,
//! `*_tests.rs`, `proptests.rs`) are exempt from the length rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be.
const MAX_LINES: usize = 400;

type Module = Vec<String>;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/weft sits two levels below the workspace root")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source directories are readable") {
        let path = entry.expect("directory entries are readable").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are module `a::b`; `lib.rs` and
/// `main.rs` are the root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("the file is under src/");
    let mut parts: Module = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a file without `//` comments (doc links are not imports).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> Option<(&str, &str)> {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], &s[end..]))
}

/// The path segments after `crate::` or `super::`: `a::b::C` gives one
/// path; `{a::B, c}` gives one per item.
fn paths_after(rest: &str) -> Vec<Vec<String>> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0usize;
        let mut items = vec![String::new()];
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => items.push(String::new()),
                _ => {}
            }
            if depth == 0
                && c != ','
                && c != '}'
                && let Some(item) = items.last_mut()
            {
                item.push(c);
            }
        }
        return items
            .iter()
            .map(|i| segments(i.trim()))
            .filter(|s| !s.is_empty())
            .collect();
    }
    vec![segments(rest)]
}

fn segments(mut s: &str) -> Vec<String> {
    let mut out = Vec::new();
    while let Some((ident, rest)) = ident_at(s) {
        out.push(ident.to_owned());
        match rest.strip_prefix("::") {
            Some(r) => s = r,
            None => break,
        }
    }
    out
}

/// The modules one file's code names.
fn imports(code: &str, module: &Module) -> Vec<Module> {
    let mut out = Vec::new();
    for (keyword, base) in [
        ("crate::", Vec::new()),
        ("super::", module[..module.len().saturating_sub(1)].to_vec()),
    ] {
        let mut from = 0;
        while let Some(i) = code[from..].find(keyword) {
            let at = from + i;
            from = at + keyword.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for path in paths_after(&code[from..]) {
                let mut full = base.clone();
                full.extend(path);
                out.push(full);
            }
        }
    }
    out
}

/// The longest prefix of `path` that is a file's module.
fn resolve(files: &BTreeSet<Module>, path: &Module) -> Option<Module> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| files.contains(m))
}

fn nested(a: &Module, b: &Module) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// File-to-file imports of one crate, nested modules left out.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let texts: Vec<(Module, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("source files are readable");
            (module_of(src, f), text)
        })
        .collect();
    let known: BTreeSet<Module> = texts.iter().map(|(m, _)| m.clone()).collect();
    let mut edges = BTreeMap::new();
    for (module, text) in &texts {
        let targets: BTreeSet<Module> = imports(&code_of(text), module)
            .iter()
            .filter_map(|p| resolve(&known, p))
            .filter(|t| !nested(t, module))
            .collect();
        edges.insert(module.clone(), targets);
    }
    edges
}

/// One cycle, if the graph has any (depth-first search with colours).
fn find_cycle(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        edges: &BTreeMap<Module, BTreeSet<Module>>,
        done: &mut BTreeSet<Module>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(i) = stack.iter().position(|m| m == node) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut done, &mut Vec::new()))
}

fn crate_sources() -> Vec<(String, PathBuf)> {
    let mut out: Vec<_> = std::fs::read_dir(root().join("crates"))
        .expect("crates/ is readable")
        .filter_map(Result::ok)
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("src"),
            )
        })
        .filter(|(_, src)| src.is_dir())
        .collect();
    out.sort();
    out
}

fn show(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

#[test]
fn no_files_of_a_crate_import_each_other_in_a_cycle() {
    for (name, src) in crate_sources() {
        if let Some(cycle) = find_cycle(&graph(&src)) {
            let shown: Vec<String> = cycle.iter().map(show).collect();
            panic!("import cycle in {name}: {}", shown.join(" -> "));
        }
    }
}

#[test]
fn source_files_stay_short() {
    let mut long = Vec::new();
    for (_, src) in crate_sources() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| n.ends_with("tests.rs")) {
                continue;
            }
            let lines = std::fs::read_to_string(&f)
                .expect("source files are readable")
                .lines()
                .count();
            if lines > MAX_LINES {
                let rel = f.strip_prefix(root()).unwrap_or(&f).display().to_string();
                long.push(format!("{rel} ({lines} lines)"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them along their concerns): {long:?}"
    );
}

#[test]
fn the_cycle_finder_sees_a_cycle_through_a_group_import() {
    let m = |s: &str| s.split("::").map(str::to_owned).collect::<Module>();
    let a = m("a");
    let code = "use crate::{b::Thing, c};\nuse super::d; // crate::e is only a comment";
    let named = imports(&code_of(code), &a);
    assert_eq!(named, vec![m("b::Thing"), m("c"), m("d")]);
    let mut edges = BTreeMap::new();
    edges.insert(m("a"), BTreeSet::from([m("b")]));
    edges.insert(m("b"), BTreeSet::from([m("c")]));
    edges.insert(m("c"), BTreeSet::from([m("a")]));
    let cycle = find_cycle(&edges).expect("a -> b -> c -> a is a cycle");
    assert_eq!(cycle.first(), cycle.last());
    edges.insert(m("c"), BTreeSet::new());
    assert_eq!(find_cycle(&edges), None);
}
