//! What the elector asks its driver to do: one lock call at a time.

use core::fmt;

use crate::record::{LockRecord, Version};

/// Identifies one read ([`Action::Get`]); its answer is [`crate::Input::Read`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReadId(pub u64);

/// Identifies one write ([`Action::Create`] or [`Action::Update`]); its answer is
/// [`crate::Input::Written`].
///
/// A read's id and a write's id are different types, so an answer handed back as
/// the wrong kind does not compile.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WriteId(pub u64);

/// Identifies one lock call of either kind, for a driver's bookkeeping and reports.
/// The elector numbers its calls in one sequence, so an id is unique whatever its
/// kind. An answer whose id the elector no longer waits for (the call timed out,
/// or the elector moved on) is ignored.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpId {
    /// A read.
    Read(ReadId),
    /// A write.
    Write(WriteId),
}

impl From<ReadId> for OpId {
    fn from(op: ReadId) -> OpId {
        OpId::Read(op)
    }
}

impl From<WriteId> for OpId {
    fn from(op: WriteId) -> OpId {
        OpId::Write(op)
    }
}

impl fmt::Debug for ReadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read#{}", self.0)
    }
}

impl fmt::Debug for WriteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "write#{}", self.0)
    }
}

impl fmt::Debug for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpId::Read(op) => op.fmt(f),
            OpId::Write(op) => op.fmt(f),
        }
    }
}

/// A lock call to make. At most one is in flight per elector: the driver starts it,
/// and answers a read with [`crate::Input::Read`] and a write with
/// [`crate::Input::Written`], carrying the action's id.
///
/// The elector runs its own request timer (the configured request timeout); the
/// driver should also cancel the call then, and may drop a late answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read the lock ([`crate::Lock::get`]).
    Get {
        /// The call's id.
        op: ReadId,
    },
    /// Create the lock with this record ([`crate::Lock::create`]).
    Create {
        /// The call's id.
        op: WriteId,
        /// The record to store.
        record: LockRecord,
    },
    /// Replace the record if the lock is still at `expected` ([`crate::Lock::update`]).
    Update {
        /// The call's id.
        op: WriteId,
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
            Action::Get { op } => OpId::Read(*op),
            Action::Create { op, .. } | Action::Update { op, .. } => OpId::Write(*op),
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
