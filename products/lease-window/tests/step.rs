//! Every branch of the window flow as a table test of the pure step.

use std::collections::BTreeMap;
use std::time::Duration;

use election_core::{Instant, WallTime};
use lease_window::{
    Decision, Input, LeaseView, LeaseWrite, NewReason, Now, OwnWrite, REASON_ANNOTATION,
    STATUS_ANNOTATION, Status, WINDOW_ANNOTATION, WindowConfig, WindowError, Write, step,
};

const ME: &str = "me";
/// The step's monotonic now.
const T0: u64 = 1_000;
/// The step's wall-clock now, seconds since the epoch.
const W0: i64 = 1_800_000_000;

fn config() -> WindowConfig {
    WindowConfig::new(ME)
        .expect("identity")
        .with_padding(Duration::from_secs(30))
        .expect("padding")
        .with_clock_skew(Duration::from_secs(1))
        .with_max_requeue(Duration::from_secs(30))
}

/// A wall time `secs_ago` seconds (may be fractional) before `W0`.
fn wall_ago(secs_ago: f64) -> WallTime {
    let nanos = (W0 as i128) * 1_000_000_000 - (secs_ago * 1e9) as i128;
    WallTime::new(
        (nanos.div_euclid(1_000_000_000)) as i64,
        nanos.rem_euclid(1_000_000_000) as u32,
    )
}

fn mono_ago(secs_ago: f64) -> Instant {
    Instant::from_secs(T0) - Duration::from_secs_f64(secs_ago)
}

fn lease(holder: Option<&str>, acquired_ago: f64, duration: i32, transitions: i32) -> LeaseView {
    LeaseView {
        version: "7".into(),
        holder: holder.map(str::to_owned),
        acquire_time: Some(wall_ago(acquired_ago)),
        duration_seconds: Some(duration),
        transitions: Some(transitions),
    }
}

/// Our record of having written the window `acquired_ago` seconds ago (both clocks agree).
fn own(acquired_ago: f64) -> OwnWrite {
    OwnWrite {
        acquire_time: wall_ago(acquired_ago),
        sent_at: mono_ago(acquired_ago),
    }
}

/// One row of the table.
struct Case {
    name: &'static str,
    window: Option<&'static str>,
    status: Option<&'static str>,
    unschedulable: bool,
    lease: Option<LeaseView>,
    own: Option<OwnWrite>,
    /// Expected: the reported status, the writes in shorthand, the deadline
    /// (seconds after now), the warnings.
    reported: Option<Status>,
    writes: &'static [&'static str],
    deadline: Option<f64>,
    warnings: usize,
}

impl Default for Case {
    fn default() -> Self {
        Case {
            name: "",
            window: Some("20"),
            status: None,
            unschedulable: false,
            lease: None,
            own: None,
            reported: None,
            writes: &[],
            deadline: None,
            warnings: 0,
        }
    }
}

fn shorthand(w: &Write) -> String {
    match w {
        Write::Lease(LeaseWrite::Create {
            duration_seconds, ..
        }) => format!("create({duration_seconds})"),
        Write::Lease(LeaseWrite::Take {
            duration_seconds,
            transitions,
            version,
            ..
        }) => format!("take@{version}({duration_seconds}, t{transitions})"),
        Write::Lease(LeaseWrite::SetDuration {
            duration_seconds,
            version,
        }) => format!("duration@{version}({duration_seconds})"),
        Write::Lease(LeaseWrite::End { version }) => format!("end@{version}"),
        Write::Status(s) => match s.reason() {
            Some(r) => format!("status:{}/{}", s.as_str(), r.as_str()),
            None => format!("status:{}", s.as_str()),
        },
        Write::RemoveRequest { .. } => "remove-request".into(),
        Write::Cordon => "cordon".into(),
        Write::Uncordon => "uncordon".into(),
        Write::StartDrain => "drain".into(),
        Write::CancelDrain => "cancel-drain".into(),
    }
}

fn run(case: &Case, now: Now) -> Decision {
    let mut annotations = BTreeMap::new();
    if let Some(w) = case.window {
        annotations.insert(WINDOW_ANNOTATION.to_owned(), w.to_owned());
    }
    if let Some(s) = case.status {
        let (status, reason) = s.split_once('/').map_or((s, None), |(a, b)| (a, Some(b)));
        annotations.insert(STATUS_ANNOTATION.to_owned(), status.to_owned());
        if let Some(r) = reason {
            annotations.insert(REASON_ANNOTATION.to_owned(), r.to_owned());
        }
    }
    step(
        &config(),
        &Input {
            annotations: &annotations,
            unschedulable: case.unschedulable,
            lease: case.lease.as_ref(),
            own: case.own.as_ref(),
            now,
        },
    )
}

fn now() -> Now {
    Now {
        mono: Instant::from_secs(T0),
        wall: wall_ago(0.0),
    }
}

#[test]
fn every_branch_of_the_flow() {
    let them = Some("them");
    let me = Some(ME);
    let table = vec![
        // ---- the request present ----
        Case {
            name: "valid and held by another: waiting, no write",
            lease: Some(lease(them, 10.0, 50, 0)),
            reported: Some(Status::Waiting),
            ..Case::default()
        },
        Case {
            name: "another's lease just past its end but within the skew margin: still waiting",
            lease: Some(lease(them, 50.5, 50, 0)),
            reported: Some(Status::Waiting),
            ..Case::default()
        },
        Case {
            name: "no lease: create it (new, create), window 20 + padding 30",
            reported: Some(Status::New(NewReason::Create)),
            writes: &["create(50)", "status:new/create"],
            ..Case::default()
        },
        Case {
            name: "another's expired lease: take it, transitions + 1 (new, acquired)",
            lease: Some(lease(them, 60.0, 50, 3)),
            reported: Some(Status::New(NewReason::Acquired)),
            writes: &["take@7(50, t4)", "status:new/acquired"],
            ..Case::default()
        },
        Case {
            name: "an ended lease (no holder): a new window (new, reused)",
            lease: Some(lease(None, 5.0, 1, 2)),
            status: Some("ended"),
            reported: Some(Status::New(NewReason::Reused)),
            writes: &["take@7(50, t2)", "status:new/reused"],
            ..Case::default()
        },
        Case {
            name: "leaseDurationSeconds 0 (the reference's end marker): a new window (new, reused)",
            lease: Some(lease(them, 5.0, 0, 2)),
            reported: Some(Status::New(NewReason::Reused)),
            writes: &["take@7(50, t2)", "status:new/reused"],
            ..Case::default()
        },
        Case {
            name: "our own lease past its end, from a previous window: new window (new, stale)",
            lease: Some(lease(me, 100.0, 50, 1)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::New(NewReason::Stale)),
            writes: &["take@7(50, t1)", "status:new/stale"],
            ..Case::default()
        },
        Case {
            name: "status ended but the request re-created while our lease is held: new window (new, recreate)",
            lease: Some(lease(me, 25.0, 50, 1)),
            own: Some(own(25.0)),
            status: Some("ended"),
            unschedulable: true,
            reported: Some(Status::New(NewReason::Recreate)),
            writes: &["take@7(50, t1)", "status:new/recreate"],
            ..Case::default()
        },
        Case {
            name: "the requested window changed: update the duration (updated)",
            window: Some("40"),
            lease: Some(lease(me, 5.0, 50, 0)),
            own: Some(own(5.0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Updated),
            writes: &["duration@7(70)", "status:updated"],
            deadline: Some(45.0),
            ..Case::default()
        },
        Case {
            name: "within the padding of the end: remove the request, ended, uncordon, cancel the drain, end the lease",
            lease: Some(lease(me, 25.0, 50, 0)),
            own: Some(own(25.0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Ended),
            writes: &[
                "remove-request",
                "status:ended",
                "uncordon",
                "cancel-drain",
                "end@7",
            ],
            deadline: Some(25.0),
            ..Case::default()
        },
        Case {
            name: "in the window, not yet cordoned: cordon, drain, active until the window's end",
            lease: Some(lease(me, 5.0, 50, 0)),
            own: Some(own(5.0)),
            status: Some("new/create"),
            reported: Some(Status::Active),
            writes: &["cordon", "drain", "status:active"],
            deadline: Some(15.0),
            ..Case::default()
        },
        Case {
            name: "in the window, already active: only the (idempotent) drain",
            lease: Some(lease(me, 5.0, 50, 0)),
            own: Some(own(5.0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Active),
            writes: &["drain"],
            deadline: Some(15.0),
            ..Case::default()
        },
        // ---- the request removed ----
        Case {
            name: "request removed while we hold a valid lease: ended, the same bounded teardown",
            window: None,
            lease: Some(lease(me, 5.0, 50, 0)),
            own: Some(own(5.0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Ended),
            writes: &["status:ended", "uncordon", "cancel-drain", "end@7"],
            deadline: Some(45.0),
            ..Case::default()
        },
        Case {
            name: "teardown half done (status ended, still cordoned): only what is left, in the time left",
            window: None,
            lease: Some(lease(me, 49.5, 50, 0)),
            own: Some(own(49.5)),
            status: Some("ended"),
            unschedulable: true,
            reported: Some(Status::Ended),
            writes: &["uncordon", "cancel-drain", "end@7"],
            deadline: Some(0.5),
            ..Case::default()
        },
        Case {
            name: "lost our lease before tearing down: a padding-long lease to do it",
            window: None,
            lease: Some(lease(me, 60.0, 50, 2)),
            own: Some(own(60.0)),
            status: Some("active"),
            unschedulable: true,
            writes: &["take@7(30, t2)"],
            ..Case::default()
        },
        Case {
            name: "a crashed holder's expired window nobody ended: taken for the padding to tear it down",
            window: None,
            lease: Some(lease(them, 60.0, 50, 2)),
            status: Some("active"),
            unschedulable: true,
            writes: &["take@7(30, t3)"],
            ..Case::default()
        },
        Case {
            name: "then, holding the padding-long lease: the teardown",
            window: None,
            lease: Some(lease(me, 1.0, 30, 3)),
            own: Some(own(1.0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Ended),
            writes: &["status:ended", "uncordon", "cancel-drain", "end@7"],
            deadline: Some(29.0),
            ..Case::default()
        },
        Case {
            name: "no request, no lease: nothing",
            window: None,
            ..Case::default()
        },
        Case {
            name: "no request, lease ended, status ended: nothing to write or report",
            window: None,
            lease: Some(lease(None, 5.0, 1, 0)),
            status: Some("ended"),
            ..Case::default()
        },
        Case {
            name: "no request, another holds a valid lease (its teardown): nothing",
            window: None,
            lease: Some(lease(them, 5.0, 50, 0)),
            status: Some("ended"),
            unschedulable: true,
            ..Case::default()
        },
        // ---- time ----
        Case {
            name: "restarted (no own record): our window judged by wall clock, ending early by the skew",
            lease: Some(lease(me, 48.5, 50, 0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Ended),
            writes: &[
                "remove-request",
                "status:ended",
                "uncordon",
                "cancel-drain",
                "end@7",
            ],
            deadline: Some(0.5),
            ..Case::default()
        },
        Case {
            name: "restarted, within the skew of the end: already past it for us (stale)",
            lease: Some(lease(me, 49.5, 50, 0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::New(NewReason::Stale)),
            writes: &["take@7(50, t0)", "status:new/stale"],
            ..Case::default()
        },
        Case {
            name: "an own record of another window (other acquireTime) is not ours to count from",
            lease: Some(lease(me, 5.0, 50, 0)),
            own: Some(own(500.0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Active),
            writes: &["drain"],
            deadline: Some(14.0),
            ..Case::default()
        },
        // ---- bad input: typed warnings, never a panic ----
        Case {
            name: "a malformed request while we hold a window: read as removed, torn down, warned",
            window: Some("twenty"),
            lease: Some(lease(me, 5.0, 50, 0)),
            own: Some(own(5.0)),
            status: Some("active"),
            unschedulable: true,
            reported: Some(Status::Ended),
            writes: &["status:ended", "uncordon", "cancel-drain", "end@7"],
            deadline: Some(45.0),
            warnings: 1,
        },
        Case {
            name: "a zero window is malformed",
            window: Some("0"),
            warnings: 1,
            ..Case::default()
        },
        Case {
            name: "a window too long for leaseDurationSeconds: warned, nothing taken",
            window: Some("2147483640"),
            warnings: 1,
            ..Case::default()
        },
        Case {
            name: "an unknown status: warned, read as none",
            status: Some("paused"),
            reported: Some(Status::New(NewReason::Create)),
            writes: &["create(50)", "status:new/create"],
            warnings: 1,
            ..Case::default()
        },
        Case {
            name: "a lease with a holder but no acquireTime: warned, taken as expired",
            lease: Some(LeaseView {
                acquire_time: None,
                ..lease(them, 0.0, 50, 0)
            }),
            reported: Some(Status::New(NewReason::Acquired)),
            writes: &["take@7(50, t1)", "status:new/acquired"],
            warnings: 1,
            ..Case::default()
        },
        Case {
            name: "a lease with a negative duration: warned, taken as expired",
            lease: Some(lease(them, 0.0, -5, 0)),
            reported: Some(Status::New(NewReason::Acquired)),
            writes: &["take@7(50, t1)", "status:new/acquired"],
            warnings: 1,
            ..Case::default()
        },
    ];
    let mut failures = Vec::new();
    for case in &table {
        let d = run(case, now());
        let writes: Vec<String> = d.writes.iter().map(shorthand).collect();
        let deadline = d
            .deadline
            .map(|t| (t - Instant::from_secs(T0)).as_secs_f64());
        let ok = d.status == case.reported
            && writes == case.writes
            && match (deadline, case.deadline) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-6,
                (None, None) => true,
                _ => false,
            }
            && d.warnings.len() == case.warnings;
        if !ok {
            failures.push(format!(
                "{}:\n  got      {:?} {:?} deadline {:?} warnings {:?}\n  expected {:?} {:?} deadline {:?} warnings {}",
                case.name,
                d.status,
                writes,
                deadline,
                d.warnings,
                case.reported,
                case.writes,
                case.deadline,
                case.warnings
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn new_windows_count_from_the_stamp_and_look_again_at_once() {
    let case = Case::default();
    let d = run(&case, now());
    let Write::Lease(LeaseWrite::Create {
        acquire_time,
        stamped_at,
        ..
    }) = d.writes[0]
    else {
        panic!("{:?}", d.writes);
    };
    assert_eq!(stamped_at, Instant::from_secs(T0));
    assert_eq!(acquire_time, wall_ago(0.0));
    assert_eq!(d.next_check, Some(Instant::from_secs(T0)));
    assert!(d.writes[0].takes_window() && !d.writes[1].takes_window());
}

#[test]
fn acquire_time_is_stamped_in_microseconds_as_a_lease_keeps_it() {
    let case = Case::default();
    let mut t = now();
    t.wall = WallTime::new(W0, 123_456_789);
    let d = run(&case, t);
    let Write::Lease(LeaseWrite::Create { acquire_time, .. }) = d.writes[0] else {
        panic!("{:?}", d.writes);
    };
    assert_eq!(acquire_time, WallTime::new(W0, 123_456_000));
}

#[test]
fn waiting_and_active_look_again_at_the_window_edges() {
    // Waiting: at the other's end plus the skew, capped at max_requeue (30 s).
    let d = run(
        &Case {
            lease: Some(lease(Some("them"), 40.0, 50, 0)),
            ..Case::default()
        },
        now(),
    );
    assert_eq!(d.status, Some(Status::Waiting));
    assert_eq!(d.next_check, Some(Instant::from_secs(T0 + 11)));
    let d = run(
        &Case {
            lease: Some(lease(Some("them"), 0.0, 50, 0)),
            ..Case::default()
        },
        now(),
    );
    assert_eq!(d.next_check, Some(Instant::from_secs(T0 + 30)));
    // Active: at the window's end, when the teardown starts.
    let d = run(
        &Case {
            lease: Some(lease(Some(ME), 5.0, 50, 0)),
            own: Some(own(5.0)),
            status: Some("active"),
            unschedulable: true,
            ..Case::default()
        },
        now(),
    );
    assert_eq!(d.next_check, Some(Instant::from_secs(T0 + 15)));
}

/// The holder's wall clock runs at half speed: by its wall clock only half of
/// the window has passed, but by its monotonic clock, from its write's stamp,
/// the window is over: it tears down, and past the lease it does nothing to the
/// Node before a new compare-and-swap of the Lease.
#[test]
fn holder_stops_acting_at_its_own_end_when_its_wall_clock_runs_slow() {
    let config = config();
    let stamp_wall = WallTime::new(W0, 0);
    let stamp_mono = Instant::from_secs(T0);
    let held = LeaseView {
        version: "9".into(),
        holder: Some(ME.into()),
        acquire_time: Some(stamp_wall),
        duration_seconds: Some(50),
        transitions: Some(0),
    };
    let record = OwnWrite {
        acquire_time: stamp_wall,
        sent_at: stamp_mono,
    };
    let annotations = BTreeMap::from([
        (WINDOW_ANNOTATION.to_owned(), "20".to_owned()),
        (STATUS_ANNOTATION.to_owned(), "active".to_owned()),
    ]);
    let slow = |elapsed: u64| Now {
        mono: stamp_mono + Duration::from_secs(elapsed),
        wall: WallTime::new(W0 + i64::try_from(elapsed / 2).expect("small"), 0),
    };
    let decide = |now: Now, own: Option<&OwnWrite>| {
        step(
            &config,
            &Input {
                annotations: &annotations,
                unschedulable: true,
                lease: Some(&held),
                own,
                now,
            },
        )
    };
    // 19 s in: still the window.
    let d = decide(slow(19), Some(&record));
    assert_eq!(d.status, Some(Status::Active));
    assert_eq!(d.deadline, Some(stamp_mono + Duration::from_secs(20)));
    // 21 s in (the wall clock says 10 s): the window is over, teardown until 50 s.
    let d = decide(slow(21), Some(&record));
    assert_eq!(d.status, Some(Status::Ended));
    assert!(d.writes.contains(&Write::Uncordon), "{:?}", d.writes);
    assert_eq!(d.deadline, Some(stamp_mono + Duration::from_secs(50)));
    // Judged by the (slow) wall clock alone, it would still be active.
    let d = decide(slow(21), None);
    assert_eq!(d.status, Some(Status::Active));
    // 50 s in (the wall clock says 25 s): past its end; no Node write comes
    // before a new window is taken by compare-and-swap.
    let d = decide(slow(50), Some(&record));
    assert!(d.writes[0].takes_window(), "{:?}", d.writes);
    assert_eq!(d.status, Some(Status::New(NewReason::Stale)));
}

#[test]
fn configuration_errors_are_typed() {
    assert_eq!(WindowConfig::new(""), Err(WindowError::EmptyIdentity));
    let c = WindowConfig::new("x").expect("identity");
    assert_eq!(
        c.clone().with_padding(Duration::from_millis(1500)),
        Err(WindowError::BadPadding(Duration::from_millis(1500)))
    );
    assert_eq!(
        c.clone().with_padding(Duration::ZERO),
        Err(WindowError::BadPadding(Duration::ZERO))
    );
    assert_eq!(
        c.with_padding(Duration::from_secs(2)).map(|c| c.padding()),
        Ok(Duration::from_secs(2))
    );
    assert_eq!(
        lease_window::parse_window(&BTreeMap::from([(
            WINDOW_ANNOTATION.to_owned(),
            "-3".to_owned()
        )])),
        Err(WindowError::MalformedWindow { value: "-3".into() })
    );
}
