//! The figures, and the trace of any overlap.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube_emulator::Verb;
use test_kit::figures::{cpu_model, percentile};

use crate::canary::{Canaries, Stall};
use crate::kubectl::is_kubectl;
use crate::logs::Source;
use crate::measure::{self, EndedBy, Interval, LateStop, Overlap};
use crate::plan::Action;
use crate::procs::Timings;
use crate::run::Run;
use crate::server::{Counts, Kind as ServerKind};

/// What the report needs besides the run.
pub struct Context {
    /// The timings.
    pub timings: Timings,
    /// The largest ratio of two candidates' clock rates (1 without skew).
    pub max_ratio: f64,
    /// Where measurement stopped.
    pub run_end: Instant,
    /// The server's request counts at that point.
    pub counts: Counts,
    /// The server.
    pub server: ServerKind,
    /// The command that replays the schedule.
    pub replay: String,
    /// The seed.
    pub seed: u64,
    /// Print every term and latency sample.
    pub verbose: bool,
}

/// How late a stop for the renew deadline may print before it counts as late
/// (the `late stops` line).
const LATE_SLACK: Duration = Duration::from_millis(250);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn stats(xs: &[f64]) -> String {
    if xs.is_empty() {
        return "n=0".to_owned();
    }
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    format!(
        "n={:<3} p50 {:>8.1} ms  p90 {:>8.1} ms  p99 {:>8.1} ms  max {:>8.1} ms",
        xs.len(),
        percentile(&xs, 0.5),
        percentile(&xs, 0.9),
        percentile(&xs, 0.99),
        xs[xs.len() - 1]
    )
}

fn cause(c: EndedBy) -> &'static str {
    match c {
        EndedBy::StopLine => "its stop line",
        EndedBy::Release => "its release's commit",
        EndedBy::Kill => "SIGKILL",
        EndedBy::Exit => "its exit",
        EndedBy::RunEnd => "the end of the run",
        EndedBy::PauseClip => "SIGSTOP through its deadline (clip)",
        EndedBy::WithheldClip => "kept from a CPU through its deadline (clip)",
        EndedBy::NextStart => "a second start line",
    }
}

/// Prints the figures; whether the run passed (no overlap, every start backed
/// by a committed write).
pub fn print(run: &Run, cx: &Context) -> bool {
    let t = |at: Instant| run.t(at);
    let deadline = |slot: usize| {
        cx.timings
            .renew
            .div_f64(run.slots[slot].spec.rate.unwrap_or(1.0))
    };
    let mut ivs = measure::intervals(
        &run.lives,
        &run.marks,
        &run.pauses,
        &run.history,
        &deadline,
        cx.run_end,
    );
    // Late stops: the machine's (clipped at their deadline) or unexplained
    // (the run fails).
    let late: Vec<(LateStop, Option<String>)> =
        measure::late_stops(&ivs, &run.lives, &run.history, &deadline, LATE_SLACK)
            .into_iter()
            .map(|l| (l, withheld(run, &ivs[l.iv], l.due)))
            .collect();
    let (withheld_late, unexplained): (Vec<_>, Vec<_>) =
        late.iter().partition(|(_, why)| why.is_some());
    let withheld_late: Vec<LateStop> = withheld_late.iter().map(|(l, _)| *l).collect();
    measure::clip_withheld(&mut ivs, &withheld_late);
    let ivs = ivs;
    let longest_deadline = (0..run.slots.len())
        .map(deadline)
        .max()
        .unwrap_or(cx.timings.renew);
    // Each overlap charged to one of its terms: this library's fail the run,
    // client-go's are the reference, reported apart (`--client-go`).
    // A release by a client-go candidate over another's record is client-go's
    // (its `release()` reads the Lease for its version, then empties it
    // without checking it still holds it: docs/faults.md N30); any other
    // releaser's is this library's, to be looked at.
    let ours = |iv: usize| run.slots[ivs[iv].slot].spec.kind.is_ours();
    let charged_to_us = |o: &Overlap| match measure::charged(
        o,
        &ivs,
        &run.lives,
        &run.history,
        &deadline,
        LATE_SLACK,
    ) {
        measure::Charge::Term(i) => ours(i),
        measure::Charge::Release(client) => !run
            .slots
            .iter()
            .any(|s| s.spec.identity == client && !s.spec.kind.is_ours()),
    };
    let (overlaps, client_go_overlaps): (Vec<Overlap>, Vec<Overlap>) =
        measure::overlaps(&ivs, false)
            .into_iter()
            .partition(charged_to_us);
    let raw = measure::overlaps(&ivs, true);
    let run_len = cx.run_end - run.t0;
    let minutes = run_len.as_secs_f64() / 60.0;
    let id = |slot: usize| run.slots[slot].spec.identity.as_str();

    println!();
    println!("== results");
    println!(
        "run          {:.1} s, seed {}, {} candidates: {}",
        run_len.as_secs_f64(),
        cx.seed,
        run.slots.len(),
        run.slots
            .iter()
            .map(|s| format!("{} {}", s.spec.identity, s.spec.kind.name()))
            .collect::<Vec<_>>()
            .join(", ")
    );

    // Faults by kind.
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for f in &run.faults {
        let e = by_kind.entry(f.kind).or_default();
        if f.applied {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    let injected: usize = by_kind.values().map(|v| v.0).sum();
    let skipped: usize = by_kind.values().map(|v| v.1).sum();
    println!("faults       {injected} injected, {skipped} skipped (target not up, or busy)");
    for kind in Action::kinds(cx.server) {
        let (a, s) = by_kind.get(kind).copied().unwrap_or_default();
        println!(
            "  {kind:<26} {a:>4}{}",
            if s > 0 {
                format!("  (skipped {s})")
            } else {
                String::new()
            }
        );
    }
    if run.kubectl_failed > 0 {
        println!(
            "  kubectl commands that failed (the Lease gone, or its holder changed): {}",
            run.kubectl_failed
        );
    }
    if run.term_timeouts > 0 {
        println!("  SIGTERMs that needed a SIGKILL: {}", run.term_timeouts);
    }

    // Terms.
    let mut ends: BTreeMap<String, usize> = BTreeMap::new();
    for iv in &ivs {
        let key = match iv.cause {
            EndedBy::StopLine | EndedBy::Release if !iv.reason.is_empty() => iv.reason.clone(),
            c => cause(c).to_owned(),
        };
        *ends.entry(key).or_default() += 1;
    }
    println!(
        "terms        {} (ended by: {})",
        ivs.len(),
        ends.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join("; ")
    );

    // Overlap.
    let largest = |o: &[Overlap]| o.iter().map(|o| o.to - o.from).max().unwrap_or_default();
    let mixed = run.slots.iter().any(|s| !s.spec.kind.is_ours());
    println!(
        "overlap      {} pairs, {:.3} ms in total, largest {:.3} ms   <- all rules; {}",
        overlaps.len() + client_go_overlaps.len(),
        ms(measure::covered(&ivs, false, 2, run.t0, cx.run_end)),
        ms(largest(&overlaps).max(largest(&client_go_overlaps))),
        if mixed {
            "this library's must be 0"
        } else {
            "must be 0"
        }
    );
    let total = |o: &[Overlap]| o.iter().map(|o| o.to - o.from).sum::<Duration>();
    if mixed {
        println!(
            "  ours       {} pairs, {:.3} ms, largest {:.3} ms charged to this library's terms   <- must be 0",
            overlaps.len(),
            ms(total(&overlaps)),
            ms(largest(&overlaps))
        );
        println!(
            "  client-go  {} pairs, {:.3} ms, largest {:.3} ms charged to client-go (its release over another's record; else the earlier term led past its last committed write + renew deadline + {} ms; else the later took the Lease early)   <- the reference, not the bar",
            client_go_overlaps.len(),
            ms(total(&client_go_overlaps)),
            ms(largest(&client_go_overlaps)),
            LATE_SLACK.as_millis()
        );
    }
    println!(
        "  raw        {} pairs, {:.3} ms in total, largest {:.3} ms   <- stop lines, kills, exits only",
        raw.len(),
        ms(measure::covered(&ivs, true, 2, run.t0, cx.run_end)),
        ms(largest(&raw))
    );
    let released: Vec<Duration> = ivs
        .iter()
        .filter(|iv| iv.cause == EndedBy::Release)
        .map(|iv| iv.raw_end - iv.end)
        .collect();
    let clipped = |by: EndedBy| -> Vec<Duration> {
        ivs.iter()
            .filter(|iv| iv.cause == by)
            .map(|iv| iv.raw_end - iv.end)
            .collect()
    };
    let (stopped, kept) = (clipped(EndedBy::PauseClip), clipped(EndedBy::WithheldClip));
    println!(
        "  rules      a term ends at the earliest of its stop line, its own release's commit \
         ({} terms, up to {:.1} ms before the line), SIGKILL, its exit, and for a leader SIGSTOPped \
         through its deadline: the earlier of the stop and its last committed write, + renew deadline / \
         its clock rate (up to {:.3} s) ({} terms, up to {:.1} ms before the line; docs/faults.md N5); \
         for a late stop the machine explains (kept from a CPU as long): its last committed write + \
         the same ({} terms, up to {:.1} ms before the line)",
        released.len(),
        ms(released.iter().max().copied().unwrap_or_default()),
        longest_deadline.as_secs_f64(),
        stopped.len(),
        ms(stopped.iter().max().copied().unwrap_or_default()),
        kept.len(),
        ms(kept.iter().max().copied().unwrap_or_default()),
    );

    // Leaderless.
    let led = measure::covered(&ivs, false, 1, run.t0, cx.run_end);
    let leaderless = run_len.saturating_sub(led);
    let first = ivs.first().map_or(run_len, |iv| iv.start - run.t0);
    println!(
        "leaderless   {:.3} s ({:.1} % of the run; the first election, a new Lease's strict lock delay included: {:.3} s)",
        leaderless.as_secs_f64(),
        100.0 * leaderless.as_secs_f64() / run_len.as_secs_f64(),
        first.as_secs_f64()
    );

    // Latencies.
    let grace = cx.timings.renew.mul_f64(cx.max_ratio) + cx.timings.retry;
    let lat = measure::latencies(&ivs, &run.faults, grace);
    println!(
        "handovers    SIGTERM of the leader -> next start:   {}",
        stats(&lat.handover)
    );
    let all: Vec<f64> = lat.failover.values().flatten().copied().collect();
    println!(
        "failovers    kill/stop/partition of the leader -> next start: {}",
        stats(&all)
    );
    for (kind, xs) in &lat.failover {
        println!("  {kind:<26} {}", stats(xs));
    }
    if !lat.rode_out.is_empty() || lat.no_next > 0 {
        println!(
            "  not counted: rode out by the leader: {}; no next leader before the end: {}",
            if lat.rode_out.is_empty() {
                "none".to_owned()
            } else {
                lat.rode_out
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            lat.no_next
        );
    }

    if cx.verbose {
        println!("  samples:");
        for &(i, ms) in &lat.each {
            let f = &run.faults[i];
            let who = f.target.map_or("", |(s, _)| id(s));
            println!(
                "    {:>9.3} s  {:<24} {:<8} {ms:>8.1} ms",
                t(f.at),
                f.kind,
                who
            );
        }
        println!("terms (seconds since the start):");
        for iv in &ivs {
            println!(
                "  {:<8} life {} term {:<8} {:>9.3} -> {:>9.3} s  by {}{}{}",
                id(iv.slot),
                iv.life,
                iv.term,
                t(iv.start),
                t(iv.end),
                cause(iv.cause),
                if iv.raw_end == iv.end {
                    String::new()
                } else {
                    format!(" (line at {:.3} s)", t(iv.raw_end))
                },
                if iv.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", iv.reason)
                }
            );
        }
    }

    // History.
    let writes: Vec<_> = run
        .history
        .writes()
        .filter(|w| w.at <= cx.run_end)
        .collect();
    let by_kubectl = writes.iter().filter(|w| is_kubectl(&w.client)).count();
    let deletes = writes.iter().filter(|w| w.verb == Verb::Delete).count();
    let (unbacked, client_go_unbacked): (Vec<usize>, Vec<usize>) =
        measure::unbacked_starts(&ivs, &run.lives, &run.history, Duration::from_millis(20))
            .into_iter()
            .partition(|&i| ours(i));
    println!(
        "history      {} committed Lease writes ({} by kubectl, {} deletions); starts after a committed write \
         naming the candidate, by it: {}/{}; wall vs monotonic clock drift {:.1} ms",
        writes.len(),
        by_kubectl,
        deletes,
        ivs.len() - unbacked.len() - client_go_unbacked.len(),
        ivs.len(),
        ms(run.history.drift())
    );
    if !client_go_unbacked.is_empty() {
        println!(
            "  client-go starts with no committed write naming it, by it: {} (the reference, not the bar)",
            client_go_unbacked.len()
        );
    }
    let (stale, longest, worst) = measure::stale_belief(&ivs, &run.lives, &run.history);
    let bound = cx.timings.renew.mul_f64(cx.max_ratio);
    println!(
        "  cross-check: leading while the Lease named another or was gone: {:.1} ms in total, \
         longest {:.1} ms{} (bound: renew deadline x max clock ratio = {:.0} ms, plus the stop line's lag){}",
        ms(stale),
        ms(longest),
        worst.map_or(String::new(), |i| format!(
            " ({} life {} term {})",
            id(ivs[i].slot),
            ivs[i].life,
            ivs[i].term
        )),
        ms(bound),
        if longest > bound + Duration::from_millis(100) {
            "  <- WARNING: beyond the bound by more than 100 ms"
        } else {
            ""
        }
    );
    let latest = late.iter().max_by_key(|(l, _)| ivs[l.iv].raw_end - l.due);
    let late_line = |(l, why): &(LateStop, Option<String>)| {
        let iv = &ivs[l.iv];
        format!(
            "by {:.0} ms: {} (life {}) term {}{}; {}; {}",
            ms(iv.raw_end - l.due),
            id(iv.slot),
            iv.life,
            iv.term,
            run.cpu
                .usage(iv.slot, iv.life, l.due, iv.raw_end)
                .map_or(String::new(), |u| format!(
                    ", which in those {:.0} ms ran {:.0} ms and waited {:.0} ms for a CPU",
                    ms(u.span),
                    ms(u.run),
                    ms(u.wait)
                )),
            stalls(run, l.due, iv.raw_end),
            why.as_ref()
                .map_or("NOT EXPLAINED by the machine".to_owned(), |why| {
                    format!("kept from running: {why}")
                })
        )
    };
    println!(
        "late stops   {} of {} terms ended by the renew deadline (not SIGSTOPped) printed their stop \
         line more than {:.0} ms after their last committed write + renew deadline ({} kept from a CPU \
         meanwhile, {} not explained){}",
        late.len(),
        ivs.iter()
            .filter(|iv| measure::stopped_by_deadline(iv))
            .count(),
        ms(LATE_SLACK),
        withheld_late.len(),
        unexplained.len(),
        latest.map_or(String::new(), |l| format!("; the latest {}", late_line(l)))
    );
    for l in &unexplained {
        println!("  UNEXPLAINED LATE STOP {}", late_line(l));
    }
    let all = run.canaries.stalls();
    println!(
        "stalls       {} wakeups of the canaries (one thread pinned to each of {} CPUs, napping 5 ms) \
         came over {:.0} ms late{}",
        all.len(),
        run.canaries.pinned,
        ms(crate::run::STALL),
        if all.is_empty() {
            String::new()
        } else {
            format!(
                ", {:.1} s late in total: the canaries waited {:.1} s for their CPU (other threads ran), \
                 the host took {:.1} s (steal); {} overlapped a late wakeup on another CPU; {}",
                all.iter().map(Stall::late).sum::<Duration>().as_secs_f64(),
                all.iter().map(|s| s.waited).sum::<Duration>().as_secs_f64(),
                all.iter().map(|s| s.stolen).sum::<Duration>().as_secs_f64(),
                Canaries::machine_wide(&all),
                worst_stall(run, &all)
            )
        }
    );
    if let Some((l, _)) = latest {
        // What the late process printed from its last committed write on
        // (with the driver's lock calls: was it sending, or silent?).
        let iv = &ivs[l.iv];
        let from = run
            .history
            .last_by(id(iv.slot), iv.raw_end)
            .map_or(iv.start, |w| w.at);
        print_lines(run, iv, from, iv.raw_end);
    }
    for &i in &unbacked {
        let iv = &ivs[i];
        println!(
            "  UNBACKED START: {} (life {}) term {} at {:.3} s: no committed write naming it, by it, since its previous start",
            id(iv.slot),
            iv.life,
            iv.term,
            t(iv.start)
        );
    }

    // Requests.
    let mut per: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut cand, mut kubectl, mut other) = (0u64, 0u64, 0u64);
    for ((client, verb), n) in &cx.counts.0 {
        let n = *n;
        if run.slots.iter().any(|s| s.spec.identity == *client) {
            cand += n;
            *per.entry(verb).or_default() += n;
        } else if is_kubectl(client) {
            kubectl += n;
        } else {
            other += n;
        }
    }
    println!(
        "requests     {:.0}/min by the candidates ({}), {:.0}/min by kubectl, {:.0}/min others; {} in total",
        cand as f64 / minutes,
        per.iter()
            .map(|(v, n)| format!("{v} {:.0}/min", *n as f64 / minutes))
            .collect::<Vec<_>>()
            .join(", "),
        kubectl as f64 / minutes,
        other as f64 / minutes,
        cx.counts.total()
    );
    if run.unexpected.is_empty() {
        println!("exits        no candidate exited by itself");
    } else {
        println!(
            "exits        {} candidates exited by themselves:",
            run.unexpected.len()
        );
        for u in &run.unexpected {
            println!("  {u}");
        }
    }
    if run.client_go_exits > 0 {
        println!(
            "  client-go candidates that exited after losing leadership (as a Go controller does; restarted): {}",
            run.client_go_exits
        );
    }
    for f in &run.server_failed {
        println!("server       a control-plane fault failed: {f}");
    }
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("machine      {}, {cpus} CPUs", cpu_model());

    for o in overlaps.iter().take(5) {
        trace(run, &ivs, o);
    }
    if cx.verbose {
        for o in client_go_overlaps.iter().take(5) {
            trace(run, &ivs, o);
        }
    }
    // A server that did not come back leaves the rest of the run unjudged.
    let pass = overlaps.is_empty()
        && unbacked.is_empty()
        && unexplained.is_empty()
        && run.server_failed.is_empty();
    if pass {
        println!("result       PASS (seed {})", cx.seed);
    } else {
        println!(
            "result       FAIL: {} overlaps, {} unbacked starts, {} unexplained late stops, {} failed control-plane faults; seed {}; replay: {}",
            overlaps.len(),
            unbacked.len(),
            unexplained.len(),
            run.server_failed.len(),
            cx.seed,
            cx.replay
        );
    }
    pass
}

/// The trace of one overlap: both terms, the faults, writes and lines around it.
fn trace(run: &Run, ivs: &[Interval], o: &Overlap) {
    let t = |at: Instant| run.t(at);
    let (a, b) = (&ivs[o.first], &ivs[o.second]);
    let id = |iv: &Interval| run.slots[iv.slot].spec.identity.clone();
    println!();
    println!(
        "OVERLAP of {:.3} ms, {:.3} s to {:.3} s:",
        ms(o.to - o.from),
        t(o.from),
        t(o.to)
    );
    for iv in [a, b] {
        println!(
            "  {} (life {}) term {}: {:.3} s to {:.3} s, ended by {} (raw: {:.3} s, {}){}",
            id(iv),
            iv.life,
            iv.term,
            t(iv.start),
            t(iv.end),
            cause(iv.cause),
            t(iv.raw_end),
            cause(iv.raw_cause),
            if iv.reason.is_empty() {
                String::new()
            } else {
                format!(", reason: {}", iv.reason)
            }
        );
    }
    let from = a
        .start
        .min(b.start)
        .checked_sub(Duration::from_secs(5))
        .unwrap_or(run.t0);
    let to = a.raw_end.max(b.raw_end) + Duration::from_millis(500);
    println!("  faults:");
    for f in run.faults.iter().filter(|f| f.at >= from && f.at <= to) {
        let who = f.target.map_or_else(String::new, |(s, l)| {
            format!("{} (life {l})", run.slots[s].spec.identity)
        });
        println!(
            "    {:>9.3} s  {:<24} {:<18} {}",
            t(f.at),
            f.kind,
            who,
            f.note
        );
    }
    println!("  committed Lease writes:");
    for w in run.history.between(from, to) {
        println!(
            "    {:>9.3} s  {:<22} {:<6} holder {:<12} duration {:<4} version {}",
            t(w.at),
            w.client.chars().take(22).collect::<String>(),
            w.verb.as_str(),
            w.holder
                .as_deref()
                .map_or("(deleted)".to_owned(), |h| format!("{h:?}")),
            w.duration.map_or("-".to_owned(), |d| d.to_string()),
            w.version.map_or("-".to_owned(), |v| v.to_string())
        );
    }
    let refused: Vec<_> = run.history.refused_between(from, to).collect();
    if !refused.is_empty() {
        println!("  refused Lease writes:");
        for w in refused {
            println!(
                "    {:>9.3} s  {:<22} {:<6} {}",
                t(w.at),
                w.client.chars().take(22).collect::<String>(),
                w.verb.as_str(),
                w.code
            );
        }
    }
    for iv in [a, b] {
        let last = run.history.last_by(&id(iv), iv.raw_end).map(|w| w.at);
        let from = last.unwrap_or(iv.start);
        if let Some(u) = run.cpu.usage(iv.slot, iv.life, from, iv.raw_end) {
            println!(
                "  cpu of {} (life {}) from its last committed write ({:.3} s) to its end ({:.3} s): \
                 over {:.0} ms of samples, ran {:.0} ms and waited {:.0} ms for a CPU (threads summed)",
                id(iv),
                iv.life,
                t(from),
                t(iv.raw_end),
                ms(u.span),
                ms(u.run),
                ms(u.wait)
            );
        }
    }
    println!("  the machine: {}", stalls(run, from, to));
    for iv in [a, b] {
        print_lines(run, iv, from, to);
    }
}

/// What kept the process of `iv`, late to stop for its deadline, from
/// running from `due` to its stop line, if the machine shows it was kept from
/// a CPU for as long as the stop was late (beyond the slack): one of its
/// threads waited that long for one, or a canary on some CPU woke that late.
fn withheld(run: &Run, iv: &Interval, due: Instant) -> Option<String> {
    let need = (iv.raw_end - due).saturating_sub(LATE_SLACK);
    if let Some(u) = run.cpu.usage(iv.slot, iv.life, due, iv.raw_end)
        && u.longest_wait >= need
    {
        return Some(format!(
            "one of its threads waited {:.0} ms for a CPU",
            ms(u.longest_wait)
        ));
    }
    let stall = run
        .canaries
        .during(due, iv.raw_end)
        .into_iter()
        .max_by_key(Stall::late)?;
    (stall.late() >= need).then(|| {
        format!(
            "a canary on CPU {} woke {:.0} ms late",
            stall.cpu,
            ms(stall.late())
        )
    })
}

/// The canaries' late wakeups over `[from, to]`, in words.
fn stalls(run: &Run, from: Instant, to: Instant) -> String {
    let during = run.canaries.during(from, to);
    if during.is_empty() {
        return "no canary woke late meanwhile".to_owned();
    }
    format!(
        "{} canary wakeups late meanwhile ({} overlapping one on another CPU); {}",
        during.len(),
        Canaries::machine_wide(&during),
        worst_stall(run, &during)
    )
}

/// The latest of `stalls`, in words (with what kept its canary waiting).
fn worst_stall(run: &Run, stalls: &[Stall]) -> String {
    stalls
        .iter()
        .max_by_key(|s| s.late())
        .map_or(String::new(), |s| {
            format!(
                "the worst {:.0} ms late, on CPU {} at {:.3} s (it waited {:.0} ms for the CPU, \
                 the host took {:.0} ms)",
                ms(s.late()),
                s.cpu,
                run.t(s.from),
                ms(s.waited),
                ms(s.stolen)
            )
        })
}

/// The lines of the process of `iv` received in `[from, to]`.
fn print_lines(run: &Run, iv: &Interval, from: Instant, to: Instant) {
    println!(
        "  lines of {} (life {}):",
        run.slots[iv.slot].spec.identity, iv.life
    );
    let src = Source::Candidate {
        slot: iv.slot,
        life: iv.life,
    };
    for (at, line) in run
        .lines
        .get(&src)
        .into_iter()
        .flatten()
        .filter(|(at, _)| *at >= from && *at <= to)
    {
        println!("    {:>9.3} s  {line}", run.t(*at));
    }
}
