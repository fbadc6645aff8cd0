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

impl FencedOp {
    /// The key the op writes.
    pub fn key(&self) -> &str {
        match self {
            FencedOp::Put { key, .. } | FencedOp::Delete { key } => key,
        }
    }
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
    /// An op names the lock's key: a fenced write could break the election (a
    /// value that is no record, a deletion, a lease stretched); nothing was sent.
    #[error("etcd key {key:?} is the lock's own: a fenced transaction may not write it")]
    LockKey {
        /// The lock's key.
        key: String,
    },
    /// Clones of this lock serve several elections (their identities): which
    /// one's hold a transaction is fenced by cannot be told, so nothing was sent.
    /// Give each election a lock of its own ([`crate::EtcdLock::builder`]).
    #[error(
        "etcd key {key:?}: this lock serves several elections ({identities:?}); give each its own lock to fence with"
    )]
    SharedByElections {
        /// The lock's key.
        key: String,
        /// The identities configured on the lock.
        identities: Vec<String>,
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
    ///
    /// Refused before anything is sent: an op on the lock's own key
    /// ([`Fenced::LockKey`]), and a lock whose clones serve several elections
    /// ([`Fenced::SharedByElections`]).
    pub async fn fenced(&self, ops: &[FencedOp]) -> Result<i64, Fenced> {
        let inner = &self.inner;
        if ops.iter().any(|op| op.key() == inner.key) {
            return Err(Fenced::LockKey {
                key: inner.key.clone(),
            });
        }
        let identities = inner.identities();
        if identities.len() > 1 {
            return Err(Fenced::SharedByElections {
                key: inner.key.clone(),
                identities: identities.iter().map(|i| i.to_string()).collect(),
            });
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use election_core::{Config, Lock};

    /// A lock on an address nothing listens on: what is refused is refused
    /// before anything is sent.
    fn lock() -> crate::EtcdLock {
        crate::EtcdLock::builder("http://127.0.0.1:9", "/app/leader")
            .build()
            .expect("valid")
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        futures_lite::future::block_on(f)
    }

    /// docs/faults.md N22: an op on the lock's own key is refused, whatever
    /// the other ops, a put or a delete.
    #[test]
    fn n22_a_fenced_op_on_the_lock_key_is_refused_before_sending() {
        let lock = lock();
        lock.configure(&Config::client_go("a"));
        for ops in [
            vec![
                FencedOp::Put {
                    key: "/app/x".into(),
                    value: b"1".to_vec(),
                },
                FencedOp::Put {
                    key: "/app/leader".into(),
                    value: b"not a record".to_vec(),
                },
            ],
            vec![FencedOp::Delete {
                key: "/app/leader".into(),
            }],
        ] {
            assert_eq!(
                block_on(lock.fenced(&ops)),
                Err(Fenced::LockKey {
                    key: "/app/leader".into()
                })
            );
        }
        assert_eq!(lock.requests(), 0, "nothing was sent");
    }

    /// docs/faults.md N23: clones of one lock configured by two elections
    /// cannot fence (whose hold would a transaction be fenced by?): refused,
    /// naming both, before sending.
    #[test]
    fn n23_a_lock_shared_by_two_elections_refuses_to_fence() {
        let lock = lock();
        let clone = lock.clone();
        lock.configure(&Config::client_go("a"));
        lock.configure(&Config::client_go("a"));
        clone.configure(&Config::client_go("b"));
        let ops = [FencedOp::Put {
            key: "/app/x".into(),
            value: b"1".to_vec(),
        }];
        for l in [&lock, &clone] {
            assert_eq!(
                block_on(l.fenced(&ops)),
                Err(Fenced::SharedByElections {
                    key: "/app/leader".into(),
                    identities: vec!["a".into(), "b".into()],
                })
            );
        }
        assert_eq!(lock.requests(), 0, "nothing was sent");
    }
}
