//! The OpenAI Responses API client (`openai-responses/<model>`), always with
//! `store: false`.

mod decode;
mod request;

pub use decode::{ResponsesDecoder, decode_body};
pub use request::{InputItem, ResponsesBody, build as build_request, is_reasoning_model};

use weft_core::model::{ModelError, ModelRequest, StreamChunk};

use crate::client::{HttpModelClient, WireApi};
use crate::http::HttpConfig;
use crate::key::ApiKey;

/// The Responses API, as an [`HttpModelClient`] speaks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponsesApi;

impl WireApi for ResponsesApi {
    type Body = ResponsesBody;
    type Decoder = ResponsesDecoder;

    const PATH: &'static str = "/responses";

    fn prefix(&self) -> &'static str {
        "openai-responses"
    }

    fn body(
        &self,
        model: &str,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<ResponsesBody, ModelError> {
        Ok(build_request(model, request, stream))
    }

    fn decoder(&self) -> ResponsesDecoder {
        ResponsesDecoder::default()
    }

    fn decode_body(&self, body: &str) -> Result<Vec<StreamChunk>, ModelError> {
        decode_body(body)
    }
}

/// A Responses API client for one model.
pub type ResponsesClient = HttpModelClient<ResponsesApi>;

impl HttpModelClient<ResponsesApi> {
    /// A client for `model` at `base_url` (ending in `/v1`).
    pub fn new(
        model: &str,
        api_key: Option<&ApiKey>,
        base_url: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        Self::with_bearer(ResponsesApi, model, api_key, base_url, http)
    }
}
