//! Keeps a `Retry-After` header that `kube`'s client would drop.
//!
//! A real API server answers 429 (its max-in-flight and priority-and-fairness
//! filters) with the delay in the `Retry-After` header and a plain-text body, and
//! a 503 from a proxy often the same way. `kube` turns an error answer into a
//! [`kube::core::Status`] built from the body alone, so the header is lost and
//! [`crate::error::classify_status`], which reads `details.retryAfterSeconds`,
//! would see no delay. [`RetryAfterLayer`] sits in the client's tower stack and,
//! on a 429 or 503 carrying `Retry-After: <seconds>`, rewrites the body into a
//! `Status` whose `details.retryAfterSeconds` holds the header's value (a JSON
//! `Status` body keeps its fields; a non-JSON body becomes its `message`). A body
//! that already names `retryAfterSeconds` is left as it is.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use kube::client::{Body, DynBody};
use serde_json::{Value, json};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The tower layer; see the [module documentation](self). [`crate::lock_client`]
/// installs it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RetryAfterLayer;

impl<S> tower::Layer<S> for RetryAfterLayer {
    type Service = RetryAfter<S>;

    fn layer(&self, inner: S) -> RetryAfter<S> {
        RetryAfter { inner }
    }
}

/// The service of [`RetryAfterLayer`].
#[derive(Clone, Debug)]
pub struct RetryAfter<S> {
    inner: S,
}

impl<S> tower::Service<Request<Body>> for RetryAfter<S>
where
    S: tower::Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<Box<DynBody>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await?;
            let status = res.status();
            if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE
            {
                return Ok(res);
            }
            let Some(secs) = res
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u32>().ok())
            else {
                return Ok(res);
            };
            let (mut parts, body) = res.into_parts();
            let bytes = body.collect().await?.to_bytes();
            let rewritten = with_retry_after(&bytes, status.as_u16(), secs);
            parts.headers.insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            let body: Box<DynBody> = Box::new(
                Full::new(Bytes::from(rewritten)).map_err(|never: Infallible| match never {}),
            );
            Ok(Response::from_parts(parts, body))
        })
    }
}

/// The error body `body` of an answer with HTTP `code`, as a `Status` carrying
/// `details.retryAfterSeconds = secs` unless it already names a delay.
pub fn with_retry_after(body: &[u8], code: u16, secs: u32) -> Vec<u8> {
    let mut status = match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) if v.get("kind").and_then(Value::as_str) == Some("Status") => v,
        _ => {
            let reason = if code == 429 {
                "TooManyRequests"
            } else {
                "ServiceUnavailable"
            };
            json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": String::from_utf8_lossy(body).trim(),
                "reason": reason,
                "code": code,
            })
        }
    };
    let has_delay = status
        .pointer("/details/retryAfterSeconds")
        .and_then(Value::as_u64)
        .is_some_and(|s| s > 0);
    if !has_delay && let Some(obj) = status.as_object_mut() {
        let details = obj.entry("details").or_insert_with(|| json!({}));
        if !details.is_object() {
            *details = json!({});
        }
        if let Some(d) = details.as_object_mut() {
            d.insert("retryAfterSeconds".to_owned(), json!(secs));
        }
    }
    serde_json::to_vec(&status).unwrap_or_else(|_| body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(bytes: &[u8]) -> kube::core::Status {
        serde_json::from_slice(bytes).expect("a Status")
    }

    #[test]
    fn a9_a_plain_text_429_becomes_a_status_with_the_header_delay() {
        let s = status(&with_retry_after(
            b"Too many requests, please try again later.\n",
            429,
            7,
        ));
        assert_eq!(s.code, 429);
        assert_eq!(s.reason, "TooManyRequests");
        assert_eq!(s.message, "Too many requests, please try again later.");
        assert_eq!(s.details.expect("details").retry_after_seconds, 7);
    }

    #[test]
    fn a9_a_status_without_a_delay_gets_the_header_one_and_keeps_its_fields() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"slow down","reason":"TooManyRequests","code":429,"details":{"name":"l"}}"#;
        let s = status(&with_retry_after(body, 429, 3));
        assert_eq!(s.message, "slow down");
        let d = s.details.expect("details");
        assert_eq!((d.name.as_str(), d.retry_after_seconds), ("l", 3));
    }

    #[test]
    fn a9_a_status_with_its_own_delay_keeps_it() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"m","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":2}}"#;
        let s = status(&with_retry_after(body, 429, 9));
        assert_eq!(s.details.expect("details").retry_after_seconds, 2);
    }
}
