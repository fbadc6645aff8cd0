//! A user's first test: three replicas on the memory lock under
//! tokio's paused time, the leader crashes, and the failover is timed in
//! virtual time. Written as the testing guide shows it (`docs/guide/testing.md`),
//! with no clock option: paused time must not need one. (A driver reading the boot clock under paused time
//! would measure a failover of over an hour of virtual time: tokio's timers
//! race ahead of it.)

use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use lock_memory::MemoryStore;

/// Spawns three replicas on `rt`, waits for a leader, crashes it, and returns
/// how long (virtual time) until another leads.
async fn failover_after_a_crash(rt: TokioRuntime) -> Duration {
    let store = MemoryStore::new().with_sleeper(tokio::time::sleep);
    let replicas: Vec<Handle> = ["a", "b", "c"]
        .into_iter()
        .map(|id| {
            Builder::new(store.client(id), Config::fast(id))
                .spawn(rt.clone())
                .expect("valid config")
        })
        .collect();
    let leading = |skip: Option<usize>| {
        replicas
            .iter()
            .enumerate()
            .position(|(i, r)| Some(i) != skip && r.is_leader())
    };
    let limit = Duration::from_secs(60);
    let start = tokio::time::Instant::now();
    let first = loop {
        if let Some(i) = leading(None) {
            break i;
        }
        assert!(start.elapsed() < limit, "no leader after {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let crashed = tokio::time::Instant::now();
    replicas[first].abort();
    while leading(Some(first)).is_none() {
        assert!(
            crashed.elapsed() < limit,
            "no failover within {limit:?} of virtual time"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    crashed.elapsed()
}

/// About one lease (2 s with `Config::fast`): the others time the crashed
/// leader's last renew, then take over.
fn assert_about_one_lease(took: Duration) {
    let lease = Config::fast("x").lease_duration;
    assert!(
        took >= lease / 2 && took <= lease * 2,
        "failover took {took:?} of virtual time, expected about one lease ({lease:?})"
    );
}

#[tokio::test(start_paused = true)]
async fn a_paused_time_test_needs_no_clock_option() {
    let rt = TokioRuntime::current().expect("inside tokio");
    assert!(rt.uses_tokio_clock(), "the paused clock is found");
    assert_about_one_lease(failover_after_a_crash(rt).await);
}

#[tokio::test(start_paused = true)]
async fn asking_for_tokios_clock_outright_measures_the_same() {
    let rt = TokioRuntime::current()
        .expect("inside tokio")
        .with_tokio_clock();
    assert_about_one_lease(failover_after_a_crash(rt).await);
}

/// Unpaused, the runtime keeps the suspend-aware boot clock (docs/faults.md
/// N4): only a paused clock switches it.
#[tokio::test]
async fn an_unpaused_runtime_keeps_the_boot_clock() {
    let rt = TokioRuntime::current().expect("inside tokio");
    assert!(!rt.uses_tokio_clock());
}

/// Paused after the runtime started (`tokio::time::pause()`), too.
#[tokio::test]
async fn a_clock_paused_later_is_found_too() {
    tokio::time::pause();
    let rt = TokioRuntime::current().expect("inside tokio");
    assert!(rt.uses_tokio_clock());
}
