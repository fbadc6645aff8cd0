//! The Lease lock against the real kube-apiserver (`test_kit::apiserver`, built
//! from source by `bash testing/k8s-server/build.sh`), through the same code as
//! its emulator tests: the cases of the Kubernetes lock suite that need no
//! injected fault (`test_kit::kube_lock::any_server`), the lock conformance
//! suite, and the three-candidate election story (election, crash failover,
//! graceful handover, the Events it records). One server for the whole test
//! binary, a namespace per test.
//!
//! Ignored in the workspace's test command (they need the built server);
//! `.ci/run` builds it and runs them:
//! `cargo test -p lock-lease --test apiserver -- --ignored`.

mod common;

use adapter_tokio::TokioRuntime;
use common::LeaseSuite;
use test_kit::apiserver::ApiServer;
use test_kit::runtimes::Runtime;

test_kit::kube_lock_suite_on_apiserver!(LeaseSuite);

/// Three candidates on one Lease of kube-apiserver: a leader, its crash and
/// the failover after the lease, a graceful handover, at most one leader at
/// every sample, and the leadership Events stored by the server.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn three_candidates_fail_over_and_hand_over_on_kube_apiserver() {
    Runtime::Tokio.run(|| async {
        let rt = TokioRuntime::current().expect("inside tokio");
        test_kit::kube_lock::election::on_server::<LeaseSuite>(ApiServer::shared(), rt, "election")
            .await;
    });
}
