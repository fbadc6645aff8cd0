//! Wakeup canaries: one thread pinned to each CPU, sleeping a few
//! milliseconds at a time and noting every wakeup that came late.
//!
//! A candidate that printed nothing past its deadline was either kept from
//! running or slept through it. Its own scheduler statistics (`sched.rs`) tell
//! a process that waited for a CPU from one that did not; the canaries tell
//! whether the machine itself stalled meanwhile: a CPU that ran nothing for a
//! while (a virtual CPU the host did not schedule, say) delays every sleeper on
//! it, the canary pinned there too, while the guest's scheduler counts no wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a canary sleeps at a time.
const NAP: Duration = Duration::from_millis(5);

/// One late wakeup.
#[derive(Debug, Clone, Copy)]
pub struct Stall {
    /// The CPU the canary is pinned to.
    pub cpu: usize,
    /// When it went to sleep.
    pub from: Instant,
    /// When it woke.
    pub to: Instant,
    /// How long the canary was runnable but waited for its CPU meanwhile (read
    /// after its previous wakeup and after this one, so over a little more than
    /// the nap).
    pub waited: Duration,
    /// How much time the host took its CPU away over the same span (steal, to a
    /// clock tick).
    pub stolen: Duration,
}

impl Stall {
    /// How late the wakeup came.
    pub fn late(&self) -> Duration {
        (self.to - self.from).saturating_sub(NAP)
    }
}

/// The canaries, running until dropped.
#[derive(Debug)]
pub struct Canaries {
    stalls: Arc<Mutex<Vec<Stall>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// How many could be pinned (the others run wherever the kernel puts them).
    pub pinned: usize,
}

impl Canaries {
    /// One canary per CPU this process may run on, noting wakeups later than
    /// `threshold`.
    pub fn start(threshold: Duration) -> Canaries {
        let stalls = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (pinned_tx, pinned_rx) = std::sync::mpsc::channel();
        let threads = allowed_cpus()
            .into_iter()
            .filter_map(|cpu| {
                let (stalls, stop, pinned) = (stalls.clone(), stop.clone(), pinned_tx.clone());
                std::thread::Builder::new()
                    .name(format!("canary-{cpu}"))
                    .spawn(move || {
                        let mut set = rustix::thread::CpuSet::new();
                        set.set(cpu);
                        let _ = pinned.send(rustix::thread::sched_setaffinity(None, &set).is_ok());
                        let tick = Duration::from_secs(1)
                            / u32::try_from(rustix::param::clock_ticks_per_second())
                                .unwrap_or(100)
                                .max(1);
                        // Unreadable figures count as zero: the stall is still noted.
                        let figures = || (own_wait().unwrap_or_default(), steal(cpu).unwrap_or(0));
                        let mut before = figures();
                        while !stop.load(Ordering::Relaxed) {
                            let from = Instant::now();
                            std::thread::sleep(NAP);
                            let to = Instant::now();
                            let after = figures();
                            let stall = Stall {
                                cpu,
                                from,
                                to,
                                waited: after.0.saturating_sub(before.0),
                                stolen: tick
                                    * u32::try_from(after.1.saturating_sub(before.1))
                                        .unwrap_or(u32::MAX),
                            };
                            before = after;
                            if stall.late() > threshold {
                                stalls.lock().expect("no canary panics").push(stall);
                            }
                        }
                    })
                    .ok()
            })
            .collect::<Vec<_>>();
        // One answer from each thread (which keeps its sender while it runs).
        let pinned = pinned_rx
            .iter()
            .take(threads.len())
            .filter(|ok| *ok)
            .count();
        Canaries {
            stalls,
            stop,
            threads,
            pinned,
        }
    }

    /// Every late wakeup so far.
    pub fn stalls(&self) -> Vec<Stall> {
        self.stalls.lock().expect("no canary panics").clone()
    }

    /// How many of `stalls` overlapped a late wakeup on another CPU (the whole
    /// machine stalled, not one CPU).
    pub fn machine_wide(stalls: &[Stall]) -> usize {
        stalls
            .iter()
            .filter(|s| {
                stalls
                    .iter()
                    .any(|o| o.cpu != s.cpu && o.from < s.to && o.to > s.from)
            })
            .count()
    }

    /// The late wakeups whose sleep overlapped `[from, to]`.
    pub fn during(&self, from: Instant, to: Instant) -> Vec<Stall> {
        self.stalls()
            .into_iter()
            .filter(|s| s.from < to && s.to > from)
            .collect()
    }
}

/// How long the calling thread has been runnable but waiting for a CPU.
fn own_wait() -> Option<Duration> {
    wait_in(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

/// The second figure of a `schedstat` (nanoseconds runnable and waiting).
fn wait_in(schedstat: &str) -> Option<Duration> {
    let nanos = schedstat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// The clock ticks the host has taken `cpu` away from this machine.
fn steal(cpu: usize) -> Option<u64> {
    steal_in(&std::fs::read_to_string("/proc/stat").ok()?, cpu)
}

/// The `steal` figure of `cpu` in a `/proc/stat` (the eighth after its name).
fn steal_in(stat: &str, cpu: usize) -> Option<u64> {
    let name = format!("cpu{cpu}");
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

/// The CPUs this process may run on (CPU 0 alone if that cannot be read).
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&cpu| set.is_set(cpu))
            .collect(),
        Err(_) => vec![0],
    }
}

impl Drop for Canaries {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cpu_has_a_pinned_canary_whose_wakeups_are_timed() {
        // With no threshold every wakeup counts (each comes after its nap).
        let canaries = Canaries::start(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(100));
        let cpus = allowed_cpus();
        assert_eq!(canaries.pinned, cpus.len());
        let stalls = canaries.stalls();
        for cpu in cpus {
            assert!(
                stalls.iter().any(|s| s.cpu == cpu),
                "no wakeup on CPU {cpu}"
            );
        }
        let first = stalls[0];
        assert!(!canaries.during(first.from, first.to).is_empty());
        let later = first.to + Duration::from_secs(60);
        assert!(
            canaries
                .during(later, later + Duration::from_secs(1))
                .is_empty()
        );
    }

    #[test]
    fn the_waits_and_the_steal_are_read_from_the_kernels_figures() {
        let stat = "cpu  10 0 20 300 4 0 5 9 0 0\n\
                    cpu0 5 0 10 150 2 0 3 7 0 0\n\
                    cpu1 5 0 10 150 2 0 2 2 0 0\n\
                    intr 12345 0 1\n";
        assert_eq!(steal_in(stat, 0), Some(7));
        assert_eq!(steal_in(stat, 1), Some(2));
        assert_eq!(steal_in(stat, 2), None);
        assert_eq!(
            wait_in("123456 789000 42\n"),
            Some(Duration::from_nanos(789_000))
        );
        assert_eq!(wait_in("garbage"), None);
        // And this kernel's files read that way.
        assert!(own_wait().is_some());
        for cpu in allowed_cpus() {
            assert!(steal(cpu).is_some(), "no steal figure for CPU {cpu}");
        }
    }
}
