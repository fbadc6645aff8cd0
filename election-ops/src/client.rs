//! A `kube::Client` whose writes pass the guard on every attempt.
//!
//! kube retries by itself (`Config::default_retry`, on in the configs of
//! `Config::infer`, `incluster` and kubeconfigs: 429, 503 and 504, honouring
//! `Retry-After`, up to 15 times), in the client's base stack: below every layer
//! added with `with_layer`, the guard and the stamp layer included. A write that
//! passed the guard once would be sent again seconds later without passing it
//! again, after the deadline, after another replica took over. [`guarded_client`]
//! turns those retries off and retries above the guard and the stamp layer
//! instead, with kube's own policy, so that each attempt is judged (and stamped)
//! again; and it bounds each write attempt by the guard's margin, so that a write
//! that passed with the margin left is over, for this client, before the
//! leadership deadline.
//!
//! ```no_run
//! use std::sync::Arc;
//! use election_ops::client::guarded_client;
//! use election_ops::guard::WriteGuardLayer;
//! use election_ops::stamp::TermAnnotationLayer;
//!
//! async fn client(handle: Arc<election_driver::Handle>) -> Result<kube::Client, kube::Error> {
//!     let config = kube::Config::infer().await.map_err(kube::Error::InferConfig)?;
//!     let guard = WriteGuardLayer::new(Arc::clone(&handle));
//!     guarded_client(config, &guard, Some(&TermAnnotationLayer::new(handle)))
//! }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::Request;
use kube::client::ClientBuilder;
use kube::client::retry::RetryPolicy;
use tower::retry::RetryLayer;
use tower::{BoxError, Layer, Service};

use crate::guard::{WriteGuardLayer, is_read};
use crate::shared::SharedLayer;
use crate::stamp::TermAnnotationLayer;
use crate::view::LeadershipView;

/// A client of `config` whose writes pass `guard` (and are stamped by `stamp`)
/// on every attempt, each write attempt bounded by the guard's margin (see the
/// [module](self) docs). Reads are neither guarded nor bounded (a watch lasts).
pub fn guarded_client<V>(
    mut config: kube::Config,
    guard: &WriteGuardLayer<V>,
    stamp: Option<&TermAnnotationLayer<V>>,
) -> Result<kube::Client, kube::Error>
where
    V: LeadershipView + Clone,
{
    let retry = std::mem::replace(&mut config.default_retry, false)
        .then(|| RetryLayer::new(RetryPolicy::server_retry()));
    let retry = tower::util::option_layer(retry);
    let guarded = ClientBuilder::try_from(config)?
        .with_layer(&WriteTimeoutLayer {
            after: guard.margin_value(),
        })
        .with_layer(guard);
    Ok(match stamp {
        Some(stamp) => guarded
            .with_layer(stamp)
            .with_layer(&SharedLayer)
            .with_layer(&retry)
            .build(),
        None => guarded.with_layer(&SharedLayer).with_layer(&retry).build(),
    })
}

/// A write attempt [`guarded_client`] stopped waiting for: not answered within
/// the guard's margin. The server may still apply it (the fence refuses it after
/// a takeover); this client no longer waits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("write ({method} {path}) not answered within {after:?}, the guard's margin")]
pub struct WriteTimedOut {
    /// The write's method.
    pub method: String,
    /// The write's path (without the query).
    pub path: String,
    /// How long it was waited for.
    pub after: Duration,
}

/// Bounds each write attempt (not the reads) by `after`.
#[derive(Clone, Copy, Debug)]
struct WriteTimeoutLayer {
    after: Duration,
}

impl<S> Layer<S> for WriteTimeoutLayer {
    type Service = WriteTimeout<S>;
    fn layer(&self, inner: S) -> Self::Service {
        WriteTimeout {
            inner,
            after: self.after,
        }
    }
}

/// The service of [`WriteTimeoutLayer`].
#[derive(Clone, Debug)]
struct WriteTimeout<S> {
    inner: S,
    after: Duration,
}

impl<S, B> Service<Request<B>> for WriteTimeout<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let read = is_read(req.method());
        let (method, path) = (req.method().to_string(), req.uri().path().to_owned());
        let after = self.after;
        let answer = self.inner.call(req);
        Box::pin(async move {
            if read {
                return answer.await.map_err(Into::into);
            }
            match tokio::time::timeout(after, answer).await {
                Ok(answer) => answer.map_err(Into::into),
                Err(_) => Err(Box::new(WriteTimedOut {
                    method,
                    path,
                    after,
                }) as BoxError),
            }
        })
    }
}
