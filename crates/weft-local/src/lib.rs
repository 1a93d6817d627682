//! weft-local: GGUF chat models run in-process on the CPU by llama.cpp
//! (`local/<name>` or `local/<path>.gguf`), so an agent runs with no key and
//! no network.
//!
//! This crate is the only one that builds llama.cpp (C++, through
//! `llama-cpp-2`); weft-models reaches it through [`loader`], which the
//! `weft` binary plugs into `weft_models::ModelConfig::local_loader`.
//!
//! - [`weights`]: known models, the models directory, the fetch command.
//! - [`engine`]: the llama.cpp engine (loading, chat template, sampling).
//! - [`grammar`]: the tool-call grammar (llama.cpp's JSON-Schema converter per
//!   tool, wrapped in the call block), so tool calls always parse and match.
//! - [`output`]: the sans-IO splitter of generated text into text and calls.
//! - [`prompt`]: requests as chat turns, tools described in the system prompt.
//!
//! When a request offers tools the model may answer in text or open a call;
//! from the opening tag on, decoding follows the grammar of the offered
//! tools' schemas (`ToolChoice::Required` or `Tool` apply it from the first
//! token). Temperature defaults to 0 (the likeliest token each step), so an
//! agent on a local model is repeatable; with a temperature, top-k 40 and
//! top-p (0.95 unless given) apply and the draw follows the request's seed
//! (a random one when none is given): the same seed gives the same output.

#![warn(missing_docs)]

mod backend;
pub mod engine;
mod feed;
pub mod generation;
pub mod grammar;
mod job;
pub mod output;
mod picker;
pub mod prompt;
mod sequence;
mod tokens;
mod utf8;
pub mod weights;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use tokio::sync::mpsc;
use weft_core::ToolCallId;
use weft_core::model::{
    ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary, StreamAssembler, StreamChunk,
    ToolChoice, Usage,
};
use weft_core::planner::NoopEvents;

use self::engine::Engine;
use self::generation::{Constraint, Generate, Generated, Replace, Sampling};
use self::grammar::{GrammarTool, tool_call_grammar};
use self::output::Piece;

pub use self::weights::{DEFAULT_LOCAL_MODEL, KNOWN, KnownModel, MODELS_DIR_VAR};

/// Opens `local/<name>` as a model client; fits `weft_models::LocalLoader`.
pub fn loader(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    Ok(Arc::new(LocalModel::open(name, env)?))
}

/// Variable setting how many generations a local model decodes at once
/// (see [`LocalModel::with_sequences`]).
pub const SEQUENCES_VAR: &str = "WEFT_LOCAL_SEQUENCES";

/// Most generations [`SEQUENCES_VAR`] may ask to decode at once.
pub const MAX_SEQUENCES: usize = 64;

/// Output limit when a request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// A GGUF model run in-process; loaded on first use and shared by clones.
#[derive(Debug, Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    id: String,
    path: PathBuf,
    threads: usize,
    sequences: usize,
    engine: OnceLock<Result<Arc<Engine>, ModelError>>,
}

impl LocalModel {
    /// The model behind `local/<name>`, reading the models directory and
    /// the number of generations decoded at once ([`SEQUENCES_VAR`]) from
    /// `env`; fails with the fetch command when the weights are missing.
    pub fn open(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let path = weights::resolve(name, env)?;
        let model = Self::from_path(format!("local/{name}"), &path, default_threads());
        match env(SEQUENCES_VAR) {
            None => Ok(model),
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n @ 1..=MAX_SEQUENCES) => Ok(model.with_sequences(n)),
                _ => Err(ModelError::Config {
                    message: format!(
                        "{SEQUENCES_VAR}={v:?}: expected a number of generations from 1 to {MAX_SEQUENCES}"
                    ),
                }),
            },
        }
    }

    /// A model over the GGUF file at `path`, generating on `threads` threads.
    pub fn from_path(id: impl Into<String>, path: &Path, threads: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                id: id.into(),
                path: path.to_owned(),
                threads: threads.max(1),
                sequences: engine::DEFAULT_SEQUENCES,
                engine: OnceLock::new(),
            }),
        }
    }

    /// The same model decoding up to `sequences` generations at once in one
    /// batch ([`engine::DEFAULT_SEQUENCES`] unless set); set before the
    /// first generation loads it.
    pub fn with_sequences(self, sequences: usize) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                id: inner.id.clone(),
                path: inner.path.clone(),
                threads: inner.threads,
                sequences: sequences.max(1),
                engine: OnceLock::new(),
            }),
        }
    }

    /// Generations decoded at once.
    pub fn sequences(&self) -> usize {
        self.inner.sequences
    }

    /// Threads a generation uses.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// The GGUF file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The loaded engine; the first caller loads it (blocking), the others wait.
    pub fn engine(&self) -> Result<Arc<Engine>, ModelError> {
        self.inner
            .engine
            .get_or_init(|| {
                let inner = &self.inner;
                Engine::load_with_sequences(&inner.path, inner.threads, inner.sequences)
                    .map(Arc::new)
            })
            .clone()
    }

    /// Renders `request` into one generation for the engine.
    pub fn plan(&self, engine: &Engine, request: &ModelRequest) -> Result<Generate, ModelError> {
        let offered = !request.tools.is_empty() && request.tool_choice != ToolChoice::None;
        let constraint = if offered {
            let tools: Vec<GrammarTool<'_>> = match &request.tool_choice {
                ToolChoice::Tool(name) => {
                    let tool = request
                        .tools
                        .iter()
                        .find(|t| t.name.as_str() == name)
                        .ok_or_else(|| ModelError::Config {
                            message: format!("tool_choice names `{name}`, which is not offered"),
                        })?;
                    vec![grammar_tool(tool)]
                }
                _ => request.tools.iter().map(grammar_tool).collect(),
            };
            let g = tool_call_grammar(&tools);
            match request.tool_choice {
                ToolChoice::Auto => Constraint::Lazy(g),
                _ => Constraint::Strict(g),
            }
        } else {
            Constraint::None
        };
        let turns = prompt::turns(request, offered)?;
        Ok(Generate {
            prompt: engine.render(&turns)?,
            max_tokens: request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            sampling: Sampling {
                temperature: request.temperature.unwrap_or(0.0),
                top_p: request.top_p.unwrap_or(0.95),
                top_k: 40,
                seed: request.seed.map_or_else(|| fastrand::u32(..), fold_seed),
            },
            constraint,
            replace: Replace::default(),
            stop: request.stop.clone(),
            ignore_eog: false,
            reuse_prefix: true,
        })
    }
}

fn grammar_tool(tool: &weft_core::tool::ToolSpec) -> GrammarTool<'_> {
    GrammarTool {
        name: tool.name.as_str(),
        schema: &tool.input_schema,
    }
}

/// Folds a 64-bit seed into llama.cpp's 32 bits.
fn fold_seed(seed: u64) -> u32 {
    (seed ^ (seed >> 32)) as u32
}

/// Every core this process may use.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Turns released pieces into stream chunks, numbering calls.
struct Chunker {
    calls: u32,
}

impl Chunker {
    fn chunks(&mut self, piece: Piece) -> Vec<StreamChunk> {
        match piece {
            Piece::Text(text) => vec![StreamChunk::TextDelta { text }],
            Piece::Call { name, arguments } => {
                let index = self.calls;
                self.calls += 1;
                let id = ToolCallId::new(format!("local_{:016x}", fastrand::u64(..)));
                vec![
                    StreamChunk::ToolCallStart { index, id, name },
                    StreamChunk::ToolCallArgsDelta {
                        index,
                        delta: arguments,
                    },
                    StreamChunk::ToolCallEnd { index },
                ]
            }
        }
    }
}

fn closing(g: &Generated) -> [StreamChunk; 2] {
    [
        StreamChunk::Usage {
            usage: Usage {
                input_tokens: u64::from(g.prompt_tokens),
                output_tokens: u64::from(g.output_tokens),
                ..Usage::default()
            },
        },
        StreamChunk::Stop {
            reason: g.stop.clone(),
        },
    ]
}

#[async_trait]
impl ModelClient for LocalModel {
    fn id(&self) -> &str {
        &self.inner.id
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelSummary, ModelError> {
        let mut stream = self.stream(request).await?;
        let mut asm = StreamAssembler::new();
        while let Some(chunk) = futures_util::StreamExt::next(&mut stream).await {
            asm.push(chunk?, &NoopEvents)
                .map_err(|e| ModelError::Malformed {
                    line: String::new(),
                    message: e.to_string(),
                })?;
        }
        Ok(asm.finish(&NoopEvents))
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        let (tx, rx) = mpsc::channel::<Result<StreamChunk, ModelError>>(64);
        let model = self.clone();
        let request = request.clone();
        tokio::task::spawn_blocking(move || {
            let run = || -> Result<Generated, ModelError> {
                let engine = model.engine()?;
                let generate = model.plan(&engine, &request)?;
                let mut chunker = Chunker { calls: 0 };
                engine.generate(&generate, &mut |piece| {
                    chunker
                        .chunks(piece)
                        .into_iter()
                        .all(|c| tx.blocking_send(Ok(c)).is_ok())
                })
            };
            match run() {
                Ok(g) => {
                    for c in closing(&g) {
                        if tx.blocking_send(Ok(c)).is_err() {
                            break;
                        }
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                }
            }
        });
        Ok(Box::pin(futures_util::stream::unfold(rx, |mut rx| async {
            rx.recv().await.map(|item| (item, rx))
        })))
    }
}
