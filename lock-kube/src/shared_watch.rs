//! One watch for many locks: the Leases (or ConfigMaps) of many elections in one
//! namespace, found by a label, watched through a single connection and cached,
//! each lock fed the events of its own object.
//!
//! A process that runs thousands of elections would otherwise open one watch per
//! election. A [`SharedWatch`] lists the objects carrying its labels once, then
//! watches them all from the list's version; each lock built with
//! [`LockBuilder::shared_watch`](crate::LockBuilder::shared_watch) puts the labels
//! on its object (on every write) and, when the driver asks for a watch,
//! subscribes to the hub instead of opening one of its own.
//!
//! A subscription behaves as the lock's own watch would:
//!
//! - from no version, it yields the object's state first, as the hub holds it
//!   (reading it with one GET where the hub holds no such object, since it may
//!   just have been created), or an unversioned deletion if there is none; then
//!   every change;
//! - from a version, it yields every change after it, in order, from the hub's
//!   window of the last [`HISTORY`] events of all objects (as the API server's
//!   watch cache does); from a version older than the window, the object's
//!   state as the hub knows it first, as a watch restarted after a `410 Gone`
//!   would start (but without the restart, its backoff or a read);
//! - it *ends* whenever it cannot be trusted: the hub's list failed twice in a
//!   row (the driver then polls and resumes), or the subscriber fell more than
//!   [`BUFFER`] events behind (it resumes from the last version it saw).
//!
//! The hub itself resumes its watch from the last version it saw when the server
//! closes it, and lists afresh after an error, a `410 Gone` or a silence longer
//! than [`WatchConfig::silence`] (bookmarks count as life): the changes the list
//! shows (an object changed, appeared or gone) reach the subscribers as events,
//! so no subscriber needs a request of its own after its first read. RBAC: `get`,
//! `list` and `watch` on the resource in the namespace (the per-lock watch needs
//! `get` and `watch` only).
//!
//! An object whose labels stop matching leaves a label-selected watch as a
//! `DELETED` event: a holder of a lock whose label a human removed stops leading
//! at once, as for a deletion, and the lock puts the label back on its next write.
//!
//! The hub runs as a future the caller spawns on its runtime
//! ([`SharedWatch::run`]). Until it has listed once, subscriptions wait; while its
//! lists fail, they end at once, so that their drivers poll.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::{self, Debug};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use election_core::{LockError, Version, WatchEvent, WatchStream};
use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use kube::api::{Api, ListParams, WatchParams};
use kube::core::WatchEvent as KubeEvent;
use serde::de::DeserializeOwned;

use crate::call::call_within;
use crate::error::{Target, Verb, classify, classify_status};
use crate::watch::{CompatStream, ObjectMapper, WatchConfig};

/// How many events a subscription may fall behind before it is ended (and the
/// driver resumes it from its last version, getting the current state).
pub const BUFFER: usize = 64;

/// How many events (of all objects) the hub keeps for subscriptions that resume
/// from a version.
pub const HISTORY: usize = 1024;

/// How many fresh subscriptions read their object at once.
const READS: usize = 8;

/// One watch of the objects of a kind carrying `labels` in a namespace, shared
/// by the locks built with `LockBuilder::shared_watch` (`LeaseLock::builder(…)
/// .shared_watch(&watch)`). Cheap to clone. The module `lock_kube::shared_watch`
/// says how a subscription behaves.
pub struct SharedWatch<K> {
    hub: Arc<Hub<K>>,
}

impl<K> Clone for SharedWatch<K> {
    fn clone(&self) -> Self {
        SharedWatch {
            hub: self.hub.clone(),
        }
    }
}

impl<K> Debug for SharedWatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedWatch")
            .field("target", &self.hub.target)
            .field("selector", &self.hub.selector)
            .finish_non_exhaustive()
    }
}

/// An object as a [`SharedWatch`] last saw it ([`SharedWatch::snapshot`]).
#[derive(Debug)]
pub struct Seen<K> {
    /// The object.
    pub object: Arc<K>,
    /// How long ago it last changed, as this process saw it; `None` until it
    /// changes while watched (a list shows only its state, not its age).
    pub unchanged_for: Option<Duration>,
}

/// What a [`SharedWatch`] has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedWatchStats {
    /// Lists that succeeded (the first, and one after each error, 410 or
    /// silence).
    pub lists: u64,
    /// Watch requests made (each list's, and each resume after a clean close).
    pub watches: u64,
    /// Events received from the server (bookmarks not counted).
    pub events: u64,
    /// Subscriptions ended because they fell [`BUFFER`] events behind.
    pub overflows: u64,
    /// Subscriptions open now.
    pub subscribers: u64,
}

struct Hub<K> {
    api: Api<K>,
    /// The resource and namespace; the name is the label selector.
    target: Target,
    selector: String,
    labels: BTreeMap<String, String>,
    config: WatchConfig,
    state: Mutex<State<K>>,
    /// Bounds the first reads of fresh subscriptions running at once.
    reads: tokio::sync::Semaphore,
    lists: AtomicU64,
    watches: AtomicU64,
    events: AtomicU64,
    overflows: AtomicU64,
}

struct State<K> {
    /// Whether `objects` reflects a list and the watch since it.
    synced: bool,
    /// Whether the last list failed: a subscription ends at once (its driver
    /// polls) instead of waiting.
    failing: bool,
    /// Every object the watch shows, by name, as last seen.
    objects: HashMap<String, Arc<K>>,
    /// When each object last changed, as this process saw it.
    changed: HashMap<String, Instant>,
    /// The last events, oldest first: the object's name, the event's version,
    /// and the object (`None`: deleted).
    window: VecDeque<(String, Version, Option<Arc<K>>)>,
    /// The window holds every event after this version (the last list's, or the
    /// last event dropped from the window).
    floor: Option<Version>,
    /// The last version the watch brought (or the last list's).
    latest: Option<Version>,
    /// Subscriptions by object name.
    subs: HashMap<String, Vec<Sub<K>>>,
    /// Observers of every change ([`SharedWatch::changes`]).
    observers: Vec<mpsc::Sender<String>>,
}

struct Sub<K> {
    tx: mpsc::Sender<Result<WatchEvent, LockError>>,
    map: ObjectMapper<K>,
    /// Until the hub has listed: the version it resumes from (`None`: fresh).
    waiting: Option<Option<Version>>,
    /// The latest version the subscriber has (sent, read, or resumed from):
    /// an event at or before it is not sent again. A subscription that read
    /// the object before following it would otherwise get the object's
    /// version twice when the shared watch's event for it comes after the
    /// read (seen under load: the lock conformance suite's
    /// `watch_delivers_in_order`).
    seen: Option<Version>,
}

impl<K> Sub<K> {
    /// Sends `event` unless the subscriber already has its version; false if
    /// the subscriber is gone or too far behind.
    fn send(&mut self, event: WatchEvent, overflows: &AtomicU64) -> bool {
        let version = match &event {
            WatchEvent::Changed(obs) => Some(&obs.version),
            WatchEvent::Deleted(version) => version.as_ref(),
        };
        if let Some(version) = version {
            if self
                .seen
                .as_ref()
                .is_some_and(|seen| !version.is_newer_than(seen))
            {
                return true;
            }
            self.seen = Some(version.clone());
        }
        match self.tx.try_send(Ok(event)) {
            Ok(()) => true,
            Err(e) => {
                if e.is_full() {
                    overflows.fetch_add(1, Ordering::Relaxed);
                }
                false
            }
        }
    }
}

/// What a shared watch can watch: a namespaced Kubernetes kind.
pub trait Watched:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}

fn version_of<K: Resource>(obj: &K) -> Option<Version> {
    obj.meta().resource_version.clone().map(Version::new)
}

impl<K: Watched> SharedWatch<K> {
    /// A shared watch of the objects of `resource` (as RBAC names it) in
    /// `namespace` carrying every label of `labels` (an equality selector); see
    /// [`ObjectLock::shared_watch`](crate::ObjectLock::shared_watch).
    pub(crate) fn new(
        client: kube::Client,
        resource: &'static str,
        namespace: &str,
        labels: BTreeMap<String, String>,
        config: WatchConfig,
    ) -> Self {
        let selector = labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        SharedWatch {
            hub: Arc::new(Hub {
                api: Api::namespaced(client, namespace),
                target: Target::new(resource, namespace, selector.clone()),
                selector,
                labels,
                config,
                reads: tokio::sync::Semaphore::new(READS),
                state: Mutex::new(State {
                    synced: false,
                    failing: false,
                    objects: HashMap::new(),
                    changed: HashMap::new(),
                    window: VecDeque::new(),
                    floor: None,
                    latest: None,
                    subs: HashMap::new(),
                    observers: Vec::new(),
                }),
                lists: AtomicU64::new(0),
                watches: AtomicU64::new(0),
                events: AtomicU64::new(0),
                overflows: AtomicU64::new(0),
            }),
        }
    }

    /// The labels a lock on this watch must carry (its builder adds them).
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.hub.labels
    }

    /// Every object the watch shows now, with how long ago it last changed as
    /// this process saw it (by its monotonic clock; unknown for an object that
    /// has not changed since it was listed); empty until the first list.
    /// Built for observers beside the elections, such as a membership count.
    pub fn snapshot(&self) -> Vec<Seen<K>> {
        let state = self.hub.lock();
        let now = Instant::now();
        state
            .objects
            .iter()
            .map(|(name, object)| Seen {
                object: object.clone(),
                unchanged_for: state
                    .changed
                    .get(name)
                    .map(|at| now.saturating_duration_since(*at)),
            })
            .collect()
    }

    /// The names of the objects as they change (from the watch, or found changed
    /// by a list), for observers beside the elections that act on a change
    /// rather than poll [`SharedWatch::snapshot`]. An observer more than
    /// [`BUFFER`] names behind misses some (it should look at the snapshot
    /// then); the stream never ends while the watch lives.
    pub fn changes(&self) -> impl futures::Stream<Item = String> + Send + 'static {
        let (tx, rx) = mpsc::channel(BUFFER);
        self.hub.lock().observers.push(tx);
        rx
    }

    /// What the watch has done so far.
    pub fn stats(&self) -> SharedWatchStats {
        let h = &self.hub;
        SharedWatchStats {
            lists: h.lists.load(Ordering::Relaxed),
            watches: h.watches.load(Ordering::Relaxed),
            events: h.events.load(Ordering::Relaxed),
            overflows: h.overflows.load(Ordering::Relaxed),
            subscribers: h.lock().subs.values().map(|v| v.len() as u64).sum(),
        }
    }

    /// Runs the watch for as long as the future is polled: spawn it on the
    /// runtime the elections run on (it needs a tokio reactor, which it brings
    /// along under smol and async-std). It never ends by itself.
    #[must_use = "the shared watch does nothing unless its future is spawned"]
    pub fn run(&self) -> impl Future<Output = ()> + Send + 'static {
        let hub = self.hub.clone();
        async_compat::Compat::new(async move { hub.run().await })
    }

    /// A subscription to the object `name` from `from` (see the module docs).
    ///
    /// From no version it starts from the object as the shared watch holds it,
    /// or as its first list finds it. Where the shared watch, listed, holds no
    /// such object, it reads it (one GET, as the per-object watch does): it may
    /// have been created a moment ago, and an absence must not be reported for
    /// an object that exists. It then follows from the version read (from the
    /// last version the shared watch had seen before the read, where the object
    /// is absent).
    pub fn subscribe(
        &self,
        name: &str,
        from: Option<Version>,
        map: ObjectMapper<K>,
    ) -> WatchStream {
        let cache_miss = {
            let state = self.hub.lock();
            state.synced && !state.objects.contains_key(name)
        };
        if from.is_some() || !cache_miss {
            return self.follow(name, from, map);
        }
        let me = self.clone();
        let name = name.to_owned();
        let start = async move {
            // A few reads at a time: thousands of locks starting at once would
            // otherwise open as many connections (HTTP/1.1), kept in the pool.
            let _permit = me.hub.reads.acquire().await;
            let before = me.hub.lock().latest.clone();
            let target = Target::new(
                me.hub.target.resource,
                me.hub.target.namespace.clone(),
                name.clone(),
            );
            let got = call_within(me.hub.config.request_timeout, Verb::Get, &target, async {
                me.hub.api.get_opt(&name).await
            })
            .await;
            let (first, rest) = match got {
                Ok(Some(obj)) => (
                    WatchEvent::Changed(map(&obj)),
                    me.follow_rx(&name, version_of(&obj), map),
                ),
                Ok(None) => (WatchEvent::Deleted(None), me.follow_rx(&name, before, map)),
                Err(e) => return futures::stream::iter([Err(e)]).boxed(),
            };
            futures::stream::iter([Ok(first)]).chain(rest).boxed()
        };
        bounded(
            Box::pin(futures::stream::once(start).flatten()),
            self.hub.config.silence,
        )
    }

    /// A subscription from `from` (`None`: the cached state first, once listed).
    fn follow(&self, name: &str, from: Option<Version>, map: ObjectMapper<K>) -> WatchStream {
        bounded(self.follow_rx(name, from, map), self.hub.config.silence)
    }

    /// The events of a subscription from `from`; an ended stream while the
    /// hub's lists fail.
    fn follow_rx(&self, name: &str, from: Option<Version>, map: ObjectMapper<K>) -> Events {
        let (tx, rx) = mpsc::channel(BUFFER);
        let mut sub = Sub {
            tx,
            map,
            seen: from.clone(),
            waiting: Some(from),
        };
        let mut state = self.hub.lock();
        if state.failing {
            return Box::pin(futures::stream::empty());
        }
        if state.synced {
            let from = sub.waiting.take().flatten();
            if !state.prime(&mut sub, name, from.as_ref(), &self.hub) {
                return Box::pin(rx);
            }
        }
        let subs = state.subs.entry(name.to_owned()).or_default();
        // Subscriptions their drivers dropped go here (or at the object's next event).
        subs.retain(|s| !s.tx.is_closed());
        subs.push(sub);
        Box::pin(rx)
    }
}

/// A subscription's events, before [`bounded`].
type Events = std::pin::Pin<Box<dyn futures::Stream<Item = Result<WatchEvent, LockError>> + Send>>;

/// A subscription's stream, in a tokio context. Its silence is bounded as a
/// watch's is: it ends, and the driver resumes it (at no cost to the server).
fn bounded(events: Events, silence: Duration) -> WatchStream {
    Box::pin(CompatStream(Box::pin(futures::stream::unfold(
        events,
        move |mut rx| async move {
            match tokio::time::timeout(silence, rx.next()).await {
                Ok(Some(item)) => Some((item, rx)),
                Ok(None) | Err(_) => None,
            }
        },
    ))))
}

impl<K: Resource> State<K> {
    /// Tells the observers that `name` changed; drops those that are gone.
    fn tell(&mut self, name: &str) {
        self.observers
            .retain_mut(|o| match o.try_send(name.to_owned()) {
                Ok(()) => true,
                Err(e) => e.is_full(),
            });
    }

    /// A subscriber's first events: from no version, the object's state; from a
    /// version, every change after it in the window, or an error if the window
    /// does not reach back to it. False if the subscriber is done (gone, or
    /// ended by the error).
    fn prime<H>(&self, sub: &mut Sub<K>, name: &str, from: Option<&Version>, hub: &Hub<H>) -> bool {
        let overflows = &hub.overflows;
        let cached = self.objects.get(name);
        let Some(from) = from else {
            let event = match cached {
                Some(obj) => WatchEvent::Changed((sub.map)(obj)),
                // Absent as far as the hub knows: the elector confirms an
                // unversioned absence by a read before a holder acts on it.
                None => WatchEvent::Deleted(None),
            };
            return sub.send(event, overflows);
        };
        if cached.and_then(|o| version_of(&**o)).as_ref() == Some(from) {
            return true;
        }
        let reaches = self.floor.as_ref().is_some_and(|f| !f.is_newer_than(from));
        if !reaches {
            // The changes since `from` are no longer kept: go to the object's
            // state as the shared watch knows it, as a watch restarted after a
            // 410 would start (without the restart, its backoff or a read).
            let event = match cached {
                Some(obj) => WatchEvent::Changed((sub.map)(obj)),
                None => WatchEvent::Deleted(None),
            };
            return sub.send(event, overflows);
        }
        for (n, v, obj) in &self.window {
            if n != name || !v.is_newer_than(from) {
                continue;
            }
            let event = match obj {
                Some(o) => WatchEvent::Changed((sub.map)(o)),
                None => WatchEvent::Deleted(Some(v.clone())),
            };
            if !sub.send(event, overflows) {
                return false;
            }
        }
        true
    }

    /// Records an event in the window, dropping the oldest beyond [`HISTORY`].
    fn remember(&mut self, name: String, version: Version, obj: Option<Arc<K>>) {
        if self.window.len() == HISTORY
            && let Some((_, oldest, _)) = self.window.pop_front()
        {
            self.floor = Some(oldest);
        }
        self.window.push_back((name, version, obj));
    }
}

/// Why the hub's watch stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The server closed it cleanly: resume from the last version.
    Closed,
    /// It broke, erred (410 included) or fell silent: list afresh.
    Relist,
}

impl<K: Watched> Hub<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn run(self: Arc<Self>) {
        // Failed lists in a row, and watches in a row that ended before they
        // said anything: the first of either is retried at once (a connection
        // reset after a blip, a 410 on a resume); from the second on each waits
        // a backoff first, so that a server that refuses the watch (RBAC without
        // `watch`, say) or closes it at once makes no busy loop, and failed lists
        // end the subscriptions, so that their drivers poll.
        let (mut failed_lists, mut quiet_watches) = (0u32, 0u32);
        loop {
            let mut version = match self.list().await {
                Ok(v) => {
                    failed_lists = 0;
                    v
                }
                Err(e) => {
                    failed_lists = failed_lists.saturating_add(1);
                    if failed_lists > 1 {
                        let backoff = self.backoff(failed_lists - 1);
                        tracing::warn!(target = %self.target, error = %e, ?backoff, "shared watch: list failed; its subscribers poll");
                        self.end_all();
                        tokio::time::sleep(backoff).await;
                    } else {
                        tracing::debug!(target = %self.target, error = %e, "shared watch: list failed; trying again");
                    }
                    continue;
                }
            };
            // Resumed after a clean close; listed afresh after anything else.
            loop {
                let (stop, heard) = self.watch(&mut version).await;
                if heard {
                    quiet_watches = 0;
                } else {
                    quiet_watches = quiet_watches.saturating_add(1);
                    if quiet_watches > 1 {
                        tokio::time::sleep(self.backoff(quiet_watches - 1)).await;
                    }
                }
                if stop == Stop::Relist {
                    break;
                }
            }
        }
    }

    /// 1 s doubling up to 30 s.
    fn backoff(&self, failures: u32) -> Duration {
        Duration::from_secs(1 << failures.saturating_sub(1).min(5)).min(Duration::from_secs(30))
    }

    /// Ends every subscription (their drivers poll and resume later); the cache
    /// is no longer trusted.
    fn end_all(&self) {
        let mut state = self.lock();
        state.synced = false;
        state.failing = true;
        state.subs.clear();
    }

    /// Lists the objects, tells the subscribers what changed since the cache,
    /// and returns the list's version.
    async fn list(&self) -> Result<String, LockError> {
        let lp = ListParams::default().labels(&self.selector);
        let list = call_within(
            self.config.request_timeout,
            Verb::List,
            &self.target,
            async { self.api.list(&lp).await },
        )
        .await?;
        let version = list.metadata.resource_version.clone().unwrap_or_default();
        let fresh: HashMap<String, Arc<K>> = list
            .items
            .into_iter()
            .filter_map(|o| Some((o.meta().name.clone()?, Arc::new(o))))
            .collect();
        let mut guard = self.lock();
        let state = &mut *guard;
        let was_synced = state.synced;
        // What the list shows changed since the cache: a new version, a new
        // object, or one gone.
        let version_in =
            |objects: &HashMap<String, Arc<K>>, n: &str| objects.get(n).map(|o| version_of(&**o));
        let moved: HashSet<String> = fresh
            .keys()
            .filter(|n| version_in(&state.objects, n) != version_in(&fresh, n))
            .chain(state.objects.keys().filter(|n| !fresh.contains_key(*n)))
            .cloned()
            .collect();
        // Subscribers already running get those changes, as the events a watch
        // would have brought (a deletion's version is unknown).
        let mut subs = std::mem::take(&mut state.subs);
        for name in &moved {
            let Some(subs) = subs.get_mut(name) else {
                continue;
            };
            subs.retain_mut(|sub| {
                if sub.waiting.is_some() {
                    return true;
                }
                let event = match fresh.get(name) {
                    Some(o) => WatchEvent::Changed((sub.map)(o)),
                    None => WatchEvent::Deleted(None),
                };
                sub.send(event, &self.overflows)
            });
        }
        // When each object last changed: kept where it did not move, now where a
        // known object moved on, unknown for one first seen here (it may not have
        // changed for a long time).
        let now = Instant::now();
        state.changed = fresh
            .keys()
            .filter(|n| state.objects.contains_key(*n))
            .filter_map(|n| {
                let at = if moved.contains(n) {
                    now
                } else {
                    *state.changed.get(n)?
                };
                Some((n.clone(), at))
            })
            .collect();
        state.objects = fresh;
        for name in &moved {
            state.tell(name);
        }
        state.window.clear();
        state.floor = Some(Version::new(version.clone()));
        state.latest = Some(Version::new(version.clone()));
        state.synced = true;
        state.failing = false;
        // Then those that waited for the list start as they asked.
        for (name, subs) in subs.iter_mut() {
            subs.retain_mut(|sub| match sub.waiting.take() {
                Some(from) => state.prime(sub, name, from.as_ref(), self),
                None => true,
            });
        }
        subs.retain(|_, v| !v.is_empty());
        state.subs = subs;
        drop(guard);
        self.lists.fetch_add(1, Ordering::Relaxed);
        if was_synced {
            tracing::debug!(target = %self.target, "shared watch listed afresh");
        }
        Ok(version)
    }

    /// Watches from `version` (moved along with every event and bookmark) until
    /// the watch stops; says whether it heard anything (an event, a bookmark, or
    /// a `410 Gone`, the server's own word to list afresh).
    async fn watch(&self, version: &mut String) -> (Stop, bool) {
        self.watches.fetch_add(1, Ordering::Relaxed);
        let mut wp = WatchParams::default().labels(&self.selector);
        if let Some(t) = self.config.server_timeout {
            wp = wp.timeout(t);
        }
        let mut gone = false;
        let events = match call_within(
            self.config.request_timeout,
            Verb::Watch,
            &self.target,
            async {
                let r = self.api.watch(&wp, version).await;
                gone = matches!(&r, Err(kube::Error::Api(s)) if s.code == 410);
                r
            },
        )
        .await
        {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(target = %self.target, error = %e, "shared watch could not start; listing afresh");
                return (Stop::Relist, gone);
            }
        };
        let mut events = Box::pin(events);
        let mut heard = false;
        loop {
            let item = match tokio::time::timeout(self.config.silence, events.next()).await {
                Err(_) => {
                    tracing::debug!(target = %self.target, "shared watch silent too long; listing afresh");
                    return (Stop::Relist, heard);
                }
                Ok(None) => return (Stop::Closed, heard),
                Ok(Some(item)) => item,
            };
            let (obj, deleted) = match item {
                Ok(KubeEvent::Added(o)) | Ok(KubeEvent::Modified(o)) => (o, false),
                Ok(KubeEvent::Deleted(o)) => (o, true),
                Ok(KubeEvent::Bookmark(b)) => {
                    heard = true;
                    *version = b.metadata.resource_version;
                    continue;
                }
                Ok(KubeEvent::Error(status)) => {
                    let e = classify_status(&status, Verb::Watch, &self.target);
                    tracing::debug!(target = %self.target, error = %e, "shared watch error event; listing afresh");
                    return (Stop::Relist, heard || status.code == 410);
                }
                Err(e) => {
                    let e = classify(&e, Verb::Watch, &self.target);
                    tracing::debug!(target = %self.target, error = %e, "shared watch broke; listing afresh");
                    return (Stop::Relist, heard);
                }
            };
            heard = true;
            self.events.fetch_add(1, Ordering::Relaxed);
            if let Some(v) = &obj.meta().resource_version {
                version.clone_from(v);
            }
            self.apply(obj, deleted);
        }
    }

    /// One change from the watch: into the cache, and to the object's subscribers.
    fn apply(&self, obj: K, deleted: bool) {
        let (Some(name), Some(version)) = (obj.meta().name.clone(), version_of(&obj)) else {
            return;
        };
        let obj = Arc::new(obj);
        let mut state = self.lock();
        let state = &mut *state;
        if let Some(subs) = state.subs.get_mut(&name) {
            subs.retain_mut(|sub| {
                if sub.waiting.is_some() {
                    return true;
                }
                let event = if deleted {
                    WatchEvent::Deleted(Some(version.clone()))
                } else {
                    WatchEvent::Changed((sub.map)(&obj))
                };
                sub.send(event, &self.overflows)
            });
            if subs.is_empty() {
                state.subs.remove(&name);
            }
        }
        state.tell(&name);
        state.latest = Some(version.clone());
        if deleted {
            state.objects.remove(&name);
            state.changed.remove(&name);
            state.remember(name, version, None);
        } else {
            state.objects.insert(name.clone(), obj.clone());
            state.changed.insert(name.clone(), Instant::now());
            state.remember(name, version, Some(obj));
        }
    }
}
