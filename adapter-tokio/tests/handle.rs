//! The tokio handle's own surface: the watch of states, leader work with a
//! `CancellationToken`, typed errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use adapter_tokio::{Builder, CancellationToken, TokioRuntime};
use election_core::{Config, ConfigError, Role};
use election_driver::{Change, DriverError};
use lock_memory::MemoryStore;

fn store() -> MemoryStore {
    MemoryStore::new().with_sleeper(tokio::time::sleep)
}

/// The watch shows the start with its term; the work gets a live token that is
/// cancelled on step-down; after it the node follows, and shutdown releases.
#[tokio::test(start_paused = true)]
async fn watch_and_token_follow_leadership() {
    let store = store();
    let cancelled = Arc::new(AtomicU32::new(0));
    let c = cancelled.clone();
    let h = Builder::new(store.client("a"), Config::fast("a"))
        .runtime(TokioRuntime::current().unwrap().with_tokio_clock())
        .leader_work(move |_term, token: CancellationToken| {
            let c = c.clone();
            async move {
                token.cancelled().await;
                c.fetch_add(1, Ordering::SeqCst);
            }
        })
        .spawn()
        .unwrap();
    let mut rx = h.watch();
    let term = loop {
        rx.changed().await.unwrap();
        if let Change::StartedLeading { term } = rx.borrow_and_update().change.clone() {
            break term;
        }
    };
    assert!(h.is_leader());
    assert_eq!(h.term(), Some(term));
    assert_eq!(h.leader().as_deref(), Some("a"));
    assert!(h.deadline().is_some_and(|d| d > h.now()));
    h.step_down().await;
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        1,
        "work cancelled exactly once"
    );
    assert!(!h.is_leader());
    assert_eq!(h.term(), None);
    assert_eq!(h.watch().borrow().role, Role::Follower);
    h.shutdown().await;
    assert!(matches!(rx.borrow().change, Change::Terminated));
    assert_eq!(
        store.current().map(|o| o.record.holder.is_empty()),
        Some(true)
    );
}

/// An invalid configuration is a typed error naming the rule, not a panic.
#[tokio::test]
async fn invalid_configuration_is_a_typed_error() {
    let store = store();
    let err = Builder::new(store.client("a"), Config::fast(""))
        .spawn()
        .unwrap_err();
    assert_eq!(err, DriverError::Config(ConfigError::EmptyIdentity));
}

/// Outside a tokio runtime `spawn` fails with a typed error instead of panicking.
#[test]
fn spawn_outside_a_runtime_is_a_typed_error() {
    let store = MemoryStore::new();
    let err = Builder::new(store.client("a"), Config::fast("a"))
        .spawn()
        .unwrap_err();
    assert!(matches!(err, DriverError::Spawn(_)), "{err:?}");
}

/// A tokio runtime built without its time driver is refused at spawn with a typed
/// error naming the cause, instead of the driver's task panicking at its first timer.
#[test]
fn spawn_on_a_runtime_without_timers_is_a_typed_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let store = MemoryStore::new();
    let err = rt.block_on(async {
        Builder::new(store.client("a"), Config::fast("a"))
            .spawn()
            .unwrap_err()
    });
    assert!(
        matches!(&err, DriverError::Spawn(m) if m.contains("time driver")),
        "{err:?}"
    );
    assert!(rt.block_on(async { TokioRuntime::current() }).is_err());
    // The same with timers enabled starts.
    let timed = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let handle = timed.block_on(async {
        Builder::new(store.client("a"), Config::fast("a"))
            .spawn()
            .expect("a runtime with timers")
    });
    drop(handle);
}
