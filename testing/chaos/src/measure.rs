//! From what was recorded to leadership intervals, overlaps, leaderless time
//! and latencies.
//!
//! A candidate leads from the receipt of its `started leading` line to the
//! earliest of:
//! - the receipt of its `stopped leading` line;
//! - the commit of its own release write (its holder emptied by itself): the
//!   library reports the stop before it sends the release (design §1,
//!   promise 3), and the log line, written by another task of the sidecar, may
//!   trail that write;
//! - its SIGKILL (lines received later were written before it, and are moved to
//!   it), the end of its process, the end of the run;
//! - for a leader SIGSTOPped through its deadline: its deadline. It counts
//!   the renew deadline on its own clock from the send of its last renew
//!   answered success, which it sent before the stop `S` and which committed,
//!   so no later than its last committed write `W`: the deadline is at most
//!   `min(S, W) + renew_deadline / its clock rate`. Stopped through that
//!   instant, it cannot act, and finds itself past its deadline on resume
//!   (docs/faults.md N5), so its late `stopped leading` line says nothing about
//!   when it led;
//! - for a leader whose stop for its renew deadline came late while the
//!   machine did not run it (one of its threads waited for a CPU, or a canary
//!   on a CPU stalled, as long as the stop was late beyond a slack): its
//!   deadline, bounded the same way by its last committed write
//!   ([`clip_withheld`]). Kept from a CPU it is paused as a SIGSTOPped one is,
//!   and its outward claims (`is_leader`, the write guard) turn false at the
//!   deadline by themselves. A late stop the machine does not explain is not
//!   clipped, and fails the run.
//!
//! The raw intervals apply only the line, kill, exit and end-of-run rules.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::history::History;
use crate::logs::Change;

/// One life of one candidate's process.
#[derive(Debug, Clone)]
pub struct Life {
    /// Its slot.
    pub slot: usize,
    /// Which life (0 first, one more per restart).
    pub life: u32,
    /// Its identity (and token).
    pub identity: String,
    /// When it was started.
    pub spawned: Instant,
    /// When it was SIGKILLed.
    pub killed: Option<Instant>,
    /// When its output ended (it exited).
    pub ended: Option<Instant>,
}

/// A leadership line.
#[derive(Debug, Clone)]
pub struct Mark {
    /// Its slot.
    pub slot: usize,
    /// Its life.
    pub life: u32,
    /// Receipt.
    pub at: Instant,
    /// What it says.
    pub change: Change,
}

/// A SIGSTOP and its SIGCONT.
#[derive(Debug, Clone)]
pub struct Pause {
    /// Its slot.
    pub slot: usize,
    /// Its life.
    pub life: u32,
    /// SIGSTOP.
    pub stop: Instant,
    /// SIGCONT (or the kill), if before the end.
    pub cont: Option<Instant>,
}

/// One injected (or skipped) fault.
#[derive(Debug, Clone)]
pub struct FaultRecord {
    /// When it fired.
    pub at: Instant,
    /// Its kind ([`crate::plan::Action::kind`]).
    pub kind: &'static str,
    /// The slot and life it hit.
    pub target: Option<(usize, u32)>,
    /// Whether it was injected (else skipped, `note` says why).
    pub applied: bool,
    /// What the timeline prints.
    pub note: String,
    /// When it ended (a heal, a SIGCONT), for the kinds that last.
    pub healed: Option<Instant>,
}

/// Why an interval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// Its `stopped leading` line.
    StopLine,
    /// Its release write's commit.
    Release,
    /// SIGKILL.
    Kill,
    /// Its process ended without a stop line.
    Exit,
    /// The end of the run.
    RunEnd,
    /// SIGSTOPped through its deadline.
    PauseClip,
    /// Late to stop for its deadline while the machine withheld the CPU.
    WithheldClip,
    /// A second start line before a stop line (should not happen).
    NextStart,
}

/// One term of one candidate, as measured.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Its slot.
    pub slot: usize,
    /// Its life.
    pub life: u32,
    /// The term the line named.
    pub term: String,
    /// The stop reason, if a stop line came.
    pub reason: String,
    /// Start (receipt of the start line).
    pub start: Instant,
    /// End by the raw rules.
    pub raw_end: Instant,
    /// Why, by the raw rules.
    pub raw_cause: EndedBy,
    /// End by all rules.
    pub end: Instant,
    /// Why, by all rules.
    pub cause: EndedBy,
}

/// Builds every interval. `deadline(slot)` is the renew deadline in real
/// time on that slot's clock (`renew_deadline / its rate`).
pub fn intervals(
    lives: &[Life],
    marks: &[Mark],
    pauses: &[Pause],
    history: &History,
    deadline: &dyn Fn(usize) -> Duration,
    run_end: Instant,
) -> Vec<Interval> {
    let mut out = Vec::new();
    for life in lives {
        let limit = life.killed.unwrap_or(run_end).min(run_end);
        let close = |at: Instant| -> (Instant, EndedBy) {
            if at.min(limit) >= run_end {
                (run_end, EndedBy::RunEnd)
            } else if life.killed.is_some_and(|k| k <= at) {
                (limit, EndedBy::Kill)
            } else {
                (at, EndedBy::StopLine)
            }
        };
        let mut open: Option<(Instant, String)> = None;
        let mut mine: Vec<Interval> = Vec::new();
        let mut push =
            |start: Instant, term: String, end: Instant, cause: EndedBy, reason: String| {
                if start < run_end {
                    mine.push(Interval {
                        slot: life.slot,
                        life: life.life,
                        term,
                        reason,
                        start,
                        raw_end: end,
                        raw_cause: cause,
                        end,
                        cause,
                    });
                }
            };
        for m in marks
            .iter()
            .filter(|m| m.slot == life.slot && m.life == life.life)
        {
            let at = m.at.min(limit);
            match &m.change {
                Change::Started(term) => {
                    if let Some((start, t)) = open.take() {
                        push(start, t, at, EndedBy::NextStart, String::new());
                    }
                    open = Some((at, term.clone()));
                }
                Change::Stopped(_, reason) => {
                    if let Some((start, t)) = open.take() {
                        let (end, cause) = close(m.at);
                        push(start, t, end.max(start), cause, reason.clone());
                    }
                }
            }
        }
        if let Some((start, t)) = open {
            let (end, cause) = match (life.killed, life.ended) {
                (Some(k), _) if k < run_end => (k, EndedBy::Kill),
                (None, Some(e)) if e < run_end => (e, EndedBy::Exit),
                _ => (run_end, EndedBy::RunEnd),
            };
            push(start, t, end.max(start), cause, String::new());
        }
        for iv in &mut mine {
            // Its own release.
            if let Some(w) = history
                .between(iv.start, iv.end)
                .find(|w| w.client == life.identity && w.holder.as_deref() == Some(""))
                && w.at < iv.end
            {
                iv.end = w.at;
                iv.cause = EndedBy::Release;
            }
            // Stopped through its deadline.
            for p in pauses
                .iter()
                .filter(|p| p.slot == life.slot && p.life == life.life)
            {
                // Its last committed write: this term's acquire at the
                // earliest (every start is backed by one).
                let last_write = history.last_by(&life.identity, iv.end).map(|w| w.at);
                let from = last_write.map_or(p.stop, |w| w.min(p.stop));
                let clip_at = from + deadline(life.slot);
                let through = p.cont.is_none_or(|c| c >= clip_at);
                if through && p.stop >= iv.start && p.stop < iv.end && clip_at < iv.end {
                    iv.end = clip_at;
                    iv.cause = EndedBy::PauseClip;
                }
            }
        }
        out.extend(mine);
    }
    out.sort_by_key(|iv| iv.start);
    out
}

/// Two intervals of different lives leading at once.
#[derive(Debug, Clone)]
pub struct Overlap {
    /// Index of the earlier-starting interval.
    pub first: usize,
    /// Index of the other.
    pub second: usize,
    /// Where they overlap.
    pub from: Instant,
    /// To.
    pub to: Instant,
}

fn bounds(iv: &Interval, raw: bool) -> (Instant, Instant) {
    (iv.start, if raw { iv.raw_end } else { iv.end })
}

/// Every pair of intervals that overlap for a positive time.
pub fn overlaps(ivs: &[Interval], raw: bool) -> Vec<Overlap> {
    let mut out = Vec::new();
    for (i, a) in ivs.iter().enumerate() {
        let (sa, ea) = bounds(a, raw);
        for (j, b) in ivs.iter().enumerate().skip(i + 1) {
            let (sb, eb) = bounds(b, raw);
            if sb >= ea {
                break; // sorted by start
            }
            if (a.slot, a.life) == (b.slot, b.life) {
                continue;
            }
            let (from, to) = (sa.max(sb), ea.min(eb));
            if to > from {
                out.push(Overlap {
                    first: i,
                    second: j,
                    from,
                    to,
                });
            }
        }
    }
    out
}

/// How long at least `k` intervals were open at once, within `[from, to]`.
pub fn covered(ivs: &[Interval], raw: bool, k: i32, from: Instant, to: Instant) -> Duration {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for iv in ivs {
        let (s, e) = bounds(iv, raw);
        let (s, e) = (s.max(from), e.min(to));
        if e > s {
            edges.push((s, 1));
            edges.push((e, -1));
        }
    }
    // Ends before starts at one instant: touching intervals do not overlap.
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut open, mut total, mut since) = (0, Duration::ZERO, from);
    for (t, d) in edges {
        if open >= k {
            total += t - since;
        }
        open += d;
        since = t;
    }
    total
}

/// Hand-over and failover latencies, in milliseconds.
#[derive(Debug, Default)]
pub struct Latencies {
    /// SIGTERM of the leader -> the next start.
    pub handover: Vec<f64>,
    /// Kill, stop or partition of the leader -> the next start, by kind.
    pub failover: BTreeMap<&'static str, Vec<f64>>,
    /// Faults on the leader that it rode out (still leading afterwards).
    pub rode_out: BTreeMap<&'static str, usize>,
    /// Faults on the leader after which nobody led before the end.
    pub no_next: usize,
    /// Every sample: the fault's index, and milliseconds.
    pub each: Vec<(usize, f64)>,
}

/// Latencies of the faults that hit a leader. `grace` is how long after a
/// fault's end a loss still counts as caused by it (one renew deadline).
pub fn latencies(ivs: &[Interval], faults: &[FaultRecord], grace: Duration) -> Latencies {
    let mut out = Latencies::default();
    for (index, f) in faults.iter().enumerate().filter(|(_, f)| f.applied) {
        let Some((slot, life)) = f.target else {
            continue;
        };
        let failover = match f.kind {
            "SIGTERM + restart" => false,
            "SIGKILL + restart" | "SIGSTOP/SIGCONT" | "partition (reset)" | "partition (hang)" => {
                true
            }
            _ => continue,
        };
        let Some(held) = ivs
            .iter()
            .find(|iv| (iv.slot, iv.life) == (slot, life) && iv.start <= f.at && f.at <= iv.end)
        else {
            continue;
        };
        // A later SIGTERM or SIGKILL of the same life within the term ended it.
        let ended_by_later = faults.iter().any(|g| {
            g.applied
                && g.target == f.target
                && matches!(g.kind, "SIGTERM + restart" | "SIGKILL + restart")
                && g.at > f.at
                && g.at <= held.end
        });
        if failover && (ended_by_later || held.end > f.healed.unwrap_or(f.at) + grace) {
            *out.rode_out.entry(f.kind).or_default() += 1;
            continue;
        }
        let next = ivs
            .iter()
            .filter(|iv| iv.start >= held.end.max(f.at))
            .map(|iv| iv.start)
            .min();
        let Some(next) = next else {
            out.no_next += 1;
            continue;
        };
        let ms = (next - f.at).as_secs_f64() * 1e3;
        out.each.push((index, ms));
        if failover {
            out.failover.entry(f.kind).or_default().push(ms);
        } else {
            out.handover.push(ms);
        }
    }
    out
}

/// Whom an overlap is charged to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Charge {
    /// One of its two terms (an index into the intervals).
    Term(usize),
    /// The writer of a release (an empty holder, a duration of 1 s or none)
    /// committed over the earlier term's record by someone else: it evicted
    /// a live leader, which design §4 ("Foreign edits and twins") lets a
    /// release do.
    Release(String),
}

/// Whom an overlap is charged to: a foreign release that let the later term
/// take the Lease ([`Charge::Release`]); else the earlier term when it led
/// past its deadline (its last committed write before the later one's start,
/// plus the renew deadline on its clock, plus `slack`); else the later one (it
/// took the Lease while the earlier one still held it). Matters in a mixed
/// fleet: a client-go term's overlap with a kube-elector term is client-go's
/// or this library's by it.
pub fn charged(
    o: &Overlap,
    ivs: &[Interval],
    lives: &[Life],
    history: &History,
    deadline: &dyn Fn(usize) -> Duration,
    slack: Duration,
) -> Charge {
    let earlier = &ivs[o.first];
    let Some(life) = life_of(lives, earlier) else {
        return Charge::Term(o.first);
    };
    let last = history.last_by(&life.identity, o.from);
    if let Some(last) = last
        && let Some(release) = history.between(last.at, o.from).find(|w| {
            w.client != life.identity
                && w.holder.as_deref() == Some("")
                && w.duration.is_none_or(|d| d <= 1)
        })
    {
        return Charge::Release(release.client.clone());
    }
    match last.map(|w| w.at + deadline(earlier.slot) + slack) {
        Some(due) if earlier.end <= due => Charge::Term(o.second),
        _ => Charge::Term(o.first),
    }
}

/// The life an interval belongs to.
fn life_of<'a>(lives: &'a [Life], iv: &Interval) -> Option<&'a Life> {
    lives
        .iter()
        .find(|l| (l.slot, l.life) == (iv.slot, iv.life))
}

/// Starts with no committed write naming their candidate, by that candidate,
/// since its previous start in the same life (or its spawn): indices.
pub fn unbacked_starts(
    ivs: &[Interval],
    lives: &[Life],
    history: &History,
    slack: Duration,
) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, iv) in ivs.iter().enumerate() {
        let Some(life) = life_of(lives, iv) else {
            continue;
        };
        let since = ivs[..i]
            .iter()
            .filter(|p| (p.slot, p.life) == (iv.slot, iv.life))
            .map(|p| p.start)
            .max()
            .unwrap_or(life.spawned);
        let backed = history.between(since, iv.start + slack).any(|w| {
            w.client == life.identity && w.holder.as_deref() == Some(life.identity.as_str())
        });
        if !backed {
            out.push(i);
        }
    }
    out
}

/// How long candidates reported leading while the Lease (by the committed
/// writes) named someone else or was deleted: in total, and the longest
/// stretch with its interval's index. A leader's deadline is at most one renew
/// deadline after its last successful write, which precedes any write that
/// takes the Lease from it: so the longest stretch stays under the renew
/// deadline (times the clock ratio), plus the lag of its stop line.
pub fn stale_belief(
    ivs: &[Interval],
    lives: &[Life],
    history: &History,
) -> (Duration, Duration, Option<usize>) {
    let (mut total, mut longest, mut worst) = (Duration::ZERO, Duration::ZERO, None);
    for (i, iv) in ivs.iter().enumerate() {
        let Some(life) = life_of(lives, iv) else {
            continue;
        };
        let names_me = |holder: &Option<String>| holder.as_deref() == Some(life.identity.as_str());
        let mut stale_since = history
            .last_before(iv.start)
            .filter(|w| !names_me(&w.holder))
            .map(|_| iv.start);
        let mut close = |since: Instant, until: Instant| {
            let d = until.saturating_duration_since(since);
            total += d;
            if d > longest {
                longest = d;
                worst = Some(i);
            }
        };
        for w in history.between(iv.start, iv.end) {
            match (stale_since, names_me(&w.holder)) {
                (None, false) => stale_since = Some(w.at),
                (Some(since), true) => {
                    close(since, w.at);
                    stale_since = None;
                }
                _ => {}
            }
        }
        if let Some(since) = stale_since {
            close(since, iv.end);
        }
    }
    (total, longest, worst)
}

/// A term whose stop line for its renew deadline came late.
#[derive(Debug, Clone, Copy)]
pub struct LateStop {
    /// The interval's index.
    pub iv: usize,
    /// Its last committed write + the renew deadline (on its clock): at or
    /// after its real deadline, which counts from the write's sending.
    pub due: Instant,
}

/// Whether a term ended by its own stop line for the renew deadline, not
/// SIGSTOPped through it (a stopped term's lateness is the stop's).
pub fn stopped_by_deadline(iv: &Interval) -> bool {
    iv.raw_cause == EndedBy::StopLine
        && iv.cause != EndedBy::PauseClip
        && iv.reason == "renew deadline exceeded"
}

/// Ends each late stop of `late` at its due instant (its deadline's bound),
/// as [`EndedBy::WithheldClip`]: the caller found that the machine did not run
/// its process meanwhile.
pub fn clip_withheld(ivs: &mut [Interval], late: &[LateStop]) {
    for l in late {
        let iv = &mut ivs[l.iv];
        if l.due < iv.end {
            iv.end = l.due;
            iv.cause = EndedBy::WithheldClip;
        }
    }
}

/// Terms [`stopped_by_deadline`] whose `stopped leading` came more than `slack`
/// after it was due by the committed writes. `deadline(slot)` as in
/// [`intervals`].
pub fn late_stops(
    ivs: &[Interval],
    lives: &[Life],
    history: &History,
    deadline: &dyn Fn(usize) -> Duration,
    slack: Duration,
) -> Vec<LateStop> {
    let mut out = Vec::new();
    for (i, iv) in ivs.iter().enumerate() {
        if !stopped_by_deadline(iv) {
            continue;
        }
        let Some(life) = life_of(lives, iv) else {
            continue;
        };
        let Some(last) = history.last_by(&life.identity, iv.raw_end) else {
            continue;
        };
        let due = last.at + deadline(iv.slot);
        if iv.raw_end > due + slack {
            out.push(LateStop { iv: i, due });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::LeaseWrite;

    fn term(slot: usize, start: Instant, end: Instant) -> Interval {
        Interval {
            slot,
            life: 0,
            term: String::new(),
            reason: String::new(),
            start,
            raw_end: end,
            raw_cause: EndedBy::StopLine,
            end,
            cause: EndedBy::StopLine,
        }
    }

    #[test]
    fn an_overlap_is_charged_to_a_foreign_release_else_to_the_term_past_its_deadline_else_to_the_taker()
     {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let lives: Vec<Life> = ["a", "b"]
            .iter()
            .enumerate()
            .map(|(slot, id)| Life {
                slot,
                life: 0,
                identity: (*id).to_owned(),
                spawned: t0,
                killed: None,
                ended: None,
            })
            .collect();
        let mut history = History::new("l");
        for (ms, who) in [(0, "a"), (1000, "a"), (3000, "b")] {
            history.push(LeaseWrite {
                at: at(ms),
                client: who.to_owned(),
                verb: kube_emulator::Verb::Update,
                holder: Some(who.to_owned()),
                duration: Some(2),
                version: None,
            });
        }
        let deadline = |_: usize| Duration::from_millis(1500);
        let slack = Duration::from_millis(250);
        // a renewed last at 1.0 s: due by 2.5 s (+ slack). It led to 3.5 s,
        // past it, while b took the Lease at 3.0 s: a's.
        let ivs = [term(0, at(0), at(3500)), term(1, at(3010), at(9000))];
        let o = &overlaps(&ivs, false)[0];
        assert_eq!(
            charged(o, &ivs, &lives, &history, &deadline, slack),
            Charge::Term(0)
        );
        // a stopped at 2.6 s, within its bound, and b led from 2.0 s
        // (taken early): b's.
        let ivs = [term(0, at(0), at(2600)), term(1, at(2000), at(9000))];
        let o = &overlaps(&ivs, false)[0];
        assert_eq!(
            charged(o, &ivs, &lives, &history, &deadline, slack),
            Charge::Term(1)
        );
        // A release by a third writer, over a's record, just before b took
        // the Lease: the releaser's.
        history.push(LeaseWrite {
            at: at(1900),
            client: "g".to_owned(),
            verb: kube_emulator::Verb::Update,
            holder: Some(String::new()),
            duration: Some(1),
            version: None,
        });
        assert_eq!(
            charged(o, &ivs, &lives, &history, &deadline, slack),
            Charge::Release("g".to_owned())
        );
    }
}
