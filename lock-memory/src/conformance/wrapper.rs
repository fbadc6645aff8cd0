//! The check for wrappers: a lock that wraps another (metrics, tracing, fault
//! injection) forwards every [`Lock`] method to it, `watch`,
//! `leadership_changed` and `configure` included.
//!
//! The case-based suite cannot see this: it only holds the outermost lock, and
//! what `leadership_changed` does is the backend's own business (an Event on a
//! Kubernetes object; nothing at all for the memory lock), so a wrapper that
//! drops the call looks the same as a backend with nothing to record. A wrapper
//! generic over the lock it wraps can be checked here instead: [`check_wrapper`]
//! wraps a [`Probe`], a lock that notices every call, and checks through the
//! wrapper that each reaches it.

use std::sync::{Arc, Mutex};

use election_core::{
    Config, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Version,
    WatchEvent, WatchStream,
};

use super::{Timeouts, held, next_is, ok, within};
use crate::{MemoryLock, MemoryStore};

/// The identity [`check_wrapper`] reports leadership changes for.
pub const PROBE_IDENTITY: &str = "probe";

/// The lock [`check_wrapper`] gives the wrapper under test: a [`MemoryLock`] on a
/// store of its own that also notes what it is told through
/// [`Lock::leadership_changed`], and returns a task that notes it ran, and the
/// configurations it is given through [`Lock::configure`].
#[derive(Clone, Debug)]
pub struct Probe {
    inner: MemoryLock,
    store: MemoryStore,
    told: Arc<Mutex<Vec<Told>>>,
    configured: Arc<Mutex<Vec<Config>>>,
}

/// One call of [`Lock::leadership_changed`] on a [`Probe`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct Told {
    identity: String,
    change: LeadershipChange,
    task_ran: bool,
}

impl Probe {
    fn new() -> Self {
        let store = MemoryStore::new();
        Probe {
            inner: store.client("probe"),
            store,
            told: Arc::default(),
            configured: Arc::default(),
        }
    }

    fn told(&self) -> Vec<Told> {
        self.told.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn configured(&self) -> Vec<Config> {
        self.configured
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Lock for Probe {
    async fn get(&self) -> Result<Observation, LockError> {
        self.inner.get().await
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        self.inner.create(record).await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        self.inner.update(expected, record).await
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        self.inner.watch(from)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        let told = Arc::clone(&self.told);
        let mut all = told.lock().unwrap_or_else(|e| e.into_inner());
        let at = all.len();
        all.push(Told {
            identity: identity.to_owned(),
            change,
            task_ran: false,
        });
        drop(all);
        Some(Box::pin(async move {
            told.lock().unwrap_or_else(|e| e.into_inner())[at].task_ran = true;
        }))
    }

    fn configure(&self, config: &Config) {
        self.configured
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(config.clone());
        self.inner.configure(config);
    }
}

/// A method a wrapper does not forward.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the wrapper does not forward {method}: {expectation}")]
pub struct WrapperFailure {
    /// The [`Lock`] method.
    pub method: &'static str,
    /// What was expected, and what happened instead.
    pub expectation: String,
}

/// Checks that the lock `wrap` makes of a [`Probe`] forwards each [`Lock`] method
/// to it: reads and writes reach the probe's store, a watch through the wrapper
/// sees them, and [`Lock::leadership_changed`] reaches the probe, whose task the
/// wrapper hands back to be run, and the configuration given to
/// [`Lock::configure`] reaches it. [`Lock::describe`] is the wrapper's to choose.
/// Every call is bounded by the default [`Timeouts`]; runs on any executor.
///
/// ```
/// use election_core::{Config, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Version, WatchStream};
/// use lock_memory::conformance::check_wrapper;
///
/// /// Counts nothing, forwards everything.
/// struct Counted<L>(L);
///
/// impl<L: Lock> Lock for Counted<L> {
///     async fn get(&self) -> Result<Observation, LockError> { self.0.get().await }
///     async fn create(&self, r: &LockRecord) -> Result<Observation, LockError> { self.0.create(r).await }
///     async fn update(&self, v: &Version, r: &LockRecord) -> Result<Observation, LockError> {
///         self.0.update(v, r).await
///     }
///     fn watch(&self, from: Option<&Version>) -> Option<WatchStream> { self.0.watch(from) }
///     fn describe(&self) -> String { self.0.describe() }
///     fn leadership_changed(&self, id: &str, c: LeadershipChange) -> Option<LockTask> {
///         self.0.leadership_changed(id, c)
///     }
///     fn configure(&self, config: &Config) { self.0.configure(config) }
/// }
///
/// futures_lite::future::block_on(check_wrapper(Counted)).unwrap();
/// ```
pub async fn check_wrapper<W: Lock>(wrap: impl FnOnce(Probe) -> W) -> Result<(), WrapperFailure> {
    let probe = Probe::new();
    let wrapper = wrap(probe.clone());
    let t = Timeouts::default();
    let fail = |method: &'static str| {
        move |expectation: String| WrapperFailure {
            method,
            expectation,
        }
    };

    let config = Config::fast(PROBE_IDENTITY);
    wrapper.configure(&config);
    if probe.configured() != [config.clone()] {
        return Err(fail("configure")(format!(
            "the wrapped lock was given {:?}, expected the configuration once",
            probe.configured()
        )));
    }

    let absent = within(t.call, wrapper.get()).await;
    if absent != Some(Err(LockError::NotFound)) {
        return Err(fail("get")(format!(
            "a read of the absent lock gave {absent:?}, expected NotFound"
        )));
    }
    let created = ok(&t, "create", wrapper.create(&held(PROBE_IDENTITY)))
        .await
        .map_err(fail("create"))?;
    if probe.store.current().as_ref() != Some(&created) {
        return Err(fail("create")(format!(
            "the wrapped lock holds {:?} after a create answered {created:?}",
            probe.store.current()
        )));
    }
    let read = ok(&t, "get", wrapper.get()).await.map_err(fail("get"))?;
    if read != created {
        return Err(fail("get")(format!("read {read:?}, expected {created:?}")));
    }

    let mut watch = wrapper.watch(Some(&created.version)).ok_or_else(|| {
        fail("watch")("no watch through the wrapper; the wrapped lock has one".into())
    })?;
    let updated = ok(
        &t,
        "update",
        wrapper.update(&created.version, &held(PROBE_IDENTITY)),
    )
    .await
    .map_err(fail("update"))?;
    if probe.store.current().as_ref() != Some(&updated) {
        return Err(fail("update")(format!(
            "the wrapped lock holds {:?} after an update answered {updated:?}",
            probe.store.current()
        )));
    }
    next_is(
        &t,
        &mut watch,
        &WatchEvent::Changed(updated),
        "the update, through the wrapper's watch",
    )
    .await
    .map_err(fail("watch"))?;

    for change in [
        LeadershipChange::BecameLeader,
        LeadershipChange::StoppedLeading,
    ] {
        let fail = fail("leadership_changed");
        let before = probe.told().len();
        let task = wrapper
            .leadership_changed(PROBE_IDENTITY, change)
            .ok_or_else(|| {
                fail(format!(
                    "{change:?} gave no task; the wrapped lock's has one"
                ))
            })?;
        if within(t.call, task).await.is_none() {
            return Err(fail(format!(
                "the task for {change:?} did not end within {:?}",
                t.call
            )));
        }
        let expected = Told {
            identity: PROBE_IDENTITY.into(),
            change,
            task_ran: true,
        };
        let told = probe.told();
        if told[before..] != [expected.clone()] {
            return Err(fail(format!(
                "the wrapped lock was told {:?}, expected {expected:?} (its task run)",
                &told[before..]
            )));
        }
    }
    Ok(())
}
