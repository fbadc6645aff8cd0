//! etcd stops answering for longer than the renew deadline under a leader
//! (SIGSTOP: connections stay open, nothing answers; then SIGKILL and a restart
//! on the same data): the leader stops leading by its own deadline, nobody
//! overlaps (sampled, reported, and in etcd's history), and a leader exists
//! within the liveness bound once etcd is back.

mod common;

use std::time::{Duration, Instant};

use common::{Election, RENEW_DEADLINE, check_history, check_reports_do_not_overlap};
use lock_etcd::testing::EtcdServer;

/// How long etcd is gone: beyond the renew deadline and the lease.
const OUTAGE: Duration = Duration::from_millis(2_000);

/// Slack for a timer that fires late and the 5 ms sampling.
const SLACK: Duration = Duration::from_millis(100);

async fn outage(kill: bool) {
    let mut etcd = EtcdServer::start().await.expect("a throwaway etcd");
    let key = "/elections/outage";
    let first_revision = etcd.revision().await.expect("revision") + 1;
    let election = Election::start((0..3).map(|_| etcd.lock(key)).collect());
    let (leader, _) = election.one_leader(Duration::from_secs(10)).await;
    // Let a few renewals through, then stop etcd.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped = Instant::now();
    if kill {
        etcd.kill();
    } else {
        etcd.pause().expect("SIGSTOP");
    }
    // The leader's deadline is at most one renew deadline after the last renew
    // it sent, which was before etcd stopped.
    let deadline = election.deadline(leader).expect("leading, so a deadline");
    assert!(
        deadline <= stopped + RENEW_DEADLINE + SLACK,
        "deadline beyond the renew deadline"
    );
    tokio::time::sleep(OUTAGE).await;
    assert_eq!(
        election.leaders(),
        [] as [usize; 0],
        "nobody leads while etcd is gone"
    );
    let last = election.last_sampled_leading(leader).expect("it led");
    assert!(
        last <= stopped + RENEW_DEADLINE + SLACK,
        "the leader led {:?} after etcd stopped",
        last - stopped
    );

    let back = Instant::now();
    if kill {
        etcd.restart().await.expect("etcd restarts on its data");
    } else {
        etcd.resume().expect("SIGCONT");
    }
    let restarted = back.elapsed();
    let (_, after) = election.one_leader(Duration::from_secs(10)).await;
    let bound = common::liveness_bound() + SLACK;
    assert!(
        after <= bound,
        "a leader {after:?} after etcd was back (bound {bound:?}; restart took {restarted:?})"
    );
    eprintln!("after etcd was back ({restarted:?} to restart): a leader within {after:?}");

    let names = election.names.clone();
    let reports = election.finish().await;
    let spans = check_reports_do_not_overlap(&reports);
    assert!(spans.len() >= 2, "{spans:?}");
    let history = etcd.history(key, first_revision).await.expect("history");
    check_history(&history, &spans, &names);
}

#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_paused_beyond_the_renew_deadline_the_leader_stops_in_time_and_a_leader_returns() {
    outage(false).await;
}

#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_killed_and_restarted_on_its_data_the_leader_stops_in_time_and_a_leader_returns() {
    outage(true).await;
}
