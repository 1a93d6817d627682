//! The llama.cpp engine behind local models: loading a GGUF file, rendering
//! the chat with the template stored in it, and generating tokens on the CPU
//! under a sampler chain (top-k, top-p, temperature, seeded draw or greedy
//! choice) checked against the tool-call grammar. As in llama.cpp's own
//! sampler, the token is drawn first and only checked against the grammar;
//! only when the grammar rejects it is the whole vocabulary masked and the
//! token drawn again, which keeps constrained decoding nearly as fast as free
//! decoding. Generation runs on the model's own thread (see
//! [`super::worker`]); [`Engine::generate`] blocks until it ends, and
//! [`super::LocalModel`] calls it from a blocking task and streams what it
//! releases.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use weft_core::model::ModelError;

use super::backend::{backend, other};
use super::generation::{Generate, Generated, Prompt};
use super::job::{Job, Msg};
use super::output::Piece;
use super::prompt::Turn;
use super::tokens::{self, literal_ranges};
use super::worker;

pub use super::worker::DEFAULT_SEQUENCES;

/// Generations one model accepts at once, running or waiting for the
/// model's thread; more are refused with [`ModelError::Overloaded`].
pub const DEFAULT_MAX_QUEUED: usize = 16;

/// A loaded GGUF model.
pub struct Engine {
    path: PathBuf,
    model: Arc<LlamaModel>,
    template: LlamaChatTemplate,
    threads: i32,
    jobs: Sender<Job>,
    /// Generations submitted and not yet done.
    queue: QueueBound,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("path", &self.path)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Loads `path` (memory-mapped) for generation on `threads` threads,
    /// decoding up to [`DEFAULT_SEQUENCES`] generations at once.
    pub fn load(path: &Path, threads: usize) -> Result<Self, ModelError> {
        Self::load_with_sequences(path, threads, DEFAULT_SEQUENCES)
    }

    /// Loads `path` for generation on `threads` threads, decoding up to
    /// `sequences` generations at once in one batch (see [`super::worker`]);
    /// more wait for a free sequence.
    pub fn load_with_sequences(
        path: &Path,
        threads: usize,
        sequences: usize,
    ) -> Result<Self, ModelError> {
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| ModelError::Config {
                message: format!("cannot load GGUF model {}: {e}", path.display()),
            })?;
        let template = model.chat_template(None).map_err(|e| ModelError::Config {
            message: format!(
                "GGUF model {} carries no usable chat template: {e}",
                path.display()
            ),
        })?;
        let model = Arc::new(model);
        let threads = i32::try_from(threads.max(1)).unwrap_or(1);
        let (jobs, queue) = std::sync::mpsc::channel();
        let shared = model.clone();
        std::thread::Builder::new()
            .name("weft-local-model".into())
            .spawn(move || worker::run(shared, threads, sequences.max(1), queue))
            .map_err(|e| other(format!("cannot start the generation thread: {e}")))?;
        Ok(Self {
            path: path.to_owned(),
            model,
            template,
            threads,
            jobs,
            queue: QueueBound::new(DEFAULT_MAX_QUEUED),
        })
    }

    /// The same engine accepting at most `max` generations at once.
    pub fn with_max_queued(mut self, max: usize) -> Self {
        self.queue = QueueBound::new(max);
        self
    }

    /// Renders `turns` with the model's own chat template, ready for the
    /// assistant's answer, marking where the literal turns' text landed.
    pub fn render(&self, turns: &[Turn]) -> Result<Prompt, ModelError> {
        let chat = turns
            .iter()
            .map(|t| LlamaChatMessage::new(t.role.to_owned(), t.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ModelError::Config {
                message: format!("a message cannot be passed to the chat template: {e}"),
            })?;
        let text = self
            .model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|e| ModelError::Config {
                message: format!(
                    "the chat template of {} could not be applied: {e}",
                    self.path.display()
                ),
            })?;
        let literal = literal_ranges(&text, turns)?;
        Ok(Prompt { text, literal })
    }

    /// The prompt's tokens as generation evaluates them.
    pub fn prompt_tokens(&self, prompt: &Prompt) -> Vec<i32> {
        tokens::tokenize(&self.model, prompt)
            .iter()
            .map(|t| t.0)
            .collect()
    }

    /// The token ids of `text` read with special tokens (e.g. the id of
    /// `<|im_start|>` when the vocabulary has it).
    pub fn special_tokens(&self, text: &str) -> Vec<i32> {
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .iter()
            .map(|t| t.0)
            .collect()
    }

    /// Whether llama.cpp accepts `grammar` (root rule `root`) for this
    /// model's vocabulary; the error says why not.
    pub fn check_grammar(&self, grammar: &str) -> Result<(), ModelError> {
        llama_cpp_2::sampling::LlamaSampler::grammar(&self.model, grammar, "root")
            .map(drop)
            .map_err(|e| other(format!("llama.cpp rejects the grammar: {e}")))
    }

    /// Tokens the model was trained to attend over.
    pub fn context_length(&self) -> u32 {
        self.model.n_ctx_train()
    }

    /// Runs one generation on the model's thread, handing each released
    /// piece to `sink`; a sink returning `false` ends generation early (the
    /// reader went away).
    pub fn generate(
        &self,
        req: &Generate,
        sink: &mut dyn FnMut(Piece) -> bool,
    ) -> Result<Generated, ModelError> {
        let stopped = || other("the local model's generation thread has stopped".to_owned());
        let _slot = self.queue.take().map_err(|n| ModelError::Overloaded {
            message: format!(
                "the local model {} has {n} generations running or waiting, its maximum",
                self.path.display()
            ),
        })?;
        let (out, results) = std::sync::mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job {
            req: req.clone(),
            out,
            cancel: cancel.clone(),
        };
        self.jobs.send(job).map_err(|_| stopped())?;
        for msg in results {
            match msg {
                Msg::Piece(p) => {
                    if !sink(p) {
                        cancel.store(true, Ordering::Relaxed);
                    }
                }
                Msg::Done(result) => return result,
            }
        }
        Err(stopped())
    }
}

/// A bound on the generations of one model at once.
struct QueueBound {
    queued: AtomicUsize,
    max: usize,
}

impl QueueBound {
    fn new(max: usize) -> Self {
        Self {
            queued: AtomicUsize::new(0),
            max: max.max(1),
        }
    }

    /// A place in the queue, given back when dropped; when the queue is
    /// full, how many are in it.
    fn take(&self) -> Result<Slot<'_>, usize> {
        self.queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .map(|_| Slot(&self.queued))
    }
}

/// One generation's place in the queue.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::QueueBound;

    #[test]
    fn the_queue_refuses_past_its_bound_and_frees_places_on_drop() {
        let q = QueueBound::new(2);
        let a = q.take().unwrap();
        let b = q.take().unwrap();
        assert_eq!(q.take().err(), Some(2));
        drop(a);
        let c = q.take().unwrap();
        drop((b, c));
        assert!(q.take().is_ok());
    }
}
