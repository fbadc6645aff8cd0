//! A small real controller: it copies the ConfigMaps labelled `mirror=true` in
//! the namespace `source` into the namespace `mirror`, and keeps the copies'
//! data in sync. Shared by the example `controller`, the benchmark
//! `bench_controller` and the crate's tests.
//!
//! Both namespaces are cached on every replica ([`Warm`]): the sources drive the
//! controller, and the mirrors tell the reconcile what is already there, so an
//! unchanged object costs no request at all. A copy changed or deleted by hand
//! triggers its source's reconcile (through the copies' warm cache), which
//! puts it back.

#![allow(dead_code)] // each user takes what it needs

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use election_controller::{ElectedController, TermContext, Warm};
use election_core::{Config, Term};
use election_driver::{Builder, Handle, OnLoss};
use election_ops::guard::not_leader;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_runtime::Controller;
use kube_runtime::controller::Action;
use kube_runtime::reflector::ObjectRef;
use kube_runtime::watcher;

/// Where the sources live.
pub const SOURCE: &str = "source";
/// Where the copies go.
pub const TARGET: &str = "mirror";
/// The Lease the replicas elect a leader with.
pub const LEASE: &str = "mirror-controller";
/// A source annotated with this many milliseconds makes its reconcile wait that
/// long before writing (for tests of a reconcile that outlives its term).
pub const SLOW_MS: &str = "mirror.example/slow-ms";

/// How a reconcile ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The copy was already up to date: no request.
    Unchanged,
    /// The copy was created or replaced.
    Wrote,
    /// The term's client refused the write: this replica no longer led in its term.
    Refused,
    /// The API answered an error.
    Failed(String),
}

/// One reconcile, as the replica saw it.
#[derive(Clone, Debug)]
pub struct Reconcile {
    /// The replica's identity.
    pub replica: String,
    /// Its term.
    pub term: Term,
    /// The source's name.
    pub name: String,
    /// When the reconcile started.
    pub started: Instant,
    /// The same instant on the wall clock (to compare with the emulator's
    /// write history).
    pub started_at: SystemTime,
    /// How it ended.
    pub outcome: Outcome,
}

/// Every reconcile of every replica, in the order they ended, and when each
/// term's controller was made.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Entries>>);

#[derive(Default)]
struct Entries {
    reconciles: Vec<Reconcile>,
    /// (replica, when its term's controller was made)
    terms: Vec<(String, SystemTime)>,
}

impl Log {
    fn push(&self, r: Reconcile) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reconciles
            .push(r);
    }

    fn term_started(&self, replica: &str) {
        let now = SystemTime::now();
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        log.terms.push((replica.to_owned(), now));
    }

    /// A copy of the log.
    pub fn entries(&self) -> Vec<Reconcile> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reconciles
            .clone()
    }

    /// When `replica`'s last term's controller was made.
    pub fn last_term_start(&self, replica: &str) -> Option<SystemTime> {
        let log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        log.terms
            .iter()
            .rev()
            .find(|(r, _)| r == replica)
            .map(|(_, at)| *at)
    }

    /// The first reconcile `replica` started at or after `since`.
    pub fn first_by(&self, replica: &str, since: Instant) -> Option<Reconcile> {
        self.entries()
            .into_iter()
            .filter(|r| r.replica == replica && r.started >= since)
            .min_by_key(|r| r.started)
    }
}

/// What a reconcile needs: its term's context, the mirrors' cache, the log.
pub struct Context {
    replica: String,
    term: TermContext,
    targets: Warm<ConfigMap>,
    log: Log,
    verbose: bool,
}

/// A reconcile's failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(#[from] kube::Error);

/// The copy `source` should have.
fn copy_of(source: &ConfigMap) -> ConfigMap {
    let mut copy = ConfigMap::default();
    copy.metadata.name = source.metadata.name.clone();
    copy.metadata.namespace = Some(TARGET.to_owned());
    copy.metadata.labels = Some([("mirrored-from".to_owned(), SOURCE.to_owned())].into());
    copy.data = source.data.clone();
    copy
}

/// The source a copy was made from.
fn source_of(copy: Arc<ConfigMap>) -> Option<ObjectRef<ConfigMap>> {
    let name = copy.metadata.name.as_deref()?;
    Some(ObjectRef::new(name).within(SOURCE))
}

async fn reconcile(source: Arc<ConfigMap>, cx: Arc<Context>) -> Result<Action, Error> {
    let (started, started_at) = (Instant::now(), SystemTime::now());
    let name = source.metadata.name.clone().unwrap_or_default();
    let slow = source
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SLOW_MS))
        .and_then(|ms| ms.parse().ok())
        .map(Duration::from_millis);
    if let Some(wait) = slow {
        tokio::time::sleep(wait).await;
    }
    let mut copy = copy_of(&source);
    let api: Api<ConfigMap> = Api::namespaced(cx.term.client.clone(), TARGET);
    let existing = cx
        .targets
        .store()
        .get(&ObjectRef::new(&name).within(TARGET));
    let result = match existing {
        Some(have) if have.data == copy.data => Ok(Outcome::Unchanged),
        Some(have) => {
            copy.metadata.resource_version = have.metadata.resource_version.clone();
            api.replace(&name, &PostParams::default(), &copy)
                .await
                .map(|_| Outcome::Wrote)
        }
        None => api
            .create(&PostParams::default(), &copy)
            .await
            .map(|_| Outcome::Wrote),
    };
    let outcome = match &result {
        Ok(outcome) => outcome.clone(),
        Err(e) if not_leader(e).is_some() => Outcome::Refused,
        Err(e) => Outcome::Failed(e.to_string()),
    };
    if cx.verbose {
        println!(
            "  {:<8} reconciled {name} in term {}: {outcome:?}",
            cx.replica, cx.term.term
        );
    }
    cx.log.push(Reconcile {
        replica: cx.replica.clone(),
        term: cx.term.term.clone(),
        name,
        started,
        started_at,
        outcome,
    });
    // A conflict (the cache of copies lagged our own write) or any failure:
    // the next try reads the cache again.
    result.map(|_| Action::await_change()).map_err(Error)
}

fn error_policy(_: Arc<ConfigMap>, _: &Error, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

/// One replica of the mirror controller.
pub struct Replica {
    /// Its identity (also its bearer token on the emulator).
    pub id: String,
    /// Its election.
    pub handle: Handle,
    /// The sources' cache.
    pub sources: Warm<ConfigMap>,
}

/// How a replica is started.
pub struct Options {
    /// The election's timings.
    pub config: fn(&str) -> Config,
    /// Print each reconcile.
    pub verbose: bool,
    /// End the election on a loss (client-go's `RunOrDie`) instead of
    /// campaigning again.
    pub exit_on_loss: bool,
    /// Cold standby, for comparison: nothing is cached before leading; each
    /// term starts `Controller::new` (a LIST of the sources) and lists the
    /// copies, then reconciles.
    pub cold: bool,
}

impl Options {
    /// `Config::fast` (a 2 s lease), quiet, warm, campaigning again after a loss.
    pub fn fast() -> Options {
        Options {
            config: |id| Config::fast(id),
            verbose: false,
            exit_on_loss: false,
            cold: false,
        }
    }
}

/// Starts a replica on `kube_config` (the emulator's or a cluster's): its
/// caches at once, its election, and its controller whenever it leads.
pub fn start(kube_config: &kube::Config, id: &str, options: &Options, log: &Log) -> Replica {
    let client = lock_kube::lock_client(kube_config.clone()).expect("a client");
    let sources = Warm::spawn(
        Api::<ConfigMap>::namespaced(client.clone(), SOURCE),
        watcher::Config::default().labels("mirror=true"),
    );
    let targets = Warm::spawn(
        Api::<ConfigMap>::namespaced(client.clone(), TARGET),
        watcher::Config::default().labels("mirrored-from"),
    );
    let lock = lock_lease::LeaseLock::new(client, "default", LEASE).expect("a valid name");
    let (replica, log, verbose, cold) = (id.to_owned(), log.clone(), options.verbose, options.cold);
    let handle = ElectedController::new(sources.clone(), kube_config.clone())
        .spawn(
            Builder::new(lock, (options.config)(id)).on_loss(if options.exit_on_loss {
                OnLoss::Exit
            } else {
                OnLoss::Campaign
            }),
            move |warm_controller, term| {
                log.term_started(&replica);
                let targets = if cold {
                    let client = term.client.clone();
                    Warm::spawn(
                        Api::<ConfigMap>::namespaced(client, TARGET),
                        watcher::Config::default().labels("mirrored-from"),
                    )
                } else {
                    targets.clone()
                };
                let cx = Arc::new(Context {
                    replica: replica.clone(),
                    term,
                    targets: targets.clone(),
                    log: log.clone(),
                    verbose,
                });
                if !cold {
                    // A copy changed or deleted by hand brings its source
                    // back to the reconcile, which restores it.
                    return warm_controller
                        .watches_shared_stream(targets.subscribe_changes(), source_of)
                        .run(reconcile, error_policy, cx)
                        .boxed();
                }
                let sources = Api::<ConfigMap>::namespaced(cx.term.client.clone(), SOURCE);
                let controller =
                    Controller::new(sources, watcher::Config::default().labels("mirror=true"))
                        .graceful_shutdown_on(cx.term.given_up());
                futures::stream::once(async move {
                    targets.synced().await;
                    controller.run(reconcile, error_policy, cx)
                })
                .flatten()
                .boxed()
            },
        )
        .expect("a valid configuration");
    Replica {
        id: id.to_owned(),
        handle,
        sources,
    }
}

/// A source ConfigMap.
pub fn source(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.labels = Some([("mirror".to_owned(), "true".to_owned())].into());
    cm.data = Some([("value".to_owned(), value.to_owned())].into());
    cm
}

/// An emulator with the two namespaces and a source named by each of `names`
/// (value `v1`), and the sources' API as an admin sees it.
pub async fn cluster(
    names: impl IntoIterator<Item = String>,
) -> (kube_emulator::Emulator, Api<ConfigMap>) {
    let emu = kube_emulator::Emulator::start().await.expect("emulator");
    let admin = emu.client("admin").expect("client");
    let sources = populate(admin, names).await;
    (emu, sources)
}

/// The two namespaces and a source named by each of `names` (value `v1`),
/// made by `admin` on any server; the sources' API as `admin` sees it.
pub async fn populate(
    admin: kube::Client,
    names: impl IntoIterator<Item = String>,
) -> Api<ConfigMap> {
    namespaces(&admin).await;
    let sources: Api<ConfigMap> = Api::namespaced(admin, SOURCE);
    for name in names {
        sources
            .create(&PostParams::default(), &source(&name, "v1"))
            .await
            .expect("create");
    }
    sources
}

/// Sets a source's value.
pub async fn set_value(sources: &Api<ConfigMap>, name: &str, value: &str) {
    let mut cm = sources.get(name).await.expect("get");
    cm.data = Some([("value".to_owned(), value.to_owned())].into());
    sources
        .replace(name, &PostParams::default(), &cm)
        .await
        .expect("update");
}

/// Takes the replica that leads now out of `replicas`.
pub fn take_leader(replicas: &mut Vec<Replica>) -> Option<Replica> {
    let i = replicas.iter().position(|r| r.handle.is_leader())?;
    Some(replicas.remove(i))
}

/// A source whose reconcile waits `ms` milliseconds before it writes.
pub fn slow_source(name: &str, ms: u64) -> ConfigMap {
    let mut cm = source(name, "v1");
    cm.metadata.annotations = Some([(SLOW_MS.to_owned(), ms.to_string())].into());
    cm
}

/// Creates the two namespaces.
async fn namespaces(client: &kube::Client) {
    use k8s_openapi::api::core::v1::Namespace;
    let api: Api<Namespace> = Api::all(client.clone());
    for ns in [SOURCE, TARGET] {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.to_owned());
        api.create(&PostParams::default(), &n)
            .await
            .expect("namespace");
    }
}

/// What the write history shows, once checked.
#[derive(Debug, Default)]
pub struct History {
    /// Committed writes to the copies, per replica.
    pub writes: std::collections::BTreeMap<String, usize>,
    /// The writers of the copies in commit order, each run of one writer once.
    pub runs: Vec<String>,
}

/// The holder a committed write of the mirror's Lease named, `None` for any
/// other write.
pub fn lease_holder(w: &kube_emulator::WriteRecord) -> Option<&str> {
    if w.resource != kube_emulator::Resource::Lease || w.name != LEASE {
        return None;
    }
    let holder = w.object.as_ref()?["spec"]["holderIdentity"].as_str();
    Some(holder.unwrap_or(""))
}

/// Checks the committed writes, in the server's commit order
/// ([`kube_emulator::Emulator::committed_writes`]): every write to a copy
/// comes from the replica that the Lease named at that instant (the last
/// Lease write before it), and reaches the server before that replica's
/// deadline (its last Lease write plus `renew_deadline`: its own send time was
/// earlier still).
pub fn check_history(
    commits: &[kube_emulator::WriteRecord],
    renew_deadline: Duration,
) -> Result<History, String> {
    use kube_emulator::Resource;
    let mut holder: Option<(String, std::time::SystemTime)> = None;
    let mut history = History::default();
    for r in commits {
        if let Some(name) = lease_holder(r) {
            holder = Some((name.to_owned(), r.at));
        } else if r.resource == Resource::ConfigMap && r.namespace == TARGET {
            match &holder {
                Some((h, renewed)) if *h == r.client => {
                    if r.at > *renewed + renew_deadline {
                        return Err(format!(
                            "{} wrote {} {:?} after its deadline",
                            r.client,
                            r.name,
                            r.at.duration_since(*renewed + renew_deadline)
                                .unwrap_or_default()
                        ));
                    }
                }
                other => {
                    return Err(format!(
                        "{} wrote {} while the Lease named {:?}",
                        r.client,
                        r.name,
                        other.as_ref().map(|(h, _)| h)
                    ));
                }
            }
            *history.writes.entry(r.client.clone()).or_default() += 1;
            if history.runs.last() != Some(&r.client) {
                history.runs.push(r.client.clone());
            }
        }
    }
    Ok(history)
}
