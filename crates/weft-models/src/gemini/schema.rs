//! Tool input schemas translated to the subset of OpenAPI 3.0 that
//! Gemini's `Schema` object accepts (`type`, `format`, `title`,
//! `description`, `nullable`, `enum`, `maxItems`, `minItems`, `properties`,
//! `required`, `minProperties`, `maxProperties`, `minLength`, `maxLength`,
//! `pattern`, `example`, `anyOf`, `propertyOrdering`, `default`, `items`,
//! `minimum`, `maximum`).
//!
//! What can be said in that subset is translated: types are upper-cased,
//! `type: [T, "null"]` becomes `nullable`, `const` an `enum` of one,
//! `oneOf` an `anyOf`, an `allOf` of one schema that schema, local `$ref`s
//! (`#/$defs/...`, `#/definitions/...`) are inlined, `examples` gives its
//! first as `example`, and formats Gemini does not know are left out.
//! Annotations and validation-only keywords it has no field for (`$schema`,
//! `additionalProperties`, `exclusiveMinimum`, `uniqueItems`, ...) are
//! dropped: the tool checks its arguments itself. Anything else (a
//! recursive `$ref`, `not`, `if`, `patternProperties`, a non-string enum,
//! ...) is a [`SchemaError`] naming the tool and the keyword.

use serde_json::{Map, Value, json};

/// A tool schema Gemini cannot be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tool `{tool}`: its input schema uses `{keyword}` at `{path}`, which Gemini's function declarations do not accept"
)]
pub struct SchemaError {
    /// The tool's (provider-encoded) name.
    pub tool: String,
    /// The keyword that cannot be translated.
    pub keyword: String,
    /// Where in the schema, as a JSON pointer.
    pub path: String,
}

/// Keywords copied as they are.
const KEPT: &[&str] = &[
    "title",
    "description",
    "nullable",
    "maxItems",
    "minItems",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "propertyOrdering",
    "default",
    "minimum",
    "maximum",
];

/// Keywords dropped: annotations, and validation Gemini has no field for.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "additionalProperties",
    "unevaluatedProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentEncoding",
    "contentMediaType",
];

/// The formats Gemini knows, by type.
fn known_format(ty: Option<&str>, format: &str) -> bool {
    matches!(
        (ty, format),
        (Some("NUMBER"), "float" | "double")
            | (Some("INTEGER"), "int32" | "int64")
            | (Some("STRING"), "enum" | "date-time")
    )
}

/// How deep `$ref`s may nest before the schema counts as recursive.
const MAX_REF_DEPTH: usize = 16;

/// `schema` (the input schema of `tool`) as a Gemini `Schema`; `None` for an
/// object with no properties (a tool without arguments), which Gemini
/// refuses as `parameters` and which is better left out.
pub fn translate(tool: &str, schema: &Value) -> Result<Option<Value>, SchemaError> {
    let cx = Cx { tool, root: schema };
    let out = cx.node(schema, "", 0)?;
    let empty_object = out.get("type").and_then(Value::as_str) == Some("OBJECT")
        && out
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
    Ok((!empty_object).then_some(out))
}

struct Cx<'a> {
    tool: &'a str,
    root: &'a Value,
}

impl Cx<'_> {
    fn error(&self, keyword: &str, path: &str) -> SchemaError {
        SchemaError {
            tool: self.tool.to_owned(),
            keyword: keyword.to_owned(),
            path: if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
        }
    }

    fn node(&self, schema: &Value, path: &str, depth: usize) -> Result<Value, SchemaError> {
        let obj = match schema {
            Value::Object(o) => o,
            // `true`: anything; Gemini has no such schema, an empty one comes closest.
            Value::Bool(true) => return Ok(json!({})),
            _ => return Err(self.error("false", path)),
        };
        if let Some(r) = obj.get("$ref") {
            return self.reference(obj, r, path, depth);
        }
        let mut out = Map::new();
        for (key, value) in obj {
            let here = format!("{path}/{key}");
            match key.as_str() {
                "type" => self.types(value, &here, &mut out)?,
                "properties" => {
                    let Value::Object(props) = value else {
                        return Err(self.error(key, &here));
                    };
                    let mut translated = Map::new();
                    for (name, sub) in props {
                        let at = format!("{here}/{name}");
                        translated.insert(name.clone(), self.node(sub, &at, depth)?);
                    }
                    out.insert("properties".into(), Value::Object(translated));
                }
                "items" => {
                    out.insert("items".into(), self.node(value, &here, depth)?);
                }
                "anyOf" | "oneOf" => {
                    let Value::Array(options) = value else {
                        return Err(self.error(key, &here));
                    };
                    let options = options
                        .iter()
                        .enumerate()
                        .map(|(i, o)| self.node(o, &format!("{here}/{i}"), depth))
                        .collect::<Result<Vec<_>, _>>()?;
                    out.insert("anyOf".into(), Value::Array(options));
                }
                "allOf" => match value.as_array().map(Vec::as_slice) {
                    Some([only]) => {
                        let inner = self.node(only, &format!("{here}/0"), depth)?;
                        if let Value::Object(inner) = inner {
                            for (k, v) in inner {
                                out.entry(k).or_insert(v);
                            }
                        }
                    }
                    _ => return Err(self.error(key, &here)),
                },
                "enum" => {
                    if !value
                        .as_array()
                        .is_some_and(|v| v.iter().all(Value::is_string))
                    {
                        return Err(self.error(key, &here));
                    }
                    out.insert("enum".into(), value.clone());
                }
                "const" => {
                    if !value.is_string() {
                        return Err(self.error(key, &here));
                    }
                    out.insert("enum".into(), json!([value]));
                }
                "examples" => {
                    if let Some(first) = value.as_array().and_then(|e| e.first()) {
                        out.entry("example").or_insert_with(|| first.clone());
                    }
                }
                "format" => {
                    out.insert("format".into(), value.clone());
                }
                k if KEPT.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if DROPPED.contains(&k) => {}
                _ => return Err(self.error(key, &here)),
            }
        }
        // An enum is a string with the `enum` format to Gemini.
        if out.contains_key("enum") && !out.contains_key("type") {
            out.insert("type".into(), json!("STRING"));
        }
        let ty = out.get("type").and_then(Value::as_str).map(str::to_owned);
        let keep_format = out
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| known_format(ty.as_deref(), f));
        if !keep_format {
            out.remove("format");
        }
        Ok(Value::Object(out))
    }

    /// `type`: one type, or one type and `"null"`, or several as `anyOf`.
    fn types(
        &self,
        value: &Value,
        path: &str,
        out: &mut Map<String, Value>,
    ) -> Result<(), SchemaError> {
        let names: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => return Err(self.error("type", path)),
        };
        let nullable = names.contains(&"null");
        let mut kinds: Vec<&'static str> = Vec::new();
        for name in names.iter().filter(|n| **n != "null") {
            kinds.push(match *name {
                "string" => "STRING",
                "number" => "NUMBER",
                "integer" => "INTEGER",
                "boolean" => "BOOLEAN",
                "array" => "ARRAY",
                "object" => "OBJECT",
                _ => return Err(self.error("type", path)),
            });
        }
        if nullable {
            out.insert("nullable".into(), json!(true));
        }
        match kinds.as_slice() {
            [] if nullable => {
                out.insert("type".into(), json!("NULL"));
            }
            [] => return Err(self.error("type", path)),
            [one] => {
                out.insert("type".into(), json!(one));
            }
            many => {
                let options: Vec<Value> = many.iter().map(|k| json!({"type": k})).collect();
                out.insert("anyOf".into(), Value::Array(options));
            }
        }
        Ok(())
    }

    /// A local `$ref`, inlined (its siblings, such as `description`, win).
    fn reference(
        &self,
        obj: &Map<String, Value>,
        r: &Value,
        path: &str,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        let here = format!("{path}/$ref");
        let target = r
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| self.root.pointer(pointer))
            .filter(|_| depth < MAX_REF_DEPTH)
            .ok_or_else(|| self.error("$ref", &here))?;
        let mut inlined = self.node(target, &here, depth + 1)?;
        let mut siblings = obj.clone();
        siblings.remove("$ref");
        if let (Value::Object(into), Value::Object(extra)) = (
            &mut inlined,
            self.node(&Value::Object(siblings), path, depth)?,
        ) {
            for (k, v) in extra {
                into.insert(k, v);
            }
        }
        Ok(inlined)
    }
}

#[cfg(test)]
mod tests;
