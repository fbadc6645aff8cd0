//! Coordinated leader election (KEP-4355): the emulator as the API server's
//! leader-election controller (`pkg/controlplane/controller/leaderelection`),
//! which elects the holder of a Lease among the `coordination.k8s.io/v1beta1`
//! LeaseCandidates that name it.
//!
//! [`Coordinator`] holds its timings and is given to
//! [`crate::EmulatorBuilder::coordinator`]; the rule of one election step is
//! in [`election`] (a pure function of the Lease, the candidates and `now`),
//! the candidates' ranking in [`candidate`], and the task that reads the
//! store, takes the steps and writes their results in [`controller`].

use std::time::Duration;

mod candidate;
pub(crate) mod controller;
mod election;

/// The timings of the emulator's coordinated leader election, which is off
/// unless one is given to [`crate::EmulatorBuilder::coordinator`] (or the
/// binary is started with `--coordinated-leader-election`).
///
/// For every Lease that LeaseCandidates name, the coordinator pings the
/// candidates (`spec.pingTime`), waits up to the election duration for each to
/// ack (a `spec.renewTime` after its ping), and makes the best acked candidate
/// under the `OldestEmulationVersion` strategy the Lease's holder: the lowest
/// `emulationVersion`, then the lowest `binaryVersion`, then the oldest
/// candidate. It creates the Lease, takes over one that has no holder or has
/// expired, and asks a valid holder to step down for a better candidate by
/// setting `spec.preferredHolder` only.
///
/// The defaults are the API server's; [`Coordinator::scaled`] shrinks them all
/// for tests. The coordinator's writes are those of the client
/// [`Coordinator::CLIENT`] in [`crate::Emulator::write_history`] and
/// [`crate::Emulator::request_counts`], made as the user `system:apiserver`
/// (change it with [`crate::Emulator::set_user`]), through admission, with
/// compare-and-swap on the version read; they bump the resourceVersion and
/// reach watches as any client's. The coordinator stops with the emulator.
///
/// ```
/// use std::time::Duration;
/// use kube_emulator::Coordinator;
///
/// let fast = Coordinator::default().scaled(0.1);
/// assert_eq!(fast.election_duration(), Duration::from_millis(500));
/// assert_eq!(fast.lease_duration_seconds(), 1); // whole seconds, at least 1
/// let custom = Coordinator::default().with_requeue_interval(Duration::from_secs(30));
/// assert_eq!(custom.requeue_interval(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Coordinator {
    election_duration: Duration,
    requeue_interval: Duration,
    lease_duration_seconds: i32,
    candidate_validity: Duration,
}

impl Default for Coordinator {
    /// The API server's timings: 5 s to ack, a look every 5 s, Leases of 5 s,
    /// candidates valid for 30 min.
    fn default() -> Self {
        Coordinator {
            election_duration: Duration::from_secs(5),
            requeue_interval: Duration::from_secs(5),
            lease_duration_seconds: 5,
            candidate_validity: Duration::from_secs(30 * 60),
        }
    }
}

impl Coordinator {
    /// The client name of the coordinator's writes in the write history and
    /// the request counts (the name of the API server's controller).
    pub const CLIENT: &'static str = "leader-election-controller";

    /// The user the coordinator's writes are made as, for admission policies
    /// (the API server's own loopback user).
    pub const USER: &'static str = "system:apiserver";

    /// Every timing multiplied by `factor` (0.1: ten times faster). The Lease
    /// duration is rounded up to whole seconds, and at least 1. A factor that
    /// is not a positive number leaves the timings as they are.
    pub fn scaled(self, factor: f64) -> Self {
        if !(factor.is_finite() && factor > 0.0) {
            return self;
        }
        let scale = |d: Duration| {
            Duration::try_from_secs_f64(d.as_secs_f64() * factor)
                .unwrap_or(Duration::MAX)
                .max(Duration::from_millis(1))
        };
        let seconds = (f64::from(self.lease_duration_seconds) * factor).ceil();
        Coordinator {
            election_duration: scale(self.election_duration),
            requeue_interval: scale(self.requeue_interval),
            lease_duration_seconds: if seconds >= f64::from(i32::MAX) {
                i32::MAX
            } else {
                (seconds as i32).max(1)
            },
            candidate_validity: scale(self.candidate_validity),
        }
    }

    /// How long candidates have to ack a ping, and how recent a candidate's
    /// `renewTime` must be for it to count as acked (default 5 s).
    pub fn with_election_duration(mut self, window: Duration) -> Self {
        self.election_duration = window.max(Duration::from_millis(1));
        self
    }

    /// How often the coordinator looks again at a Lease when nothing changes
    /// (default 5 s). A change to a Lease or LeaseCandidate, or a Lease
    /// expiring, makes it look at once.
    pub fn with_requeue_interval(mut self, every: Duration) -> Self {
        self.requeue_interval = every.max(Duration::from_millis(1));
        self
    }

    /// The `leaseDurationSeconds` the coordinator writes into a Lease it
    /// assigns (default 5; at least 1).
    pub fn with_lease_duration_seconds(mut self, seconds: i32) -> Self {
        self.lease_duration_seconds = seconds.max(1);
        self
    }

    /// How long after its last `renewTime` a candidate stops counting (default
    /// 30 min); one older than half of it makes the coordinator ping all the
    /// candidates of its Lease.
    pub fn with_candidate_validity(mut self, validity: Duration) -> Self {
        self.candidate_validity = validity.max(Duration::from_millis(1));
        self
    }

    /// See [`Coordinator::with_election_duration`].
    pub fn election_duration(&self) -> Duration {
        self.election_duration
    }

    /// See [`Coordinator::with_requeue_interval`].
    pub fn requeue_interval(&self) -> Duration {
        self.requeue_interval
    }

    /// See [`Coordinator::with_lease_duration_seconds`].
    pub fn lease_duration_seconds(&self) -> i32 {
        self.lease_duration_seconds
    }

    /// See [`Coordinator::with_candidate_validity`].
    pub fn candidate_validity(&self) -> Duration {
        self.candidate_validity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_api_servers_and_scale_together() {
        let d = Coordinator::default();
        assert_eq!(
            (
                d.election_duration(),
                d.requeue_interval(),
                d.lease_duration_seconds(),
                d.candidate_validity()
            ),
            (
                Duration::from_secs(5),
                Duration::from_secs(5),
                5,
                Duration::from_secs(1800)
            )
        );
        let fast = d.scaled(0.3);
        assert_eq!(fast.election_duration(), Duration::from_millis(1500));
        assert_eq!(fast.lease_duration_seconds(), 2, "1.5 s rounded up");
        assert_eq!(fast.candidate_validity(), Duration::from_secs(540));
        assert_eq!(d.scaled(0.01).lease_duration_seconds(), 1, "at least 1 s");
        assert_eq!(d.scaled(f64::NAN), d);
        assert_eq!(
            d.scaled(1e30).requeue_interval(),
            Duration::MAX,
            "no overflow"
        );
        assert_eq!(d.scaled(1e30).lease_duration_seconds(), i32::MAX);
        assert_eq!(d.scaled(-1.0), d);
        assert_eq!(d.with_lease_duration_seconds(0).lease_duration_seconds(), 1);
    }
}
