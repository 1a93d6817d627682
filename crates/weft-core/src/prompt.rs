//! The prompt registry: named prompt templates, their versions, the
//! overrides that replace them within a scope, and rendering.
//!
//! A template is MiniJinja text. Rendering is strict: a variable the
//! template names but the caller did not give is a [`PromptError::Render`],
//! never an empty string, and every render runs on a bounded amount of fuel
//! so a template cannot loop. A template's version is a hash of its text,
//! so a log names exactly the text a run was given.
//!
//! Overrides ([`PromptOverride`]) replace a template within a
//! [`PromptScope`]; [`select_override`] picks the one that applies to a run.
//! [`PromptRegistry`] holds an agent's templates and the overrides in scope
//! for one run (already chosen by [`select_override`]): an
//! override of a name wins over the agent's template of that name, and
//! [`PromptRegistry::render`] says which one it used ([`PromptRendered`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::SessionId;
use crate::time::Timestamp;
use crate::tool::Labels;

/// The label that records which tenant owns a session or a run; a prompt
/// override scoped to a tenant applies to the runs carrying it.
pub const TENANT_LABEL: &str = "weft.tenant";

/// Where a prompt override applies.
///
/// Every part that is set must match the run: its session, its tenant (the
/// run's [`TENANT_LABEL`]) and each of its labels. When several overrides
/// of a name match, the most specific wins ([`PromptScope::specificity`]):
/// one naming the session beats any without it; among those, one naming a
/// tenant beats any without it; then the one with more labels; then the one
/// set last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptScope {
    /// Only runs of this tenant (every tenant when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Only runs of this session (every session when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Only runs carrying every one of these labels (all runs when empty).
    #[serde(default)]
    pub labels: Labels,
}

impl PromptScope {
    /// Whether a run of `session_id` with `labels` is in this scope; the
    /// run's tenant is its [`TENANT_LABEL`].
    pub fn matches(&self, session_id: &SessionId, labels: &Labels) -> bool {
        self.session_id.as_ref().is_none_or(|s| s == session_id)
            && self
                .tenant
                .as_ref()
                .is_none_or(|t| labels.get(TENANT_LABEL) == Some(t))
            && self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
    }

    /// How specific the scope is: a session beats everything else, then a
    /// tenant, then more labels win.
    pub fn specificity(&self) -> (bool, bool, usize) {
        (
            self.session_id.is_some(),
            self.tenant.is_some(),
            self.labels.len(),
        )
    }
}

/// A prompt template that replaces the agent's named prompt within a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptOverride {
    /// The prompt's name, as passed to `PlannerContext::render_prompt`.
    pub name: String,
    /// Where it applies.
    pub scope: PromptScope,
    /// The template.
    pub template: String,
    /// When it was last set.
    pub updated_at: Timestamp,
}

/// Picks the override that applies to a run: the most specific matching
/// scope, the most recently set among equals.
pub fn select_override<'a>(
    candidates: impl IntoIterator<Item = &'a PromptOverride>,
    session_id: &SessionId,
    labels: &Labels,
) -> Option<&'a PromptOverride> {
    candidates
        .into_iter()
        .filter(|o| o.scope.matches(session_id, labels))
        .max_by_key(|o| (o.scope.specificity(), o.updated_at))
}

/// Picks, for every name among `candidates`, the override that applies to
/// a run (see [`select_override`]).
pub fn select_overrides(
    candidates: &[PromptOverride],
    session_id: &SessionId,
    labels: &Labels,
) -> Vec<PromptOverride> {
    let mut names: Vec<&str> = candidates.iter().map(|o| o.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            select_override(
                candidates.iter().filter(|o| o.name == name),
                session_id,
                labels,
            )
            .cloned()
        })
        .collect()
}

/// The fuel one render may burn (MiniJinja instructions).
pub const RENDER_FUEL: u64 = 100_000;

/// The longest template text accepted, in bytes.
pub const MAX_TEMPLATE_BYTES: usize = 64 * 1024;

/// A named template and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTemplate {
    /// The template's id (the prompt's name).
    pub id: String,
    /// The version of its text (see [`template_version`]).
    pub version: String,
    /// The MiniJinja text.
    pub text: String,
}

impl PromptTemplate {
    /// A template named `id`, versioned by its text.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            id: id.into(),
            version: template_version(&text),
            text,
        }
    }
}

/// What one render used: which template, which version, and the scope of
/// the override it came from (none for the agent's own template).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptRendered {
    /// The template's id.
    pub template_id: String,
    /// Its version.
    pub version: String,
    /// The scope of the override used, when one replaced the agent's template.
    #[serde(default, rename = "override", skip_serializing_if = "Option::is_none")]
    pub override_scope: Option<PromptScope>,
}

/// Why a prompt could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// Neither the agent nor an override defines the prompt.
    #[error("no prompt named `{id}`")]
    Unknown {
        /// The prompt's id.
        id: String,
    },
    /// The template is longer than [`MAX_TEMPLATE_BYTES`].
    #[error("prompt `{id}` is {len} bytes long; at most {MAX_TEMPLATE_BYTES} are allowed")]
    TooLong {
        /// The prompt's id.
        id: String,
        /// Its length.
        len: usize,
    },
    /// The template does not parse, names a variable it was not given, or
    /// ran out of fuel.
    #[error("prompt `{id}` (version {version}) failed to render: {message}")]
    Render {
        /// The prompt's id.
        id: String,
        /// The template's version.
        version: String,
        /// What MiniJinja said.
        message: String,
    },
}

/// The version of a template text: the 64-bit FNV-1a hash of its bytes, in hex.
/// Stable across processes and builds.
pub fn template_version(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Checks that `template` parses and is not too long, without rendering it.
pub fn check_template(id: &str, template: &str) -> Result<(), PromptError> {
    let t = PromptTemplate::new(id, template);
    if t.text.len() > MAX_TEMPLATE_BYTES {
        return Err(PromptError::TooLong {
            id: t.id,
            len: t.text.len(),
        });
    }
    environment()
        .template_from_str(&t.text)
        .map(|_| ())
        .map_err(|e| render_error(&t, &e))
}

/// Renders `template` with `vars` (strict: a missing variable is an error).
pub fn render_template(template: &PromptTemplate, vars: &Value) -> Result<String, PromptError> {
    if template.text.len() > MAX_TEMPLATE_BYTES {
        return Err(PromptError::TooLong {
            id: template.id.clone(),
            len: template.text.len(),
        });
    }
    environment()
        .render_str(&template.text, minijinja::value::Serde(vars))
        .map_err(|e| render_error(template, &e))
}

fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_fuel(Some(RENDER_FUEL));
    env
}

fn render_error(template: &PromptTemplate, e: &minijinja::Error) -> PromptError {
    PromptError::Render {
        id: template.id.clone(),
        version: template.version.clone(),
        message: e.to_string(),
    }
}

/// An agent's templates and the overrides in scope for one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptRegistry {
    templates: BTreeMap<String, PromptTemplate>,
    overrides: BTreeMap<String, (PromptTemplate, PromptScope)>,
}

impl PromptRegistry {
    /// A registry of the agent's templates, by id.
    pub fn new<'a>(templates: impl IntoIterator<Item = (&'a String, &'a String)>) -> Self {
        Self {
            templates: templates
                .into_iter()
                .map(|(id, text)| (id.clone(), PromptTemplate::new(id.as_str(), text.as_str())))
                .collect(),
            overrides: BTreeMap::new(),
        }
    }

    /// The same registry with `overrides` in force: each one replaces the
    /// template of its name (give at most one per name: the selected one).
    pub fn with_overrides(mut self, overrides: impl IntoIterator<Item = PromptOverride>) -> Self {
        for o in overrides {
            let template = PromptTemplate::new(o.name.as_str(), o.template);
            self.overrides.insert(o.name, (template, o.scope));
        }
        self
    }

    /// The template `id` resolves to (an override first, then the agent's),
    /// and the scope of the override used.
    pub fn resolve(&self, id: &str) -> Option<(&PromptTemplate, Option<&PromptScope>)> {
        match self.overrides.get(id) {
            Some((t, scope)) => Some((t, Some(scope))),
            None => self.templates.get(id).map(|t| (t, None)),
        }
    }

    /// Renders `id` with `vars`; `fallback` is the template used when
    /// neither an override nor the agent defines `id`.
    pub fn render(
        &self,
        id: &str,
        fallback: Option<&str>,
        vars: &Value,
    ) -> Result<(String, PromptRendered), PromptError> {
        let default;
        let (template, scope) = match (self.resolve(id), fallback) {
            (Some(found), _) => found,
            (None, Some(text)) => {
                default = PromptTemplate::new(id, text);
                (&default, None)
            }
            (None, None) => return Err(PromptError::Unknown { id: id.to_owned() }),
        };
        let text = render_template(template, vars)?;
        Ok((
            text,
            PromptRendered {
                template_id: template.id.clone(),
                version: template.version.clone(),
                override_scope: scope.cloned(),
            },
        ))
    }
}

#[cfg(test)]
mod tests;
