//! Tests of the `toolsets` entries of agent files.

use super::*;
use weft_mcp::oauth::Grant;

#[derive(Deserialize)]
struct File {
    toolsets: Vec<ToolsetSpec>,
}

fn parse(text: &str) -> ToolsetSpec {
    let mut file: File = toml::from_str(text).unwrap();
    file.toolsets.remove(0)
}

#[test]
fn an_http_toolset_takes_an_oauth_table() {
    let spec = parse(
        r#"
        [[toolsets]]
        type = "mcp"
        name = "remote"
        url = "https://mcp.example.com/mcp"
        [toolsets.oauth]
        token_dir = "/tmp/tokens"
        redirect_port = 8765
        client_name = "my agent"
        scopes = ["read", "write"]
        "#,
    );
    spec.check().unwrap();
    let ToolsetSpec::Table(ToolsetTable::Mcp(m)) = &spec else {
        panic!("an MCP table: {spec:?}");
    };
    let oauth = m.config().unwrap().oauth.unwrap();
    assert_eq!(oauth.token_dir, Some(PathBuf::from("/tmp/tokens")));
    assert_eq!(oauth.redirect_port, 8765);
    assert_eq!(oauth.client_name, "my agent");
    assert_eq!(oauth.scopes, ["read", "write"]);
}

#[test]
fn an_oauth_table_names_a_preregistered_client_and_its_grant() {
    let spec = parse(
        r#"
        [[toolsets]]
        type = "mcp"
        name = "remote"
        url = "https://mcp.example.com/mcp"
        [toolsets.oauth]
        grant = "client_credentials"
        client_id = "nightly"
        private_key_file = "/run/secrets/key.pem"
        signing_algorithm = "ES256"
        max_tenants = 3
        "#,
    );
    spec.check().unwrap();
    let ToolsetSpec::Table(ToolsetTable::Mcp(m)) = &spec else {
        panic!("an MCP table: {spec:?}");
    };
    assert_eq!(m.oauth.as_ref().and_then(|o| o.max_tenants), Some(3));
    let identity = m.config().unwrap().oauth.unwrap().identity;
    assert_eq!(identity.grant, Grant::ClientCredentials);
    assert_eq!(identity.client_id.as_deref(), Some("nightly"));
    let key = identity.private_key.unwrap();
    assert_eq!(key.file, PathBuf::from("/run/secrets/key.pem"));
    assert_eq!(key.algorithm.as_deref(), Some("ES256"));

    let both = parse(
        r#"
        [[toolsets]]
        type = "mcp"
        name = "remote"
        url = "https://mcp.example.com/mcp"
        [toolsets.oauth]
        client_id = "pre"
        client_secret_file = "/run/secrets/s"
        client_secret_env = "S"
        "#,
    );
    let message = both.check().unwrap_err();
    assert!(message.contains("toolset `remote`"), "{message}");
    assert!(message.contains("not both"), "{message}");
    let no_id = parse(
        "[[toolsets]]\ntype = \"mcp\"\nname = \"r\"\nurl = \"http://127.0.0.1:9/mcp\"\n[toolsets.oauth]\ngrant = \"client_credentials\"\n",
    );
    assert!(no_id.check().unwrap_err().contains("client_id"));
}

#[test]
fn an_empty_oauth_table_takes_the_defaults_and_none_means_no_oauth() {
    let with = parse(
        "[[toolsets]]\ntype = \"mcp\"\nname = \"r\"\nurl = \"http://127.0.0.1:9/mcp\"\noauth = {}\n",
    );
    let ToolsetSpec::Table(ToolsetTable::Mcp(m)) = &with else {
        panic!("an MCP table: {with:?}");
    };
    let oauth = m.config().unwrap().oauth.unwrap();
    assert_eq!(oauth.redirect_port, 0);
    assert_eq!(oauth.client_name, "weft");
    let without =
        parse("[[toolsets]]\ntype = \"mcp\"\nname = \"r\"\nurl = \"http://127.0.0.1:9/mcp\"\n");
    let ToolsetSpec::Table(ToolsetTable::Mcp(m)) = &without else {
        panic!("an MCP table: {without:?}");
    };
    assert!(m.config().unwrap().oauth.is_none());
}

#[test]
fn oauth_needs_an_http_server_and_known_keys() {
    let stdio =
        parse("[[toolsets]]\ntype = \"mcp\"\nname = \"s\"\ncommand = \"srv\"\noauth = {}\n");
    let err = stdio.check().unwrap_err();
    assert!(err.contains("`oauth` needs"), "{err}");
    let unknown: Result<File, _> = toml::from_str(
        "[[toolsets]]\ntype = \"mcp\"\nname = \"r\"\nurl = \"http://h/mcp\"\noauth = { port = 1 }\n",
    );
    assert!(unknown.is_err());
}
