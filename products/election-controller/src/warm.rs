//! The warm cache: a kube-runtime watcher and reflector that run on every
//! replica from start-up, leader or not, and hand each leadership term a
//! stream of the objects to reconcile.
//!
//! A term's stream ([`Warm::subscribe`]) starts with every object of the
//! store, then carries each object the watch applies (and every object again
//! after a relist). Subscribing and the reflector's writes take the same lock,
//! so no change falls between the snapshot and the stream.
//!
//! Secondary resources (the children a controller `owns`, or other objects it
//! `watches`) are cached the same way: a second `Warm` of them, whose
//! [`Warm::subscribe_changes`] stream (their changes from the term's start,
//! deletions included, as kube-runtime's own `owns` and `watches` see them)
//! goes to the term's controller through `owns_shared_stream` or
//! `watches_shared_stream`.
//!
//! Why this crate's own fan-out and not kube-runtime's `Writer::subscribe`
//! (whose `ReflectHandle` is the stream that `Controller::for_shared_stream`
//! was made for): a `ReflectHandle` starts with the changes made after it was
//! created, not with the cached objects, so a new leader would only reconcile
//! what changes next; and a handle kept between terms, unpolled, would hold the
//! writer back once the channel's buffer fills. Here a term gets a fresh
//! channel that starts with the cache and ends with the term; with no term
//! running, the reflector hands nothing to anyone.

use std::fmt::Debug;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::{Api, Resource};
use kube_runtime::reflector::{self, ObjectRef, Store};
use kube_runtime::watcher::{self, Event, watcher};
use kube_runtime::{Controller, WatchStreamExt};
use serde::de::DeserializeOwned;

/// What [`Warm`] can cache: a static Kubernetes type (its `DynamicType` is `()`,
/// as for every k8s-openapi type and `#[derive(CustomResource)]`).
pub trait Cached:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

impl<K> Cached for K where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

/// A reflector store kept in sync on every replica, with a stream of objects to
/// reconcile for each leadership term. Cheap to clone; the watch stops when the
/// last clone is dropped.
pub struct Warm<K: Cached> {
    inner: Arc<Inner<K>>,
}

impl<K: Cached> Clone for Warm<K> {
    fn clone(&self) -> Self {
        Warm {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<K: Cached> {
    store: Store<K>,
    hub: Arc<Mutex<Vec<Subscriber<K>>>>,
    task: tokio::task::JoinHandle<()>,
}

/// One term's channel, and whether it is a secondary trigger
/// ([`Warm::subscribe_changes`]: deleted objects too).
struct Subscriber<K> {
    tx: mpsc::UnboundedSender<Arc<K>>,
    changes: bool,
}

impl<K: Cached> Drop for Inner<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<K: Cached> Warm<K> {
    /// Starts watching `api` with `config` on the current tokio runtime (kube-rs
    /// is tokio's): one LIST (in pages), then one WATCH, resumed from its last
    /// version or bookmark, relisting only after a 410 or an error, with
    /// kube-runtime's default backoff. Call it at start-up, on every replica.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn(api: Api<K>, config: watcher::Config) -> Self {
        let (store, mut writer) = reflector::store::<K>();
        let hub: Arc<Mutex<Vec<Subscriber<K>>>> = Arc::default();
        let task_hub = Arc::clone(&hub);
        let reader = store.clone();
        let mut events = watcher(api, config).default_backoff().boxed();
        let task = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => {
                        let mut subscribers = lock(&task_hub);
                        writer.apply_watcher_event(&event);
                        subscribers.retain(|s| !s.tx.is_closed());
                        if subscribers.is_empty() {
                            continue;
                        }
                        let (changed, deleted): (Vec<Arc<K>>, bool) = match &event {
                            Event::Apply(obj) => (
                                reader.get(&ObjectRef::from_obj(obj)).into_iter().collect(),
                                false,
                            ),
                            Event::InitDone => (reader.state(), false),
                            Event::Delete(obj) => (vec![Arc::new(obj.clone())], true),
                            Event::Init | Event::InitApply(_) => (Vec::new(), false),
                        };
                        for obj in changed {
                            for s in subscribers.iter().filter(|s| s.changes || !deleted) {
                                let _ = s.tx.unbounded_send(Arc::clone(&obj));
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "warm cache: watch failed, retrying"),
                }
            }
        });
        Warm {
            inner: Arc::new(Inner { store, hub, task }),
        }
    }

    /// The store: every object the watch has applied.
    pub fn store(&self) -> Store<K> {
        self.inner.store.clone()
    }

    /// Resolves once the first list has been applied.
    pub async fn synced(&self) {
        // The writer lives as long as `self`, so the store becomes ready or
        // this waits: its only error is a dropped writer.
        let _ = self.inner.store.wait_until_ready().await;
    }

    /// A stream for one term: every cached object, then every object the watch
    /// applies from now on (and all of them again after a relist). It ends when
    /// the watch stops; drop it to unsubscribe. The trigger of a term's primary
    /// objects (a deleted one has nothing left to reconcile).
    pub fn subscribe(&self) -> Subscription<K> {
        self.subscribe_with(false)
    }

    /// The trigger of secondary objects, for kube-runtime's
    /// `owns_shared_stream` and `watches_shared_stream`: each object the watch
    /// applies or deletes (as it was last seen) from now on, and all of them
    /// again after a relist. A deleted child must reach its parent's
    /// reconcile, so deletions are carried; the cached objects are not
    /// (the term's primary stream starts with every parent already). A
    /// deletion the watch missed (one that fell in a relist) is not carried.
    pub fn subscribe_changes(&self) -> Subscription<K> {
        self.subscribe_with(true)
    }

    /// `changes`: a secondary trigger (deletions, no snapshot); otherwise a
    /// primary one.
    fn subscribe_with(&self, changes: bool) -> Subscription<K> {
        let (tx, rx) = mpsc::unbounded();
        // Under the reflector's lock: nothing it applies falls between the
        // snapshot and the registration.
        let snapshot = {
            let mut hub = lock(&self.inner.hub);
            hub.push(Subscriber { tx, changes });
            if changes {
                Vec::new()
            } else {
                self.inner.store.state()
            }
        };
        Subscription {
            inner: futures::stream::iter(snapshot).chain(rx).boxed(),
        }
    }

    /// A kube-runtime [`Controller`] fed by [`Warm::subscribe`] and reading
    /// this store: it lists nothing, so it reconciles at once.
    pub fn controller(&self) -> Controller<K> {
        Controller::for_shared_stream(self.subscribe(), self.store())
    }
}

/// The objects one term reconciles: see [`Warm::subscribe`] and
/// [`Warm::subscribe_changes`].
#[must_use = "streams do nothing unless polled"]
pub struct Subscription<K> {
    inner: BoxStream<'static, Arc<K>>,
}

impl<K> Stream for Subscription<K> {
    type Item = Arc<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Arc<K>>> {
        self.inner.poll_next_unpin(cx)
    }
}
