//! Generations on one local model decode together (continuous batching over
//! the sequences of one llama.cpp context), for real: SmolLM2-135M-Instruct,
//! fetched by `scripts/test` as for `local_model.rs`.

use futures_util::StreamExt;
use futures_util::future::join_all;
use weft_core::message::Message;
use weft_core::model::{ModelClient, ModelRequest, ModelSummary, StopReason};
use weft_local::LocalModel;

fn model(sequences: usize) -> LocalModel {
    match LocalModel::open("smollm2-135m", &|k| std::env::var(k).ok()) {
        Ok(m) => m.with_sequences(sequences),
        Err(e) => panic!("{e}"),
    }
}

fn request(prompt: &str, max_tokens: u32) -> ModelRequest {
    ModelRequest {
        system: Some("You are a helpful assistant.".into()),
        messages: vec![Message::user(prompt)],
        max_tokens: Some(max_tokens),
        ..ModelRequest::default()
    }
}

async fn complete(model: &LocalModel, req: &ModelRequest) -> ModelSummary {
    match model.complete(req).await {
        Ok(s) => s,
        Err(e) => panic!("generation failed: {e}"),
    }
}

const PROMPTS: [&str; 4] = [
    "Count from one to ten in words.",
    "What is the capital of France?",
    "List three colours of the rainbow.",
    "Name the days of the week.",
];

/// Each sequence reads its own logits and keeps its own sampler: four
/// greedy generations decoded in one batch write what each writes alone.
#[tokio::test]
async fn generations_decoded_together_answer_as_each_does_alone() {
    let m = model(4);
    let requests: Vec<ModelRequest> = PROMPTS.iter().map(|p| request(p, 24)).collect();
    let mut alone = Vec::new();
    for req in &requests {
        alone.push(complete(&m, req).await.text);
    }
    let together = join_all(requests.iter().map(|r| complete(&m, r))).await;
    for ((prompt, alone), together) in PROMPTS.iter().zip(&alone).zip(&together) {
        assert!(!alone.is_empty(), "{prompt}");
        assert_eq!(&together.text, alone, "{prompt}");
    }
}

/// More generations than sequences: the others wait for a free one, in
/// order, and every one gets its whole budget.
#[tokio::test]
async fn generations_past_the_sequences_wait_for_a_free_one() {
    let m = model(2);
    let req = request("Write a long poem about mountains.", 7);
    let all = join_all((0..5).map(|_| complete(&m, &req))).await;
    for s in &all {
        assert_eq!(s.usage.output_tokens, 7, "{s:?}");
        assert_eq!(s.stop_reason, Some(StopReason::MaxTokens));
    }
    assert!(
        all.windows(2).all(|w| w[0].text == w[1].text),
        "the same greedy request, the same text"
    );
}

/// A generation needing more room than a sequence has waits until the
/// others end, then gets a larger context; both finish.
#[tokio::test]
async fn a_generation_needing_a_larger_context_gets_one_once_the_others_end() {
    let m = model(2);
    let small = request("Say hello.", 16);
    // 6,000 tokens of budget: more than the 4,096 a sequence starts with.
    let large = request("Say goodbye.", 6000);
    let (a, b) = tokio::join!(complete(&m, &small), complete(&m, &large));
    assert!(!a.text.is_empty() && !b.text.is_empty(), "{a:?} {b:?}");
    assert_eq!(b.stop_reason, Some(StopReason::EndTurn), "{b:?}");
}

/// A stream dropped mid-way frees its sequence: the next generation on a
/// one-sequence model runs.
#[tokio::test]
async fn a_dropped_stream_frees_its_sequence() {
    let m = model(1);
    let mut stream = m
        .stream(&request("Write a long story about the sea.", 400))
        .await
        .expect("stream starts");
    for _ in 0..3 {
        stream.next().await.expect("a chunk").expect("no error");
    }
    drop(stream);
    let s = complete(&m, &request("Write a long poem about mountains.", 7)).await;
    assert_eq!(s.usage.output_tokens, 7, "{s:?}");
}

/// `WEFT_LOCAL_SEQUENCES` sets the sequences; a value out of range is a
/// configuration error that says what it expects.
#[test]
fn the_sequences_variable_is_checked() {
    let open = |value: &'static str| {
        LocalModel::open("smollm2-135m", &move |k: &str| {
            if k == weft_local::SEQUENCES_VAR {
                Some(value.to_owned())
            } else {
                std::env::var(k).ok()
            }
        })
    };
    assert_eq!(open("8").map(|m| m.sequences()).ok(), Some(8));
    assert_eq!(model(4).sequences(), 4);
    for bad in ["0", "65", "many"] {
        match open(bad) {
            Err(weft_core::model::ModelError::Config { message }) => {
                assert!(message.contains("WEFT_LOCAL_SEQUENCES"), "{message}");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}
