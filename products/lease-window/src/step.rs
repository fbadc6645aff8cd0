//! The pure decision step: what one controller does about one Node's
//! maintenance window, given what it observed and the time. No I/O, no clock.

use std::collections::BTreeMap;
use std::time::Duration;

use election_core::{Instant, WallTime};

use crate::error::WindowError;
use crate::names::{NewReason, REASON_ANNOTATION, STATUS_ANNOTATION, Status, WINDOW_ANNOTATION};

/// The controller's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowConfig {
    identity: String,
    padding: Duration,
    clock_skew: Duration,
    max_requeue: Duration,
    retry: Duration,
    request_timeout: Duration,
}

impl WindowConfig {
    /// The defaults for `identity`: padding 30 s, clock skew 1 s, requeue at
    /// least every 30 s, retry after 500 ms, request timeout 5 s.
    pub fn new(identity: impl Into<String>) -> Result<WindowConfig, WindowError> {
        let identity = identity.into();
        if identity.is_empty() {
            return Err(WindowError::EmptyIdentity);
        }
        Ok(WindowConfig {
            identity,
            padding: Duration::from_secs(30),
            clock_skew: Duration::from_secs(1),
            max_requeue: Duration::from_secs(30),
            retry: Duration::from_millis(500),
            request_timeout: Duration::from_secs(5),
        })
    }

    /// The time added to the requested window in the Lease's duration: the
    /// time the holder has, after the window, to undo the cordon and the drain.
    /// A whole number of seconds, at least one.
    pub fn with_padding(mut self, padding: Duration) -> Result<WindowConfig, WindowError> {
        if padding < Duration::from_secs(1) || padding.subsec_nanos() != 0 {
            return Err(WindowError::BadPadding(padding));
        }
        self.padding = padding;
        Ok(self)
    }

    /// The largest difference between two controllers' wall clocks that the
    /// window tolerates: another's Lease counts as valid for this much longer
    /// than its `acquireTime + leaseDurationSeconds` (docs/design.md §11). Zero
    /// gives the reference's plain rule.
    pub fn with_clock_skew(mut self, skew: Duration) -> WindowConfig {
        self.clock_skew = skew;
        self
    }

    /// The longest the driver waits between two looks at a Node it is
    /// waiting for or working on.
    pub fn with_max_requeue(mut self, every: Duration) -> WindowConfig {
        self.max_requeue = every.max(Duration::from_millis(1));
        self
    }

    /// How long the driver waits before running the step again after a failed
    /// write.
    pub fn with_retry(mut self, retry: Duration) -> WindowConfig {
        self.retry = retry;
        self
    }

    /// The bound of one API call when no window deadline is nearer.
    pub fn with_request_timeout(mut self, timeout: Duration) -> WindowConfig {
        self.request_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The controller's identity, written as the Lease's holder.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// See [`with_padding`](Self::with_padding).
    pub fn padding(&self) -> Duration {
        self.padding
    }

    /// See [`with_clock_skew`](Self::with_clock_skew).
    pub fn clock_skew(&self) -> Duration {
        self.clock_skew
    }

    /// See [`with_max_requeue`](Self::with_max_requeue).
    pub fn max_requeue(&self) -> Duration {
        self.max_requeue
    }

    /// See [`with_retry`](Self::with_retry).
    pub fn retry(&self) -> Duration {
        self.retry
    }

    /// See [`with_request_timeout`](Self::with_request_timeout).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    fn padding_seconds(&self) -> u64 {
        self.padding.as_secs()
    }
}

/// The window Lease as observed (a `coordination.k8s.io/v1` Lease named after
/// the Node), the fields the step reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaseView {
    /// `metadata.resourceVersion`: the compare-and-swap precondition of writes.
    pub version: String,
    /// `spec.holderIdentity`; absent or empty once a window ended.
    pub holder: Option<String>,
    /// `spec.acquireTime`: the window's start, on the holder's wall clock.
    pub acquire_time: Option<WallTime>,
    /// `spec.leaseDurationSeconds`: the window plus the padding.
    pub duration_seconds: Option<i32>,
    /// `spec.leaseTransitions`.
    pub transitions: Option<i32>,
}

/// The controller's own record of its last window write: what it wrote as
/// `acquireTime`, and when, on its monotonic clock, that time was stamped (just
/// before the write was sent). Kept by the driver, lost on a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnWrite {
    /// The `acquireTime` written.
    pub acquire_time: WallTime,
    /// The local monotonic instant at which it was stamped.
    pub sent_at: Instant,
}

/// The time, on both clocks, read once per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// The local monotonic clock (counting during suspend).
    pub mono: Instant,
    /// The local wall clock.
    pub wall: WallTime,
}

/// Everything one step looks at.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The Node's annotations.
    pub annotations: &'a BTreeMap<String, String>,
    /// The Node's `spec.unschedulable`.
    pub unschedulable: bool,
    /// The window Lease, if it exists.
    pub lease: Option<&'a LeaseView>,
    /// This controller's record of its last window write, if it has one.
    pub own: Option<&'a OwnWrite>,
    /// The time.
    pub now: Now,
}

/// A write to the window Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseWrite {
    /// Create the Lease: holder this controller, `acquireTime` = `renewTime` =
    /// `acquire_time`, `leaseTransitions` 0, owned by the Node.
    Create {
        /// The window's start on the wall clock.
        acquire_time: WallTime,
        /// The monotonic instant `acquire_time` was read at: the window is
        /// counted from it.
        stamped_at: Instant,
        /// `leaseDurationSeconds`.
        duration_seconds: i32,
    },
    /// Take the Lease for a new window, by compare-and-swap on `version`.
    Take {
        /// The precondition.
        version: String,
        /// The window's start on the wall clock.
        acquire_time: WallTime,
        /// The monotonic instant `acquire_time` was read at.
        stamped_at: Instant,
        /// `leaseDurationSeconds`.
        duration_seconds: i32,
        /// `leaseTransitions`.
        transitions: i32,
    },
    /// Change the duration of the window held, by compare-and-swap; the
    /// `acquireTime` stays.
    SetDuration {
        /// The precondition.
        version: String,
        /// The new `leaseDurationSeconds`.
        duration_seconds: i32,
    },
    /// End the window, by compare-and-swap: the holder is removed and
    /// `leaseDurationSeconds` set to 1 (the API refuses 0, the reference's
    /// marker; an empty holder is this project's "ended", as a release is in
    /// an election).
    End {
        /// The precondition.
        version: String,
    },
}

/// One write the step asks for, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// A write to the window Lease.
    Lease(LeaseWrite),
    /// Set the status annotations on the Node.
    Status(Status),
    /// Remove the request annotation from the Node, only while it still
    /// holds the value the step decided on: a request the asker changed since
    /// is theirs, and the next step decides on it.
    RemoveRequest {
        /// The request annotation's value the step saw.
        seen: String,
    },
    /// Set `spec.unschedulable: true` on the Node.
    Cordon,
    /// Clear `spec.unschedulable` on the Node.
    Uncordon,
    /// Start draining the Node (idempotent: the driver starts a drain once).
    StartDrain,
    /// Cancel the drain (idempotent).
    CancelDrain,
}

impl Write {
    /// Whether the write creates or takes a window (and so may be sent without
    /// a window held: it is a compare-and-swap).
    pub fn takes_window(&self) -> bool {
        matches!(
            self,
            Write::Lease(LeaseWrite::Create { .. } | LeaseWrite::Take { .. })
        )
    }
}

/// What the step decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    /// The status this controller reports for the Node (`None`: nothing to
    /// report, no window of interest).
    pub status: Option<Status>,
    /// The writes, in order; the driver stops at the first that fails.
    pub writes: Vec<Write>,
    /// No write but [`Write::takes_window`] may be sent at or after this
    /// monotonic instant: the end of the window (cordon, drain) or of the
    /// lease time left (teardown). After a window is created or taken, the
    /// deadline for the writes that follow is its own end (see
    /// [`LeaseWrite::Create::stamped_at`]).
    pub deadline: Option<Instant>,
    /// When to run the step again (`None`: on the next change only). Equal to
    /// the step's `now` when the writes should be followed by another look.
    pub next_check: Option<Instant>,
    /// Bad input met on the way, and what was decided about it.
    pub warnings: Vec<WindowError>,
}

/// The window Lease, judged.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Judged {
    Absent,
    /// No holder (or a duration of 0, as the reference writes): ended.
    Ended {
        version: String,
        transitions: i32,
    },
    /// Ours, with lease time left.
    OursValid {
        version: String,
        remaining: Duration,
        duration_seconds: i32,
        transitions: i32,
    },
    /// Ours, past its end.
    OursExpired {
        version: String,
        transitions: i32,
    },
    /// Another's, valid (with the skew margin) for `remaining`.
    OtherValid {
        remaining: Duration,
    },
    /// Another's, past its end (and the skew margin).
    OtherExpired {
        version: String,
        transitions: i32,
    },
}

fn wall_nanos(t: WallTime) -> i128 {
    i128::from(t.unix_secs) * 1_000_000_000 + i128::from(t.nanos)
}

/// `later - earlier` as a duration, zero if `later` is not later.
fn wall_until(earlier_nanos: i128, later_nanos: i128) -> Duration {
    let d = later_nanos.saturating_sub(earlier_nanos);
    if d <= 0 {
        Duration::ZERO
    } else {
        Duration::from_nanos(u64::try_from(d).unwrap_or(u64::MAX))
    }
}

fn judge(config: &WindowConfig, input: &Input<'_>, warnings: &mut Vec<WindowError>) -> Judged {
    let Some(lease) = input.lease else {
        return Judged::Absent;
    };
    let version = lease.version.clone();
    let transitions = lease.transitions.unwrap_or(0).max(0);
    let holder = lease.holder.as_deref().unwrap_or("");
    if holder.is_empty() || lease.duration_seconds == Some(0) {
        return Judged::Ended {
            version,
            transitions,
        };
    }
    let ours = holder == config.identity;
    let (acquire, duration) = match (lease.acquire_time, lease.duration_seconds) {
        (Some(a), Some(d)) if d > 0 => (a, Duration::from_secs(u64::from(d.unsigned_abs()))),
        (a, d) => {
            let problem = if a.is_none() {
                "no acquireTime"
            } else if d.is_none() {
                "no leaseDurationSeconds"
            } else {
                "negative leaseDurationSeconds"
            };
            warnings.push(WindowError::MalformedLease {
                holder: holder.to_owned(),
                problem,
            });
            return if ours {
                Judged::OursExpired {
                    version,
                    transitions,
                }
            } else {
                Judged::OtherExpired {
                    version,
                    transitions,
                }
            };
        }
    };
    let now_wall = wall_nanos(input.now.wall);
    let skew = i128::try_from(config.clock_skew.as_nanos()).unwrap_or(i128::MAX);
    let end_wall = wall_nanos(acquire)
        .saturating_add(i128::try_from(duration.as_nanos()).unwrap_or(i128::MAX));
    if ours {
        // Our own window is counted on our monotonic clock from the instant its
        // acquireTime was stamped, when we have that record; after a restart
        // we have only our wall clock, and then we end early by the skew.
        let remaining = match input.own {
            Some(own) if own.acquire_time == acquire => {
                (own.sent_at + duration).saturating_duration_since(input.now.mono)
            }
            _ => wall_until(now_wall, end_wall.saturating_sub(skew)),
        };
        if remaining.is_zero() {
            Judged::OursExpired {
                version,
                transitions,
            }
        } else {
            Judged::OursValid {
                version,
                remaining,
                duration_seconds: lease.duration_seconds.unwrap_or(0),
                transitions,
            }
        }
    } else {
        let remaining = wall_until(now_wall, end_wall.saturating_add(skew));
        if remaining.is_zero() {
            Judged::OtherExpired {
                version,
                transitions,
            }
        } else {
            Judged::OtherValid { remaining }
        }
    }
}

/// Reads the request annotation: `Ok(None)` when absent.
pub fn parse_window(annotations: &BTreeMap<String, String>) -> Result<Option<u64>, WindowError> {
    let Some(value) = annotations.get(WINDOW_ANNOTATION) else {
        return Ok(None);
    };
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(WindowError::MalformedWindow {
            value: value.clone(),
        }),
    }
}

/// Runs one step: what to write about one Node, and when to look again.
///
/// The rules (docs/design.md §11), with the request annotation present:
/// another's valid window → [`Status::Waiting`]; no Lease → create it
/// (`new`, `create`); another's expired Lease → take it, transitions + 1
/// (`new`, `acquired`); an ended Lease → take it (`new`, `reused`); our own
/// Lease past its end → a new window (`new`, `stale`); status `ended` but the
/// request back while our Lease is held → a new window (`new`, `recreate`); a
/// duration other than the window plus the padding → update it (`updated`);
/// within the padding of the end → remove the request, status `ended`,
/// uncordon, cancel the drain, end the Lease, each only while lease time
/// remains; otherwise cordon, drain, status `active` until the window's end.
/// With no request: our valid window is torn down the same way; an expired
/// window nobody ended is taken for the padding alone, to tear it down.
pub fn step(config: &WindowConfig, input: &Input<'_>) -> Decision {
    let mut d = Decision::default();
    let now = input.now.mono;
    let request = match parse_window(input.annotations) {
        Ok(r) => r,
        Err(e) => {
            d.warnings.push(e);
            None
        }
    };
    let request =
        request.and_then(
            |w| match i32::try_from(w.saturating_add(config.padding_seconds())) {
                Ok(total) => Some(total),
                Err(_) => {
                    d.warnings.push(WindowError::WindowTooLong { seconds: w });
                    None
                }
            },
        );
    let status_value = input.annotations.get(STATUS_ANNOTATION).map(String::as_str);
    let status = Status::parse(
        status_value,
        input.annotations.get(REASON_ANNOTATION).map(String::as_str),
    );
    if let (Some(value), None) = (status_value, status) {
        d.warnings.push(WindowError::UnknownStatus {
            value: value.to_owned(),
        });
    }
    let judged = judge(config, input, &mut d.warnings);
    // A Lease keeps microseconds: stamp what it will give back, so that our
    // own record matches the Lease we read later.
    let stamp = WallTime::new(
        input.now.wall.unix_secs,
        input.now.wall.nanos / 1_000 * 1_000,
    );
    let padding_secs = i32::try_from(config.padding_seconds()).unwrap_or(i32::MAX);
    let take = |d: &mut Decision, version: String, duration_seconds: i32, transitions: i32| {
        d.writes.push(Write::Lease(LeaseWrite::Take {
            version,
            acquire_time: stamp,
            stamped_at: now,
            duration_seconds,
            transitions,
        }));
    };
    let new_window = |d: &mut Decision, reason: NewReason| {
        d.writes.push(Write::Status(Status::New(reason)));
        d.status = Some(Status::New(reason));
        d.next_check = Some(now);
    };
    match (request, judged) {
        (Some(_), Judged::OtherValid { remaining }) => {
            d.status = Some(Status::Waiting);
            d.next_check = Some(now + remaining.min(config.max_requeue));
        }
        (Some(total), Judged::Absent) => {
            d.writes.push(Write::Lease(LeaseWrite::Create {
                acquire_time: stamp,
                stamped_at: now,
                duration_seconds: total,
            }));
            new_window(&mut d, NewReason::Create);
        }
        (
            Some(total),
            Judged::OtherExpired {
                version,
                transitions,
            },
        ) => {
            take(&mut d, version, total, transitions.saturating_add(1));
            new_window(&mut d, NewReason::Acquired);
        }
        (
            Some(total),
            Judged::Ended {
                version,
                transitions,
            },
        ) => {
            take(&mut d, version, total, transitions);
            new_window(&mut d, NewReason::Reused);
        }
        (
            Some(total),
            Judged::OursExpired {
                version,
                transitions,
            },
        ) => {
            take(&mut d, version, total, transitions);
            new_window(&mut d, NewReason::Stale);
        }
        (
            Some(total),
            Judged::OursValid {
                version,
                remaining,
                duration_seconds,
                transitions,
            },
        ) => {
            if status == Some(Status::Ended) {
                take(&mut d, version, total, transitions);
                new_window(&mut d, NewReason::Recreate);
            } else if duration_seconds != total {
                d.writes.push(Write::Lease(LeaseWrite::SetDuration {
                    version,
                    duration_seconds: total,
                }));
                d.writes.push(Write::Status(Status::Updated));
                d.status = Some(Status::Updated);
                d.deadline = Some(now + remaining);
                d.next_check = Some(now);
            } else if remaining <= config.padding {
                teardown(&mut d, input, status, version, now, remaining, true, config);
            } else {
                let window_left = remaining - config.padding;
                if !input.unschedulable {
                    d.writes.push(Write::Cordon);
                }
                d.writes.push(Write::StartDrain);
                if status != Some(Status::Active) {
                    d.writes.push(Write::Status(Status::Active));
                }
                d.status = Some(Status::Active);
                d.deadline = Some(now + window_left);
                d.next_check = Some(now + window_left.min(config.max_requeue));
            }
        }
        (
            None,
            Judged::OursValid {
                version, remaining, ..
            },
        ) => {
            teardown(
                &mut d, input, status, version, now, remaining, false, config,
            );
        }
        (
            None,
            Judged::OursExpired {
                version,
                transitions,
            },
        ) => {
            // Lost before the teardown was done: a padding-long window to do it.
            take(&mut d, version, padding_secs, transitions);
            d.next_check = Some(now);
        }
        (
            None,
            Judged::OtherExpired {
                version,
                transitions,
            },
        ) => {
            take(&mut d, version, padding_secs, transitions.saturating_add(1));
            d.next_check = Some(now);
        }
        (None, Judged::OtherValid { remaining }) => {
            // Another is tearing its window down; look again once it should
            // have, in case it never does.
            d.next_check = Some(now + remaining.min(config.max_requeue));
        }
        (None, Judged::Absent | Judged::Ended { .. }) => {
            // No window, none asked for: nothing to report (the Node's status
            // is the last holder's).
        }
    }
    d
}

/// Ends the window held: each write only while lease time remains.
#[allow(clippy::too_many_arguments)]
fn teardown(
    d: &mut Decision,
    input: &Input<'_>,
    status: Option<Status>,
    version: String,
    now: Instant,
    remaining: Duration,
    remove_request: bool,
    config: &WindowConfig,
) {
    if remove_request && let Some(seen) = input.annotations.get(WINDOW_ANNOTATION) {
        d.writes.push(Write::RemoveRequest { seen: seen.clone() });
    }
    if status != Some(Status::Ended) {
        d.writes.push(Write::Status(Status::Ended));
    }
    if input.unschedulable {
        d.writes.push(Write::Uncordon);
    }
    d.writes.push(Write::CancelDrain);
    d.writes.push(Write::Lease(LeaseWrite::End { version }));
    d.status = Some(Status::Ended);
    d.deadline = Some(now + remaining);
    d.next_check = Some(now + config.retry.min(remaining));
}
