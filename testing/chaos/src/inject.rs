//! Firing a planned event at the run: the fault on a candidate's requests, the
//! signal to its process, or the kubectl command.

use std::time::Instant;

use rustix::process::Signal;

use crate::kubectl;
use crate::logs::Source;
use crate::measure::{FaultRecord, Pause};
use crate::plan::{Action, Planned, ServerFault, Target};
use crate::procs::Proc;
use crate::run::{KubectlRun, Phase, Run};

impl Run<'_> {
    /// The slot `target` names now.
    pub(crate) fn resolve(&self, target: Target) -> (usize, bool) {
        match target {
            Target::Slot(s) => (s, self.leading.contains_key(&s)),
            Target::Leader { fallback } => self
                .leading
                .iter()
                .max_by_key(|(_, at)| **at)
                .map_or((fallback, false), |(s, _)| (*s, true)),
        }
    }

    /// Fires one planned event.
    pub fn fire(&mut self, ev: &Planned, now: Instant) {
        let kind = ev.action.kind();
        let index = self.faults.len();
        let mut record = FaultRecord {
            at: now,
            kind,
            target: None,
            applied: false,
            note: String::new(),
            healed: None,
        };
        let skip = |r: &mut FaultRecord, why: &str| r.note = format!("skipped: {why}");
        if let Action::Kubectl(op) = ev.action {
            let identities: Vec<String> =
                self.slots.iter().map(|s| s.spec.identity.clone()).collect();
            if self.kubectl.is_some() {
                skip(&mut record, "a kubectl command still runs");
            } else {
                let lease_secs = self.timings.lease.as_secs();
                self.history.collect(self.server);
                let holder = self.history.holder();
                match kubectl::args(op, &self.lease, holder, &identities, lease_secs) {
                    Err(why) => skip(&mut record, &why),
                    Ok(args) => {
                        self.kubectl_n += 1;
                        let n = self.kubectl_n;
                        let cmd = kubectl::command(
                            &self.kubectl_config,
                            &args,
                            self.bins.setpriv.as_ref(),
                        );
                        match Proc::spawn(cmd, Source::Kubectl(n), self.reader, true) {
                            Ok(proc) => {
                                record.applied = true;
                                record.note = format!("kubectl {}", args.join(" "));
                                self.kubectl = Some(KubectlRun {
                                    proc,
                                    n,
                                    fault: index,
                                });
                            }
                            Err(e) => skip(&mut record, &format!("cannot run kubectl: {e}")),
                        }
                    }
                }
            }
            self.print_fault(&record, None);
            self.faults.push(record);
            return;
        }
        let (i, was_leading) = self.resolve(ev.target);
        if let Action::Server(fault) = ev.action {
            // Every candidate is hit: no target, the leader named for the
            // timeline.
            if self.server_fault.is_some() {
                skip(&mut record, "a control-plane fault is still on");
            } else {
                match self.server.server_fault(fault) {
                    Ok(thread) => {
                        record.applied = true;
                        record.note = match fault {
                            ServerFault::RestartApiserver { down }
                            | ServerFault::RestartEtcd { down } => {
                                format!("killed, started again after {:.1} s", down.as_secs_f64())
                            }
                            ServerFault::StallEtcd { cont_after } => {
                                format!("SIGCONT in {:.1} s", cont_after.as_secs_f64())
                            }
                        };
                        self.server_fault = Some((thread, index));
                    }
                    Err(why) => skip(&mut record, &why),
                }
            }
            self.print_fault(&record, was_leading.then_some((i, true)));
            self.faults.push(record);
            return;
        }
        let life = self.slots[i].life;
        record.target = Some((i, life));
        let token = self.slots[i].spec.identity.clone();
        let running = self.slots[i].proc.is_some();
        match ev.action {
            Action::Net { fault, heal_after } => {
                if self.slots[i].net.is_some() {
                    skip(&mut record, "already under a network fault");
                } else {
                    match self.server.net(&token, fault) {
                        Ok(what) => {
                            self.slots[i].net = Some((now + heal_after, index));
                            record.applied = true;
                            record.note = format!("{what} for {:.1} s", heal_after.as_secs_f64());
                        }
                        Err(why) => skip(&mut record, &why),
                    }
                }
            }
            Action::Kill { restart_after } => {
                let paused = matches!(self.slots[i].phase, Phase::Paused { .. });
                if let Some(at) = self.kill(i) {
                    record.at = at;
                    record.healed = Some(at);
                    record.applied = true;
                    record.note = format!(
                        "{}restart in {:.1} s",
                        if paused { "while stopped; " } else { "" },
                        restart_after.as_secs_f64()
                    );
                    if let Phase::Paused { fault, .. } = self.slots[i].phase {
                        self.faults[fault].healed = Some(at);
                    }
                    self.slots[i].phase = Phase::Down {
                        restart_at: at + restart_after,
                    };
                } else {
                    skip(&mut record, "not running");
                }
            }
            Action::Term { restart_after } => match self.slots[i].phase {
                Phase::Up if running => {
                    if let Some(p) = &self.slots[i].proc {
                        p.signal(Signal::TERM);
                    }
                    self.slots[i].phase = Phase::Terminating {
                        since: now,
                        restart_after,
                    };
                    record.healed = Some(now);
                    record.applied = true;
                    record.note = format!(
                        "restart {:.1} s after its exit",
                        restart_after.as_secs_f64()
                    );
                }
                _ => skip(&mut record, "not up"),
            },
            Action::Stop { cont_after } => match self.slots[i].phase {
                Phase::Up if running => {
                    if let Some(p) = &self.slots[i].proc {
                        p.signal(Signal::STOP);
                    }
                    self.pauses.push(Pause {
                        slot: i,
                        life,
                        stop: now,
                        cont: None,
                    });
                    self.slots[i].phase = Phase::Paused {
                        cont_at: now + cont_after,
                        fault: index,
                    };
                    record.applied = true;
                    record.note = format!("SIGCONT in {:.1} s", cont_after.as_secs_f64());
                }
                _ => skip(&mut record, "not up"),
            },
            Action::Kubectl(_) | Action::Server(_) => unreachable!("handled above"),
        }
        self.print_fault(&record, Some((i, was_leading)));
        self.faults.push(record);
    }

    fn print_fault(&self, r: &FaultRecord, target: Option<(usize, bool)>) {
        let who = target.map_or_else(String::new, |(i, leader)| {
            format!(
                "{}{}",
                self.slots[i].spec.identity,
                if leader { " (leader)" } else { "" }
            )
        });
        println!(
            "{:>9.3} s  {:<24} {:<18} {}",
            self.t(r.at),
            r.kind,
            who,
            r.note
        );
    }
}
