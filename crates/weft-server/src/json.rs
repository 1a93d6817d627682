//! [`JsonBody`]: the JSON request-body extractor whose errors name the field
//! at fault (through `serde_path_to_error`), used instead of axum's `Json`.
//!
//! The body is buffered through axum's `Bytes` extractor, so the router's
//! `DefaultBodyLimit` applies and an oversized body becomes a 413 problem;
//! a body still incomplete at the request's [`BodyDeadline`] is a 408.
//!
//! An error never echoes more than a short prefix of the input: what serde
//! quotes of it (an unknown field's name, a value) is clipped (`clip`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;

use crate::clip::{MESSAGE_CHARS, clip, clip_quoted};
use crate::error::{ApiError, FieldError};
use crate::listen::{BodyDeadline, BodyRead};

/// A JSON request body deserialized into `T`; a malformed body is a 400 whose
/// detail and `errors` name the field.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

/// Like [`JsonBody`], but an empty body yields `T::default()`.
#[derive(Debug, Clone)]
pub struct OptionalJsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(&req) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = read_body(req, state).await?;
        parse(&bytes).map(JsonBody)
    }
}

impl<T, S> FromRequest<S> for OptionalJsonBody<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = is_json(&req);
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(T::default()));
        }
        if !json {
            return Err(ApiError::UnsupportedMediaType);
        }
        parse(&bytes).map(OptionalJsonBody)
    }
}

/// The whole body, read until the request's deadline when it has one.
async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    let read = req.extensions().get::<BodyRead>().cloned();
    let bytes = match req.extensions().get::<BodyDeadline>().copied() {
        Some(BodyDeadline(at)) => tokio::time::timeout_at(at, Bytes::from_request(req, state))
            .await
            .map_err(|_| ApiError::RequestTimeout)?
            .map_err(ApiError::from)?,
        None => Bytes::from_request(req, state).await?,
    };
    if let Some(read) = read {
        read.done();
    }
    Ok(bytes)
}

/// Deserializes `bytes` as one JSON value of type `T`, naming the field at fault.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        let path = clip(&e.path().to_string(), MESSAGE_CHARS / 4);
        let message = clip_quoted(&inner.to_string());
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::BadRequest {
                detail: format!("the body is not valid JSON: {message}"),
                errors: Vec::new(),
            };
        }
        let field = field_of(&path, &message);
        ApiError::BadRequest {
            detail: format!("invalid field `{field}`: {message}"),
            errors: vec![FieldError {
                field,
                message,
                code: None,
            }],
        }
    })?;
    de.end().map_err(|e| ApiError::BadRequest {
        detail: format!("the body is not valid JSON: {e}"),
        errors: Vec::new(),
    })?;
    Ok(value)
}

/// The full path of the field an error is about: serde reports a missing
/// field at its parent's path and names it only in the message.
fn field_of(path: &str, message: &str) -> String {
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    match (path, missing) {
        (".", Some(name)) => name.to_owned(),
        (_, Some(name)) => format!("{path}.{name}"),
        (".", None) => "body".to_owned(),
        (_, None) => path.to_owned(),
    }
}

fn is_json(req: &Request) -> bool {
    let Some(value) = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mime = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // Fields exist to be deserialized.
    struct Outer {
        name: String,
        inner: Inner,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // Fields exist to be deserialized.
    struct Inner {
        count: u32,
    }

    fn fields(e: ApiError) -> Vec<String> {
        match e {
            ApiError::BadRequest { errors, .. } => errors.into_iter().map(|f| f.field).collect(),
            other => panic!("expected a bad request, got {other:?}"),
        }
    }

    #[test]
    fn a_wrong_type_names_the_nested_field() {
        let e = parse::<Outer>(br#"{"name": "x", "inner": {"count": "many"}}"#).unwrap_err();
        assert_eq!(fields(e), vec!["inner.count"]);
    }

    #[test]
    fn a_missing_field_is_named_with_its_parent() {
        let e = parse::<Outer>(br#"{"name": "x", "inner": {}}"#).unwrap_err();
        assert_eq!(fields(e), vec!["inner.count"]);
        let e = parse::<Outer>(br#"{"inner": {"count": 1}}"#).unwrap_err();
        assert_eq!(fields(e), vec!["name"]);
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // Fields exist to be deserialized.
    struct Strict {
        name: String,
    }

    #[test]
    fn an_error_quotes_at_most_a_short_prefix_of_the_input() {
        let huge = "x".repeat(900_000);
        let bodies = [
            format!(r#"{{"{huge}": 1}}"#),
            format!(r#"{{"name": 1, "{huge}": 1}}"#),
            format!(r#"{{"name": ["{huge}"]}}"#),
        ];
        for body in bodies {
            let e = parse::<Strict>(body.as_bytes()).unwrap_err();
            let ApiError::BadRequest { detail, errors } = &e else {
                panic!("a bad request: {e:?}");
            };
            assert!(detail.len() < 1_000, "detail of {} bytes", detail.len());
            assert!(
                errors
                    .iter()
                    .all(|f| f.message.len() + f.field.len() < 1_000)
            );
        }
        let e = parse::<Strict>(format!(r#"{{"{huge}": 1}}"#).as_bytes()).unwrap_err();
        assert!(e.to_string().contains("unknown field `xxxx"), "{e}");
        assert!(e.to_string().contains("…`"), "{e}");
    }

    #[test]
    fn broken_json_and_trailing_data_are_rejected() {
        assert!(fields(parse::<Outer>(b"{").unwrap_err()).is_empty());
        let ok = br#"{"name": "x", "inner": {"count": 1}} x"#;
        assert!(parse::<Outer>(ok).is_err());
    }
}
