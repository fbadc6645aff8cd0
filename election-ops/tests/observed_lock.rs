//! The monitor's lock wrapper ([`election_ops::ObservedLock`]) keeps what the
//! wrapped lock does (a wrapper forwards every method: docs/design.md §5): it passes
//! `lock-memory`'s wrapper check, and with the monitor and its metrics on, as the
//! `leader-elector` sidecar runs them, the Lease lock still records client-go's
//! leadership Events (`<identity> became leader` / `<identity> stopped leading`)
//! on the Lease.
//!
//! The Lease story is `test_kit::story::three_candidates` (an election, a crash
//! and failover, a graceful handover), over the API emulator with the real `kube`
//! client; its Events are checked by `check_story_events`, as the Lease lock's own
//! story test does without the wrapper.

use std::sync::Arc;
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::{Config, Lock};
use election_driver::Builder;
use election_ops::Monitor;
use election_ops::metrics::Metrics;
use kube_emulator::Emulator;
use lock_lease::LeaseLock;
use prometheus_client::registry::Registry;
use test_kit::story::{check_story_events, three_candidates};

const LEASE: &str = "observed-lease";

#[tokio::test]
async fn observed_lock_forwards_every_lock_method() {
    let monitor = Monitor::new("memory/probe", "probe");
    lock_memory::conformance::check_wrapper(|probe| monitor.lock(probe))
        .await
        .expect("ObservedLock forwards");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observed_lease_lock_records_leadership_events_through_a_handover() {
    let emu = Emulator::start().await.expect("emulator");
    let metrics = Metrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    tokio::time::timeout(
        Duration::from_secs(60),
        three_candidates(
            |id| {
                let config = Config::fast(id).seed(id.len() as u64 + 13);
                let client = lock_kube::lock_client(emu.kube_config(id)).expect("client");
                let lock = LeaseLock::builder(client, "default", LEASE)
                    .build()
                    .expect("valid names");
                let monitor = Monitor::builder(lock.describe(), id)
                    .metrics(&metrics)
                    .build();
                let handle = Builder::new(monitor.lock(lock), config)
                    .spawn(TokioRuntime::current().expect("inside tokio"))
                    .expect("valid config");
                tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
                handle
            },
            |holder| {
                let lease = emu
                    .object(kube_emulator::Resource::Lease, "default", LEASE)
                    .expect("the lease");
                assert_eq!(lease["spec"]["holderIdentity"], holder);
            },
        ),
    )
    .await
    .expect("the story ends within a minute");
    check_story_events(&emu, "default", LEASE).await;
}
