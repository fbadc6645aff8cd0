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
//!   elections on the API emulator, a watch per Lease against one shared watch
//!   (`-- --servers`: the shared watch on the emulator and on kube-apiserver);
//! - `cargo run --example shards`: sixteen shard Leases over replicas that join,
//!   leave and crash (`election-shards`);
//! - `cargo run --release --example bench_coordinated [-- --quick]`: coordinated
//!   against classic election on the API emulator as coordinator;
//! - the library crates' benchmarks and examples that need the test tooling
//!   (here, so that no library imports it): `bench_fence` and `bench_proxy`
//!   (election-ops), `bench_etcd` (lock-etcd), `cargo bench -p examples --bench
//!   lease_requests` (lock-lease), `controller`, `bench_controller` and
//!   `bench_steady` (election-controller), `maintenance` (lease-window).
//!
//! The chaos soak, real sidecar processes against the API emulator under seeded
//! faults, is a test tool of its own: `cargo run -p chaos` (`testing/chaos`).
//!
//! The helpers below format durations the way the examples print them, and
//! measure the process for the benchmarks; the percentile and the CPU model
//! they print are `test_kit::figures`'.
//!
//! ```
//! assert_eq!(examples::millis(std::time::Duration::from_micros(1_500)), "1.500 ms");
//! ```

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

use std::time::Duration;

use test_kit::figures::percentile;

/// The CPU's model name: [`test_kit::figures::cpu_model`], under the name the
/// benchmarks call it by.
pub use test_kit::figures::cpu_model;

/// Another process's CPU time, and the clock ticks it is counted in:
/// [`test_kit::figures`]' (the fleet's benchmarks read them too).
pub use test_kit::figures::{clock_ticks_per_second, process_cpu_ticks};

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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn another_process_cpu_ticks_grow_with_its_work() {
        let pid = std::process::id();
        let before = super::process_cpu_ticks(pid).expect("this process's /proc/<pid>/stat");
        // Work 300 ms of CPU, by this process's own clock.
        let start = super::cpu_time();
        let mut x = 0_u64;
        while super::cpu_time() - start < Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = super::process_cpu_ticks(pid).expect("still readable");
        let secs = (after - before) as f64 / super::clock_ticks_per_second() as f64;
        // The kernel's ticks are coarse (10 ms at 100 Hz): well above 0.2 s.
        assert!(secs >= 0.2, "300 ms of CPU read as {secs} s");
        assert_eq!(super::process_cpu_ticks(u32::MAX), None, "no such process");
    }
}
