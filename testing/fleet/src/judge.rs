//! Overlap, judged two ways: from the peers' own lines (who acted while
//! another led), and from the Lease's history as the API server stored it
//! (no holder taken over before its lease ran out).

use crate::line::{Event, Line};
use crate::peer::{Mark, Signal};

/// One term of one peer by its lines: from its `leading` line to its
/// `stopped` or `exit` line, the harness's SIGKILL, or the `started` line of
/// its next process; open (`to: None`) while it leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    /// The peer.
    pub identity: String,
    /// `leading`, monotonic nanoseconds.
    pub from: u64,
    /// Its end, if it ended.
    pub to: Option<u64>,
}

impl Term {
    /// Whether it covers `t`.
    pub fn covers(&self, t: u64) -> bool {
        self.from <= t && self.to.is_none_or(|to| t <= to)
    }
}

/// Every term in `lines` (with the harness's `marks`), by start.
pub fn terms(lines: &[Line], marks: &[Mark]) -> Vec<Term> {
    // (time, identity, opens?) per line or mark that starts or ends a term.
    let mut steps: Vec<(u64, &str, bool)> = lines
        .iter()
        .filter_map(|l| match l.event {
            Event::Leading => Some((l.mono, l.identity.as_str(), true)),
            Event::Stopped | Event::Exit | Event::Started => {
                Some((l.mono, l.identity.as_str(), false))
            }
            _ => None,
        })
        .chain(
            marks
                .iter()
                .filter(|m| m.signal == Signal::Kill)
                .map(|m| (m.mono, m.identity.as_str(), false)),
        )
        .collect();
    steps.sort();
    let mut open: Vec<Term> = Vec::new();
    let mut done = Vec::new();
    for (t, id, opens) in steps {
        if let Some(i) = open.iter().position(|term| term.identity == id) {
            let mut term = open.remove(i);
            term.to = Some(t);
            done.push(term);
        }
        if opens {
            open.push(Term {
                identity: id.to_owned(),
                from: t,
                to: None,
            });
        }
    }
    done.extend(open);
    // A peer paused in its term that, resumed, stopped without acting led
    // until the pause: it did nothing after it (its resumption takes a moment
    // to print).
    for term in &mut done {
        let pause = marks.iter().enumerate().find(|(_, m)| {
            m.identity == term.identity && m.signal == Signal::Stop && term.covers(m.mono)
        });
        let Some((i, stop)) = pause else { continue };
        let resumed = marks[i + 1..]
            .iter()
            .find(|c| c.identity == term.identity && c.signal == Signal::Cont)
            .map_or(u64::MAX, |c| c.mono);
        let acted = lines.iter().any(|l| {
            l.identity == term.identity
                && matches!(l.event, Event::Leading | Event::Tick)
                && l.mono >= resumed
                && term.covers(l.mono)
        });
        if term.to.is_some() && !acted {
            term.to = Some(stop.mono);
        }
    }
    done.sort_by_key(|t| t.from);
    done
}

/// The holder of the Lease at `t` by its `history`: the last state that
/// arrived by then.
pub fn holder_at(history: &[Recorded], t: u64) -> Option<&str> {
    history
        .iter()
        .take_while(|r| r.mono <= t)
        .last()
        .map(|r| r.holder.as_str())
}

/// Every tick of a peer that the Lease did not name as its holder `lag`
/// nanoseconds before (the watch delivers a state a moment after it is
/// written): work done outside its term by the API server's record.
pub fn ticks_outside_the_lease(lines: &[Line], history: &[Recorded], lag: u64) -> Vec<Overlap> {
    lines
        .iter()
        .filter(|l| l.event == Event::Tick)
        .filter_map(|l| {
            let holder = holder_at(history, l.mono.saturating_sub(lag)).unwrap_or("");
            (holder != l.identity).then(|| Overlap {
                actor: l.identity.clone(),
                at: l.mono,
                leader: holder.to_owned(),
            })
        })
        .collect()
}

/// The windows in which the harness held a peer stopped (SIGSTOP to SIGCONT):
/// it could not act then.
pub fn pauses(marks: &[Mark]) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        if m.signal == Signal::Stop {
            let end = marks[i + 1..]
                .iter()
                .find(|c| {
                    c.identity == m.identity && matches!(c.signal, Signal::Cont | Signal::Kill)
                })
                .map_or(u64::MAX, |c| c.mono);
            out.push((m.identity.clone(), m.mono, end));
        }
    }
    out
}

/// A peer acted (`leading`, `tick`) while another led.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// Who acted.
    pub actor: String,
    /// When.
    pub at: u64,
    /// Who led then.
    pub leader: String,
}

/// Every act of a peer inside another peer's term (outside its pauses).
pub fn act_overlaps(lines: &[Line], marks: &[Mark]) -> Vec<Overlap> {
    let terms = terms(lines, marks);
    let pauses = pauses(marks);
    let paused = |id: &str, t: u64| pauses.iter().any(|(p, a, b)| p == id && *a <= t && t <= *b);
    lines
        .iter()
        .filter(|l| matches!(l.event, Event::Leading | Event::Tick))
        .flat_map(|l| {
            terms
                .iter()
                .filter(|term| {
                    term.identity != l.identity
                        && term.covers(l.mono)
                        && !paused(&term.identity, l.mono)
                })
                .map(|term| Overlap {
                    actor: l.identity.clone(),
                    at: l.mono,
                    leader: term.identity.clone(),
                })
        })
        .collect()
}

/// Pairs of terms of different peers that overlap in time (each believed it
/// led), with the length of the overlap in nanoseconds; a paused peer's pause
/// is not counted.
pub fn term_overlaps(lines: &[Line], marks: &[Mark]) -> Vec<(Term, Term, u64)> {
    let terms = terms(lines, marks);
    let pauses = pauses(marks);
    let mut out = Vec::new();
    for (i, a) in terms.iter().enumerate() {
        for b in &terms[i + 1..] {
            if a.identity == b.identity {
                continue;
            }
            let from = a.from.max(b.from);
            let to = a.to.unwrap_or(u64::MAX).min(b.to.unwrap_or(u64::MAX));
            if from >= to {
                continue;
            }
            // Minus the time either was paused.
            let paused: u64 = pauses
                .iter()
                .filter(|(p, _, _)| *p == a.identity || *p == b.identity)
                .map(|(_, s, e)| (*e).min(to).saturating_sub((*s).max(from)))
                .sum();
            let overlap = (to - from).saturating_sub(paused);
            if overlap > 0 {
                out.push((a.clone(), b.clone(), overlap));
            }
        }
    }
    out
}

/// One state of the Lease as a watch kept by the harness received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// When it arrived, monotonic nanoseconds.
    pub mono: u64,
    /// `holderIdentity` (`""` when absent).
    pub holder: String,
    /// `leaseTransitions`.
    pub transitions: i32,
    /// `leaseDurationSeconds`.
    pub duration_secs: i32,
    /// `resourceVersion`.
    pub version: String,
    /// `renewTime` as stored (`""` when absent).
    pub renew: String,
}

/// How `leaseTransitions` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counting {
    /// Each change of holder exactly once, by the candidate that takes the
    /// Lease (client-go and kube-elector alike); a holder's own Lease taken
    /// back after a loss once more at most (kube-elector's new term, design
    /// §4 "a record naming this node"; client-go keeps the count).
    EachHolder,
    /// Coordinated election: kube-apiserver's coordinator assigns the Lease
    /// keeping the count, client-go's assignee keeps it too, kube-elector's
    /// claims the assignment as a new term (one more); so the count never
    /// falls and grows by one at most per write.
    Coordinated,
}

/// What is wrong with the Lease's history: a holder taken over (no release
/// between) sooner than its lease after its last write, within `tolerance`
/// nanoseconds for the watch's delivery; a `leaseTransitions` that does not
/// count as `counting` says.
pub fn history_faults(history: &[Recorded], tolerance: u64, counting: Counting) -> Vec<String> {
    let mut faults = Vec::new();
    for pair in history.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if counting == Counting::Coordinated {
            if !(before.transitions..=before.transitions + 1).contains(&after.transitions) {
                faults.push(format!(
                    "{:?} at {} with leaseTransitions {} -> {}",
                    after.holder, after.version, before.transitions, after.transitions
                ));
            }
        } else if before.holder == after.holder {
            if !(before.transitions..=before.transitions + 1).contains(&after.transitions) {
                faults.push(format!(
                    "{:?} renewed at {} with leaseTransitions {} -> {}",
                    after.holder, after.version, before.transitions, after.transitions
                ));
            }
            continue;
        }
        if before.holder == after.holder {
            continue;
        }
        if after.holder.is_empty() {
            if counting == Counting::EachHolder && after.transitions != before.transitions {
                faults.push(format!(
                    "a release at {} changed leaseTransitions {} -> {}",
                    after.version, before.transitions, after.transitions
                ));
            }
            continue;
        }
        if counting == Counting::EachHolder && after.transitions != before.transitions + 1 {
            faults.push(format!(
                "{:?} took over from {:?} at {} with leaseTransitions {} -> {}",
                after.holder, before.holder, after.version, before.transitions, after.transitions
            ));
        }
        if !before.holder.is_empty() {
            let lease = u64::try_from(before.duration_secs).unwrap_or(0) * 1_000_000_000;
            let waited = after.mono.saturating_sub(before.mono);
            if waited + tolerance < lease {
                faults.push(format!(
                    "{:?} took over from {:?} at {} {:.3} s after its last write, before its {} s lease ran out",
                    after.holder,
                    before.holder,
                    after.version,
                    waited as f64 / 1e9,
                    before.duration_secs
                ));
            }
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(mono: u64, id: &str, event: Event) -> Line {
        Line {
            mono,
            wall: String::new(),
            identity: id.into(),
            event,
        }
    }

    fn mark(mono: u64, id: &str, signal: Signal) -> Mark {
        Mark {
            mono,
            identity: id.into(),
            signal,
        }
    }

    #[test]
    fn terms_end_at_stopped_exit_a_kill_or_the_next_process() {
        let lines = [
            line(10, "a", Event::Leading),
            line(20, "a", Event::Tick),
            line(30, "a", Event::Stopped),
            line(40, "b", Event::Leading),
            line(60, "b", Event::Started),
            line(70, "c", Event::Leading),
        ];
        let marks = [mark(50, "c", Signal::Kill)];
        let t = terms(&lines, &marks);
        let spans: Vec<(&str, u64, Option<u64>)> = t
            .iter()
            .map(|t| (t.identity.as_str(), t.from, t.to))
            .collect();
        assert_eq!(
            spans,
            [("a", 10, Some(30)), ("b", 40, Some(60)), ("c", 70, None)]
        );
        assert!(act_overlaps(&lines, &marks).is_empty());
        assert!(term_overlaps(&lines, &marks).is_empty());
    }

    #[test]
    fn an_act_inside_anothers_term_is_an_overlap_unless_that_one_was_paused() {
        let lines = [
            line(10, "a", Event::Leading),
            line(50, "b", Event::Leading),
            line(60, "a", Event::Tick),
            line(70, "a", Event::Stopped),
        ];
        let overlaps = act_overlaps(&lines, &[]);
        assert_eq!(
            overlaps,
            [
                Overlap {
                    actor: "b".into(),
                    at: 50,
                    leader: "a".into()
                },
                Overlap {
                    actor: "a".into(),
                    at: 60,
                    leader: "b".into()
                },
            ]
        );
        assert_eq!(term_overlaps(&lines, &[])[0].2, 20);
        // a was paused from 20 to 55: b's start is no overlap, a's tick at 60,
        // after its resumption, is; of the terms' overlap 55..70 counts.
        let paused = [mark(20, "a", Signal::Stop), mark(55, "a", Signal::Cont)];
        let overlaps = act_overlaps(&lines, &paused);
        assert_eq!(overlaps.len(), 1, "{overlaps:?}");
        assert_eq!(overlaps[0].actor, "a");
        assert_eq!(term_overlaps(&lines, &paused)[0].2, 15);
    }

    #[test]
    fn a_paused_term_that_stops_without_acting_ends_at_its_pause() {
        let lines = [
            line(10, "a", Event::Leading),
            line(20, "a", Event::Tick),
            line(50, "b", Event::Leading),
            line(61, "a", Event::Stopped),
        ];
        let paused = [mark(30, "a", Signal::Stop), mark(60, "a", Signal::Cont)];
        assert_eq!(terms(&lines, &paused)[0].to, Some(30));
        assert!(term_overlaps(&lines, &paused).is_empty());
        // Resumed, it ticks once more before stopping: its term runs on.
        let mut acted = lines.to_vec();
        acted.insert(3, line(60, "a", Event::Tick));
        assert_eq!(terms(&acted, &paused)[0].to, Some(61));
        assert_eq!(term_overlaps(&acted, &paused)[0].2, 1);
    }

    #[test]
    fn a_tick_is_judged_by_the_lease_a_lag_before_it() {
        let history = [rec(0, "a", 0), rec(100, "b", 1)];
        let lines = [
            line(50_000_000, "a", Event::Tick),
            line(120_000_000, "a", Event::Tick),
            line(160_000_000, "a", Event::Tick),
            line(160_000_000, "b", Event::Tick),
        ];
        let outside = ticks_outside_the_lease(&lines, &history, 50_000_000);
        assert_eq!(
            outside,
            [Overlap {
                actor: "a".into(),
                at: 160_000_000,
                leader: "b".into()
            }]
        );
    }

    fn rec(mono_ms: u64, holder: &str, transitions: i32) -> Recorded {
        Recorded {
            mono: mono_ms * 1_000_000,
            holder: holder.into(),
            transitions,
            duration_secs: 3,
            version: format!("{mono_ms}"),
            renew: String::new(),
        }
    }

    #[test]
    fn a_takeover_before_the_lease_ran_out_or_a_miscount_is_a_fault() {
        let good = [
            rec(0, "a", 0),
            rec(1000, "a", 0),
            rec(1100, "", 0),
            rec(1150, "b", 1),
            rec(2000, "b", 1),
            rec(5000, "c", 2),
        ];
        assert_eq!(
            history_faults(&good, 50_000_000, Counting::EachHolder),
            Vec::<String>::new()
        );
        let early = [rec(0, "a", 0), rec(2000, "b", 1)];
        assert_eq!(
            history_faults(&early, 50_000_000, Counting::EachHolder).len(),
            1
        );
        // A holder's own Lease taken back as a new term: one more, not two.
        let taken_back = [rec(0, "a", 0), rec(6000, "a", 1)];
        assert!(history_faults(&taken_back, 50_000_000, Counting::EachHolder).is_empty());
        let twice = [rec(0, "a", 0), rec(6000, "a", 2)];
        assert_eq!(
            history_faults(&twice, 50_000_000, Counting::EachHolder).len(),
            1
        );
        let miscounted = [rec(0, "a", 0), rec(3100, "b", 2), rec(3200, "", 1)];
        assert_eq!(
            history_faults(&miscounted, 50_000_000, Counting::EachHolder).len(),
            2
        );
        // Coordinated: an assignment keeps the count, a claim adds one.
        let coordinated = [
            rec(0, "a", 3),
            rec(1000, "", 3),
            rec(1100, "b", 3),
            rec(1200, "b", 4),
        ];
        assert_eq!(
            history_faults(&coordinated, 50_000_000, Counting::Coordinated),
            Vec::<String>::new()
        );
        // Counted by holder: the assignment's count kept is a fault; the
        // claim's one more, by the same holder, a new term.
        assert_eq!(
            history_faults(&coordinated, 50_000_000, Counting::EachHolder).len(),
            1
        );
        let falling = [rec(0, "a", 3), rec(3100, "b", 2)];
        assert_eq!(
            history_faults(&falling, 50_000_000, Counting::Coordinated).len(),
            1
        );
    }
}
