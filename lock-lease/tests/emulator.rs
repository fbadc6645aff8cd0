//! The Lease lock against the project's API emulator: the Kubernetes lock suite
//! (`test_kit::kube_lock`, shared with the ConfigMap lock), each case named after
//! the docs/faults.md row it covers and run on tokio, smol and async-std
//! (`on_tokio::a1_…`, `on_smol::a1_…`, `on_async_std::a1_…`).

mod common;

use common::LeaseSuite;

test_kit::kube_lock_suite!(LeaseSuite);
