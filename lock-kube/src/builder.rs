//! The builder both Kubernetes locks offer, written once.

use std::marker::PhantomData;

use crate::names::{NameError, validate_name, validate_namespace};
use crate::object_lock::{Codec, ObjectLock, ObjectLockConfig};
use crate::shared_watch::SharedWatch;
use crate::time::Clock;
use crate::watch::WatchConfig;

/// Builds an [`ObjectLock`] over the codec `C` (a Lease lock, a ConfigMap lock):
/// see [`ObjectLock::builder`].
#[must_use]
pub struct LockBuilder<C: Codec> {
    client: kube::Client,
    namespace: String,
    name: String,
    config: ObjectLockConfig,
    shared: Option<SharedWatch<C::Object>>,
    codec: PhantomData<fn() -> C>,
}

impl<C: Codec + Default> LockBuilder<C> {
    /// A builder for a lock on object `name` in `namespace`. Build the client with
    /// [`crate::lock_client`] so that kube's own retries stay off.
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        LockBuilder {
            client,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            config: ObjectLockConfig::default(),
            shared: None,
            codec: PhantomData,
        }
    }

    /// Adds a label merged into the object on every write (client-go's
    /// `NewWithLabels`); labels set by others are kept.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.labels.insert(key.into(), value.into());
        self
    }

    /// Adds labels merged into the object on every write.
    pub fn labels(mut self, labels: impl IntoIterator<Item = (String, String)>) -> Self {
        self.config.labels.extend(labels);
        self
    }

    /// The wall clock that stamps `acquireTime`, `renewTime` and Events (tests
    /// inject one; the default is the system clock).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.config.clock = clock;
        self
    }

    /// The watch's behaviour (silence bound, server timeout).
    pub fn watch(mut self, watch: WatchConfig) -> Self {
        self.config.watch = watch;
        self
    }

    /// Watches the object through `shared`, one watch for many locks, instead of
    /// a watch of its own; the shared watch's labels are merged into the object
    /// on every write, so that the watch finds it. See [`crate::shared_watch`].
    pub fn shared_watch(mut self, shared: &SharedWatch<C::Object>) -> Self {
        self.config
            .labels
            .extend(shared.labels().iter().map(|(k, v)| (k.clone(), v.clone())));
        self.shared = Some(shared.clone());
        self
    }

    /// Offers no watch: the elector polls (client-go's behaviour).
    pub fn polling_only(mut self) -> Self {
        self.config.watch_enabled = false;
        self
    }

    /// `source.component` of the Events (default `leader-election`).
    pub fn event_component(mut self, component: impl Into<String>) -> Self {
        self.config.event_component = component.into();
        self
    }

    /// Records no Kubernetes Events on leadership changes (they are on by
    /// default, as in client-go; they need `events` `create` in the namespace).
    pub fn without_events(mut self) -> Self {
        self.config.events_enabled = false;
        self
    }

    /// The lock, or an error if the namespace or name is not one Kubernetes accepts.
    pub fn build(self) -> Result<ObjectLock<C>, NameError> {
        validate_namespace(&self.namespace)?;
        validate_name(&self.name)?;
        let lock = ObjectLock::from_parts(
            self.client,
            &self.namespace,
            &self.name,
            C::default(),
            self.config,
        );
        Ok(match self.shared {
            Some(shared) => lock.with_shared_watch(shared),
            None => lock,
        })
    }
}
