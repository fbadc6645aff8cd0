//! Watch streams: newline-delimited `{"type": ..., "object": ...}` events,
//! replayed from the history after a resourceVersion, with bookmarks,
//! `timeoutSeconds`, and a 410 `Expired` ERROR event for a compacted version.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use hyper::body::{Bytes, Frame};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::faults::{Fault, lock};
use crate::resource::Resource;
use crate::selector::Selectors;
use crate::server::{Shared, stopped};
use crate::status::ApiError;
use crate::store::Change;

/// What a watch asks for.
#[derive(Debug, Clone)]
pub(crate) struct WatchRequest {
    pub(crate) resource: Resource,
    /// `None` for all namespaces.
    pub(crate) namespace: Option<String>,
    pub(crate) selectors: Selectors,
    /// `None` or `"0"`: start with the current state as ADDED events.
    pub(crate) resource_version: Option<String>,
    pub(crate) bookmarks: bool,
    /// `sendInitialEvents=true`: the current state as ADDED events, then a
    /// BOOKMARK annotated `k8s.io/initial-events-end: "true"`.
    pub(crate) send_initial_events: bool,
    pub(crate) timeout: Duration,
    pub(crate) faults: Vec<Fault>,
}

/// An error that aborts the connection mid-body (the watch "breaks").
#[derive(Debug, thiserror::Error)]
#[error("watch connection broken by an injected fault")]
pub(crate) struct Broken;

struct State {
    shared: Arc<Shared>,
    req: WatchRequest,
    last_rv: u64,
    queue: VecDeque<Bytes>,
    rv_rx: tokio::sync::watch::Receiver<u64>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    deadline: Instant,
    next_bookmark: Instant,
    close_at: Option<Instant>,
    break_at: Option<Instant>,
    silent: bool,
    finished: bool,
}

fn line(event: &Value) -> Bytes {
    let mut text = event.to_string();
    text.push('\n');
    Bytes::from(text)
}

fn event(kind: &str, object: &Value) -> Bytes {
    line(&json!({"type": kind, "object": object}))
}

impl State {
    /// An ADDED, MODIFIED or DELETED event of `object`.
    fn object_event(&self, kind: &str, object: &Value) -> Bytes {
        event(kind, object)
    }

    fn matches(&self, change: &Change) -> bool {
        change.resource == self.req.resource
            && self
                .req
                .namespace
                .as_deref()
                .is_none_or(|n| n == change.namespace)
            && self.req.selectors.matches(&change.object)
    }

    /// Queues the changes after `last_rv`, or a 410 when they are gone.
    fn catch_up(&mut self) {
        let store = lock(&self.shared.store);
        match store.changes_since(self.last_rv) {
            None => {
                let status = ApiError::expired(self.last_rv, store.compacted()).to_status();
                self.queue.push_back(event("ERROR", &status));
                self.finished = true;
            }
            Some(changes) => {
                let selected: Vec<Bytes> = changes
                    .iter()
                    .filter(|c| self.matches(c))
                    .map(|c| self.object_event(c.kind.as_str(), &c.object))
                    .collect();
                self.queue.extend(selected);
                self.last_rv = store.resource_version().max(self.last_rv);
            }
        }
    }

    fn bookmark(&self) -> Bytes {
        let r = self.req.resource;
        event(
            "BOOKMARK",
            &json!({"kind": r.kind(), "apiVersion": r.api_version(), "metadata": {"resourceVersion": self.last_rv.to_string()}}),
        )
    }
}

enum Wake {
    Changed,
    Timer,
    Stop,
}

type Item = Result<Frame<Bytes>, Broken>;

/// The deadline of a watch whose `timeoutSeconds` overflows the clock: about a
/// century, never reached by a test or a session.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Starts a watch: the initial events are decided now, under the store lock.
pub(crate) fn start(
    shared: Arc<Shared>,
    req: WatchRequest,
) -> impl Stream<Item = Item> + Send + 'static {
    let now = Instant::now();
    let mut close_at = None;
    let mut break_at = None;
    let mut silent = false;
    for f in &req.faults {
        match f {
            Fault::WatchCloseAfter(d) => close_at = Some(now + *d),
            Fault::WatchBreakAfter(d) => break_at = Some(now + *d),
            Fault::WatchSilent => silent = true,
            _ => {}
        }
    }
    let rv_rx = shared.rv_tx.subscribe();
    let shutdown = shared.shutdown.subscribe();
    let bookmark_interval = shared.bookmark_interval;
    let mut state = State {
        shared,
        last_rv: 0,
        queue: VecDeque::new(),
        rv_rx,
        shutdown,
        // `timeoutSeconds` comes from the client and may be huge (u64::MAX):
        // a watch that long simply never times out.
        deadline: now.checked_add(req.timeout).unwrap_or(now + FOREVER),
        next_bookmark: now + bookmark_interval,
        close_at,
        break_at,
        silent,
        finished: false,
        req,
    };
    let from = state
        .req
        .resource_version
        .clone()
        .filter(|v| !v.is_empty() && v != "0");
    let from = if state.req.send_initial_events {
        None
    } else {
        from
    };
    match from.map(|v| v.parse::<u64>()) {
        None => {
            let store = lock(&state.shared.store);
            for obj in store.objects(state.req.resource, state.req.namespace.as_deref()) {
                if state.req.selectors.matches(&obj) {
                    let added = state.object_event("ADDED", &obj);
                    state.queue.push_back(added);
                }
            }
            state.last_rv = store.resource_version();
            drop(store);
            if state.req.send_initial_events {
                let r = state.req.resource;
                state.queue.push_back(event(
                    "BOOKMARK",
                    &json!({"kind": r.kind(), "apiVersion": r.api_version(), "metadata": {
                        "resourceVersion": state.last_rv.to_string(),
                        "annotations": {"k8s.io/initial-events-end": "true"}}}),
                ));
            }
        }
        Some(Ok(rv)) => {
            state.last_rv = rv;
            state.catch_up();
        }
        Some(Err(_)) => {
            let text = state.req.resource_version.clone().unwrap_or_default();
            let status =
                ApiError::bad_request(format!("invalid resource version {text:?}")).to_status();
            state.queue.push_back(event("ERROR", &status));
            state.finished = true;
        }
    }
    futures::stream::unfold(state, next)
}

async fn next(mut st: State) -> Option<(Item, State)> {
    loop {
        if st.silent {
            // Accepted, never a byte more: wait for the emulator to stop.
            stopped(&mut st.shutdown).await;
            return None;
        }
        if let Some(bytes) = st.queue.pop_front() {
            return Some((Ok(Frame::data(bytes)), st));
        }
        if st.finished {
            return None;
        }
        let now = Instant::now();
        if st.break_at.is_some_and(|t| t <= now) {
            st.finished = true;
            return Some((Err(Broken), st));
        }
        if st.close_at.is_some_and(|t| t <= now) || st.deadline <= now {
            return None;
        }
        if st.req.bookmarks && st.next_bookmark <= now {
            st.next_bookmark = now + st.shared.bookmark_interval;
            let b = st.bookmark();
            return Some((Ok(Frame::data(b)), st));
        }
        let mut wake = st.deadline;
        for t in [st.close_at, st.break_at].into_iter().flatten() {
            wake = wake.min(t);
        }
        if st.req.bookmarks {
            wake = wake.min(st.next_bookmark);
        }
        let woke = tokio::select! {
            changed = st.rv_rx.changed() => if changed.is_ok() { Wake::Changed } else { Wake::Stop },
            _ = tokio::time::sleep_until(wake) => Wake::Timer,
            _ = stopped(&mut st.shutdown) => Wake::Stop,
        };
        match woke {
            Wake::Changed => st.catch_up(),
            Wake::Timer => {}
            Wake::Stop => return None,
        }
    }
}
