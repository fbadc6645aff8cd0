//! Classification of Kubernetes API failures into [`LockError`]s, by what the
//! elector must do about them.
//!
//! | answer | class |
//! |---|---|
//! | 409 `AlreadyExists` | [`LockError::AlreadyExists`] |
//! | 409 otherwise | [`LockError::Conflict`] |
//! | 404 of the object | [`LockError::NotFound`] |
//! | 404 of the namespace | [`LockError::Invalid`] naming the namespace (docs/faults.md A5) |
//! | 401, 403 | [`LockError::Forbidden`] naming verb and resource |
//! | 400, 422, other 4xx | [`LockError::Invalid`] |
//! | 429, 503 | [`LockError::Transient`] with the server's retry-after |
//! | 500, 504, other 5xx | [`LockError::Unknown`] after a write, [`LockError::Transient`] after a read |
//! | connection refused, connect timeout | [`LockError::Transient`] (nothing was sent) |
//! | reset after sending, request timeout, unreadable answer | [`LockError::Unknown`] |

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use election_core::LockError;
use kube::core::Status;

/// The API verb of a call, for error messages (RBAC speaks in verbs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// `get`.
    Get,
    /// `create`.
    Create,
    /// `update` (a PUT, or a patch with a resourceVersion precondition).
    Update,
    /// `list`.
    List,
    /// `watch`.
    Watch,
    /// `delete`.
    Delete,
}

impl Verb {
    /// Whether the call writes: a failure with an unknown outcome then may have
    /// been applied.
    pub fn is_write(self) -> bool {
        matches!(self, Verb::Create | Verb::Update | Verb::Delete)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verb::Get => "get",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Delete => "delete",
        })
    }
}

/// The object a call is about: used to tell a missing object from a missing
/// namespace, and to name the resource in error messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// The plural resource with its group, as RBAC names it: `leases.coordination.k8s.io`,
    /// `configmaps`, `events`.
    pub resource: &'static str,
    /// The namespace.
    pub namespace: String,
    /// The object's name (empty for a generated name).
    pub name: String,
}

impl Target {
    /// A target `resource` named `name` in `namespace`.
    pub fn new(
        resource: &'static str,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Target {
            resource,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} \"{}/{}\"", self.resource, self.namespace, self.name)
    }
}

/// Classifies a `kube` client error of the call `verb` on `target`.
pub fn classify(err: &kube::Error, verb: Verb, target: &Target) -> LockError {
    match err {
        kube::Error::Api(status) => classify_status(status, verb, target),
        kube::Error::Auth(e) => LockError::Forbidden {
            message: format!("cannot {verb} {target}: credentials: {e}"),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
            classify_transport(err, verb, target)
        }
        kube::Error::SerdeError(e) => LockError::unknown(format!(
            "{verb} {target}: the answer could not be read: {e}"
        )),
        kube::Error::FromUtf8(e) => LockError::unknown(format!(
            "{verb} {target}: the answer could not be read: {e}"
        )),
        other => LockError::Invalid {
            message: format!("{verb} {target}: {other}"),
        },
    }
}

/// Classifies an API `Status` answer of the call `verb` on `target`.
pub fn classify_status(status: &Status, verb: Verb, target: &Target) -> LockError {
    let msg = if status.message.is_empty() {
        status.reason.clone()
    } else {
        status.message.clone()
    };
    let retry_after = status
        .details
        .as_ref()
        .map(|d| d.retry_after_seconds)
        .filter(|s| *s > 0)
        .map(|s| Duration::from_secs(u64::from(s)));
    match status.code {
        409 if status.reason == "AlreadyExists"
            || (verb == Verb::Create && status.reason.is_empty()) =>
        {
            LockError::AlreadyExists
        }
        409 => LockError::Conflict,
        404 if is_missing_namespace(status, target) => LockError::Invalid {
            message: format!(
                "namespace \"{}\" does not exist (needed for {target}): {msg}",
                target.namespace
            ),
        },
        404 if is_other_object(status, target) => LockError::Invalid {
            message: format!("{verb} {target}: {msg}"),
        },
        404 => LockError::NotFound,
        401 => LockError::Forbidden {
            message: format!("unauthorized to {verb} {target} (401): {msg}"),
        },
        403 => LockError::Forbidden {
            message: format!("forbidden to {verb} {target} (403): {msg}"),
        },
        429 => LockError::Transient {
            message: format!("{verb} {target}: too many requests (429): {msg}"),
            retry_after,
        },
        503 => LockError::Transient {
            message: format!("{verb} {target}: service unavailable (503): {msg}"),
            retry_after,
        },
        code @ 500..=599 if verb.is_write() => LockError::unknown(format!(
            "{verb} {target}: server error ({code}) after sending, the write may have happened: {msg}"
        )),
        code @ 500..=599 => LockError::Transient {
            message: format!("{verb} {target}: server error ({code}): {msg}"),
            retry_after,
        },
        code => LockError::Invalid {
            message: format!(
                "{verb} {target}: rejected ({code} {}): {msg}",
                status.reason
            ),
        },
    }
}

/// A 404 about the namespace rather than the object: the API server answers a write
/// into a missing namespace with `namespaces "x" not found`.
fn is_missing_namespace(status: &Status, target: &Target) -> bool {
    if let Some(d) = &status.details
        && d.kind == "namespaces"
    {
        return true;
    }
    status
        .message
        .contains(&format!("namespaces \"{}\" not found", target.namespace))
}

/// A 404 naming some other kind of object than the target (a missing API group, say).
fn is_other_object(status: &Status, target: &Target) -> bool {
    let plural = target.resource.split('.').next().unwrap_or(target.resource);
    match &status.details {
        Some(d) if !d.kind.is_empty() => d.kind != plural && !d.kind.eq_ignore_ascii_case(plural),
        _ => false,
    }
}

/// Transport failures: refused or timed-out connects never reached the server;
/// anything after that may have.
fn classify_transport(err: &kube::Error, verb: Verb, target: &Target) -> LockError {
    if is_connect_error(err) {
        LockError::transient(format!(
            "{verb} {target}: could not connect to the API server: {}",
            chain(err)
        ))
    } else {
        LockError::unknown(format!(
            "{verb} {target}: connection failed after sending: {}",
            chain(err)
        ))
    }
}

/// Whether the error happened while connecting (so the request was never sent).
pub fn is_connect_error(err: &(dyn StdError + 'static)) -> bool {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(h) = e.downcast_ref::<hyper_util::client::legacy::Error>()
            && h.is_connect()
        {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
            )
        {
            return true;
        }
        cur = e.source();
    }
    false
}

/// The error and its sources, joined with ": ".
pub fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut s = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let m = e.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = e.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::response::StatusDetails;

    fn target() -> Target {
        Target::new("leases.coordination.k8s.io", "team-a", "ctl")
    }

    fn status(code: u16, reason: &str, message: &str, kind: &str) -> Status {
        let mut s = Status::failure(message, reason).with_code(code);
        if !kind.is_empty() {
            s.details = Some(StatusDetails {
                name: "x".into(),
                group: String::new(),
                kind: kind.into(),
                uid: String::new(),
                causes: vec![],
                retry_after_seconds: 0,
            });
        }
        s
    }

    #[test]
    fn conflicts_and_already_exists_are_told_apart() {
        let t = target();
        let conflict = status(409, "Conflict", "the object has been modified", "leases");
        assert_eq!(
            classify_status(&conflict, Verb::Update, &t),
            LockError::Conflict
        );
        let exists = status(409, "AlreadyExists", "already exists", "leases");
        assert_eq!(
            classify_status(&exists, Verb::Create, &t),
            LockError::AlreadyExists
        );
    }

    #[test]
    fn a5_missing_namespace_is_invalid_and_names_it() {
        let t = target();
        let ns = status(
            404,
            "NotFound",
            "namespaces \"team-a\" not found",
            "namespaces",
        );
        match classify_status(&ns, Verb::Create, &t) {
            LockError::Invalid { message } => assert!(message.contains("\"team-a\""), "{message}"),
            other => panic!("expected Invalid, got {other:?}"),
        }
        let obj = status(
            404,
            "NotFound",
            "leases.coordination.k8s.io \"ctl\" not found",
            "leases",
        );
        assert_eq!(classify_status(&obj, Verb::Get, &t), LockError::NotFound);
        let bare = status(404, "NotFound", "not found", "");
        assert_eq!(classify_status(&bare, Verb::Get, &t), LockError::NotFound);
    }

    #[test]
    fn a6_forbidden_names_verb_and_resource() {
        let e = classify_status(
            &status(403, "Forbidden", "RBAC", ""),
            Verb::Update,
            &target(),
        );
        match e {
            LockError::Forbidden { message } => {
                assert!(message.contains("update"), "{message}");
                assert!(message.contains("leases.coordination.k8s.io"), "{message}");
                assert!(message.contains("team-a/ctl"), "{message}");
            }
            other => panic!("expected Forbidden, got {other:?}"),
        }
    }

    #[test]
    fn a9_too_many_requests_keeps_retry_after() {
        let mut s = status(429, "TooManyRequests", "slow down", "leases");
        s.details.as_mut().unwrap().retry_after_seconds = 7;
        match classify_status(&s, Verb::Update, &target()) {
            LockError::Transient { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(7)))
            }
            other => panic!("expected Transient, got {other:?}"),
        }
    }

    #[test]
    fn a10_a11_server_errors_after_writes_are_unknown_except_503() {
        let t = target();
        for code in [500, 504] {
            let s = status(code, "InternalError", "etcd timeout", "");
            assert!(classify_status(&s, Verb::Update, &t).outcome_unknown());
            assert!(matches!(
                classify_status(&s, Verb::Get, &t),
                LockError::Transient { .. }
            ));
        }
        let s = status(503, "ServiceUnavailable", "restarting", "");
        assert!(matches!(
            classify_status(&s, Verb::Update, &t),
            LockError::Transient { .. }
        ));
    }

    #[test]
    fn a8_unprocessable_is_invalid() {
        let s = status(
            422,
            "Invalid",
            "leaseDurationSeconds: must be greater than 0",
            "leases",
        );
        assert!(matches!(
            classify_status(&s, Verb::Update, &target()),
            LockError::Invalid { .. }
        ));
    }

    #[test]
    fn connection_refused_is_a_connect_error() {
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(is_connect_error(&io));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(!is_connect_error(&reset));
        let e = kube::Error::ReadEvents(reset);
        assert!(classify(&e, Verb::Update, &target()).outcome_unknown());
    }
}
