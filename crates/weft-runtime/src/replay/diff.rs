//! Readable differences between two JSON values: one line per changed,
//! added or removed leaf, with its path (`arguments.a: 2 → 3`).

use serde_json::Value;

/// How many lines a diff shows at most.
pub const MAX_DIFF_LINES: usize = 40;

/// The differences from `expected` to `got`, one line each, at most
/// [`MAX_DIFF_LINES`] (a last line says how many more there were).
pub fn json_diff(expected: &Value, got: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    walk("", expected, got, &mut lines);
    if lines.len() > MAX_DIFF_LINES {
        let more = lines.len() - MAX_DIFF_LINES;
        lines.truncate(MAX_DIFF_LINES);
        lines.push(format!("… and {more} more"));
    }
    lines
}

fn walk(path: &str, expected: &Value, got: &Value, out: &mut Vec<String>) {
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let p = join(path, k);
                match b.get(k) {
                    Some(vb) => walk(&p, va, vb, out),
                    None => out.push(format!("- {p}: {va}")),
                }
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    out.push(format!("+ {}: {vb}", join(path, k)));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let p = format!("{path}[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(va), Some(vb)) => walk(&p, va, vb, out),
                    (Some(va), None) => out.push(format!("- {p}: {va}")),
                    (None, Some(vb)) => out.push(format!("+ {p}: {vb}")),
                    (None, None) => {}
                }
            }
        }
        (a, b) if a != b => {
            let p = if path.is_empty() { "(value)" } else { path };
            out.push(format!("~ {p}: {a} → {b}"));
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_changed_added_and_removed_leaves_by_path() {
        let a = json!({"tool": "calc.add", "arguments": {"a": 2, "b": 3, "list": [1, 2]}});
        let b = json!({"tool": "calc.add", "arguments": {"a": 4, "c": true, "list": [1]}});
        assert_eq!(
            json_diff(&a, &b),
            vec![
                "~ arguments.a: 2 → 4",
                "- arguments.b: 3",
                "- arguments.list[1]: 2",
                "+ arguments.c: true",
            ]
        );
        assert!(json_diff(&a, &a).is_empty());
        assert_eq!(
            json_diff(&json!(1), &json!("1")),
            vec!["~ (value): 1 → \"1\""]
        );
    }

    #[test]
    fn long_diffs_are_cut_with_a_count() {
        let a = json!((0..100).collect::<Vec<_>>());
        let b = json!((1..101).collect::<Vec<_>>());
        let lines = json_diff(&a, &b);
        assert_eq!(lines.len(), MAX_DIFF_LINES + 1);
        assert_eq!(lines[MAX_DIFF_LINES], "… and 60 more");
    }
}
