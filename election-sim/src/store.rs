//! The simulated lock: a linearizable compare-and-swap register with a global,
//! growing version counter (like etcd's revision), stamped with simulated wall time.

use election_core::{Action, LockError, LockRecord, Observation, Stamp, Version, WallTime};

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

/// The store.
#[derive(Debug)]
pub struct Store {
    current: Option<Observation>,
    counter: u64,
    mode: WriteMode,
}

impl Store {
    /// An empty store (no lock).
    pub fn new(mode: WriteMode) -> Self {
        Store {
            current: None,
            counter: 0,
            mode,
        }
    }

    /// The last version the store handed out.
    pub fn last_version(&self) -> u64 {
        self.counter
    }

    /// The lock as it is.
    pub fn current(&self) -> Option<&Observation> {
        self.current.as_ref()
    }

    fn next_version(&mut self) -> Version {
        self.counter += 1;
        Version::new(self.counter.to_string())
    }

    fn stamp(record: &LockRecord, wall: WallTime) -> LockRecord {
        let fix = |s: Stamp| if s == Stamp::Now { Stamp::At(wall) } else { s };
        let mut r = record.clone();
        r.acquire_time = fix(r.acquire_time);
        r.renew_time = fix(r.renew_time);
        r
    }

    /// Applies a lock call, returning its result and the write it made, if any.
    pub fn apply(
        &mut self,
        action: &Action,
        by: &str,
        wall: WallTime,
    ) -> (Result<Observation, LockError>, Option<AppliedWrite>) {
        match action {
            Action::Get { .. } => (self.current.clone().ok_or(LockError::NotFound), None),
            Action::Create { record, .. } => {
                if self.current.is_some() {
                    return (Err(LockError::AlreadyExists), None);
                }
                let obs = Observation {
                    version: self.next_version(),
                    record: Self::stamp(record, wall),
                };
                self.current = Some(obs.clone());
                let w = AppliedWrite {
                    by: by.into(),
                    replaced: None,
                    now: Some(obs.clone()),
                };
                (Ok(obs), Some(w))
            }
            Action::Update {
                expected, record, ..
            } => {
                let Some(cur) = &self.current else {
                    return (Err(LockError::NotFound), None);
                };
                if self.mode == WriteMode::CompareAndSwap && cur.version != *expected {
                    return (Err(LockError::Conflict), None);
                }
                let replaced = Some(cur.record.clone());
                let obs = Observation {
                    version: self.next_version(),
                    record: Self::stamp(record, wall),
                };
                self.current = Some(obs.clone());
                let w = AppliedWrite {
                    by: by.into(),
                    replaced,
                    now: Some(obs.clone()),
                };
                (Ok(obs), Some(w))
            }
        }
    }

    /// A human edit: the record replaced with `record` (new version).
    pub fn human_edit(&mut self, record: LockRecord, wall: WallTime) -> AppliedWrite {
        let replaced = self.current.as_ref().map(|c| c.record.clone());
        let obs = Observation {
            version: self.next_version(),
            record: Self::stamp(&record, wall),
        };
        self.current = Some(obs.clone());
        AppliedWrite {
            by: "human".into(),
            replaced,
            now: Some(obs),
        }
    }

    /// The lock deleted. The deletion takes a version, as in Kubernetes.
    pub fn delete(&mut self) -> (AppliedWrite, Version) {
        let replaced = self.current.take().map(|c| c.record);
        let w = AppliedWrite {
            by: "human".into(),
            replaced,
            now: None,
        };
        (w, self.next_version())
    }
}
