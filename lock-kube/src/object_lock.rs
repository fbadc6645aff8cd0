//! A [`Lock`] on one namespaced Kubernetes object, generic over how the record is
//! stored in it ([`Codec`]): the compare-and-swap, caching, watch, label and event
//! logic of the Kubernetes locks, written once. `lock-lease` and `lock-configmap`
//! are a codec each and a name for this lock over it
//! (`pub type LeaseLock = ObjectLock<LeaseCodec>`).
//!
//! Writes are PUTs of the whole object carrying the expected `resourceVersion`, so
//! the API server rejects them with 409 if the object moved on: never a blind
//! write. The object is the one last read or written at that version (cached), so
//! labels, annotations, owner references and data that others put on it are kept
//! (docs/faults.md R12). When the cache holds another version, the lock reads the object
//! first and answers [`LockError::Conflict`] at once if it is not at the expected
//! version.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use election_core::{
    Config, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Version,
    WallTime, WatchStream,
};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{Api, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::builder::LockBuilder;
use crate::call::call;
use crate::error::{Target, Verb};
use crate::events::{EventError, EventRecorder, LeaderEvent};
use crate::names::NameError;
use crate::shared_watch::SharedWatch;
use crate::time::Clock;
use crate::watch::{WatchConfig, watch_object};

/// How a lock record is stored in one kind of object: the whole difference
/// between the Kubernetes locks.
pub trait Codec: Send + Sync + 'static {
    /// The kind of object holding the record (`Lease`, `ConfigMap`).
    type Object: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Default
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static;

    /// The resource as RBAC names it (`leases.coordination.k8s.io`, `configmaps`).
    const RESOURCE: &'static str;

    /// Reads the record from an object. Never fails: whatever cannot be read is
    /// reported (a `tracing` warning) and read as the core's tolerant defaults.
    fn decode(&self, obj: &Self::Object) -> LockRecord;

    /// Writes `record` into `obj`, stamping [`election_core::Stamp::Now`] with
    /// `now`, leaving everything it does not own untouched.
    fn encode(&self, obj: &mut Self::Object, record: &LockRecord, now: WallTime);

    /// A fresh object named `name` in `namespace`, without the record: by default
    /// the kind's default with only its name and namespace set.
    fn new_object(&self, namespace: &str, name: &str) -> Self::Object {
        let mut obj = Self::Object::default();
        let meta = obj.meta_mut();
        meta.name = Some(name.to_owned());
        meta.namespace = Some(namespace.to_owned());
        obj
    }
}

/// The bound of the lock's own calls until a driver configures it: client-go's
/// request timeout for its default 10 s renew deadline.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings of an [`ObjectLock`].
#[derive(Clone, Debug)]
pub struct ObjectLockConfig {
    /// The watch's behaviour.
    pub watch: WatchConfig,
    /// Whether [`Lock::watch`] offers a watch (else the elector polls).
    pub watch_enabled: bool,
    /// Stamps [`election_core::Stamp::Now`] and Events.
    pub clock: Clock,
    /// `source.component` of Events.
    pub event_component: String,
    /// Whether [`Lock::leadership_changed`] records client-go's Events
    /// (`<identity> became leader` / `stopped leading`). On by default.
    pub events_enabled: bool,
    /// Labels merged into the object on every write (client-go's
    /// `NewWithLabels`); labels set by others are kept. None by default.
    pub labels: BTreeMap<String, String>,
}

impl Default for ObjectLockConfig {
    /// Watch on, the system clock, component `leader-election`, Events
    /// recorded, no labels.
    fn default() -> Self {
        ObjectLockConfig {
            watch: WatchConfig::default(),
            watch_enabled: true,
            clock: Clock::system(),
            event_component: "leader-election".to_owned(),
            events_enabled: true,
            labels: BTreeMap::new(),
        }
    }
}

/// A compare-and-swap lock on one namespaced object, its record stored by the
/// codec `C`. Cheap to clone (clones share the cache).
///
/// Start from [`ObjectLock::builder`] (validated names, the settings of
/// [`LockBuilder`]); through the locks' aliases that reads
/// `LeaseLock::builder(client, namespace, name).build()?`.
pub struct ObjectLock<C: Codec> {
    inner: Arc<Inner<C>>,
}

impl<C: Codec> Clone for ObjectLock<C> {
    fn clone(&self) -> Self {
        ObjectLock {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<C: Codec> {
    api: Api<C::Object>,
    client: kube::Client,
    codec: C,
    target: Target,
    config: ObjectLockConfig,
    /// The bound of the calls the lock makes by itself (a watch's first read
    /// and connect, Events), in nanoseconds: client-go's 5 s, then the
    /// election's `request_timeout` once a driver configured the lock.
    request_timeout: AtomicU64,
    /// The object as last read or written, to write back with our record.
    cache: Mutex<Option<C::Object>>,
    /// The watch shared with other locks, if built with one.
    shared: Option<SharedWatch<C::Object>>,
}

impl<C: Codec> Debug for ObjectLock<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectLock")
            .field("target", &self.inner.target)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<C: Codec + Default> ObjectLock<C> {
    /// A builder for a lock on the object `name` in `namespace`. Build the client
    /// with [`crate::lock_client`] so that kube's own retries stay off.
    pub fn builder(client: kube::Client, namespace: &str, name: &str) -> LockBuilder<C> {
        LockBuilder::new(client, namespace, name)
    }

    /// A lock on the object `name` in `namespace` with the default settings, or
    /// an error if the namespace or name is not one Kubernetes accepts.
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Result<Self, NameError> {
        Self::builder(client, namespace, name).build()
    }
}

impl<C: Codec> ObjectLock<C> {
    /// A lock on the object `name` in `namespace`, stored by `codec`, with
    /// `config`. The names are not checked: [`ObjectLock::builder`] checks them.
    pub fn from_parts(
        client: kube::Client,
        namespace: &str,
        name: &str,
        codec: C,
        config: ObjectLockConfig,
    ) -> Self {
        ObjectLock {
            inner: Arc::new(Inner {
                api: Api::namespaced(client.clone(), namespace),
                client,
                codec,
                target: Target::new(C::RESOURCE, namespace, name),
                request_timeout: AtomicU64::new(nanos(DEFAULT_REQUEST_TIMEOUT)),
                config,
                cache: Mutex::new(None),
                shared: None,
            }),
        }
    }

    /// This lock, watched through `shared` instead of a watch of its own (the
    /// builder's [`LockBuilder::shared_watch`] calls it, and adds the labels).
    pub(crate) fn with_shared_watch(mut self, shared: SharedWatch<C::Object>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.shared = Some(shared);
        }
        self
    }

    /// One watch for the objects of many locks of this kind in `namespace`, found
    /// by `labels`: build each lock with [`LockBuilder::shared_watch`] and spawn
    /// [`SharedWatch::run`] once. Build the client with [`crate::lock_client`];
    /// RBAC needs `list` and `watch` on the resource in the namespace. See
    /// [`crate::shared_watch`].
    pub fn shared_watch(
        client: kube::Client,
        namespace: &str,
        labels: impl IntoIterator<Item = (String, String)>,
        config: WatchConfig,
    ) -> SharedWatch<C::Object> {
        SharedWatch::new(
            client,
            C::RESOURCE,
            namespace,
            labels.into_iter().collect(),
            config,
        )
    }

    /// The codec.
    pub fn codec(&self) -> &C {
        &self.inner.codec
    }

    /// The object named, and its namespace, with the resource.
    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// The settings.
    pub fn config(&self) -> &ObjectLockConfig {
        &self.inner.config
    }

    /// The bound of the calls the lock makes by itself (a watch's first read and
    /// connect, Events): the election's `request_timeout` once a driver has
    /// configured the lock ([`Lock::configure`]), else client-go's 5 s. The
    /// calls of [`Lock`] have no bound of their own: the driver bounds each.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_nanos(self.inner.request_timeout.load(Ordering::Relaxed))
    }

    /// A reference to the lock object, for Events (with its uid once seen).
    pub fn object_reference(&self) -> ObjectReference {
        let cached = self
            .cache()
            .map(|o| (o.meta().uid.clone(), o.meta().resource_version.clone()));
        let (uid, resource_version) = cached.unwrap_or((None, None));
        ObjectReference {
            api_version: Some(C::Object::api_version(&()).into_owned()),
            kind: Some(C::Object::kind(&()).into_owned()),
            namespace: Some(self.inner.target.namespace.clone()),
            name: Some(self.inner.target.name.clone()),
            uid,
            resource_version,
            field_path: None,
        }
    }

    /// Records `event` as a Kubernetes Event on the lock object (reason
    /// `LeaderElection`, type `Normal`). Best-effort: log the error and go on; it
    /// never affects the election (docs/faults.md H9). The call is bounded by the request
    /// timeout.
    pub async fn record_event(&self, event: LeaderEvent) -> Result<(), EventError> {
        let recorder = EventRecorder::new(
            self.inner.client.clone(),
            &self.inner.target.namespace,
            self.inner.config.event_component.clone(),
            self.inner.config.clock.clone(),
            self.request_timeout(),
        );
        recorder.record(&self.object_reference(), &event).await
    }

    /// The task that records the Event for `change` of `identity`'s leadership,
    /// or `None` when Events are off. Its failure is logged by
    /// [`EventRecorder::record`] and goes no further (docs/faults.md H9).
    pub fn event_task(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        if !self.inner.config.events_enabled {
            return None;
        }
        let identity = identity.to_owned();
        let event = match change {
            LeadershipChange::BecameLeader => LeaderEvent::BecameLeader { identity },
            LeadershipChange::StoppedLeading => LeaderEvent::StoppedLeading { identity },
        };
        let me = self.clone();
        Some(Box::pin(async move {
            // Already logged as a warning by the recorder; nothing else to do.
            let _ = me.record_event(event).await;
        }))
    }

    fn cache(&self) -> Option<C::Object> {
        self.inner
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn remember(&self, obj: &C::Object) {
        *self.inner.cache.lock().unwrap_or_else(|p| p.into_inner()) = Some(obj.clone());
    }

    fn observe(&self, obj: &C::Object) -> Observation {
        self.remember(obj);
        observation(&self.inner.codec, obj)
    }

    async fn read(&self) -> Result<C::Object, LockError> {
        let api = self.inner.api.clone();
        let name = self.inner.target.name.clone();
        call(Verb::Get, &self.inner.target, async move {
            api.get(&name).await
        })
        .await
    }
}

/// The annotation a write bumps when it would otherwise be byte-identical to the
/// stored object (a holder whose wall clock is frozen, or two renewals within one
/// second of a ConfigMap record): the API server would not give it a new version.
pub const REWRITE_ANNOTATION: &str = "kube-elector.dev/rewrite";

fn bump_rewrite_counter(meta: &mut ObjectMeta) {
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    let n = annotations
        .get(REWRITE_ANNOTATION)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    annotations.insert(REWRITE_ANNOTATION.to_owned(), n.wrapping_add(1).to_string());
}

/// A PUT of an object that was deleted meanwhile fails the UID precondition
/// (the body carries the old UID) with a 409 whose message names an empty UID in
/// object meta; the object is gone, which the elector must hear as NotFound.
fn uid_gone_as_not_found(e: kube::Error) -> kube::Error {
    if let kube::Error::Api(s) = &e
        && s.code == 409
        && s.message.trim_end().ends_with("UID in object meta:")
    {
        return kube::Error::Api(Box::new(
            kube::core::Status::failure(&s.message, "NotFound").with_code(404),
        ));
    }
    e
}

fn observation<C: Codec>(codec: &C, obj: &C::Object) -> Observation {
    let version = obj.meta().resource_version.clone().unwrap_or_default();
    Observation::new(version, codec.decode(obj))
}

/// Merges `labels` into the object's labels, keeping the others.
fn merge_labels(meta: &mut ObjectMeta, labels: &BTreeMap<String, String>) {
    if !labels.is_empty() {
        let l = meta.labels.get_or_insert_with(BTreeMap::new);
        l.extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// A timeout in nanoseconds, saturated (584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl<C: Codec> Lock for ObjectLock<C> {
    async fn get(&self) -> Result<Observation, LockError> {
        let obj = self.read().await?;
        Ok(self.observe(&obj))
    }

    fn create(
        &self,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        let record = record.clone();
        async move {
            let inner = &self.inner;
            let mut obj = inner
                .codec
                .new_object(&inner.target.namespace, &inner.target.name);
            inner
                .codec
                .encode(&mut obj, &record, inner.config.clock.now());
            merge_labels(obj.meta_mut(), &inner.config.labels);
            let api = inner.api.clone();
            let created = call(Verb::Create, &inner.target, async move {
                api.create(&PostParams::default(), &obj).await
            })
            .await?;
            Ok(self.observe(&created))
        }
    }

    fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        let expected = expected.clone();
        let record = record.clone();
        async move {
            let inner = &self.inner;
            let cached = self
                .cache()
                .filter(|o| o.meta().resource_version.as_deref() == Some(expected.as_str()));
            let mut obj = match cached {
                Some(o) => o,
                None => {
                    let fresh = self.read().await?;
                    self.remember(&fresh);
                    if fresh.meta().resource_version.as_deref() != Some(expected.as_str()) {
                        return Err(LockError::Conflict);
                    }
                    fresh
                }
            };
            let before = serde_json::to_value(&obj).ok();
            inner
                .codec
                .encode(&mut obj, &record, inner.config.clock.now());
            merge_labels(obj.meta_mut(), &inner.config.labels);
            if before.is_some() && before == serde_json::to_value(&obj).ok() {
                // The API server turns a byte-identical PUT into a no-op that keeps
                // the version, and followers would then see no renewal
                // (docs/faults.md R10): make the write visible.
                bump_rewrite_counter(obj.meta_mut());
            }
            // The PUT carries `expected` as its resourceVersion: a compare-and-swap.
            obj.meta_mut().resource_version = Some(expected.as_str().to_owned());
            let api = inner.api.clone();
            let name = inner.target.name.clone();
            let written = call(Verb::Update, &inner.target, async move {
                api.replace(&name, &PostParams::default(), &obj)
                    .await
                    .map_err(uid_gone_as_not_found)
            })
            .await?;
            Ok(self.observe(&written))
        }
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        if !self.inner.config.watch_enabled {
            return None;
        }
        let me = self.clone();
        if let Some(shared) = &self.inner.shared {
            let map = Arc::new(move |obj: &C::Object| me.observe(obj));
            return Some(shared.subscribe(&self.inner.target.name, from.cloned(), map));
        }
        let mut wc = self.inner.config.watch.clone();
        wc.request_timeout = self.request_timeout();
        Some(watch_object(
            self.inner.api.clone(),
            self.inner.target.clone(),
            from.cloned(),
            wc,
            Arc::new(move |obj: &C::Object| me.observe(obj)),
        ))
    }

    /// Records client-go's Event (`<identity> became leader` / `stopped
    /// leading`, reason `LeaderElection`) in the background, unless the builder
    /// turned Events off; a failure is logged and never touches the election.
    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        self.event_task(identity, change)
    }

    /// Takes the election's `request_timeout` as the bound of the calls it
    /// makes by itself: its watch's first read and connect, its Events. The
    /// calls of this trait are the driver's to bound.
    fn configure(&self, config: &Config) {
        self.inner
            .request_timeout
            .store(nanos(config.request_timeout), Ordering::Relaxed);
    }

    fn describe(&self) -> String {
        let t = &self.inner.target;
        let plural = t.resource.split('.').next().unwrap_or(t.resource);
        format!("{plural}/{}/{}", t.namespace, t.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A codec that stores nothing, for the lock's own settings.
    #[derive(Default)]
    struct Nothing;

    impl Codec for Nothing {
        type Object = k8s_openapi::api::core::v1::ConfigMap;
        const RESOURCE: &'static str = "configmaps";
        fn decode(&self, _: &Self::Object) -> LockRecord {
            LockRecord::default()
        }
        fn encode(&self, _: &mut Self::Object, _: &LockRecord, _: WallTime) {}
    }

    #[test]
    fn its_own_calls_take_the_elections_request_timeout_once_a_driver_configures_it() {
        let kube_config = kube::Config::new("http://127.0.0.1:1".parse().expect("a URI"));
        let client = crate::lock_client(kube_config).expect("a client");
        let lock = ObjectLock::<Nothing>::new(client, "ns", "lock").expect("valid names");
        assert_eq!(
            lock.request_timeout(),
            Duration::from_secs(5),
            "the default"
        );
        let config = Config::fast("a");
        assert_ne!(config.request_timeout, Duration::from_secs(5));
        lock.configure(&config);
        assert_eq!(lock.request_timeout(), config.request_timeout);
        let mut slow = Config::openshift("a");
        slow.request_timeout = Duration::from_secs(53);
        lock.clone().configure(&slow);
        assert_eq!(
            lock.request_timeout(),
            slow.request_timeout,
            "clones share it"
        );
    }

    #[test]
    fn r10_the_rewrite_counter_counts_up_and_keeps_other_annotations() {
        let mut meta = ObjectMeta {
            annotations: Some(BTreeMap::from([("x".to_owned(), "y".to_owned())])),
            ..ObjectMeta::default()
        };
        bump_rewrite_counter(&mut meta);
        bump_rewrite_counter(&mut meta);
        let a = meta.annotations.unwrap();
        assert_eq!(a[REWRITE_ANNOTATION], "2");
        assert_eq!(a["x"], "y");
    }

    #[test]
    fn labels_are_merged_not_replaced() {
        let mut meta = ObjectMeta {
            labels: Some(BTreeMap::from([
                ("team".to_owned(), "x".to_owned()),
                ("app".to_owned(), "old".to_owned()),
            ])),
            ..ObjectMeta::default()
        };
        let labels = BTreeMap::from([("app".to_owned(), "ours".to_owned())]);
        merge_labels(&mut meta, &labels);
        let got = meta.labels.unwrap();
        assert_eq!(got["team"], "x");
        assert_eq!(got["app"], "ours");
    }

    #[test]
    fn a4_a_failed_uid_precondition_on_a_missing_object_is_not_found() {
        let gone = kube::core::Status::failure(
            "StorageError: invalid object, Code: 4, Key: /registry/leases/default/l, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: abc, UID in object meta: ",
            "Conflict",
        )
        .with_code(409);
        match uid_gone_as_not_found(kube::Error::Api(Box::new(gone))) {
            kube::Error::Api(s) => assert_eq!(s.code, 404),
            other => panic!("expected an API error, got {other:?}"),
        }
        // Another UID (the object was re-created) stays a conflict.
        let moved = kube::core::Status::failure(
            "Precondition failed: UID in precondition: abc, UID in object meta: def",
            "Conflict",
        )
        .with_code(409);
        match uid_gone_as_not_found(kube::Error::Api(Box::new(moved))) {
            kube::Error::Api(s) => assert_eq!(s.code, 409),
            other => panic!("expected an API error, got {other:?}"),
        }
    }
}
