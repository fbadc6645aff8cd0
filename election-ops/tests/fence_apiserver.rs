//! The fencing policy enforced by the real kube-apiserver (`test_kit::apiserver`,
//! built by `bash testing/k8s-server/build.sh`): the generated policy and binding
//! pass its type checking when written, and the cases of `fence_cases` run as on
//! the emulator, with Pod-bound tokens the server issues. Ignored in the
//! workspace run; `.ci/run` runs them.

mod common;
mod fence_cases;

use election_ops::fence::Writer;
use test_kit::apiserver::ApiServer;
use test_kit::runtimes::Runtime;

#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn the_api_server_refuses_writes_not_stamped_with_the_current_term() {
    Runtime::Tokio.run(|| {
        fence_cases::writes_not_stamped_with_the_current_term_are_refused(
            ApiServer::shared(),
            fence_cases::configmaps,
        )
    });
}

#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn the_writer_check_admits_the_holders_pod_only_and_fences_deletes() {
    Runtime::Tokio.run(|| {
        fence_cases::the_writer_check_admits_the_holders_pod_only(
            ApiServer::shared(),
            |ns, lease| fence_cases::configmaps(ns, lease).writer(Writer::PodName),
        )
    });
}

/// A policy that does not compile is refused when written; the generated one
/// is taken.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn the_generated_policy_compiles_where_a_broken_one_is_refused() {
    Runtime::Tokio.run(|| {
        fence_cases::the_generated_policy_compiles_where_a_broken_one_is_refused(
            ApiServer::shared(),
        )
    });
}
