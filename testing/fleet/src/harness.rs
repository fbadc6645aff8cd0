//! A fleet on the real kube-apiserver (`test_kit::apiserver`'s shared
//! server): peers of both libraries on one Lease of a namespace of their own,
//! each as a ServiceAccount of its own (so that the API server's audit log
//! tells their requests apart), the Lease's history kept by a watch from
//! before the first peer, and the judgments at the end.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::judge::{self, Recorded};
use crate::line::{Event, mono_now};
use crate::peer::{Library, Log, Peer, Signal, Spec};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, WatchEvent, WatchParams};
use test_kit::apiserver::{ADMIN, ApiServer, Server, TESTERS_NAMESPACE};
use test_kit::proxy::Proxy;

/// client-go's three timings for every peer: lease 4 s, renew deadline 3 s,
/// retry 1 s (kube-elector's request timeout, half the renew deadline as
/// `Config::client_go` takes it, and a retry must fit in the renew deadline).
/// Not a shorter retry: client-go's followers compare records as
/// JSON whose times have whole seconds (`metav1.Time`), so two renewals in one
/// second look like one, and a follower counts the lease from the first: up to
/// a second early by the holder's last renewal (seen with 500 ms: a client-go
/// follower took over 2.79 s after a 3 s lease's last renewal).
pub const TIMINGS_MS: (u64, u64, u64) = (4000, 3000, 1000);

/// The Lease every peer elects on.
pub const LEASE: &str = "mixed";

/// The value after `name` among this program's arguments (`--rounds 20`),
/// for the benchmarks' flags.
pub fn flag(name: &str) -> Option<String> {
    let mut args = std::env::args().skip_while(|a| a != name);
    args.next()?;
    args.next()
}

/// The client-go peer built by `testing/k8s-server/build.sh`.
///
/// # Panics
///
/// When it is not built.
pub fn client_go_peer() -> PathBuf {
    let bin = test_kit::apiserver::bin_dir().join("client-go-peer");
    assert!(
        bin.is_file(),
        "no client-go peer at {}: run bash testing/k8s-server/build.sh",
        bin.display()
    );
    bin
}

/// A fleet on the shared kube-apiserver, in a namespace of its own.
pub struct Fleet {
    /// The server.
    pub server: &'static ApiServer,
    /// The fleet's namespace: its Lease, its LeaseCandidates.
    pub ns: String,
    /// The admin's kubeconfig, for the namespace.
    pub kubeconfig: PathBuf,
    /// The peers' lines and the harness's marks.
    pub log: Log,
    /// The running peers.
    pub peers: Vec<Peer>,
    /// The Lease's states as its watch delivered them.
    pub history: Arc<Mutex<Vec<Recorded>>>,
    /// How the Lease's transitions count: coordinated once a peer runs so.
    pub counting: judge::Counting,
    elector_peer: PathBuf,
    dir: PathBuf,
    proxies: std::collections::BTreeMap<String, Proxy>,
    watch: tokio::task::JoinHandle<()>,
}

impl Fleet {
    /// A namespace, the admin's kubeconfig for it, and the Lease's watch,
    /// established before any peer starts; kube-elector's peers run
    /// `elector_peer` (`env!("CARGO_BIN_EXE_elector-peer")` in this crate's
    /// tests and benchmarks).
    ///
    /// # Panics
    ///
    /// When the server does not start or a file cannot be written.
    pub async fn new(elector_peer: &Path) -> Fleet {
        Fleet::on(ApiServer::shared(), elector_peer).await
    }

    /// As [`Fleet::new`], on `server`: a server of the test's own, for a fault
    /// that would break the other tests' requests on the shared one (a
    /// restart).
    ///
    /// # Panics
    ///
    /// When a file cannot be written.
    pub async fn on(server: &'static ApiServer, elector_peer: &Path) -> Fleet {
        let ns = server.namespace();
        let dir = std::env::temp_dir().join(format!("fleet-{}-{ns}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the kubeconfigs");
        let kubeconfig = dir.join("admin.kubeconfig");
        server.write_kubeconfig(ADMIN, &ns, &kubeconfig);
        let history = Arc::new(Mutex::new(Vec::new()));
        let (ready, watching) = tokio::sync::oneshot::channel();
        let watch = tokio::spawn(keep(
            server.client(ADMIN),
            ns.clone(),
            Arc::clone(&history),
            ready,
        ));
        watching.await.expect("the Lease's watch starts");
        Fleet {
            server,
            ns,
            kubeconfig,
            log: Log::default(),
            peers: Vec::new(),
            history,
            counting: judge::Counting::EachHolder,
            elector_peer: elector_peer.to_owned(),
            dir,
            proxies: std::collections::BTreeMap::new(),
            watch,
        }
    }

    /// The library of the peer `id` (`g-…` client-go, `r-…` kube-elector).
    pub fn library(id: &str) -> Library {
        if id.starts_with("g-") {
            Library::ClientGo
        } else {
            Library::Elector
        }
    }

    /// The peer binary of `library`.
    pub fn binary(&self, library: Library) -> PathBuf {
        match library {
            Library::ClientGo => client_go_peer(),
            Library::Elector => self.elector_peer.clone(),
        }
    }

    /// The API server's user for the peer `id`: the ServiceAccount `id` of
    /// `test_kit::apiserver::TESTERS_NAMESPACE` (bound to `cluster-admin`).
    pub fn user(id: &str) -> String {
        format!("system:serviceaccount:{TESTERS_NAMESPACE}:{id}")
    }

    /// Starts the peer `id` (`g-…` client-go, `r-…` kube-elector), as the
    /// user [`Fleet::user`], coordinated with that version if one is given,
    /// and waits for its `started` line.
    ///
    /// # Panics
    ///
    /// When it prints no `started` line within 20 s.
    pub async fn start(&mut self, id: &str, coordinated: Option<&str>) {
        let library = Self::library(id);
        if coordinated.is_some() {
            self.counting = judge::Counting::Coordinated;
        }
        let spec = Spec {
            library,
            id: id.to_owned(),
            lease: LEASE.to_owned(),
            namespace: self.ns.clone(),
            kubeconfig: self.kubeconfig_of(id),
            timings_ms: TIMINGS_MS,
            tick_ms: 100,
            coordinated: coordinated.map(str::to_owned),
        };
        let since = mono_now();
        let peer = Peer::spawn(&self.binary(library), spec, &self.log).expect("a peer process");
        if !peer.started(since, Duration::from_secs(20)).await {
            let said: Vec<String> = self
                .log
                .stderr()
                .into_iter()
                .filter(|l| l.starts_with(&format!("{id}: ")))
                .collect();
            panic!("{id} printed no `started` line in 20 s; its stderr: {said:#?}");
        }
        self.peers.push(peer);
    }

    /// The kubeconfig of the peer `id`'s ServiceAccount (written once),
    /// through its proxy if it has one.
    fn kubeconfig_of(&self, id: &str) -> PathBuf {
        let path = self.dir.join(format!("{id}.kubeconfig"));
        if !path.is_file() {
            self.server
                .write_service_account_kubeconfig(TESTERS_NAMESPACE, id, &path);
            if let Some(proxy) = self.proxies.get(id) {
                let direct = self.server.url().to_owned();
                let text = std::fs::read_to_string(&path).expect("the kubeconfig");
                let through = text.replace(&direct, &format!("https://{}", proxy.addr()));
                assert_ne!(text, through, "the kubeconfig names the server");
                std::fs::write(&path, through).expect("the kubeconfig");
            }
        }
        path
    }

    /// Puts the peer `id`, not started yet, behind a proxy of its own
    /// (`test_kit::proxy`): every request of it goes through [`Fleet::proxy`].
    ///
    /// # Panics
    ///
    /// When `id` has a kubeconfig already, or no port can be bound.
    pub async fn behind_proxy(&mut self, id: &str) {
        assert!(
            !self.dir.join(format!("{id}.kubeconfig")).is_file(),
            "{id} started already without a proxy"
        );
        let target = format!("127.0.0.1:{}", self.server.port())
            .parse()
            .expect("an address");
        let proxy = Proxy::start(target).await.expect("a proxy");
        self.proxies.insert(id.to_owned(), proxy);
    }

    /// The proxy of the peer `id`.
    pub fn proxy(&self, id: &str) -> &Proxy {
        self.proxies.get(id).expect("a peer behind a proxy")
    }

    /// Starts `leader` alone and waits until it leads and its work ticks,
    /// then starts `others`: a fleet whose leader is known.
    ///
    /// # Panics
    ///
    /// When `leader` does not lead and tick within three leases.
    pub async fn start_led_by(&mut self, leader: &str, others: &[&str]) {
        let lease = Duration::from_millis(TIMINGS_MS.0);
        self.start(leader, None).await;
        let (first, _) = self.next_leader(0, "", lease * 3).await.expect("a leader");
        assert_eq!(first, leader);
        for id in others {
            self.start(id, None).await;
        }
        self.log
            .wait_for(0, lease * 3, |l| {
                l.identity == leader && l.event == Event::Tick
            })
            .await
            .expect("the leader ticks");
    }

    /// The running peer `id`.
    pub fn peer(&self, id: &str) -> &Peer {
        self.peers
            .iter()
            .find(|p| p.id() == id)
            .expect("a running peer")
    }

    /// Sends `signal` to `id` and, for SIGTERM and SIGKILL, waits for its
    /// exit (a SIGTERM: with status 0 within 10 s) and forgets it.
    pub async fn signal(&mut self, id: &str, signal: Signal) {
        let i = self
            .peers
            .iter()
            .position(|p| p.id() == id)
            .expect("a running peer");
        self.peers[i].signal(signal);
        if matches!(signal, Signal::Term | Signal::Kill) {
            let mut peer = self.peers.remove(i);
            let status = peer.exited(Duration::from_secs(10)).await;
            if signal == Signal::Term {
                assert!(
                    status.is_some_and(|s| s.success()),
                    "{id} did not exit cleanly within 10 s of SIGTERM: {status:?}"
                );
            }
        }
    }

    /// Waits for the first `leading` line after `since` by a peer other than
    /// `not`.
    pub async fn next_leader(
        &self,
        since: u64,
        not: &str,
        within: Duration,
    ) -> Option<(String, u64)> {
        self.log
            .wait_for(since, within, |l| {
                l.event == Event::Leading && l.identity != not
            })
            .await
            .map(|l| (l.identity, l.mono))
    }

    /// Stops every peer gracefully, waits a moment for the watch, and judges:
    /// no line unread, no act of a peer in another's term, no two terms at
    /// once, and a Lease history without an early takeover or a miscounted
    /// transition.
    pub async fn finish(mut self) -> Judged {
        // Those that exited already (a client-go peer that lost its lease) are
        // not signalled.
        let ids: Vec<String> = self
            .peers
            .iter_mut()
            .filter_map(|p| p.status().is_none().then(|| p.id().to_owned()))
            .collect();
        for id in ids {
            self.signal(&id, Signal::Term).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.watch.abort();
        let (lines, marks) = (self.log.lines(), self.log.marks());
        let history = self.history.lock().unwrap().clone();
        let _ = std::fs::remove_dir_all(&self.dir);
        Judged {
            stderr: self.log.stderr(),
            bad_lines: self.log.bad_lines(),
            acts: judge::act_overlaps(&lines, &marks),
            terms: judge::term_overlaps(&lines, &marks),
            history_faults: judge::history_faults(&history, 50_000_000, self.counting),
            outside: judge::ticks_outside_the_lease(&lines, &history, 50_000_000),
            history,
        }
    }
}

/// What the judgments found.
#[derive(Debug)]
pub struct Judged {
    /// The peers' stderr.
    pub stderr: Vec<String>,
    /// Output that did not read as a line.
    pub bad_lines: Vec<String>,
    /// Acts inside another's term.
    pub acts: Vec<judge::Overlap>,
    /// Terms at once.
    pub terms: Vec<(judge::Term, judge::Term, u64)>,
    /// What is wrong with the Lease's history.
    pub history_faults: Vec<String>,
    /// Ticks the Lease did not name the ticking peer's holder for.
    pub outside: Vec<judge::Overlap>,
    /// The Lease's history.
    pub history: Vec<Recorded>,
}

impl Judged {
    /// Panics naming whatever the judgments found.
    ///
    /// # Panics
    ///
    /// When they found anything.
    pub fn assert_clean(&self) {
        let clean = self.bad_lines.is_empty()
            && self.acts.is_empty()
            && self.terms.is_empty()
            && self.history_faults.is_empty()
            && self.outside.is_empty();
        if !clean {
            eprintln!("the peers' stderr:\n{}", self.stderr.join("\n"));
            eprintln!("the Lease's history: {:#?}", self.history);
        }
        assert!(
            self.bad_lines.is_empty(),
            "unreadable lines: {:?}",
            self.bad_lines
        );
        assert!(
            self.acts.is_empty(),
            "a peer acted in another's term: {:?}",
            self.acts
        );
        assert!(
            self.terms.is_empty(),
            "two peers led at once: {:?}",
            self.terms
        );
        assert!(
            self.history_faults.is_empty(),
            "the Lease's history: {:?}",
            self.history_faults
        );
        assert!(
            self.outside.is_empty(),
            "ticks outside the Lease's term: {:?}",
            self.outside
        );
    }
}

/// Keeps the Lease's history: every state a watch delivers, from before the
/// Lease exists.
async fn keep(
    client: kube::Client,
    ns: String,
    history: Arc<Mutex<Vec<Recorded>>>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let api: Api<Lease> = Api::namespaced(client, &ns);
    let params = WatchParams::default().fields(&format!("metadata.name={LEASE}"));
    // Where the next watch starts, and the version recorded last.
    let mut from = "0".to_owned();
    let mut recorded = String::new();
    let mut ready = Some(ready);
    loop {
        let Ok(stream) = api.watch(&params, &from).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        // The server answered: the watch is registered.
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        let mut stream = stream.boxed();
        while let Ok(Some(event)) = stream.try_next().await {
            let lease = match event {
                WatchEvent::Added(l) | WatchEvent::Modified(l) => l,
                // The version is gone (a restarted server's watch cache starts
                // after it): from the current state on.
                WatchEvent::Error(e) if e.code == 410 => {
                    from = "0".to_owned();
                    break;
                }
                _ => continue,
            };
            let spec = lease.spec.clone().unwrap_or_default();
            let version = lease.metadata.resource_version.clone().unwrap_or_default();
            from.clone_from(&version);
            if version == recorded {
                // The state recorded last, delivered again by a watch from
                // "0": no new write.
                continue;
            }
            recorded.clone_from(&version);
            history.lock().unwrap().push(Recorded {
                mono: mono_now(),
                holder: spec.holder_identity.unwrap_or_default(),
                transitions: spec.lease_transitions.unwrap_or(0),
                duration_secs: spec.lease_duration_seconds.unwrap_or(0),
                version: version.clone(),
                renew: spec
                    .renew_time
                    .as_ref()
                    .map(|t| t.0.to_string())
                    .unwrap_or_default(),
            });
        }
    }
}

/// The median and the maximum of `ms`.
pub fn median_max(ms: &[f64]) -> (f64, f64) {
    let mut v = ms.to_vec();
    v.sort_by(f64::total_cmp);
    let median = if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    };
    (median, v.last().copied().unwrap_or(f64::NAN))
}
