//! Prints SSE decode throughput per provider as JSON lines, the same records
//! `weft bench sse-decode` prints.
//!
//! Run: `cargo run --release -p weft-bench --example bench_sse [MB]` (default 50).

use std::io::Write;

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    match weft_bench::sse_decode::bench_sse_decode(
        &weft_bench::sse_decode::default_fixtures_dir(),
        mb * 1_000_000,
    ) {
        Ok(records) => {
            let mut out = std::io::stdout().lock();
            for r in records {
                // A closed pipe (e.g. `| head`) just ends the output.
                if writeln!(out, "{r}").is_err() {
                    return;
                }
            }
        }
        Err(e) => {
            eprintln!("bench failed: {e}");
            std::process::exit(1);
        }
    }
}
