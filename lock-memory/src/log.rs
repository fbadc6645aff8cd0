//! The write log: every change the store applied, in order, for tests that assert
//! orderings ("the old leader's last renew landed before the new leader's acquire").

use std::sync::Arc;

use election_core::{LockRecord, Version, WallTime};

/// The writer name under which human edits ([`crate::MemoryStore::set_record`],
/// [`crate::MemoryStore::delete`]) are logged.
pub const HUMAN: &str = "(human)";

/// What kind of change a logged write made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// A client's successful [`election_core::Lock::create`].
    Create,
    /// A client's successful compare-and-swap [`election_core::Lock::update`].
    Update,
    /// A human edit: the record set directly, creating the lock if it was absent.
    SetRecord,
    /// A human edit: the lock deleted.
    Delete,
}

/// One applied write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedWrite {
    /// Position in the log: 1 for the first write, growing by one per write, never
    /// reused.
    pub seq: u64,
    /// The client that wrote it, as named in [`crate::MemoryStore::client`], or
    /// [`HUMAN`].
    pub client: Arc<str>,
    /// What the write did.
    pub kind: WriteKind,
    /// The store's wall clock when the write was applied (the value `Stamp::Now`
    /// fields of the record received).
    pub wall: WallTime,
    /// The version the write produced (deletes take a version too).
    pub version: Version,
    /// The record as stored, with stamps applied; `None` for a delete.
    pub record: Option<LockRecord>,
}
