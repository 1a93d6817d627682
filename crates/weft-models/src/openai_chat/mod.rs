//! The OpenAI Chat Completions client (`openai/<model>`), also used for
//! OpenAI-compatible servers (`compat/<model>`: Ollama, vLLM, llama.cpp).

mod decode;
mod request;

pub use decode::{ChatDecoder, decode_body};
pub use request::build as build_request;
pub(crate) use request::{effort, tool_choice};

use serde_json::Value;
use weft_core::model::{ModelError, ModelRequest, StreamChunk};

use crate::client::{HttpModelClient, WireApi};
use crate::http::HttpConfig;
use crate::key::ApiKey;

/// OpenAI's default base URL (with `/v1`, as `OPENAI_BASE_URL` is in the SDKs).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Which server a Chat client talks to; they differ in small request details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatFlavor {
    /// OpenAI itself.
    OpenAi,
    /// An OpenAI-compatible server.
    Compat,
}

/// The Chat Completions API, as an [`HttpModelClient`] speaks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatApi {
    /// Which server the client talks to.
    pub flavor: ChatFlavor,
}

impl WireApi for ChatApi {
    type Body = Value;
    type Decoder = ChatDecoder;

    const PATH: &'static str = "/chat/completions";

    fn prefix(&self) -> &'static str {
        match self.flavor {
            ChatFlavor::OpenAi => "openai",
            ChatFlavor::Compat => "compat",
        }
    }

    fn body(&self, model: &str, request: &ModelRequest, stream: bool) -> Result<Value, ModelError> {
        Ok(build_request(self.flavor, model, request, stream))
    }

    fn decoder(&self) -> ChatDecoder {
        ChatDecoder::new(self.flavor == ChatFlavor::Compat)
    }

    fn decode_body(&self, body: &str) -> Result<Vec<StreamChunk>, ModelError> {
        decode_body(body)
    }
}

/// A Chat Completions client for one model.
pub type ChatClient = HttpModelClient<ChatApi>;

impl HttpModelClient<ChatApi> {
    /// A client for `model` at `base_url` (ending in `/v1`); compatible servers may need no key.
    pub fn new(
        flavor: ChatFlavor,
        model: &str,
        api_key: Option<&ApiKey>,
        base_url: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        Self::with_bearer(ChatApi { flavor }, model, api_key, base_url, http)
    }
}
