//! Compaction past a follower's watch revision (docs/faults.md W2): etcd's
//! answer is the lock's form of Kubernetes' `410 Gone`, the watch restarts
//! afresh, and the follower still takes a released lock over at once.

mod common;

use std::time::{Duration, Instant};

use common::proxy::{Mode, Proxy};
use common::{Election, check_history, check_reports_do_not_overlap};
use election_core::{Lock, LockError, LockRecord, Stamp, WatchEvent};
use futures_lite::StreamExt;
use lock_etcd::testing::EtcdServer;

fn record(holder: &str) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(1),
        renew_time: Stamp::Now,
        ..LockRecord::default()
    }
}

/// The lock alone: a watch resumed from a compacted revision ends with the
/// error of a `410`, at once; a fresh watch works.
#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w2_a_watch_from_a_compacted_revision_ends_like_a_410_and_a_fresh_one_works() {
    let etcd = EtcdServer::start().await.expect("a throwaway etcd");
    let lock = etcd.lock("/elections/compacted");
    let mut obs = lock.create(&record("a")).await.expect("create");
    let old = obs.version.clone();
    for _ in 0..3 {
        obs = lock
            .update(&obs.version, &record("a"))
            .await
            .expect("update");
    }
    let now: i64 = obs.version.as_str().parse().unwrap();
    etcd.compact(now).await.expect("compact");

    let mut resumed = lock.watch(Some(&old)).expect("a watch");
    let first = tokio::time::timeout(Duration::from_secs(5), resumed.next())
        .await
        .expect("an answer in time");
    match first {
        Some(Err(LockError::Invalid { message })) => {
            assert!(message.contains("compacted"), "{message}");
        }
        other => panic!("expected the 410-like error, got {other:?}"),
    }
    assert!(resumed.next().await.is_none(), "the stream ends after it");

    let mut fresh = lock.watch(None).expect("a watch");
    match fresh.next().await {
        Some(Ok(WatchEvent::Changed(o))) => assert_eq!(o.version, obs.version),
        other => panic!("expected the current record, got {other:?}"),
    }
    let next = lock
        .update(&obs.version, &record("b"))
        .await
        .expect("update");
    match fresh.next().await {
        Some(Ok(WatchEvent::Changed(o))) => assert_eq!(o, next),
        other => panic!("expected the change, got {other:?}"),
    }
}

/// With the driver: a follower whose view stalls (its connections held by a
/// proxy) while the leader renews, and whose watch then breaks after etcd
/// compacted past the last revision it saw. It resumes from that revision,
/// gets the `410`, watches afresh, and takes the lock at once when the leader
/// releases it.
#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w2_compaction_past_a_followers_watch_restarts_it_and_a_release_is_taken_at_once() {
    let etcd = EtcdServer::start().await.expect("a throwaway etcd");
    let key = "/elections/compaction";
    // Each candidate reaches etcd through a proxy of its own.
    let target = etcd.endpoint();
    let proxies = [
        Proxy::start(target.clone()).await,
        Proxy::start(target).await,
    ];
    let locks = proxies
        .iter()
        .map(|p| {
            lock_etcd::EtcdLock::builder(p.endpoint(), key)
                .progress_notify_interval(lock_etcd::testing::PROGRESS_NOTIFY_INTERVAL)
                .build()
                .expect("lock")
        })
        .collect();
    let election = Election::start(locks);
    let (leader, _) = election.one_leader(Duration::from_secs(10)).await;
    let follower = 1 - leader;
    let proxy = &proxies[follower];
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The follower's view stalls (its watch frozen, its reads failing) for less
    // than a lease while the leader renews; etcd compacts past everything the
    // follower saw; then its watch breaks.
    proxy.set(Mode {
        freeze_watches: true,
        fail_kv: true,
    });
    // The follower has seen at most `frozen_at`; it resumes from a revision
    // below `now` once the leader has written twice more (it renews every
    // retry period, so the 450 ms normally suffice).
    let frozen_at = etcd.revision().await.expect("revision");
    tokio::time::sleep(Duration::from_millis(450)).await;
    let waiting = Instant::now();
    let now = loop {
        let now = etcd.revision().await.expect("revision");
        if now >= frozen_at + 2 {
            break now;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(5),
            "the leader did not renew while the follower was frozen (revision {now}, frozen at {frozen_at})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    etcd.compact(now).await.expect("compact");
    // Cut while still frozen: the follower is handed none of the changes the
    // proxy held, so the revision it resumes from is one etcd compacted away.
    // (Unfreezing first would race the held frames against the cut: a follower
    // handed them all resumes from a revision still there, and hears no 410.)
    proxy.cut();
    proxy.set(Mode {
        freeze_watches: false,
        fail_kv: true,
    });

    // The follower resumes its watch from the last revision it saw and hears
    // the 410; then its reads work again.
    let start = Instant::now();
    loop {
        let problems = election.problems(follower);
        if problems.iter().any(|p| p.contains("compacted")) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no compacted-watch report from the follower: {problems:?}\n{}",
            election.report_text()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    proxy.set(Mode::default());
    // Let the fresh watch start (the driver backs off one more retry period or two).
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(election.leaders(), [leader], "the leader kept leading");

    // The release is taken over at once, through the restarted watch.
    let released = Instant::now();
    election.shutdown(leader).await;
    let (next, _) = election.one_leader(Duration::from_secs(5)).await;
    let handover = released.elapsed();
    assert_eq!(next, follower);
    assert!(
        handover < Duration::from_millis(400),
        "the follower took the release at once: {handover:?}"
    );
    eprintln!("compaction at revision {now}; handover after it {handover:?}");

    let names = election.names.clone();
    let reports = election.finish().await;
    let spans = check_reports_do_not_overlap(&reports);
    // History from before the compaction is gone: check what is left.
    let history = etcd.history(key, now).await.expect("history");
    check_history(&history, &spans, &names);
}
