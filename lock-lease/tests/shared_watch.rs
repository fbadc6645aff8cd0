//! Many Lease elections through one shared watch per process
//! (`lock_kube::SharedWatch`), over the API emulator on tokio: the conformance
//! suite on a shared-watch lock, and the stories of `test_kit::kube_lock::shared`.

mod common;

use adapter_tokio::TokioRuntime;
use common::LeaseSuite;
use test_kit::kube_lock::shared;
use test_kit::runtimes::Runtime;

fn rt() -> TokioRuntime {
    TokioRuntime::current().expect("inside tokio")
}

/// The whole conformance suite, unchanged, on a Lease lock watched through a
/// shared watch (on tokio, on a thread with a large stack: the suite's futures
/// nest deeply in debug builds).
#[test]
fn lease_lock_on_a_shared_watch_passes_the_conformance_suite() {
    Runtime::Tokio.run(test_kit::kube_lock::conformance_shared::<LeaseSuite>);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w1_w2_many_elections_one_watch_per_process() {
    shared::many_elections_one_watch_per_process::<LeaseSuite>(rt()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w1_a_silent_shared_watch_is_listed_afresh() {
    shared::w1_a_silent_shared_watch_is_listed_afresh::<LeaseSuite>(rt()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_falls_behind_ends_and_resumes_where_it_left() {
    shared::a_subscriber_that_falls_behind_ends_and_resumes_where_it_left::<LeaseSuite>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a6_a_refused_shared_watch_backs_off() {
    shared::a6_a_refused_shared_watch_backs_off::<LeaseSuite>().await;
}
