//! The annotation keys on the Node and the status values the controller writes.

use std::fmt;

/// The request, on the Node: a maintenance window of this many seconds, a
/// positive decimal integer (`"20"`). Set by whoever asks for maintenance;
/// removed by the controller when the window ends (or by the asker, to end it
/// early).
pub const WINDOW_ANNOTATION: &str = "kube-elector.dev/maintenance-window-seconds";

/// The progress of the window, on the Node: one of the values of
/// [`Status::as_str`] (`new`, `updated`, `active`, `ended`). Written only by the
/// controller that holds the window Lease (a waiting controller reports
/// [`Status::Waiting`] through its driver and writes nothing, so that two
/// controllers never overwrite each other's status).
pub const STATUS_ANNOTATION: &str = "kube-elector.dev/maintenance-status";

/// Why a window is `new`, on the Node beside [`STATUS_ANNOTATION`]: one of the
/// values of [`NewReason::as_str`]; removed with any other status.
pub const REASON_ANNOTATION: &str = "kube-elector.dev/maintenance-reason";

/// Why a new window was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NewReason {
    /// There was no window Lease: it was created (`create`).
    Create,
    /// Another controller's Lease had expired: it was taken over, its
    /// `leaseTransitions` incremented (`acquired`).
    Acquired,
    /// The Lease was ended (released) by the previous window: it was taken
    /// again (`reused`).
    Reused,
    /// This controller's own Lease was past its end, from a previous window: a
    /// new window starts on it (`stale`).
    Stale,
    /// The status said `ended` but the request annotation was created again
    /// while the old Lease was still held: a new window (`recreate`).
    Recreate,
}

impl NewReason {
    /// The value written to [`REASON_ANNOTATION`].
    pub fn as_str(self) -> &'static str {
        match self {
            NewReason::Create => "create",
            NewReason::Acquired => "acquired",
            NewReason::Reused => "reused",
            NewReason::Stale => "stale",
            NewReason::Recreate => "recreate",
        }
    }
}

/// The state of a Node's maintenance window, as one controller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Another controller holds a valid window Lease; this one waits. Reported,
    /// never written to the Node.
    Waiting,
    /// A window Lease was just written; cordon and drain come next.
    New(NewReason),
    /// The requested window changed: the Lease's duration was updated.
    Updated,
    /// The Node is cordoned and draining, within its window.
    Active,
    /// The window is over (or was cancelled): the request annotation is removed
    /// and the Node uncordoned, within the lease time left.
    Ended,
}

impl Status {
    /// The value written to [`STATUS_ANNOTATION`].
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Waiting => "waiting",
            Status::New(_) => "new",
            Status::Updated => "updated",
            Status::Active => "active",
            Status::Ended => "ended",
        }
    }

    /// The value written to [`REASON_ANNOTATION`], if any.
    pub fn reason(self) -> Option<NewReason> {
        match self {
            Status::New(r) => Some(r),
            _ => None,
        }
    }

    /// Reads the status annotations; `None` for an absent or unknown status (an
    /// unknown reason reads as `create`).
    pub fn parse(status: Option<&str>, reason: Option<&str>) -> Option<Status> {
        Some(match status? {
            "waiting" => Status::Waiting,
            "updated" => Status::Updated,
            "active" => Status::Active,
            "ended" => Status::Ended,
            "new" => Status::New(match reason {
                Some("acquired") => NewReason::Acquired,
                Some("reused") => NewReason::Reused,
                Some("stale") => NewReason::Stale,
                Some("recreate") => NewReason::Recreate,
                _ => NewReason::Create,
            }),
            _ => return None,
        })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::New(r) => write!(f, "new ({})", r.as_str()),
            other => f.write_str(other.as_str()),
        }
    }
}
