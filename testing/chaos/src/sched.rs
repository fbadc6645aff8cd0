//! How much CPU each candidate got: the kernel's scheduler statistics of every
//! thread of its process, sampled through the run.
//!
//! `/proc/<pid>/task/<tid>/schedstat` holds the time a thread spent on a CPU
//! and the time it spent runnable but waiting for one. Summed over a process's
//! threads and taken between two samples, they tell a process that was starved
//! (long waits for a CPU) from one that slept (neither) or worked (on a CPU),
//! which the log lines alone cannot: a leader that is late to stop prints
//! nothing in between either way.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One sample of one process.
#[derive(Debug, Clone)]
struct Sample {
    at: Instant,
    /// On a CPU, summed over its threads.
    run: Duration,
    /// Runnable and waiting for a CPU, summed over its threads.
    wait: Duration,
    /// Each thread's wait (thread id, time runnable and waiting).
    waits: Vec<(u32, Duration)>,
}

/// What a process got between two instants.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// The samples' span (the instants asked for, widened to samples).
    pub span: Duration,
    /// On a CPU, summed over its threads.
    pub run: Duration,
    /// Runnable and waiting for a CPU, summed over its threads.
    pub wait: Duration,
    /// The longest any one thread (alive at both samples) waited for a CPU.
    pub longest_wait: Duration,
}

/// Samples of every candidate life, taken at most every `every`.
#[derive(Debug)]
pub struct Cpu {
    every: Duration,
    last: Option<Instant>,
    samples: BTreeMap<(usize, u32), Vec<Sample>>,
}

/// The figures of the threads of `pid` now, or `None` once it is gone.
fn read(pid: i32) -> Option<Sample> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let (mut run, mut wait, mut waits) = (0u64, 0u64, Vec::new());
    for task in tasks.flatten() {
        // A thread that ended since the listing is skipped.
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
        let (r, w) = (
            fields.next().flatten().unwrap_or(0),
            fields.next().flatten().unwrap_or(0),
        );
        run += r;
        wait += w;
        if let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) {
            waits.push((tid, Duration::from_nanos(w)));
        }
    }
    Some(Sample {
        at: Instant::now(),
        run: Duration::from_nanos(run),
        wait: Duration::from_nanos(wait),
        waits,
    })
}

impl Cpu {
    /// Samples taken at most every `every`.
    pub fn new(every: Duration) -> Cpu {
        Cpu {
            every,
            last: None,
            samples: BTreeMap::new(),
        }
    }

    /// Samples `procs` (slot, life, pid) if `every` has passed since the last
    /// time.
    pub fn sample(&mut self, now: Instant, procs: impl Iterator<Item = (usize, u32, i32)>) {
        if self.last.is_some_and(|l| now - l < self.every) {
            return;
        }
        self.last = Some(now);
        for (slot, life, pid) in procs {
            if let Some(sample) = read(pid) {
                self.samples.entry((slot, life)).or_default().push(sample);
            }
        }
    }

    /// What life `life` of `slot` got from the last sample at or before `from`
    /// to the first at or after `to` (`None` without samples on both sides).
    /// A thread that ended in between takes its times with it, so the figures
    /// are at least what the remaining threads got (never negative).
    pub fn usage(&self, slot: usize, life: u32, from: Instant, to: Instant) -> Option<Usage> {
        let samples = self.samples.get(&(slot, life))?;
        let a = samples.iter().rev().find(|s| s.at <= from)?;
        let b = samples.iter().find(|s| s.at >= to)?;
        let longest_wait = b
            .waits
            .iter()
            .filter_map(|(tid, w)| {
                let (_, before) = a.waits.iter().find(|(t, _)| t == tid)?;
                Some(w.saturating_sub(*before))
            })
            .max()
            .unwrap_or_default();
        Some(Usage {
            span: b.at - a.at,
            run: b.run.saturating_sub(a.run),
            wait: b.wait.saturating_sub(a.wait),
            longest_wait,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_shows_on_a_cpu() {
        let pid = i32::try_from(std::process::id()).expect("a pid");
        let mut cpu = Cpu::new(Duration::ZERO);
        cpu.sample(Instant::now(), std::iter::once((0, 0, pid)));
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            std::hint::spin_loop();
        }
        let end = Instant::now();
        cpu.sample(Instant::now(), std::iter::once((0, 0, pid)));
        let u = cpu.usage(0, 0, start, end).expect("two samples");
        assert!(u.run + u.wait >= Duration::from_millis(40), "{u:?}");
        assert!(u.run > Duration::ZERO, "{u:?}");
        assert!(u.longest_wait <= u.wait, "{u:?}");
    }
}
