//! Entry points for the fuzz targets (`fuzz/`) and the property tests; not part
//! of the API. Each runs one decoding step of the lock on bytes as etcd's
//! gateway would answer them, exactly as the lock runs it, without a network.

use std::collections::VecDeque;

use election_core::{LockError, Observation, WatchEvent};

use crate::EtcdLock;
use crate::client::{Kind, classify_answer, unreadable};
use crate::wire::{RangeResponse, TxnResponse};

/// The error a non-2xx answer of `status` with `body` is classified as, for a
/// write (`write`) or a read.
pub fn error_answer(write: bool, status: u16, body: &[u8]) -> LockError {
    let kind = if write { Kind::Write } else { Kind::Read };
    classify_answer("POST /v3/kv/txn", kind, status, body)
}

/// What [`Lock::get`](election_core::Lock::get) makes of a 2xx answer `body`
/// to its range request: the observation, `Err(NotFound)` for no key, or why
/// the answer is not etcd's.
pub fn range_answer(lock: &EtcdLock, body: &[u8]) -> Result<Observation, LockError> {
    let mut r: RangeResponse = serde_json::from_slice(body)
        .map_err(|e| unreadable("POST /v3/kv/range", Kind::Read, &e, body))?;
    match r.kvs.pop() {
        Some(kv) => lock.inner.observation(&kv),
        None => Err(LockError::NotFound),
    }
}

/// What a transaction's answer says, as a write reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Txn {
    /// The compare held: the write's revision.
    Committed(i64),
    /// The compare failed: the key as the failure branch read it (`None`: no key).
    Failed(Option<Observation>),
}

/// What a write makes of a 2xx answer `body` to its transaction, or why the
/// answer is not etcd's.
pub fn txn_answer(lock: &EtcdLock, body: &[u8]) -> Result<Txn, LockError> {
    let r: TxnResponse = serde_json::from_slice(body)
        .map_err(|e| unreadable("POST /v3/kv/txn", Kind::Write, &e, body))?;
    Ok(match lock.inner.txn_outcome(r)? {
        Ok(revision) => Txn::Committed(revision),
        Err(None) => Txn::Failed(None),
        Err(Some(kv)) => Txn::Failed(Some(lock.inner.observation(&kv)?)),
    })
}

/// What the watch makes of a stream arriving in `chunks`: the items it
/// yields, in order, and whether the stream ended on them (an error line, a
/// cancelled watch, a line that is too long).
pub fn watch_stream<'a>(
    lock: &EtcdLock,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<Result<WatchEvent, LockError>>, bool) {
    let mut buf = Vec::new();
    let mut queue = VecDeque::new();
    for chunk in chunks {
        if crate::watch::read_chunk(&lock.inner, &mut buf, chunk, &mut queue) {
            return (queue.into(), true);
        }
    }
    (queue.into(), false)
}

/// The gateway's base64 of a byte field, decoded as the lock decodes it.
pub fn unb64(text: &str) -> Result<Vec<u8>, String> {
    crate::client::unb64(text).map_err(|e| e.to_string())
}

/// The gateway's base64 of `bytes`, as the lock encodes a byte field.
pub fn b64(bytes: &[u8]) -> String {
    crate::client::b64(bytes)
}
