//! The registry over a secured Redis: `rediss://` to a TLS-enabled
//! `redis-server` this test starts with a certificate of its own private CA
//! (gateway, provider and executors all over TLS, the CA given as a PEM
//! file), and `redis://user:password@host` as a Redis ACL user confined to
//! the registry's key patterns, created for the test and removed after.

mod common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use weft_core::tool::ToolResultBody;
use weft_registry::{
    BearerToken, ExecutorConfig, GatewayAuth, GatewayClient, LazyRegistryToolSet, Provider,
    ProviderConfig, Redis, RedisOptions, RegistryTokens, RegistryToolSet,
};
use weft_tools::ToolSet;

/// A redis-server child, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A CA and a certificate for `localhost` and `127.0.0.1` it signs, as PEM
/// files in `dir`: (ca, cert, key).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "weft test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

/// A TLS-only redis-server on a free port, or why this machine cannot run
/// one (no `redis-server`, or one built without TLS).
fn tls_server(dir: &Path) -> Result<(Server, u16, PathBuf), String> {
    let (ca, cert, key) = certificates(dir);
    let port = free_port();
    let mut child = Command::new("redis-server")
        .args(["--port", "0", "--tls-port", &port.to_string()])
        .arg("--tls-cert-file")
        .arg(&cert)
        .arg("--tls-key-file")
        .arg(&key)
        .arg("--tls-ca-cert-file")
        .arg(&ca)
        .args(["--tls-auth-clients", "no", "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("no redis-server to start: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            if text.contains("tls-port") || text.contains("TLS") {
                return Err(format!("this redis-server has no TLS support: {text}"));
            }
            panic!("redis-server exited: {text}");
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((Server(child), port, ca));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the TLS redis-server did not listen on {port}");
}

/// A gateway with fresh tokens on `redis`, a provider of `name` on
/// `provider_redis` and an executor on `redis` calling its `add` with the
/// caller token: 2 + 3.
async fn round_trip(
    redis: &Redis,
    provider_redis: &Redis,
    name: &str,
) -> (TestGateway, tokio::task::JoinHandle<()>) {
    let tokens = RegistryTokens::parse(&format!(
        "caller:c=caller-{name},provider:p=provider-{name}:{name}"
    ))
    .unwrap();
    let gw = gateway(redis, |c| c.auth = GatewayAuth::Tokens(tokens)).await;
    let gw_client = GatewayClient::new(&gw.url)
        .unwrap()
        .with_token(BearerToken::new(format!("provider-{name}")));
    let provider = Provider::new(
        provider_redis.clone(),
        name,
        toolset(name, Arc::new(AtomicUsize::new(0))),
        Some(gw_client),
        ProviderConfig::default(),
    )
    .await
    .unwrap();
    provider.register().await.unwrap();
    let serving = tokio::spawn(async move {
        let _ = provider.serve(std::future::pending()).await;
    });
    let executor = RegistryToolSet::connect(redis.clone(), executor_config(&gw, name))
        .await
        .unwrap();
    let (req, _) = request(&format!("{name}.add"), json!({"a": 2, "b": 3}), "r", "c1");
    let reply = executor.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(5)));
    (gw, serving)
}

fn executor_config(gw: &TestGateway, name: &str) -> ExecutorConfig {
    let mut ec = ExecutorConfig::new(&gw.url, name);
    ec.namespace = gw.ns.clone();
    ec.token = BearerToken::new(format!("caller-{name}"));
    ec.call_timeout = Duration::from_secs(20);
    ec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_runs_over_rediss_with_a_private_ca() {
    let dir = std::env::temp_dir().join(unique("weft-redis-tls-"));
    std::fs::create_dir_all(&dir).unwrap();
    let (_server, port, ca) = match tls_server(&dir) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("SKIPPED the rediss:// test: {why}");
            return;
        }
    };
    let url = format!("rediss://127.0.0.1:{port}");
    // The server's certificate chains to no system root: refused without the CA.
    let untrusted = Redis::connect(&url).await;
    assert!(
        untrusted.is_err(),
        "a certificate of an unknown CA was accepted"
    );
    // Plain text to the TLS port is no Redis either.
    assert!(
        Redis::connect(&format!("redis://127.0.0.1:{port}"))
            .await
            .is_err()
    );
    let options = RedisOptions {
        ca_pem: Some(std::fs::read(&ca).unwrap()),
        ..RedisOptions::default()
    };
    let redis = Redis::connect_opts(&url, options).await.unwrap();
    let name = unique("tls");
    let (gw, serving) = round_trip(&redis, &redis, &name).await;
    // An agent file's lazy toolset reaches the same Redis with the CA file.
    let lazy = LazyRegistryToolSet::new(&url, executor_config(&gw, &name)).with_redis_ca_file(ca);
    let (req, _) = request(&format!("{name}.add"), json!({"a": 4, "b": 5}), "r", "c2");
    let reply = lazy.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(9)));
    serving.abort();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The commands the README's ACL users are given.
const COMMANDS: [&str; 9] = [
    "resetchannels",
    "-@all",
    "+@read",
    "+@write",
    "+@stream",
    "+@scripting",
    "+@connection",
    "+@fast",
    "-@dangerous",
];

/// `ACL SETUSER`/`ACL DELUSER` on the test's Redis; the user is removed
/// when dropped.
struct AclUser(String);

impl AclUser {
    async fn create(admin: &Redis, rules: &[&str]) -> Self {
        let name = unique("weft_acl_");
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER").arg(&name).arg("reset").arg("on");
        cmd.arg(format!(">{name}-pw"));
        for r in rules {
            cmd.arg(*r);
        }
        let _: () = cmd.query_async(&mut admin.mux()).await.unwrap();
        Self(name)
    }

    fn url(&self) -> String {
        let base = redis_url();
        let rest = base.split_once("://").map_or(base.as_str(), |(_, r)| r);
        format!("redis://{0}:{0}-pw@{rest}", self.0)
    }
}

impl Drop for AclUser {
    fn drop(&mut self) {
        // Removed over a plain connection: Drop cannot await.
        if let Ok(client) = redis::Client::open(redis_url())
            && let Ok(mut conn) = client.get_connection()
        {
            let _: Result<(), _> = redis::cmd("ACL")
                .arg("DELUSER")
                .arg(&self.0)
                .query(&mut conn);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_confined_to_the_registry_keys_runs_it() {
    let admin = Redis::connect(&redis_url()).await.unwrap();
    // The gateway's namespace starts with `test:registry:`; streams with `pulse:stream:`.
    let mut rules = vec!["~test:registry:*", "~pulse:stream:*"];
    rules.extend(&COMMANDS);
    let registry = AclUser::create(&admin, &rules).await;
    let redis = Redis::connect(&registry.url()).await.unwrap();
    let name = unique("acl");
    // The provider's user reaches only its toolset's streams and results.
    let own = format!("~pulse:stream:toolset:{name}:*");
    let mut rules = vec![own.as_str(), "~pulse:stream:result:*"];
    rules.extend(&COMMANDS);
    let provider_user = AclUser::create(&admin, &rules).await;
    let provider_redis = Redis::connect(&provider_user.url()).await.unwrap();
    let (gw, serving) = round_trip(&redis, &provider_redis, &name).await;
    let read: Result<Option<String>, _> = redis::cmd("GET")
        .arg(gw.ns.toolset(&name))
        .query_async(&mut provider_redis.mux())
        .await;
    let err = read.expect_err("a provider read the registry's records");
    assert_eq!(
        err.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm),
        "{err}"
    );

    // A user with other key patterns reads none of the registry's keys.
    let other = AclUser::create(&admin, &["~other:*", "+@all"]).await;
    let outsider = Redis::connect(&other.url()).await.unwrap();
    let read: Result<Option<String>, _> = redis::cmd("GET")
        .arg(gw.ns.toolset(&name))
        .query_async(&mut outsider.mux())
        .await;
    let err = read.expect_err("an outsider read a registration");
    assert_eq!(
        err.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm),
        "{err}"
    );
    let stream = weft_registry::pulse::key(&weft_registry::wire::toolset_stream(&name));
    let read: Result<redis::Value, _> = redis::cmd("XRANGE")
        .arg(&stream)
        .arg("-")
        .arg("+")
        .query_async(&mut outsider.mux())
        .await;
    let err = read.expect_err("an outsider read calls");
    assert_eq!(
        err.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm),
        "{err}"
    );
    // A wrong password is refused.
    let wrong = registry.url().replace("-pw@", "-nope@");
    assert!(Redis::connect(&wrong).await.is_err());
    serving.abort();
}
