//! The store's own promises: versions, stamps, the write log, human edits,
//! watches, and linearizable compare-and-swap under many threads.

use std::time::Duration;

use election_core::{Lock, LockError, LockRecord, Stamp, Version, WallTime, WatchEvent};
use futures_lite::StreamExt;
use futures_lite::future::block_on;
use lock_memory::{HUMAN, ManualClock, MemoryStore, WriteKind};

fn record(holder: &str) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        ..LockRecord::default()
    }
}

#[test]
fn versions_are_a_global_counter_that_survives_delete_and_recreate() {
    let store = MemoryStore::new();
    let a = store.client("a");
    let v1 = block_on(a.create(&record("a"))).unwrap();
    assert_eq!(v1.version.as_str(), "1");
    assert!(store.delete());
    assert!(!store.delete(), "nothing left to delete");
    let v3 = block_on(a.create(&record("a"))).unwrap();
    assert_eq!(
        v3.version.as_str(),
        "3",
        "the delete took version 2; no reset"
    );
    assert_eq!(
        block_on(a.update(&v1.version, &record("a"))),
        Err(LockError::Conflict)
    );
    assert_eq!(store.last_version(), 3);
}

#[test]
fn r10_identical_rewrites_take_new_versions() {
    let store = MemoryStore::new();
    let a = store.client("a");
    let mut obs = block_on(a.create(&record("a"))).unwrap();
    let mut seen = vec![obs.version.clone()];
    for _ in 0..5 {
        obs = block_on(a.update(&obs.version, &record("a"))).unwrap();
        assert!(!seen.contains(&obs.version));
        seen.push(obs.version.clone());
    }
    let log = store.write_log();
    assert!(log.windows(2).all(|w| w[0].record == w[1].record));
}

#[test]
fn update_compares_the_exact_version_string() {
    let store = MemoryStore::new();
    let a = store.client("a");
    let v1 = block_on(a.create(&record("a"))).unwrap();
    for odd in ["01", " 1", "1.0", "", "v1"] {
        let got = block_on(a.update(&Version::new(odd), &record("a")));
        assert_eq!(got, Err(LockError::Conflict), "{odd:?}");
    }
    assert_eq!(store.current(), Some(v1));
}

#[test]
fn stamps_come_from_the_replaceable_wall_clock() {
    let store = MemoryStore::new();
    let clock = ManualClock::new(WallTime::new(1_700_000_000, 500));
    clock.install(&store);
    let a = store.client("a");
    let kept = WallTime::new(42, 0);
    let r = LockRecord {
        acquire_time: Stamp::At(kept),
        renew_time: Stamp::Now,
        ..record("a")
    };
    let v1 = block_on(a.create(&r)).unwrap();
    assert_eq!(v1.record.acquire_time, Stamp::At(kept));
    assert_eq!(v1.record.renew_time, Stamp::At(clock.now()));

    // A wall clock stepped backwards is stamped as it is (FAULTS N3 is the core's business).
    clock.set(WallTime::new(1_000, 0));
    let r = LockRecord {
        acquire_time: Stamp::Now,
        renew_time: Stamp::Unset,
        ..record("a")
    };
    let v2 = block_on(a.update(&v1.version, &r)).unwrap();
    assert_eq!(v2.record.acquire_time, Stamp::At(WallTime::new(1_000, 0)));
    assert_eq!(v2.record.renew_time, Stamp::Unset);
    assert_eq!(store.write_log()[1].wall, WallTime::new(1_000, 0));

    store.set_wall_clock(|| WallTime::new(7, 7));
    let human = store.set_record(LockRecord {
        renew_time: Stamp::Now,
        ..record("someone")
    });
    assert_eq!(human.record.renew_time, Stamp::At(WallTime::new(7, 7)));
}

#[test]
fn the_write_log_orders_every_write_with_its_writer() {
    let store = MemoryStore::new();
    let clock = ManualClock::new(WallTime::new(100, 0));
    clock.install(&store);
    let (a, b) = (store.client("a"), store.client("b"));
    let v1 = block_on(a.create(&record("a"))).unwrap();
    clock.advance(Duration::from_secs(1));
    let _ = block_on(b.update(&Version::new("99"), &record("b"))).unwrap_err();
    let _ = block_on(b.get()).unwrap();
    let v2 = block_on(b.update(&v1.version, &record("b"))).unwrap();
    clock.advance(Duration::from_secs(1));
    store.set_record(record("human-choice"));
    store.delete();

    let log = store.write_log();
    let summary: Vec<_> = log
        .iter()
        .map(|w| {
            (
                w.seq,
                &*w.client,
                w.kind,
                w.version.to_string(),
                w.wall.unix_secs,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, "a", WriteKind::Create, "1".to_string(), 100),
            (2, "b", WriteKind::Update, "2".to_string(), 101),
            (3, HUMAN, WriteKind::SetRecord, "3".to_string(), 102),
            (4, HUMAN, WriteKind::Delete, "4".to_string(), 102),
        ]
    );
    assert_eq!(log[1].record.as_ref(), Some(&v2.record));
    assert_eq!(log[3].record, None);
    assert_eq!(store.write_log_since(2), log[2..].to_vec());
    assert!(store.write_log_since(99).is_empty());
    assert_eq!(store.last_seq(), 4);
}

#[test]
fn a_capped_write_log_keeps_the_latest_writes_and_their_numbers() {
    let store = MemoryStore::new().with_write_log_capacity(3);
    let a = store.client("a");
    let mut obs = block_on(a.create(&record("a"))).unwrap();
    for _ in 0..9 {
        obs = block_on(a.update(&obs.version, &record("a"))).unwrap();
    }
    let seqs: Vec<u64> = store.write_log().iter().map(|w| w.seq).collect();
    assert_eq!(seqs, [8, 9, 10]);
    assert_eq!(store.write_log().last().unwrap().version, obs.version);
    let since: Vec<u64> = store.write_log_since(8).iter().map(|w| w.seq).collect();
    assert_eq!(since, [9, 10]);
    assert_eq!(store.write_log_since(2).len(), 3, "older ones are gone");
    assert_eq!(store.last_seq(), 10);
}

#[test]
fn r1_human_edits_take_a_version_and_defeat_stale_writers() {
    let store = MemoryStore::new();
    let a = store.client("a");
    let human = store.set_record(record("intruder"));
    assert_eq!(
        human.version.as_str(),
        "1",
        "set_record creates an absent lock"
    );
    assert_eq!(
        block_on(a.create(&record("a"))),
        Err(LockError::AlreadyExists)
    );
    let v = block_on(a.get()).unwrap();
    assert_eq!(v, human);
    let edited = store.set_record(record(""));
    assert_eq!(
        block_on(a.update(&v.version, &record("a"))),
        Err(LockError::Conflict)
    );
    assert!(block_on(a.update(&edited.version, &record("a"))).is_ok());
}

#[test]
fn a4_update_after_delete_is_not_found() {
    let store = MemoryStore::new();
    let a = store.client("a");
    let v1 = block_on(a.create(&record("a"))).unwrap();
    store.delete();
    assert_eq!(
        block_on(a.update(&v1.version, &record("a"))),
        Err(LockError::NotFound)
    );
    assert_eq!(block_on(a.get()), Err(LockError::NotFound));
    assert_eq!(store.current(), None);
}

#[test]
fn a_watch_from_nowhere_starts_with_the_current_state() {
    let store = MemoryStore::new();
    let (a, b) = (store.client("a"), store.client("b"));
    let mut absent = b.watch(None).unwrap();
    assert_eq!(block_on(absent.next()), Some(Ok(WatchEvent::Deleted(None))));
    let v1 = block_on(a.create(&record("a"))).unwrap();
    assert_eq!(
        block_on(absent.next()),
        Some(Ok(WatchEvent::Changed(v1.clone())))
    );

    // A version this store never issued (ahead, or not a number) counts as none.
    for from in ["12345", "x"] {
        let mut w = b.watch(Some(&Version::new(from))).unwrap();
        assert_eq!(
            block_on(w.next()),
            Some(Ok(WatchEvent::Changed(v1.clone())))
        );
    }
}

#[test]
fn w2_resuming_from_beyond_the_history_yields_the_current_state_first() {
    let store = MemoryStore::new().with_history(2);
    let (a, b) = (store.client("a"), store.client("b"));
    let mut obs = block_on(a.create(&record("a"))).unwrap();
    let v1 = obs.version.clone();
    for _ in 0..4 {
        obs = block_on(a.update(&obs.version, &record("a"))).unwrap();
    }
    let mut w = b.watch(Some(&v1)).unwrap();
    assert_eq!(
        block_on(w.next()),
        Some(Ok(WatchEvent::Changed(obs.clone())))
    );
    let next = block_on(a.update(&obs.version, &record("a"))).unwrap();
    assert_eq!(block_on(w.next()), Some(Ok(WatchEvent::Changed(next))));

    // Within the history: every change after the version, in order.
    let v4 = Version::new("4");
    let mut w = b.watch(Some(&v4)).unwrap();
    let versions: Vec<_> = (0..2)
        .map(|_| match block_on(w.next()) {
            Some(Ok(WatchEvent::Changed(o))) => o.version.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(versions, ["5", "6"]);
}

#[test]
fn watches_wake_their_tasks_across_threads() {
    let store = MemoryStore::new();
    let (a, b) = (store.client("a"), store.client("b"));
    let v1 = block_on(a.create(&record("a"))).unwrap();
    let mut w = b.watch(Some(&v1.version)).unwrap();
    let writer = std::thread::spawn(move || {
        let mut obs = v1;
        for _ in 0..50 {
            obs = a.blocking_update(&obs.version, &record("a")).unwrap();
        }
        obs
    });
    let mut last = None;
    for _ in 0..50 {
        match block_on(w.next()) {
            Some(Ok(WatchEvent::Changed(o))) => {
                if let Some(prev) = &last {
                    assert!(o.version.cmp_numeric(prev).is_gt(), "in order");
                }
                last = Some(o.version);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(Some(writer.join().unwrap().version), last);
}

#[test]
fn n11_compare_and_swap_is_linearizable_under_threads() {
    // Eight threads each add one to a counter held in `transitions`, by
    // read-then-CAS with retries; no increment may be lost.
    let store = MemoryStore::new();
    block_on(store.client("init").create(&record(""))).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let lock = store.client(&format!("t{i}"));
            std::thread::spawn(move || {
                let mut conflicts = 0u32;
                for _ in 0..200 {
                    loop {
                        let obs = lock.blocking_get().unwrap();
                        let mut next = obs.record.clone();
                        next.transitions += 1;
                        match lock.blocking_update(&obs.version, &next) {
                            Ok(_) => break,
                            Err(LockError::Conflict) => conflicts += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let conflicts: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(store.current().unwrap().record.transitions, 8 * 200);
    assert_eq!(store.last_version(), 1 + 8 * 200);
    let updates: u64 = (0..8).map(|i| store.calls(&format!("t{i}")).update).sum();
    assert_eq!(updates, u64::from(8 * 200 + conflicts));
}

/// `without_watch`: the client offers no watch (electors on it poll, as client-go's
/// do) but reads and writes the same store; other clients keep theirs.
#[test]
fn a_client_without_watch_offers_none_and_shares_the_store() {
    let store = MemoryStore::new();
    let polling = store.client("poll").without_watch();
    let watching = store.client("watch");
    assert!(polling.watch(None).is_none(), "no watch offered");
    let mut events = watching.watch(None).expect("a watch");
    let created = block_on(polling.create(&record("poll"))).expect("create");
    assert_eq!(block_on(watching.get()), Ok(created.clone()));
    let first = block_on(async {
        loop {
            match events.next().await {
                Some(Ok(WatchEvent::Changed(obs))) => break obs,
                Some(Ok(WatchEvent::Deleted(_))) => continue,
                other => panic!("the watch ended or failed: {other:?}"),
            }
        }
    });
    assert_eq!(
        first, created,
        "the watching client sees the polling one's write"
    );
}
