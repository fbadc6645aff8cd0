//! Runnable examples of the leader-election workspace (the library holds only their helpers).
//!
//! From the repository root (the README's first command, `cargo run -p demo`,
//! is a package of its own, `examples/demo`, so that it builds little):
//! - `cargo run --example no_runtime`: an `Elector` driven by plain threads and
//!   `std::thread::sleep`, no async runtime at all;
//! - `cargo run --release --example bench_failover [-- --quick]`: hand-over and
//!   failover latencies on the memory lock, median and p90 over many runs;
//! - `cargo run --release --example bench_many [-- --quick]`: many elections in
//!   one process on the memory lock;
//! - `cargo run --release --example bench_shared_watch [-- --quick]`: many Lease
//!   elections on the API emulator, a watch per Lease against one shared watch;
//! - `cargo run --example shards`: sixteen shard Leases over replicas that join,
//!   leave and crash (`election-shards`);
//! - `cargo run --release --example bench_coordinated [-- --quick]`: coordinated
//!   against classic election on the API emulator as coordinator;
//! - `cargo run --release --example chaos -- --minutes N [--seed S]`: a chaos
//!   soak, real sidecar processes against the API emulator under seeded faults,
//!   with overlap, leaderless time and failover figures (`--quick`: 60 s).
//!
//! The helpers below format durations the way the examples print them, and
//! measure the process for the benchmarks.
//!
//! ```
//! assert_eq!(examples::millis(std::time::Duration::from_micros(1_500)), "1.500 ms");
//! ```

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

use std::time::Duration;

/// A duration as milliseconds with three decimals.
pub fn millis(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// This process's resident set size in bytes (`/proc/self/statm`, 4 KiB pages;
/// 0 where it cannot be read).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The CPU time of this process, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The `p` quantile (0 to 1) of `sorted`, by the nearest rank.
///
/// # Panics
///
/// If `sorted` is empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Prints one line of a latency benchmark: `what`, the number of runs, the
/// median, p90, min and max of `xs` (milliseconds), and how many runs failed.
pub fn report_ms(what: &str, mut xs: Vec<f64>, failed: usize) {
    if xs.is_empty() {
        println!("{what:<62} no successful runs ({failed} failed)");
        return;
    }
    xs.sort_by(f64::total_cmp);
    let failed = if failed > 0 {
        format!("  ({failed} runs failed)")
    } else {
        String::new()
    };
    println!(
        "{what:<62} n={:<3} median {:>8.3} ms  p90 {:>8.3} ms  min {:>8.3}  max {:>8.3}{failed}",
        xs.len(),
        percentile(&xs, 0.5),
        percentile(&xs, 0.9),
        xs[0],
        xs[xs.len() - 1],
    );
}

/// The CPU's model name, from `/proc/cpuinfo` (`"unknown"` elsewhere).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}
