//! The driver test suite, written once and run on every runtime.
//!
//! Each case is a generic `async fn(rt: R)` over a [`Runtime`], driving real
//! [`Driver`](election_driver::Driver)s against the memory lock (`lock-memory`), with
//! [`Config::fast`] timings (2 s lease, 1.5 s renew deadline, 250 ms retry). The
//! adapters instantiate the whole suite with [`driver_suite!`](crate::driver_suite!):
//! on tokio with paused (virtual) time, on smol and on async-std in real time.
//!
//! The cases read like stories of a small cluster; those covering a row of
//! `docs/faults.md` are named after it.
//!
//! Every case panics (fails) with a message saying what it waited for.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use election_core::Event;
use election_core::testing::Pairing;
use election_core::{
    Config, Layer, Layered, Lock, LockError, LockRecord, OpKind, Role, StopReason, Term, Version,
    WatchStream,
};
use election_driver::{
    Builder, CancelSignal, Change, DriverError, Handle, LeaderWork, LeadershipState, OnLoss,
    Runtime, WorkRun,
};
use futures::StreamExt;
use lock_memory::{
    Delay, Fault, Faults, LoggedWrite, MemoryLock, MemoryStore, PartitionMode, WriteKind,
};

use crate::stall::StallWatch;

/// Instantiates the suite.
///
/// `block_on` is a function running a future to completion on the runtime (for
/// tokio, a paused current-thread runtime); `runtime` an expression evaluated
/// inside it that yields the [`Runtime`]. Each case becomes a `#[test]`
/// function:
///
/// ```text
/// test_kit::driver_suite!(block_on = my_block_on, runtime = MyRuntime::new());
/// ```
///
/// With `main` first, for the runtimes that run in real time, it becomes the
/// test binary's `main` instead (a `[[test]]` with `harness = false`), running
/// every case at once through [`harness`]: the cases mostly wait on timers, so
/// the suite takes about as long as its longest case (8 s on smol) instead of
/// their sum over two test threads (46 s).
///
/// ```text
/// test_kit::driver_suite!(main, block_on = smol::block_on, runtime = adapter_smol::SmolRuntime::new());
/// ```
#[macro_export]
macro_rules! driver_suite {
    (block_on = $block_on:path, runtime = $rt:expr) => {
        $crate::driver_suite!(@list tests, $block_on, $rt);
    };
    (main, block_on = $block_on:path, runtime = $rt:expr) => {
        $crate::driver_suite!(@list main, $block_on, $rt);
    };
    (@list $mode:ident, $block_on:path, $rt:expr) => {
        $crate::driver_suite!(@run $mode; $block_on, $rt;
            three_candidates_elect_exactly_one,
            leader_shutdown_hands_over,
            leader_step_down_hands_over,
            dropped_handle_releases_best_effort,
            leader_crash_fails_over_after_one_lease,
            work_is_cancelled_and_awaited_before_release,
            companion_ends_before_the_release_and_with_the_driver,
            on_loss_exit_ends_the_driver,
            h1_shutdown_while_renew_in_flight_releases,
            h2_shutdown_while_read_in_flight_exits_promptly,
            h3_slow_work_delays_release_while_renewals_go_on,
            h4_release_when_another_holds_writes_nothing,
            h5_shutdown_racing_acquisition_never_holds_silently,
            h5_shutdown_racing_a_create_leaves_it_to_expire,
            h6_panicking_work_is_reported_and_renewals_go_on,
            h6_panicking_work_closure_is_reported_and_renewals_go_on,
            h6_blocking_work_is_bounded_by_the_release_budget,
            n5_paused_leader_is_past_its_deadline_on_resume,
            n7_partitioned_leader_stops_at_deadline_and_others_take_over,
            w1_broken_watch_resumes_and_polls_meanwhile,
            n7_w1_black_holed_watch_is_restarted_after_heal,
            w1_silent_watch_is_restarted_after_the_idle_limit,
            w2_resumed_watch_failing_at_once_is_started_afresh,
            lock_without_watch_is_polled,
            h10_states_are_ready_when_step_down_and_shutdown_resolve,
            h10_stopped_leading_is_ready_before_the_release_is_written,
            h10_a_reader_polling_the_stream_first_reads_every_state_before_the_answer,
            h10_a_reader_polling_the_stream_first_reads_the_states_of_a_driver_ended_before_shutdown,
        );
    };
    (@run tests; $block_on:path, $rt:expr; $($case:ident,)*) => {
        $(
            #[test]
            fn $case() {
                $block_on(async { $crate::driver_suite::$case($rt).await })
            }
        )*
    };
    (@run main; $block_on:path, $rt:expr; $($case:ident,)*) => {
        $(
            fn $case() {
                $block_on(async { $crate::driver_suite::$case($rt).await })
            }
        )*
        fn main() -> std::process::ExitCode {
            $crate::driver_suite::harness(&[$((stringify!($case), $case as fn())),*])
        }
    };
}

/// The harness of [`driver_suite!`]`(main, …)`: every selected case on a
/// thread of its own, all at once, reported as libtest reports tests, with
/// libtest's command line as far as cargo passes it: name filters
/// (substrings, or whole names with `--exact`), `--skip NAME`, `--list`,
/// `--ignored` (no case is ignored, so none runs) and `--include-ignored`;
/// other flags (`--nocapture`, `--test-threads N`, …) are taken and do
/// nothing. A case fails by panicking; any failure fails the binary (exit
/// code 101, as libtest's).
pub fn harness(cases: &[(&'static str, fn())]) -> std::process::ExitCode {
    use std::process::ExitCode;
    const WITH_VALUE: [&str; 6] = [
        "--skip",
        "--test-threads",
        "--color",
        "--format",
        "--logfile",
        "-Z",
    ];
    let (mut filters, mut skips) = (Vec::new(), Vec::new());
    let (mut exact, mut list, mut ignored_only) = (false, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--exact" => exact = true,
            "--list" => list = true,
            "--ignored" => ignored_only = true,
            "--skip" => skips.extend(args.next()),
            flag if WITH_VALUE.contains(&flag) => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_owned()),
        }
    }
    let named = |name: &str, pattern: &str| {
        if exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    };
    let chosen: Vec<_> = cases
        .iter()
        .filter(|_| !ignored_only)
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| named(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| named(name, s)))
        .collect();
    if list {
        for (name, _) in &chosen {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    println!("\nrunning {} tests", chosen.len());
    let started = std::time::Instant::now();
    let running: Vec<_> = chosen
        .iter()
        .map(|&&(name, case)| {
            let thread = std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(case)
                .expect("a thread for the case");
            (name, thread)
        })
        .collect();
    let mut failed = Vec::new();
    for (name, thread) in running {
        let ok = thread.join().is_ok();
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            failed.push(name);
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        chosen.len() - failed.len(),
        failed.len(),
        cases.len() - chosen.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}

// ---- timings (Config::fast) ----

const LEASE: Duration = Duration::from_secs(2);
const RENEW_DEADLINE: Duration = Duration::from_millis(1_500);
const RETRY: Duration = Duration::from_millis(250);
const TICK: Duration = Duration::from_millis(5);
/// The first election on an absent lock: the creator waits one lease (strict lock
/// delay: a deleted lock may still have a believer) before it leads.
const FIRST_ELECTION: Duration = Duration::from_millis(3_500);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// ---- the cluster under test ----

/// A memory store whose latency uses the runtime's timer (virtual under paused tokio).
fn new_store<R: Runtime>(rt: &R) -> MemoryStore {
    let rt = rt.clone();
    MemoryStore::new().with_sleeper(move |d| rt.sleep(d))
}

/// Every state a node published, in order (the hook sees them all).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<LeadershipState>>>);

impl Recorder {
    fn all(&self) -> Vec<LeadershipState> {
        self.0.lock().unwrap().clone()
    }

    fn changes(&self) -> Vec<Change> {
        self.all().into_iter().map(|s| s.change).collect()
    }

    fn stops(&self) -> Vec<StopReason> {
        self.changes()
            .into_iter()
            .filter_map(|c| match c {
                Change::Elector(Event::StoppedLeading { reason, .. }) => Some(reason),
                _ => None,
            })
            .collect()
    }

    /// Starts and stops pair up, in order (the core's pairing rule,
    /// [`Pairing`], over every state published).
    fn assert_paired(&self, who: &str) {
        let mut pairing = Pairing::new();
        for c in self.changes() {
            if let Change::Elector(event) = c
                && let Err(broken) = pairing.check(&event)
            {
                panic!("{who}: {broken}");
            }
        }
    }
}

/// What the test leader work saw, with the write-log position at each point.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Note {
    Started(u64),
    Cancelled(u64),
    Ended(u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WorkMode {
    /// Waits for the signal, then drains for this long.
    Cooperative(Duration),
    /// Panics at once.
    Panics,
    /// The closure making the work panics (no future is made).
    PanicsOnStart,
    /// Never returns, whatever the signal says.
    IgnoresCancel,
}

struct TestWork<R> {
    rt: R,
    store: MemoryStore,
    mode: WorkMode,
    notes: Arc<Mutex<Vec<Note>>>,
}

/// The message every panic this suite injects starts with.
const INJECTED: &str = "injected leader-work";

/// Prints the panics this suite injects as one line, without a backtrace; any
/// other panic goes to the hook installed before. The default hook captures
/// and symbolizes a backtrace when `RUST_BACKTRACE` is set, and the first
/// symbolization in a process parses the test binary's debug info (412 ms for
/// one panic measured on a loaded 2-core machine): with the suite's cases in
/// parallel that held the driver's thread (the closure panics on it) past the
/// 1.5 s renew deadline, so the node lost its term and the closure ran again.
/// What the cases check is the report and the renewals, not that stall.
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info.payload().downcast_ref::<&str>().copied();
            match message {
                Some(m) if m.starts_with(INJECTED) => eprintln!("{m} (as the test asked)"),
                _ => before(info),
            }
        }));
    });
}

fn log_position(store: &MemoryStore) -> u64 {
    store.write_log().last().map_or(0, |w| w.seq)
}

impl<R: Runtime> LeaderWork for TestWork<R> {
    fn start(&mut self, _term: Term) -> WorkRun {
        if self.mode == WorkMode::PanicsOnStart {
            self.notes
                .lock()
                .unwrap()
                .push(Note::Started(log_position(&self.store)));
            panic!("injected leader-work closure panic");
        }
        let signal = CancelSignal::new();
        let (rt, store, mode, notes) = (
            self.rt.clone(),
            self.store.clone(),
            self.mode,
            self.notes.clone(),
        );
        let s = signal.clone();
        let future = Box::pin(async move {
            notes
                .lock()
                .unwrap()
                .push(Note::Started(log_position(&store)));
            match mode {
                WorkMode::Panics | WorkMode::PanicsOnStart => panic!("injected leader-work panic"),
                WorkMode::IgnoresCancel => futures::future::pending::<()>().await,
                WorkMode::Cooperative(drain) => {
                    s.cancelled().await;
                    notes
                        .lock()
                        .unwrap()
                        .push(Note::Cancelled(log_position(&store)));
                    if !drain.is_zero() {
                        rt.sleep(drain).await;
                    }
                    notes
                        .lock()
                        .unwrap()
                        .push(Note::Ended(log_position(&store)));
                }
            }
        });
        WorkRun {
            future,
            cancel: Box::new(move || signal.cancel()),
        }
    }
}

struct Node {
    name: String,
    handle: Option<Handle>,
    states: Recorder,
    notes: Arc<Mutex<Vec<Note>>>,
}

impl Node {
    fn h(&self) -> &Handle {
        self.handle.as_ref().expect("node still running")
    }

    fn is_leader(&self) -> bool {
        self.handle.as_ref().is_some_and(Handle::is_leader)
    }

    fn notes(&self) -> Vec<Note> {
        self.notes.lock().unwrap().clone()
    }
}

struct Cluster<R> {
    rt: R,
    store: MemoryStore,
}

impl<R: Runtime> Cluster<R> {
    fn new(rt: R) -> Self {
        let store = new_store(&rt);
        Cluster { rt, store }
    }

    fn builder(
        &self,
        name: &str,
        mode: Option<WorkMode>,
        on_loss: OnLoss,
    ) -> (
        Builder<lock_memory::MemoryLock>,
        Recorder,
        Arc<Mutex<Vec<Note>>>,
    ) {
        let seed = name.bytes().map(u64::from).sum::<u64>();
        let states = Recorder::default();
        let notes = Arc::new(Mutex::new(Vec::new()));
        let rec = states.clone();
        let mut b = Builder::new(self.store.client(name), Config::fast(name).seed(seed))
            .on_loss(on_loss)
            .on_state(move |s| rec.0.lock().unwrap().push(s.clone()));
        if let Some(mode) = mode {
            b = b.custom_leader_work(TestWork {
                rt: self.rt.clone(),
                store: self.store.clone(),
                mode,
                notes: notes.clone(),
            });
        }
        (b, states, notes)
    }

    fn spawn_with(&self, name: &str, mode: Option<WorkMode>, on_loss: OnLoss) -> Node {
        let (b, states, notes) = self.builder(name, mode, on_loss);
        let handle = b.spawn(self.rt.clone()).expect("valid configuration");
        Node {
            name: name.to_owned(),
            handle: Some(handle),
            states,
            notes,
        }
    }

    fn spawn(&self, name: &str) -> Node {
        self.spawn_with(
            name,
            Some(WorkMode::Cooperative(Duration::ZERO)),
            OnLoss::Campaign,
        )
    }

    async fn sleep(&self, d: Duration) {
        self.rt.sleep(d).await;
    }

    /// Waits until `cond` holds, checking every few milliseconds; panics after
    /// `within`. Returns how long it took.
    async fn until(
        &self,
        within: Duration,
        what: &str,
        mut cond: impl FnMut() -> bool,
    ) -> Duration {
        let start = self.rt.now();
        loop {
            if cond() {
                return self.rt.now() - start;
            }
            let waited = self.rt.now() - start;
            assert!(
                waited <= within,
                "waited {waited:?} (limit {within:?}) until {what}"
            );
            self.rt.sleep(TICK).await;
        }
    }

    /// Waits for exactly one leader among `nodes`; returns its index.
    async fn elected(&self, nodes: &[Node], within: Duration) -> usize {
        self.until(within, "exactly one leader", || {
            nodes.iter().filter(|n| n.is_leader()).count() == 1
        })
        .await;
        nodes.iter().position(Node::is_leader).expect("one leads")
    }

    /// Writes by `client` at log positions after `after`.
    fn writes_by(&self, client: &str, after: u64) -> Vec<LoggedWrite> {
        self.store
            .write_log()
            .into_iter()
            .filter(|w| &*w.client == client && w.seq > after)
            .collect()
    }

    /// The release writes (empty holder) by `client`.
    fn releases_by(&self, client: &str) -> Vec<LoggedWrite> {
        self.writes_by(client, 0)
            .into_iter()
            .filter(|w| w.record.as_ref().is_some_and(|r| r.holder.is_empty()))
            .collect()
    }

    fn holder(&self) -> Option<String> {
        self.store
            .current()
            .map(|o| o.record.holder.to_string())
            .filter(|h| !h.is_empty())
    }

    async fn shutdown_all(&self, nodes: &mut [Node]) {
        for n in nodes.iter_mut() {
            if let Some(h) = n.handle.take() {
                h.shutdown().await;
            }
        }
    }

    /// Asserts that at most one node leads, sampling for `d`.
    async fn at_most_one_leader_for(&self, nodes: &[Node], d: Duration) {
        let end = self.rt.now() + d;
        while self.rt.now() < end {
            let leaders: Vec<&str> = nodes
                .iter()
                .filter(|n| n.is_leader())
                .map(|n| n.name.as_str())
                .collect();
            assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
            self.rt.sleep(TICK).await;
        }
    }
}

/// A candidate for each name, spawned in order.
fn spawn_all<R: Runtime>(c: &Cluster<R>, names: &[&str]) -> Vec<Node> {
    names.iter().map(|n| c.spawn(n)).collect()
}

fn three<R: Runtime>(c: &Cluster<R>) -> Vec<Node> {
    spawn_all(c, &["node-a", "node-b", "node-c"])
}

// ---- the cases ----

/// Three candidates start together: exactly one leads, stays leader (holding
/// a term) while it renews, and all three agree on who it is.
pub async fn three_candidates_elect_exactly_one<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = three(&c);
    let mut i = c.elected(&nodes, FIRST_ELECTION).await;
    // Three leases of steady state: the same single leader throughout. On a
    // real-time runtime the test shares the machine: if this process (its
    // drivers with it) was not run for longer than the renew deadline minus a
    // retry, the leader is rightly past its deadline (docs/faults.md N5; a
    // loaded machine once withheld it for 20 s), and the window starts again
    // from the next election. The stall watch's thread, apart from the
    // executor, tells that from an executor that was blocked: then the checks
    // stand.
    let watch = StallWatch::start();
    let margin = RENEW_DEADLINE - RETRY;
    let mut end = c.rt.now() + 3 * LEASE;
    let mut checked = (c.rt.now(), std::time::Instant::now());
    loop {
        let leaders: Vec<&str> = nodes
            .iter()
            .filter(|n| n.is_leader())
            .map(|n| n.name.as_str())
            .collect();
        let term = nodes[i].h().term();
        let gap = c.rt.now() - checked.0;
        let stalled = watch.longest_within(checked.1, std::time::Instant::now());
        if gap > margin && stalled > margin {
            eprintln!("this process was not run for {stalled:?}: the window starts again");
            i = c.elected(&nodes, FIRST_ELECTION).await;
            end = c.rt.now() + 3 * LEASE;
        } else {
            assert_eq!(leaders, [nodes[i].name.as_str()]);
            assert!(term.is_some(), "{} leads without a term", nodes[i].name);
            if c.rt.now() >= end {
                break;
            }
        }
        checked = (c.rt.now(), std::time::Instant::now());
        c.sleep(ms(50)).await;
    }
    let leader = nodes[i].name.clone();
    for n in &nodes {
        assert_eq!(
            n.h().leader().as_deref(),
            Some(leader.as_str()),
            "{}",
            n.name
        );
    }
    assert_eq!(c.holder().as_deref(), Some(leader.as_str()));
    c.shutdown_all(&mut nodes).await;
    for n in &nodes {
        n.states.assert_paired(&n.name);
    }
}

/// The leader shuts down: it releases, and another leads within moments (the
/// followers' watches see the release), not after a lease.
pub async fn leader_shutdown_hands_over<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = three(&c);
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    let old = nodes[i].name.clone();
    nodes[i].handle.take().unwrap().shutdown().await;
    assert_eq!(c.releases_by(&old).len(), 1, "one release write by {old}");
    let took = c
        .until(ms(500), "a new leader after the release", || {
            nodes.iter().filter(|n| n.is_leader()).count() == 1
        })
        .await;
    assert!(took < LEASE / 4, "hand-over took {took:?}");
    let new = nodes.iter().position(Node::is_leader).unwrap();
    assert_ne!(nodes[new].name, old);
    assert!(matches!(
        nodes[i].states.changes().last(),
        Some(Change::Elector(Event::Terminated))
    ));
    assert_eq!(nodes[i].states.stops(), [StopReason::ShutDown]);
    c.shutdown_all(&mut nodes).await;
}

/// The leader steps down: another takes over quickly, and the old leader stays a
/// follower (it does not campaign for one lease).
pub async fn leader_step_down_hands_over<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = spawn_all(&c, &["node-a", "node-b"]);
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    nodes[i].h().step_down().await;
    assert!(!nodes[i].is_leader());
    assert_eq!(nodes[i].h().state().role, Role::Follower);
    c.until(ms(500), "the other node leads", || nodes[1 - i].is_leader())
        .await;
    c.at_most_one_leader_for(&nodes, LEASE).await;
    assert!(nodes[1 - i].is_leader(), "the new leader keeps the lock");
    assert_eq!(nodes[i].states.stops(), [StopReason::SteppedDown]);
    c.shutdown_all(&mut nodes).await;
}

/// Dropping a leader's handle without shutdown still drains and releases.
pub async fn dropped_handle_releases_best_effort<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = spawn_all(&c, &["node-a", "node-b"]);
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    let old = nodes[i].name.clone();
    drop(nodes[i].handle.take());
    c.until(ms(500), "the dropped leader released", || {
        !c.releases_by(&old).is_empty()
    })
    .await;
    c.until(ms(500), "the other node leads", || nodes[1 - i].is_leader())
        .await;
    assert!(matches!(
        nodes[i].states.changes().last(),
        Some(Change::Elector(Event::Terminated))
    ));
    c.shutdown_all(&mut nodes).await;
}

/// The leader crashes (no release): another leads about one lease after the
/// crash, never before the lease the crashed one held has expired.
pub async fn leader_crash_fails_over_after_one_lease<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = three(&c);
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    let old = nodes[i].name.clone();
    nodes[i].handle.take().unwrap().abort();
    let took = c
        .until(LEASE * 2, "a new leader after the crash", || {
            nodes.iter().filter(|n| n.is_leader()).count() == 1
        })
        .await;
    // Followers time the lease from when they saw the last renew (at most one
    // retry period before the crash): never earlier than that.
    assert!(
        took >= LEASE - RETRY - ms(50),
        "took over after only {took:?}"
    );
    assert!(took <= LEASE + ms(1_200), "failover took {took:?}");
    assert!(c.releases_by(&old).is_empty(), "a crash does not release");
    assert!(matches!(
        nodes[i].states.changes().last(),
        Some(Change::Aborted)
    ));
    c.shutdown_all(&mut nodes).await;
}

/// On a graceful give-up the leader work is cancelled and has ended before the
/// release write (the write log orders them).
pub async fn work_is_cancelled_and_awaited_before_release<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut n = c.spawn_with(
        "node-a",
        Some(WorkMode::Cooperative(ms(100))),
        OnLoss::Campaign,
    );
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    n.handle.take().unwrap().shutdown().await;
    let notes = n.notes();
    let Some(Note::Ended(ended)) = notes.last().cloned() else {
        panic!("the work did not end: {notes:?}");
    };
    let releases = c.releases_by("node-a");
    assert_eq!(releases.len(), 1, "{notes:?}");
    assert!(
        releases[0].seq > ended,
        "release (log #{}) before the work ended (log #{ended})",
        releases[0].seq
    );
    assert!(matches!(notes.first(), Some(Note::Started(_))));
    assert!(notes.iter().any(|x| matches!(x, Note::Cancelled(_))));
}

/// A companion (coordinated election's candidacy) is stopped on shutdown, or
/// when every handle is dropped, and has ended before the release is written,
/// even when it takes a while to end; and a driver that ends otherwise (an
/// abort) stops its companion too.
pub async fn companion_ends_before_the_release_and_with_the_driver<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    // Shut down (node-a), then every handle dropped without a shutdown (node-c).
    for (id, shut_down) in [("node-a", true), ("node-c", false)] {
        let ended_at = Arc::new(Mutex::new(None::<u64>));
        let (at, store, clock) = (ended_at.clone(), c.store.clone(), c.rt.clone());
        let (b, _, _) = c.builder(id, None, OnLoss::Campaign);
        let handle = b
            .companion(move |stop| async move {
                stop.cancelled().await;
                clock.sleep(ms(100)).await; // a withdrawal takes a request or two
                *at.lock().unwrap() = Some(log_position(&store));
            })
            .spawn(c.rt.clone())
            .expect("valid configuration");
        c.until(FIRST_ELECTION, "it leads", || handle.is_leader())
            .await;
        if shut_down {
            handle.shutdown().await;
            assert!(
                ended_at.lock().unwrap().is_some(),
                "{id}: the companion ended before the shutdown resolved"
            );
        } else {
            drop(handle);
        }
        c.until(ms(1_000), "it released", || !c.releases_by(id).is_empty())
            .await;
        let ended = ended_at
            .lock()
            .unwrap()
            .expect("the companion ended before the release");
        let releases = c.releases_by(id);
        assert_eq!(releases.len(), 1, "{id}: one release");
        assert!(
            releases[0].seq > ended,
            "{id}: release (log #{}) before the companion ended (log #{ended})",
            releases[0].seq
        );
    }

    let stopped = CancelSignal::new();
    let seen = stopped.clone();
    let (b, _, _) = c.builder("node-b", None, OnLoss::Campaign);
    let b = b
        .companion(move |stop| async move {
            stop.cancelled().await;
            seen.cancel();
        })
        .spawn(c.rt.clone())
        .expect("valid configuration");
    c.sleep(ms(100)).await;
    assert!(
        !stopped.is_cancelled(),
        "a companion runs while its driver does"
    );
    b.abort();
    c.until(ms(500), "the aborted driver's companion stopped", || {
        stopped.is_cancelled()
    })
    .await;
}

/// With `OnLoss::Exit`, losing leadership ends the driver (client-go's
/// `RunOrDie`) and its state stream.
pub async fn on_loss_exit_ends_the_driver<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let n = c.spawn_with("node-a", None, OnLoss::Exit);
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    let mut stream = n.h().states();
    let mut rec = c.store.current().unwrap().record;
    rec.holder = "someone-else".into();
    let edit = c.store.set_record(rec);
    let last = c.until(ms(1_000), "the driver ended", || {
        matches!(
            n.states.changes().last(),
            Some(Change::Elector(Event::Terminated))
        )
    });
    last.await;
    assert!(!n.is_leader());
    let mut seen = Vec::new();
    while let Some(s) = stream.next().await {
        seen.push(s.change);
    }
    assert!(
        matches!(seen.last(), Some(Change::Elector(Event::Terminated))),
        "{seen:?}"
    );
    assert_stopped_for(&n.states.stops(), "someone-else");
    let seq = c
        .store
        .write_log()
        .iter()
        .find(|w| w.version == edit.version)
        .unwrap()
        .seq;
    assert!(
        c.writes_by("node-a", seq).is_empty(),
        "no write after the loss"
    );
}

/// docs/faults.md H1: shutdown while a renew is in flight, whose answer is lost although
/// it was applied: the release re-reads and still releases.
pub async fn h1_shutdown_while_renew_in_flight_releases<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut n = c.spawn("node-a");
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    let faults = c.store.faults("node-a");
    faults
        .set(Faults::none().latency(Delay::fixed(ms(100)), Delay::NONE))
        .unwrap();
    faults.inject_for(OpKind::Update, Fault::AnswerLost);
    let before = faults.calls().update;
    let pos = log_position(&c.store);
    c.until(ms(1_000), "a renew is in flight", || {
        faults.calls().update > before
    })
    .await;
    let start = c.rt.now();
    let gets = faults.calls().get;
    n.handle.take().unwrap().shutdown().await;
    assert!(
        c.rt.now() - start < RENEW_DEADLINE,
        "shutdown took too long"
    );
    assert_eq!(c.holder(), None, "the lock was released");
    assert_eq!(c.releases_by("node-a").len(), 1);
    // The lost-answer path happened: the renew landed (a write naming node-a
    // before the release) although its answer was lost, so the release could not
    // trust its version and read the lock afresh first.
    let writes = c.writes_by("node-a", pos);
    assert!(
        matches!(
            writes.as_slice(),
            [.., renew, release]
                if renew.record.as_ref().is_some_and(|r| &*r.holder == "node-a")
                    && release.record.as_ref().is_some_and(|r| r.holder.is_empty())
        ),
        "the lost renew then the release: {writes:?}"
    );
    assert!(
        faults.calls().get > gets,
        "the release did not read after the lost answer"
    );
    n.states.assert_paired("node-a");
}

/// docs/faults.md H2: shutdown while a read hangs: the driver ends at once, reporting it.
pub async fn h2_shutdown_while_read_in_flight_exits_promptly<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    c.store
        .faults("node-a")
        .inject_for(OpKind::Get, Fault::Hang);
    let mut n = c.spawn("node-a");
    let faults = c.store.faults("node-a");
    c.until(ms(500), "the read started", || faults.calls().get >= 1)
        .await;
    let start = c.rt.now();
    n.handle.take().unwrap().shutdown().await;
    assert!(c.rt.now() - start < ms(100), "shutdown waited for the read");
    assert!(matches!(
        n.states.changes().last(),
        Some(Change::Elector(Event::Terminated))
    ));
    assert!(c.writes_by("node-a", 0).is_empty());
}

/// docs/faults.md H3: the leader work is slow to stop: the release waits for it, and the
/// leader keeps renewing meanwhile.
pub async fn h3_slow_work_delays_release_while_renewals_go_on<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let drain = ms(700);
    let mut n = c.spawn_with(
        "node-a",
        Some(WorkMode::Cooperative(drain)),
        OnLoss::Campaign,
    );
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    let start = c.rt.now();
    n.handle.take().unwrap().shutdown().await;
    assert!(
        c.rt.now() - start >= drain,
        "shutdown did not wait for the work"
    );
    let notes = n.notes();
    let (Some(Note::Cancelled(cancelled)), Some(Note::Ended(ended))) =
        (notes.get(1).cloned(), notes.get(2).cloned())
    else {
        panic!("unexpected work notes {notes:?}");
    };
    let renews_while_draining = c
        .writes_by("node-a", cancelled)
        .into_iter()
        .filter(|w| w.seq <= ended && w.kind == WriteKind::Update)
        .count();
    assert!(
        renews_while_draining >= 2,
        "only {renews_while_draining} renews during a {drain:?} drain"
    );
    let releases = c.releases_by("node-a");
    assert_eq!(releases.len(), 1);
    assert!(releases[0].seq > ended);
}

/// docs/faults.md H4: the lock was taken from the leader (a human set another holder):
/// on shutdown it writes nothing.
pub async fn h4_release_when_another_holds_writes_nothing<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut n = c.spawn("node-a");
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    let mut rec = c.store.current().unwrap().record;
    rec.holder = "intruder".into();
    let edit = c.store.set_record(rec);
    c.until(ms(500), "node-a saw the intruder", || !n.is_leader())
        .await;
    n.handle.take().unwrap().shutdown().await;
    let seq = c
        .store
        .write_log()
        .iter()
        .find(|w| w.version == edit.version)
        .unwrap()
        .seq;
    assert!(
        c.writes_by("node-a", seq).is_empty(),
        "node-a wrote after the edit"
    );
    assert_eq!(c.holder().as_deref(), Some("intruder"));
    assert_stopped_for(&n.states.stops(), "intruder");
}

/// Exactly one stop, because `other` holds the lock: seen through the watch, or
/// (a renew racing the edit on a loaded machine) through the conflict and the read
/// after it. Both stop at once; which comes first is a race.
fn assert_stopped_for(stops: &[StopReason], other: &str) {
    assert!(
        matches!(
            stops,
            [StopReason::ObservedOtherHolder { holder } | StopReason::LostConflict { holder }]
                if &**holder == other
        ),
        "one stop for {other}: {stops:?}"
    );
}

/// Spawns node-a with 100 ms of request latency and shuts it down while its first
/// write of `kind` is in flight, with the write's answer lost if `lose_answer`
/// (the write still lands). Returns the node, shut down.
async fn shut_down_during_first_write<R: Runtime>(
    c: &Cluster<R>,
    kind: OpKind,
    lose_answer: bool,
) -> Node {
    let faults = c.store.faults("node-a");
    faults
        .set(Faults::none().latency(Delay::fixed(ms(100)), Delay::NONE))
        .unwrap();
    if lose_answer {
        faults.inject_for(kind, Fault::AnswerLost);
    }
    let mut n = c.spawn("node-a");
    c.until(ms(500), "the write started", || {
        let calls = faults.calls();
        match kind {
            OpKind::Get => calls.get >= 1,
            OpKind::Create => calls.create >= 1,
            OpKind::Update => calls.update >= 1,
        }
    })
    .await;
    n.handle.take().unwrap().shutdown().await;
    n
}

/// docs/faults.md H5: shutdown races an acquisition in flight (answered, or applied with
/// its answer lost): the node either started and stopped and released, or
/// released without starting; the lock is never left held. The lock exists,
/// released (empty holder), so the acquisition is a compare-and-swap.
pub async fn h5_shutdown_racing_acquisition_never_holds_silently<R: Runtime>(rt: R) {
    for lose_answer in [false, true] {
        let c = Cluster::new(rt.clone());
        c.store.set_record(LockRecord {
            lease_duration_secs: Some(1),
            transitions: 3,
            ..LockRecord::default()
        });
        let n = shut_down_during_first_write(&c, OpKind::Update, lose_answer).await;
        assert_eq!(
            c.holder(),
            None,
            "lock left held (lost answer: {lose_answer})"
        );
        assert_eq!(
            c.store.current().map(|o| o.record.holder.is_empty()),
            Some(true)
        );
        n.states.assert_paired("node-a");
    }
}

/// docs/faults.md H5 for a lock this node creates while it shuts down (answered, or
/// applied with its answer lost), under the strict lock delay (docs/design.md §4): it
/// never starts, and it does not release the record its create made, since a
/// leader of a lock deleted just before may still believe and an empty holder is
/// taken at once. Not silently: it reports `LeftToExpire`, and the record expires
/// after its lease.
pub async fn h5_shutdown_racing_a_create_leaves_it_to_expire<R: Runtime>(rt: R) {
    for lose_answer in [false, true] {
        let c = Cluster::new(rt.clone());
        let n = shut_down_during_first_write(&c, OpKind::Create, lose_answer).await;
        assert_eq!(
            c.holder().as_deref(),
            Some("node-a"),
            "the created record is left (lost answer: {lose_answer})"
        );
        assert!(
            n.states.changes().iter().any(|ch| matches!(
                ch,
                Change::Elector(Event::Warning(election_core::Warning::LeftToExpire))
            )),
            "reported (lost answer: {lose_answer}): {:?}",
            n.states.changes()
        );
        assert!(
            !n.states
                .changes()
                .iter()
                .any(|ch| matches!(ch, Change::Elector(Event::StartedLeading { .. }))),
            "never started"
        );
        n.states.assert_paired("node-a");
    }
}

/// docs/faults.md H6: the leader work panics: the panic is reported and the node keeps
/// leading and renewing; it still shuts down cleanly.
pub async fn h6_panicking_work_is_reported_and_renewals_go_on<R: Runtime>(rt: R) {
    quiet_injected_panics();
    let c = Cluster::new(rt);
    let mut n = c.spawn_with("node-a", Some(WorkMode::Panics), OnLoss::Campaign);
    c.until(FIRST_ELECTION, "the panic is reported", || {
        n.states
            .changes()
            .iter()
            .any(|ch| matches!(ch, Change::Problem(DriverError::WorkPanicked { .. })))
    })
    .await;
    let pos = log_position(&c.store);
    c.sleep(LEASE).await;
    assert!(n.is_leader(), "leadership lost after the work panicked");
    assert!(c.writes_by("node-a", pos).len() >= 4, "renewals stopped");
    n.handle.take().unwrap().shutdown().await;
    assert_eq!(c.holder(), None);
}

/// docs/faults.md H6: the closure making the leader work panics (on the driver's task,
/// before any future exists): the panic is reported, the driver lives on, the
/// node keeps leading and renewing, and shutdown releases and terminates.
pub async fn h6_panicking_work_closure_is_reported_and_renewals_go_on<R: Runtime>(rt: R) {
    quiet_injected_panics();
    let c = Cluster::new(rt);
    let mut n = c.spawn_with("node-a", Some(WorkMode::PanicsOnStart), OnLoss::Campaign);
    c.until(FIRST_ELECTION, "the panic is reported", || {
        n.states.changes().iter().any(|ch| {
            matches!(ch, Change::Problem(DriverError::WorkPanicked { message })
                if message.contains("closure panic"))
        })
    })
    .await;
    assert_eq!(n.notes().len(), 1, "the closure ran once: {:?}", n.notes());
    let pos = log_position(&c.store);
    c.sleep(LEASE).await;
    assert!(n.is_leader(), "leadership lost after the closure panicked");
    assert!(c.writes_by("node-a", pos).len() >= 4, "renewals stopped");
    n.handle.take().unwrap().shutdown().await;
    assert_eq!(c.holder(), None, "the lock was released");
    assert_eq!(c.releases_by("node-a").len(), 1);
    assert!(matches!(
        n.states.changes().last(),
        Some(Change::Elector(Event::Terminated))
    ));
    n.states.assert_paired("node-a");
}

/// docs/faults.md H6: the leader work blocks and ignores cancellation: shutdown ends
/// within the release budget (one renew deadline), leadership ends, and the lock
/// is not released under the running work (it expires instead).
pub async fn h6_blocking_work_is_bounded_by_the_release_budget<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut n = c.spawn_with("node-a", Some(WorkMode::IgnoresCancel), OnLoss::Campaign);
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    let h = n.handle.take().unwrap();
    let start = c.rt.now();
    h.shutdown().await;
    let took = c.rt.now() - start;
    assert!(took >= RENEW_DEADLINE - ms(50), "gave up early: {took:?}");
    // The bound tells a budget-bounded shutdown from one that waits for the
    // work (forever) or for the lease. On smol and async-std it is real time,
    // so it keeps a margin for a loaded machine: 2.0 s was measured with both
    // cores busy (.ci/repeat), where the driver's last turns waited for a core.
    assert!(took <= RENEW_DEADLINE + ms(1_000), "shutdown took {took:?}");
    assert!(
        c.releases_by("node-a").is_empty(),
        "released under running work"
    );
    n.states.assert_paired("node-a");
}

/// A future that can be frozen: while paused it is not polled at all, as a
/// stopped process (SIGSTOP, a VM pause).
struct Freezable<F> {
    inner: Pin<Box<F>>,
    gate: Arc<Gate>,
}

#[derive(Default)]
struct Gate {
    paused: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Gate {
    fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
    }

    fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }
}

impl<F: Future<Output = ()>> Future for Freezable<F> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.gate.waker.lock().unwrap() = Some(cx.waker().clone());
        if self.gate.paused.load(Ordering::SeqCst) {
            return Poll::Pending;
        }
        self.inner.as_mut().poll(cx)
    }
}

/// docs/faults.md N5: the leader's process is frozen for longer than a lease. Its
/// `is_leader` turns false at the deadline while frozen (no event needed), another
/// node takes over, and on resume the frozen node checks its deadline before
/// acting: it never writes as leader again.
pub async fn n5_paused_leader_is_past_its_deadline_on_resume<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let (b, states, notes) = c.builder("node-a", None, OnLoss::Campaign);
    let (driver, handle) = b.build(c.rt.clone()).unwrap();
    let gate = Arc::new(Gate::default());
    c.rt.spawn(Box::pin(Freezable {
        inner: Box::pin(driver.run()),
        gate: gate.clone(),
    }));
    let mut a = Node {
        name: "node-a".into(),
        handle: Some(handle),
        states,
        notes,
    };
    c.until(FIRST_ELECTION, "node-a leads", || a.is_leader())
        .await;
    let mut others: Vec<Node> = ["node-b", "node-c"]
        .into_iter()
        .map(|n| c.spawn(n))
        .collect();
    c.sleep(ms(300)).await;
    gate.pause();
    let paused_at = log_position(&c.store);
    // Frozen, the driver publishes nothing more: the deadline is final, at most
    // one renew deadline away (its last renew was sent before the pause).
    // `is_leader` turns false exactly there; the wait below only polls for it,
    // every tick, on a loaded machine.
    let deadline = a.h().deadline().expect("node-a leads");
    assert!(deadline - c.rt.now() <= RENEW_DEADLINE);
    c.until(
        RENEW_DEADLINE + ms(50),
        "frozen node-a is no longer leader",
        || !a.is_leader(),
    )
    .await;
    assert!(c.rt.now() >= deadline, "not leader before its deadline");
    c.until(LEASE * 2, "another node leads", || {
        others.iter().any(Node::is_leader)
    })
    .await;
    c.sleep(LEASE).await;
    assert!(!a.is_leader());
    gate.resume();
    c.sleep(LEASE).await;
    assert!(!a.is_leader());
    let as_leader: Vec<_> = c
        .writes_by("node-a", paused_at)
        .into_iter()
        .filter(|w| w.record.as_ref().is_some_and(|r| &*r.holder == "node-a"))
        .collect();
    assert!(
        as_leader.is_empty(),
        "node-a wrote as leader after resume: {as_leader:?}"
    );
    assert_eq!(a.states.stops(), [StopReason::DeadlineExceeded]);
    assert!(others.iter().filter(|n| n.is_leader()).count() == 1);
    c.shutdown_all(std::slice::from_mut(&mut a)).await;
    c.shutdown_all(&mut others).await;
}

/// docs/faults.md N7: the leader is partitioned from the lock: it stops at its deadline,
/// another takes over a lease after its last observed change, never overlapping;
/// after healing, the old leader follows the new one.
pub async fn n7_partitioned_leader_stops_at_deadline_and_others_take_over<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = three(&c);
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    let old = nodes[i].name.clone();
    c.store.partition(&old);
    let start = c.rt.now();
    // The deadline the old leader last published: polling `is_leader` every tick
    // would see the stop up to a (loaded) tick late, so the bound is checked on
    // the deadline itself, which `is_leader` honours by construction.
    let mut deadline = nodes[i].h().deadline();
    let mut stopped = None;
    let mut new = None;
    while new.is_none() {
        let leaders: Vec<usize> = (0..nodes.len()).filter(|&j| nodes[j].is_leader()).collect();
        assert!(leaders.len() <= 1, "overlap during the partition");
        if stopped.is_none() {
            if nodes[i].is_leader() {
                deadline = nodes[i].h().deadline();
            } else {
                let d = deadline.expect("a leader has a deadline");
                stopped = Some(d.saturating_duration_since(start));
            }
        }
        if let Some(&j) = leaders.first().filter(|&&j| j != i) {
            new = Some((j, c.rt.now() - start));
        }
        assert!(
            c.rt.now() - start < LEASE * 2,
            "no takeover after the partition"
        );
        c.sleep(TICK).await;
    }
    let stopped = stopped.expect("the old leader stopped");
    let (j, took) = new.unwrap();
    assert!(
        stopped <= RENEW_DEADLINE,
        "old leader's deadline {stopped:?} after the partition"
    );
    assert!(
        took >= LEASE - RETRY - ms(50),
        "takeover after only {took:?}"
    );
    assert_eq!(nodes[i].states.stops(), [StopReason::DeadlineExceeded]);
    c.store.heal(&old);
    let new_name = nodes[j].name.clone();
    c.until(LEASE * 2, "the healed node follows the new leader", || {
        nodes[i].h().leader().as_deref() == Some(new_name.as_str())
    })
    .await;
    assert!(!nodes[i].is_leader());
    c.shutdown_all(&mut nodes).await;
}

/// docs/faults.md W1: the followers' watches break just before the leader releases: they
/// poll meanwhile (a new leader within a polling interval, not a lease), and the
/// watches are resumed.
pub async fn w1_broken_watch_resumes_and_polls_meanwhile<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = three(&c);
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    // Let the followers settle into watching.
    c.sleep(ms(300)).await;
    let followers: Vec<String> = (0..3)
        .filter(|&j| j != i)
        .map(|j| nodes[j].name.clone())
        .collect();
    let watches_before: Vec<u64> = followers.iter().map(|f| c.store.calls(f).watch).collect();
    let gets_before: Vec<u64> = followers.iter().map(|f| c.store.calls(f).get).collect();
    for f in &followers {
        c.store.faults(f).break_watches();
    }
    // Polling: each follower reads while its watch is broken, before it resumes.
    c.until(
        RETRY,
        "the followers poll while their watches are broken",
        || {
            followers.iter().zip(&watches_before).for_each(|(f, &w)| {
                assert_eq!(
                    c.store.calls(f).watch,
                    w,
                    "{f} resumed its watch before polling"
                );
            });
            followers
                .iter()
                .zip(&gets_before)
                .all(|(f, &g)| c.store.calls(f).get > g)
        },
    )
    .await;
    nodes[i].handle.take().unwrap().shutdown().await;
    let took = c
        .until(LEASE, "a new leader after the release", || {
            nodes.iter().filter(|n| n.is_leader()).count() == 1
        })
        .await;
    // Polling: within one jittered retry interval plus a read and a write.
    assert!(took <= RETRY * 3, "takeover took {took:?} without watches");
    c.until(LEASE, "the watches were resumed", || {
        followers
            .iter()
            .zip(&watches_before)
            .all(|(f, &before)| c.store.calls(f).watch > before)
    })
    .await;
    c.shutdown_all(&mut nodes).await;
}

/// docs/faults.md N7 and W1: a follower is black-holed (its calls and its watch hang,
/// nothing ends or errs) while the leader renews, then healed. Its old watch stays
/// silent for good; the driver must not trust that silence: its next read shows a
/// newer version than the watch delivered and the watch is restarted. After that,
/// a leader shutdown is handed over within a watch delivery and a write, not a
/// lease.
pub async fn n7_w1_black_holed_watch_is_restarted_after_heal<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut nodes = spawn_all(&c, &["node-a", "node-b"]);
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    let f = nodes[1 - i].name.clone();
    c.sleep(ms(300)).await;
    let watches_before = c.store.calls(&f).watch;
    c.store.partition_with(&f, PartitionMode::Hang);
    let pos = log_position(&c.store);
    c.until(LEASE, "the leader renewed behind the black hole", || {
        c.writes_by(&nodes[i].name, pos).len() >= 2
    })
    .await;
    c.store.heal(&f);
    // The follower reads at its lease expiry at the latest (its watch is silent),
    // sees the renewals, and restarts the watch.
    c.until(
        LEASE + ms(500),
        "the healed follower restarts its watch",
        || c.store.calls(&f).watch > watches_before,
    )
    .await;
    assert!(!nodes[1 - i].is_leader());
    // Let the new watch catch up, then hand over.
    c.sleep(ms(100)).await;
    nodes[i].handle.take().unwrap().shutdown().await;
    let took = c
        .until(LEASE, "the healed follower takes over", || {
            nodes[1 - i].is_leader()
        })
        .await;
    assert!(
        took < LEASE / 4,
        "hand-over took {took:?}: the watch is still silent"
    );
    c.shutdown_all(&mut nodes).await;
}

/// docs/faults.md W1: the leader is black-holed briefly (shorter than its renew deadline,
/// so it keeps leading); its watch stays silent for good and nothing it reads is
/// newer than what the watch delivered, so only the idle limit can tell: the watch is restarted once it has said nothing
/// for that long, not before.
pub async fn w1_silent_watch_is_restarted_after_the_idle_limit<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let idle = ms(800);
    let (b, states, notes) = c.builder("node-a", None, OnLoss::Campaign);
    let handle = b
        .watch_idle_limit(idle)
        .spawn(c.rt.clone())
        .expect("valid configuration");
    let mut n = Node {
        name: "node-a".into(),
        handle: Some(handle),
        states,
        notes,
    };
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    c.sleep(ms(300)).await;
    let watches = c.store.calls("node-a").watch;
    c.store.partition_with("node-a", PartitionMode::Hang);
    let start = c.rt.now();
    c.sleep(ms(200)).await;
    c.store.heal("node-a");
    let took = c
        .until(idle + ms(500), "the silent watch is restarted", || {
            c.store.calls("node-a").watch > watches
        })
        .await;
    assert!(took >= idle - ms(300), "restarted after only {took:?}");
    assert!(
        c.rt.now() - start < idle + ms(500),
        "restarted late: {took:?}"
    );
    assert!(n.is_leader(), "the short black hole cost the leadership");
    n.handle.take().unwrap().shutdown().await;
    assert_eq!(c.holder(), None);
}

/// The memory lock, recording where each watch starts; while `gone` is set a
/// watch resumed from a version fails at once, as kube reports a 410 Gone (an
/// invalid request).
#[derive(Clone, Default)]
struct GoneOnResume {
    starts: Arc<Mutex<Vec<Option<Version>>>>,
    gone: Arc<AtomicBool>,
}

impl Layer<MemoryLock> for GoneOnResume {
    fn watch(&self, inner: &MemoryLock, from: Option<&Version>) -> Option<WatchStream> {
        self.starts.lock().unwrap().push(from.cloned());
        if from.is_some() && self.gone.load(Ordering::SeqCst) {
            let gone = Err(LockError::Invalid {
                message: "410 Gone: too old resource version".into(),
            });
            return Some(Box::pin(futures::stream::iter([gone])));
        }
        inner.watch(from)
    }
}

/// docs/faults.md W2: a watch resumed from a version that is gone fails at once; the
/// next watch starts afresh (no version) instead of resuming from the same
/// version again. The resume here is the restart of a black-holed follower's
/// watch after heal (the first failure in a row, so backoff alone would retry
/// the version).
pub async fn w2_resumed_watch_failing_at_once_is_started_afresh<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut a = c.spawn("node-a");
    c.until(FIRST_ELECTION, "node-a leads", || a.is_leader())
        .await;
    let lock = Layered::new(c.store.client("node-b"), GoneOnResume::default());
    let states = Recorder::default();
    let rec = states.clone();
    let mut b = Node {
        name: "node-b".into(),
        handle: Some(
            Builder::new(lock.clone(), Config::fast("node-b"))
                .on_state(move |s| rec.0.lock().unwrap().push(s.clone()))
                .spawn(c.rt.clone())
                .expect("valid configuration"),
        ),
        states,
        notes: Arc::default(),
    };
    c.until(ms(500), "node-b sees node-a lead", || {
        b.h().leader().as_deref() == Some("node-a")
    })
    .await;
    c.sleep(ms(300)).await;
    lock.layer().gone.store(true, Ordering::SeqCst);
    c.store.partition_with("node-b", PartitionMode::Hang);
    let pos = log_position(&c.store);
    c.until(LEASE, "node-a renewed behind the black hole", || {
        c.writes_by("node-a", pos).len() >= 2
    })
    .await;
    c.store.heal("node-b");
    let starts = || lock.layer().starts.lock().unwrap().clone();
    c.until(LEASE + ms(500), "a resume and the watch after it", || {
        starts().len() >= 3
    })
    .await;
    let starts = starts();
    assert!(starts[0].is_none(), "first watch: {starts:?}");
    assert!(starts[1].is_some(), "the restart resumes: {starts:?}");
    assert!(
        starts[2].is_none(),
        "after the resumed watch failed at once the next starts afresh: {starts:?}"
    );
    assert!(
        b.states
            .changes()
            .iter()
            .any(|ch| matches!(ch, Change::Problem(DriverError::Watch(_)))),
        "the failure is reported"
    );
    assert!(!b.is_leader());
    c.shutdown_all(std::slice::from_mut(&mut b)).await;
    c.shutdown_all(std::slice::from_mut(&mut a)).await;
}

/// A lock without a watch (client-go's situation): the driver never starts one,
/// followers poll, and a release is picked up within one jittered poll interval.
pub async fn lock_without_watch_is_polled<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let spawn = |name: &str| {
        let handle = Builder::new(c.store.client(name).without_watch(), Config::fast(name))
            .spawn(c.rt.clone())
            .expect("valid configuration");
        Node {
            name: name.to_owned(),
            handle: Some(handle),
            states: Recorder::default(),
            notes: Arc::default(),
        }
    };
    let mut nodes = vec![spawn("node-a"), spawn("node-b")];
    let i = c.elected(&nodes, FIRST_ELECTION).await;
    nodes[i].handle.take().unwrap().shutdown().await;
    let took = c
        .until(LEASE, "the follower polls and takes over", || {
            nodes[1 - i].is_leader()
        })
        .await;
    let max_poll = RETRY.mul_f64(2.2);
    assert!(
        took <= max_poll + ms(50),
        "took {took:?}, poll interval at most {max_poll:?}"
    );
    for n in ["node-a", "node-b"] {
        assert_eq!(c.store.calls(n).watch, 0, "{n} started a watch");
    }
    c.shutdown_all(&mut nodes).await;
}

/// The states a stream holds ready now, read without waiting.
fn ready_states(stream: &mut election_driver::StateStream) -> Vec<Change> {
    use futures::FutureExt;
    let mut read = Vec::new();
    while let Some(Some(s)) = stream.next().now_or_never() {
        read.push(s.change);
    }
    read
}

/// The position of the first change matching `want` in `changes`.
fn position_of(changes: &[Change], want: impl Fn(&Change) -> bool) -> Option<usize> {
    changes.iter().position(want)
}

fn is_stop(reason: StopReason) -> impl Fn(&Change) -> bool {
    move |c| matches!(c, Change::Elector(Event::StoppedLeading { reason: r, .. }) if *r == reason)
}

fn is_draining(c: &Change) -> bool {
    matches!(c, Change::Elector(Event::Draining { .. }))
}

/// docs/faults.md H10: every state the driver published before it answered
/// `step_down()` or `shutdown()` is ready in a state stream when that answer
/// resolves (read here without waiting): `Draining` then `StoppedLeading`, and
/// after a shutdown the final state too, with the stream ended.
pub async fn h10_states_are_ready_when_step_down_and_shutdown_resolve<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let mut n = c.spawn_with(
        "node-a",
        Some(WorkMode::Cooperative(ms(50))),
        OnLoss::Campaign,
    );
    c.until(FIRST_ELECTION, "node-a leads", || n.is_leader())
        .await;
    let mut stream = n.h().states();
    ready_states(&mut stream);

    n.h().step_down().await;
    let read = ready_states(&mut stream);
    let drain = position_of(&read, is_draining);
    let stop = position_of(&read, is_stop(StopReason::SteppedDown));
    assert!(
        drain.is_some() && drain < stop,
        "ready when step_down resolved: {read:?}"
    );

    c.until(LEASE * 3, "node-a leads again", || n.is_leader())
        .await;
    ready_states(&mut stream);
    n.handle.take().unwrap().shutdown().await;
    let read = ready_states(&mut stream);
    let stop = position_of(&read, is_stop(StopReason::ShutDown));
    assert!(
        stop.is_some() && matches!(read.last(), Some(Change::Elector(Event::Terminated))),
        "ready when shutdown resolved: {read:?}"
    );
    use futures::FutureExt;
    assert_eq!(
        stream.next().now_or_never(),
        Some(None),
        "the stream has ended when shutdown resolved"
    );
}

/// The memory lock, reading a state stream without waiting at each release
/// write (an empty holder), as the write is made.
#[derive(Clone, Default)]
struct ReadAtRelease {
    stream: Arc<Mutex<Option<election_driver::StateStream>>>,
    seen: Arc<Mutex<Vec<Vec<Change>>>>,
}

impl Layer<MemoryLock> for ReadAtRelease {
    async fn update(
        &self,
        inner: &MemoryLock,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<election_core::Observation, LockError> {
        if record.holder.is_empty()
            && let Some(stream) = self.stream.lock().unwrap().as_mut()
        {
            self.seen.lock().unwrap().push(ready_states(stream));
        }
        inner.update(expected, record).await
    }
}

/// docs/faults.md H10: a program following the state stream can read
/// `StoppedLeading` before the release is written (the driver publishes it in
/// the turn that makes the release, before the write is sent), for a step-down
/// and a shutdown alike; the final state comes only after the release.
pub async fn h10_stopped_leading_is_ready_before_the_release_is_written<R: Runtime>(rt: R) {
    let c = Cluster::new(rt);
    let probe = ReadAtRelease::default();
    let handle = Builder::new(
        Layered::new(c.store.client("node-a"), probe.clone()),
        Config::fast("node-a"),
    )
    .leader_work(|_, cancel| async move { cancel.cancelled().await })
    .spawn(c.rt.clone())
    .expect("valid configuration");
    *probe.stream.lock().unwrap() = Some(handle.states());
    c.until(FIRST_ELECTION, "node-a leads", || handle.is_leader())
        .await;
    handle.step_down().await;
    c.until(LEASE * 3, "node-a leads again", || handle.is_leader())
        .await;
    handle.shutdown().await;
    let seen = probe.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "two release writes: {seen:?}");
    for (at_release, reason) in seen
        .iter()
        .zip([StopReason::SteppedDown, StopReason::ShutDown])
    {
        assert!(
            position_of(at_release, is_stop(reason.clone())).is_some(),
            "StoppedLeading({reason:?}) was not ready when its release was written: {at_release:?}"
        );
        assert!(
            !at_release
                .iter()
                .any(|c| matches!(c, Change::Elector(Event::Terminated))),
            "the final state came before the release: {at_release:?}"
        );
    }
    assert_eq!(c.releases_by("node-a").len(), 2);
}

/// A program following a state stream while it waits for an answer
/// (`step_down()` or `shutdown()`), as a biased `select` does: each round polls
/// the stream first and the answer only when the stream has nothing ready.
struct StreamFirstReader {
    stream: election_driver::StateStream,
    ended: bool,
    read: Vec<Change>,
}

impl StreamFirstReader {
    fn new(stream: election_driver::StateStream) -> Self {
        StreamFirstReader {
            stream,
            ended: false,
            read: Vec::new(),
        }
    }

    /// The stream's half of the rounds: every state ready now, until the
    /// stream has nothing (its last poll found it empty) or has ended.
    fn read_ready(&mut self) {
        use futures::FutureExt;
        while !self.ended {
            match self.stream.next().now_or_never() {
                Some(Some(s)) => self.read.push(s.change),
                Some(None) => self.ended = true,
                None => break,
            }
        }
    }

    /// The answer's half of a round: whether it resolved at this poll.
    fn answered<F: Future<Output = ()> + ?Sized>(answer: Pin<&mut F>) -> bool {
        use futures::FutureExt;
        answer.now_or_never().is_some()
    }

    /// Rounds (answer, then stream) from the answer's half of the round now
    /// under way, until the answer resolves.
    fn until_answered<F: Future<Output = ()> + ?Sized>(
        &mut self,
        mut answer: Pin<&mut F>,
        what: &str,
    ) {
        for _ in 0..100 {
            if Self::answered(answer.as_mut()) {
                return;
            }
            self.read_ready();
        }
        panic!(
            "{what} did not resolve in 100 rounds once answered; read {:?}",
            self.read
        );
    }
}

/// `future`'s output, or a panic saying `what` after `limit` on the runtime's
/// timer (virtual under paused tokio).
async fn within<R: Runtime, F: Future>(
    rt: &R,
    limit: Duration,
    what: &str,
    future: F,
) -> F::Output {
    let future = std::pin::pin!(future);
    match futures::future::select(future, rt.sleep(limit)).await {
        futures::future::Either::Left((out, _)) => out,
        futures::future::Either::Right(_) => panic!("{what}: not within {limit:?}"),
    }
}

/// docs/faults.md H10: a program polling the state stream before
/// the answer of `step_down()` or `shutdown()` reads every state published
/// before that answer, also when the driver publishes them and answers between
/// the two polls of one of its rounds (its thread descheduled there, on a
/// loaded machine with the driver on another thread). The test holds the
/// leader work's drain so that the reader's last look at the stream finds it
/// empty, then lets the driver give up, release and answer in full (a second
/// call of the same command, sent after the first, is answered after it)
/// before the reader polls the answer: the answer must not resolve before the
/// stream has been polled again and has given `StoppedLeading` (and after a
/// shutdown the final state).
pub async fn h10_a_reader_polling_the_stream_first_reads_every_state_before_the_answer<
    R: Runtime,
>(
    rt: R,
) {
    let c = Cluster::new(rt);
    let open = Arc::new(AtomicBool::new(true));
    let gate = open.clone();
    let work_rt = c.rt.clone();
    let handle = Builder::new(c.store.client("node-a"), Config::fast("node-a"))
        .leader_work(move |_, cancel| {
            let (gate, rt) = (gate.clone(), work_rt.clone());
            async move {
                cancel.cancelled().await;
                while !gate.load(Ordering::SeqCst) {
                    rt.sleep(TICK).await;
                }
            }
        })
        .spawn(c.rt.clone())
        .expect("valid configuration");
    let mut reader = StreamFirstReader::new(handle.states());

    for shutdown in [false, true] {
        c.until(LEASE * 3, "node-a leads", || handle.is_leader())
            .await;
        reader.read_ready();
        reader.read.clear();
        open.store(false, Ordering::SeqCst);
        let what = if shutdown {
            "shutdown()"
        } else {
            "step_down()"
        };
        let command = || -> Pin<Box<dyn Future<Output = ()> + '_>> {
            if shutdown {
                Box::pin(handle.shutdown())
            } else {
                Box::pin(handle.step_down())
            }
        };
        let mut answer = command();
        // Rounds until the reader has read Draining: the first poll of the
        // answer sends the command; no answer can come while the work drains.
        c.until(LEASE, "the reader read Draining", || {
            reader.read_ready();
            assert!(
                !StreamFirstReader::answered(answer.as_mut()),
                "{what} resolved while the work drained: {:?}",
                reader.read
            );
            reader.read.iter().any(is_draining)
        })
        .await;
        // A round's stream half finds nothing: StoppedLeading waits for the work.
        reader.read_ready();
        assert!(
            position_of(&reader.read, |c| matches!(
                c,
                Change::Elector(Event::StoppedLeading { .. })
            ))
            .is_none(),
            "StoppedLeading while the work drained: {:?}",
            reader.read
        );
        // Before the round's answer half, the driver does everything: the
        // work ends, StoppedLeading, the release, the answer.
        open.store(true, Ordering::SeqCst);
        within(&c.rt, LEASE, &format!("a second {what}"), command()).await;
        reader.until_answered(answer.as_mut(), what);
        let reason = if shutdown {
            StopReason::ShutDown
        } else {
            StopReason::SteppedDown
        };
        let drain = position_of(&reader.read, is_draining);
        let stop = position_of(&reader.read, is_stop(reason));
        assert!(
            drain.is_some() && stop.is_some() && drain < stop,
            "read before {what} resolved: {:?}",
            reader.read
        );
        if shutdown {
            assert!(
                reader.ended
                    && matches!(reader.read.last(), Some(Change::Elector(Event::Terminated))),
                "the final state, then the stream's end, before {what} resolved: {:?}",
                reader.read
            );
        }
    }
    assert_eq!(c.releases_by("node-a").len(), 2);
}

/// Leader work that waits for its signal; its maker tells when the driver,
/// which owns it, was dropped (after its last state and its answers).
struct DropFlagWork(Arc<AtomicBool>);

impl LeaderWork for DropFlagWork {
    fn start(&mut self, _term: Term) -> WorkRun {
        let signal = CancelSignal::new();
        let s = signal.clone();
        WorkRun {
            future: Box::pin(async move { s.cancelled().await }),
            cancel: Box::new(move || signal.cancel()),
        }
    }
}

impl Drop for DropFlagWork {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// docs/faults.md H10: `shutdown()` asked of a driver that has
/// already ended (here on a loss, with `OnLoss::Exit`) has nobody to answer it
/// and resolves without waiting; a program that polled its state stream just
/// before the driver ended, and `shutdown()` just after, still reads the
/// loss's `StoppedLeading` and the final state before `shutdown()` resolves.
pub async fn h10_a_reader_polling_the_stream_first_reads_the_states_of_a_driver_ended_before_shutdown<
    R: Runtime,
>(
    rt: R,
) {
    let c = Cluster::new(rt);
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = Builder::new(c.store.client("node-a"), Config::fast("node-a"))
        .on_loss(OnLoss::Exit)
        .custom_leader_work(DropFlagWork(dropped.clone()))
        .spawn(c.rt.clone())
        .expect("valid configuration");
    c.until(FIRST_ELECTION, "node-a leads", || handle.is_leader())
        .await;
    let mut reader = StreamFirstReader::new(handle.states());
    // A round's stream half finds nothing new.
    reader.read_ready();
    reader.read.clear();
    // Before its answer half, another holder takes the lock: the driver stops
    // leading, ends (OnLoss::Exit) and is dropped.
    let mut rec = c.store.current().unwrap().record;
    rec.holder = "someone-else".into();
    c.store.set_record(rec);
    c.until(LEASE, "the driver ended and was dropped", || {
        dropped.load(Ordering::SeqCst)
    })
    .await;
    let mut answer = std::pin::pin!(handle.shutdown());
    reader.until_answered(answer.as_mut(), "shutdown()");
    assert!(
        position_of(&reader.read, |c| matches!(
            c,
            Change::Elector(Event::StoppedLeading { .. })
        ))
        .is_some()
            && reader.ended
            && matches!(reader.read.last(), Some(Change::Elector(Event::Terminated))),
        "StoppedLeading, the final state and the stream's end before shutdown() resolved: {:?}",
        reader.read
    );
}
