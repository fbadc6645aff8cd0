//! A watch of one named object, as the elector consumes it: a stream of
//! [`WatchEvent`]s that *ends* whenever the watch cannot be trusted any more, so
//! that the driver polls and resumes (silence never means "unchanged").
//!
//! The stream ends when the connection breaks or the server closes it, when it
//! stays silent longer than the configured bound (bookmarks count as life), and on
//! an error event such as `410 Gone` (FAULTS W1, W2). Resuming from a version that
//! is too old yields a stream that ends at once with the 410; the caller then
//! watches afresh with `from = None`, which reads the object first (a GET) and
//! watches from the server's current state. The verbs used are `get` and
//! `watch`, never `list`.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use async_compat::Compat;
use election_core::{LockError, Observation, Version, WatchEvent, WatchStream};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt, stream};
use kube::api::{Api, WatchParams};
use kube::core::WatchEvent as KubeEvent;
use serde::de::DeserializeOwned;

use crate::call::call_within;
use crate::error::{Target, Verb, classify, classify_status};

/// How a watch of one object behaves.
#[derive(Clone, Debug)]
#[must_use]
pub struct WatchConfig {
    /// The watch ends when nothing (no change, no bookmark) arrives for this long.
    pub silence: Duration,
    /// Bound of the initial read and of the connect of the watch request. An
    /// [`ObjectLock`](crate::ObjectLock)'s own watch takes the lock's instead
    /// (the election's, once a driver configured the lock); a
    /// [`SharedWatch`](crate::SharedWatch), serving many elections, keeps this one.
    pub request_timeout: Duration,
    /// Asked of the server: it closes the watch after this long (`timeoutSeconds`).
    pub server_timeout: Option<u32>,
}

impl Default for WatchConfig {
    /// Ends after 90 s of silence (API servers send bookmarks about once a minute);
    /// 5 s request timeout; the server closes the watch after 5 minutes.
    fn default() -> Self {
        WatchConfig {
            silence: Duration::from_secs(90),
            request_timeout: Duration::from_secs(5),
            server_timeout: Some(300),
        }
    }
}

/// Turns a watched object into an observation (and may refresh a cache).
pub type ObjectMapper<K> = Arc<dyn Fn(&K) -> Observation + Send + Sync>;

/// Watches the object `target.name` of `api` from `from` (exclusive), or from its
/// current state (yielded first) when `from` is `None`.
pub fn watch_object<K>(
    api: Api<K>,
    target: Target,
    from: Option<Version>,
    config: WatchConfig,
    map: ObjectMapper<K>,
) -> WatchStream
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let start = async move {
        let mut initial: Vec<Result<WatchEvent, LockError>> = Vec::new();
        let field = format!("metadata.name={}", target.name);
        // A fresh watch reads the object (a GET, so RBAC needs no `list`), then
        // watches from the version read: the server sends every change after it,
        // so nothing between the read and the watch is missed and no version is
        // skipped (the `Lock` contract: a watch yields every change; the
        // coordinated mode counts on it). An absent object is watched with the
        // resourceVersion unset: the server first sends the state at that moment
        // (ADDED, for an object created since the read), then every change. An
        // ADDED at the version just read repeats the read and is skipped.
        let (from, seen) = match from {
            Some(v) => (v.as_str().to_owned(), None),
            None => {
                let name = target.name.clone();
                let got = call_within(config.request_timeout, Verb::Get, &target, async {
                    api.get_opt(&name).await
                })
                .await;
                match got {
                    Ok(Some(obj)) => {
                        initial.push(Ok(WatchEvent::Changed(map(&obj))));
                        let read = obj.meta().resource_version.clone();
                        (read.clone().unwrap_or_default(), read)
                    }
                    Ok(None) => {
                        initial.push(Ok(WatchEvent::Deleted(None)));
                        (String::new(), None)
                    }
                    Err(e) => return stream::iter(vec![Err(e)]).boxed(),
                }
            }
        };
        let mut wp = WatchParams::default().fields(&field);
        if let Some(t) = config.server_timeout {
            wp = wp.timeout(t);
        }
        let events = match call_within(
            config.request_timeout,
            Verb::Watch,
            &target,
            api.watch(&wp, &from),
        )
        .await
        {
            Ok(s) => s,
            Err(e) => {
                initial.push(Err(e));
                return stream::iter(initial).boxed();
            }
        };
        let events = Box::pin(events);
        let silence = config.silence;
        let rest = stream::unfold(Some(events), move |state| {
            let target = target.clone();
            let map = map.clone();
            let seen = seen.clone();
            async move {
                let mut events = state?;
                loop {
                    let next = tokio::time::timeout(silence, events.next()).await;
                    let item = match next {
                        Err(_) => {
                            tracing::debug!(%target, ?silence, "watch silent too long; ending it");
                            return None;
                        }
                        Ok(None) => return None,
                        Ok(Some(item)) => item,
                    };
                    match item {
                        Ok(KubeEvent::Added(o))
                            if seen.is_some() && o.meta().resource_version == seen =>
                        {
                            continue;
                        }
                        Ok(KubeEvent::Added(o)) | Ok(KubeEvent::Modified(o)) => {
                            return Some((Ok(WatchEvent::Changed(map(&o))), Some(events)));
                        }
                        Ok(KubeEvent::Deleted(o)) => {
                            // The object as deleted carries the deletion's version.
                            let version = o.meta().resource_version.clone().map(Version::new);
                            return Some((Ok(WatchEvent::Deleted(version)), Some(events)));
                        }
                        Ok(KubeEvent::Bookmark(_)) => continue,
                        Ok(KubeEvent::Error(status)) => {
                            tracing::debug!(%target, code = status.code, "watch error event; ending it");
                            return Some((
                                Err(classify_status(&status, Verb::Watch, &target)),
                                None,
                            ));
                        }
                        Err(e) => {
                            tracing::debug!(%target, error = %e, "watch broke; ending it");
                            return Some((Err(classify(&e, Verb::Watch, &target)), None));
                        }
                    }
                }
            }
        });
        stream::iter(initial).chain(rest).boxed()
    };
    // The whole stream needs a tokio reactor (kube's body stream, the silence timer):
    // Compat provides it under smol and async-std.
    Box::pin(CompatStream(Box::pin(stream::once(start).flatten())))
}

/// Polls a stream inside a tokio runtime context (the caller's, or the one
/// `async-compat` keeps), as `async_compat::Compat` does for futures.
pub struct CompatStream<S>(pub S);

impl<S: Stream + Unpin> Stream for CompatStream<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let inner = &mut self.0;
        let mut next = Compat::new(futures::future::poll_fn(|cx| inner.poll_next_unpin(cx)));
        Pin::new(&mut next).poll(cx)
    }
}
