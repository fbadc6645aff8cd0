//! Many elections through one shared watch per process
//! ([`lock_kube::SharedWatch`]), on a Kubernetes lock over the API emulator,
//! on tokio: each "process" is a client (its own token, so the emulator counts
//! its requests apart) with one shared watch, and a candidate in every election.
//!
//! - [`many_elections_one_watch_per_process`]: every election gets one leader;
//!   each process lists once and opens one watch; in steady state nobody reads;
//!   a released lock is taken at once through the shared watch; after a
//!   compaction and broken connections (`410 Gone` on the resume) the watch
//!   lists afresh and a release is still seen at once (docs/faults.md W1, W2);
//! - [`w1_a_silent_shared_watch_is_listed_afresh`]: a watch that says nothing
//!   is replaced after the silence bound, and the elections go on;
//! - [`a6_a_refused_shared_watch_backs_off`]: a watch the server refuses (RBAC
//!   with `list` but not `watch`) makes no busy loop of lists and watches;
//! - [`a_subscriber_that_falls_behind_ends_and_resumes_where_it_left`]: a lost
//!   event (a subscriber more than `BUFFER` events behind) ends its stream; the
//!   one resumed from the last version seen yields every change after it from
//!   the watch's window; one resumed from before the window starts from the
//!   current state, as a watch restarted after a `410 Gone` does.

use std::time::{Duration, Instant};

use election_core::{Config, Lock, LockRecord, Stamp, Version, WatchEvent};
use election_driver::{Builder, Handle, Runtime};
use futures::StreamExt;
use kube::Resource as _;
use kube_emulator::{Emulator, Fault, Match, Resource, Verb};
use lock_kube::{ObjectLock, SharedWatch, WatchConfig};

use super::{KubeLock, NS, Object, held};

/// The label every lock of these tests carries, and the shared watches select.
const LABEL: (&str, &str) = ("election.test/group", "shared");

/// One process: its client's token, its shared watch, and the watch's task.
struct Process<S: KubeLock> {
    token: String,
    client: kube::Client,
    shared: SharedWatch<Object<S>>,
    task: tokio::task::JoinHandle<()>,
}

impl<S: KubeLock> Process<S> {
    fn start(emu: &Emulator, token: &str, silence: Duration) -> Self {
        let client = lock_kube::lock_client(emu.kube_config(token)).expect("client");
        let config = WatchConfig {
            silence,
            ..WatchConfig::default()
        };
        let label = [(LABEL.0.to_owned(), LABEL.1.to_owned())];
        let shared = ObjectLock::<S::Codec>::shared_watch(client.clone(), NS, label, config);
        let task = tokio::spawn(shared.run());
        Process {
            token: token.to_owned(),
            client,
            shared,
            task,
        }
    }

    fn lock(&self, name: &str) -> ObjectLock<S::Codec> {
        ObjectLock::<S::Codec>::builder(self.client.clone(), NS, name)
            .shared_watch(&self.shared)
            .without_events()
            .build()
            .expect("valid names")
    }
}

impl<S: KubeLock> Drop for Process<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `n` processes, `process-0` …, their shared watches silent for at most `silence`.
fn fleet<S: KubeLock>(emu: &Emulator, n: usize, silence: Duration) -> Vec<Process<S>> {
    (0..n)
        .map(|p| Process::start(emu, &format!("process-{p}"), silence))
        .collect()
}

/// Candidates of the elections `<prefix>-0` … `<prefix>-{count - 1}` in every
/// process, on `rt`, once each has its leader; `elections[i][p]` is process `p`'s
/// candidate in election `i`.
async fn elect<S: KubeLock>(
    processes: &[Process<S>],
    prefix: &str,
    count: usize,
    rt: &impl Runtime,
) -> Vec<Vec<Handle>> {
    let elections: Vec<Vec<Handle>> = (0..count)
        .map(|i| {
            processes
                .iter()
                .map(|p| {
                    let config = Config::fast(p.token.as_str()).seed(p.token.len() as u64 + 11);
                    Builder::new(p.lock(&format!("{prefix}-{i}")), config)
                        .spawn(rt.clone())
                        .expect("valid config")
                })
                .collect()
        })
        .collect();
    for e in &elections {
        one_leader(e, Duration::from_secs(20)).await;
    }
    elections
}

/// Shuts every candidate down.
async fn shut_down(elections: Vec<Vec<Handle>>) {
    for h in elections.into_iter().flatten() {
        h.shutdown().await;
    }
}

/// The one leader of `candidates`, waiting up to `within`; panics on two.
async fn one_leader(candidates: &[Handle], within: Duration) -> usize {
    let start = Instant::now();
    loop {
        let leaders: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].is_leader())
            .collect();
        assert!(leaders.len() <= 1, "two leaders: {leaders:?}");
        if let [l] = leaders[..] {
            return l;
        }
        assert!(start.elapsed() < within, "no leader within {within:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Shuts the leader of `candidates` down (a release) and returns how long until
/// another candidate led.
async fn hand_over(candidates: &mut Vec<Handle>) -> Duration {
    let l = one_leader(candidates, Duration::from_secs(10)).await;
    let gone = candidates.remove(l);
    let start = Instant::now();
    gone.shutdown().await;
    one_leader(candidates, Duration::from_secs(10)).await;
    start.elapsed()
}

/// Reads (GET, LIST) of leases by `token` in `counts`.
fn reads(counts: &kube_emulator::RequestCounts, token: &str, resource: Resource) -> u64 {
    counts.get(token, Verb::Get, resource) + counts.get(token, Verb::List, resource)
}

/// See the [module docs](self).
pub async fn many_elections_one_watch_per_process<S: KubeLock>(rt: impl Runtime) {
    let emu = Emulator::start().await.expect("emulator");
    let processes = fleet::<S>(&emu, 3, Duration::from_secs(30));
    let mut elections = elect(&processes, "shared", 20, &rt).await;
    let counts = emu.request_counts();
    for p in &processes {
        assert_eq!(
            counts.get(&p.token, Verb::List, S::RESOURCE),
            1,
            "{}",
            p.token
        );
        assert_eq!(
            counts.get(&p.token, Verb::Watch, S::RESOURCE),
            1,
            "{}",
            p.token
        );
        assert_eq!(p.shared.stats().lists, 1);
    }
    // Steady state: nobody reads; the leaders renew.
    tokio::time::sleep(Duration::from_millis(500)).await;
    emu.reset_request_counts();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let counts = emu.request_counts();
    for p in &processes {
        assert_eq!(reads(&counts, &p.token, S::RESOURCE), 0, "{} read", p.token);
        assert_eq!(counts.get(&p.token, Verb::Watch, S::RESOURCE), 0);
    }
    assert!(counts.total() > 0, "the leaders renewed");
    // A release is seen through the shared watch: taken well within a lease.
    let took = hand_over(&mut elections[0]).await;
    assert!(
        took < Duration::from_millis(1_000),
        "handover took {took:?}"
    );
    // Broken connections, and 410 Gone on each resume: each watch lists afresh;
    // the elections go on and a release is still seen at once.
    force_relist(&emu, &processes).await;
    let took = hand_over(&mut elections[1]).await;
    assert!(
        took < Duration::from_millis(1_000),
        "handover after 410 took {took:?}"
    );
    for e in &elections {
        one_leader(e, Duration::from_secs(10)).await;
    }
    shut_down(elections).await;
}

/// See the [module docs](self).
pub async fn w1_a_silent_shared_watch_is_listed_afresh<S: KubeLock>(rt: impl Runtime) {
    let emu = Emulator::start().await.expect("emulator");
    // One watch of process-0 is accepted but never says anything.
    emu.faults("process-0")
        .on(Match::verbs(&[Verb::Watch]))
        .times(1)
        .inject(Fault::WatchSilent);
    let processes = fleet::<S>(&emu, 2, Duration::from_secs(1));
    let mut elections = elect(&processes, "silent", 4, &rt).await;
    let start = Instant::now();
    while processes[0].shared.stats().lists < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the silent watch was kept"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        processes[1].shared.stats().lists,
        1,
        "process-1's watch was fine"
    );
    let took = hand_over(&mut elections[0]).await;
    assert!(
        took < Duration::from_millis(1_000),
        "handover took {took:?}"
    );
    shut_down(elections).await;
}

/// See the [module docs](self).
pub async fn a_subscriber_that_falls_behind_ends_and_resumes_where_it_left<S: KubeLock>() {
    let emu = Emulator::start().await.expect("emulator");
    let watcher = Process::<S>::start(&emu, "watcher", Duration::from_secs(30));
    let writer = Process::<S>::start(&emu, "writer", Duration::from_secs(30));
    let (w, r) = (watcher.lock("behind"), writer.lock("behind"));
    let mut version = r.create(&held("a", 0)).await.expect("create").version;
    // The watcher's shared watch has seen the create (a subscription starts from
    // what the shared watch knows).
    let start = Instant::now();
    while !watcher
        .shared
        .snapshot()
        .iter()
        .any(|s| s.object.meta().resource_version.as_deref() == Some(version.as_str()))
    {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the create was not seen"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut stream = w.watch(None).expect("a watch");
    let first = stream.next().await.expect("the current state");
    assert!(matches!(first, Ok(WatchEvent::Changed(ref o)) if o.version == version));
    // Far more changes than a subscription buffers, while nobody reads it.
    let n = lock_kube::shared_watch::BUFFER + 36;
    let mut versions = Vec::new();
    for i in 0..n {
        let record = LockRecord {
            renew_time: Stamp::Now,
            ..held(&format!("a{i}"), 0)
        };
        version = r.update(&version, &record).await.expect("update").version;
        versions.push(version.clone());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The stream yields what it buffered, then ends (it does not hang).
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>())
        .await
        .expect("an overflowed subscription ends");
    // A futures channel holds one more than its buffer per sender.
    assert!(
        rest.len() <= lock_kube::shared_watch::BUFFER + 1,
        "{}",
        rest.len()
    );
    assert_eq!(watcher.shared.stats().overflows, 1);
    let last: Version = match rest.last() {
        Some(Ok(WatchEvent::Changed(o))) => o.version.clone(),
        other => panic!("a change, got {other:?}"),
    };
    assert_ne!(last, version, "events were lost");
    // Resumed from the last version seen: every later change, in order.
    let missed = &versions[versions.iter().position(|v| *v == last).expect("seen") + 1..];
    let mut resumed = w.watch(Some(&last)).expect("a watch");
    for want in missed {
        match tokio::time::timeout(Duration::from_secs(5), resumed.next()).await {
            Ok(Some(Ok(WatchEvent::Changed(o)))) => assert_eq!(&o.version, want),
            other => panic!("the change at {want:?}, got {other:?}"),
        }
    }
    // After the watch listed afresh (its resume got 410), the changes since
    // `last` are gone from the window: a resume from it starts from the current
    // state, as a watch restarted after a 410 does.
    force_relist(&emu, std::slice::from_ref(&watcher)).await;
    let mut gone = w.watch(Some(&last)).expect("a watch");
    match tokio::time::timeout(Duration::from_secs(5), gone.next()).await {
        Ok(Some(Ok(WatchEvent::Changed(o)))) => assert_eq!(o.version, version),
        other => panic!("the current state, got {other:?}"),
    }
}

/// Breaks every connection and answers each process's next watch request (its
/// resume) with 410 Gone; returns once each has listed afresh.
async fn force_relist<S: KubeLock>(emu: &Emulator, processes: &[Process<S>]) {
    let lists: Vec<u64> = processes.iter().map(|p| p.shared.stats().lists).collect();
    for p in processes {
        emu.faults(&p.token)
            .on(Match::verbs(&[Verb::Watch]))
            .times(1)
            .inject(Fault::Status {
                code: 410,
                retry_after: None,
            });
    }
    emu.drop_connections();
    let start = Instant::now();
    while processes
        .iter()
        .zip(&lists)
        .any(|(p, &n)| p.shared.stats().lists == n)
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no list after 410"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// See the [module docs](self).
pub async fn a6_a_refused_shared_watch_backs_off<S: KubeLock>() {
    let emu = Emulator::start().await.expect("emulator");
    emu.faults("refused")
        .on(Match::verbs(&[Verb::Watch]))
        .forbidden();
    let p = Process::<S>::start(&emu, "refused", Duration::from_secs(30));
    tokio::time::sleep(Duration::from_secs(4)).await;
    let counts = emu.request_counts();
    let (lists, watches) = (
        counts.get(&p.token, Verb::List, S::RESOURCE),
        counts.get(&p.token, Verb::Watch, S::RESOURCE),
    );
    // Backoff 1 s, 2 s, …: a handful in 4 s, where a busy loop makes thousands.
    assert!((2..=6).contains(&lists), "{lists} lists in 4 s");
    assert!((2..=6).contains(&watches), "{watches} watches in 4 s");
}
