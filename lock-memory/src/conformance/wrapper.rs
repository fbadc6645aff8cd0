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
    Config, Layer, Layered, LeadershipChange, Lock, LockError, LockTask, WatchEvent,
};

use super::{Timeouts, held, next_is, ok, within};
use crate::{MemoryLock, MemoryStore};

/// The identity [`check_wrapper`] reports leadership changes for.
pub const PROBE_IDENTITY: &str = "probe";

/// The lock [`check_wrapper`] gives the wrapper under test: a [`MemoryLock`] on a
/// store of its own, wrapped by [`ProbeNotes`], which note what it is told
/// through [`Lock::leadership_changed`] (and return a task that notes it ran)
/// and the configurations it is given through [`Lock::configure`].
pub type Probe = Layered<MemoryLock, ProbeNotes>;

/// The [`Layer`] of a [`Probe`]: what the probe was told.
#[derive(Clone, Debug)]
pub struct ProbeNotes {
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

/// A new probe, on a store of its own.
fn probe() -> Probe {
    let store = MemoryStore::new();
    let notes = ProbeNotes {
        store: store.clone(),
        told: Arc::default(),
        configured: Arc::default(),
    };
    Layered::new(store.client("probe"), notes)
}

impl ProbeNotes {
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

impl Layer<MemoryLock> for ProbeNotes {
    fn leadership_changed(
        &self,
        _: &MemoryLock,
        identity: &str,
        change: LeadershipChange,
    ) -> Option<LockTask> {
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

    fn configure(&self, inner: &MemoryLock, config: &Config) {
        self.configured
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(config.clone());
        inner.configure(config);
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
/// A wrapper written as a [`Layer`] forwards what it does not override by
/// construction; this check is for one written by hand, and for a layer's
/// overrides:
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// use election_core::{Layer, Layered, Lock, LockError, Observation};
/// use lock_memory::conformance::check_wrapper;
///
/// /// Counts the reads.
/// #[derive(Default)]
/// struct CountReads(AtomicU64);
///
/// impl<L: Lock> Layer<L> for CountReads {
///     async fn get(&self, inner: &L) -> Result<Observation, LockError> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         inner.get().await
///     }
/// }
///
/// let check = check_wrapper(|probe| Layered::new(probe, CountReads::default()));
/// futures_lite::future::block_on(check).unwrap();
/// ```
pub async fn check_wrapper<W: Lock>(wrap: impl FnOnce(Probe) -> W) -> Result<(), WrapperFailure> {
    let probe = probe();
    let notes = probe.layer().clone();
    let wrapper = wrap(probe);
    let t = Timeouts::default();
    let fail = |method: &'static str| {
        move |expectation: String| WrapperFailure {
            method,
            expectation,
        }
    };

    let config = Config::fast(PROBE_IDENTITY);
    wrapper.configure(&config);
    if notes.configured() != [config.clone()] {
        return Err(fail("configure")(format!(
            "the wrapped lock was given {:?}, expected the configuration once",
            notes.configured()
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
    if notes.store.current().as_ref() != Some(&created) {
        return Err(fail("create")(format!(
            "the wrapped lock holds {:?} after a create answered {created:?}",
            notes.store.current()
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
    if notes.store.current().as_ref() != Some(&updated) {
        return Err(fail("update")(format!(
            "the wrapped lock holds {:?} after an update answered {updated:?}",
            notes.store.current()
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
        let before = notes.told().len();
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
        let told = notes.told();
        if told[before..] != [expected.clone()] {
            return Err(fail(format!(
                "the wrapped lock was told {:?}, expected {expected:?} (its task run)",
                &told[before..]
            )));
        }
    }
    Ok(())
}
