//! etcd's JSON gateway as the lock speaks it: one POST per call over hyper's
//! client, on any runtime, bounded by the request timeout, its failure
//! classified as a [`LockError`].
//!
//! The gateway maps gRPC status codes to HTTP statuses and answers errors as
//! `{"error": "...", "code": <gRPC code>, "message": "..."}`; 64-bit integers
//! are JSON strings and byte fields base64.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use async_compat::Compat;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use election_core::LockError;
use futures_lite::Stream;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;

/// The largest answer body the lock reads (etcd's own request limit is 1.5 MiB).
const MAX_BODY: usize = 4 << 20;

/// Whether a call may change the lock: a write whose answer is lost has an
/// unknown outcome, a read's failure is merely transient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
}

/// The HTTP side of one lock: the client (pooled connections), the endpoint, and
/// a count of the requests sent.
#[derive(Debug)]
pub(crate) struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    /// `http://host:port`, without a trailing slash.
    base: String,
    requests: AtomicU64,
}

impl Http {
    pub(crate) fn new(base: String, connect_timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(connect_timeout));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Http {
            client,
            base,
            requests: AtomicU64::new(0),
        }
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// POSTs `body` to `path` and returns the response once its headers came,
    /// within `bound` if one is given (the calls of `Lock` get none: the driver
    /// bounds them). Non-2xx answers are read and classified here.
    pub(crate) async fn open(
        &self,
        path: &str,
        body: String,
        kind: Kind,
        bound: Option<Duration>,
    ) -> Result<hyper::body::Incoming, LockError> {
        let what = describe(path);
        let request = http::Request::post(format!("{}{path}", self.base))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| LockError::Invalid {
                message: format!("{what}: cannot build the request: {e}"),
            })?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        let sent = self.client.request(request);
        let response = match within(bound, sent).await {
            Err(spent) => return Err(timed_out(&what, kind, spent)),
            Ok(Err(e)) => return Err(transport(&what, kind, &e)),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response.into_body());
        }
        let body = within(
            bound,
            Limited::new(response.into_body(), MAX_BODY).collect(),
        )
        .await;
        let bytes = match body {
            Ok(Ok(c)) => c.to_bytes(),
            _ => Bytes::new(),
        };
        Err(classify_answer(&what, kind, status.as_u16(), &bytes))
    }

    /// One call: POST `body` to `path`, read the whole answer (within `bound`
    /// if one is given), parse it as `T`.
    pub(crate) async fn call<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        body: String,
        kind: Kind,
        bound: Option<Duration>,
    ) -> Result<T, LockError> {
        let what = describe(path);
        let start = std::time::Instant::now();
        let incoming = self.open(path, body, kind, bound).await?;
        let left = bound.map(|b| b.saturating_sub(start.elapsed()));
        let collected = within(left, Limited::new(incoming, MAX_BODY).collect()).await;
        let bytes = match collected {
            Err(_) => return Err(timed_out(&what, kind, bound.unwrap_or_default())),
            Ok(Err(e)) => {
                let message = format!("{what}: the answer broke off: {e}");
                return Err(match kind {
                    Kind::Write => LockError::unknown(message),
                    Kind::Read => LockError::transient(message),
                });
            }
            Ok(Ok(c)) => c.to_bytes(),
        };
        serde_json::from_slice(&bytes).map_err(|e| unreadable(&what, kind, &e, &bytes))
    }
}

/// `POST /v3/kv/txn` for messages.
fn describe(path: &str) -> String {
    format!("POST {path}")
}

/// `fut` under kube's tokio reactor (`async-compat`, for any runtime), cut
/// off after `bound` if one is given: the bound spent, then.
async fn within<F: Future>(bound: Option<Duration>, fut: F) -> Result<F::Output, Duration> {
    Compat::new(async {
        match bound {
            Some(bound) => tokio::time::timeout(bound, fut).await.map_err(|_| bound),
            None => Ok(fut.await),
        }
    })
    .await
}

fn timed_out(what: &str, kind: Kind, bound: Duration) -> LockError {
    let message = format!("{what}: no answer within the request timeout {bound:?}");
    match kind {
        Kind::Write => LockError::unknown(format!("{message}; the write may have happened")),
        Kind::Read => LockError::transient(message),
    }
}

/// Transport failures: a connection refused or not made in time never reached
/// the server; anything after that may have.
fn transport(what: &str, kind: Kind, e: &hyper_util::client::legacy::Error) -> LockError {
    let detail = error_chain(e);
    if e.is_connect() {
        return LockError::transient(format!("{what}: cannot connect: {detail}"));
    }
    match kind {
        Kind::Write => LockError::unknown(format!(
            "{what}: the connection failed after sending, the write may have happened: {detail}"
        )),
        Kind::Read => LockError::transient(format!("{what}: the connection failed: {detail}")),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// A 2xx answer the lock cannot read: not etcd's gateway (or a newer one that
/// changed its format). A write may have been applied.
pub(crate) fn unreadable(
    what: &str,
    kind: Kind,
    e: &dyn std::fmt::Display,
    body: &[u8],
) -> LockError {
    let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    let message = format!("{what}: an answer that is not etcd's ({e}): {shown:?}");
    match kind {
        Kind::Write => LockError::unknown(message),
        Kind::Read => LockError::Invalid { message },
    }
}

/// The gateway's error body.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct GatewayError {
    /// `code` in unary answers, `grpc_code` in a streamed error.
    #[serde(default, alias = "grpc_code")]
    pub(crate) code: Option<i64>,
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) error: Option<String>,
}

impl GatewayError {
    pub(crate) fn text(&self) -> String {
        self.message
            .clone()
            .filter(|m| !m.is_empty())
            .or_else(|| self.error.clone())
            .unwrap_or_default()
    }
}

/// Classifies a non-2xx answer by the gRPC code the gateway reports (or, when
/// the body is not the gateway's, by the HTTP status).
pub(crate) fn classify_answer(what: &str, kind: Kind, status: u16, body: &[u8]) -> LockError {
    let err: GatewayError = serde_json::from_slice(body).unwrap_or_default();
    let text = err.text();
    let code = err.code.unwrap_or(match status {
        400 => 3,
        401 => 16,
        403 => 7,
        404 => 12,
        429 => 8,
        503 => 14,
        504 => 4,
        _ => 2,
    });
    classify_grpc(what, kind, code, status, &text)
}

/// By gRPC status code (`google.golang.org/grpc/codes`) and etcd's message.
pub(crate) fn classify_grpc(
    what: &str,
    kind: Kind,
    code: i64,
    status: u16,
    text: &str,
) -> LockError {
    let message = format!("{what}: {text} (gRPC code {code}, HTTP {status})");
    let unknown_if_write = |message: String| match kind {
        Kind::Write => LockError::unknown(format!("{message}; the write may have happened")),
        Kind::Read => LockError::transient(message),
    };
    match code {
        // InvalidArgument, FailedPrecondition, OutOfRange, Unimplemented, NotFound
        // (a path the server does not serve: no gateway there).
        3 | 9 | 11 | 12 | 5 => LockError::Invalid { message },
        // PermissionDenied, Unauthenticated.
        7 | 16 => LockError::Forbidden { message },
        // A message larger than the gateway's or etcd's limit: sending it again
        // cannot succeed.
        8 if text.contains("larger than max") || text.contains("too large") => {
            LockError::Invalid { message }
        }
        // ResourceExhausted ("etcdserver: too many requests"), Aborted.
        8 | 10 => LockError::transient(message),
        // Unavailable: a write is known not to have happened only when etcd
        // refused it before proposing it ("no leader", "not capable") or the
        // gateway could not reach etcd (a refused connection); anything else
        // ("request timed out", "leader changed", "transport is closing" when
        // etcd stops mid-call) may have been applied.
        14 if ["no leader", "not capable", "connection refused"]
            .iter()
            .any(|t| text.contains(t)) =>
        {
            LockError::transient(message)
        }
        14 => unknown_if_write(message),
        // DeadlineExceeded, Canceled, Internal, Unknown, DataLoss and the rest.
        _ => unknown_if_write(message),
    }
}

/// base64 of `bytes`, as the gateway wants byte fields.
pub(crate) fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Decodes a base64 byte field.
pub(crate) fn unb64(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    B64.decode(s)
}

/// Polls a stream inside a tokio runtime context (the caller's, or the one
/// `async-compat` keeps), so that hyper's body and tokio's timers work under
/// smol and async-std too.
pub(crate) struct CompatStream<S>(pub(crate) S);

impl<S: Stream + Unpin> Stream for CompatStream<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let inner = &mut self.0;
        let mut next = Compat::new(std::future::poll_fn(|cx| {
            Pin::new(&mut *inner).poll_next(cx)
        }));
        Pin::new(&mut next).poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_errors_are_classified_by_what_the_elector_does() {
        let c = |kind, status, body: &str| {
            classify_answer("POST /v3/kv/txn", kind, status, body.as_bytes())
        };
        assert!(matches!(
            c(
                Kind::Write,
                503,
                r#"{"error":"etcdserver: request timed out","code":14}"#
            ),
            LockError::Unknown { .. }
        ));
        assert!(matches!(
            c(
                Kind::Read,
                503,
                r#"{"error":"etcdserver: request timed out","code":14}"#
            ),
            LockError::Transient { .. }
        ));
        assert!(matches!(
            c(
                Kind::Write,
                503,
                r#"{"error":"etcdserver: no leader","code":14}"#
            ),
            LockError::Transient { .. }
        ));
        assert!(matches!(
            c(Kind::Write, 400, r#"{"error":"illegal base64","code":3}"#),
            LockError::Invalid { .. }
        ));
        assert!(matches!(
            c(
                Kind::Write,
                403,
                r#"{"error":"etcdserver: permission denied","code":7}"#
            ),
            LockError::Forbidden { .. }
        ));
        assert!(matches!(
            c(
                Kind::Write,
                429,
                r#"{"error":"etcdserver: too many requests","code":8}"#
            ),
            LockError::Transient { .. }
        ));
        assert!(matches!(
            c(Kind::Write, 500, "oops"),
            LockError::Unknown { .. }
        ));
        assert!(matches!(
            c(Kind::Write, 404, "404 page not found"),
            LockError::Invalid { .. }
        ));
        assert!(matches!(c(Kind::Write, 504, ""), LockError::Unknown { .. }));
    }

    /// docs/faults.md N21: etcd stopped gracefully mid-write answers
    /// Unavailable, "transport is closing", for writes it applied: a write so
    /// answered is `Unknown` (it may have happened), a read `Transient`; a
    /// message over the size limit is `Invalid` (sending it again cannot
    /// succeed).
    #[test]
    fn n21_an_unavailable_write_is_unknown_unless_etcd_refused_it_before_proposing() {
        let c = |kind, status, body: &str| {
            classify_answer("POST /v3/kv/txn", kind, status, body.as_bytes())
        };
        let closing = r#"{"error":"error reading from server: EOF","message":"transport is closing","code":14}"#;
        assert!(matches!(
            c(Kind::Write, 503, closing),
            LockError::Unknown { .. }
        ));
        assert!(matches!(
            c(Kind::Read, 503, closing),
            LockError::Transient { .. }
        ));
        assert!(matches!(c(Kind::Write, 503, ""), LockError::Unknown { .. }));
        let refused = r#"{"message":"connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\"","code":14}"#;
        assert!(matches!(
            c(Kind::Write, 503, refused),
            LockError::Transient { .. }
        ));
        let large = r#"{"message":"grpc: received message larger than max (2097250 vs. 2097152)","code":8}"#;
        assert!(matches!(
            c(Kind::Write, 429, large),
            LockError::Invalid { .. }
        ));
        let busy = r#"{"error":"etcdserver: too many requests","code":8}"#;
        assert!(matches!(
            c(Kind::Write, 429, busy),
            LockError::Transient { .. }
        ));
    }
}
