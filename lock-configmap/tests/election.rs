//! A three-candidate election on the ConfigMap lock over the API emulator: a leader is
//! elected, crashes, another takes over after the lease; that one hands over
//! gracefully, and a third leads at once. At no sampled instant do two candidates
//! report leadership. The story is `test_kit::kube_lock::election` (shared with
//! the Lease lock), driven by `adapter-tokio`'s runtime on tokio and by
//! `adapter-smol`'s under smol and async-std.
//!
//! The candidates record client-go's Events on the ConfigMap as they start and stop
//! leading; with Events forbidden (docs/faults.md H9) the election goes on as before.

mod common;

use adapter_smol::SmolRuntime;
use adapter_tokio::TokioRuntime;
use common::ConfigMapSuite;
use test_kit::kube_lock::election::{on_any_runtime, on_tokio};
use test_kit::runtimes::Runtime;

fn tokio_runtime() -> TokioRuntime {
    TokioRuntime::current().expect("inside tokio")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_on_tokio() {
    on_tokio::<ConfigMapSuite>(tokio_runtime(), "tokio-election", false).await;
}

/// docs/faults.md H9: with Events forbidden the three-candidate story (election, failover
/// after a crash, graceful handover) runs as it does with Events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h9_events_forbidden_leave_the_election_unchanged_on_tokio() {
    on_tokio::<ConfigMapSuite>(tokio_runtime(), "tokio-no-events", true).await;
}

/// docs/faults.md H9 under smol (`adapter-smol`).
#[test]
fn h9_events_forbidden_leave_the_election_unchanged_on_smol() {
    Runtime::Smol
        .run(|| on_any_runtime::<ConfigMapSuite>(SmolRuntime::new(), "smol-no-events", true));
}

#[test]
fn three_candidates_on_smol() {
    Runtime::Smol
        .run(|| on_any_runtime::<ConfigMapSuite>(SmolRuntime::new(), "smol-election", false));
}

#[test]
fn three_candidates_on_async_std() {
    Runtime::AsyncStd
        .run(|| on_any_runtime::<ConfigMapSuite>(SmolRuntime::new(), "async-std-election", false));
}
