//! The term stamp: a tower layer that writes the current term into every write
//! this client sends, for the server-side fence ([`crate::fence`]) and for
//! downstream readers.
//!
//! Each stamped write carries two annotations, fixed for the whole term:
//!
//! - [`HOLDER_ANNOTATION`]: this node's identity;
//! - [`TERM_ANNOTATION`]: the term, `<transitions>@<version>`.
//!
//! A write that changes nothing else therefore changes nothing at all within a
//! term: the API server stores no new version and sends no watch event, and a
//! level-triggered controller that writes what is already stored settles. The
//! first write to an object in a new term is a real one (its stamp changes).
//!
//! With [`TermAnnotationLayer::write_tokens`], for a fence with no writer check
//! (`Writer::Any`), each write also carries
//!
//! - [`WRITE_ANNOTATION`]: a token of this write alone, so that the fence can tell
//!   a write that brings its own stamp from one that leaves the last writer's in
//!   place. A deletion mark's token starts with [`DELETE_MARK`]. The price: no
//!   write is a no-op any more (each one stores a new version and sends a watch
//!   event), so a controller must not write what is already stored.
//!
//! How each verb is stamped:
//!
//! | write | stamped as |
//! |---|---|
//! | create, replace (`POST`, `PUT` with a JSON object, or with no content type, which the API server reads as JSON) | the annotations merged into the object |
//! | create, replace in Kubernetes protobuf (kubectl's and client-go's built-in types) | the annotations appended to the object's metadata, which a decoder merges (see the `protobuf` module's source) |
//! | merge and strategic merge patches | the annotations merged into the patch |
//! | server-side apply | the annotations merged into the patch; when the server answers `409 Conflict` on the stamp's annotations alone (an earlier term's field manager owns them), sent once more with `force=true` and a fresh stamp, which takes those fields only |
//! | JSON patch | `add` operations appended; on an object with no annotations at all (the server answers 422), sent once more with the map created by a `test`-guarded `add` |
//! | delete of one object | two requests: a merge patch that stamps the object (as a deletion mark, with write tokens), then the delete |
//! | delete of a collection, a dry-run delete (a mark would be a real write), a streamed body, a body that is neither JSON nor a protobuf envelope | unchanged (the fence refuses it) |
//!
//! The extra requests (the JSON patch's second form, the deletion mark) go
//! through the layers below this one: put this layer outside the
//! [`WriteGuardLayer`](crate::guard::WriteGuardLayer) (add it last) so that the
//! guard judges each request it sends.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http_body_util::{BodyExt, Either as EitherBody, Full};
use hyper::body::{Body as HttpBody, Bytes};
use hyper::{Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};
use tower::{BoxError, Layer, Service};

use crate::shared::Shared;
use crate::view::LeadershipView;

/// The annotation [`TermAnnotationLayer`] writes the term under by default.
pub const TERM_ANNOTATION: &str = "kube-elector.dev/term";

/// The annotation [`TermAnnotationLayer`] writes this node's identity under.
pub const HOLDER_ANNOTATION: &str = "kube-elector.dev/holder";

/// The annotation [`TermAnnotationLayer`] writes a token of each write under, with
/// [`TermAnnotationLayer::write_tokens`]: no two writes carry the same one.
pub const WRITE_ANNOTATION: &str = "kube-elector.dev/write";

/// The start of the write token of a deletion mark: the stamp written just before
/// a delete, which the fence requires of the deleted object.
pub const DELETE_MARK: &str = "delete-";

/// A token no other write carries: a process-wide count mixed with a random key
/// (std's per-process hash seed), as 16 hex digits, or after [`DELETE_MARK`].
fn write_token(delete: bool) -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let prefix = if delete { DELETE_MARK } else { "" };
    format!("{prefix}{:016x}", h.finish())
}

/// A tower layer that stamps every write with the current term (see the
/// [module](self) docs): for the server-side fence of `election_ops::fence`
/// (feature `fence`), which refuses a write that does not bring this term's
/// stamp, and for downstream readers. Use it together with the
/// [`WriteGuardLayer`](crate::guard::WriteGuardLayer), outside it: it stamps
/// only while the view leads (has a term), and the guard still refuses what it
/// must. On its own it refuses nothing.
#[derive(Clone, Debug)]
pub struct TermAnnotationLayer<V> {
    view: V,
    stamp: Stamper,
}

impl<V: LeadershipView + Clone> TermAnnotationLayer<V> {
    /// Stamps with the term of `view` (an `Arc` of the handle), under
    /// [`TERM_ANNOTATION`].
    pub fn new(view: V) -> Self {
        TermAnnotationLayer {
            view,
            stamp: Stamper {
                key: TERM_ANNOTATION.into(),
                write_tokens: false,
            },
        }
    }

    /// Whether each write also carries a token of its own ([`WRITE_ANNOTATION`];
    /// default: off), as a fence with no writer check (`Writer::Any`) requires.
    /// On, no write is a no-op: a write that changes nothing else stores a new
    /// version and sends a watch event, so a level-triggered controller that
    /// writes what is already stored would loop. Off, the stamp is fixed for a
    /// term and such a write changes nothing.
    #[must_use]
    pub fn write_tokens(mut self, on: bool) -> Self {
        self.stamp.write_tokens = on;
        self
    }

    /// Writes the term under another annotation key (a valid Kubernetes
    /// annotation name; the fence's `FencePolicy::term_key` must name it too).
    #[must_use]
    pub fn key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.stamp.key = key.into();
        self
    }
}

impl<S, V: LeadershipView + Clone> Layer<S> for TermAnnotationLayer<V> {
    type Service = TermAnnotation<S, V>;
    fn layer(&self, inner: S) -> Self::Service {
        TermAnnotation {
            inner: Shared::new(inner),
            view: self.view.clone(),
            stamp: self.stamp.clone(),
        }
    }
}

/// The stamping service (see [`TermAnnotationLayer`]). It may send two requests
/// for one, so it holds the service below [`Shared`].
#[derive(Debug)]
pub struct TermAnnotation<S, V> {
    inner: Shared<S>,
    view: V,
    stamp: Stamper,
}

impl<S, V: Clone> Clone for TermAnnotation<S, V> {
    fn clone(&self) -> Self {
        TermAnnotation {
            inner: self.inner.clone(),
            view: self.view.clone(),
            stamp: self.stamp.clone(),
        }
    }
}

/// How stamps are made: the term's key, and whether each write carries a token.
#[derive(Clone, Debug)]
struct Stamper {
    key: Arc<str>,
    write_tokens: bool,
}

/// The response body: the one below, or a response this layer kept in memory
/// (the JSON patch's first answer, when the second form failed too).
pub type StampBody<B> = EitherBody<B, Full<Bytes>>;

type Answer<B> = Result<Response<StampBody<B>>, BoxError>;

impl<S, V, B, RB> Service<Request<B>> for TermAnnotation<S, V>
where
    S: Service<Request<B>, Response = Response<RB>> + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    V: LeadershipView + Clone,
    B: HttpBody<Data = Bytes> + From<Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
    RB: HttpBody<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    type Response = Response<StampBody<RB>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer<RB>> + Send>>;

    /// Always ready: each request waits for the service below when it is sent.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let (inner, view, stamp) = (self.inner.clone(), self.view.clone(), self.stamp.clone());
        Box::pin(async move { stamp_and_send(&inner, &view, &stamp, req).await })
    }
}

/// What a write is, for stamping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Write {
    /// A body that is the object, or a patch shaped like it.
    Object,
    /// A server-side apply patch: an object, whose stamp may be owned by an
    /// earlier term's field manager.
    Apply,
    /// An RFC 6902 list of operations.
    JsonPatch,
    /// An object in Kubernetes protobuf, as kubectl and client-go send
    /// built-in types.
    Protobuf,
    /// A delete of one object.
    Delete,
    /// A read, a delete of a collection, anything else: sent as it is.
    Unstamped,
}

impl Write {
    fn of<B>(req: &Request<B>) -> Self {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let m = req.method();
        let object = m == Method::POST || m == Method::PUT;
        // A create or replace with no content type is JSON to the API server
        // (its first serializer), as the Python client sends it.
        let media = match content_type.strip_prefix("application/") {
            None if object && content_type.is_empty() => "json",
            media => media.unwrap_or(""),
        };
        let patch = |kind: &str| m == Method::PATCH && media.starts_with(kind);
        if object && media.starts_with("json") {
            Write::Object
        } else if object && media.starts_with("vnd.kubernetes.protobuf") {
            Write::Protobuf
        } else if patch("json-patch+json") {
            Write::JsonPatch
        } else if ["merge-patch+json", "strategic-merge-patch+json"]
            .into_iter()
            .any(patch)
        {
            Write::Object
        } else if patch("apply-patch+yaml") {
            Write::Apply
        } else if m == Method::DELETE && names_one_object(req.uri().path()) {
            Write::Delete
        } else {
            Write::Unstamped
        }
    }
}

/// Whether an API path names one object (`…/namespaces/ns/configmaps/x`,
/// `…/nodes/x`, `…/namespaces/ns`), not a collection (`…/namespaces/ns/configmaps`).
fn names_one_object(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return false,
    };
    match rest {
        ["namespaces", _name] => true,
        ["namespaces", _ns, _resource] => false,
        ["namespaces", _ns, _resource, _name, ..] => true,
        [_] | [] => false,
        [_resource, _name, ..] => true,
    }
}

/// One write's stamp: the holder and the term, and with write tokens a token of
/// this write.
struct Stamp {
    pairs: Vec<(String, String)>,
}

impl Stamper {
    /// The stamp of `view`'s term, or `None` when it does not lead; `delete`:
    /// for a deletion mark.
    fn now<V: LeadershipView>(&self, view: &V, delete: bool) -> Option<Stamp> {
        let term = view.term()?;
        let mut pairs = vec![
            (self.key.to_string(), term.to_string()),
            (
                HOLDER_ANNOTATION.to_owned(),
                view.state().identity.to_string(),
            ),
        ];
        if self.write_tokens {
            pairs.push((WRITE_ANNOTATION.to_owned(), write_token(delete)));
        }
        Some(Stamp { pairs })
    }
}

impl Stamp {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The annotations as a JSON object.
    fn map(&self) -> Value {
        Value::Object(
            self.pairs()
                .map(|(k, v)| (k.to_owned(), Value::from(v)))
                .collect(),
        )
    }

    /// `ops` with an `add` of each annotation appended: for an object that has
    /// annotations.
    fn onto_annotations(&self, ops: &[Value]) -> Vec<u8> {
        let adds = self.pairs().map(|(k, v)| {
            json!({"op": "add", "path": format!("/metadata/annotations/{}", pointer_token(k)), "value": v})
        });
        to_vec(ops.iter().cloned().chain(adds))
    }

    /// `ops` followed by the annotations map created, after a `test` that it is
    /// absent (json-patch passes a `null` test on a missing member): for an object
    /// with no annotations, and harmless (refused whole) on one that has them.
    fn creating_annotations(&self, ops: &[Value]) -> Vec<u8> {
        let create = [
            json!({"op": "test", "path": "/metadata/annotations", "value": null}),
            json!({"op": "add", "path": "/metadata/annotations", "value": self.map()}),
        ];
        to_vec(ops.iter().cloned().chain(create))
    }
}

fn to_vec(ops: impl Iterator<Item = Value>) -> Vec<u8> {
    serde_json::to_vec(&Value::Array(ops.collect())).unwrap_or_default()
}

/// `key` as one JSON pointer token (RFC 6901: `~` → `~0`, `/` → `~1`).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A request like `parts` (method, URI, version, headers) with `body`.
fn request<B: From<Bytes>>(parts: &hyper::http::request::Parts, body: Vec<u8>) -> Request<B> {
    let mut req = Request::new(B::from(Bytes::from(body)));
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = parts.uri.clone();
    *req.version_mut() = parts.version;
    *req.headers_mut() = parts.headers.clone();
    req.headers_mut().remove(header::CONTENT_LENGTH);
    req
}

async fn stamp_and_send<S, V, B, RB>(
    inner: &Shared<S>,
    view: &V,
    stamper: &Stamper,
    req: Request<B>,
) -> Answer<RB>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Error: Into<BoxError>,
    V: LeadershipView,
    B: HttpBody<Data = Bytes> + From<Bytes> + Unpin,
    B::Error: Into<BoxError>,
    RB: HttpBody<Data = Bytes>,
    RB::Error: Into<BoxError>,
{
    let left = |r: Response<RB>| r.map(EitherBody::Left);
    let write = Write::of(&req);
    let stamp = match write {
        Write::Unstamped => None,
        _ => stamper.now(view, write == Write::Delete),
    };
    let Some(stamp) = stamp else {
        return inner.send(req).await.map(left);
    };
    let (parts, body) = req.into_parts();
    let body = match read_now(body)? {
        Ok(body) => body,
        // A streamed body: nothing to stamp it with.
        Err(body) => {
            return inner.send(Request::from_parts(parts, body)).await.map(left);
        }
    };
    match write {
        Write::Object => {
            let stamped = with_annotations_iter(&body, stamp.pairs()).unwrap_or(body);
            inner.send(request(&parts, stamped)).await.map(left)
        }
        Write::Protobuf => {
            let stamped = crate::protobuf::with_annotations(&body, stamp.pairs()).unwrap_or(body);
            inner.send(request(&parts, stamped)).await.map(left)
        }
        Write::Apply => {
            let stamped =
                with_annotations_iter(&body, stamp.pairs()).unwrap_or_else(|| body.clone());
            let first = inner.send(request(&parts, stamped)).await?;
            if first.status() != StatusCode::CONFLICT || forced(&parts.uri) {
                return Ok(left(first));
            }
            // An earlier term's field manager may own the stamp: when it is all
            // the conflict is about, take it (force) with a fresh stamp. A
            // conflict on any other field is the caller's.
            let (head, answer) = first.into_parts();
            let answer = answer.collect().await.map_err(Into::into)?.to_bytes();
            let stamp_only = conflicts_only_on(&answer, stamp.pairs().map(|(k, _)| k));
            let kept = Response::from_parts(head, EitherBody::Right(Full::new(answer)));
            let (true, Some(stamp), Some(uri)) =
                (stamp_only, stamper.now(view, false), with_force(&parts.uri))
            else {
                return Ok(kept);
            };
            let stamped = with_annotations_iter(&body, stamp.pairs()).unwrap_or(body);
            let mut retry = request(&parts, stamped);
            *retry.uri_mut() = uri;
            inner.send(retry).await.map(left)
        }
        Write::JsonPatch => {
            let Ok(Value::Array(ops)) = serde_json::from_slice::<Value>(&body) else {
                return inner.send(request(&parts, body)).await.map(left);
            };
            let first = inner
                .send(request(&parts, stamp.onto_annotations(&ops)))
                .await?;
            if first.status() != StatusCode::UNPROCESSABLE_ENTITY {
                return Ok(left(first));
            }
            // Perhaps the object has no annotations to add to: keep this answer,
            // and send the form that creates them (under this moment's term).
            let (head, answer) = first.into_parts();
            let answer = answer.collect().await.map_err(Into::into)?.to_bytes();
            let kept = Response::from_parts(head, EitherBody::Right(Full::new(answer)));
            let Some(stamp) = stamper.now(view, false) else {
                return Ok(kept);
            };
            let second = inner
                .send(request(&parts, stamp.creating_annotations(&ops)))
                .await?;
            // A 422 again: the object had annotations, and the first answer says why.
            Ok(if second.status() == StatusCode::UNPROCESSABLE_ENTITY {
                kept
            } else {
                left(second)
            })
        }
        // A dry run must not write: no mark, so the fence refuses it.
        Write::Delete if dry_run(&parts.uri, &body) => {
            inner.send(request(&parts, body)).await.map(left)
        }
        Write::Delete => {
            let mut mark = request(
                &parts,
                serde_json::to_vec(&json!({"metadata": {"annotations": stamp.map()}}))
                    .unwrap_or_default(),
            );
            *mark.method_mut() = Method::PATCH;
            if let Ok(path) = parts.uri.path().parse() {
                *mark.uri_mut() = path;
            }
            mark.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/merge-patch+json"),
            );
            let marked = inner.send(mark).await?;
            if !marked.status().is_success() {
                return Ok(left(marked));
            }
            inner.send(request(&parts, body)).await.map(left)
        }
        Write::Unstamped => inner.send(request(&parts, body)).await.map(left),
    }
}

/// Whether an apply asks to force already (`force=true`).
fn forced(uri: &hyper::Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "force=true"))
}

/// `uri` asking to force an apply.
fn with_force(uri: &hyper::Uri) -> Option<hyper::Uri> {
    let query = match uri.query() {
        Some(q) => format!("{q}&force=true"),
        None => "force=true".to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(format!("{}?{query}", uri.path()).parse().ok()?);
    hyper::Uri::from_parts(parts).ok()
}

/// Whether a `409 Conflict` answer (a `Status`) is an apply's conflict with
/// other field managers on the annotations `keys` alone, no other field.
fn conflicts_only_on<'k>(answer: &[u8], keys: impl Iterator<Item = &'k str>) -> bool {
    let fields: Vec<String> = keys.map(|k| format!(".metadata.annotations.{k}")).collect();
    let Ok(status) = serde_json::from_slice::<Value>(answer) else {
        return false;
    };
    let Some(causes) = status.pointer("/details/causes").and_then(Value::as_array) else {
        return false;
    };
    !causes.is_empty()
        && causes.iter().all(|c| {
            c["reason"] == "FieldManagerConflict"
                && c["field"]
                    .as_str()
                    .is_some_and(|f| fields.iter().any(|k| k == f))
        })
}

/// Whether a delete asks for a dry run, in its query or its options
/// (`dryRun: ["All"]`, as kube's `DeleteParams` send it).
fn dry_run(uri: &hyper::Uri, body: &[u8]) -> bool {
    let in_query = uri
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv.starts_with("dryRun=")));
    let in_options = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|o| {
            o.get("dryRun")
                .and_then(Value::as_array)
                .map(|a| !a.is_empty())
        })
        .unwrap_or(false);
    in_query || in_options
}

/// The whole body, read without waiting, as kube's request bodies are in memory:
/// `Err(body)` unchanged when it would make the caller wait from the start (a
/// stream); an error when it does so after some data (it cannot be put back
/// together).
fn read_now<B>(mut body: B) -> Result<Result<Vec<u8>, B>, BoxError>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
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
            Poll::Ready(None) => return Ok(Ok(data)),
            Poll::Pending if !read_any => return Ok(Err(body)),
            Poll::Pending => return Err("a streamed request body cannot be stamped".into()),
        }
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
    with_annotations_iter(body, pairs.iter().copied())
}

fn with_annotations_iter<'a>(
    body: &[u8],
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    let object = |v: &mut Value| {
        if v.is_null() {
            *v = Value::Object(serde_json::Map::new());
        }
        v.is_object()
    };
    let obj = v.as_object_mut()?;
    let meta = obj.entry("metadata").or_insert(Value::Null);
    if !object(meta) {
        return None;
    }
    let annotations = meta
        .as_object_mut()?
        .entry("annotations")
        .or_insert(Value::Null);
    if !object(annotations) {
        return None;
    }
    let annotations = annotations.as_object_mut()?;
    for (key, value) in pairs {
        annotations.insert(key.to_owned(), value.into());
    }
    serde_json::to_vec(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The annotated body, parsed (key order depends on serde_json's features).
    fn annotate(body: &str) -> Option<Value> {
        with_annotation(body.as_bytes(), "kube-elector.dev/term", "3@17")
            .map(|b| serde_json::from_slice(&b).expect("JSON"))
    }

    fn json(s: &str) -> Option<Value> {
        Some(serde_json::from_str(s).expect("JSON"))
    }

    #[test]
    fn the_term_is_merged_into_the_objects_annotations() {
        assert_eq!(
            annotate(r#"{"metadata":{"name":"x","annotations":{"a":"b"}},"data":{}}"#),
            json(
                r#"{"data":{},"metadata":{"annotations":{"a":"b","kube-elector.dev/term":"3@17"},"name":"x"}}"#
            )
        );
        assert_eq!(
            annotate(r#"{"data":{"k":"v"}}"#),
            json(
                r#"{"data":{"k":"v"},"metadata":{"annotations":{"kube-elector.dev/term":"3@17"}}}"#
            )
        );
        assert_eq!(
            annotate(r#"{"metadata":null}"#),
            json(r#"{"metadata":{"annotations":{"kube-elector.dev/term":"3@17"}}}"#)
        );
        assert_eq!(
            annotate(r#"{"metadata":{"annotations":null}}"#),
            json(r#"{"metadata":{"annotations":{"kube-elector.dev/term":"3@17"}}}"#)
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

    /// Each content type a client sends is stamped as its body needs: the
    /// Python client sends a create with none (JSON to the API server),
    /// kubectl a create of a built-in type in protobuf.
    #[test]
    fn writes_are_told_apart_by_method_and_content_type() {
        let of = |method: Method, content_type: Option<&str>| {
            let mut req = Request::builder()
                .method(method)
                .uri("/api/v1/namespaces/ns/configmaps/x");
            if let Some(ct) = content_type {
                req = req.header(header::CONTENT_TYPE, ct);
            }
            Write::of(&req.body(()).expect("a request"))
        };
        for (method, content_type, write) in [
            (Method::POST, Some("application/json"), Write::Object),
            (
                Method::PUT,
                Some("application/json; charset=utf-8"),
                Write::Object,
            ),
            (Method::POST, None, Write::Object),
            (Method::PUT, None, Write::Object),
            (
                Method::POST,
                Some("application/vnd.kubernetes.protobuf"),
                Write::Protobuf,
            ),
            (
                Method::PUT,
                Some("application/vnd.kubernetes.protobuf"),
                Write::Protobuf,
            ),
            (
                Method::PATCH,
                Some("application/merge-patch+json"),
                Write::Object,
            ),
            (
                Method::PATCH,
                Some("application/strategic-merge-patch+json"),
                Write::Object,
            ),
            (
                Method::PATCH,
                Some("application/json-patch+json"),
                Write::JsonPatch,
            ),
            (
                Method::PATCH,
                Some("application/apply-patch+yaml"),
                Write::Apply,
            ),
            (Method::PATCH, None, Write::Unstamped),
            (Method::POST, Some("application/yaml"), Write::Unstamped),
            (Method::DELETE, None, Write::Delete),
            (Method::GET, None, Write::Unstamped),
        ] {
            assert_eq!(
                of(method.clone(), content_type),
                write,
                "{method} {content_type:?}"
            );
        }
    }

    #[test]
    fn a_delete_is_stamped_only_when_it_names_one_object() {
        for (path, one) in [
            ("/api/v1/namespaces/ns/configmaps/x", true),
            ("/api/v1/namespaces/ns/configmaps", false),
            ("/apis/apps/v1/namespaces/ns/deployments/d", true),
            ("/apis/apps/v1/namespaces/ns/deployments/d/status", true),
            ("/apis/apps/v1/namespaces/ns/deployments", false),
            ("/api/v1/nodes/n", true),
            ("/api/v1/nodes", false),
            ("/api/v1/namespaces/ns", true),
            ("/api/v1/namespaces", false),
            ("/healthz", false),
        ] {
            assert_eq!(names_one_object(path), one, "{path}");
        }
    }

    #[test]
    fn write_tokens_differ_and_a_marks_token_says_so() {
        let tokens: std::collections::HashSet<String> =
            (0..1000).map(|i| write_token(i % 2 == 0)).collect();
        assert_eq!(tokens.len(), 1000);
        assert_eq!(
            tokens.iter().filter(|t| t.starts_with(DELETE_MARK)).count(),
            500
        );
        assert!(tokens.iter().all(|t| t.len() >= 16));
    }

    #[test]
    fn annotation_keys_are_escaped_as_pointer_tokens() {
        assert_eq!(
            pointer_token("kube-elector.dev/term"),
            "kube-elector.dev~1term"
        );
        assert_eq!(pointer_token("a~b/c"), "a~0b~1c");
    }

    #[test]
    fn an_apply_is_forced_only_past_a_conflict_on_the_stamp_alone() {
        let keys = || [TERM_ANNOTATION, HOLDER_ANNOTATION, WRITE_ANNOTATION].into_iter();
        let conflict = |fields: &[&str]| {
            let causes: Vec<Value> = fields
                .iter()
                .map(|f| json!({"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": f}))
                .collect();
            serde_json::to_vec(&json!({"kind": "Status", "code": 409, "reason": "Conflict",
                "details": {"causes": causes}}))
            .unwrap()
        };
        // As kube-apiserver words the fields (the key's dots and slash as they are).
        let stamp_fields = [
            ".metadata.annotations.kube-elector.dev/holder",
            ".metadata.annotations.kube-elector.dev/term",
            ".metadata.annotations.kube-elector.dev/write",
        ];
        assert!(conflicts_only_on(&conflict(&stamp_fields), keys()));
        assert!(conflicts_only_on(&conflict(&stamp_fields[..1]), keys()));
        assert!(!conflicts_only_on(
            &conflict(&[stamp_fields[0], ".data.k"]),
            keys()
        ));
        assert!(!conflicts_only_on(
            &conflict(&[".metadata.annotations.other"]),
            keys()
        ));
        assert!(!conflicts_only_on(&conflict(&[]), keys()));
        assert!(!conflicts_only_on(b"not a status", keys()));

        let uri: hyper::Uri = "/api/v1/namespaces/ns/configmaps/s?fieldManager=app-1"
            .parse()
            .unwrap();
        assert!(!forced(&uri));
        let force = with_force(&uri).unwrap();
        assert_eq!(
            force.to_string(),
            "/api/v1/namespaces/ns/configmaps/s?fieldManager=app-1&force=true"
        );
        assert!(forced(&force));
        let absolute: hyper::Uri = "https://127.0.0.1:6443/api/v1/namespaces/ns/configmaps/s"
            .parse()
            .unwrap();
        assert_eq!(
            with_force(&absolute).unwrap().to_string(),
            "https://127.0.0.1:6443/api/v1/namespaces/ns/configmaps/s?force=true"
        );
    }
}
