//! A three-candidate election on the Lease lock over the API emulator: a leader is
//! elected, crashes, another takes over after the lease; that one hands over
//! gracefully, and a third leads at once. At no sampled instant do two candidates
//! report leadership. The story is `test_kit::kube_lock::election` (shared with
//! the ConfigMap lock), driven by `adapter-tokio`'s runtime on tokio and by
//! `adapter-smol`'s under smol and async-std.
//!
//! The candidates record client-go's Events on the Lease as they start and stop
//! leading; with Events forbidden (docs/faults.md H9) the election goes on as before.

mod common;

use adapter_smol::SmolRuntime;
use adapter_tokio::TokioRuntime;
use common::LeaseSuite;
use test_kit::kube_lock::election::{on_any_runtime, on_tokio};
use test_kit::runtimes::Runtime;

fn tokio_runtime() -> TokioRuntime {
    TokioRuntime::current().expect("inside tokio")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_on_tokio() {
    on_tokio::<LeaseSuite>(tokio_runtime(), "tokio-election", false).await;
}

/// docs/faults.md H9: with Events forbidden the three-candidate story (election, failover
/// after a crash, graceful handover) runs as it does with Events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h9_events_forbidden_leave_the_election_unchanged_on_tokio() {
    on_tokio::<LeaseSuite>(tokio_runtime(), "tokio-no-events", true).await;
}

/// docs/faults.md H9 under smol (`adapter-smol`).
#[test]
fn h9_events_forbidden_leave_the_election_unchanged_on_smol() {
    Runtime::Smol.run(|| on_any_runtime::<LeaseSuite>(SmolRuntime::new(), "smol-no-events", true));
}

#[test]
fn three_candidates_on_smol() {
    Runtime::Smol.run(|| on_any_runtime::<LeaseSuite>(SmolRuntime::new(), "smol-election", false));
}

#[test]
fn three_candidates_on_async_std() {
    Runtime::AsyncStd
        .run(|| on_any_runtime::<LeaseSuite>(SmolRuntime::new(), "async-std-election", false));
}

/// docs/faults.md A4: the Lease deleted under a leader whose requests
/// get 429, beside a candidate that leads at once on its create: no overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a4_deletion_under_429_in_a_mixed_fleet_stops_the_leader_at_once() {
    test_kit::kube_lock::election::a4_deletion_under_429_in_a_mixed_fleet_stops_the_leader_at_once::<
        LeaseSuite,
    >(tokio_runtime())
    .await;
}
