//! The environment a stdio MCP server starts with: never weft's own, which
//! holds secrets (tenant tokens, the metrics token, provider keys), but a
//! clean one made of the variables a program needs to run
//! ([`INHERITED`], as the MCP SDKs pass by default), the ones the toolset's
//! configuration names in `inherit_env`, and its `env` table.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// Variables of weft's environment every stdio server gets, when set: what
/// the official MCP SDKs pass by default (`HOME`, `LOGNAME`, `PATH`,
/// `SHELL`, `TERM`, `USER`), and the locale, time zone and temporary
/// directory.
pub const INHERITED: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR",
];

/// The whole environment of a server whose toolset names `inherit` and sets
/// `env`, read from weft's own through `lookup`.
pub fn child_env(
    inherit: &[String],
    env: &BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = INHERITED
        .iter()
        .copied()
        .chain(inherit.iter().map(String::as_str))
        .filter(|name| !env.contains_key(*name))
        .filter_map(|name| lookup(name).map(|v| (OsString::from(name), v)))
        .collect();
    out.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allowed_and_named_variables_and_the_table_reach_the_server() {
        let parent = |name: &str| {
            [
                ("PATH", "/bin"),
                ("HOME", "/h"),
                ("WEFT_TOKENS", "alice=secret"),
                ("WEFT_METRICS_TOKEN", "m"),
                ("ANTHROPIC_API_KEY", "sk"),
                ("GITHUB_TOKEN", "gh"),
            ]
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
        };
        let env = BTreeMap::from([
            ("DEBUG".to_owned(), "1".to_owned()),
            ("HOME".to_owned(), "/srv".to_owned()),
        ]);
        let got = child_env(&["GITHUB_TOKEN".to_owned()], &env, parent);
        let names: Vec<&str> = got.iter().filter_map(|(k, _)| k.to_str()).collect();
        assert_eq!(names, ["PATH", "GITHUB_TOKEN", "DEBUG", "HOME"]);
        let home = got
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| v.clone());
        assert_eq!(home, Some(OsString::from("/srv")), "the table wins");
    }
}
