//! Entry points for the fuzz targets (`fuzz/`) and the property tests; not part
//! of the API. Each runs one step of the emulator's reading of a request, as
//! the server runs it, on input the caller chooses, without a network.

use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use serde_json::Value;

use crate::server::Shared;

/// A failed step's answer: the HTTP status code and the `metav1.Status` body.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused {
    /// The status code (400, 404, 409, 415, 422, ...).
    pub code: u16,
    /// The `Status` object.
    pub status: Value,
}

impl From<crate::status::ApiError> for Refused {
    fn from(e: crate::status::ApiError) -> Self {
        Refused {
            code: e.code,
            status: e.to_status(),
        }
    }
}

/// An emulator's store and server state without its HTTP side: requests are
/// answered synchronously, without faults, and a watch is checked but not
/// streamed.
#[derive(Debug)]
pub struct Server(Arc<Shared>);

impl Default for Server {
    fn default() -> Self {
        Server(Arc::new(Shared::new(
            64,
            1_000,
            Duration::from_secs(60),
            Duration::from_secs(1_800),
        )))
    }
}

impl Server {
    /// An empty store (the `default` namespace and the others a fresh emulator has).
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `method` on `target`, a path with an optional query string
    /// (`/api/v1/namespaces/default/configmaps?limit=1`), from the client
    /// (bearer token) `client`, with the `Content-Type` header and the body
    /// given: the status code and the JSON body answered. An
    /// unknown method is 405.
    pub fn request(
        &self,
        client: &str,
        method: &str,
        target: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> (u16, Value) {
        let Ok(method) = Method::from_bytes(method.as_bytes()) else {
            return (405, Value::Null);
        };
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        };
        crate::server::plain_request(&self.0, client, &method, path, query, content_type, body)
    }
}

/// A request body as the server decodes it (`null` when empty; refused when
/// `content_type` is `application/vnd.kubernetes.protobuf`, else JSON).
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, Refused> {
    crate::server::decode_body(content_type, body).map_err(Refused::from)
}

/// Parses a field and a label selector (`fieldSelector`, `labelSelector`) and
/// says whether they select `object`.
pub fn selects(field: Option<&str>, label: Option<&str>, object: &Value) -> Result<bool, Refused> {
    let s = crate::selector::Selectors::parse(field, label)?;
    Ok(s.matches(object))
}

/// RFC 7386: `patch` merged into `target`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    crate::patch::merge_patch(target, patch);
}

/// RFC 6902: `patch` applied to a copy of `doc`, or why it does not apply.
pub fn json_patch(doc: &Value, patch: &Value) -> Result<Value, String> {
    crate::patch::json_patch(doc, patch).map_err(|e| e.to_string())
}

/// A value as Go's `fmt` prints it in a refused strategic merge patch.
pub fn go_format(value: &Value) -> String {
    crate::patch::go_format(value)
}

/// RFC 3339 as the emulator reads a timestamp: seconds since the epoch and
/// nanoseconds, and the `MicroTime` it writes back.
pub fn parse_time(text: &str) -> Option<(i64, u32, String)> {
    let ts = crate::time::parse_rfc3339(text)?;
    Some((ts.secs, ts.nanos, crate::time::format_micro_time(ts)))
}

/// `MAJOR.MINOR.PATCH` as the coordinator reads a candidate's version
/// (strictly, and tolerantly), each as its text.
pub fn versions(text: &str) -> (Option<String>, Option<String>) {
    let strict = crate::semver::Version::parse(text).map(|v| format!("{v:?}"));
    let tolerant = crate::semver::Version::parse_tolerant(text).map(|v| format!("{v:?}"));
    (strict, tolerant)
}

/// The `fieldValidation` directive of a write, or its 422.
pub fn field_validation(value: Option<&str>) -> Result<(), Refused> {
    crate::validation::FieldValidation::parse(value, "CreateOptions")
        .map(|_| ())
        .map_err(Refused::from)
}
