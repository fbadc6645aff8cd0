//! The watch of the lock's key, as the elector consumes it: a stream of
//! [`WatchEvent`]s that *ends* whenever the watch cannot be trusted any more,
//! so that the driver polls and resumes (silence never means "unchanged").
//!
//! - A fresh watch (`from = None`) reads the key first (yielding its record, or
//!   `Deleted(None)` when it is absent) and watches from the revision after that
//!   read, so nothing between the read and the watch is missed.
//! - A resumed watch (`from = Some(v)`) watches from revision `v + 1`.
//! - The watch asks for progress notifications: etcd then sends an empty answer
//!   every `--experimental-watch-progress-notify-interval` (10 minutes by
//!   default) while nothing changes. A watch that hears nothing, neither a change
//!   nor a notification, for twice that interval plus the request timeout ends
//!   (a black-holed connection never closes by itself; docs/faults.md W1).
//! - A revision that etcd compacted away is etcd's form of Kubernetes' `410
//!   Gone` (docs/faults.md W2): the stream yields the same class of error as the
//!   Kubernetes locks do for a 410 ([`LockError::Invalid`]) and ends; the driver
//!   then starts the next watch afresh, with a read.
//! - A broken connection, a cancelled watch or an error line ends the stream
//!   with the error.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use election_core::{LockError, Version, WatchEvent, WatchStream};
use http_body_util::BodyExt;
use serde_json::json;

use crate::client::{CompatStream, Kind, classify_grpc};
use crate::wire::{WatchLine, WatchResponse};
use crate::{Inner, MAX_LINE};

type Item = Result<WatchEvent, LockError>;

enum State {
    Start(Option<Version>),
    Streaming {
        body: hyper::body::Incoming,
        buf: Vec<u8>,
        queue: VecDeque<Item>,
        ended: bool,
        silence: Duration,
    },
    Draining(VecDeque<Item>),
}

pub(crate) fn watch(inner: Arc<Inner>, from: Option<Version>) -> WatchStream {
    let stream = futures_lite::stream::unfold(State::Start(from), move |state| {
        let inner = Arc::clone(&inner);
        async move { step(&inner, state).await }
    });
    Box::pin(CompatStream(Box::pin(stream)))
}

async fn step(inner: &Inner, state: State) -> Option<(Item, State)> {
    let mut state = match state {
        State::Start(from) => start(inner, from).await,
        other => other,
    };
    loop {
        match state {
            State::Start(_) => return None,
            State::Draining(mut queue) => {
                let item = queue.pop_front()?;
                return Some((item, State::Draining(queue)));
            }
            State::Streaming {
                mut body,
                mut buf,
                mut queue,
                ended,
                silence,
            } => {
                if let Some(item) = queue.pop_front() {
                    let next = if ended {
                        State::Draining(queue)
                    } else {
                        State::Streaming {
                            body,
                            buf,
                            queue,
                            ended,
                            silence,
                        }
                    };
                    return Some((item, next));
                }
                if ended {
                    return None;
                }
                let frame = match tokio::time::timeout(silence, body.frame()).await {
                    Err(_) => {
                        tracing::debug!(key = %inner.key, ?silence, "etcd watch silent too long; ending it");
                        return None;
                    }
                    Ok(None) => {
                        tracing::debug!(key = %inner.key, "etcd closed the watch");
                        return None;
                    }
                    Ok(Some(Err(e))) => {
                        tracing::debug!(key = %inner.key, error = %e, "etcd watch broke; ending it");
                        return Some((
                            Err(LockError::transient(format!(
                                "watch of etcd key {:?}: the stream broke: {e}",
                                inner.key
                            ))),
                            State::Draining(VecDeque::new()),
                        ));
                    }
                    Ok(Some(Ok(frame))) => frame,
                };
                let ended = match frame.into_data() {
                    Ok(data) => read_chunk(inner, &mut buf, &data, &mut queue),
                    Err(_) => false,
                };
                state = State::Streaming {
                    body,
                    buf,
                    queue,
                    ended,
                    silence,
                };
            }
        }
    }
}

/// Opens the watch: the initial read when `from` is `None`, then the watch
/// request. Whatever fails is queued as the stream's last item.
async fn start(inner: &Inner, from: Option<Version>) -> State {
    let mut queue = VecDeque::new();
    let timeout = inner.request_timeout();
    let start_revision = match from {
        Some(v) => match v.as_str().parse::<i64>() {
            Ok(r) if r >= 0 => r.saturating_add(1),
            _ => {
                queue.push_back(Err(LockError::Invalid {
                    message: format!(
                        "watch of etcd key {:?}: {v:?} is not a revision of this lock",
                        inner.key
                    ),
                }));
                return State::Draining(queue);
            }
        },
        None => match inner.range(Some(timeout)).await {
            Ok((revision, kv)) => {
                match kv {
                    Some(kv) => match inner.observation(&kv) {
                        Ok(obs) => queue.push_back(Ok(WatchEvent::Changed(obs))),
                        Err(e) => {
                            queue.push_back(Err(e));
                            return State::Draining(queue);
                        }
                    },
                    None => queue.push_back(Ok(WatchEvent::Deleted(None))),
                }
                revision.saturating_add(1)
            }
            Err(e) => {
                queue.push_back(Err(e));
                return State::Draining(queue);
            }
        },
    };
    let body = json!({"create_request": {
        "key": inner.key_b64,
        "start_revision": start_revision.to_string(),
        "progress_notify": true,
    }})
    .to_string();
    match inner
        .http
        .open("/v3/watch", body, Kind::Read, Some(timeout))
        .await
    {
        Ok(body) => State::Streaming {
            body,
            buf: Vec::new(),
            queue,
            ended: false,
            silence: inner.watch_silence(),
        },
        Err(e) => {
            queue.push_back(Err(e));
            State::Draining(queue)
        }
    }
}

/// Reads a chunk of the stream (`data`, after what `buf` kept of the previous
/// chunks): each whole line into `queue`; returns whether the watch ended (an
/// error line, or a line longer than [`MAX_LINE`]).
pub(crate) fn read_chunk(
    inner: &Inner,
    buf: &mut Vec<u8>,
    data: &[u8],
    queue: &mut VecDeque<Item>,
) -> bool {
    let mut ended = false;
    buf.extend_from_slice(data);
    while let Some(at) = buf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = buf.drain(..=at).collect();
        if !ended {
            ended = read_line(inner, &line, queue);
        }
    }
    if buf.len() > MAX_LINE && !ended {
        queue.push_back(Err(LockError::Invalid {
            message: format!(
                "watch of etcd key {:?}: a line longer than {MAX_LINE} bytes",
                inner.key
            ),
        }));
        ended = true;
    }
    ended
}

/// Reads one line of the stream into `queue`; returns whether the watch ended.
fn read_line(inner: &Inner, line: &[u8], queue: &mut VecDeque<Item>) -> bool {
    let text = line.trim_ascii();
    if text.is_empty() {
        return false;
    }
    let what = format!("watch of etcd key {:?}", inner.key);
    let parsed: WatchLine = match serde_json::from_slice(text) {
        Ok(l) => l,
        Err(e) => {
            queue.push_back(Err(crate::client::unreadable(&what, Kind::Read, &e, text)));
            return true;
        }
    };
    if let Some(err) = parsed.error {
        let code = err.code.unwrap_or(2);
        queue.push_back(Err(classify_grpc(
            &what,
            Kind::Read,
            code,
            200,
            &err.text(),
        )));
        return true;
    }
    let Some(result) = parsed.result else {
        return false;
    };
    read_result(inner, &what, result, queue)
}

fn read_result(inner: &Inner, what: &str, r: WatchResponse, queue: &mut VecDeque<Item>) -> bool {
    for event in &r.events {
        match event.kind.as_deref() {
            Some("DELETE") => {
                let at = event.kv.mod_revision;
                queue.push_back(Ok(WatchEvent::Deleted(
                    (at > 0).then(|| Version::new(at.to_string())),
                )));
            }
            _ => match inner.observation(&event.kv) {
                Ok(obs) => queue.push_back(Ok(WatchEvent::Changed(obs))),
                Err(e) => {
                    queue.push_back(Err(e));
                    return true;
                }
            },
        }
    }
    if r.canceled {
        let e = if r.compact_revision > 0 {
            tracing::debug!(key = %inner.key, compacted = r.compact_revision, "etcd watch from a compacted revision");
            // Kubernetes answers a watch from a compacted resourceVersion with 410
            // Gone, which its locks report as Invalid: the same here.
            LockError::Invalid {
                message: format!(
                    "{what}: the revision to resume from was compacted (etcd compacted up to {}; Kubernetes' 410 Gone): watch afresh",
                    r.compact_revision
                ),
            }
        } else {
            LockError::transient(format!(
                "{what}: etcd cancelled the watch: {}",
                r.cancel_reason.as_deref().unwrap_or("no reason given")
            ))
        };
        queue.push_back(Err(e));
        return true;
    }
    false
}
