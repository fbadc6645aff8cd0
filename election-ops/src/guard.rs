//! A write guard for `kube::Client`: reads always pass, writes only while this node
//! leads with a margin left for the request itself (Pinniped's middleware, made
//! time-bounded).
//!
//! - `GET` (get, list, watch), `HEAD` and `OPTIONS` always pass.
//! - Any other method passes only if [`LeadershipView::leads_with_margin`] holds for
//!   the configured margin, checked when the request is called (not when it was
//!   built). Otherwise the call fails at once with [`NotLeader`] and nothing is
//!   sent; kube reports it as `kube::Error::Service`, see [`not_leader`].
//! - The guard closes before the release write: the handle's leadership is false
//!   from `StoppedLeading` on, which the elector emits before it writes the
//!   release. It also closes at the deadline by time alone, when the driver is
//!   wedged, because the handle's deadline is checked against its clock.
//! - With [`WriteGuardLayer::term_header`], a passing write carries the header
//!   [`TERM_HEADER`] with the term (`<transitions>@<version>`). The API server
//!   ignores it; a proxy in front of a downstream service can use it for fencing.
//!   It is off by default.
//! - [`TermAnnotationLayer`] (its own module, [`crate::stamp`]) writes the term
//!   into every write's object, whatever the verb: the API server stores it, so
//!   the fence of `election_ops::fence` (or a downstream controller, an admission
//!   webhook) can refuse the work of an older term, and a write that does not
//!   bring a stamp of its own.

use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::{Either, Ready, TryFutureExt};
use hyper::{Method, Request};
use tower::{BoxError, Layer, Service};

use crate::view::LeadershipView;

/// The header a guarded write carries with [`WriteGuardLayer::term_header`].
pub const TERM_HEADER: &str = "x-election-term";

/// The default margin: a write passes only with this much time left before the
/// leadership deadline.
pub const DEFAULT_MARGIN: Duration = Duration::from_secs(1);

/// A write refused locally: this node does not lead with the margin required. The
/// request was not sent. Retry once this node leads, or drop the write.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("write attempt ({method} {path}) rejected: this client is not the leader")]
pub struct NotLeader {
    /// The refused request's method.
    pub method: String,
    /// The refused request's path (without the query).
    pub path: String,
}

/// The [`NotLeader`] inside a `kube::Error`, if the write guard refused the request.
pub fn not_leader<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a NotLeader> {
    in_chain(error)
}

/// The first `T` in `error`'s chain of sources, `error` included.
pub(crate) fn in_chain<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut cur = Some(error);
    while let Some(e) = cur {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        cur = e.source();
    }
    None
}

/// The tower layer: wrap a `kube` client's service stack with it, e.g.
/// `kube::client::ClientBuilder::try_from(config)?.with_layer(&layer).build()`.
#[derive(Clone, Debug)]
pub struct WriteGuardLayer<V> {
    view: V,
    margin: Duration,
    term_header: bool,
}

impl<V: LeadershipView + Clone> WriteGuardLayer<V> {
    /// A guard fed by `view` (an `Arc` of the handle), with [`DEFAULT_MARGIN`].
    pub fn new(view: V) -> Self {
        WriteGuardLayer {
            view,
            margin: DEFAULT_MARGIN,
            term_header: false,
        }
    }

    /// The time a write needs left before the deadline to pass. Choose at least the
    /// client's request timeout, so that a write never lands after the deadline.
    #[must_use]
    pub fn margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// The margin a write needs left (see [`WriteGuardLayer::margin`]).
    pub fn margin_value(&self) -> Duration {
        self.margin
    }

    /// Adds [`TERM_HEADER`] with the term to each write that passes.
    #[must_use]
    pub fn term_header(mut self, on: bool) -> Self {
        self.term_header = on;
        self
    }
}

impl<S, V: LeadershipView + Clone> Layer<S> for WriteGuardLayer<V> {
    type Service = WriteGuard<S, V>;
    fn layer(&self, inner: S) -> Self::Service {
        WriteGuard {
            inner,
            view: self.view.clone(),
            margin: self.margin,
            term_header: self.term_header,
        }
    }
}

/// The guarding service (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct WriteGuard<S, V> {
    inner: S,
    view: V,
    margin: Duration,
    term_header: bool,
}

/// Whether a request only reads: `GET` (get, list, watch), `HEAD`, `OPTIONS`.
pub fn is_read(method: &Method) -> bool {
    method == Method::GET || method == Method::HEAD || method == Method::OPTIONS
}

impl<S, V, B> Service<Request<B>> for WriteGuard<S, V>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    V: LeadershipView,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future =
        Either<Ready<Result<S::Response, BoxError>>, futures::future::ErrInto<S::Future, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if is_read(req.method()) {
            return Either::Right(self.inner.call(req).err_into());
        }
        if !self.view.leads_with_margin(self.margin) {
            // debug, not warn: a follower's controllers may try often.
            tracing::debug!(
                method = %req.method(),
                path = req.uri().path(),
                "write refused locally: not the leader"
            );
            return Either::Left(futures::future::ready(Err(Box::new(NotLeader {
                method: req.method().to_string(),
                path: req.uri().path().to_owned(),
            }) as BoxError)));
        }
        if self.term_header
            && let Some(term) = self.view.term()
            && let Ok(v) = hyper::header::HeaderValue::from_str(&term.to_string())
        {
            req.headers_mut().insert(TERM_HEADER, v);
        }
        Either::Right(self.inner.call(req).err_into())
    }
}

pub use crate::stamp::{
    HOLDER_ANNOTATION, TERM_ANNOTATION, TermAnnotation, TermAnnotationLayer, with_annotation,
    with_annotations,
};
