//! The lock conformance suite of `lock-memory`, run against the Lease lock over the
//! API emulator, under tokio, smol and async-std.

mod common;

use common::LeaseSuite;

/// The whole suite (`test_kit::kube_lock::conformance`).
async fn lease_lock_passes_the_conformance_suite() {
    test_kit::kube_lock::conformance::<LeaseSuite>().await;
}

test_kit::runtime_tests!(lease_lock_passes_the_conformance_suite);
