//! The AWS shared config files: the selected profile (`AWS_PROFILE`, else
//! `default`) read from `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`),
//! sections `[name]`, and `~/.aws/config` (`AWS_CONFIG_FILE`), sections
//! `[profile name]` or `[default]`; the credentials file wins where both
//! set a key. Each file is read up to [`MAX_FILE`] bytes.

use std::collections::HashMap;
use std::path::PathBuf;

use weft_core::model::ModelError;

/// The largest shared file read.
const MAX_FILE: u64 = 1 << 20;

/// One profile's settings (keys in lower case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Profile {
    /// The profile's name.
    pub name: String,
    values: HashMap<String, String>,
}

impl Profile {
    /// A setting's value, when set and not empty.
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.values.get(key).filter(|v| !v.is_empty()).cloned()
    }
}

/// The selected profile, `None` when no file has it; an error when
/// `AWS_PROFILE` names a profile no file has, or a file cannot be read.
pub(crate) fn load(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<Profile>, ModelError> {
    let named = var("AWS_PROFILE");
    let name = named.clone().unwrap_or_else(|| "default".to_owned());
    let home = var("HOME").map(PathBuf::from);
    let path = |var_name: &str, file: &str| {
        var(var_name)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(file)))
    };
    let mut found = false;
    let mut values = HashMap::new();
    if let Some(config) = path("AWS_CONFIG_FILE", "config") {
        let sections = [format!("profile {name}"), name.clone()];
        let wanted = if name == "default" {
            &sections[..]
        } else {
            &sections[..1]
        };
        found |= read_into(&config, wanted, &mut values)?;
    }
    if let Some(credentials) = path("AWS_SHARED_CREDENTIALS_FILE", "credentials") {
        found |= read_into(&credentials, std::slice::from_ref(&name), &mut values)?;
    }
    match (found, named) {
        (true, _) => Ok(Some(Profile { name, values })),
        (false, Some(_)) => Err(ModelError::Config {
            message: format!(
                "AWS_PROFILE names the profile `{name}`, which neither the AWS config file \
                 nor the credentials file defines"
            ),
        }),
        (false, None) => Ok(None),
    }
}

/// Adds the settings of the sections named `wanted` in the file at `path`
/// to `values`; whether the file has one of them. A missing file has none.
fn read_into(
    path: &std::path::Path,
    wanted: &[String],
    values: &mut HashMap<String, String>,
) -> Result<bool, ModelError> {
    let unreadable = |e: &dyn std::fmt::Display| ModelError::Config {
        message: format!("cannot read the AWS file {}: {e}", path.display()),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(unreadable(&e)),
    };
    if meta.len() > MAX_FILE {
        return Err(unreadable(&format!("larger than {MAX_FILE} bytes")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(&e))?;
    Ok(parse_into(&text, wanted, values))
}

/// The INI parsing of [`read_into`].
pub(crate) fn parse_into(
    text: &str,
    wanted: &[String],
    values: &mut HashMap<String, String>,
) -> bool {
    let mut found = false;
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
            inside = wanted.contains(&section);
            found |= inside;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            values.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    found
}
