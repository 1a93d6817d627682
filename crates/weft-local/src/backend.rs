//! The process-wide llama.cpp backend, initialised once, and the error
//! shape every failure of the local engine takes.

use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use weft_core::model::ModelError;

/// The process-wide llama.cpp backend, initialised once.
pub(crate) fn backend() -> Result<&'static LlamaBackend, ModelError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(false),
            );
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| other(format!("llama.cpp backend: {e}")))
}

pub(crate) fn other(message: String) -> ModelError {
    ModelError::Other { message }
}
