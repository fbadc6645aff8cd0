//! Three candidates on one etcd key with the real driver (`election-driver` on
//! `adapter-tokio`): a leader is elected, crashes (abort, no release), another
//! takes over once the lease has run out; that one shuts down gracefully
//! (release) and the third leads at once. Overlap is checked three ways: a
//! sampler of `is_leader` every 5 ms, the candidates' own reports (their
//! published states), and etcd's history of the key (every revision).

mod common;

use std::time::{Duration, Instant};

use common::{Election, LEASE, RETRY, check_history, check_reports_do_not_overlap};
use lock_etcd::testing::EtcdServer;

/// The longest a graceful handover may take: the release, a watch event, one
/// write, and the sampling.
const HANDOVER_BOUND: Duration = Duration::from_millis(400);

#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_crash_and_graceful_handover_never_overlap() {
    let etcd = EtcdServer::start().await.expect("a throwaway etcd");
    let key = "/elections/three";
    let first_revision = etcd.revision().await.expect("revision") + 1;
    let election = Election::start((0..3).map(|_| etcd.lock(key)).collect());

    // The first election waits out the strict lock delay (one lease).
    let (first, _) = election.one_leader(Duration::from_secs(10)).await;

    // A crash: the others wait for the lease to run out.
    election.abort(first).await;
    let (second, failover) = election.one_leader(Duration::from_secs(10)).await;
    assert_ne!(second, first);
    let earliest = LEASE - RETRY - Duration::from_millis(50);
    assert!(
        failover >= earliest,
        "took over before the lease ran out: {failover:?}"
    );
    assert!(
        failover <= common::liveness_bound() + Duration::from_millis(300),
        "failover took {failover:?}"
    );

    // A graceful handover: the release is taken at once through the watch.
    let started = Instant::now();
    election.shutdown(second).await;
    let (third, _) = election.one_leader(Duration::from_secs(10)).await;
    let handover = started.elapsed();
    assert!(third != first && third != second);
    assert!(
        handover < HANDOVER_BOUND,
        "a release is taken at once, took {handover:?}"
    );

    let names = election.names.clone();
    let reports = election.finish().await;
    let spans = check_reports_do_not_overlap(&reports);
    assert_eq!(
        spans.iter().map(|s| s.candidate).collect::<Vec<_>>(),
        [first, second, third],
        "{spans:?}"
    );
    let history = etcd.history(key, first_revision).await.expect("history");
    check_history(&history, &spans, &names);
    eprintln!(
        "failover {failover:?}, handover {handover:?}, terms at revisions {:?}, {} writes in etcd's history",
        spans
            .iter()
            .map(|s| s.term.version.to_string())
            .collect::<Vec<_>>(),
        history.len()
    );
    // The last shutdown released the lock: etcd's last record names nobody.
    let last = history
        .last()
        .and_then(|r| r.record.as_ref())
        .expect("a record");
    assert_eq!(last.holder.as_ref(), "", "{history:?}");
    assert!(last.transitions >= 2, "{last:?}");
}
