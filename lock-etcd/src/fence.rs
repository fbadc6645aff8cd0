//! Fenced transactions: a user's etcd writes that commit only while the lock's
//! key is exactly as this lock last wrote it, naming this node (docs/design.md
//! §5, "Fenced writes on etcd").
//!
//! The compare is the lock key's `mod_revision` against the revision of this
//! lock's own last write, in the same transaction as the user's writes: any other
//! write to the key (a takeover, a release, a human's edit, a deletion) makes the
//! transaction fail, so a deposed leader's writes never commit, whatever its clock
//! or its watch says. A renewal of this node's own made since the caller last
//! looked fails the compare too; [`Fenced::Deposed`] names the key's current
//! revision, and the caller retries (a renewal lands every renew interval).
//!
//! What it cannot do: etcd has no clock in a compare, so a lock key this node
//! wrote that expired but that nobody took yet still admits the writes; the
//! driver's deadline (`Handle::is_leader`) is the check for that.

use serde_json::json;

use crate::client::b64;
use election_core::LockError;

/// One write of a fenced transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FencedOp {
    /// Put `value` at `key`.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: Vec<u8>,
    },
    /// Delete `key`.
    Delete {
        /// The key.
        key: String,
    },
}

/// Why a fenced transaction did not commit.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fenced {
    /// This lock has not written the key as its holder (never, or its last write
    /// released it or named another node): nothing was sent.
    #[error("etcd key {key:?}: this node does not hold the lock (no write of its own names it)")]
    NotHolding {
        /// The lock's key.
        key: String,
    },
    /// The key changed since this lock's last write (another took it, released
    /// it, edited or deleted it, or this node renewed meanwhile): nothing was
    /// written.
    #[error(
        "etcd key {key:?}: changed since this node's last write at revision {written} (now {current:?}); nothing was written"
    )]
    Deposed {
        /// The lock's key.
        key: String,
        /// The revision of this lock's last write.
        written: i64,
        /// The key's revision now (`None`: deleted).
        current: Option<i64>,
    },
    /// The call failed (transport, etcd's answer).
    #[error(transparent)]
    Call(#[from] LockError),
}

impl crate::EtcdLock {
    /// Commits `ops` in one etcd transaction if, and only if, the lock's key is
    /// still as this lock (or a clone of it, such as the one the driver runs)
    /// last wrote it, naming this node: the revision of the transaction, else
    /// why not. See the [module](crate::fence) docs.
    pub async fn fenced(&self, ops: &[FencedOp]) -> Result<i64, Fenced> {
        let inner = &self.inner;
        let Some(written) = inner.holding_revision() else {
            return Err(Fenced::NotHolding {
                key: inner.key.clone(),
            });
        };
        let success: Vec<_> = ops
            .iter()
            .map(|op| match op {
                FencedOp::Put { key, value } => json!({ "request_put": {
                    "key": b64(key.as_bytes()), "value": b64(value) } }),
                FencedOp::Delete { key } => {
                    json!({ "request_delete_range": { "key": b64(key.as_bytes()) } })
                }
            })
            .collect();
        match inner.txn(inner.unchanged_since(written), success).await? {
            Ok(revision) => Ok(revision),
            Err(current) => Err(Fenced::Deposed {
                key: inner.key.clone(),
                written,
                current: current.map(|kv| kv.mod_revision),
            }),
        }
    }
}
