//! One API call as a lock makes it: on any runtime, bounded by the request
//! timeout, its failure classified.

use std::future::Future;
use std::time::Duration;

use async_compat::Compat;
use election_core::LockError;

use crate::error::{Target, Verb, classify};
use crate::retry_after::RetryAfterLayer;

/// Prepares a `kube` client configuration for lock calls: kube's own retries of
/// 429, 503 and 504 are turned off (the elector retries, honouring its deadline;
/// a retried write would hide an unknown outcome), and the read timeout is left
/// unset so that watches may stay quiet (each call is bounded by [`call`] instead).
#[must_use]
pub fn lock_client_config(mut config: kube::Config) -> kube::Config {
    config.default_retry = false;
    config.read_timeout = None;
    config
}

/// Builds a `kube` client for lock calls from `config` (see [`lock_client_config`]),
/// with [`RetryAfterLayer`] so that a `Retry-After` header reaches the error.
/// It may be built outside any runtime; it needs a tokio reactor only when used,
/// which [`call`] provides.
pub fn lock_client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    let config = lock_client_config(config);
    // Building the client spawns nothing, but hyper's connector wants a runtime
    // context to exist; enter async-compat's if the caller has none.
    // The `Retry-After` header of a 429 or 503 is carried into the `Status`
    // that kube builds from the body (see `retry_after`).
    in_tokio_context(|| {
        Ok(kube::client::ClientBuilder::try_from(config)?
            .with_layer(&RetryAfterLayer)
            .build())
    })
}

/// Runs `f` inside a tokio runtime context: the caller's if there is one, else the
/// one `async-compat` keeps.
///
/// No executor is involved (so this may be called from inside any `block_on`,
/// futures' own included): `Compat` enters the runtime context when polled, and
/// the future it wraps runs `f` and completes on its first poll, which this
/// function makes with a no-op waker.
pub fn in_tokio_context<T>(f: impl FnOnce() -> T) -> T {
    if tokio::runtime::Handle::try_current().is_ok() {
        return f();
    }
    let mut f = Some(f);
    let mut out = None;
    {
        let fut = Compat::new(std::future::poll_fn(|_| {
            if let Some(f) = f.take() {
                out = Some(f());
            }
            std::task::Poll::Ready(())
        }));
        let mut fut = std::pin::pin!(fut);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let _ready = fut.as_mut().poll(&mut cx);
    }
    match (out, f) {
        (Some(v), _) => v,
        // Unreachable (the first poll runs `f`); run it without the context
        // rather than fail.
        (None, Some(f)) => f(),
        (None, None) => unreachable!("f ran but left no output"),
    }
}

/// Runs one API call of a [`Lock`](election_core::Lock) method under any async
/// runtime (kube's client needs a tokio reactor, which `async-compat` supplies
/// when the caller runs smol or async-std), its error classified by
/// [`classify`]. It has no bound of its own: the driver bounds every lock call
/// with the election's request timeout, and one bound is enough.
pub async fn call<T, F>(verb: Verb, target: &Target, fut: F) -> Result<T, LockError>
where
    F: Future<Output = Result<T, kube::Error>> + Send,
    T: Send,
{
    Compat::new(fut)
        .await
        .map_err(|e| classified(&e, verb, target))
}

/// As [`call`], for a call the lock makes by itself, which no driver bounds
/// (the read and the connect that open a watch, an Event): cut off after
/// `timeout` (then [`LockError::Unknown`]: a write may have happened).
pub async fn call_within<T, F>(
    timeout: Duration,
    verb: Verb,
    target: &Target,
    fut: F,
) -> Result<T, LockError>
where
    F: Future<Output = Result<T, kube::Error>> + Send,
    T: Send,
{
    let bounded = async move { tokio::time::timeout(timeout, fut).await };
    match Compat::new(bounded).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(classified(&e, verb, target)),
        Err(_) => Err(LockError::unknown(format!(
            "{verb} {target}: no answer within the request timeout {timeout:?}"
        ))),
    }
}

/// `e` classified, and logged at debug level.
fn classified(e: &kube::Error, verb: Verb, target: &Target) -> LockError {
    let err = classify(e, verb, target);
    tracing::debug!(%verb, %target, error = %e, class = ?err, "API call failed");
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a14_a_call_that_never_answers_is_unknown_after_the_timeout() {
        let t = Target::new("leases.coordination.k8s.io", "ns", "x");
        let never = std::future::pending::<Result<(), kube::Error>>();
        let r = futures::executor::block_on(call_within(
            Duration::from_millis(20),
            Verb::Update,
            &t,
            never,
        ));
        match r {
            Err(e @ LockError::Unknown { .. }) => {
                assert!(e.to_string().contains("request timeout"))
            }
            other => panic!("expected Unknown, got {other:?}"),
        }
    }

    /// Building a client from inside futures' `block_on` (no tokio runtime)
    /// must not nest a second `block_on`, which panics.
    #[test]
    fn lock_client_builds_inside_a_futures_block_on() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let built = futures::executor::block_on(async { lock_client(config).is_ok() });
        assert!(built);
        let inside = futures::executor::block_on(async {
            in_tokio_context(|| tokio::runtime::Handle::try_current().is_ok())
        });
        assert!(inside, "f runs in a tokio context");
    }

    #[test]
    fn lock_client_config_turns_off_kube_retries() {
        let c = lock_client_config(kube::Config::new("http://127.0.0.1:1".parse().unwrap()));
        assert!(!c.default_retry);
        assert_eq!(c.read_timeout, None);
    }
}
