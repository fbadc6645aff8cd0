//! The run: candidate slots, their lives and phases, the faults fired at them,
//! and everything recorded on the way.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::canary::Canaries;
use crate::history::History;
use crate::logs::{Change, Msg, Reader, Source, change};
use crate::measure::{FaultRecord, Life, Mark, Pause};
use crate::procs::{Bins, Proc, Spec, Timings, command};
use crate::sched::Cpu;
use crate::server::Server;

/// How late a canary's wakeup must come to count as a stall of its CPU.
pub const STALL: Duration = Duration::from_millis(100);

/// Where a slot's candidate is.
#[derive(Debug, Clone, Copy)]
pub enum Phase {
    /// Running.
    Up,
    /// SIGTERMed, not yet exited; restarted this long after it exits.
    Terminating {
        /// When it was SIGTERMed.
        since: Instant,
        /// Delay of the restart after the exit.
        restart_after: Duration,
    },
    /// Not running; restarted at this instant.
    Down {
        /// When.
        restart_at: Instant,
    },
    /// SIGSTOPped until this instant (the fault's index).
    Paused {
        /// SIGCONT then.
        cont_at: Instant,
        /// The fault that stopped it.
        fault: usize,
    },
}

/// One candidate slot: a spec, restarted in new lives.
#[derive(Debug)]
pub struct Slot {
    /// What it runs.
    pub spec: Spec,
    /// The running process.
    pub proc: Option<Proc>,
    /// The current (or last) life.
    pub life: u32,
    /// Where it is.
    pub phase: Phase,
    /// A network fault on its token: heal time and the fault's index.
    pub net: Option<(Instant, usize)>,
    /// When its exit was first seen, and whether its output ended.
    exit_seen: Option<Instant>,
    eof: bool,
}

impl Slot {
    /// A slot that starts at once.
    pub fn new(spec: Spec) -> Slot {
        Slot {
            spec,
            proc: None,
            life: 0,
            phase: Phase::Down {
                restart_at: Instant::now(),
            },
            net: None,
            exit_seen: None,
            eof: false,
        }
    }
}

/// A running kubectl command.
#[derive(Debug)]
pub(crate) struct KubectlRun {
    pub(crate) proc: Proc,
    pub(crate) n: u32,
    pub(crate) fault: usize,
}

/// Everything the run drives and records.
pub struct Run<'a> {
    /// The API server.
    pub server: &'a Server,
    /// The binaries.
    pub bins: &'a Bins,
    /// The log reader.
    pub reader: &'a Reader,
    /// Its messages.
    pub msgs: &'a Receiver<Msg>,
    /// The Lease.
    pub lease: String,
    /// The timings.
    pub timings: Timings,
    /// kubectl's kubeconfig.
    pub kubectl_config: PathBuf,
    /// The start of the run.
    pub t0: Instant,
    /// The candidates.
    pub slots: Vec<Slot>,
    /// Every life of every candidate.
    pub lives: Vec<Life>,
    /// Every leadership line.
    pub marks: Vec<Mark>,
    /// Every SIGSTOP.
    pub pauses: Vec<Pause>,
    /// Every fault fired.
    pub faults: Vec<FaultRecord>,
    /// Every line, by source.
    pub lines: BTreeMap<Source, Vec<(Instant, String)>>,
    /// The Lease's committed writes.
    pub history: History,
    /// What CPU each candidate got.
    pub cpu: Cpu,
    /// Wakeups of the per-CPU canaries that came late (the machine stalled).
    pub canaries: Canaries,
    /// Candidates that exited on their own, with their last lines.
    pub unexpected: Vec<String>,
    /// SIGTERMs that did not end the process in time (SIGKILLed then).
    pub term_timeouts: usize,
    /// kubectl commands that failed (the Lease gone, a `test` that did not hold).
    pub kubectl_failed: usize,
    /// Who leads now, by the lines (slot -> start): for picking targets.
    pub(crate) leading: BTreeMap<usize, Instant>,
    pub(crate) kubectl: Option<KubectlRun>,
    pub(crate) kubectl_n: u32,
    /// The control-plane fault on now: its thread, and the fault's index.
    pub(crate) server_fault: Option<(std::thread::JoinHandle<Result<(), String>>, usize)>,
    /// Control-plane faults that went wrong (a server that did not come back).
    pub server_failed: Vec<String>,
    /// client-go candidates that exited after losing leadership (restarted).
    pub client_go_exits: usize,
}

impl<'a> Run<'a> {
    /// A run of `slots`, all started at once.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        server: &'a Server,
        bins: &'a Bins,
        reader: &'a Reader,
        msgs: &'a Receiver<Msg>,
        lease: String,
        timings: Timings,
        kubectl_config: PathBuf,
        slots: Vec<Slot>,
    ) -> Run<'a> {
        let history = History::new(&lease);
        Run {
            server,
            bins,
            reader,
            msgs,
            lease,
            timings,
            kubectl_config,
            t0: Instant::now(),
            slots,
            lives: Vec::new(),
            marks: Vec::new(),
            pauses: Vec::new(),
            faults: Vec::new(),
            lines: BTreeMap::new(),
            history,
            cpu: Cpu::new(Duration::from_millis(100)),
            canaries: Canaries::start(STALL),
            unexpected: Vec::new(),
            term_timeouts: 0,
            kubectl_failed: 0,
            leading: BTreeMap::new(),
            kubectl: None,
            kubectl_n: 0,
            server_fault: None,
            server_failed: Vec::new(),
            client_go_exits: 0,
        }
    }

    /// Seconds since the start, for printing.
    pub fn t(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64()
    }

    pub(crate) fn life_mut(&mut self, slot: usize, life: u32) -> Option<&mut Life> {
        self.lives
            .iter_mut()
            .rev()
            .find(|l| (l.slot, l.life) == (slot, life))
    }

    fn spawn(&mut self, i: usize) {
        let life = if self.lives.iter().any(|l| l.slot == i) {
            self.slots[i].life + 1
        } else {
            0
        };
        let slot = &mut self.slots[i];
        let read_stdout = slot.spec.kind.reads_stdout();
        match Proc::spawn(
            command(&slot.spec, self.bins),
            Source::Candidate { slot: i, life },
            self.reader,
            read_stdout,
        ) {
            Ok(proc) => {
                self.lives.push(Life {
                    slot: i,
                    life,
                    identity: slot.spec.identity.clone(),
                    spawned: proc.spawned,
                    killed: None,
                    ended: None,
                });
                slot.proc = Some(proc);
                slot.life = life;
                slot.phase = Phase::Up;
                slot.exit_seen = None;
                slot.eof = false;
            }
            Err(e) => panic!("cannot start {}: {e}", slot.spec.identity),
        }
    }

    /// Takes the reader's messages.
    pub fn drain(&mut self) {
        while let Ok(msg) = self.msgs.try_recv() {
            match msg {
                Msg::Line { src, at, text } => {
                    if let Source::Candidate { slot, life } = src
                        && let Some(c) = change(&text)
                    {
                        if life == self.slots[slot].life {
                            match &c {
                                Change::Started(_) => {
                                    self.leading.insert(slot, at);
                                }
                                Change::Stopped(..) => {
                                    self.leading.remove(&slot);
                                }
                            }
                        }
                        self.marks.push(Mark {
                            slot,
                            life,
                            at,
                            change: c,
                        });
                    }
                    self.lines.entry(src).or_default().push((at, text));
                }
                Msg::Eof { src, at } => {
                    if let Source::Candidate { slot, life } = src {
                        if let Some(l) = self.life_mut(slot, life) {
                            l.ended.get_or_insert(at);
                        }
                        if life == self.slots[slot].life {
                            self.slots[slot].eof = true;
                        }
                    }
                }
            }
        }
    }

    fn last_lines(&self, src: Source, n: usize) -> String {
        self.lines.get(&src).map_or_else(String::new, |v| {
            v[v.len().saturating_sub(n)..]
                .iter()
                .map(|(_, l)| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    /// Restarts, continues, heals and reaps what is due; samples the CPU the
    /// candidates got.
    pub fn housekeeping(&mut self, now: Instant) {
        let live = self.slots.iter().enumerate().filter_map(|(i, s)| {
            let pid = s.proc.as_ref()?.pid()?;
            Some((i, s.life, pid))
        });
        self.cpu.sample(now, live);
        for i in 0..self.slots.len() {
            // Exits.
            if let Some(proc) = self.slots[i].proc.as_mut()
                && let Some(status) = proc.exited()
            {
                let seen = *self.slots[i].exit_seen.get_or_insert(now);
                // Done once its output ended too (a wrapper may exit before
                // its child), or after 2 s whatever holds the pipe.
                if self.slots[i].eof || now - seen > Duration::from_secs(2) {
                    self.slots[i].proc = None;
                    self.leading.remove(&i);
                    let life = self.slots[i].life;
                    if let Some(l) = self.life_mut(i, life) {
                        l.ended.get_or_insert(seen);
                    }
                    self.slots[i].phase = match self.slots[i].phase {
                        Phase::Terminating { restart_after, .. } => Phase::Down {
                            restart_at: now + restart_after,
                        },
                        // client-go-peer exits 1 when it lost leadership by
                        // itself, as a Go controller does; restarted, as its
                        // Pod would be.
                        _ if self.slots[i].spec.kind == crate::procs::Kind::ClientGo
                            && status.code() == Some(1) =>
                        {
                            self.client_go_exits += 1;
                            Phase::Down {
                                restart_at: now + Duration::from_secs(1),
                            }
                        }
                        _ => {
                            let src = Source::Candidate { slot: i, life };
                            self.unexpected.push(format!(
                                "{} (life {life}) exited by itself at {:.3} s ({status}); its last lines:\n{}",
                                self.slots[i].spec.identity,
                                self.t(seen),
                                self.last_lines(src, 8)
                            ));
                            Phase::Down {
                                restart_at: now + Duration::from_secs(1),
                            }
                        }
                    };
                }
            }
            match self.slots[i].phase {
                Phase::Down { restart_at } if restart_at <= now => self.spawn(i),
                Phase::Paused { cont_at, fault } if cont_at <= now => {
                    self.resume(i, now);
                    self.faults[fault].healed = Some(now);
                    self.slots[i].phase = Phase::Up;
                }
                Phase::Terminating {
                    since,
                    restart_after,
                } if now - since > self.timings.lease * 2 + Duration::from_secs(2) => {
                    self.term_timeouts += 1;
                    self.kill(i);
                    self.slots[i].phase = Phase::Down {
                        restart_at: now + restart_after,
                    };
                }
                _ => {}
            }
            if let Some((heal_at, fault)) = self.slots[i].net
                && heal_at <= now
            {
                self.server.heal(&self.slots[i].spec.identity);
                self.faults[fault].healed = Some(now);
                self.slots[i].net = None;
            }
        }
        if self
            .server_fault
            .as_ref()
            .is_some_and(|(thread, _)| thread.is_finished())
        {
            self.end_server_fault(now);
        }
        if let Some(k) = self.kubectl.as_mut()
            && let Some(status) = k.proc.exited()
        {
            let (n, fault) = (k.n, k.fault);
            self.kubectl = None;
            self.drain();
            let said = self
                .lines
                .get(&Source::Kubectl(n))
                .and_then(|v| v.first())
                .map_or(String::new(), |(_, l)| l.clone());
            self.faults[fault].healed = Some(now);
            if !status.success() {
                self.kubectl_failed += 1;
                println!(
                    "{:>9.3} s  {:<24} {:<18} failed: {said}",
                    self.t(now),
                    self.faults[fault].kind,
                    ""
                );
            }
        }
    }

    /// Waits for the control-plane fault on now (if any) to end, and records
    /// its end at `now` (or when it ended, if later).
    pub(crate) fn end_server_fault(&mut self, now: Instant) {
        let Some((thread, fault)) = self.server_fault.take() else {
            return;
        };
        let outcome = thread
            .join()
            .unwrap_or_else(|_| Err("its thread panicked".to_owned()));
        let at = now.max(Instant::now());
        self.faults[fault].healed = Some(at);
        if let Err(e) = outcome {
            let line = format!(
                "{} at {:.3} s: {e}",
                self.faults[fault].kind,
                self.t(self.faults[fault].at)
            );
            println!("{:>9.3} s  control-plane fault failed: {line}", self.t(at));
            self.server_failed.push(line);
        }
    }

    /// SIGKILLs slot `i`'s process (if any); the kill's instant.
    pub(crate) fn kill(&mut self, i: usize) -> Option<Instant> {
        let mut proc = self.slots[i].proc.take()?;
        let at = proc.kill();
        let life = self.slots[i].life;
        if let Some(l) = self.life_mut(i, life) {
            l.killed = Some(at);
        }
        if let Some(p) = self
            .pauses
            .iter_mut()
            .rev()
            .find(|p| (p.slot, p.life) == (i, life) && p.cont.is_none())
        {
            p.cont = Some(at);
        }
        self.leading.remove(&i);
        Some(at)
    }

    /// Continues the SIGSTOPped candidate of slot `i` and ends its open pause
    /// at `now`.
    fn resume(&mut self, i: usize, now: Instant) {
        let Some(proc) = &self.slots[i].proc else {
            return;
        };
        proc.signal(Signal::CONT);
        let life = self.slots[i].life;
        if let Some(p) = self
            .pauses
            .iter_mut()
            .rev()
            .find(|p| (p.slot, p.life) == (i, life) && p.cont.is_none())
        {
            p.cont = Some(now);
        }
    }

    /// Ends the run: heals every fault, continues stopped processes, SIGTERMs
    /// every candidate, waits a while, then SIGKILLs what is left.
    pub async fn shut_down(&mut self) {
        self.end_server_fault(Instant::now());
        let now = Instant::now();
        for i in 0..self.slots.len() {
            if self.slots[i].net.take().is_some() {
                self.server.heal(&self.slots[i].spec.identity);
            }
            if let Phase::Paused { .. } = self.slots[i].phase {
                self.resume(i, now);
            }
            if let Some(p) = &self.slots[i].proc {
                p.signal(Signal::TERM);
            }
            self.slots[i].phase = Phase::Terminating {
                since: now,
                restart_after: Duration::from_secs(3600),
            };
        }
        let limit = now + self.timings.renew * 2 + Duration::from_secs(2);
        while Instant::now() < limit {
            self.drain();
            let mut left = false;
            for s in &mut self.slots {
                if let Some(p) = s.proc.as_mut() {
                    if p.exited().is_some() {
                        s.proc = None;
                    } else {
                        left = true;
                    }
                }
            }
            if !left {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for i in 0..self.slots.len() {
            self.kill(i);
        }
        self.kubectl = None; // dropping it kills and reaps it
    }
}
