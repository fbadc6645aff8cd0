//! The lock conformance suite of `lock-memory`, run against the ConfigMap lock over
//! the API emulator, under tokio, smol and async-std.

mod common;

use common::ConfigMapSuite;

/// The whole suite (`test_kit::kube_lock::conformance`).
async fn configmap_lock_passes_the_conformance_suite() {
    test_kit::kube_lock::conformance::<ConfigMapSuite>().await;
}

test_kit::runtime_tests!(configmap_lock_passes_the_conformance_suite);
