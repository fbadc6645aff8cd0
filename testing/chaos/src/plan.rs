//! The fault schedule: drawn up front from the seed, so that one seed replays
//! one schedule. Every event takes the same number of draws whatever its kind,
//! and a longer run only appends events: `--seed S --seconds 60` is a prefix of
//! `--seed S --minutes 10`. Which process "the leader" is gets resolved when the
//! event fires, so that part (and everything that follows from timing) may
//! differ between two runs of one seed.

use std::time::Duration;

use election_core::SplitMix64;

use crate::server::Kind as ServerKind;

/// Whom an event hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The candidate leading when the event fires, else this slot.
    Leader {
        /// The slot hit when nobody leads.
        fallback: usize,
    },
    /// This slot, leading or not.
    Slot(usize),
}

/// A fault on one candidate's requests: at the emulator, or at the
/// candidate's proxy in front of kube-apiserver (a reset, a hold, a delay,
/// answers lost; not 429 nor an error after the commit, which a TCP proxy
/// cannot forge under TLS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetFault {
    /// Partition: every request's connection closed unanswered.
    Reset,
    /// Partition: every request left hanging.
    Hang,
    /// Every request delayed this long.
    Latency(Duration),
    /// Every request answered 429 with `Retry-After` (seconds).
    TooMany(u32),
    /// Writes committed, then answered with this code (500 or 504).
    CommitThenFail(u16),
    /// Writes committed, then the connection closed unanswered.
    AnswerLost,
}

/// A fault of the whole control plane (kube-apiserver only): every client
/// hit at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerFault {
    /// kube-apiserver killed, down this long, started again: every
    /// connection and watch dropped, the watch cache rebuilt.
    RestartApiserver {
        /// How long it stays down before it starts again.
        down: Duration,
    },
    /// etcd killed, down this long, started again on its data.
    RestartEtcd {
        /// How long it stays down before it starts again.
        down: Duration,
    },
    /// etcd SIGSTOPped this long: every write (and quorum read) of every
    /// client waits, the server as a whole slow.
    StallEtcd {
        /// How long it stays stopped.
        cont_after: Duration,
    },
}

/// A `kubectl` edit or deletion of the Lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubectlOp {
    /// `kubectl annotate` with this value.
    Annotate(u64),
    /// `kubectl label` with this value.
    Label(u64),
    /// Empty `spec.holderIdentity` (never in a release's shape: the duration
    /// is written too, design §4 "Foreign edits and twins").
    EmptyHolder,
    /// Set `spec.holderIdentity` to this slot's identity, or to `intruder`.
    ChangeHolder(Option<usize>),
    /// `leaseDurationSeconds: 1`, only while a holder is named.
    Shorten,
    /// `kubectl delete lease`.
    Delete,
}

/// What an event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A fault on the target's requests, healed after a while.
    Net {
        /// The fault.
        fault: NetFault,
        /// How long it lasts.
        heal_after: Duration,
    },
    /// SIGKILL, then a restart.
    Kill {
        /// Delay before the restart.
        restart_after: Duration,
    },
    /// SIGTERM (graceful), then a restart once it has exited.
    Term {
        /// Delay between its exit and the restart.
        restart_after: Duration,
    },
    /// SIGSTOP, then SIGCONT.
    Stop {
        /// How long it stays stopped.
        cont_after: Duration,
    },
    /// A kubectl edit of the Lease (no target).
    Kubectl(KubectlOp),
    /// A fault of the control plane (no target).
    Server(ServerFault),
}

impl Action {
    /// The kind, as the report counts it.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Net { fault, .. } => match fault {
                NetFault::Reset => "partition (reset)",
                NetFault::Hang => "partition (hang)",
                NetFault::Latency(_) => "latency",
                NetFault::TooMany(_) => "429 Retry-After",
                NetFault::CommitThenFail(_) => "commit-then-fail",
                NetFault::AnswerLost => "lost answers",
            },
            Action::Kill { .. } => "SIGKILL + restart",
            Action::Term { .. } => "SIGTERM + restart",
            Action::Stop { .. } => "SIGSTOP/SIGCONT",
            Action::Server(f) => match f {
                ServerFault::RestartApiserver { .. } => "kube-apiserver restart",
                ServerFault::RestartEtcd { .. } => "etcd restart",
                ServerFault::StallEtcd { .. } => "etcd stalled",
            },
            Action::Kubectl(op) => match op {
                KubectlOp::Annotate(_) => "kubectl annotate",
                KubectlOp::Label(_) => "kubectl label",
                KubectlOp::EmptyHolder => "kubectl empty holder",
                KubectlOp::ChangeHolder(_) => "kubectl change holder",
                KubectlOp::Shorten => "kubectl shorten duration",
                KubectlOp::Delete => "kubectl delete",
            },
        }
    }

    /// Every kind, in report order.
    pub const KINDS: [&'static str; 18] = [
        "partition (reset)",
        "partition (hang)",
        "latency",
        "429 Retry-After",
        "commit-then-fail",
        "lost answers",
        "SIGKILL + restart",
        "SIGTERM + restart",
        "SIGSTOP/SIGCONT",
        "kubectl annotate",
        "kubectl label",
        "kubectl empty holder",
        "kubectl change holder",
        "kubectl shorten duration",
        "kubectl delete",
        "kube-apiserver restart",
        "etcd restart",
        "etcd stalled",
    ];
}

impl Action {
    /// The kinds a run on `server` draws, in report order.
    pub fn kinds(server: ServerKind) -> impl Iterator<Item = &'static str> {
        const EMULATOR_ONLY: [&str; 2] = ["429 Retry-After", "commit-then-fail"];
        const REAL_ONLY: [&str; 3] = ["kube-apiserver restart", "etcd restart", "etcd stalled"];
        Action::KINDS.into_iter().filter(move |k| match server {
            ServerKind::Emulator => !REAL_ONLY.contains(k),
            ServerKind::KubeApiserver => !EMULATOR_ONLY.contains(k),
        })
    }
}

/// One scheduled event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Planned {
    /// When, from the start of the run.
    pub at: Duration,
    /// Whom it hits.
    pub target: Target,
    /// What it does.
    pub action: Action,
}

/// Relative weights of the kinds (the order of the `match` in [`draw`]). On
/// kube-apiserver the 429's share goes to the control plane's faults, and
/// commit-then-fail's to lost answers (what the client sees of a commit it
/// gets no answer to).
const WEIGHTS: [u32; 9] = [
    16, // partition
    8,  // latency
    7,  // 429; on kube-apiserver a control-plane fault
    7,  // commit-then-fail; on kube-apiserver lost answers
    7,  // lost answers
    12, // SIGKILL
    10, // SIGTERM
    10, // SIGSTOP
    18, // kubectl
];

fn between(lo: f64, hi: f64, u: f64) -> f64 {
    lo + (hi - lo) * u
}

fn secs(lo: f64, hi: f64, u: f64, scale: f64) -> Duration {
    Duration::from_secs_f64(between(lo, hi, u) * scale)
}

/// The schedule of a run of `run` with `candidates` slots. Durations are those
/// of the fast timings (2 s lease) times `scale`.
pub fn schedule(
    seed: u64,
    run: Duration,
    candidates: usize,
    scale: f64,
    server: ServerKind,
) -> Vec<Planned> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    // A first election (the strict lock delay of a new Lease) before the first fault.
    let mut t = 2.5 * scale;
    let last = run.as_secs_f64() - 1.5 * scale;
    loop {
        let u: [f64; 8] = std::array::from_fn(|_| rng.unit());
        t += between(1.5, 4.0, u[0]) * scale;
        if t >= last {
            return out;
        }
        let (target, action) = draw(&u, candidates, scale, server);
        out.push(Planned {
            at: Duration::from_secs_f64(t),
            target,
            action,
        });
    }
}

/// One event from eight uniform draws: `u[1]` the kind, `u[2]` leader or not,
/// `u[3]` the slot, `u[4]..u[7]` its parameters.
fn draw(u: &[f64; 8], candidates: usize, scale: f64, server: ServerKind) -> (Target, Action) {
    let slot = ((u[3] * candidates as f64) as usize).min(candidates - 1);
    let total: u32 = WEIGHTS.iter().sum();
    let mut pick = (u[1] * f64::from(total)) as u32;
    let mut kind = 0;
    while kind + 1 < WEIGHTS.len() && pick >= WEIGHTS[kind] {
        pick -= WEIGHTS[kind];
        kind += 1;
    }
    let leader_or = |p: f64| {
        if u[2] < p {
            Target::Leader { fallback: slot }
        } else {
            Target::Slot(slot)
        }
    };
    let net = |fault| Action::Net {
        fault,
        heal_after: secs(1.0, 5.0, u[4], scale),
    };
    match kind {
        0 => (
            leader_or(0.6),
            Action::Net {
                fault: if u[5] < 0.5 {
                    NetFault::Reset
                } else {
                    NetFault::Hang
                },
                heal_after: secs(0.5, 5.0, u[4], scale),
            },
        ),
        1 => (
            leader_or(0.6),
            Action::Net {
                fault: NetFault::Latency(secs(0.05, 1.5, u[5], scale)),
                heal_after: secs(2.0, 8.0, u[4], scale),
            },
        ),
        2 if server == ServerKind::KubeApiserver => {
            let down = secs(0.0, 3.0, u[4], scale);
            let fault = match (u[5] * 3.0) as u32 {
                0 => ServerFault::RestartApiserver { down },
                1 => ServerFault::RestartEtcd { down },
                _ => ServerFault::StallEtcd {
                    cont_after: secs(0.5, 4.0, u[4], scale),
                },
            };
            (Target::Leader { fallback: slot }, Action::Server(fault))
        }
        2 => (
            leader_or(0.6),
            net(NetFault::TooMany(1 + (u[5] * 3.0) as u32)),
        ),
        3 if server == ServerKind::KubeApiserver => (leader_or(0.6), net(NetFault::AnswerLost)),
        3 => (
            leader_or(0.6),
            net(NetFault::CommitThenFail(if u[5] < 0.5 { 500 } else { 504 })),
        ),
        4 => (leader_or(0.6), net(NetFault::AnswerLost)),
        5 => (
            leader_or(0.7),
            Action::Kill {
                restart_after: secs(0.2, 4.0, u[4], scale),
            },
        ),
        6 => (
            leader_or(0.7),
            Action::Term {
                restart_after: secs(0.2, 4.0, u[4], scale),
            },
        ),
        7 => (
            Target::Leader { fallback: slot },
            Action::Stop {
                cont_after: secs(0.5, 4.0, u[4], scale),
            },
        ),
        _ => {
            let op = match (u[5] * 6.0) as u32 {
                0 => KubectlOp::Annotate((u[6] * 1e6) as u64),
                1 => KubectlOp::Label((u[6] * 1e6) as u64),
                2 => KubectlOp::EmptyHolder,
                3 => KubectlOp::ChangeHolder((u[6] < 0.5).then_some(slot)),
                4 => KubectlOp::Shorten,
                _ => KubectlOp::Delete,
            };
            (Target::Slot(slot), Action::Kubectl(op))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_one_schedule_and_longer_runs_extend_it() {
        for server in [ServerKind::Emulator, ServerKind::KubeApiserver] {
            let a = schedule(7, Duration::from_secs(60), 4, 1.0, server);
            let b = schedule(7, Duration::from_secs(600), 4, 1.0, server);
            assert_eq!(a, schedule(7, Duration::from_secs(60), 4, 1.0, server));
            assert!(a.len() > 10, "{}", a.len());
            assert_eq!(a[..a.len() - 1], b[..a.len() - 1]);
            assert_ne!(a, schedule(8, Duration::from_secs(60), 4, 1.0, server));
        }
    }

    #[test]
    fn each_server_draws_only_the_faults_it_can_inject() {
        let kinds = |server| {
            schedule(3, Duration::from_secs(3600), 4, 1.0, server)
                .into_iter()
                .map(|p| p.action.kind())
                .collect::<std::collections::BTreeSet<_>>()
        };
        let (emulator, real) = (
            kinds(ServerKind::Emulator),
            kinds(ServerKind::KubeApiserver),
        );
        for only_emulator in ["429 Retry-After", "commit-then-fail"] {
            assert!(emulator.contains(only_emulator) && !real.contains(only_emulator));
        }
        for only_real in ["kube-apiserver restart", "etcd restart", "etcd stalled"] {
            assert!(real.contains(only_real) && !emulator.contains(only_real));
        }
        assert!(real.contains("lost answers") && real.contains("partition (reset)"));
    }
}
