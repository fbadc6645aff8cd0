//! A service made cloneable without a worker task: the service below behind an
//! async lock, taken only to send a request (not while its answer is awaited).
//! The stamp layer sends two requests for some writes, and `tower`'s retry needs
//! a service it can clone; `kube`'s base stack is boxed, so neither could hold it
//! otherwise.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::lock::Mutex;
use tower::{BoxError, Layer, Service};

/// The service below, shared by every clone (see the [module](self) docs).
#[derive(Debug)]
pub struct Shared<S> {
    inner: Arc<Mutex<S>>,
}

impl<S> Clone for Shared<S> {
    fn clone(&self) -> Self {
        Shared {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S> Shared<S> {
    /// Shares `inner`.
    pub fn new(inner: S) -> Self {
        Shared {
            inner: Arc::new(Mutex::new(inner)),
        }
    }

    /// Sends `req` down, waiting for the service below to be ready.
    pub async fn send<R>(&self, req: R) -> Result<S::Response, BoxError>
    where
        S: Service<R>,
        S::Error: Into<BoxError>,
    {
        let answer = {
            let mut svc = self.inner.lock().await;
            futures::future::poll_fn(|cx| svc.poll_ready(cx))
                .await
                .map_err(Into::into)?;
            svc.call(req)
        };
        answer.await.map_err(Into::into)
    }
}

impl<S, R> Service<R> for Shared<S>
where
    S: Service<R> + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    R: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    /// Always ready: each request waits for the service below when it is sent.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: R) -> Self::Future {
        let shared = self.clone();
        Box::pin(async move { shared.send(req).await })
    }
}

/// The layer of [`Shared`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SharedLayer;

impl<S> Layer<S> for SharedLayer {
    type Service = Shared<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Shared::new(inner)
    }
}
