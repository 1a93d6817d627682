//! [`SchemaCatalog`]: the run machine's [`ToolCatalog`], with every tool's
//! input schema compiled once up front.

use std::collections::HashMap;

use serde_json::Value;
use weft_core::run::ToolCatalog;
use weft_core::tool::{FieldIssue, FieldIssueKind, RetryHint, ToolIdent, ToolSpec};

use crate::schema::ArgsValidator;

/// Why a catalog could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// A tool's input schema does not compile.
    #[error("the input schema of `{tool}` is invalid: {message}")]
    InvalidSchema {
        /// The tool.
        tool: ToolIdent,
        /// The compiler's message.
        message: String,
    },
    /// Two specs share a name.
    #[error("tool `{tool}` is listed twice")]
    DuplicateTool {
        /// The tool.
        tool: ToolIdent,
    },
}

/// Tool specs with compiled argument validators, looked up by full name.
#[derive(Debug)]
pub struct SchemaCatalog {
    entries: HashMap<ToolIdent, Entry>,
}

#[derive(Debug)]
struct Entry {
    spec: ToolSpec,
    validator: ArgsValidator,
}

impl SchemaCatalog {
    /// Compiles every spec's input schema.
    pub fn new(specs: Vec<ToolSpec>) -> Result<Self, CatalogError> {
        let mut entries = HashMap::with_capacity(specs.len());
        for spec in specs {
            let validator = ArgsValidator::compile(&spec.input_schema).map_err(|e| {
                CatalogError::InvalidSchema {
                    tool: spec.name.clone(),
                    message: e.message,
                }
            })?;
            let name = spec.name.clone();
            if entries
                .insert(name.clone(), Entry { spec, validator })
                .is_some()
            {
                return Err(CatalogError::DuplicateTool { tool: name });
            }
        }
        Ok(Self { entries })
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the catalog has no tools.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The compiled validator of the tool called `name`.
    pub fn validator(&self, name: &str) -> Option<&ArgsValidator> {
        self.entries.get(name).map(|e| &e.validator)
    }
}

impl ToolCatalog for SchemaCatalog {
    fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.entries.get(name).map(|e| &e.spec)
    }

    fn names(&self) -> Vec<ToolIdent> {
        let mut names: Vec<ToolIdent> = self.entries.keys().cloned().collect();
        names.sort();
        names
    }

    /// Checks `arguments` with the compiled validator of the catalog's tool
    /// of the same name. A spec the catalog does not hold (or holds with a
    /// different schema) is compiled on the spot: correct, but slow.
    fn validate(&self, spec: &ToolSpec, arguments: &Value) -> Result<(), Vec<FieldIssue>> {
        if let Some(entry) = self.entries.get(spec.name.as_str())
            && (std::ptr::eq(&entry.spec, spec) || entry.spec.input_schema == spec.input_schema)
        {
            return entry.validator.validate(arguments);
        }
        match ArgsValidator::compile(&spec.input_schema) {
            Ok(validator) => validator.validate(arguments),
            Err(e) => Err(vec![FieldIssue {
                field: String::new(),
                kind: FieldIssueKind::Invalid,
                message: format!("the tool's input schema is invalid: {}", e.message),
            }]),
        }
    }

    /// The default hint, with an example input made from the tool's schema
    /// when fields are missing.
    fn retry_hint(&self, spec: &ToolSpec, arguments: &Value, issues: &[FieldIssue]) -> RetryHint {
        let example = self
            .validator(spec.name.as_str())
            .map(ArgsValidator::example_input);
        RetryHint::for_issues(&spec.name, arguments, issues, example)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use weft_core::tool::{RetryReason, ToolAnnotations};

    use super::*;

    fn spec(name: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: ToolIdent::new(name),
            description: String::new(),
            input_schema: schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            tags: Vec::new(),
        }
    }

    fn catalog() -> SchemaCatalog {
        SchemaCatalog::new(vec![
            spec("calc.add", json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})),
            spec("web.get", json!({"type": "object", "properties": {"url": {"type": "string"}}})),
        ])
        .unwrap()
    }

    #[test]
    fn lookup_and_names() {
        let c = catalog();
        assert_eq!(
            c.names(),
            vec![ToolIdent::new("calc.add"), ToolIdent::new("web.get")]
        );
        assert!(c.spec("calc.add").is_some());
        assert!(c.spec("calc.sub").is_none());
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn validates_with_the_shared_mapping() {
        let c = catalog();
        let add = c.spec("calc.add").unwrap();
        assert_eq!(c.validate(add, &json!({"a": 1})), Ok(()));
        let issues = c.validate(add, &json!({})).unwrap_err();
        assert_eq!(issues[0].field, "/a");
        assert_eq!(issues[0].kind, FieldIssueKind::Missing);
        let hint = c.retry_hint(add, &json!({}), &issues);
        assert_eq!(hint.reason, RetryReason::MissingFields);
        assert_eq!(hint.example_input, Some(json!({"a": 0})));
    }

    #[test]
    fn foreign_specs_are_compiled_on_the_spot() {
        let c = catalog();
        let other = spec("calc.add", json!({"type": "object", "required": ["b"]}));
        assert!(c.validate(&other, &json!({"a": 1})).is_err());
        let broken = spec("x.y", json!({"type": 5}));
        assert_eq!(c.validate(&broken, &json!({})).unwrap_err().len(), 1);
    }

    #[test]
    fn errors_name_the_tool() {
        let bad = SchemaCatalog::new(vec![spec("x.y", json!({"type": 5}))]).unwrap_err();
        assert!(
            matches!(bad, CatalogError::InvalidSchema { ref tool, .. } if tool.as_str() == "x.y")
        );
        let dup =
            SchemaCatalog::new(vec![spec("x.y", json!({})), spec("x.y", json!({}))]).unwrap_err();
        assert_eq!(
            dup,
            CatalogError::DuplicateTool {
                tool: ToolIdent::new("x.y")
            }
        );
    }
}
