//! Model configuration: parsing model ids (`anthropic/<m>`, `openai/<m>`,
//! `openai-responses/<m>`, `gemini/<m>`, `vertex/<m>`, `bedrock/<m>`, `compat/<m>`, `scripted/<script file>`,
//! `local/<name or .gguf path>`), finding API keys and base URLs
//! (explicit config first, then the variable the config names in
//! `api_key_env`, else `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` /
//! `GEMINI_API_KEY` (then `GOOGLE_API_KEY`), and `ANTHROPIC_BASE_URL` /
//! `OPENAI_BASE_URL` / `GEMINI_BASE_URL` / `BEDROCK_BASE_URL`; Bedrock signs
//! with AWS credentials instead, [`crate::bedrock::credentials`], and Vertex
//! AI sends an access token to a project's location,
//! [`crate::gemini::vertex`]), and a registry of built clients.
//!
//! Keys are held in [`ApiKey`], whose `Debug` never shows them, and are sent
//! in header values marked sensitive; no error message contains one.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use weft_core::model::{ModelClient, ModelError};

use crate::anthropic::{self, AnthropicClient};
use crate::bedrock;
use crate::gemini::{self, GeminiClient, vertex};
use crate::http::HttpConfig;
pub use crate::key::ApiKey;
use crate::openai_chat::{self, ChatClient, ChatFlavor};
use crate::openai_responses::ResponsesClient;
use crate::scripted::ScriptedModel;

/// Which API a model id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages (`anthropic/`).
    Anthropic,
    /// OpenAI Chat Completions (`openai/`).
    OpenAi,
    /// OpenAI Responses (`openai-responses/`).
    OpenAiResponses,
    /// Google Gemini, the Generative Language API (`gemini/`).
    Gemini,
    /// Google Gemini on Vertex AI (`vertex/`): a Google Cloud project's
    /// location, an access token.
    Vertex,
    /// Amazon Bedrock's Converse API (`bedrock/`), signed with AWS credentials.
    Bedrock,
    /// Any server speaking Chat Completions (`compat/`), at a given base URL.
    Compat,
    /// A [`crate::ScriptedModel`] playing a JSON or YAML script file (`scripted/<path>`).
    Scripted,
    /// A GGUF model run in-process (`local/<name>` or `local/<path>.gguf`).
    Local,
}

impl Provider {
    /// The environment variable holding this provider's key, if it has one
    /// (Vertex's access token is read by [`vertex::from_env`]).
    pub fn key_var(self) -> Option<&'static str> {
        match self {
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::OpenAi | Provider::OpenAiResponses => Some("OPENAI_API_KEY"),
            Provider::Gemini => Some("GEMINI_API_KEY"),
            Provider::Vertex
            | Provider::Bedrock
            | Provider::Compat
            | Provider::Scripted
            | Provider::Local => None,
        }
    }

    /// The environment variable overriding this provider's base URL, if any.
    pub fn base_url_var(self) -> Option<&'static str> {
        match self {
            Provider::Anthropic => Some("ANTHROPIC_BASE_URL"),
            Provider::OpenAi | Provider::OpenAiResponses => Some("OPENAI_BASE_URL"),
            Provider::Gemini => Some("GEMINI_BASE_URL"),
            Provider::Bedrock => Some("BEDROCK_BASE_URL"),
            Provider::Vertex | Provider::Compat | Provider::Scripted | Provider::Local => None,
        }
    }

    /// The variable read for the key when [`Provider::key_var`] is not set
    /// (`GOOGLE_API_KEY` for Gemini, as Google's SDKs read it).
    pub fn fallback_key_var(self) -> Option<&'static str> {
        match self {
            Provider::Gemini => Some("GOOGLE_API_KEY"),
            _ => None,
        }
    }
}

/// Splits a model id into its provider and model name.
pub fn parse_model_id(id: &str) -> Result<(Provider, &str), ModelError> {
    let (prefix, model) = id.split_once('/').ok_or_else(|| ModelError::Config {
        message: format!("model id `{id}` has no provider prefix (anthropic/, openai/, openai-responses/, gemini/, vertex/, bedrock/, compat/, scripted/, local/)"),
    })?;
    let provider = match prefix {
        "anthropic" => Provider::Anthropic,
        "openai" => Provider::OpenAi,
        "openai-responses" => Provider::OpenAiResponses,
        "gemini" => Provider::Gemini,
        "vertex" => Provider::Vertex,
        "bedrock" => Provider::Bedrock,
        "compat" => Provider::Compat,
        "scripted" => Provider::Scripted,
        "local" => Provider::Local,
        other => {
            return Err(ModelError::Config {
                message: format!(
                    "unknown model provider `{other}` in `{id}` (expected anthropic, openai, openai-responses, gemini, vertex, bedrock, compat, scripted or local)"
                ),
            });
        }
    };
    if model.is_empty() {
        return Err(ModelError::Config {
            message: format!("model id `{id}` names no model"),
        });
    }
    Ok((provider, model))
}

/// What is needed to build one model client.
#[derive(Debug, Clone, Default)]
pub struct ModelConfig {
    /// The model id, e.g. `anthropic/claude-sonnet-4-5`.
    pub id: String,
    /// The key; when absent it is read from `api_key_env`, else the
    /// provider's variable.
    pub api_key: Option<ApiKey>,
    /// The environment variable holding the key, instead of the provider's
    /// (an agent file's `api_key_env`); when named, it must be set.
    pub api_key_env: Option<String>,
    /// The base URL; when absent it is read from the provider's variable,
    /// then the provider's default. Required for `compat/`.
    pub base_url: Option<String>,
    /// Timeouts and retries.
    pub http: HttpConfig,
    /// Opens `local/<name>` models; the local engine lives in its own crate
    /// (`weft-local`) so that only those who run local models build llama.cpp.
    pub local_loader: Option<LocalLoader>,
}

/// Opens a local model by name or `.gguf` path, reading variables through `env`.
pub type LocalLoader = fn(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelClient>, ModelError>;

impl ModelConfig {
    /// A config for `id` with everything else defaulted.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }
}

/// Builds a client from `config`, reading the process environment.
pub fn build_model(config: &ModelConfig) -> Result<Arc<dyn ModelClient>, ModelError> {
    build_model_with_env(config, &|name| std::env::var(name).ok())
}

/// Builds a client from `config`, reading variables through `env`.
pub fn build_model_with_env(
    config: &ModelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    let (provider, model) = parse_model_id(&config.id)?;
    let from_env = |var: Option<&str>| var.and_then(env).filter(|v| !v.is_empty());
    let base_url = config
        .base_url
        .clone()
        .or_else(|| from_env(provider.base_url_var()));
    let key = match (&config.api_key, &config.api_key_env, provider.key_var()) {
        (Some(k), _, _) => Some(k.clone()),
        (None, Some(var), _) => Some(ApiKey::new(from_env(Some(var.as_str())).ok_or_else(
            || ModelError::Config {
                message: format!(
                    "no API key for `{}`: `api_key_env` names {var}, which is not set",
                    config.id
                ),
            },
        )?)),
        (None, None, Some(var)) => Some(ApiKey::new(
            from_env(Some(var))
                .or_else(|| from_env(provider.fallback_key_var()))
                .ok_or_else(|| {
                    let set = match provider.fallback_key_var() {
                        Some(other) => format!("{var} (or {other})"),
                        None => var.to_owned(),
                    };
                    ModelError::Config {
                        message: format!(
                            "no API key for `{}`: set {set}, or name the variable that holds the key \
                             with `api_key_env` in the agent file's [planner] (or [advisor])",
                            config.id
                        ),
                    }
                })?,
        )),
        (None, None, None) => None,
    };
    let http = config.http;
    Ok(match provider {
        Provider::Anthropic => {
            let key = key.unwrap_or_else(|| ApiKey::new(""));
            let url = base_url.as_deref().unwrap_or(anthropic::DEFAULT_BASE_URL);
            Arc::new(AnthropicClient::new(model, &key, url, http)?)
        }
        Provider::OpenAi => {
            let url = base_url.as_deref().unwrap_or(openai_chat::DEFAULT_BASE_URL);
            Arc::new(ChatClient::new(
                ChatFlavor::OpenAi,
                model,
                key.as_ref(),
                url,
                http,
            )?)
        }
        Provider::OpenAiResponses => {
            let url = base_url.as_deref().unwrap_or(openai_chat::DEFAULT_BASE_URL);
            Arc::new(ResponsesClient::new(model, key.as_ref(), url, http)?)
        }
        Provider::Gemini => {
            let key = key.unwrap_or_else(|| ApiKey::new(""));
            let url = base_url.as_deref().unwrap_or(gemini::DEFAULT_BASE_URL);
            Arc::new(GeminiClient::new(model, &key, url, http)?)
        }
        Provider::Vertex => Arc::new(vertex::from_env(
            model,
            key,
            base_url.as_deref(),
            env,
            http,
        )?),
        Provider::Bedrock => Arc::new(bedrock::from_env(model, base_url.as_deref(), env, http)?),
        Provider::Compat => {
            let url = base_url.ok_or_else(|| ModelError::Config {
                message: format!(
                    "`{}` needs a base URL, e.g. http://127.0.0.1:11434/v1",
                    config.id
                ),
            })?;
            Arc::new(ChatClient::new(
                ChatFlavor::Compat,
                model,
                key.as_ref(),
                &url,
                http,
            )?)
        }
        Provider::Scripted => {
            let script = ScriptedModel::from_path(std::path::Path::new(model)).map_err(|e| {
                ModelError::Config {
                    message: e.to_string(),
                }
            })?;
            Arc::new(script)
        }
        Provider::Local => local_model(config, model, env)?,
    })
}

fn local_model(
    config: &ModelConfig,
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    match config.local_loader {
        Some(load) => load(name, env),
        None => Err(ModelError::Config {
            message: format!(
                "local/{name}: this build has no local-model engine (the `weft` binary has one; \
                 a library user adds the `weft-local` crate and sets `ModelConfig::local_loader`)"
            ),
        }),
    }
}

/// Model clients by id, built on first use and shared afterwards.
#[derive(Default)]
pub struct ModelRegistry {
    configs: HashMap<String, ModelConfig>,
    clients: std::sync::Mutex<HashMap<String, Arc<dyn ModelClient>>>,
}

impl fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("configs", &self.configs)
            .finish_non_exhaustive()
    }
}

impl ModelRegistry {
    /// An empty registry; ids with no config are built from defaults and the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a config, used when its id is first asked for.
    pub fn configure(&mut self, config: ModelConfig) {
        self.configs.insert(config.id.clone(), config);
    }

    /// Adds a ready client under its id (e.g. a [`crate::ScriptedModel`]).
    pub fn insert(&self, client: Arc<dyn ModelClient>) {
        if let Ok(mut map) = self.clients.lock() {
            map.insert(client.id().to_owned(), client);
        }
    }

    /// The client for `id`, building it on first use.
    pub fn get(&self, id: &str) -> Result<Arc<dyn ModelClient>, ModelError> {
        let mut map = self.clients.lock().map_err(|_| ModelError::Other {
            message: "model registry lock poisoned".into(),
        })?;
        if let Some(c) = map.get(id) {
            return Ok(c.clone());
        }
        let config = self
            .configs
            .get(id)
            .cloned()
            .unwrap_or_else(|| ModelConfig::new(id));
        let client = build_model(&config)?;
        map.insert(id.to_owned(), client.clone());
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_keys_come_from_gemini_api_key_else_google_api_key() {
        let config = ModelConfig::new("gemini/gemini-2.5-flash");
        let model = build_model_with_env(&config, &|v| {
            (v == "GOOGLE_API_KEY").then(|| "g-key".to_owned())
        })
        .unwrap();
        assert_eq!(model.id(), "gemini/gemini-2.5-flash");
        let Err(ModelError::Config { message }) = build_model_with_env(&config, &|_| None) else {
            panic!("a missing key is a config error");
        };
        assert!(
            message.contains("set GEMINI_API_KEY (or GOOGLE_API_KEY)"),
            "{message}"
        );
    }

    #[test]
    fn scripted_ids_load_script_files() {
        let dir = std::env::temp_dir().join(format!("weft-models-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.yaml");
        std::fs::write(&path, "- text: hi\n").unwrap();
        let id = format!("scripted/{}", path.display());
        let model = build_model_with_env(&ModelConfig::new(&id), &|_| None).unwrap();
        assert_eq!(model.id(), id);
        let missing = ModelConfig::new(format!("scripted/{}", dir.join("none.json").display()));
        assert!(matches!(
            build_model_with_env(&missing, &|_| None),
            Err(ModelError::Config { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn model_ids_parse() {
        assert_eq!(
            parse_model_id("openai-responses/gpt-5").unwrap(),
            (Provider::OpenAiResponses, "gpt-5")
        );
        assert_eq!(
            parse_model_id("compat/qwen/qwen3:8b").unwrap(),
            (Provider::Compat, "qwen/qwen3:8b")
        );
        assert_eq!(
            parse_model_id("gemini/gemini-2.5-flash").unwrap(),
            (Provider::Gemini, "gemini-2.5-flash")
        );
        assert!(parse_model_id("gpt-4o").is_err());
        assert!(parse_model_id("anthropic/").is_err());
    }
}
