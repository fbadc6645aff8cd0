//! A small HTTP/1 endpoint (feature `http`, hyper 1 on tokio): `GET /healthz`
//! (liveness), `GET /readyz` (readiness), `GET /status` (JSON) and, with feature
//! `metrics` and a registry, `GET /metrics` (with `leader_election_healthy` set
//! from the liveness check at each scrape). Answers 200 `ok`, or 503 with the
//! reason; anything else is 404.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::health::Health;

use crate::view::LeadershipView;

/// The pause after a failed accept.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// Serves HTTP/1 on `listener` until the task is dropped, each connection on
/// a task of its own, each request answered by `answer`. A failed accept (no
/// file descriptors left, a connection reset before it was taken: the
/// listener itself still works) is logged, naming `what`, and retried after a
/// short pause, so that a persistent error does not spin; so this never
/// returns.
pub(crate) async fn serve_http1<F, Fut, B>(
    listener: tokio::net::TcpListener,
    what: &'static str,
    answer: F,
) -> !
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "{what} failed to accept a connection");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let answer = answer.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let answer = answer.clone();
                async move { Ok::<_, Infallible>(answer(req).await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                tracing::debug!(error = %e, "{what} connection ended");
            }
        });
    }
}

/// An answer of the endpoint: status code, content type, body.
pub type Answer = (u16, &'static str, String);

/// A route of the caller's own (see [`Endpoint::route`]).
type Route = (String, Box<dyn Fn() -> Answer + Send + Sync>);

/// What the endpoint serves.
pub struct Endpoint<V> {
    health: Health<V>,
    routes: Vec<Route>,
    #[cfg(feature = "metrics")]
    metrics: Option<(Arc<crate::Monitor>, prometheus_client::registry::Registry)>,
}

impl<V> core::fmt::Debug for Endpoint<V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Endpoint")
            .field("health", &self.health)
            .field(
                "routes",
                &self.routes.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<V: LeadershipView + Clone> Endpoint<V> {
    /// Serves `health`.
    pub fn new(health: Health<V>) -> Self {
        Endpoint {
            health,
            routes: Vec::new(),
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    /// Also serves `/metrics` from `registry`, refreshed through `monitor`.
    #[cfg(feature = "metrics")]
    #[must_use]
    pub fn metrics(
        mut self,
        monitor: Arc<crate::Monitor>,
        registry: prometheus_client::registry::Registry,
    ) -> Self {
        self.metrics = Some((monitor, registry));
        self
    }

    /// Also answers `GET path` with what `answer` returns, called per request
    /// (e.g. the `leader-elector` sidecar's `GET /` → `{"name": …}`). A route of
    /// the caller's own comes before the built-in ones of the same path.
    #[must_use]
    pub fn route(
        mut self,
        path: impl Into<String>,
        answer: impl Fn() -> Answer + Send + Sync + 'static,
    ) -> Self {
        self.routes.push((path.into(), Box::new(answer)));
        self
    }

    /// The answer to `GET path`.
    pub fn answer(&self, path: &str) -> Answer {
        const TEXT: &str = "text/plain; charset=utf-8";
        if let Some((_, answer)) = self.routes.iter().find(|(p, _)| p == path) {
            return answer();
        }
        match path {
            "/healthz" | "/livez" => match self.health.liveness() {
                Ok(()) => (200, TEXT, "ok".into()),
                Err(e) => (503, TEXT, e.to_string()),
            },
            "/readyz" => match self.health.readiness() {
                Ok(()) => (200, TEXT, "ok".into()),
                Err(e) => (503, TEXT, e.to_string()),
            },
            "/status" => (200, "application/json", self.health.status_json()),
            #[cfg(feature = "metrics")]
            "/metrics" => match &self.metrics {
                Some((monitor, registry)) => {
                    let healthy = self.health.liveness().is_ok();
                    monitor.metrics().set_healthy(monitor.name(), healthy);
                    match monitor.encode_metrics(&self.health_view(), registry) {
                        Ok(text) => (
                            200,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                            text,
                        ),
                        Err(e) => (500, TEXT, e.to_string()),
                    }
                }
                None => (404, TEXT, "not found".into()),
            },
            _ => (404, TEXT, "not found".into()),
        }
    }

    #[cfg(feature = "metrics")]
    fn health_view(&self) -> V {
        self.health.view().clone()
    }

    /// Serves on `listener` until the task is dropped; each connection on its own
    /// task. A failed accept (no file descriptors left, a connection reset before
    /// it was taken) is logged and retried after a short pause: the endpoint keeps
    /// serving, so this does not return an error in practice.
    pub async fn serve(self: Arc<Self>, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        serve_http1(listener, "health endpoint", move |req| {
            let me = Arc::clone(&self);
            async move { me.respond(&req) }
        })
        .await
    }

    /// Binds `addr` and serves on a new tokio task; returns the bound address.
    pub async fn spawn(self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let me = Arc::new(self);
        tokio::spawn(async move {
            if let Err(e) = me.serve(listener).await {
                tracing::warn!(error = %e, "health endpoint stopped");
            }
        });
        Ok(bound)
    }

    fn respond(&self, req: &Request<Incoming>) -> Response<Full<Bytes>> {
        let (code, ctype, body) = if req.method() == hyper::Method::GET {
            self.answer(req.uri().path())
        } else {
            (
                405,
                "text/plain; charset=utf-8",
                "method not allowed".into(),
            )
        };
        let mut resp = Response::new(Full::new(Bytes::from(body)));
        *resp.status_mut() =
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
            resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
        }
        resp
    }
}
