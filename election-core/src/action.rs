//! What the elector asks its driver to do: one lock call at a time.

use core::fmt;

use crate::record::{LockRecord, Version};

/// Identifies one lock call. The driver hands it back with the answer; an answer
/// whose id the elector no longer waits for (it timed out, or the elector moved
/// on) is ignored.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u64);

impl fmt::Debug for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op#{}", self.0)
    }
}

/// A lock call to make. At most one is in flight per elector: the driver starts it,
/// and answers with [`crate::Input::Answer`] carrying the same [`OpId`].
///
/// The elector runs its own request timer (the configured request timeout); the
/// driver should also cancel the call then, and may drop a late answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read the lock ([`crate::Lock::get`]).
    Get {
        /// The call's id.
        op: OpId,
    },
    /// Create the lock with this record ([`crate::Lock::create`]).
    Create {
        /// The call's id.
        op: OpId,
        /// The record to store.
        record: LockRecord,
    },
    /// Replace the record if the lock is still at `expected` ([`crate::Lock::update`]).
    Update {
        /// The call's id.
        op: OpId,
        /// The version the elector read; the write must fail if the lock moved on.
        expected: Version,
        /// The record to store.
        record: LockRecord,
    },
}

impl Action {
    /// The id of the call.
    pub fn op(&self) -> OpId {
        match self {
            Action::Get { op } | Action::Create { op, .. } | Action::Update { op, .. } => *op,
        }
    }

    /// The kind of call, for reports and metrics.
    pub fn kind(&self) -> OpKind {
        match self {
            Action::Get { .. } => OpKind::Get,
            Action::Create { .. } => OpKind::Create,
            Action::Update { .. } => OpKind::Update,
        }
    }
}

/// The kind of a lock call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// A read.
    Get,
    /// A create.
    Create,
    /// A compare-and-swap update.
    Update,
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpKind::Get => "get",
            OpKind::Create => "create",
            OpKind::Update => "update",
        })
    }
}
