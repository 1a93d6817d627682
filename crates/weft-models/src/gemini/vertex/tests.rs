//! Vertex AI: endpoints from the base URL or the environment, the method
//! URLs under them, and the configuration errors naming what to set.

use std::collections::HashMap;

use weft_core::model::ModelError;

use super::*;
use crate::config::{ModelConfig, build_model_with_env};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn config_error<T>(result: Result<T, ModelError>) -> String {
    match result {
        Err(ModelError::Config { message }) => message,
        other => panic!("expected a configuration error, got {:?}", other.err()),
    }
}

#[test]
fn regional_and_global_locations_have_their_hosts() {
    assert_eq!(
        api_root("europe-west4"),
        "https://europe-west4-aiplatform.googleapis.com/v1"
    );
    assert_eq!(api_root("global"), "https://aiplatform.googleapis.com/v1");
    assert_eq!(
        location_url(&api_root("global"), "p-1", "global"),
        "https://aiplatform.googleapis.com/v1/projects/p-1/locations/global"
    );
}

#[test]
fn models_methods_are_under_the_locations_publisher_path() {
    let base = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/";
    assert_eq!(
        VertexApi.url(base, "gemini-2.5-flash", true),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1\
         /publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        VertexApi.url(base, "gemini-2.5-flash", false),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1\
         /publishers/google/models/gemini-2.5-flash:generateContent"
    );
}

#[test]
fn the_endpoint_comes_from_the_environment_with_the_default_location() {
    let env = env_of(&[(PROJECT_VAR, "my-project")]);
    assert_eq!(
        endpoint("m", None, &env).unwrap(),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1"
    );
    let env = env_of(&[(PROJECT_VAR, "my-project"), (LOCATION_VAR, "global")]);
    assert_eq!(
        endpoint("m", None, &env).unwrap(),
        "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global"
    );
    // A proxy's API root: the project and location are added.
    let env = env_of(&[(PROJECT_VAR, "my-project"), (LOCATION_VAR, "asia-east1")]);
    assert_eq!(
        endpoint("m", Some("https://proxy.example.com/v1/"), &env).unwrap(),
        "https://proxy.example.com/v1/projects/my-project/locations/asia-east1"
    );
}

#[test]
fn a_base_url_naming_its_project_and_location_is_used_as_it_is() {
    let named =
        "https://europe-west1-aiplatform.googleapis.com/v1/projects/other/locations/europe-west1/";
    // The environment's project does not replace the URL's.
    let env = env_of(&[(PROJECT_VAR, "mine")]);
    assert_eq!(
        endpoint("m", Some(named), &env).unwrap(),
        named.trim_end_matches('/')
    );
    assert_eq!(
        endpoint("m", Some(named), &env_of(&[])).unwrap(),
        named.trim_end_matches('/')
    );
}

#[test]
fn a_missing_project_or_a_malformed_name_is_a_configuration_error_naming_the_variable() {
    let message = config_error(endpoint("gemini-2.5-flash", None, &env_of(&[])));
    assert!(
        message.contains(
            "`vertex/gemini-2.5-flash` needs a Google Cloud project: set GOOGLE_CLOUD_PROJECT"
        ),
        "{message}"
    );
    let message = config_error(endpoint(
        "m",
        Some("https://proxy.example.com/v1"),
        &env_of(&[(PROJECT_VAR, " ")]),
    ));
    assert!(message.contains("set GOOGLE_CLOUD_PROJECT"), "{message}");
    let env = env_of(&[(PROJECT_VAR, "p/../../x")]);
    let message = config_error(endpoint("m", None, &env));
    assert!(
        message.starts_with("GOOGLE_CLOUD_PROJECT is `p/../../x`"),
        "{message}"
    );
    let env = env_of(&[(PROJECT_VAR, "p"), (LOCATION_VAR, "us central")]);
    let message = config_error(endpoint("m", None, &env));
    assert!(
        message.starts_with("GOOGLE_CLOUD_LOCATION is `us central`"),
        "{message}"
    );
}

#[test]
fn the_token_comes_from_the_configured_key_else_its_variable() {
    let config = ModelConfig::new("vertex/gemini-2.5-flash");
    let env = env_of(&[(PROJECT_VAR, "p"), (TOKEN_VAR, "ya29.token")]);
    let model = build_model_with_env(&config, &env).unwrap();
    assert_eq!(model.id(), "vertex/gemini-2.5-flash");
    assert_eq!(
        model.server(),
        Some(("us-central1-aiplatform.googleapis.com", 443))
    );
    let message = config_error(build_model_with_env(
        &config,
        &env_of(&[(PROJECT_VAR, "p")]),
    ));
    assert!(
        message.starts_with(
            "no access token for `vertex/gemini-2.5-flash`: set GOOGLE_CLOUD_ACCESS_TOKEN"
        ),
        "{message}"
    );
    // `api_key_env` names another variable, which must be set.
    let named = ModelConfig {
        api_key_env: Some("TEAM_VERTEX_TOKEN".into()),
        ..config.clone()
    };
    let env = env_of(&[(PROJECT_VAR, "p"), ("TEAM_VERTEX_TOKEN", "ya29.team")]);
    assert!(build_model_with_env(&named, &env).is_ok());
    let message = config_error(build_model_with_env(
        &named,
        &env_of(&[(PROJECT_VAR, "p"), (TOKEN_VAR, "ya29.token")]),
    ));
    assert!(message.contains("TEAM_VERTEX_TOKEN"), "{message}");
    // The project is asked for first: nothing else is needed to say it.
    let message = config_error(build_model_with_env(&config, &env_of(&[])));
    assert!(message.contains("set GOOGLE_CLOUD_PROJECT"), "{message}");
}

#[test]
fn a_token_that_is_no_header_value_is_refused_without_showing_it() {
    let env = env_of(&[(PROJECT_VAR, "p"), (TOKEN_VAR, "ya29.bad\ntoken")]);
    let message = config_error(build_model_with_env(
        &ModelConfig::new("vertex/gemini-2.5-flash"),
        &env,
    ));
    assert!(!message.contains("ya29"), "{message}");
}
