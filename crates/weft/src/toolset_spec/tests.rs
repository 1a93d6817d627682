//! Tests of the `toolsets` entries of agent files.

use super::*;

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
