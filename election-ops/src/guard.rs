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
//! - [`TermAnnotationLayer`] writes the term into the object itself, as the
//!   annotation [`TERM_ANNOTATION`], on creates, replaces, and merge, strategic
//!   merge and apply patches (JSON patches and deletes pass unchanged): the API
//!   server stores it, so a downstream controller or an admission webhook that
//!   reads the object can refuse the work of an older term (compare the
//!   transitions count, which only grows).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::{Either, Ready, TryFutureExt};
use hyper::body::{Body as HttpBody, Bytes};
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
    let mut cur: Option<&'a (dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cur {
        if let Some(n) = e.downcast_ref::<NotLeader>() {
            return Some(n);
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

/// The annotation [`TermAnnotationLayer`] writes the term under by default.
pub const TERM_ANNOTATION: &str = "election.rs/term";

/// The annotation [`TermAnnotationLayer`] writes this node's identity under.
pub const HOLDER_ANNOTATION: &str = "election.rs/holder";

/// A tower layer that writes the current term into each write's object, as the
/// annotation [`TERM_ANNOTATION`] (`<transitions>@<version>`), and this node's
/// identity as `election.rs/holder`, for downstream fencing (the server-side
/// policy of `election_ops::fence` checks both, feature `fence`). Use it together with the [`WriteGuardLayer`], in either order: it
/// adds the term only while the view leads (has a term), and the guard still
/// refuses what it must. On its own it refuses nothing.
///
/// What it annotates: `POST` and `PUT` with a JSON object (create, replace) and
/// `PATCH` with a merge, strategic merge or apply patch. A JSON patch, a
/// `DELETE`, or a body that is not a JSON object passes unchanged.
#[derive(Clone, Debug)]
pub struct TermAnnotationLayer<V> {
    view: V,
    key: Arc<str>,
}

impl<V: LeadershipView + Clone> TermAnnotationLayer<V> {
    /// Annotates with the term of `view` (an `Arc` of the handle) under
    /// [`TERM_ANNOTATION`].
    pub fn new(view: V) -> Self {
        TermAnnotationLayer {
            view,
            key: TERM_ANNOTATION.into(),
        }
    }

    /// Uses another annotation key (a valid Kubernetes annotation name).
    #[must_use]
    pub fn key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.key = key.into();
        self
    }
}

impl<S, V: LeadershipView + Clone> Layer<S> for TermAnnotationLayer<V> {
    type Service = TermAnnotation<S, V>;
    fn layer(&self, inner: S) -> Self::Service {
        TermAnnotation {
            inner,
            view: self.view.clone(),
            key: self.key.clone(),
        }
    }
}

/// The annotating service (see [`TermAnnotationLayer`]).
#[derive(Clone, Debug)]
pub struct TermAnnotation<S, V> {
    inner: S,
    view: V,
    key: Arc<str>,
}

impl<S, V, B> Service<Request<B>> for TermAnnotation<S, V>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    V: LeadershipView,
    B: HttpBody<Data = Bytes> + From<Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future =
        Either<Ready<Result<S::Response, BoxError>>, futures::future::ErrInto<S::Future, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let req = match annotatable(&req).then(|| self.view.term()).flatten() {
            Some(term) => match annotate(
                req,
                &[
                    (&self.key, &term.to_string()),
                    (HOLDER_ANNOTATION, &self.view.state().identity),
                ],
            ) {
                Ok(req) => req,
                Err(e) => return Either::Left(futures::future::ready(Err(e))),
            },
            None => req,
        };
        Either::Right(self.inner.call(req).err_into())
    }
}

/// `req` with the annotations merged into its body. The body must be in memory, as
/// kube's request bodies are: it is read without waiting. One that would make
/// the caller wait from the start (a stream) passes unchanged; one that does so
/// after some data is an error (it cannot be put back together).
fn annotate<B>(req: Request<B>, annotations: &[(&str, &str)]) -> Result<Request<B>, BoxError>
where
    B: HttpBody<Data = Bytes> + From<Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let (parts, mut body) = req.into_parts();
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let mut data = Vec::new();
    let mut read_any = false;
    loop {
        match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Ok(chunk) = frame.into_data() {
                    data.extend_from_slice(&chunk);
                }
                read_any = true;
            }
            Poll::Ready(Some(Err(e))) => return Err(e.into()),
            Poll::Ready(None) => break,
            Poll::Pending if !read_any => return Ok(Request::from_parts(parts, body)),
            Poll::Pending => return Err("a streamed request body cannot be annotated".into()),
        }
    }
    let data = with_annotations(&data, annotations).unwrap_or(data);
    Ok(Request::from_parts(parts, B::from(Bytes::from(data))))
}

/// Whether a request's body is an object the annotation can be merged into.
fn annotatable<B>(req: &Request<B>) -> bool {
    let content_type = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let m = req.method();
    if m == Method::POST || m == Method::PUT {
        content_type.starts_with("application/json")
    } else if m == Method::PATCH {
        [
            "merge-patch+json",
            "strategic-merge-patch+json",
            "apply-patch+yaml",
        ]
        .iter()
        .any(|kind| content_type.starts_with(&format!("application/{kind}")))
    } else {
        false
    }
}

/// `body`, a JSON object, with `metadata.annotations[key] = value`; `None` when it
/// is not a JSON object (or its `metadata` or `annotations` is neither an object
/// nor null).
pub fn with_annotation(body: &[u8], key: &str, value: &str) -> Option<Vec<u8>> {
    with_annotations(body, &[(key, value)])
}

/// As [`with_annotation`], for several annotations at once.
pub fn with_annotations(body: &[u8], pairs: &[(&str, &str)]) -> Option<Vec<u8>> {
    let mut v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let object = |v: &mut serde_json::Value| {
        if v.is_null() {
            *v = serde_json::Value::Object(serde_json::Map::new());
        }
        v.is_object()
    };
    let obj = v.as_object_mut()?;
    let meta = obj.entry("metadata").or_insert(serde_json::Value::Null);
    if !object(meta) {
        return None;
    }
    let annotations = meta
        .as_object_mut()?
        .entry("annotations")
        .or_insert(serde_json::Value::Null);
    if !object(annotations) {
        return None;
    }
    let annotations = annotations.as_object_mut()?;
    for (key, value) in pairs {
        annotations.insert((*key).to_owned(), (*value).into());
    }
    serde_json::to_vec(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::with_annotation;

    /// The annotated body, parsed (key order depends on serde_json's features).
    fn annotate(body: &str) -> Option<serde_json::Value> {
        with_annotation(body.as_bytes(), "election.rs/term", "3@17")
            .map(|b| serde_json::from_slice(&b).expect("JSON"))
    }

    fn json(s: &str) -> Option<serde_json::Value> {
        Some(serde_json::from_str(s).expect("JSON"))
    }

    #[test]
    fn the_term_is_merged_into_the_objects_annotations() {
        assert_eq!(
            annotate(r#"{"metadata":{"name":"x","annotations":{"a":"b"}},"data":{}}"#),
            json(
                r#"{"data":{},"metadata":{"annotations":{"a":"b","election.rs/term":"3@17"},"name":"x"}}"#
            )
        );
        assert_eq!(
            annotate(r#"{"data":{"k":"v"}}"#),
            json(r#"{"data":{"k":"v"},"metadata":{"annotations":{"election.rs/term":"3@17"}}}"#)
        );
        assert_eq!(
            annotate(r#"{"metadata":null}"#),
            json(r#"{"metadata":{"annotations":{"election.rs/term":"3@17"}}}"#)
        );
        assert_eq!(
            annotate(r#"{"metadata":{"annotations":null}}"#),
            json(r#"{"metadata":{"annotations":{"election.rs/term":"3@17"}}}"#)
        );
    }

    #[test]
    fn what_is_not_an_object_is_left_alone() {
        for body in [
            r#"[{"op":"add","path":"/data/k","value":"v"}]"#,
            r#""text""#,
            "not json",
            "",
            r#"{"metadata":"odd"}"#,
            r#"{"metadata":{"annotations":[1]}}"#,
        ] {
            assert_eq!(annotate(body), None, "{body}");
        }
    }
}
