//! weft's benchmarks, behind `weft bench`: each prints JSON lines that
//! anyone can rerun (the README lists the commands). They reach the library
//! crates through their public API only, so no library carries a benchmark.
//!
//! One module per benchmark: [`agent_loop`], [`durable_loop`] (with the
//! store's commit benchmarks in [`store_commit`]), [`serve`], [`stream`],
//! [`mcp`], [`registry`], [`sse_decode`] and, with the `local` feature,
//! [`local_model`] (and its concurrent runs, [`local_concurrent`]); [`all`] runs them in turn. [`heap`], [`rss`], [`cpu`] and
//! [`gate`] are the measuring kit they share.

pub mod agent_loop;
pub mod all;
mod command;
pub mod cpu;
pub mod durable_loop;
pub mod gate;
pub mod heap;
#[cfg(feature = "local")]
pub mod local_concurrent;
#[cfg(feature = "local")]
pub mod local_model;
pub mod mcp;
pub mod registry;
mod registry_raw;
pub mod rss;
pub mod serve;
pub mod sse_decode;
pub mod store_commit;
pub mod stream;

pub use command::BenchCommand;

/// Runs agent `w` once on input "go"; an unsuccessful outcome is an error.
pub(crate) async fn one_run(rt: &weft_runtime::Runtime) -> Result<(), weft_runtime::RuntimeError> {
    let handle = rt
        .start("w", weft_runtime::StartRequest::user("go"))
        .await?;
    match handle.outcome().await? {
        o if o.is_success() => Ok(()),
        _ => Err(weft_runtime::RuntimeError::Interrupted(
            handle.run_id().clone(),
        )),
    }
}

/// Runs `warmup` runs, then runs one after another for at least `seconds`;
/// returns how many measured runs finished and the seconds they took.
pub(crate) async fn runs_for(
    rt: &weft_runtime::Runtime,
    warmup: u32,
    seconds: f64,
) -> Result<(u64, f64), weft_runtime::RuntimeError> {
    for _ in 0..warmup {
        one_run(rt).await?;
    }
    let started = std::time::Instant::now();
    let mut runs = 0u64;
    while started.elapsed() < std::time::Duration::from_secs_f64(seconds) {
        one_run(rt).await?;
        runs += 1;
    }
    Ok((runs, started.elapsed().as_secs_f64()))
}
