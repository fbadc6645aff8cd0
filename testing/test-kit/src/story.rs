//! The three-candidate election story, on any lock and any runtime: an election,
//! a crash and a failover, a graceful hand-over, at most one leader at every
//! sampled instant; and the check of the leadership Events a Kubernetes lock
//! records during it.

use std::future::Future;
use std::time::{Duration, Instant};

use election_driver::Handle;
use kube_emulator::Resource;

use crate::apiserver::Server;

use crate::runtimes::{sleep, timeout};

/// A running candidate, as the election story drives it: the driver's
/// [`Handle`], the one handle of every runtime.
pub trait Candidate {
    /// Whether it leads now.
    fn is_leader(&self) -> bool;
    /// Stops it as a crash would: no release.
    fn abort(self);
    /// Shuts it down gracefully: drain and release.
    fn shutdown(&self) -> impl Future<Output = ()>;
}

impl Candidate for Handle {
    fn is_leader(&self) -> bool {
        Handle::is_leader(self)
    }
    fn abort(self) {
        Handle::abort(&self);
    }
    fn shutdown(&self) -> impl Future<Output = ()> {
        Handle::shutdown(self)
    }
}

/// The earliest a follower may take over after the leader crashed, in
/// [`three_candidates`] with `Config::fast` (2 s lease, 250 ms retry period): the
/// lease less one retry period (the last renew can be that old at the crash),
/// less 50 ms for a renew timer that fired late on a loaded machine.
pub const EARLIEST_FAILOVER: Duration = Duration::from_millis(2_000 - 250 - 50);

/// The longest a graceful handover may take in [`three_candidates`], from the
/// shutdown call until another candidate leads: the release, a watch event, one
/// write, and the 20 ms sampling. A follower that missed the release would
/// need a poll or the 2 s lease, and fail this.
pub const HANDOVER_BOUND: Duration = Duration::from_millis(500);

/// The candidates of [`three_candidates`], in order.
pub const CANDIDATES: [&str; 3] = ["node-a", "node-b", "node-c"];

/// The three-candidate story on any lock and adapter: a leader is elected,
/// crashes (abort, no release), and another takes over, not before
/// [`EARLIEST_FAILOVER`] after the crash (the others time the 2 s lease from the
/// crashed leader's last renew they saw, and it renewed every 250 ms retry
/// period until the crash); that one shuts down gracefully (releases), and the
/// third leads within [`HANDOVER_BOUND`] of the shutdown call (the followers see
/// the release through their watch and take it with one write). At no sampled
/// instant (every 20 ms) do two candidates lead; each election must happen
/// within 10 s, each shutdown within 10 s.
///
/// `candidate(id)` starts a candidate named `id` (one of [`CANDIDATES`]) on the
/// lock under test, all on the same lock object. Timings assume
/// `election_core::Config::fast`. `check_holder(holder)` checks the lock's record
/// as the server has it: called with the third leader's identity while it leads,
/// and with `""` once every candidate has shut down (released). Panics on a
/// failed check.
pub async fn three_candidates<H: Candidate>(
    mut candidate: impl FnMut(&str) -> H,
    check_holder: impl Fn(&str),
) {
    let mut nodes: Vec<Option<H>> = CANDIDATES.iter().map(|id| Some(candidate(id))).collect();
    let (first, _) = one_leader(&nodes, Duration::from_secs(10)).await;

    nodes[first].take().expect("running").abort();
    let (second, failover) = one_leader(&nodes, Duration::from_secs(10)).await;
    assert_ne!(second, first);
    assert!(
        failover >= EARLIEST_FAILOVER,
        "not before the lease expired: {failover:?}"
    );

    let leaving = nodes[second].take().expect("running");
    let started = Instant::now();
    timeout(Duration::from_secs(10), leaving.shutdown())
        .await
        .expect("the shutdown ends");
    let (third, _) = one_leader(&nodes, Duration::from_secs(10)).await;
    let handover = started.elapsed();
    assert!(third != first && third != second);
    assert!(
        handover < HANDOVER_BOUND,
        "a release is taken at once, took {handover:?}"
    );
    check_holder(CANDIDATES[third]);
    for n in nodes.into_iter().flatten() {
        timeout(Duration::from_secs(10), n.shutdown())
            .await
            .expect("the shutdown ends");
    }
    check_holder("");
}

/// The leadership Events (core `v1`) about the lock object `name` in
/// `namespace` on `server` (the emulator or kube-apiserver), as `(message, reason)`.
pub fn leader_events(server: &dyn Server, namespace: &str, name: &str) -> Vec<(String, String)> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    server
        .objects(Resource::Event, namespace)
        .iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .map(|e| (text(&e["message"]), text(&e["reason"])))
        .collect()
}

/// Checks the Events of a [`three_candidates`] story on the lock object `name`
/// in `namespace`: each candidate recorded `<id> became leader` once (all three
/// led), two recorded `<id> stopped leading` (the crashed one could not), all
/// with reason `LeaderElection`, and nothing else. The Events are written in
/// the background: this waits up to 5 s for them.
///
/// # Panics
///
/// When the Events differ.
pub async fn check_story_events(server: &dyn Server, namespace: &str, name: &str) {
    let mut events = Vec::new();
    for _ in 0..100 {
        events = leader_events(server, namespace, name);
        if events.len() >= 5 {
            break;
        }
        sleep(Duration::from_millis(50)).await;
    }
    assert!(
        events.iter().all(|(_, reason)| reason == "LeaderElection"),
        "{events:?}"
    );
    for id in CANDIDATES {
        let became = format!("{id} became leader");
        let n = events.iter().filter(|(m, _)| *m == became).count();
        assert_eq!(n, 1, "{became}: {events:?}");
    }
    let stopped = events
        .iter()
        .filter(|(m, _)| m.ends_with(" stopped leading"))
        .count();
    assert_eq!(stopped, 2, "{events:?}");
    assert_eq!(events.len(), 5, "{events:?}");
}

/// Waits until exactly one of `nodes` leads, checking that never two do; returns
/// its index and how long it took.
async fn one_leader<H: Candidate>(nodes: &[Option<H>], within: Duration) -> (usize, Duration) {
    let start = Instant::now();
    loop {
        let leaders: Vec<usize> = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.as_ref().is_some_and(H::is_leader))
            .map(|(i, _)| i)
            .collect();
        assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
        if let [i] = leaders[..] {
            return (i, start.elapsed());
        }
        assert!(start.elapsed() < within, "no leader within {within:?}");
        sleep(Duration::from_millis(20)).await;
    }
}
