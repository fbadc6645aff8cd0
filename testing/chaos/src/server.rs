//! The API server the candidates contend on: the API emulator in this process
//! (the default), or kube-apiserver on etcd (`test_kit::apiserver`) with a TCP
//! proxy in front of it per candidate.
//!
//! Both give the harness what it judges with: each candidate's requests apart
//! (a fault on one of them), the Lease's committed writes stamped by the
//! server, and the requests per client. The emulator has them built in. On
//! kube-apiserver each candidate is a ServiceAccount of its own, its traffic
//! goes through its own proxy (the network faults), and the audit log, which
//! keeps the Lease's bodies there ([`AuditLeases::Bodies`]), gives the writes
//! (who, when the server answered, what it committed) and the counts.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use kube_emulator::{Emulator, Fault, Match, Resource, Verb};
use test_kit::apiserver::{ApiServer, AuditLeases, TESTERS_NAMESPACE};
use test_kit::proxy::{Mode, Proxy};

use crate::kubectl;
use crate::plan::{NetFault, ServerFault};

/// Which server a run is on (`--server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The API emulator, in this process.
    Emulator,
    /// kube-apiserver and etcd, processes of their own.
    KubeApiserver,
}

impl Kind {
    /// The flag's value.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Emulator => "emulator",
            Kind::KubeApiserver => "kube-apiserver",
        }
    }
}

/// One write of the Lease as the server recorded it.
#[derive(Debug, Clone)]
pub struct Write {
    /// When the server stamped it (committed before), on the wall clock.
    pub at: SystemTime,
    /// The writer: a candidate's identity, else kubectl's name.
    pub client: String,
    /// Create, update, patch or delete.
    pub verb: Verb,
    /// Whether the store committed it.
    pub committed: bool,
    /// The HTTP code answered.
    pub code: u16,
    /// The holder written (`""` for none); `None` for a deletion or a refusal.
    pub holder: Option<String>,
    /// `spec.leaseDurationSeconds` as written.
    pub duration: Option<i64>,
    /// The version it committed.
    pub version: Option<u64>,
}

/// Requests per (client, verb).
#[derive(Debug, Clone, Default)]
pub struct Counts(pub BTreeMap<(String, &'static str), u64>);

impl Counts {
    /// All requests.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// The server of a run.
pub enum Server {
    /// The emulator.
    Emulator(Emulator),
    /// kube-apiserver.
    Real(Box<Real>),
}

/// kube-apiserver with a proxy per candidate, and what its audit log said.
pub struct Real {
    /// The server (shared with a thread that restarts it).
    pub api: Arc<ApiServer>,
    proxies: Mutex<BTreeMap<String, Proxy>>,
    audit: Mutex<Audit>,
}

/// The audit log read so far.
#[derive(Default)]
struct Audit {
    offset: u64,
    /// Lease writes not taken yet by a history.
    writes: Vec<(String, Write)>,
    /// Requests per (client, verb) received since `from`, by audit ID once.
    counts: Counts,
    from: Option<SystemTime>,
    counted: std::collections::HashSet<String>,
}

fn verb(name: &str) -> Option<Verb> {
    Verb::ALL.into_iter().find(|v| v.as_str() == name)
}

/// A candidate's name from the user the server saw.
fn client_of(user: &str) -> String {
    let prefix = format!("system:serviceaccount:{TESTERS_NAMESPACE}:");
    user.strip_prefix(&prefix).unwrap_or(user).to_owned()
}

impl Server {
    /// Starts the server of `kind`.
    pub async fn start(kind: Kind) -> Result<Server, String> {
        match kind {
            Kind::Emulator => Emulator::start()
                .await
                .map(Server::Emulator)
                .map_err(|e| format!("cannot start the emulator: {e}")),
            Kind::KubeApiserver => {
                let api =
                    tokio::task::spawn_blocking(|| ApiServer::start_with(AuditLeases::Bodies))
                        .await
                        .map_err(|e| format!("cannot start kube-apiserver: {e}"))?
                        .map_err(|e| format!("cannot start kube-apiserver: {e}"))?;
                Ok(Server::Real(Box::new(Real {
                    api: Arc::new(api),
                    proxies: Mutex::new(BTreeMap::new()),
                    audit: Mutex::new(Audit::default()),
                })))
            }
        }
    }

    /// Which server, for the report.
    pub fn name(&self) -> String {
        match self {
            Server::Emulator(e) => format!("the API emulator at {}", e.url()),
            Server::Real(r) => format!(
                "kube-apiserver {} on etcd at {}",
                test_kit::apiserver::K8S_VERSION,
                r.api.url()
            ),
        }
    }

    /// The namespace of the Lease (the candidates' kubeconfigs name it).
    pub fn namespace(&self) -> &'static str {
        match self {
            Server::Emulator(_) => "default",
            Server::Real(_) => TESTERS_NAMESPACE,
        }
    }

    /// Writes the kubeconfig of the candidate `identity` to `path`: on the
    /// emulator its token is its identity; on kube-apiserver it is the
    /// ServiceAccount `identity`'s, and it names the candidate's own proxy.
    pub async fn candidate_kubeconfig(&self, identity: &str, path: &Path) -> Result<(), String> {
        match self {
            Server::Emulator(e) => e
                .write_kubeconfig(path, identity)
                .map_err(|e| e.to_string()),
            Server::Real(r) => {
                let target: SocketAddr = ([127, 0, 0, 1], r.api.port()).into();
                let proxy = Proxy::start(target)
                    .await
                    .map_err(|e| format!("cannot start a proxy for {identity}: {e}"))?;
                let through = format!("https://{}", proxy.addr());
                lock(&r.proxies).insert(identity.to_owned(), proxy);
                let (api, id, file) = (r.api.clone(), identity.to_owned(), path.to_owned());
                tokio::task::spawn_blocking(move || {
                    api.write_service_account_kubeconfig(TESTERS_NAMESPACE, &id, &file);
                    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
                    let text = text.replace(api.url(), &through);
                    std::fs::write(&file, text).map_err(|e| e.to_string())
                })
                .await
                .map_err(|e| e.to_string())?
            }
        }
    }

    /// Writes kubectl's kubeconfig to `path`.
    pub fn kubectl_kubeconfig(&self, path: &Path) -> Result<(), String> {
        match self {
            Server::Emulator(e) => e
                .write_kubeconfig(path, kubectl::TOKEN)
                .map_err(|e| e.to_string()),
            Server::Real(r) => {
                // The static token `kubectl`, one of the fixture's testers.
                r.api
                    .write_kubeconfig(kubectl::TOKEN, TESTERS_NAMESPACE, path);
                Ok(())
            }
        }
    }

    /// Puts `fault` on the requests of `identity`; what it does, or why it
    /// cannot.
    pub fn net(&self, identity: &str, fault: NetFault) -> Result<String, String> {
        match self {
            Server::Emulator(e) => {
                let f = e.faults(identity);
                Ok(match fault {
                    NetFault::Reset => {
                        f.reset();
                        "every request reset".to_owned()
                    }
                    NetFault::Hang => {
                        f.hang();
                        "every request hangs".to_owned()
                    }
                    NetFault::Latency(d) => {
                        f.latency(d);
                        format!("+{} ms per request", d.as_millis())
                    }
                    NetFault::TooMany(secs) => {
                        f.too_many_requests(secs);
                        format!("429, Retry-After {secs} s")
                    }
                    NetFault::CommitThenFail(code) => {
                        f.on(Match::writes()).error_after_commit(code);
                        format!("writes committed, then {code}")
                    }
                    NetFault::AnswerLost => {
                        f.on(Match::writes()).inject(Fault::AnswerLost);
                        "writes committed, answers dropped".to_owned()
                    }
                })
            }
            Server::Real(r) => {
                let proxies = lock(&r.proxies);
                let proxy = proxies
                    .get(identity)
                    .ok_or_else(|| format!("no proxy for {identity}"))?;
                let (mode, what) = match fault {
                    NetFault::Reset => (Mode::Refuse, "every connection reset".to_owned()),
                    NetFault::Hang => (Mode::Hold, "every byte held".to_owned()),
                    NetFault::Latency(d) => {
                        (Mode::Delay(d), format!("+{} ms each way", d.as_millis()))
                    }
                    NetFault::AnswerLost => (
                        Mode::Deaf,
                        "requests reach the server, answers lost".to_owned(),
                    ),
                    NetFault::TooMany(_) | NetFault::CommitThenFail(_) => {
                        return Err("the emulator's fault only".to_owned());
                    }
                };
                proxy.set(mode);
                Ok(what)
            }
        }
    }

    /// Heals the network fault on `identity`'s requests.
    pub fn heal(&self, identity: &str) {
        match self {
            Server::Emulator(e) => e.faults(identity).clear(),
            Server::Real(r) => {
                if let Some(p) = lock(&r.proxies).get(identity) {
                    p.set(Mode::Pass);
                }
            }
        }
    }

    /// Starts the server fault `fault` on a thread of its own (a restart
    /// blocks until the server is ready again); the thread ends when the fault
    /// is over, with what went wrong if anything did.
    pub fn server_fault(
        &self,
        fault: ServerFault,
    ) -> Result<std::thread::JoinHandle<Result<(), String>>, String> {
        let Server::Real(r) = self else {
            return Err("kube-apiserver's fault only".to_owned());
        };
        let api = r.api.clone();
        std::thread::Builder::new()
            .name("server-fault".into())
            .spawn(move || match fault {
                ServerFault::RestartApiserver { down } => {
                    api.restart_apiserver_after(down).map_err(|e| e.to_string())
                }
                ServerFault::RestartEtcd { down } => {
                    api.restart_etcd_after(down).map_err(|e| e.to_string())
                }
                ServerFault::StallEtcd { cont_after } => {
                    api.stall_etcd_for(cont_after).map_err(|e| e.to_string())
                }
            })
            .map_err(|e| format!("cannot start the fault's thread: {e}"))
    }

    /// The server's writes of the Lease `lease` not taken before (refused
    /// ones too).
    pub fn lease_writes(&self, lease: &str) -> Vec<Write> {
        match self {
            Server::Emulator(e) => e
                .write_history()
                .into_iter()
                .filter(|w| w.resource == Resource::Lease && w.name == lease)
                .map(|w| {
                    let spec = w
                        .object
                        .as_ref()
                        .filter(|_| w.committed && w.verb != Verb::Delete)
                        .map(|o| &o["spec"]);
                    Write {
                        at: w.at,
                        version: w.version(),
                        client: w.client,
                        verb: w.verb,
                        committed: w.committed,
                        code: w.code,
                        holder: spec.map(|s| s["holderIdentity"].as_str().unwrap_or("").to_owned()),
                        duration: spec.and_then(|s| s["leaseDurationSeconds"].as_i64()),
                    }
                })
                .collect(),
            Server::Real(r) => {
                let mut audit = r.read();
                let (taken, kept) = std::mem::take(&mut audit.writes)
                    .into_iter()
                    .partition(|(name, _)| name == lease);
                audit.writes = kept;
                taken.into_iter().map(|(_, w)| w).collect()
            }
        }
    }

    /// Counts requests from now on.
    pub fn reset_counts(&self) {
        match self {
            Server::Emulator(e) => e.reset_request_counts(),
            Server::Real(r) => {
                let mut audit = r.read();
                audit.counts = Counts::default();
                audit.counted.clear();
                audit.from = Some(SystemTime::now());
            }
        }
    }

    /// The requests on the Lease's kind since [`Server::reset_counts`] (on
    /// kube-apiserver: those the audit log has; a request is logged when
    /// answered).
    pub fn counts(&self) -> Counts {
        match self {
            Server::Emulator(e) => Counts(
                e.request_counts()
                    .iter()
                    .map(|(c, v, _, n)| ((c.to_owned(), v.as_str()), n))
                    .fold(BTreeMap::new(), |mut m, (k, n)| {
                        *m.entry(k).or_default() += n;
                        m
                    }),
            ),
            Server::Real(r) => {
                // What is answered by now, in the log a moment later.
                std::thread::sleep(Duration::from_millis(200));
                r.read().counts.clone()
            }
        }
    }
}

impl Real {
    /// The audit state, with the log's new events taken in.
    fn read(&self) -> std::sync::MutexGuard<'_, Audit> {
        let mut audit = lock(&self.audit);
        let (events, offset) = self.api.audit_events(audit.offset);
        audit.offset = offset;
        for e in events {
            if e.namespace != TESTERS_NAMESPACE || e.resource != "leases" {
                continue;
            }
            let Some(verb) = verb(&e.verb) else {
                continue;
            };
            let client = client_of(&e.user);
            if audit.from.is_some_and(|from| e.received >= from)
                && audit.counted.insert(e.id.clone())
            {
                *audit
                    .counts
                    .0
                    .entry((client.clone(), verb.as_str()))
                    .or_default() += 1;
            }
            if !verb.is_write() || e.stage != "ResponseComplete" || e.name.is_empty() {
                continue;
            }
            let committed = (200..300).contains(&e.code);
            let object = e
                .response
                .as_ref()
                .filter(|o| committed && verb != Verb::Delete && o["kind"] == "Lease");
            let spec = object.map(|o| &o["spec"]);
            let version = e
                .response
                .as_ref()
                .filter(|_| committed)
                .and_then(|o| o["metadata"]["resourceVersion"].as_str())
                .and_then(|v| v.parse().ok());
            audit.writes.push((
                e.name,
                Write {
                    at: e.stamped,
                    client,
                    verb,
                    committed,
                    code: e.code,
                    holder: spec.map(|s| s["holderIdentity"].as_str().unwrap_or("").to_owned()),
                    duration: spec.and_then(|s| s["leaseDurationSeconds"].as_i64()),
                    version,
                },
            ));
        }
        audit
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
