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
                        while !stop.load(Ordering::Relaxed) {
                            let from = Instant::now();
                            std::thread::sleep(NAP);
                            let stall = Stall {
                                cpu,
                                from,
                                to: Instant::now(),
                            };
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

    /// The late wakeups whose sleep overlapped `[from, to]`.
    pub fn during(&self, from: Instant, to: Instant) -> Vec<Stall> {
        self.stalls()
            .into_iter()
            .filter(|s| s.from < to && s.to > from)
            .collect()
    }
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
}
