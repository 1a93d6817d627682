//! The Agent Card served at `/.well-known/agent-card.json`: built from the
//! agent file (its id, its instructions as the description, one skill for
//! the agent and one per tool of its toolsets). It is a 1.0 card (two
//! JSON-RPC interfaces in `supportedInterfaces`: 1.0 at `/`, 0.3 at
//! `/v0.3`) that also carries 0.3's `url`, `protocolVersion` and
//! `preferredTransport`, so clients of either release find their endpoint.

use serde::Serialize;

/// The card.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    name: String,
    description: String,
    version: String,
    supported_interfaces: Vec<AgentInterface>,
    capabilities: Capabilities,
    default_input_modes: Vec<String>,
    default_output_modes: Vec<String>,
    skills: Vec<Skill>,
    /// 0.3: the endpoint of the card's protocol version.
    url: String,
    /// 0.3: the protocol version of `url`.
    protocol_version: String,
    /// 0.3: the transport of `url`.
    preferred_transport: String,
    /// The schemes a client may authenticate with, by name.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    security_schemes: serde_json::Map<String, serde_json::Value>,
    /// Which schemes a client must use (alternatives).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    security_requirements: Vec<serde_json::Value>,
    /// 0.3: `security_requirements` in 0.3's shape.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    security: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentInterface {
    url: String,
    protocol_binding: String,
    protocol_version: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Capabilities {
    streaming: bool,
    push_notifications: bool,
}

/// One skill of the card.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    id: String,
    name: String,
    description: String,
    tags: Vec<String>,
}

impl Skill {
    /// A skill with `id`, shown as `name`, doing `description`, tagged `tags`.
    pub fn new(id: &str, name: &str, description: &str, tags: &[&str]) -> Self {
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        }
    }
}

/// The path of the 0.3 endpoint.
pub const V03_PATH: &str = "/v0.3";

impl AgentCard {
    /// The card of agent `id`, described by `description`, with `skills`,
    /// served at `base` (`http://host:port` or `http://host:port/path`, no
    /// trailing slash): 1.0 at `base` (`/` when it has no path), 0.3 at
    /// `base` + [`V03_PATH`].
    pub fn new(id: &str, description: &str, base: &str, skills: Vec<Skill>) -> Self {
        let modes = vec!["text/plain".to_owned(), "application/json".to_owned()];
        let interface = |path: &str, version: &str| AgentInterface {
            url: format!("{base}{path}"),
            protocol_binding: "JSONRPC".to_owned(),
            protocol_version: version.to_owned(),
        };
        // 1.0 at the base URL itself: `http://host:port/`, or a path as it is.
        let has_path = base.splitn(4, '/').nth(3).is_some_and(|p| !p.is_empty());
        let root = if has_path { "" } else { "/" };
        Self {
            name: id.to_owned(),
            description: description.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            supported_interfaces: vec![interface(root, "1.0"), interface(V03_PATH, "0.3")],
            capabilities: Capabilities {
                streaming: true,
                push_notifications: false,
            },
            default_input_modes: modes.clone(),
            default_output_modes: modes,
            skills,
            url: format!("{base}{V03_PATH}"),
            protocol_version: "0.3.0".to_owned(),
            preferred_transport: "JSONRPC".to_owned(),
            security_schemes: serde_json::Map::new(),
            security_requirements: Vec::new(),
            security: Vec::new(),
        }
    }

    /// The card of an agent whose clients send `Authorization: Bearer`
    /// (scheme `bearer`, required).
    pub fn with_bearer(mut self) -> Self {
        self.security_schemes.insert(
            BEARER.to_owned(),
            serde_json::json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}),
        );
        self.security_requirements
            .push(serde_json::json!({"schemes": {BEARER: {"list": []}}}));
        self.security.push(serde_json::json!({BEARER: []}));
        self
    }
}

/// The name of the bearer scheme in a card.
const BEARER: &str = "bearer";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_names_both_endpoints() {
        let skills = vec![Skill::new("a", "a", "does a", &["agent"])];
        let card =
            serde_json::to_value(AgentCard::new("a", "does a", "http://h:1", skills)).unwrap();
        assert_eq!(card["supportedInterfaces"][0]["url"], "http://h:1/");
        assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(card["supportedInterfaces"][1]["url"], "http://h:1/v0.3");
        assert_eq!(card["url"], "http://h:1/v0.3");
        assert_eq!(card["capabilities"]["pushNotifications"], false);
        assert_eq!(card["skills"][0]["tags"][0], "agent");
        assert!(card.get("securitySchemes").is_none(), "{card}");
    }

    #[test]
    fn a_bearer_card_requires_the_bearer_scheme() {
        let card = AgentCard::new("a", "does a", "http://h:1/a2a/a", vec![]).with_bearer();
        let card = serde_json::to_value(card).unwrap();
        let scheme = &card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"];
        assert_eq!(scheme["scheme"], "Bearer");
        assert!(card["securityRequirements"][0]["schemes"]["bearer"].is_object());
        assert_eq!(card["security"][0]["bearer"], serde_json::json!([]));
        assert_eq!(card["url"], "http://h:1/a2a/a/v0.3");
        assert_eq!(card["supportedInterfaces"][0]["url"], "http://h:1/a2a/a");
    }
}
