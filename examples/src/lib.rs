//! Runnable examples of the leader-election workspace (no library code of its own).
//!
//! From the repository root:
//! - `cargo run --example demo`: three candidates on the memory lock with the tokio
//!   adapter; a crash of the leader and its failover, then a graceful hand-over,
//!   with a timeline and the measured latencies;
//! - `cargo run --example no_runtime`: an `Elector` driven by plain threads and
//!   `std::thread::sleep`, no async runtime at all;
//! - `cargo run --release --example bench_failover [-- --quick]`: hand-over and
//!   failover latencies on the memory lock, median and p90 over many runs.
//!
//! The helper below formats durations the way the examples print them.
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
