//! The local-model benchmark on a real GGUF model (`WEFT_LLAMA_GGUF`, or
//! `smollm2-135m` fetched with `weft models fetch`): its constrained runs
//! pick what the whole-vocabulary mask picks.
#![cfg(feature = "local")]

use serde_json::json;
use weft_local::LocalModel;

fn model() -> LocalModel {
    match LocalModel::open("smollm2-135m", &|k| std::env::var(k).ok()) {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    }
}

/// A greedy pick the grammar rejects is replaced by the next best token the
/// grammar allows, without masking the whole vocabulary: the answers must
/// be exactly those of the whole-vocabulary mask. Free-text arguments make
/// the grammar reject often (most tokens of the benchmark's answer).
#[test]
fn the_next_best_allowed_token_is_the_one_the_whole_vocabulary_mask_picks() {
    let m = model();
    for prompt in [
        "Write a short story about a lighthouse keeper.",
        "List three facts about volcanoes.",
        "Explain what a hash map is, briefly.",
    ] {
        let settings = weft_bench::local_model::Settings {
            tokens: 96,
            runs: 1,
            prompt: prompt.to_owned(),
        };
        let lines = match weft_bench::local_model::bench_local_model(&m, &settings) {
            Ok(lines) => lines,
            Err(e) => panic!("{e}"),
        };
        let summary = lines.last().cloned().unwrap_or_default();
        assert_eq!(
            summary["constrained_same_as_mask"],
            json!(true),
            "{prompt}: {summary}"
        );
        // The answer is a whole call, so there was something to compare.
        let answer = summary["constrained_answer"].as_str().unwrap_or_default();
        assert!(answer.starts_with("<call note>{"), "{prompt}: {answer}");
        // Both constrained kinds decoded something.
        for kind in ["grammar", "grammar_mask"] {
            assert!(
                lines
                    .iter()
                    .any(|l| l["constraint"] == kind && l["decoded_tokens"].as_u64() > Some(1)),
                "{prompt}: no {kind} run decoded tokens"
            );
        }
    }
}
