//! The call plumbing: sending the one lock call at a time, routing its answer
//! (or its timeout) to the rule of its purpose, and choosing the next call once
//! none is in flight. The rules themselves are in the files named after them.

use alloc::sync::Arc;

use super::holder::News;
use super::{Elector, Phase};
use crate::action::{Action, OpId, OpKind, ReadId, WriteId};
use crate::event::Event;
use crate::event::{BrokenAnswer, Warning};
use crate::lock::LockError;
use crate::record::{LockRecord, Observation, Version};
use crate::time::Instant;
use crate::timer::{Timer, TimerTable};

#[derive(Clone, Debug)]
pub(super) struct InFlight {
    pub(super) op: OpId,
    pub(super) purpose: Purpose,
    pub(super) sent_at: Instant,
    /// A compare-and-swap's expected version: its answer must carry another.
    pub(super) expected: Option<Version>,
    /// The holder a write asked for: its answer must name it.
    pub(super) holder: Option<Arc<str>>,
    /// The transition count a write asked for (0 for a read).
    pub(super) transitions: u32,
    /// The version of the lock as seen when the call was sent (`None`: not
    /// seen present): a "not found" answer is older news than a version seen
    /// since only if that version is another one.
    pub(super) seen_at_send: Option<Version>,
}

/// A read owed before the rules choose a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReadDue {
    /// As soon as no call is in flight: at the start, after a write that lost its
    /// compare-and-swap (`after_conflict`) or whose outcome is unknown, after a
    /// watch event a holder did not write.
    Now { after_conflict: bool },
    /// At the next attempt, before any write: the API refused a campaign's write
    /// as invalid (422, FAULTS A8), so the same payload is never re-sent without
    /// a fresh look; or a follower's read failed, so what it was sent to learn
    /// is still to be learnt.
    BeforeWrite,
}

/// Why a call was made, which decides what its answer means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    /// A read; `after_conflict` when it follows a lost compare-and-swap (a
    /// holder then reports another holder as the winner of that conflict).
    Read {
        after_conflict: bool,
    },
    Create,
    /// Acquire a record that names us or no one: it may be the record a create of
    /// ours with an unknown outcome made.
    Acquire,
    /// Acquire an expired record held by another identity.
    TakeOver,
    /// Take an unexpired record from a lower priority ([`crate::Preemption::Steal`]).
    Steal,
    AskHandover,
    Renew,
    Release,
}

impl Purpose {
    pub(super) fn is_write(self) -> bool {
        !matches!(self, Purpose::Read { .. })
    }

    /// The kind of lock call this purpose makes, for reports.
    pub(super) fn op_kind(self) -> OpKind {
        match self {
            Purpose::Read { .. } => OpKind::Get,
            Purpose::Create => OpKind::Create,
            _ => OpKind::Update,
        }
    }
}

impl Elector {
    /// Starts a lock call; `action` builds it from the next number in the one
    /// sequence of call ids.
    pub(super) fn send(
        &mut self,
        purpose: Purpose,
        action: impl FnOnce(u64) -> Action,
        now: Instant,
    ) {
        debug_assert!(self.in_flight.is_none(), "one call at a time");
        let action = action(self.next_op);
        self.next_op += 1;
        let op = action.op();
        let (expected, holder, transitions) = match &action {
            Action::Get { .. } => (None, None, 0),
            Action::Create { record, .. } => {
                (None, Some(record.holder.clone()), record.transitions)
            }
            Action::Update {
                expected, record, ..
            } => (
                Some(expected.clone()),
                Some(record.holder.clone()),
                record.transitions,
            ),
        };
        self.actions.push_back(action);
        let seen_at_send = self.lock.present().map(|seen| seen.obs.version.clone());
        self.in_flight = Some(InFlight {
            op,
            purpose,
            sent_at: now,
            expected,
            holder,
            transitions,
            seen_at_send,
        });
        self.timers
            .set(Timer::Request, now + self.config.request_timeout);
        self.timers.stop(Timer::Attempt);
    }

    /// Sends a read; a polling follower's next poll is one jittered retry period
    /// after it.
    pub(super) fn send_read(&mut self, now: Instant) {
        let after_conflict = matches!(
            self.read_due.take(),
            Some(ReadDue::Now {
                after_conflict: true
            })
        );
        if let super::Follow::Poll { .. } = self.follow {
            let next = now + self.jittered_retry();
            self.follow = super::Follow::Poll { next };
        }
        self.send(
            Purpose::Read { after_conflict },
            |n| Action::Get { op: ReadId(n) },
            now,
        );
    }

    /// Owes a read as soon as no call is in flight (it supersedes a read owed
    /// before a write: it is one).
    pub(super) fn want_read(&mut self, after_conflict: bool) {
        let after_conflict = after_conflict
            || matches!(
                self.read_due,
                Some(ReadDue::Now {
                    after_conflict: true
                })
            );
        self.read_due = Some(ReadDue::Now { after_conflict });
    }

    pub(super) fn send_update(
        &mut self,
        purpose: Purpose,
        expected: Version,
        record: LockRecord,
        now: Instant,
    ) {
        self.send(
            purpose,
            |n| Action::Update {
                op: WriteId(n),
                expected,
                record,
            },
            now,
        );
    }

    /// The answer to call `op`, if it is the one in flight.
    pub(super) fn on_call_answered(
        &mut self,
        op: OpId,
        result: Result<Observation, LockError>,
        now: Instant,
    ) {
        let Some(call) = self.in_flight.take_if(|c| c.op == op) else {
            return; // an answer we no longer wait for
        };
        self.timers.stop(Timer::Request);
        self.on_answer(call, result, now);
    }

    /// Dispatches an answer by the call's purpose.
    pub(super) fn on_answer(
        &mut self,
        call: InFlight,
        result: Result<Observation, LockError>,
        now: Instant,
    ) {
        let result = match result {
            Ok(obs) => match self.broken_write_answer(&call, &obs) {
                Some(answer) => {
                    // Reported as such, and counted as a write of unknown outcome.
                    let op = call.purpose.op_kind();
                    self.warn(Warning::BrokenWriteAnswer { op, answer });
                    let error = LockError::unknown("write answered with another record");
                    self.note_failure(&call, &error);
                    Err(error)
                }
                None => {
                    self.end_backoff(now);
                    Ok(obs)
                }
            },
            // Answers about the lock's state, not failures; but a create cannot
            // find the lock missing (its place is: FAULTS A5), so that one is.
            Err(e @ (LockError::Conflict | LockError::AlreadyExists)) => Err(e),
            Err(LockError::NotFound) if call.purpose != Purpose::Create => Err(LockError::NotFound),
            Err(error) => {
                self.note_failure(&call, &error);
                let op = call.purpose.op_kind();
                self.warn(Warning::LockFailed {
                    op,
                    error: error.clone(),
                });
                Err(error)
            }
        };
        self.dispatch(call, result, now);
    }

    /// A successful write's answer must be the record written: a new version (not
    /// the one the compare-and-swap expected) naming the holder the write asked
    /// for. Anything else cannot be this node's write, so the lock is broken:
    /// reported, and taken as a write of unknown outcome (never led on; the next
    /// step is a read). A renew that made no new version is the one exception, with
    /// its own warning ([`Warning::RenewWithoutNewVersion`]): a server may skip an
    /// identical write.
    pub(super) fn broken_write_answer(
        &self,
        call: &InFlight,
        obs: &Observation,
    ) -> Option<BrokenAnswer> {
        let holder = call.holder.as_ref()?; // a read shows whatever is there
        if obs.record.holder != *holder {
            return Some(BrokenAnswer::WrongHolder {
                holder: obs.record.holder.clone(),
            });
        }
        let unchanged = call.expected.as_ref() == Some(&obs.version);
        (unchanged && call.purpose != Purpose::Renew).then_some(BrokenAnswer::VersionUnchanged)
    }

    /// The in-flight call got no answer in time: it failed with an unknown outcome.
    pub(super) fn on_request_timeout(&mut self, now: Instant) {
        let Some(call) = self.in_flight.take() else {
            return;
        };
        let error = LockError::unknown("request timed out");
        self.note_failure(&call, &error);
        self.warn(Warning::RequestTimedOut {
            op: call.purpose.op_kind(),
            timeout: self.config.request_timeout,
        });
        self.dispatch(call, Err(error), now);
    }

    /// Counts a failed call, and remembers a write whose outcome is unknown: if
    /// a read later shows it landed, it counts from the earliest such send time.
    pub(super) fn note_failure(&mut self, call: &InFlight, error: &LockError) {
        self.failures = self.failures.saturating_add(1);
        self.stats.lock_errors += 1;
        if call.purpose.is_write() && error.outcome_unknown() {
            self.own
                .sent_unknown(call.sent_at, call.expected.as_ref(), call.transitions);
            if call.purpose == Purpose::Create {
                self.own.create_unknown = self.own.create_unknown.max(Some(call.transitions));
            }
            // A version of another holder seen while the write was in flight,
            // ordered after its base: the lock moved past that base, so the
            // write can never land (docs/faults.md R15).
            if self.holding.is_none()
                && let Some(seen) = self.lock.present()
                && seen.obs.record.holder != *self.identity()
            {
                let version = seen.obs.version.clone();
                self.own.superseded_by(&version);
            }
        }
    }

    /// Hands an outcome to the rule that made the call; a failed write first
    /// holds the next ones back ([`WriteHold`]).
    pub(super) fn dispatch(
        &mut self,
        call: InFlight,
        result: Result<Observation, LockError>,
        now: Instant,
    ) {
        if let (true, Err(e)) = (call.purpose.is_write(), &result) {
            self.hold_writes(&call, e, now);
        }
        let read = matches!(call.purpose, Purpose::Read { .. });
        match call.purpose {
            Purpose::Read { after_conflict } => {
                self.on_read_answer(result, after_conflict, &call, now)
            }
            Purpose::Create
            | Purpose::Acquire
            | Purpose::TakeOver
            | Purpose::Steal
            | Purpose::AskHandover => self.on_acquire_answer(call, result, now),
            Purpose::Renew => self.on_renew_answer(call, result, now),
            Purpose::Release => self.on_release_answer(result, &call, now),
        }
        if !read {
            self.judge_watch_ahead(now);
        }
        if read && let Some(seen) = self.lock.last() {
            // What the read showed, as taken in (an echo of an older write of
            // ours is not news).
            self.write_hold.saw(&seen.obs.version.clone());
        }
    }

    /// After every handler: start the next call if one is due and none is in flight.
    pub(super) fn drive(&mut self, now: Instant) {
        if self.phase == Phase::Terminated {
            return;
        }
        if self.phase == Phase::ShuttingDown && self.holding.is_none() {
            // Nothing held: end now, unless a write of ours is in flight or its
            // outcome is unknown (it may have taken the lock, which must then be
            // released: never a silently held lease).
            // The read that finds out is retried until the release budget ends.
            let write_in_flight = self
                .in_flight
                .as_ref()
                .is_some_and(|c| c.purpose.is_write());
            if !write_in_flight && self.own.unknown_sent.is_none() {
                self.terminate();
                return;
            }
        }
        if self.in_flight.is_some() {
            return;
        }
        if matches!(self.read_due, Some(ReadDue::Now { .. })) {
            self.send_read(now);
            return;
        }
        if self.timers.get(Timer::Attempt).is_some_and(|t| t <= now) {
            self.timers.stop(Timer::Attempt);
            self.attempt(now);
        }
    }

    /// The attempt timer fired: act now, unless a call is in flight (every answer
    /// plans the next attempt).
    pub(super) fn read_or_attempt_due(&mut self, now: Instant) {
        if self.in_flight.is_none() {
            self.attempt(now);
        }
    }

    /// The next call, by role: as the holder decides while holding
    /// ([`decide`](super::holder::decide)), else campaign.
    pub(super) fn attempt(&mut self, now: Instant) {
        if self.phase == Phase::Terminated {
            return;
        }
        if self.holding.is_some() {
            return self.as_holder(News::AttemptDue, None, now);
        }
        if self.in_flight.is_some() {
            return; // every answer plans the next attempt
        }
        if self.phase != Phase::ShuttingDown {
            self.campaign(now);
        } else if self.own.unknown_sent.is_some() {
            self.send_read(now); // did our last write take the lock?
        }
    }

    pub(super) fn terminate(&mut self) {
        self.phase = Phase::Terminated;
        self.timers = TimerTable::default();
        self.actions.clear();
        self.in_flight = None;
        self.emit(Event::Terminated);
    }
}
