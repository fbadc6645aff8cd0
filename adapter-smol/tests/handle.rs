//! The driver's builder and handle on smol: the stream of states, leader work
//! with a `CancelSignal`, typed errors; under smol and under async-std.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use adapter_smol::SmolRuntime;
use election_core::Event;
use election_core::{Config, ConfigError, StopReason};
use election_driver::{Builder, CancelSignal, Change, DriverError};
use futures_lite::StreamExt;
use lock_memory::MemoryStore;

async fn stream_and_signal_follow_leadership() {
    let store = MemoryStore::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    let c = cancelled.clone();
    let h = Builder::new(store.client("a"), Config::fast("a"))
        .leader_work(move |_term, signal: CancelSignal| {
            let c = c.clone();
            async move {
                signal.cancelled().await;
                c.store(true, Ordering::SeqCst);
            }
        })
        .spawn(SmolRuntime::new())
        .unwrap();
    let mut states = h.states();
    // The first election on a fresh lock waits one lease (strict lock delay).
    let term = loop {
        let s = states.next().await.expect("the stream runs until shutdown");
        if let Change::Elector(Event::StartedLeading { term }) = s.change {
            break term;
        }
    };
    assert!(h.is_leader());
    assert_eq!(h.term(), Some(term));
    let mut stopped = None;
    let shutdown = h.shutdown();
    let collect = async {
        while let Some(s) = states.next().await {
            if let Change::Elector(Event::StoppedLeading { reason, .. }) = s.change {
                stopped = Some(reason);
            }
        }
    };
    futures_lite::future::zip(shutdown, collect).await;
    assert!(cancelled.load(Ordering::SeqCst), "the work was cancelled");
    assert_eq!(stopped, Some(StopReason::ShutDown));
    assert_eq!(
        store.current().map(|o| o.record.holder.is_empty()),
        Some(true)
    );
}

#[test]
fn stream_and_signal_follow_leadership_on_smol() {
    smol::block_on(stream_and_signal_follow_leadership());
}

#[test]
fn stream_and_signal_follow_leadership_on_async_std() {
    async_std::task::block_on(stream_and_signal_follow_leadership());
}

/// An invalid configuration is a typed error naming the rule, not a panic.
#[test]
fn invalid_configuration_is_a_typed_error() {
    let store = MemoryStore::new();
    let mut config = Config::fast("a");
    config.retry_period = std::time::Duration::ZERO;
    let err = Builder::new(store.client("a"), config)
        .spawn(SmolRuntime::new())
        .unwrap_err();
    assert_eq!(
        err,
        DriverError::Config(ConfigError::NotPositive("retry_period"))
    );
}
