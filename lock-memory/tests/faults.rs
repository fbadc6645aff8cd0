//! The faults themselves: seeded, reproducible, and doing what they say.
//! Time-dependent tests run on tokio's paused clock through the pluggable sleeper.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use election_core::{Lock, LockError, LockRecord, OpKind, Stamp, WatchEvent};
use futures_lite::StreamExt;
use futures_lite::future::block_on;
use lock_memory::{Delay, Fault, FaultError, Faults, MemoryStore, PartitionMode, WriteKind};
use tokio::time::{Instant, timeout};

fn record(holder: &str) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        renew_time: Stamp::Now,
        ..LockRecord::default()
    }
}

/// A store that waits out latency on tokio's (paused) clock.
fn tokio_store(seed: u64) -> MemoryStore {
    MemoryStore::with_seed(seed).with_sleeper(tokio::time::sleep)
}

#[tokio::test(start_paused = true)]
async fn a10_lost_answer_leaves_the_write_applied() {
    let store = tokio_store(1);
    let a = store.client("a");
    store.faults("a").inject(Fault::AnswerLost);
    let answer = a.create(&record("a")).await;
    assert!(
        matches!(answer, Err(LockError::Unknown { .. })),
        "{answer:?}"
    );
    let now = store.current().expect("the create was applied");
    assert_eq!(&*now.record.holder, "a");
    let log = store.write_log();
    assert_eq!(log.len(), 1);
    assert_eq!((&*log[0].client, log[0].kind), ("a", WriteKind::Create));
    // A retry of the create now meets the lock it made itself.
    assert_eq!(a.create(&record("a")).await, Err(LockError::AlreadyExists));
}

#[tokio::test(start_paused = true)]
async fn n8_answers_lost_at_random_still_land() {
    let store = tokio_store(2);
    let a = store.client("a");
    store
        .faults("a")
        .set(Faults::none().lost_answers(1.0))
        .unwrap();
    for _ in 0..3 {
        let got = a.get().await;
        assert!(got.unwrap_err().outcome_unknown());
    }
    let _ = a.create(&record("a")).await.unwrap_err();
    let v = store.current().unwrap().version;
    assert!(
        a.update(&v, &record("a"))
            .await
            .unwrap_err()
            .outcome_unknown()
    );
    assert_eq!(store.last_version(), 2, "both writes landed");
    assert_eq!(store.calls("a").requests(), 5);
}

#[tokio::test(start_paused = true)]
async fn a12_partition_refuses_and_heals() {
    let store = tokio_store(3);
    let (a, b) = (store.client("a"), store.client("b"));
    b.create(&record("b")).await.unwrap();
    store.partition("a");
    let refused = a.get().await;
    assert!(
        matches!(&refused, Err(LockError::Transient { message, .. }) if message.contains("connection refused")),
        "{refused:?}"
    );
    assert!(b.get().await.is_ok(), "the partition is per client");
    assert_eq!(store.last_version(), 1);
    store.heal("a");
    assert_eq!(a.get().await.unwrap(), store.current().unwrap());
}

#[tokio::test(start_paused = true)]
async fn n7_black_hole_partition_hangs_until_healed() {
    let store = tokio_store(4);
    let a = store.client("a");
    store.partition_with("a", PartitionMode::Hang);
    let hung = timeout(Duration::from_secs(60), a.create(&record("a"))).await;
    assert!(hung.is_err(), "a call into a black hole never answers");
    assert_eq!(store.current(), None, "and was not applied");
    store.heal("a");
    assert!(a.create(&record("a")).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a14_hang_never_answers_and_is_not_applied() {
    let store = tokio_store(5);
    let a = store.client("a");
    store.faults("a").inject(Fault::Hang);
    let t0 = Instant::now();
    let hung = timeout(Duration::from_secs(3600), a.create(&record("a"))).await;
    assert!(hung.is_err());
    assert_eq!(t0.elapsed(), Duration::from_secs(3600));
    assert_eq!(store.current(), None);
    // The fault was one-shot.
    assert!(a.create(&record("a")).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a16_hang_after_apply_lands_but_never_answers() {
    let store = tokio_store(6);
    let a = store.client("a");
    store
        .faults("a")
        .inject_for(OpKind::Create, Fault::HangAfterCommit);
    assert!(
        a.get().await.is_err_and(|e| e == LockError::NotFound),
        "gets pass the fault by"
    );
    assert!(
        timeout(Duration::from_secs(60), a.create(&record("a")))
            .await
            .is_err()
    );
    assert_eq!(&*store.current().unwrap().record.holder, "a");
}

#[tokio::test(start_paused = true)]
async fn a13_partition_during_the_response_loses_the_answer() {
    let store = tokio_store(7);
    let a = store.client("a");
    let plan = Faults::none().latency(Delay::NONE, Delay::fixed(Duration::from_secs(2)));
    store.faults("a").set(plan).unwrap();
    let call = tokio::spawn({
        let a = a.clone();
        async move { a.create(&record("a")).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        store.current().is_some(),
        "applied before the response delay"
    );
    store.partition("a");
    let answer = call.await.unwrap();
    assert!(answer.unwrap_err().outcome_unknown());
}

#[tokio::test(start_paused = true)]
async fn latency_is_waited_out_through_the_pluggable_sleeper() {
    let store = tokio_store(8);
    let a = store.client("a");
    let plan = Faults::none().latency(
        Delay::fixed(Duration::from_secs(3)),
        Delay::fixed(Duration::from_secs(2)),
    );
    store.faults("a").set(plan).unwrap();
    let t0 = Instant::now();
    a.create(&record("a")).await.unwrap();
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(5),
        "3 s there and 2 s back, in paused time"
    );

    // A custom sleeper sees every wait, and nothing waits when there is no latency.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let store = MemoryStore::with_seed(8).with_sleeper({
        let seen = seen.clone();
        move |d| {
            seen.lock().unwrap().push(d);
            std::future::ready(())
        }
    });
    let b = store.client("b");
    futures_lite::future::block_on(b.get()).unwrap_err();
    assert!(seen.lock().unwrap().is_empty());
    let range = Delay::between(Duration::from_millis(10), Duration::from_millis(20));
    store
        .faults("b")
        .set(Faults::none().latency(range, Delay::NONE))
        .unwrap();
    futures_lite::future::block_on(b.get()).unwrap_err();
    let waits = seen.lock().unwrap().clone();
    assert_eq!(waits.len(), 1);
    assert!(waits[0] >= range.min && waits[0] <= range.max, "{waits:?}");
}

#[tokio::test(start_paused = true)]
async fn a15_slow_request_lands_late() {
    let store = tokio_store(9);
    let (a, b) = (store.client("a"), store.client("b"));
    let v1 = b.create(&record("b")).await.unwrap();
    store
        .faults("a")
        .inject(Fault::Delay(Duration::from_secs(20)));
    let slow = tokio::spawn({
        let a = a.clone();
        let v = v1.version.clone();
        async move { a.update(&v, &record("a")).await }
    });
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        store.current(),
        Some(v1.clone()),
        "not applied while in flight"
    );
    let v2 = b.update(&v1.version, &record("b")).await.unwrap();
    assert_eq!(
        slow.await.unwrap(),
        Err(LockError::Conflict),
        "the late write is still a CAS"
    );
    assert_eq!(store.current(), Some(v2));
}

#[test]
fn every_error_class_can_be_injected() {
    let store = MemoryStore::with_seed(10);
    let a = store.client("a");
    let classes = Faults::default_errors();
    for e in &classes {
        store
            .faults("a")
            .set(Faults::none().errors(1.0, vec![e.clone()]))
            .unwrap();
        assert_eq!(
            futures_lite::future::block_on(a.create(&record("a"))).as_ref(),
            Err(e)
        );
    }
    assert_eq!(store.current(), None, "failed calls are not applied");
    // The retry-after of a transient error survives.
    assert!(classes.iter().any(|e| matches!(
        e,
        LockError::Transient { retry_after: Some(d), .. } if *d == Duration::from_secs(1)
    )));
    // Semantic errors too, one-shot.
    store.faults("a").clear();
    store.faults("a").inject(Fault::Error(LockError::Conflict));
    assert_eq!(
        futures_lite::future::block_on(a.get()),
        Err(LockError::Conflict)
    );
    assert_eq!(
        futures_lite::future::block_on(a.get()),
        Err(LockError::NotFound)
    );
}

/// Runs a fixed script of calls against a faulty client and returns the answers.
fn script(seed: u64) -> Vec<Result<String, LockError>> {
    let store = MemoryStore::with_seed(seed);
    let a = store.client("a");
    let plan = Faults::none().errors(0.3, vec![]).lost_answers(0.3);
    store.faults("a").set(plan).unwrap();
    (0..40)
        .map(|i| {
            let r = futures_lite::future::block_on(async {
                match store.current() {
                    None => a.create(&record("a")).await,
                    Some(obs) if i % 3 == 0 => a.get().await.map(|_| obs),
                    Some(obs) => a.update(&obs.version, &record("a")).await,
                }
            });
            r.map(|obs| obs.version.to_string())
        })
        .collect()
}

#[test]
fn the_same_seed_replays_the_same_faults() {
    let first = script(11);
    assert_eq!(first, script(11));
    assert!(first.iter().any(Result::is_err) && first.iter().any(Result::is_ok));
    assert_ne!(first, script(12), "another seed draws other faults");
}

#[test]
fn bad_fault_plans_are_refused_with_a_typed_error() {
    let store = MemoryStore::new();
    let keep = Faults::none().hangs(0.5);
    store.faults("a").set(keep.clone()).unwrap();
    let bad = store.faults("a").set(Faults::none().lost_answers(-0.1));
    assert!(matches!(
        bad,
        Err(FaultError::Probability {
            name: "lost_answer_probability",
            ..
        })
    ));
    assert_eq!(store.faults("a").get(), keep, "the old plan stays");
}

#[tokio::test(start_paused = true)]
async fn w1_broken_watch_ends_and_resumes_from_its_last_version() {
    let store = tokio_store(13);
    let (a, b) = (store.client("a"), store.client("b"));
    let v1 = a.create(&record("a")).await.unwrap();
    let mut watch = b.watch(None).unwrap();
    assert_eq!(
        watch.next().await,
        Some(Ok(WatchEvent::Changed(v1.clone())))
    );
    store.faults("b").break_watches();
    assert_eq!(watch.next().await, None, "a broken watch ends");
    // Changes made while b had no watch are replayed on resumption.
    let v2 = a.update(&v1.version, &record("a")).await.unwrap();
    let v3 = a.update(&v2.version, &record("a")).await.unwrap();
    let mut resumed = b.watch(Some(&v1.version)).unwrap();
    assert_eq!(resumed.next().await, Some(Ok(WatchEvent::Changed(v2))));
    assert_eq!(resumed.next().await, Some(Ok(WatchEvent::Changed(v3))));
    // Other clients' watches are not broken.
    let mut other = a.watch(None).unwrap();
    store.faults("b").break_watches();
    assert!(other.next().await.is_some());
}

#[tokio::test(start_paused = true)]
async fn w1_watches_break_at_random_when_told() {
    let store = tokio_store(14);
    let (a, b) = (store.client("a"), store.client("b"));
    let v1 = a.create(&record("a")).await.unwrap();
    store
        .faults("b")
        .set(Faults::none().watch_breaks(1.0))
        .unwrap();
    let mut watch = b.watch(Some(&v1.version)).unwrap();
    a.update(&v1.version, &record("a")).await.unwrap();
    assert_eq!(
        watch.next().await,
        None,
        "the change is not delivered: the watch breaks"
    );
}

#[tokio::test(start_paused = true)]
async fn n7_partitions_end_or_silence_watches() {
    let store = tokio_store(15);
    let (a, b) = (store.client("a"), store.client("b"));
    let v1 = a.create(&record("a")).await.unwrap();

    let mut refused = b.watch(Some(&v1.version)).unwrap();
    store.partition("b");
    assert_eq!(refused.next().await, None, "a refused client's watch ends");
    let mut again = b.watch(Some(&v1.version)).unwrap();
    assert!(matches!(
        again.next().await,
        Some(Err(LockError::Transient { .. }))
    ));
    assert_eq!(again.next().await, None);
    store.heal("b");

    let mut silenced = b.watch(Some(&v1.version)).unwrap();
    store.partition_with("b", PartitionMode::Hang);
    a.update(&v1.version, &record("a")).await.unwrap();
    assert!(
        timeout(Duration::from_secs(60), silenced.next())
            .await
            .is_err()
    );
    store.heal("b");
    a.update(&store.current().unwrap().version, &record("a"))
        .await
        .unwrap();
    assert!(
        timeout(Duration::from_secs(60), silenced.next())
            .await
            .is_err(),
        "a black-holed watch stays dead after the heal"
    );
}

#[test]
fn blocking_calls_turn_a_hang_into_unknown_after_their_timeout() {
    let store = MemoryStore::new();
    let a = store
        .client("a")
        .with_blocking_timeout(Duration::from_millis(20));
    store.faults("a").inject(Fault::Hang);
    let got = a.blocking_create(&record("a"));
    assert!(got.unwrap_err().outcome_unknown());
    assert_eq!(store.current(), None);
    store.partition("a");
    assert!(matches!(a.blocking_get(), Err(LockError::Transient { .. })));
    store.heal("a");
    store.faults("a").inject(Fault::AnswerLost);
    assert!(
        a.blocking_create(&record("a"))
            .unwrap_err()
            .outcome_unknown()
    );
    assert!(a.blocking_get().is_ok());
}

#[test]
fn w3_a_stale_read_serves_the_previous_version_and_a_cas_on_it_conflicts() {
    let store = MemoryStore::new();
    let (a, b) = (store.client("a"), store.client("b"));
    assert_eq!(
        store.faults("b").set(Faults::none().stale_reads(1.0)),
        Ok(())
    );
    assert_eq!(
        block_on(b.get()),
        Err(LockError::NotFound),
        "nothing to be stale about"
    );
    let v1 = block_on(a.create(&record("a"))).unwrap();
    assert_eq!(
        block_on(b.get()),
        Ok(v1.clone()),
        "no previous version: the current one"
    );
    let v2 = block_on(a.update(&v1.version, &record("a"))).unwrap();
    assert_eq!(
        block_on(b.get()),
        Ok(v1.clone()),
        "served one version behind"
    );
    assert_eq!(
        block_on(b.update(&v1.version, &record("b"))),
        Err(LockError::Conflict)
    );
    assert_eq!(store.current(), Some(v2.clone()));
    store.delete();
    assert_eq!(block_on(b.get()), Ok(v2), "the deletion is not seen yet");
    store.faults("b").clear();
    store.faults("b").inject(Fault::StaleRead);
    let v4 = block_on(a.create(&record("a"))).unwrap();
    assert_eq!(
        block_on(b.get()),
        Err(LockError::NotFound),
        "the deleted state, one behind"
    );
    assert_eq!(block_on(b.get()), Ok(v4), "the fault was one-shot");
}
