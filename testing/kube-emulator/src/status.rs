//! `metav1.Status` failures with the wording of
//! `k8s.io/apimachinery/pkg/api/errors` (NewNotFound, NewConflict, ...).

use serde_json::{Value, json};

use crate::patch::MEDIA_TYPES;
use crate::resource::Resource;

/// The message the API server puts after a failed optimistic-concurrency check
/// (`registry.OptimisticLockErrorMsg`).
pub(crate) const OPTIMISTIC_LOCK_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// One field error of an `Invalid` status (`field.Error`).
#[derive(Debug, Clone)]
pub(crate) struct FieldError {
    /// `FieldValueInvalid`, `FieldValueForbidden`, `FieldValueRequired`, `FieldValueNotSupported`.
    pub(crate) reason: &'static str,
    /// `spec.leaseDurationSeconds`.
    pub(crate) field: String,
    /// The text after the field: `Invalid value: 0: must be greater than 0`.
    pub(crate) detail: String,
}

impl FieldError {
    pub(crate) fn invalid(field: &str, value: &str, msg: &str) -> Self {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.to_owned(),
            detail: format!("Invalid value: {value}: {msg}"),
        }
    }

    pub(crate) fn forbidden(field: &str, msg: &str) -> Self {
        FieldError {
            reason: "FieldValueForbidden",
            field: field.to_owned(),
            detail: format!("Forbidden: {msg}"),
        }
    }

    pub(crate) fn required(field: &str, msg: &str) -> Self {
        let detail = if msg.is_empty() {
            "Required value".to_owned()
        } else {
            format!("Required value: {msg}")
        };
        FieldError {
            reason: "FieldValueRequired",
            field: field.to_owned(),
            detail,
        }
    }

    pub(crate) fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError {
            reason: "FieldValueNotSupported",
            field: field.to_owned(),
            detail: format!(
                "Unsupported value: {value:?}: supported values: {}",
                list.join(", ")
            ),
        }
    }
}

/// A failed request, rendered as a `metav1.Status` body with its HTTP code.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    pub(crate) details: Option<Value>,
    /// Seconds for `Retry-After` and `details.retryAfterSeconds`.
    pub(crate) retry_after: Option<u32>,
}

impl ApiError {
    fn with_details(code: u16, reason: &'static str, message: String, details: Value) -> Self {
        ApiError {
            code,
            reason,
            message,
            details: Some(details),
            retry_after: None,
        }
    }

    fn resource_details(resource: Resource, name: &str) -> Value {
        let mut d = serde_json::Map::new();
        if !name.is_empty() {
            d.insert("name".into(), json!(name));
        }
        if !resource.group().is_empty() {
            d.insert("group".into(), json!(resource.group()));
        }
        d.insert("kind".into(), json!(resource.plural()));
        Value::Object(d)
    }

    /// `leases.coordination.k8s.io "name" not found`.
    pub(crate) fn not_found(resource: Resource, name: &str) -> Self {
        Self::with_details(
            404,
            "NotFound",
            format!("{} {name:?} not found", resource.qualified()),
            Self::resource_details(resource, name),
        )
    }

    /// `leases.coordination.k8s.io "name" already exists`.
    pub(crate) fn already_exists(resource: Resource, name: &str) -> Self {
        Self::with_details(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", resource.qualified()),
            Self::resource_details(resource, name),
        )
    }

    /// `Operation cannot be fulfilled on leases.coordination.k8s.io "name": <cause>`.
    pub(crate) fn conflict(resource: Resource, name: &str, cause: &str) -> Self {
        Self::with_details(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {cause}",
                resource.qualified()
            ),
            Self::resource_details(resource, name),
        )
    }

    /// `Lease.coordination.k8s.io "name" is invalid: <field errors>`.
    pub(crate) fn invalid(resource: Resource, name: &str, errors: &[FieldError]) -> Self {
        Self::invalid_of(resource.group(), resource.kind(), name, errors)
    }

    /// 422 `Invalid` for any kind (`errors.NewInvalid`): `CreateOptions.meta.k8s.io
    /// "" is invalid: …`; an empty group and kind give `"" is invalid: …`,
    /// the message the server writes for a patch it cannot apply.
    pub(crate) fn invalid_of(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let rendered: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect();
        let joined = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.reason, "message": e.detail, "field": e.field}))
            .collect();
        let mut details = serde_json::Map::new();
        if !name.is_empty() {
            details.insert("name".into(), json!(name));
        }
        if !group.is_empty() {
            details.insert("group".into(), json!(group));
        }
        if !kind.is_empty() {
            details.insert("kind".into(), json!(kind));
        }
        details.insert("causes".into(), Value::Array(causes));
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        Self::with_details(
            422,
            "Invalid",
            format!("{qualified} {name:?} is invalid: {joined}"),
            Value::Object(details),
        )
    }

    /// 400 BadRequest with a free message.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError {
            code: 400,
            reason: "BadRequest",
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// 404 for a path the server does not serve.
    pub(crate) fn no_route() -> Self {
        Self::with_details(
            404,
            "NotFound",
            "the server could not find the requested resource".to_owned(),
            json!({}),
        )
    }

    /// 404 for a path of a kind (`plural` of `group`) or, with no plural, of
    /// an API group that the emulator does not serve: the server's words for
    /// a path it does not know, then where to test such code.
    pub(crate) fn not_served(group: &str, plural: &str) -> Self {
        let mut details = serde_json::Map::new();
        if !group.is_empty() {
            details.insert("group".into(), json!(group));
        }
        let what = match (group, plural) {
            (group, "") => format!("the API group {group:?}"),
            ("", plural) => plural.to_owned(),
            (group, plural) => format!("{plural}.{group}"),
        };
        if !plural.is_empty() {
            details.insert("kind".into(), json!(plural));
        }
        Self::with_details(
            404,
            "NotFound",
            format!(
                "the server could not find the requested resource: {what} is not served by kube-emulator, which serves the kinds of leader election only; test this on kube-apiserver"
            ),
            Value::Object(details),
        )
    }

    /// 405 for a verb the path does not support.
    pub(crate) fn method_not_allowed(method: &str) -> Self {
        ApiError {
            code: 405,
            reason: "MethodNotAllowed",
            message: format!(
                "the server does not allow this method on the requested resource ({method})"
            ),
            details: None,
            retry_after: None,
        }
    }

    /// 415 for a patch type that is not served.
    pub(crate) fn unsupported_media_type(content_type: &str) -> Self {
        ApiError {
            code: 415,
            reason: "UnsupportedMediaType",
            message: format!(
                "the body of the request was in an unknown format ({content_type}) - accepted media types include: {}",
                MEDIA_TYPES.join(", ")
            ),
            details: None,
            retry_after: None,
        }
    }

    /// 415 for a server-side apply patch (`application/apply-patch+yaml`),
    /// which the emulator does not serve: it keeps no `managedFields`.
    pub(crate) fn apply_unsupported(content_type: &str) -> Self {
        ApiError {
            code: 415,
            reason: "UnsupportedMediaType",
            message: format!(
                "server-side apply ({content_type}) is not supported by kube-emulator, which keeps no managedFields - accepted media types include: {}",
                MEDIA_TYPES.join(", ")
            ),
            details: None,
            retry_after: None,
        }
    }

    /// 415 for a request body in a format, or of a kind, the server cannot decode.
    pub(crate) fn unsupported_body(message: String) -> Self {
        ApiError {
            code: 415,
            reason: "UnsupportedMediaType",
            message,
            details: None,
            retry_after: None,
        }
    }

    /// 410 Expired, for a watch from a compacted resourceVersion.
    pub(crate) fn expired(requested: u64, oldest: u64) -> Self {
        ApiError {
            code: 410,
            reason: "Expired",
            message: format!("too old resource version: {requested} ({oldest})"),
            details: None,
            retry_after: None,
        }
    }

    /// 410 Expired, for a `continue` token older than the compacted version.
    pub(crate) fn continue_expired() -> Self {
        ApiError {
            code: 410,
            reason: "Expired",
            message: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".to_owned(),
            details: None,
            retry_after: None,
        }
    }

    /// 504 for a LIST at a version the server has not reached (the real server
    /// waits up to three seconds first; the emulator's store is never behind).
    pub(crate) fn too_large_resource_version(requested: u64, current: u64) -> Self {
        ApiError {
            code: 504,
            reason: "Timeout",
            message: format!("Too large resource version: {requested}, current: {current}"),
            details: Some(
                json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
            ),
            retry_after: Some(1),
        }
    }

    /// An injected failure with a given code (reason chosen as the API server would).
    pub(crate) fn injected(code: u16, retry_after: Option<u32>) -> Self {
        let (reason, message) = match code {
            400 => (
                "BadRequest",
                "the server rejected our request for an unknown reason",
            ),
            401 => ("Unauthorized", "Unauthorized"),
            403 => ("Forbidden", "forbidden: injected by the emulator"),
            404 => (
                "NotFound",
                "the server could not find the requested resource",
            ),
            409 => ("Conflict", "the server reported a conflict"),
            410 => ("Gone", "the requested resource is no longer available"),
            422 => (
                "Invalid",
                "the server rejected our request due to an error in our request",
            ),
            429 => (
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            ),
            500 => (
                "InternalError",
                "an error on the server (\"etcdserver: request timed out\") has prevented the request from succeeding",
            ),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            504 => (
                "Timeout",
                "the server was unable to return a response in the time allotted, but may still be processing the request",
            ),
            _ => ("", "injected failure"),
        };
        let details = retry_after.map(|s| json!({"retryAfterSeconds": s}));
        ApiError {
            code,
            reason,
            message: message.to_owned(),
            details,
            retry_after,
        }
    }

    /// A 403 as RBAC words it.
    pub(crate) fn forbidden(
        user: &str,
        verb: &str,
        resource: Resource,
        namespace: &str,
        name: &str,
    ) -> Self {
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_owned()
        } else {
            format!("in the namespace {namespace:?}")
        };
        let group = if resource.group().is_empty() {
            "\"\"".to_owned()
        } else {
            format!("{:?}", resource.group())
        };
        let what = if name.is_empty() {
            String::new()
        } else {
            format!(" {name:?}")
        };
        Self::with_details(
            403,
            "Forbidden",
            format!(
                "{}{what} is forbidden: User {user:?} cannot {verb} resource {:?} in API group {group} {scope}",
                resource.qualified(),
                resource.plural()
            ),
            Self::resource_details(resource, name),
        )
    }

    /// The `metav1.Status` body.
    pub(crate) fn to_status(&self) -> Value {
        let mut s = serde_json::Map::new();
        s.insert("kind".into(), json!("Status"));
        s.insert("apiVersion".into(), json!("v1"));
        s.insert("metadata".into(), json!({}));
        s.insert("status".into(), json!("Failure"));
        s.insert("message".into(), json!(self.message));
        if !self.reason.is_empty() {
            s.insert("reason".into(), json!(self.reason));
        }
        if let Some(d) = &self.details {
            s.insert("details".into(), d.clone());
        }
        s.insert("code".into(), json!(self.code));
        Value::Object(s)
    }
}

/// The `Success` status the API server answers a DELETE of a Lease or ConfigMap with.
pub(crate) fn delete_success(resource: Resource, name: &str, uid: &str) -> Value {
    let mut details = serde_json::Map::new();
    details.insert("name".into(), json!(name));
    if !resource.group().is_empty() {
        details.insert("group".into(), json!(resource.group()));
    }
    details.insert("kind".into(), json!(resource.plural()));
    if !uid.is_empty() {
        details.insert("uid".into(), json!(uid));
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": Value::Object(details),
    })
}
