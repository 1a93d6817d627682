//! Argument validation throughput: `cargo bench -p weft-tools --bench validate`.
//! Prints nanoseconds per `ToolCatalog::validate` call for a valid and an
//! invalid payload against a catalog of 50 tools. No assertions on timing.

use std::hint::black_box;
use std::time::Instant;

use serde_json::json;
use weft_core::run::ToolCatalog;
use weft_core::tool::{ToolAnnotations, ToolIdent, ToolSpec};
use weft_tools::SchemaCatalog;

const ITERATIONS: u32 = 200_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let specs = (0..50)
        .map(|i| ToolSpec {
            name: ToolIdent::new(format!("set.tool{i}")),
            description: String::new(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": 200},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "filters": {"type": "array", "items": {"type": "object",
                        "properties": {"field": {"type": "string"}, "value": {}}, "required": ["field"]}}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            tags: Vec::new(),
        })
        .collect();
    let catalog = SchemaCatalog::new(specs)?;
    let spec = catalog.spec("set.tool25").ok_or("missing tool")?;
    let valid =
        json!({"query": "rust", "limit": 10, "filters": [{"field": "lang", "value": "en"}]});
    let invalid = json!({"limit": 0, "filters": [{}], "extra": true});
    for (label, payload) in [("valid", &valid), ("invalid", &invalid)] {
        let start = Instant::now();
        for _ in 0..ITERATIONS {
            let _ = black_box(catalog.validate(black_box(spec), black_box(payload)));
        }
        let ns = start.elapsed().as_nanos() / u128::from(ITERATIONS);
        println!("validate {label:>7}: {ns} ns/call");
    }
    Ok(())
}
