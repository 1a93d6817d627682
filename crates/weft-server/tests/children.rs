//! Agents called as tools, through the API: a run counts the child runs it
//! started (`child_count` on `GET /v1/runs/{run_id}`), each of which is a
//! run of the same tenant labelled with its parent.

mod common;

use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::json;

#[tokio::test]
async fn a_run_counts_the_child_runs_it_started() {
    let f = Fixture::new().await;
    let team = f.start(TOKEN_A, "team", None).await;
    let done = f.wait_status(TOKEN_A, &team, "completed").await;
    assert_eq!(done["child_count"], json!(2), "{done}");
    assert_eq!(done["outcome"]["message"]["parts"][0]["text"], "both added");

    // The children are runs of their own, listed by their parent label,
    // with no children of theirs.
    let listed = f
        .get(&format!("/v1/runs?label=weft.parent_run={team}"), TOKEN_A)
        .await;
    let children = listed.body["runs"].as_array().unwrap();
    assert_eq!(children.len(), 2, "{}", listed.body);
    for child in children {
        assert_eq!(child["agent_id"], "echo");
        assert!(child.get("child_count").is_none(), "not in lists: {child}");
        let id = child["run_id"].as_str().unwrap();
        let view = f.wait_status(TOKEN_A, id, "completed").await;
        assert_eq!(view["child_count"], json!(0), "{view}");
    }
    // Another tenant sees neither the run nor its count.
    let r = f.get(&format!("/v1/runs/{team}"), TOKEN_B).await;
    assert_eq!(r.status, 404, "{}", r.body);
}
