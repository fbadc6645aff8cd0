//! Typed errors: bad configuration, bad input (annotations, Leases), and the
//! driver's failures.

use std::time::Duration;

/// Bad configuration or bad input to the decision step. The step never fails on
/// input: it reports these as warnings in its [`Decision`](crate::Decision) and
/// decides as the variant's documentation says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// The controller's identity is empty.
    #[error("the controller's identity is empty")]
    EmptyIdentity,
    /// The padding is not a whole number of seconds of at least one second.
    #[error("the padding must be a whole number of seconds, at least 1 s: {0:?}")]
    BadPadding(Duration),
    /// The request annotation is not a positive decimal integer. Decided as if
    /// there were no request (a window held ends).
    #[error("the window request {value:?} is not a positive number of seconds")]
    MalformedWindow {
        /// The annotation's value.
        value: String,
    },
    /// The requested window plus the padding does not fit a Lease's
    /// `leaseDurationSeconds` (a 32-bit integer). Decided as if there were no
    /// request.
    #[error("the window request of {seconds} s plus the padding exceeds a Lease's duration")]
    WindowTooLong {
        /// The requested seconds.
        seconds: u64,
    },
    /// The status annotation holds an unknown value. Decided as if there were
    /// no status.
    #[error("unknown maintenance status {value:?}")]
    UnknownStatus {
        /// The annotation's value.
        value: String,
    },
    /// The window Lease names a holder but lacks a field needed to judge it (or
    /// has a negative one). Decided as if it had expired: it is taken over by
    /// compare-and-swap.
    #[error("malformed window Lease held by {holder:?}: {problem}")]
    MalformedLease {
        /// The holder it names.
        holder: String,
        /// What is wrong (`no acquireTime`, `negative leaseDurationSeconds`).
        problem: &'static str,
    },
}

/// Why one reconcile of the driver failed; it is retried after
/// [`WindowConfig::retry`](crate::WindowConfig::retry).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// An API call failed.
    #[error("{what}: {source}")]
    Api {
        /// The call (`patch node worker-1`).
        what: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// The window's lease time ran out before this write could be sent: it was
    /// not sent.
    #[error("{what}: not sent, the window's lease time ran out")]
    OutOfTime {
        /// The write.
        what: String,
    },
    /// A write was not answered within the time left (or the request timeout).
    #[error("{what}: no answer within {after:?}")]
    Timeout {
        /// The write.
        what: String,
        /// How long it waited.
        after: Duration,
    },
    /// The user's drainer failed.
    #[error("drain of {node}: {message}")]
    Drain {
        /// The Node.
        node: String,
        /// The drainer's message.
        message: String,
    },
}
