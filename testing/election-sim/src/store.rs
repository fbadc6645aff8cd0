//! The simulated lock: a linearizable compare-and-swap register with a global,
//! growing version counter (like etcd's revision), stamped with simulated wall time.

use election_core::testing::Register;
use election_core::{Action, LockError, LockRecord, Observation, Version, WallTime};

/// How the simulated store treats writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Every update is a compare-and-swap on the expected version (the real thing).
    CompareAndSwap,
    /// Updates ignore the expected version (a blind write): a negative control that
    /// the checker must catch.
    Blind,
}

/// One applied write, for the checker and the trace.
#[derive(Clone, Debug)]
pub struct AppliedWrite {
    /// The writer's identity (`"human"` for faults).
    pub by: String,
    /// The record it replaced, if any.
    pub replaced: Option<LockRecord>,
    /// The new state.
    pub now: Option<Observation>,
}

/// The store: the core's [`Register`], with the writer of each write recorded for
/// the checker, and blind writes for the negative control.
#[derive(Debug)]
pub struct Store {
    register: Register,
    mode: WriteMode,
}

impl Store {
    /// An empty store (no lock).
    pub fn new(mode: WriteMode) -> Self {
        Store {
            register: Register::new(),
            mode,
        }
    }

    /// The last version the store handed out.
    pub fn last_version(&self) -> u64 {
        self.register.last_version()
    }

    /// The lock as it is.
    pub fn current(&self) -> Option<&Observation> {
        self.register.current()
    }

    fn replaced(&self) -> Option<LockRecord> {
        self.current().map(|c| c.record.clone())
    }

    /// Applies a lock call, returning its result and the write it made, if any.
    pub fn apply(
        &mut self,
        action: &Action,
        by: &str,
        wall: WallTime,
    ) -> (Result<Observation, LockError>, Option<AppliedWrite>) {
        let replaced = self.replaced();
        let result = match (self.mode, action, self.current()) {
            // A blind write: compare-and-swap on whatever the lock holds.
            (WriteMode::Blind, Action::Update { op, record, .. }, Some(c)) => {
                let blind = Action::Update {
                    op: *op,
                    expected: c.version.clone(),
                    record: record.clone(),
                };
                self.register.apply(&blind, wall)
            }
            _ => self.register.apply(action, wall),
        };
        let write = match (action, &result) {
            (Action::Create { .. } | Action::Update { .. }, Ok(obs)) => Some(AppliedWrite {
                by: by.into(),
                replaced,
                now: Some(obs.clone()),
            }),
            _ => None,
        };
        (result, write)
    }

    /// A human edit: the record replaced with `record` (new version).
    pub fn human_edit(&mut self, record: LockRecord, wall: WallTime) -> AppliedWrite {
        let replaced = self.replaced();
        let obs = self.register.put(record, wall);
        AppliedWrite {
            by: "human".into(),
            replaced,
            now: Some(obs),
        }
    }

    /// The lock deleted. The deletion takes a version, as in Kubernetes.
    pub fn delete(&mut self) -> (AppliedWrite, Version) {
        let replaced = self.replaced();
        let version = self.register.delete();
        let w = AppliedWrite {
            by: "human".into(),
            replaced,
            now: None,
        };
        (w, version)
    }
}
