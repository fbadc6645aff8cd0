//! A lock that wraps another and changes some of its calls: [`Layered`], with
//! a [`Layer`] that overrides only what it changes.
//!
//! Metrics, tracing, fault injection or counting a lock's background tasks
//! each wrap the lock the election uses. Written by hand, such a wrapper
//! implements every [`Lock`] method and forwards the ones it leaves alone; one
//! that forgets `watch`, `leadership_changed` or `configure` compiles (each has
//! a plausible body of its own) and silently turns followers into pollers,
//! drops the wrapped lock's Events or leaves it on its own timeouts. A
//! [`Layer`]'s methods forward to the wrapped lock by default, so
//! [`Layered`] forwards every call a layer does not override, by construction.

use alloc::string::String;
use core::future::Future;

use crate::config::Config;
use crate::lock::{LeadershipChange, Lock, LockError, LockTask, WatchStream};
use crate::record::{LockRecord, Observation, Version};

/// What a wrapper changes of the lock `L` it wraps. Each method is given the
/// wrapped lock and, by default, forwards the call to it: override only what
/// the wrapper changes, and put it around the lock with [`Layered::new`].
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// use election_core::{Layer, Layered, Lock, LockError, LockRecord, Observation, Version};
///
/// /// Counts the updates; every other call goes to the wrapped lock unchanged.
/// #[derive(Default)]
/// struct CountUpdates(AtomicU64);
///
/// impl<L: Lock> Layer<L> for CountUpdates {
///     async fn update(
///         &self,
///         inner: &L,
///         expected: &Version,
///         record: &LockRecord,
///     ) -> Result<Observation, LockError> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         inner.update(expected, record).await
///     }
/// }
///
/// fn counted<L: Lock>(lock: L) -> Layered<L, CountUpdates> {
///     Layered::new(lock, CountUpdates::default())
/// }
/// ```
pub trait Layer<L: Lock>: Send + Sync + 'static {
    /// [`Lock::get`] on `inner`.
    fn get(&self, inner: &L) -> impl Future<Output = Result<Observation, LockError>> + Send {
        inner.get()
    }

    /// [`Lock::create`] on `inner`.
    fn create(
        &self,
        inner: &L,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        inner.create(record)
    }

    /// [`Lock::update`] on `inner`.
    fn update(
        &self,
        inner: &L,
        expected: &Version,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        inner.update(expected, record)
    }

    /// [`Lock::watch`] on `inner`.
    fn watch(&self, inner: &L, from: Option<&Version>) -> Option<WatchStream> {
        inner.watch(from)
    }

    /// [`Lock::describe`] of `inner`.
    fn describe(&self, inner: &L) -> String {
        inner.describe()
    }

    /// [`Lock::leadership_changed`] on `inner`.
    fn leadership_changed(
        &self,
        inner: &L,
        identity: &str,
        change: LeadershipChange,
    ) -> Option<LockTask> {
        inner.leadership_changed(identity, change)
    }

    /// [`Lock::configure`] on `inner`.
    fn configure(&self, inner: &L, config: &Config) {
        inner.configure(config);
    }
}

/// The lock `L` wrapped by the layer `H`: a [`Lock`] whose every call goes
/// through `H`, which forwards what it does not override.
#[derive(Clone, Debug, Default)]
pub struct Layered<L, H> {
    inner: L,
    layer: H,
}

impl<L, H> Layered<L, H> {
    /// `inner` wrapped by `layer`.
    pub fn new(inner: L, layer: H) -> Self {
        Layered { inner, layer }
    }

    /// The wrapped lock.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The layer.
    pub fn layer(&self) -> &H {
        &self.layer
    }

    /// The wrapped lock and the layer, apart again.
    pub fn into_parts(self) -> (L, H) {
        (self.inner, self.layer)
    }
}

impl<L: Lock, H: Layer<L>> Lock for Layered<L, H> {
    fn get(&self) -> impl Future<Output = Result<Observation, LockError>> + Send {
        self.layer.get(&self.inner)
    }

    fn create(
        &self,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        self.layer.create(&self.inner, record)
    }

    fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        self.layer.update(&self.inner, expected, record)
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        self.layer.watch(&self.inner, from)
    }

    fn describe(&self) -> String {
        self.layer.describe(&self.inner)
    }

    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        self.layer.leadership_changed(&self.inner, identity, change)
    }

    fn configure(&self, config: &Config) {
        self.layer.configure(&self.inner, config);
    }
}
