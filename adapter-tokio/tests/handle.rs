//! What tokio adds to the driver's builder and handle: the watch of states, leader
//! work with a `CancellationToken`, typed errors from `TokioRuntime::current`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use adapter_tokio::{CancellationToken, TokioRuntime, state_watch, token_work};
use election_core::Event;
use election_core::{Config, ConfigError, Layer, Layered, Lock, Role};
use election_driver::{Builder, Change, DriverError};
use lock_memory::{MemoryLock, MemoryStore};

fn store() -> MemoryStore {
    MemoryStore::new().with_sleeper(tokio::time::sleep)
}

fn paused() -> TokioRuntime {
    TokioRuntime::current()
        .expect("inside a tokio runtime")
        .with_tokio_clock()
}

/// The watch shows the start with its term; the work gets a live token that is
/// cancelled on step-down; after it the node follows, and shutdown releases.
#[tokio::test(start_paused = true)]
async fn watch_and_token_follow_leadership() {
    let store = store();
    let cancelled = Arc::new(AtomicU32::new(0));
    let c = cancelled.clone();
    let config = Config::fast("a");
    let (hook, mut rx) = state_watch(&config);
    let h = Builder::new(store.client("a"), config)
        .on_state(hook)
        .custom_leader_work(token_work(move |_term, token: CancellationToken| {
            let c = c.clone();
            async move {
                token.cancelled().await;
                c.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .spawn(paused())
        .unwrap();
    let term = loop {
        rx.changed().await.unwrap();
        if let Change::Elector(Event::StartedLeading { term }) =
            rx.borrow_and_update().change.clone()
        {
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
    assert_eq!(rx.borrow().role, Role::Follower);
    h.shutdown().await;
    assert!(matches!(
        rx.borrow().change,
        Change::Elector(Event::Terminated)
    ));
    assert_eq!(
        store.current().map(|o| o.record.holder.is_empty()),
        Some(true)
    );
}

/// A hook of one's own and the watch both see the states, in order, and the
/// closure work gets the driver's signal on tokio.
#[tokio::test(start_paused = true)]
async fn a_hook_of_ones_own_and_the_watch_both_see_the_states() {
    let store = store();
    let config = Config::fast("a");
    let (watch_hook, rx) = state_watch(&config);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let h = Builder::new(store.client("a"), config)
        .on_state(move |state| s.lock().unwrap().push(state.change.clone()))
        .on_state(watch_hook)
        .leader_work(|_term, cancel| async move { cancel.cancelled().await })
        .spawn(paused())
        .unwrap();
    let mut states = rx.clone();
    states
        .wait_for(|s| s.leading())
        .await
        .expect("the driver runs");
    h.shutdown().await;
    let seen = seen.lock().unwrap().clone();
    assert!(matches!(seen.first(), Some(Change::Started)), "{seen:?}");
    assert!(
        matches!(seen.last(), Some(Change::Elector(Event::Terminated))),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|c| matches!(c, Change::Elector(Event::StartedLeading { .. }))),
        "{seen:?}"
    );
    assert_eq!(
        rx.borrow().change,
        Change::Elector(Event::Terminated),
        "the watch's last"
    );
}

/// An invalid configuration is a typed error naming the rule, not a panic.
#[tokio::test]
async fn invalid_configuration_is_a_typed_error() {
    let store = store();
    let err = Builder::new(store.client("a"), Config::fast(""))
        .spawn(TokioRuntime::current().unwrap())
        .unwrap_err();
    assert_eq!(err, DriverError::Config(ConfigError::EmptyIdentity));
}

/// Outside a tokio runtime there is no runtime to spawn on: a typed error
/// instead of a panic.
#[test]
fn spawn_outside_a_runtime_is_a_typed_error() {
    let err = TokioRuntime::current().unwrap_err();
    assert!(matches!(err, DriverError::Spawn(_)), "{err:?}");
}

/// A tokio runtime built without its time driver is refused with a typed error
/// naming the cause, instead of the driver's task panicking at its first timer.
#[test]
fn spawn_on_a_runtime_without_timers_is_a_typed_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let err = rt.block_on(async { TokioRuntime::current() }).unwrap_err();
    assert!(
        matches!(&err, DriverError::Spawn(m) if m.contains("time driver")),
        "{err:?}"
    );
    // The same with timers enabled starts.
    let timed = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let store = MemoryStore::new();
    let handle = timed.block_on(async {
        Builder::new(store.client("a"), Config::fast("a"))
            .spawn(TokioRuntime::current().expect("a runtime with timers"))
            .expect("a valid configuration")
    });
    drop(handle);
}

/// Notes the configurations the lock is handed.
struct Configured(Arc<Mutex<Vec<Config>>>);

impl Layer<MemoryLock> for Configured {
    fn configure(&self, inner: &MemoryLock, config: &Config) {
        self.0.lock().unwrap().push(config.clone());
        inner.configure(config);
    }
}

/// Timeouts are set once, in the `Config`: the driver hands it to the lock when
/// it starts, once, and not for a configuration it refuses.
#[tokio::test(start_paused = true)]
async fn the_driver_hands_its_configuration_to_the_lock() {
    let store = store();
    let told = Arc::new(Mutex::new(Vec::new()));
    let lock =
        |told: &Arc<Mutex<Vec<Config>>>| Layered::new(store.client("a"), Configured(told.clone()));
    let mut config = Config::fast("a");
    config.request_timeout = std::time::Duration::from_millis(700);
    let h = Builder::new(lock(&told), config.clone())
        .spawn(paused())
        .unwrap();
    assert_eq!(
        *told.lock().unwrap(),
        [config],
        "told once, before any call"
    );
    h.shutdown().await;

    let refused = Arc::new(Mutex::new(Vec::new()));
    let err = Builder::new(lock(&refused), Config::fast(""))
        .spawn(paused())
        .unwrap_err();
    assert_eq!(err, DriverError::Config(ConfigError::EmptyIdentity));
    assert!(
        refused.lock().unwrap().is_empty(),
        "an invalid configuration is not handed over"
    );
}
