//! A watch on this process's own scheduling: one thread, apart from any async
//! executor, napping a few milliseconds at a time and noting every wakeup that
//! came late.
//!
//! A real-time test that finds itself run late cannot tell by its own clock
//! whether the machine withheld the whole process (a loaded machine, a
//! SIGSTOP: the drivers under test were not run either, and a leader rightly
//! loses at its deadline, docs/faults.md N5) or the executor was blocked (a
//! bug the test must catch). The watch's thread tells them apart: it is late
//! only in the first case.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the thread naps at a time.
const NAP: Duration = Duration::from_millis(5);
/// How late a wakeup must come to be noted.
const NOTED: Duration = Duration::from_millis(50);

/// The watch, running until dropped.
#[derive(Debug)]
pub struct StallWatch {
    stalls: Arc<Mutex<Vec<(Instant, Instant)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StallWatch {
    /// Starts the watch's thread.
    pub fn start() -> StallWatch {
        let stalls = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stalls, stop) = (stalls.clone(), stop.clone());
            std::thread::Builder::new()
                .name("stall-watch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let from = Instant::now();
                        std::thread::sleep(NAP);
                        let to = Instant::now();
                        if to - from > NAP + NOTED {
                            stalls.lock().unwrap().push((from, to));
                        }
                    }
                })
                .expect("a thread for the stall watch")
        };
        StallWatch {
            stalls,
            stop,
            thread: Some(thread),
        }
    }

    /// The longest time the watch's thread was not run (beyond its nap) in a
    /// nap that overlapped `[from, to]`.
    pub fn longest_within(&self, from: Instant, to: Instant) -> Duration {
        self.stalls
            .lock()
            .unwrap()
            .iter()
            .filter(|(a, b)| *a < to && *b > from)
            .map(|(a, b)| (*b - *a).saturating_sub(NAP))
            .max()
            .unwrap_or_default()
    }
}

impl Drop for StallWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_process_shows() {
        let watch = StallWatch::start();
        // The whole process stopped for 300 ms (SIGSTOP, then SIGCONT from a
        // child that outlives the stop); wait until the watch saw it.
        let from = Instant::now();
        let pid = std::process::id();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "(sleep 0.05; kill -STOP {pid}; sleep 0.3; kill -CONT {pid}) >/dev/null 2>&1 &"
            ))
            .status()
            .expect("sh");
        assert!(status.success());
        while watch.longest_within(from, Instant::now()) < Duration::from_millis(250) {
            assert!(
                from.elapsed() < Duration::from_secs(30),
                "the watch saw no stop in 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
