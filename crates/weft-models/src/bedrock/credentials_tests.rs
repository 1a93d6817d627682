//! The credential chain and region resolution: the environment, profile
//! files, and web identity against a local server speaking STS's XML.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::routing::post;

use super::*;
use crate::bedrock::credentials::{WebIdentity, resolve};
use crate::bedrock::sts::{element, parse_response, parse_utc};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

/// A fresh temporary directory.
fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("weft-aws-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn static_keys(source: &CredentialSource) -> &Credentials {
    match source {
        CredentialSource::Static(c) => c,
        other => panic!("not static keys: {other:?}"),
    }
}

#[test]
fn environment_keys_win_and_the_region_comes_from_aws_region_first() {
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ("AWS_SECRET_ACCESS_KEY", "secret-env"),
        ("AWS_SESSION_TOKEN", "token-env"),
        ("AWS_REGION", "eu-central-1"),
        ("AWS_DEFAULT_REGION", "us-west-2"),
        ("HOME", "/nonexistent-home"),
    ]);
    let (source, region) = resolve(&env).unwrap();
    let c = static_keys(&source);
    assert_eq!(c.access_key_id, "AKIDENV");
    assert_eq!(c.session_token.as_deref(), Some("token-env"));
    assert_eq!(region, "eu-central-1");
    assert!(!format!("{c:?}").contains("secret-env"));
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ("AWS_SECRET_ACCESS_KEY", "secret-env"),
        ("AWS_DEFAULT_REGION", "us-west-2"),
    ]);
    assert_eq!(resolve(&env).unwrap().1, "us-west-2");
}

#[test]
fn profiles_come_from_the_shared_files_named_or_under_home() {
    let dir = temp_dir("profile");
    let creds = dir.join("credentials");
    let config = dir.join("config");
    std::fs::write(
        &creds,
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s-default\n\n\
         # a comment\n[work]\naws_access_key_id=AKIDWORK\naws_secret_access_key=s-work\n",
    )
    .unwrap();
    std::fs::write(
        &config,
        "[default]\nregion = us-east-2\n[profile work]\nregion = eu-west-1\naws_access_key_id = AKIDIGNORED\n",
    )
    .unwrap();
    let (c, f) = (creds.to_str().unwrap(), config.to_str().unwrap());
    let env = env_of(&[
        ("AWS_PROFILE", "work"),
        ("AWS_SHARED_CREDENTIALS_FILE", c),
        ("AWS_CONFIG_FILE", f),
    ]);
    let (source, region) = resolve(&env).unwrap();
    assert_eq!(static_keys(&source).access_key_id, "AKIDWORK");
    assert_eq!(region, "eu-west-1");
    let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", c), ("AWS_CONFIG_FILE", f)]);
    let (source, region) = resolve(&env).unwrap();
    assert_eq!(static_keys(&source).access_key_id, "AKIDDEFAULT");
    assert_eq!(region, "us-east-2");
    // The same files found under HOME.
    let home = temp_dir("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::copy(&creds, home.join(".aws/credentials")).unwrap();
    std::fs::copy(&config, home.join(".aws/config")).unwrap();
    let env = env_of(&[("HOME", home.to_str().unwrap()), ("AWS_PROFILE", "work")]);
    assert_eq!(
        static_keys(&resolve(&env).unwrap().0).access_key_id,
        "AKIDWORK"
    );
    // A named profile no file has is an error naming it.
    let env = env_of(&[("HOME", home.to_str().unwrap()), ("AWS_PROFILE", "gone")]);
    let Err(ModelError::Config { message }) = resolve(&env) else {
        panic!("a missing profile is a config error");
    };
    assert!(message.contains("`gone`"), "{message}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn no_credentials_or_no_region_is_a_config_error_saying_what_to_set() {
    let env = env_of(&[("AWS_REGION", "us-east-1"), ("HOME", "/nonexistent-home")]);
    let Err(ModelError::Config { message }) = resolve(&env) else {
        panic!("no credentials is a config error");
    };
    assert!(message.contains("AWS_ACCESS_KEY_ID"), "{message}");
    assert!(message.contains("AWS_WEB_IDENTITY_TOKEN_FILE"), "{message}");
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("HOME", "/nonexistent-home"),
    ]);
    let Err(ModelError::Config { message }) = resolve(&env) else {
        panic!("no region is a config error");
    };
    assert!(message.contains("AWS_REGION"), "{message}");
}

/// STS's documented `AssumeRoleWithWebIdentity` answer, expiring at `expiration`.
fn sts_answer(expiration: &str) -> String {
    format!(
        r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A</SubjectFromWebIdentityToken>
    <Audience>client.5498841531868486423.1548@apps.example.com</Audience>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/FederatedWebIdentityRole/app1</Arn>
      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:app1</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <SessionToken>AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE</SessionToken>
      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>
      <Expiration>{expiration}</Expiration>
      <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>
    </Credentials>
    <SourceIdentity>SourceIdentityValue</SourceIdentity>
    <Provider>www.amazon.com</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata>
    <RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId>
  </ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#
    )
}

/// A local STS answering `AssumeRoleWithWebIdentity` for the token
/// `oidc-token` and the role `arn:aws:iam::123456789012:role/app` (else
/// its documented 400), counting calls.
async fn sts(expiration: String) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let app = Router::new().route(
        "/",
        post(move |body: String| {
            let (seen, expiration) = (seen.clone(), expiration.clone());
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                let form: HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{body}"))
                    .unwrap()
                    .query_pairs()
                    .into_owned()
                    .collect();
                let ok = form.get("Action").map(String::as_str) == Some("AssumeRoleWithWebIdentity")
                    && form.get("Version").map(String::as_str) == Some("2011-06-15")
                    && form.get("RoleArn").map(String::as_str) == Some("arn:aws:iam::123456789012:role/app")
                    && form.get("RoleSessionName").map(String::as_str) == Some("weft-test")
                    && form.get("WebIdentityToken").map(String::as_str) == Some("oidc-token");
                if ok {
                    (axum::http::StatusCode::OK, sts_answer(&expiration))
                } else {
                    (axum::http::StatusCode::BAD_REQUEST, "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>Couldn&apos;t retrieve verification key from your identity provider</Message></Error><RequestId>1</RequestId></ErrorResponse>".to_owned())
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, calls)
}

fn web_env(dir: &std::path::Path, sts_url: &str) -> impl Fn(&str) -> Option<String> + use<> {
    let token = dir.join("token");
    std::fs::write(&token, "oidc-token\n").unwrap();
    env_of(&[
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
        ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/app"),
        ("AWS_ROLE_SESSION_NAME", "weft-test"),
        ("AWS_ENDPOINT_URL_STS", sts_url),
        ("AWS_REGION", "us-east-1"),
        ("HOME", "/nonexistent-home"),
    ])
}

#[tokio::test]
async fn web_identity_credentials_come_from_sts_and_are_kept_until_near_expiry() {
    let (url, calls) = sts("2099-10-24T23:00:23Z".into()).await;
    let dir = temp_dir("web");
    let (source, _) = resolve(&web_env(&dir, &url)).unwrap();
    assert!(matches!(source, CredentialSource::WebIdentity(_)));
    let chain = Chain::new(source);
    let http = reqwest::Client::new();
    let c = chain.get(&http).await.unwrap();
    assert_eq!(c.access_key_id, "ASgeIAIOSFODNN7EXAMPLE");
    assert_eq!(
        c.secret_access_key,
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
    );
    assert_eq!(
        c.session_token.as_deref(),
        Some("AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE")
    );
    assert_eq!(c.expires, parse_utc("2099-10-24T23:00:23Z"));
    chain.get(&http).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "cached");
    // Credentials about to expire are fetched again.
    let (url, calls) = sts("2014-10-24T23:00:23Z".into()).await;
    let chain = Chain::new(resolve(&web_env(&dir, &url)).unwrap().0);
    chain.get(&http).await.unwrap();
    chain.get(&http).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "expired, fetched again");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_refused_token_is_a_typed_sts_error() {
    let (url, _) = sts("2099-10-24T23:00:23Z".into()).await;
    let dir = temp_dir("web-refused");
    let token = dir.join("token");
    std::fs::write(&token, "wrong-token").unwrap();
    let source = CredentialSource::WebIdentity(WebIdentity {
        token_file: token,
        role_arn: "arn:aws:iam::123456789012:role/app".into(),
        session_name: "weft-test".into(),
        sts_url: url,
    });
    let err = Chain::new(source)
        .get(&reqwest::Client::new())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::Http {
            status: 400,
            error_type: Some("InvalidIdentityToken".into()),
            message: "AssumeRoleWithWebIdentity: Couldn't retrieve verification key from your identity provider".into(),
            retryable: false,
            retry_after: None,
        }
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sts_xml_and_times_parse_strictly() {
    assert_eq!(
        element("<a><B>x &amp; y</B></a>", "B").as_deref(),
        Some("x & y")
    );
    assert_eq!(element("<a><B>x</a>", "B"), None);
    let t = parse_utc("1970-01-02T00:00:01Z").unwrap();
    assert_eq!(t, SystemTime::UNIX_EPOCH + Duration::from_secs(86_401));
    assert_eq!(
        parse_utc("2014-10-24T23:00:23.123Z"),
        parse_utc("2014-10-24T23:00:23Z")
    );
    assert!(parse_utc("2014-13-24T23:00:23Z").is_none());
    assert!(parse_utc("yesterday").is_none());
    let missing = parse_response(200, "<AssumeRoleWithWebIdentityResponse/>").unwrap_err();
    assert!(
        matches!(missing, ModelError::Malformed { .. }),
        "{missing:?}"
    );
    let fresh_now = Credentials {
        access_key_id: "a".into(),
        secret_access_key: "s".into(),
        session_token: None,
        expires: Some(SystemTime::now() + Duration::from_secs(60)),
    };
    assert!(
        !fresh(&fresh_now, SystemTime::now()),
        "expires within the refresh margin"
    );
}
