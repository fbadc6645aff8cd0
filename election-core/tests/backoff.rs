//! Every error path backs off: no answer, however often it comes, makes the
//! elector send lock calls in a busy loop. A failed write (any error, a timeout
//! included) is never re-sent at the instant it failed; a read that finds out what
//! happened may go at once, and once such a read shows another writer moved the
//! lock on, the next write may go at once too (that is progress, not a loop).

use proptest::prelude::*;

mod support;
use support::*;

/// FAULTS A5: a lock whose create answers 404 (its namespace does not exist)
/// used to make the elector send Create after Create at the same instant. Now the
/// next create waits a jittered retry period, doubling while it keeps failing.
#[test]
fn a5_create_answered_not_found_backs_off() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let mut last = n.now;
    let mut gaps = Vec::new();
    for _ in 0..6 {
        let (op, _) = n.fire_until_action(4).into_create();
        gaps.push(n.now - last);
        last = n.now;
        n.answer(op, Err(LockError::NotFound));
        n.no_action();
    }
    assert_eq!(gaps[0], ms(0), "the first create follows the 404 at once");
    for gap in &gaps[1..] {
        assert!(
            *gap >= cfg.retry_period,
            "a create waits after a failed one: {gaps:?}"
        );
    }
    assert!(
        gaps[5] > gaps[1] * 2,
        "the wait grows while the create keeps failing: {gaps:?}"
    );
}

/// FAULTS A6, once allowed again: a polling follower whose reads were refused
/// (403) backed off to a poll a lease apart. The first read that succeeds ends
/// the backoff: the next poll comes a plain jittered retry period later, not at
/// the backed-off instant planned when that read was sent (a poller back from
/// an outage followed the lock blind for up to a lease, and missed a handover
/// meant for it: the simulator found it).
#[test]
fn a6_a_poller_polls_a_plain_retry_period_after_its_first_read_that_succeeds() {
    let cfg = fast("a");
    let max_plain = cfg.retry_period.mul_f64(1.0 + cfg.jitter);
    let mut n = Node::new(cfg);
    let forbidden = || {
        Err(LockError::Forbidden {
            message: "leases is forbidden".into(),
        })
    };
    let op = n.get();
    n.answer(op, forbidden());
    for _ in 0..5 {
        let Action::Get { op } = n.fire_until_action(10) else {
            panic!("a read");
        };
        n.answer(op, forbidden());
    }
    let Action::Get { op } = n.fire_until_action(10) else {
        panic!("a read");
    };
    n.advance(ms(10));
    n.answer(op, Ok(obs("7", held("b", 2, 1))));
    let answered = n.now;
    let Action::Get { .. } = n.fire_until_action(10) else {
        panic!("a poll");
    };
    assert!(
        n.now - answered <= max_plain,
        "polled {:?} after the success (plain: at most {max_plain:?})",
        n.now - answered
    );
}

/// FAULTS A13: a connection reset after sending (outcome unknown) answered at
/// once, and a read that shows the write did not land: the renew is sent again a
/// retry period later, not at once (which, with a reset that comes at once, was a
/// busy loop of update, read, update).
#[test]
fn a13_instant_resets_do_not_make_a_busy_loop_of_renews() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    let held = n.elector.observed().expect("ours").clone();
    let mut sent = Vec::new();
    while n.elector.is_leader(n.now) {
        let (op, _, _) = n.fire_until_action(8).into_update();
        sent.push(n.now);
        n.answer(op, Err(LockError::unknown("connection reset")));
        let op = n.get();
        n.answer(op, Ok(held.clone()));
        if !n.has_action() && n.timeout().is_none() {
            break;
        }
    }
    for pair in sent.windows(2) {
        assert!(pair[1] - pair[0] >= cfg.retry_period, "{sent:?}");
    }
    assert!(
        sent.len() <= 7,
        "about one renew per retry period: {sent:?}"
    );
}

/// FAULTS A2: an acquisition answered 409 whose read shows the version it
/// expected (no other writer: a spurious conflict) is retried after the jittered
/// period, not at once; one whose read shows that another writer moved the lock
/// on (a holder that released since) goes at once, as a follower seeing a release.
#[test]
fn a2_lost_race_retries_after_the_jittered_period_unless_the_lock_moved_on() {
    let cfg = fast("a");
    for moved_on in [false, true] {
        let free = obs("1", held("", 1, 0));
        let mut n = Node::follower(cfg.clone(), free.clone());
        let (op, _, _) = n.update();
        let lost_at = n.now;
        n.answer(op, Err(LockError::Conflict));
        let op = n.get();
        let fresh = if moved_on {
            obs("3", held("", 1, 1))
        } else {
            free
        };
        let version = fresh.version.clone();
        n.answer(op, Ok(fresh));
        if moved_on {
            let (_, expected, _) = n.update();
            assert_eq!(expected, version);
            assert_eq!(n.now, lost_at, "at once");
        } else {
            n.no_action();
            let (_, expected, _) = n.fire_until_action(4).into_update();
            assert_eq!(expected, version);
            assert!(n.now >= lost_at + cfg.retry_period);
            assert!(n.now < lost_at + cfg.max_retry_interval());
        }
    }
}

/// Every kind of answer a lock can give, including the record the write asked for.
#[derive(Clone, Debug)]
enum Answer {
    /// What a working lock answers: a read shows this record, a write stores
    /// what it asked for at a new version.
    AsLock(LockRecord),
    /// This record at this version, whatever was asked.
    Record(u8, LockRecord),
    Error(LockError),
}

fn answer() -> impl Strategy<Value = Answer> {
    let holder = prop_oneof![Just(""), Just("me"), Just("other")];
    let record = (
        holder,
        prop_oneof![Just(None), Just(Some(2)), Just(Some(0))],
    )
        .prop_map(|(h, secs)| LockRecord {
            holder: h.into(),
            lease_duration_secs: secs,
            ..LockRecord::default()
        });
    prop_oneof![
        2 => record.clone().prop_map(Answer::AsLock),
        2 => (0u8..4, record).prop_map(|(v, r)| Answer::Record(v, r)),
        4 => prop_oneof![
            Just(LockError::NotFound),
            Just(LockError::AlreadyExists),
            Just(LockError::Conflict),
            Just(LockError::transient("503")),
            Just(LockError::Forbidden { message: "403".into() }),
            Just(LockError::Invalid { message: "422".into() }),
            Just(LockError::unknown("connection reset")),
        ]
        .prop_map(Answer::Error),
    ]
}

proptest! {
    /// Whatever the lock answers, and however fast: at the instant a write
    /// failed, no write follows that is based on the same version or an older one
    /// (only another writer's progress, shown by a read or by an update finding
    /// the lock deleted, lets a write go again at once), and the calls made are
    /// few, never a loop.
    #[test]
    fn no_failed_write_is_re_sent_at_the_instant_it_failed(
        client_go in any::<bool>(),
        seed in any::<u64>(),
        script in proptest::collection::vec(answer(), 1..60),
        instants in 1usize..12,
    ) {
        let cfg = if client_go { Config::client_go("me") } else { Config::fast("me") };
        let mut e = Elector::new(cfg.seed(seed), Instant::ZERO).expect("a preset");
        let mut now = Instant::ZERO;
        let mut answers = script.iter().cycle();
        let mut version = 100u64;
        // The version of the last successful answer: what a create is based on.
        let mut last_seen: Option<Version> = None;
        for _ in 0..instants {
            let mut calls = 0;
            // What the writes that failed at `now` were based on.
            let mut failed: Vec<Option<Version>> = Vec::new();
            while let Some(action) = e.poll_action() {
                calls += 1;
                prop_assert!(calls <= 16, "{calls} calls at {now:?}: a loop");
                let is_write = !matches!(action, Action::Get { .. });
                let basis = match &action {
                    Action::Update { expected, .. } => Some(expected.clone()),
                    _ => last_seen.clone(),
                };
                if is_write {
                    for f in &failed {
                        let newer = match (&basis, f) {
                            (Some(b), Some(f)) => b.is_newer_than(f),
                            (Some(_), None) => true,
                            (None, _) => false,
                        };
                        prop_assert!(
                            newer,
                            "a write at {now:?} on {basis:?}, no newer than the failed one on {f:?}: {action:?}"
                        );
                    }
                }
                let result = match answers.next().expect("cycles").clone() {
                    Answer::AsLock(read) => Ok(match &action {
                        Action::Get { .. } => obs("1", read),
                        Action::Create { record, .. } | Action::Update { record, .. } => {
                            version += 1;
                            obs(&version.to_string(), record.clone())
                        }
                    }),
                    Answer::Record(v, r) => Ok(obs(&v.to_string(), r)),
                    Answer::Error(err) => Err(err),
                };
                let answered = result.as_ref().ok().map(|o| o.version.clone());
                // An update that finds the lock gone is news, not a failure: the
                // lock moved on (deleted), and a create may follow at once.
                let gone = matches!(action, Action::Update { .. })
                    && matches!(result, Err(LockError::NotFound));
                let mut write_failed = is_write && result.is_err() && !gone;
                e.handle(action.op().answer(result), now);
                while let Some(event) = e.poll_event() {
                    // A success that cannot be the write is a failed write too.
                    write_failed |= matches!(event, Event::Warning(Warning::BrokenWriteAnswer { .. }));
                }
                if write_failed {
                    failed.push(basis);
                } else if answered.is_some() {
                    last_seen = answered; // what the elector took as seen
                }
            }
            let Some(next) = e.poll_timeout() else { break };
            now = now.max(next);
            e.handle_timeout(now);
            while e.poll_event().is_some() {}
        }
    }
}
