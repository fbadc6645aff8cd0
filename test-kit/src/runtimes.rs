//! Test plumbing to run one async test on tokio, smol and async-std (feature
//! `runtimes`).
//!
//! A test written as a plain `async fn` that names no runtime runs on all three
//! with [`runtime_tests!`](crate::runtime_tests), which makes one `#[test]` per
//! runtime, in the modules `on_tokio`, `on_smol` and `on_async_std`:
//!
//! ```
//! use std::time::Duration;
//!
//! use kube_emulator::Emulator;
//! use kube_emulator::runtimes::{sleep, timeout};
//!
//! async fn a1_the_emulator_answers() {
//!     // Its own thread and tokio runtime: there is none under smol or async-std.
//!     let emu = Emulator::start_blocking().expect("emulator");
//!     assert_eq!(timeout(Duration::from_secs(1), sleep(Duration::ZERO)).await, Some(()));
//!     assert!(emu.url().starts_with("http://127.0.0.1:"));
//! }
//!
//! kube_emulator::runtime_tests!(a1_the_emulator_answers);
//! # fn main() {
//! #     // The `#[test]`s are not built here: run the test as they would.
//! #     for runtime in kube_emulator::runtimes::Runtime::ALL {
//! #         runtime.run(a1_the_emulator_answers);
//! #     }
//! # }
//! ```
//!
//! Inside such a test:
//!
//! - start the emulator with [`Emulator::start_blocking`](crate::Emulator::start_blocking);
//! - make direct `kube` calls (an admin's, a human's: any not made through a lock)
//!   inside [`compat`], which gives kube's client the tokio reactor it wants under
//!   smol and async-std (building a `kube::Client` wants one too). A lock's own
//!   calls are not wrapped: bridging the runtime is the lock's job;
//! - wait with [`sleep`] and [`timeout`], which work on any runtime.

use std::future::Future;
use std::time::{Duration, Instant};

use election_driver::Handle;

/// The stack of the thread a test runs on: futures nest deeply in debug builds
/// (the lock conformance suite overflows the default 2 MiB).
pub const TEST_STACK: usize = 64 << 20;

/// An async runtime to run a test on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// A multi-thread tokio runtime with two workers, IO and timers enabled.
    Tokio,
    /// `smol::block_on`; what the test spawns through smol runs on smol's
    /// global executor.
    Smol,
    /// `async_std::task::block_on`.
    AsyncStd,
}

impl Runtime {
    /// The three runtimes.
    pub const ALL: [Runtime; 3] = [Runtime::Tokio, Runtime::Smol, Runtime::AsyncStd];

    /// Runs `future` to completion on this runtime, on the calling thread.
    ///
    /// # Panics
    ///
    /// If the tokio runtime cannot be built (no threads), or if `future` panics.
    pub fn block_on<F: Future>(self, future: F) -> F::Output {
        match self {
            Runtime::Tokio => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime")
                .block_on(future),
            Runtime::Smol => smol::block_on(future),
            Runtime::AsyncStd => async_std::task::block_on(future),
        }
    }

    /// Runs the test `test` on this runtime on a thread of its own with a
    /// [`TEST_STACK`] stack, named as the calling thread (the test harness names
    /// it after the test); a panic in the test is resumed on the caller.
    ///
    /// `test` makes the future on that thread, so the future need not be `Send`.
    ///
    /// # Panics
    ///
    /// If the thread cannot be started, or when the test panics.
    pub fn run<T, F>(self, test: T) -> F::Output
    where
        T: FnOnce() -> F + Send,
        F: Future,
        F::Output: Send,
    {
        let mut thread = std::thread::Builder::new().stack_size(TEST_STACK);
        if let Some(name) = std::thread::current().name() {
            thread = thread.name(name.to_owned());
        }
        std::thread::scope(|scope| {
            thread
                .spawn_scoped(scope, move || self.block_on(test()))
                .expect("a test thread")
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

/// Runs `future` with a tokio runtime context: the caller's under tokio, else
/// the one `async-compat` keeps. For direct `kube` calls (and for building a
/// `kube::Client`) from a test that runs on any runtime.
pub async fn compat<F: Future>(future: F) -> F::Output {
    async_compat::Compat::new(future).await
}

/// Waits `duration` on any runtime (`async-io`'s timer).
pub async fn sleep(duration: Duration) {
    smol::Timer::after(duration).await;
}

/// `future`'s output, or `None` if it is not ready within `limit`; on any
/// runtime (`async-io`'s timer). A future ready at the same time as the limit
/// wins.
pub async fn timeout<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    smol::future::or(async { Some(future.await) }, async {
        sleep(limit).await;
        None
    })
    .await
}

/// Makes one `#[test]` per runtime of [`Runtime::ALL`] for each named test, an
/// `async fn()` of the calling module that names no runtime.
///
/// `kube_emulator::runtime_tests!(a1_stale_update, w1_broken_watch)` expands to the
/// modules `on_tokio`, `on_smol` and `on_async_std`, each holding `#[test] fn
/// a1_stale_update()` and `#[test] fn w1_broken_watch()`, which
/// [`Runtime::run`] the test on that runtime (on a thread with a large stack).
/// So a test keeps its name, prefixed by its runtime: `on_smol::a1_stale_update`.
/// Attributes written before a name (`#[ignore]`, doc comments) go on each of
/// its three tests.
///
/// See the [module documentation](crate::runtimes) for what such a test may use.
#[macro_export]
macro_rules! runtime_tests {
    ($($(#[$attr:meta])* $name:ident),+ $(,)?) => {
        $crate::runtime_tests!(@on on_tokio, Tokio; $($(#[$attr])* $name),+);
        $crate::runtime_tests!(@on on_smol, Smol; $($(#[$attr])* $name),+);
        $crate::runtime_tests!(@on on_async_std, AsyncStd; $($(#[$attr])* $name),+);
    };
    (@on $module:ident, $runtime:ident; $($(#[$attr:meta])* $name:ident),+) => {
        mod $module {
            $(
                $(#[$attr])*
                #[test]
                fn $name() {
                    $crate::runtimes::Runtime::$runtime.run(super::$name)
                }
            )+
        }
    };
}

/// A running candidate, as the election story drives it: the handles of
/// `election-driver` (and so `adapter-smol`) and of `adapter-tokio`.
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
        Handle::abort(self);
    }
    fn shutdown(&self) -> impl Future<Output = ()> {
        Handle::shutdown(self)
    }
}

impl Candidate for adapter_tokio::Handle {
    fn is_leader(&self) -> bool {
        adapter_tokio::Handle::is_leader(self)
    }
    fn abort(self) {
        adapter_tokio::Handle::abort(self);
    }
    fn shutdown(&self) -> impl Future<Output = ()> {
        adapter_tokio::Handle::shutdown(self)
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
/// `namespace`, as `(message, reason)`.
pub fn leader_events(emu: &crate::Emulator, namespace: &str, name: &str) -> Vec<(String, String)> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    emu.objects(crate::Resource::Event, namespace)
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
pub async fn check_story_events(emu: &crate::Emulator, namespace: &str, name: &str) {
    let mut events = Vec::new();
    for _ in 0..100 {
        events = leader_events(emu, namespace, name);
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

/// Checks that the Role in `role_yaml` grants every request a lock session makes.
///
/// `lock` is a fresh lock (its object absent) whose client the emulator counts as
/// `client`; the session creates the lock, renews it, opens a fresh watch and a
/// resumed one, reads it, records a leadership Event through
/// [`Lock::leadership_changed`](election_core::Lock::leadership_changed) and
/// releases it. Then each (verb, resource) the emulator counted for `client` must be
/// allowed by a rule of the Role.
///
/// # Panics
///
/// When a step of the session fails, or a request is not granted.
pub async fn rbac_session<L: election_core::Lock>(
    emu: &crate::Emulator,
    lock: &L,
    client: &str,
    role_yaml: &str,
) {
    use election_core::{LeadershipChange, LockRecord, Stamp, WatchEvent};
    use futures::StreamExt;

    let record = |holder: &str| LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        ..LockRecord::default()
    };
    async fn next_version(w: &mut election_core::WatchStream) -> election_core::Version {
        match timeout(Duration::from_secs(5), w.next()).await {
            Some(Some(Ok(WatchEvent::Changed(o)))) => o.version,
            other => panic!("expected a change in time, got {other:?}"),
        }
    }

    let v1 = lock.create(&record(client)).await.expect("create").version;
    let mut fresh = lock.watch(None).expect("a fresh watch");
    assert_eq!(next_version(&mut fresh).await, v1);
    let v2 = lock
        .update(&v1, &record(client))
        .await
        .expect("renew")
        .version;
    assert_eq!(next_version(&mut fresh).await, v2);
    drop(fresh);
    let mut resumed = lock.watch(Some(&v2)).expect("a resumed watch");
    lock.get().await.expect("read");
    let event = lock
        .leadership_changed(client, LeadershipChange::BecameLeader)
        .expect("the lock records Events");
    timeout(Duration::from_secs(5), event)
        .await
        .expect("the Event is written in time");
    let released = lock
        .update(&v2, &record(""))
        .await
        .expect("release")
        .version;
    assert_eq!(next_version(&mut resumed).await, released);

    let counts = emu.request_counts();
    let used: Vec<_> = counts.iter().filter(|(c, ..)| *c == client).collect();
    assert!(used.len() >= 5, "the session made its requests: {used:?}");
    let events = [crate::Resource::Event, crate::Resource::EventV1]
        .map(|r| counts.get(client, crate::Verb::Create, r));
    assert!(
        events.iter().sum::<u64>() >= 1,
        "an Event was created: {used:?}"
    );
    let rules = crate::rbac::role_rules(role_yaml);
    assert_eq!(
        crate::rbac::not_granted(&counts, client, &rules),
        [],
        "rules: {rules:?}"
    );
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
