//! The Kubernetes API served on loopback through a guarded, stamped client
//! (feature `proxy`): for a program that is not written against this library
//! (kubectl, a Python, Go or Java client, a shell script), so that its writes
//! are fenced with no code of its own.
//!
//! [`ApiProxy`] forwards each request it receives, as it came (method, path,
//! query, headers, body), through a `kube::Client` of the caller's: with
//! [`guarded_client`](crate::client::guarded_client), every write passes the
//! guard and carries the term's stamp, and the client's credentials (the Pod's)
//! replace whatever the program sent. The answer comes back as the API server
//! gave it, streamed: a watch stays open as long as the program reads it.
//!
//! - A write the guard refuses (this node does not lead with the margin left:
//!   the term is over, or about to be) is answered `403 Forbidden` with a
//!   Kubernetes `Status` naming the reason, and nothing is sent: the answer the
//!   fence (`election_ops::fence`) gives a deposed leader's write that reached
//!   the server, so the program sees one kind of refusal wherever it was
//!   refused. No client retries a 403 (kube-rs retries 503 and 504, client-go
//!   a 503 with `Retry-After`): a refused write is not sent again later, in
//!   another term.
//! - A write not answered within the guard's margin is answered `504 Timeout`;
//!   an API server that cannot be reached, `503`.
//! - A body over [`MAX_BODY`] is refused with `413`; a connection upgrade
//!   (`exec`, `attach`, `port-forward`) with `400`: the proxy serves ordinary
//!   API traffic only.
//!
//! It serves plain HTTP/1.1, and only where it is bound: bind it to a loopback
//! address. Whoever reaches it writes with the client's credentials, as a
//! process that reads the Pod's token file would.
//!
//! ```no_run
//! use std::sync::Arc;
//! use election_ops::client::guarded_client;
//! use election_ops::guard::WriteGuardLayer;
//! use election_ops::proxy::ApiProxy;
//! use election_ops::stamp::TermAnnotationLayer;
//!
//! async fn serve(handle: Arc<election_driver::Handle>) -> Result<(), Box<dyn std::error::Error>> {
//!     let mut config = kube::Config::infer().await?;
//!     // The program's own client decides whether to retry what was refused.
//!     config.default_retry = false;
//!     let guard = WriteGuardLayer::new(Arc::clone(&handle));
//!     let client = guarded_client(config, &guard, Some(&TermAnnotationLayer::new(handle)))?;
//!     let addr = ApiProxy::new(client).spawn("127.0.0.1:0".parse()?).await?;
//!     println!("KUBECONFIG server: http://{addr}");
//!     Ok(())
//! }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};

use crate::client::WriteTimedOut;
use crate::guard::{in_chain, not_leader};

/// The largest request body forwarded: 16 MiB (kube-apiserver refuses bodies
/// over 3 MiB itself).
pub const MAX_BODY: usize = 16 << 20;

/// The request headers not forwarded: those of one hop, and the program's own
/// credentials (the client brings its own) and `Host` (the client's server's).
const DROPPED: [&str; 11] = [
    "authorization",
    "connection",
    "content-length",
    "host",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// A response body: the API server's, streamed, or one the proxy wrote.
pub type ProxyBody = Either<kube::client::Body, Full<Bytes>>;

/// The proxy (see the [module](self) docs).
#[derive(Clone)]
pub struct ApiProxy {
    client: kube::Client,
}

impl std::fmt::Debug for ApiProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiProxy").finish_non_exhaustive()
    }
}

impl ApiProxy {
    /// Forwards through `client` (built with
    /// [`guarded_client`](crate::client::guarded_client) to fence the writes).
    pub fn new(client: kube::Client) -> Self {
        ApiProxy { client }
    }

    /// Binds `addr` and serves on a new tokio task; returns the bound address.
    pub async fn spawn(self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        tokio::spawn(self.serve(listener));
        Ok(bound)
    }

    /// Serves on `listener` until the task is dropped, each connection on a
    /// task of its own. A failed accept is logged and retried after a pause.
    pub async fn serve(self, listener: tokio::net::TcpListener) {
        let me = Arc::new(self);
        crate::http::serve_http1(listener, "API proxy", move |req| {
            let me = Arc::clone(&me);
            async move { me.forward(req).await }
        })
        .await
    }

    /// Forwards one request and answers with the API server's response, or a
    /// `Status` of the proxy's.
    pub async fn forward(&self, req: Request<Incoming>) -> Response<ProxyBody> {
        let (parts, body) = req.into_parts();
        if parts.headers.contains_key(header::UPGRADE) {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "the API proxy does not forward connection upgrades (exec, attach, port-forward)",
            );
        }
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                return if e.is::<http_body_util::LengthLimitError>() {
                    status(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "RequestEntityTooLarge",
                        &format!("the request body is over {MAX_BODY} bytes"),
                    )
                } else {
                    status(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        &format!("the request body could not be read: {e}"),
                    )
                };
            }
        };
        let target = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), ToString::to_string);
        let mut out = Request::new(kube::client::Body::from(body));
        *out.method_mut() = parts.method.clone();
        *out.uri_mut() = match target.parse() {
            Ok(uri) => uri,
            Err(e) => {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    &format!("invalid path {target:?}: {e}"),
                );
            }
        };
        for (name, value) in &parts.headers {
            if !DROPPED.contains(&name.as_str()) {
                out.headers_mut().append(name.clone(), value.clone());
            }
        }
        match self.client.send(out).await {
            Ok(answer) => {
                let (mut parts, body) = answer.into_parts();
                for name in ["connection", "keep-alive", "transfer-encoding"] {
                    parts.headers.remove(HeaderName::from_static(name));
                }
                Response::from_parts(parts, Either::Left(body))
            }
            Err(e) => refusal(&parts.method, &target, &e),
        }
    }
}

/// The `Status` for a request the client did not get answered.
fn refusal(method: &hyper::Method, target: &str, e: &kube::Error) -> Response<ProxyBody> {
    if let Some(refused) = not_leader(e) {
        tracing::info!(method = %refused.method, path = %refused.path, "API proxy: write refused, not the leader");
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &format!(
                "{} {}: refused by the leader-election sidecar, not sent: this Pod does not lead \
                 (its term is over, or too close to its end for the write)",
                refused.method, refused.path
            ),
        );
    }
    if let Some(timed_out) = in_chain::<WriteTimedOut>(e) {
        return status(
            StatusCode::GATEWAY_TIMEOUT,
            "Timeout",
            &format!("{timed_out}: the server may still apply it"),
        );
    }
    tracing::warn!(%method, path = target, error = %e, "API proxy: the API server could not be reached");
    status(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        &format!("{method} {target}: the API server could not be reached: {e}"),
    )
}

/// A Kubernetes `Status` (`Failure`) as the API server writes one, which every
/// client decodes into its error type.
fn status(code: StatusCode, reason: &str, message: &str) -> Response<ProxyBody> {
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    let mut resp = Response::new(Either::Right(Full::new(Bytes::from(body.to_string()))));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}
