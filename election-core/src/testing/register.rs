//! [`Register`]: the lock record in memory, applied as a compare-and-swap store.

use alloc::vec::Vec;

use crate::action::Action;
use crate::lock::LockError;
use crate::record::{LockRecord, Observation, Stamp, Version};
use crate::time::WallTime;

/// A lock record in memory that applies an elector's calls as a compare-and-swap
/// store does: a read answers the record or `NotFound`, a create fails with
/// `AlreadyExists` over a present lock, an update with `Conflict` unless it names
/// the current version; a write's `Stamp::Now` takes the wall time it is served
/// at. Versions are decimal and grow by one per change, a deletion included, as
/// in Kubernetes. The one store under [`ScriptedLock`](super::ScriptedLock), the
/// core's scenario tests and the simulator.
#[derive(Clone, Debug, Default)]
pub struct Register {
    current: Option<Observation>,
    counter: u64,
    /// Every change, oldest first: the record written, or `None` for a deletion.
    pub history: Vec<(Version, Option<LockRecord>)>,
}

impl Register {
    /// An absent lock, no version handed out yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The lock as it is now.
    pub fn current(&self) -> Option<&Observation> {
        self.current.as_ref()
    }

    /// The last version handed out (0: none yet).
    pub fn last_version(&self) -> u64 {
        self.counter
    }

    /// The records written, oldest first (deletions left out).
    pub fn records(&self) -> impl Iterator<Item = &LockRecord> {
        self.history.iter().filter_map(|(_, r)| r.as_ref())
    }

    /// Applies `action` at wall time `wall`: its answer.
    pub fn apply(&mut self, action: &Action, wall: WallTime) -> Result<Observation, LockError> {
        match (action, &self.current) {
            (Action::Get { .. }, current) => current.clone().ok_or(LockError::NotFound),
            (Action::Create { .. }, Some(_)) => Err(LockError::AlreadyExists),
            (Action::Create { record, .. }, None) => Ok(self.put(record.clone(), wall)),
            (Action::Update { .. }, None) => Err(LockError::NotFound),
            (Action::Update { expected, .. }, Some(c)) if c.version != *expected => {
                Err(LockError::Conflict)
            }
            (Action::Update { record, .. }, Some(_)) => Ok(self.put(record.clone(), wall)),
        }
    }

    /// Writes `record` whatever the lock holds (a write from outside the
    /// election: a human, another tool), stamped at `wall`.
    pub fn put(&mut self, mut record: LockRecord, wall: WallTime) -> Observation {
        for stamp in [&mut record.acquire_time, &mut record.renew_time] {
            if *stamp == Stamp::Now {
                *stamp = Stamp::At(wall);
            }
        }
        let obs = Observation::new(self.next_version(), record);
        self.history
            .push((obs.version.clone(), Some(obs.record.clone())));
        self.current = Some(obs.clone());
        obs
    }

    /// Deletes the lock; the deletion's version.
    pub fn delete(&mut self) -> Version {
        self.current = None;
        let version = self.next_version();
        self.history.push((version.clone(), None));
        version
    }

    fn next_version(&mut self) -> Version {
        self.counter += 1;
        Version::new(alloc::format!("{}", self.counter))
    }
}
