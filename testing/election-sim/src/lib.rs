//! A deterministic cluster simulator for `election-core`.
//!
//! N electors share a simulated compare-and-swap store over a network whose
//! messages are delayed, lost, duplicated and reordered; nodes pause, crash,
//! restart, step down, shut down and get partitioned; the lock is deleted and
//! edited by hand; each node's clock runs at its own rate. A virtual real-time
//! clock jumps to the next thing that happens, so a run of minutes takes
//! milliseconds. Everything is drawn from one seed: a failing seed replays
//! exactly with the command it prints (`cargo run -p election-sim -- --seed N
//! --faults B --clock-ratio R --write-mode M --coordinated B --lease-factors
//! K,K,.. --fleet-lease B --trace`). In some runs the nodes run with different lease lengths
//! ([`SimOptions::lease_factors`], FAULTS R14).
//!
//! After every step the [`Checker`] verifies: at most one node with `is_leader`
//! true at any real instant; terms only grow (since the lock was last deleted);
//! start and stop strictly paired; a release only after the stop, and only over a
//! record naming the releaser; in a coordinated run (a coordinator among the
//! actors, [`SimOptions::coordinated`]), a candidate writes only over a record
//! naming it. At the end: a leader within
//! [`SimOptions::liveness_bound`] of the faults healing, and no leader change in a
//! fault-free run.
//!
//! ```
//! use election_sim::{run_seed, SimOptions};
//!
//! let report = run_seed(42, SimOptions::for_seed(42)).expect("no violation");
//! assert!(report.starts >= 1);
//! ```

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod checker;
mod plan;
mod rng;
mod store;
mod world;

pub use checker::{Checker, Violation};
pub use plan::{Cut, Fault, MessageFaults, SimOptions, WatchUse};
pub use rng::SimRng;
pub use store::{AppliedWrite, Store, WriteMode};
pub use world::{Report, World};

/// A failed run: the violation, the seed, the options, and the trace when tracing.
#[derive(Debug)]
pub struct Failure {
    /// The seed that fails.
    pub seed: u64,
    /// The options it ran with (a test may have changed those the seed draws).
    pub opts: Box<SimOptions>,
    /// What broke.
    pub violation: Violation,
    /// The run's trace, if it was kept.
    pub trace: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {} failed: {}\n  replay: cargo run -p election-sim -- {} --trace",
            self.seed,
            self.violation,
            replay_args(self.seed, &self.opts)
        )
    }
}

/// The command-line options that replay `seed` with `opts`: the seed, and every
/// option a test may change from what the seed draws (`faults`, `clock_ratio`,
/// `write_mode`, `coordinated`, `lease_factors`, `fleet_lease`), so that the replay runs exactly
/// the failing scenario.
pub fn replay_args(seed: u64, opts: &SimOptions) -> String {
    let mode = match opts.write_mode {
        WriteMode::CompareAndSwap => "cas",
        WriteMode::Blind => "blind",
    };
    let factors: Vec<String> = opts.lease_factors.iter().map(u32::to_string).collect();
    format!(
        "--seed {seed} --faults {} --clock-ratio {:?} --write-mode {mode} --coordinated {} \
         --lease-factors {} --fleet-lease {}",
        opts.faults,
        opts.clock_ratio,
        opts.coordinated,
        factors.join(","),
        opts.fleet_lease
    )
}

/// Runs one seed with the given options.
pub fn run_seed(seed: u64, opts: SimOptions) -> Result<Report, Failure> {
    match World::new(seed, opts.clone()).run() {
        Ok((report, _)) => Ok(report),
        Err((violation, trace)) => Err(Failure {
            seed,
            opts: Box::new(opts),
            violation,
            trace,
        }),
    }
}
