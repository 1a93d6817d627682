//! Every recorded HTTP error body (with its headers, where recorded) mapped
//! to a typed error, against its `*.expected.json`.

mod common;

use std::time::Duration;

use common::{FIXTURES, fixture};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use weft_core::model::ModelError;
use weft_models::http::http_error;

#[test]
fn every_error_fixture_maps_to_the_expected_typed_error() {
    let mut names: Vec<String> = std::fs::read_dir(format!("{FIXTURES}/errors"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".expected.json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 15);
    for name in names {
        let doc: Value = serde_json::from_slice(&fixture(&format!("errors/{name}"))).unwrap();
        let body = String::from_utf8(fixture(&format!(
            "errors/{}",
            name.replace(".expected.json", ".body.json")
        )))
        .unwrap();
        let mut headers = HeaderMap::new();
        for (key, value) in doc.as_object().unwrap() {
            if let (true, Value::Object(h)) = (key.starts_with("response_headers"), value) {
                for (k, v) in h {
                    headers.insert(
                        HeaderName::from_bytes(k.as_bytes()).unwrap(),
                        HeaderValue::from_str(v.as_str().unwrap()).unwrap(),
                    );
                }
            }
        }
        let want = &doc["expected"];
        let status = u16::try_from(doc["http_status"].as_u64().unwrap()).unwrap();
        let ModelError::Http {
            status: got_status,
            error_type,
            message,
            retryable,
            retry_after,
        } = http_error(status, &headers, &body)
        else {
            panic!("{name}: not an HTTP error");
        };
        assert_eq!(got_status, status, "{name}");
        assert_eq!(error_type.as_deref(), want["error_type"].as_str(), "{name}");
        if let Some(m) = want.get("message").and_then(Value::as_str) {
            assert_eq!(message, m, "{name}");
        }
        assert_eq!(retryable, want["retryable"].as_bool().unwrap(), "{name}");
        assert_eq!(
            retry_after,
            want["retry_after_seconds"]
                .as_u64()
                .map(Duration::from_secs),
            "{name}"
        );
    }
}
