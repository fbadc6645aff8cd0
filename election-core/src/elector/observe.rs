//! Taking in what the lock looks like: versions, local observation times, expiry.
//!
//! Expiry is judged on the local clock only: a lease held by another expires at the
//! local instant its version was first seen plus the record's lease duration.
//! Remote timestamps are never compared with any clock, and change is detected by
//! version alone (a holder with a frozen wall clock still makes new versions).

use core::time::Duration;

use super::calls::ReadDue;
use super::holder::{News, ReadShowed, WatchShowed};
use super::{Elector, InFlight, Lead, LockView, Seen};
use crate::config::Mode;
use crate::event::{Event, StopReason, Warning};
use crate::lock::LockError;
use crate::record::{LockRecord, Observation, Stamp, Version};
use crate::time::Instant;

/// What an observation turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Novelty {
    /// The version already seen.
    Same,
    /// An older write of our own, delivered late, or a version older than a
    /// deletion already seen: ignored.
    Stale,
    /// A version not seen before.
    New,
}

impl Elector {
    /// Records an observation; the local observation time resets only on a new
    /// version.
    pub(super) fn observe(&mut self, obs: Observation, from_read: bool, now: Instant) -> Novelty {
        if self.lock.predates_deletion(&obs.version) {
            return Novelty::Stale;
        }
        if let LockView::Present(seen) = &mut self.lock
            && seen.obs.version == obs.version
        {
            if from_read {
                seen.read_at = Some(now);
            } else {
                self.contiguous = true;
            }
            return Novelty::Same;
        }
        let own = self.own.wrote(&obs.version);
        let overtaken = self.config.mode == Mode::Coordinated
            && self.lock.present().is_some_and(|seen| {
                obs.version.order(&seen.obs.version) == Some(core::cmp::Ordering::Less)
            });
        if own && (self.own.last() != Some(&obs.version) || overtaken) {
            // An older write of ours, or the answer to our last write coming
            // after the watch showed a newer version: not news.
            return Novelty::Stale;
        }
        // Our write was a compare-and-swap on the version seen before it; a
        // watch's version follows the one it delivered last.
        let adjacent = own || (!from_read && self.contiguous);
        if !from_read {
            self.contiguous = true;
        } else if !own {
            self.contiguous = false;
        }
        let rec = &obs.record;
        let cap = self.config.max_lease_duration;
        match rec.lease_duration_secs {
            Some(s) if s > 0 && Duration::from_secs(s.unsigned_abs()) > cap => {
                self.warn(Warning::LeaseDurationCapped { secs: s, cap });
            }
            Some(s) if s > 0 => {}
            other if rec.is_held() => self.warn(Warning::LeaseDurationMissing(other)),
            _ => {}
        }
        self.note_lease_length(rec);
        if self.holding.is_none() && rec.holder != *self.identity() {
            self.own.superseded_by(&obs.version);
        }
        self.max_transitions = Some(self.max_transitions.unwrap_or(0).max(rec.transitions));
        let leader = rec.is_held().then(|| rec.holder.clone());
        if leader != self.reported_leader {
            self.reported_leader = leader.clone();
            self.emit(Event::LeaderChanged { leader });
        }
        let lease = self.holder_lease(&obs.record);
        self.lock = LockView::Present(Seen {
            obs,
            at: now,
            read_at: from_read.then_some(now),
            lease,
        });
        self.note_others(adjacent, now);
        self.note_gap(adjacent, now);
        Novelty::New
    }

    /// How long the holder of `rec` may lead after this version is first seen:
    /// the longer of the record's duration (when usable, capped) and this
    /// node's own, and never shorter than what the version seen before it gave
    /// the same holder (or the previous holder, for a holder emptied by hand,
    /// which counts as that holder's lease still running). A duration edited
    /// shorter under a holder that is cut off, and cannot learn of the edit,
    /// leaves that holder believing by its own longer lease (docs/faults.md
    /// R13, R14).
    fn holder_lease(&self, rec: &LockRecord) -> Duration {
        let own = self.config.lease_duration;
        let written = rec.lease_duration().map_or(own, |d| d.max(own));
        let emptied = !rec.is_held() && !rec.is_released();
        let carried = self
            .lock
            .last()
            .filter(|prev| prev.obs.record.holder == rec.holder || emptied)
            .map_or(own, |prev| prev.lease);
        written.max(carried).min(self.config.max_lease_duration)
    }

    /// The lease duration that applies to the record seen
    /// ([`Elector::holder_lease`]): the longer of the record's own (when usable,
    /// capped) and the configured one, and not shorter than what its holder was
    /// seen to write before. Never shorter than the configured one: a record
    /// whose duration was shortened by hand (or written by a holder configured
    /// with a shorter lease) may be held by a leader whose deadline follows its
    /// own, longer configuration, and a leader cut off from the API cannot learn
    /// of the edit (docs/faults.md R13).
    pub(super) fn effective_duration(&self) -> Duration {
        self.lock
            .present()
            .map_or(self.config.lease_duration, |s| s.lease)
    }

    /// Keeps the longest lease any holder wrote ([`Elector::longest_lease`]):
    /// a record that is not a release's shape, nor a coordinator's assignment
    /// (its default duration says nothing of how long any holder believes),
    /// with a usable duration, capped.
    fn note_lease_length(&mut self, rec: &LockRecord) {
        let assignment = self.config.mode == Mode::Coordinated && rec.acquire_time == Stamp::Unset;
        if rec.is_released() || assignment {
            return;
        }
        if let Some(d) = rec.lease_duration() {
            let d = d.min(self.config.max_lease_duration);
            self.longest_lease = self.longest_lease.max(d);
        }
    }

    /// The longest lease seen from any holder, and never shorter than this
    /// node's own: how long a holder this node cannot see (one behind a gap in
    /// the versions it saw, or one that believed in a lock found deleted) may
    /// still lead. Nodes of one lock may run with other lease durations (a
    /// rollout that changes it, a fleet mixed with client-go), and a holder that
    /// went unseen may be any of them; a holder seen renewing with a long lease
    /// once may renew again behind a gap, so the bound never shrinks while the
    /// node lives (docs/faults.md C7, R14).
    pub(super) fn longest_lease(&self) -> Duration {
        #[cfg(feature = "mutants")]
        if self.config.mutants.own_lease_for_unseen {
            return self.config.lease_duration;
        }
        self.longest_lease
    }

    /// When the lease as seen expires for this node (local clock). An emptied
    /// holder that is not a release's shape ([`LockRecord::is_released`]) counts
    /// as the previous holder's lease still running. A released record naming a
    /// handover target counts as held, for one configured lease duration, by
    /// anyone but the target.
    ///
    /// [`LockRecord::is_released`]: crate::LockRecord::is_released
    pub(super) fn expiry(&self) -> Instant {
        let Some(seen) = self.lock.present() else {
            return Instant::ZERO;
        };
        let rec = &seen.obs.record;
        if !rec.is_released() {
            seen.at + self.effective_duration()
        } else if rec
            .handover
            .as_ref()
            .is_some_and(|h| h.to != *self.identity())
        {
            seen.at + self.config.lease_duration
        } else {
            Instant::ZERO
        }
    }

    /// A change pushed by the watch. An event older than the version already seen
    /// (a resumed or replayed watch) is ignored where versions are ordered
    /// ([`crate::Version::order`]): it would restart the expiry clock of a lease
    /// already timed.
    pub(super) fn on_watch(&mut self, obs: Observation, now: Instant) {
        if self.is_older_news(&obs.version) {
            return;
        }
        if self.holding.is_some() {
            let showed = self.watch_showed(&obs);
            if matches!(showed, WatchShowed::Unconfirmed { .. }) {
                // Not taken in here: the trail of versions seen breaks.
                self.contiguous = false;
            }
            return self.as_holder(News::Watch(showed), Some(obs), now);
        }
        if self.observe(obs, false, now) == Novelty::New {
            self.note_foreign_self_record();
            self.timers.set(crate::timer::Timer::Attempt, now);
        }
    }

    /// What a holder's watch event shows, against what it holds. A newer
    /// version that does not name us cannot be a write of ours (our writes
    /// name us; our release comes only once we stopped): nothing to confirm,
    /// it ends the term with no read first and no release. Otherwise the cache
    /// is our own last write: a watch event that is not ours (an edit that
    /// keeps our name, a handover request, a twin, or a version that cannot be
    /// ordered against ours) is confirmed by a read before anything is
    /// decided. While a write of ours is in flight, the event may be its echo;
    /// the write's answer tells (a conflict leads to the same read).
    fn watch_showed(&self, obs: &Observation) -> WatchShowed {
        if self.is_newer_foreign_record(obs) {
            return WatchShowed::NewerForeignRecord;
        }
        if self.own.wrote(&obs.version) {
            return WatchShowed::OwnWrite;
        }
        let write_in_flight = self
            .in_flight
            .as_ref()
            .is_some_and(|c| c.purpose.is_write());
        // A held record is never the echo of our release (which empties the
        // holder): after a release nothing else would read it (a
        // coordinator's assignment, made over the release, included).
        let releasing = self
            .holding
            .as_ref()
            .is_some_and(|h| h.state == Lead::Releasing);
        let coordinated = self.config.mode == Mode::Coordinated;
        let never_an_echo = coordinated && releasing && obs.record.is_held();
        WatchShowed::Unconfirmed {
            echo_possible: write_in_flight && !never_an_echo,
        }
    }

    /// After a write's answer: a watch event the holder put aside while the
    /// write was in flight ([`Elector::on_watch`]) is judged now, as if it came
    /// after the answer. Unless it was that write's echo (or older news), it is
    /// someone else's version (an end of term, a handover request, an edit) and
    /// is read at once, not a renew interval later.
    pub(super) fn judge_watch_ahead(&mut self, now: Instant) {
        if let Some(obs) = self.watch_ahead.take()
            && self.holding.is_some()
        {
            self.on_watch(obs, now);
        }
    }

    /// Whether a holder's watch shows a record that unambiguously ends its term:
    /// it does not name this node, and its version is ordered after the version
    /// this node holds at ([`Version::order`]). A holder that is already
    /// releasing has stopped leading: its own release may be what it sees.
    fn is_newer_foreign_record(&self, obs: &Observation) -> bool {
        let releasing = self
            .holding
            .as_ref()
            .is_some_and(|h| h.state == Lead::Releasing);
        let newer = self.lock.present().is_some_and(|seen| {
            obs.version.order(&seen.obs.version) == Some(core::cmp::Ordering::Greater)
        });
        !releasing && newer && obs.record.holder != *self.identity()
    }

    /// Whether news at `version` is older than what this node already saw: the
    /// record's version or its deletion, where versions are ordered.
    fn is_older_news(&self, version: &Version) -> bool {
        let older = |seen: &Version| version.order(seen) == Some(core::cmp::Ordering::Less);
        match &self.lock {
            LockView::Unread => false,
            LockView::Present(s) => older(&s.obs.version),
            LockView::Absent { deleted_at, last } => deleted_at
                .as_ref()
                .or(last.as_ref().map(|s| &s.obs.version))
                .is_some_and(older),
        }
    }

    /// The watch saw the lock deleted at `version`: the server's own word that
    /// nothing is left to lead (FAULTS A4). A holder stops at once, with no read
    /// first and no release (there is nothing to release); a deletion older than
    /// the version already seen is a replay, and ignored. An absence without a
    /// version (a watch that found no lock when it started) cannot be placed
    /// before or after this node's own writes: a holder confirms it by a read.
    pub(super) fn on_watch_deleted(&mut self, version: Option<Version>, now: Instant) {
        match &version {
            Some(v) if self.is_older_news(v) => return,
            None if self.holding.is_some() => {
                self.contiguous = false;
                let showed = WatchShowed::AbsentUnplaced;
                return self.as_holder(News::Watch(showed), None, now);
            }
            _ => {}
        }
        self.contiguous = version.is_some();
        self.lose(StopReason::LockDeleted, now);
        self.note_absent(version, now);
        self.timers.set(crate::timer::Timer::Attempt, now);
    }

    /// A follower sees a version it did not write that names it: either it
    /// restarted (its previous life wrote it), or a twin uses its identity. It is
    /// treated as held by another; a second such version proves a twin. An
    /// assignment is neither: a coordinator wrote it (no candidate leaves the
    /// acquire time unset), so it is no twin's write.
    pub(super) fn note_foreign_self_record(&mut self) {
        let Some(seen) = self.lock.present() else {
            return;
        };
        // A write of ours in flight or of unknown outcome may be what we see.
        if seen.obs.record.holder == *self.identity()
            && !self.is_assignment(&seen.obs.record)
            && !self.own.wrote(&seen.obs.version)
            && !self.own_write_pending()
        {
            if self.own.foreign_self_versions > 0 {
                let id = self.identity().clone();
                self.warn(Warning::IdentityCollision(id));
            }
            self.own.foreign_self_versions = self.own.foreign_self_versions.saturating_add(1);
        }
    }

    /// The answer to the read `call`.
    pub(super) fn on_read_answer(
        &mut self,
        result: Result<Observation, LockError>,
        after_conflict: bool,
        call: &InFlight,
        now: Instant,
    ) {
        let sent = call.sent_at;
        match result {
            Ok(obs) => {
                if self.holding.is_some() {
                    self.confirm_holding(obs, after_conflict, now);
                } else if self.overtaken_while_in_flight(&obs, sent) {
                    // Older news than what the watch told meanwhile: the read was
                    // served before that change, not by a server that went back
                    // (W4's switch shows an older version to a read sent *after*
                    // the newer one was seen). Keep the newer view and act on it.
                    self.timers.set(crate::timer::Timer::Attempt, now);
                } else {
                    if self.observe(obs, true, now) == Novelty::New {
                        self.note_foreign_self_record();
                    }
                    if self.phase == super::Phase::ShuttingDown {
                        self.hold_for_release(now);
                    }
                    self.timers.set(crate::timer::Timer::Attempt, now);
                }
            }
            Err(LockError::NotFound) if self.absence_overtaken(call) => {
                self.timers.set(crate::timer::Timer::Attempt, now);
            }
            Err(LockError::NotFound) => {
                self.contiguous = false;
                self.lose(StopReason::LockDeleted, now);
                if self.phase == super::Phase::ShuttingDown {
                    self.own.settle_unknown(); // nothing of ours to release
                }
                self.note_absent(None, now);
                self.timers.set(crate::timer::Timer::Attempt, now);
            }
            Err(e) => {
                let retry = self.follower_backoff(&e);
                if self.holding.is_some() {
                    // Keep trying within the deadline: the next renew (a
                    // compare-and-swap on the cached version) is the next probe,
                    // one retry period on, never a tight loop of reads.
                    let showed = ReadShowed::Failed { backoff: retry };
                    self.as_holder(News::Read(showed), None, now);
                } else {
                    // A watching coordinated follower acts only on what it
                    // sees, and the coordinator may change nothing until it
                    // claims: what the read was sent to learn (a change not
                    // taken in, say) is still owed, at the next attempt. A
                    // classic follower re-reads by itself at the lease's expiry.
                    if self.config.mode == Mode::Coordinated {
                        self.read_due.get_or_insert(ReadDue::BeforeWrite);
                    }
                    self.timers.set(crate::timer::Timer::Attempt, now + retry);
                }
            }
        }
    }

    /// Whether a follower's read answer, sent at `sent`, shows a version ordered
    /// before one first seen after it was sent (a watch event that overtook the
    /// read). Such an answer is older news, not a change: taking it in would time
    /// a lease afresh from a record already replaced, and a release the watch
    /// showed would wait a whole lease.
    fn overtaken_while_in_flight(&self, obs: &Observation, sent: Instant) -> bool {
        self.phase == super::Phase::Running
            && self.lock.present().is_some_and(|seen| {
                seen.at >= sent
                    && obs.version.order(&seen.obs.version) == Some(core::cmp::Ordering::Less)
            })
    }

    /// Whether a follower's answer "not found" to `call` is older news than a
    /// version the watch showed after the call was sent (a create the watch
    /// told of first): the follower keeps that version. Were the lock deleted
    /// since, the same watch tells of it. The version the call was sent on is
    /// no such news, even when seen at the instant the call went: a claim of an
    /// assignment that finds the lock deleted would otherwise be sent again on
    /// it, at that instant, for ever (the model checker's busy loop).
    pub(super) fn absence_overtaken(&self, call: &InFlight) -> bool {
        self.config.mode == Mode::Coordinated
            && self.holding.is_none()
            && self.phase == super::Phase::Running
            && self.lock.present().is_some_and(|seen| {
                seen.at >= call.sent_at && call.seen_at_send.as_ref() != Some(&seen.obs.version)
            })
    }

    /// Ends leadership at once for a reason other than the host's wish.
    pub(super) fn lose(&mut self, reason: StopReason, now: Instant) {
        let Some(h) = &self.holding else { return };
        if matches!(h.state, Lead::Leading | Lead::Draining(_)) {
            let term = h.term.clone();
            self.emit(Event::StoppedLeading { term, reason });
        }
        self.let_go(now);
    }
}
