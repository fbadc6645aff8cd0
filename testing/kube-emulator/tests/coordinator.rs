//! Coordinated leader election by the emulator, seen from the outside: the
//! candidates are the test's, created and acked through the real
//! `kube::Client` over HTTP (a small task per candidate renews it whenever the
//! coordinator pings it), and the Lease is read back from the emulator.
//!
//! The timings are the API server's scaled by 0.2: one second to ack a ping,
//! a look every second, Leases of one second. A candidate that acks answers
//! within milliseconds, so one second leaves a wide margin on a loaded
//! machine; every bound a test asserts says why it holds.

mod common;

use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use kube_emulator::{Coordinator, Emulator, Resource, Verb, WriteRecord};
use kube_runtime::WatchStreamExt;
use kube_runtime::watcher;
use serde_json::Value;
use tokio::task::JoinHandle;

use common::{Binary, lease_candidate};

const NS: &str = "default";
const LEASE: &str = "kube-scheduler";

/// The API server's timings, five times faster.
fn timings() -> Coordinator {
    Coordinator::default().scaled(0.2)
}

/// How long a test waits for what must happen; far above every timing, so
/// that only a coordinator that never does it fails.
const PATIENCE: Duration = Duration::from_secs(20);

/// A task that ends when dropped.
struct Task(JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An emulator with the coordinator on, and clients for candidates and Leases.
struct Cluster {
    emu: Emulator,
    candidates: Api<LeaseCandidate>,
    leases: Api<Lease>,
}

impl Cluster {
    async fn start(timings: Coordinator) -> Cluster {
        let emu = Emulator::builder()
            .coordinator(timings)
            .start()
            .await
            .expect("start");
        let client = emu.client("candidates").expect("client");
        Cluster {
            candidates: Api::namespaced(client.clone(), NS),
            leases: Api::namespaced(client, NS),
            emu,
        }
    }

    /// Creates a candidate for [`LEASE`] that last renewed `ago`: zero is a
    /// fresh candidate, which the coordinator need not ping; more than the
    /// election duration is one it must ping before it counts.
    async fn candidate(&self, name: &str, emulation: &str, binary: &str, ago: Duration) {
        let renewed = Timestamp::now()
            .checked_sub(SignedDuration::try_from(ago).expect("a small duration"))
            .expect("a recent time");
        let c = lease_candidate(name, LEASE, binary, emulation, renewed);
        self.candidates
            .create(&PostParams::default(), &c)
            .await
            .expect("create the candidate");
    }

    /// Acks every ping of the candidate `name` (sets `renewTime` after its
    /// `pingTime`), as client-go's LeaseCandidate does, until dropped.
    fn acker(&self, name: &str) -> Task {
        let api = self.candidates.clone();
        let name = name.to_owned();
        Task(tokio::spawn(async move {
            let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let mut seen = watcher(api.clone(), config).applied_objects().boxed();
            while let Some(next) = seen.next().await {
                let Ok(mut c) = next else { continue };
                let unanswered = match (&c.spec.ping_time, &c.spec.renew_time) {
                    (Some(ping), Some(renew)) => renew < ping,
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                if unanswered {
                    c.spec.renew_time = Some(MicroTime(Timestamp::now()));
                    // A conflict means a newer version, which the watch brings.
                    let _ = api.replace(&name, &PostParams::default(), &c).await;
                }
            }
        }))
    }

    /// Renews [`LEASE`] every 100 ms while `name` holds it, writing a
    /// duration of `seconds`, as a leader's renew loop does, until dropped.
    fn renewer(&self, name: &str, seconds: i32) -> Task {
        let api = self.leases.clone();
        let name = name.to_owned();
        Task(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let Ok(mut lease) = api.get(LEASE).await else {
                    continue;
                };
                let spec = lease.spec.get_or_insert_default();
                if spec.holder_identity.as_deref() != Some(&name) {
                    continue;
                }
                spec.renew_time = Some(MicroTime(Timestamp::now()));
                spec.lease_duration_seconds = Some(seconds);
                let _ = api.replace(LEASE, &PostParams::default(), &lease).await;
            }
        }))
    }

    /// The Lease as stored.
    fn lease(&self) -> Option<Value> {
        self.emu.object(Resource::Lease, NS, LEASE)
    }

    /// Waits (checking every 10 ms) until [`LEASE`] is as `wanted` says, and
    /// returns it; fails after [`PATIENCE`] naming `what`, with the Lease as it is.
    async fn lease_where(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let lease = self.lease();
            if let Some(l) = lease.as_ref().filter(|l| wanted(l)) {
                return l.clone();
            }
            assert!(
                Instant::now() < deadline,
                "{LEASE}: not {what} after {PATIENCE:?}: {lease:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until [`LEASE`] is held by `holder`.
    async fn held_by(&self, holder: &str) -> Value {
        self.lease_where(&format!("held by {holder}"), |l| {
            l["spec"]["holderIdentity"] == holder
        })
        .await
    }

    /// The coordinator's committed writes of `resource`, in commit order.
    fn coordinator_writes(&self, resource: Resource) -> Vec<WriteRecord> {
        self.emu
            .committed_writes()
            .into_iter()
            .filter(|w| w.client == Coordinator::CLIENT && w.resource == resource)
            .collect()
    }
}

fn holder_of(write: &WriteRecord) -> String {
    write
        .object
        .as_ref()
        .and_then(|o| o["spec"]["holderIdentity"].as_str())
        .unwrap_or("")
        .to_owned()
}

fn micro_time(lease: &Value, field: &str) -> SystemTime {
    let text = lease["spec"][field].as_str().expect("a time");
    SystemTime::from(text.parse::<Timestamp>().expect("RFC 3339"))
}

/// Three candidates that must be pinged before they count (their renewals are
/// a minute old); all three ack. The one with the oldest emulation version is
/// elected, the Lease is created for it with the strategy and the
/// coordinator's duration, and the writes are the coordinator's, as any
/// client's: in the write history, with new versions, seen by a watch.
#[tokio::test]
async fn the_oldest_emulation_version_is_elected_and_the_lease_created() {
    let cluster = Cluster::start(timings()).await;
    let mut watch = cluster
        .leases
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch leases")
        .boxed();
    let stale = Duration::from_secs(60);
    // Each is pinged as it appears; none acks until all three exist, so the
    // first ping is still within its one-second window when the acks come
    // (creating two candidates takes milliseconds).
    cluster.candidate("c-134", "1.34.0", "1.34.0", stale).await;
    cluster.candidate("b-133", "1.33.0", "1.34.0", stale).await;
    cluster.candidate("a-132", "1.32.0", "1.34.0", stale).await;
    let _ackers = ["c-134", "b-133", "a-132"].map(|name| cluster.acker(name));

    let lease = cluster.held_by("a-132").await;
    assert_eq!(lease["spec"]["strategy"], "OldestEmulationVersion");
    assert_eq!(
        lease["spec"]["leaseDurationSeconds"],
        timings().lease_duration_seconds()
    );
    assert!(lease["spec"]["renewTime"].is_string());

    let created = cluster.coordinator_writes(Resource::Lease);
    assert_eq!(created[0].verb, Verb::Create);
    assert_eq!(
        holder_of(&created[0]),
        "a-132",
        "elected at once, never another"
    );
    let pings = cluster.coordinator_writes(Resource::LeaseCandidate);
    let mut pinged: Vec<&str> = pings.iter().map(|w| w.name.as_str()).collect();
    pinged.sort_unstable();
    assert_eq!(pinged, ["a-132", "b-133", "c-134"], "each pinged once");
    assert!(pings.iter().all(|w| w.verb == Verb::Update));
    assert!(
        pings.iter().all(|w| w.version() < created[0].version()),
        "pinged before the election"
    );

    let event = tokio::time::timeout(PATIENCE, watch.next())
        .await
        .expect("an event in time")
        .expect("the watch goes on")
        .expect("decoded");
    let WatchEvent::Added(seen) = event else {
        panic!("{event:?}")
    };
    assert_eq!(
        seen.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("a-132")
    );
    assert_eq!(
        seen.metadata.resource_version, created[0].resource_version,
        "the watch saw the coordinator's write"
    );
}

/// A better candidate (an older emulation version) appears while the Lease
/// is valid and renewed: the coordinator only sets `preferredHolder`, and the
/// holder keeps the Lease.
#[tokio::test]
async fn a_better_candidate_for_a_valid_lease_is_only_preferred() {
    let cluster = Cluster::start(timings()).await;
    // Ten-second Leases renewed every 100 ms: once b holds one, it stays
    // valid however slow the machine, so only the better candidate can
    // change anything.
    let _renewing = cluster.renewer("b-133", 10);
    // A fresh candidate counts without a ping: elected alone.
    cluster
        .candidate("b-133", "1.33.0", "1.34.0", Duration::ZERO)
        .await;
    let _b = cluster.acker("b-133");
    cluster
        .lease_where("held by b-133 and renewed for 10 s", |l| {
            l["spec"]["holderIdentity"] == "b-133" && l["spec"]["leaseDurationSeconds"] == 10
        })
        .await;

    cluster
        .candidate("a-132", "1.32.0", "1.34.0", Duration::ZERO)
        .await;
    let _a = cluster.acker("a-132");
    let lease = cluster
        .lease_where("preferring a-132", |l| {
            l["spec"]["preferredHolder"] == "a-132"
        })
        .await;
    assert_eq!(
        lease["spec"]["holderIdentity"], "b-133",
        "asked, not forced"
    );
    let writes = cluster.coordinator_writes(Resource::Lease);
    assert!(
        writes.iter().all(|w| holder_of(w) == "b-133"),
        "the coordinator never moved the holder: {:?}",
        writes.iter().map(holder_of).collect::<Vec<_>>()
    );
}

/// The holder stops renewing (and answering pings): once its Lease has
/// expired, the coordinator gives it to the best candidate that acks.
#[tokio::test]
async fn a_holder_that_stops_renewing_is_replaced_after_expiry_by_the_best_acked() {
    let t = timings();
    let cluster = Cluster::start(t).await;
    cluster
        .candidate("a-132", "1.32.0", "1.34.0", Duration::ZERO)
        .await;
    let a_acks = cluster.acker("a-132");
    cluster.held_by("a-132").await;
    let a_renews = cluster.renewer("a-132", t.lease_duration_seconds());
    cluster
        .candidate("c-134", "1.34.0", "1.34.0", Duration::ZERO)
        .await;
    cluster
        .candidate("b-133", "1.33.0", "1.34.0", Duration::ZERO)
        .await;
    let _others = [cluster.acker("b-133"), cluster.acker("c-134")];

    // a crashes: no more renewals, no more acks.
    drop((a_acks, a_renews));
    let last = cluster.lease().expect("the Lease");
    let lease = cluster.held_by("b-133").await;
    assert_eq!(
        lease["spec"]["leaseDurationSeconds"],
        t.lease_duration_seconds()
    );
    assert!(lease["spec"].get("acquireTime").is_none());
    assert!(lease["spec"].get("preferredHolder").is_none());

    // Not before the expiry: the takeover was written after the last renewal
    // a made plus the duration (a renewal that raced the crash only moves the
    // expiry later, which the check below reads from the takeover itself).
    let takeover = cluster
        .coordinator_writes(Resource::Lease)
        .into_iter()
        .find(|w| holder_of(w) == "b-133")
        .expect("the coordinator's takeover");
    let before = cluster
        .emu
        .committed_writes()
        .into_iter()
        .rev()
        .find(|w| w.resource == Resource::Lease && w.version() < takeover.version())
        .and_then(|w| w.object)
        .unwrap_or(last);
    assert_eq!(before["spec"]["holderIdentity"], "a-132");
    let seconds = before["spec"]["leaseDurationSeconds"]
        .as_u64()
        .expect("duration");
    let expiry = micro_time(&before, "renewTime") + Duration::from_secs(seconds);
    assert!(
        takeover.at >= expiry,
        "taken over {:?} before the Lease expired",
        expiry.duration_since(takeover.at).unwrap_or_default()
    );
}

/// A candidate that never acks its ping is not elected, though it is the
/// best by version: the coordinator waits out its ping, once, then elects
/// the best of those that acked.
#[tokio::test]
async fn a_candidate_that_never_acks_is_not_elected() {
    let t = timings();
    let cluster = Cluster::start(t).await;
    let stale = Duration::from_secs(60);
    cluster.candidate("a-132", "1.32.0", "1.34.0", stale).await;
    cluster.candidate("b-133", "1.33.0", "1.34.0", stale).await;
    let _b = cluster.acker("b-133");

    let lease = cluster.held_by("b-133").await;
    let silent = cluster
        .emu
        .object(Resource::LeaseCandidate, NS, "a-132")
        .expect("a-132");
    let pinged = micro_time(&silent, "pingTime");
    let created = &cluster.coordinator_writes(Resource::Lease)[0];
    assert_eq!(holder_of(created), "b-133");
    assert!(
        created.at >= pinged + t.election_duration(),
        "elected before a-132's ping timed out"
    );
    assert_eq!(
        lease["spec"]["strategy"], "OldestEmulationVersion",
        "the strategy of the acked candidates"
    );
    let pings_of_a = cluster
        .coordinator_writes(Resource::LeaseCandidate)
        .iter()
        .filter(|w| w.name == "a-132")
        .count();
    assert_eq!(pings_of_a, 1, "an unanswered ping is not repeated");
}

/// The holder releases the Lease (empties `holderIdentity`) and withdraws its
/// candidate: the coordinator reacts to the change and gives the Lease to the
/// next candidate within a ping and an ack, not at its next periodic look
/// (a minute away here).
#[tokio::test]
async fn a_released_lease_is_reassigned_within_a_ping_and_an_ack() {
    let t = timings().with_requeue_interval(Duration::from_secs(60));
    let cluster = Cluster::start(t).await;
    cluster
        .candidate("a-132", "1.32.0", "1.34.0", Duration::ZERO)
        .await;
    let a_acks = cluster.acker("a-132");
    cluster.held_by("a-132").await;
    // Ten-second Leases: no expiry during the test, only the release counts.
    let a_renews = cluster.renewer("a-132", 10);
    cluster
        .candidate("b-133", "1.33.0", "1.34.0", Duration::ZERO)
        .await;
    let _b = cluster.acker("b-133");

    drop((a_acks, a_renews));
    cluster
        .candidates
        .delete("a-132", &DeleteParams::default())
        .await
        .expect("withdraw a-132");
    // A renewal a sent just before it stopped may still land: read again
    // and retry on a conflict, as a releasing client does.
    let released = loop {
        let mut lease = cluster.leases.get(LEASE).await.expect("the Lease");
        let spec = lease.spec.get_or_insert_default();
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(10);
        let at = Instant::now();
        match cluster
            .leases
            .replace(LEASE, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => break at,
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => panic!("release: {e}"),
        }
    };

    let lease = cluster.held_by("b-133").await;
    let took = released.elapsed();
    // A ping and an ack over HTTP take milliseconds, and the ping window is
    // one second; five seconds is a wide margin on a loaded machine and still
    // far from the one-minute requeue.
    assert!(took < Duration::from_secs(5), "reassigned after {took:?}");
    assert!(lease["spec"].get("preferredHolder").is_none());
    assert_eq!(
        lease["spec"]["leaseDurationSeconds"],
        t.lease_duration_seconds()
    );
}

/// The binary runs the coordinator when told to, on scaled timings.
#[tokio::test]
async fn the_binary_elects_with_coordinated_leader_election_on() {
    let binary = Binary::start_with(
        "coordinated",
        &[
            "--coordinated-leader-election",
            "--coordinator-scale",
            "0.2",
        ],
    )
    .await;
    assert!(
        binary.lines[2].contains("kubectl get leases,leasecandidates -A"),
        "{}",
        binary.lines[2]
    );
    let kubeconfig = kube::config::Kubeconfig::read_from(&binary.kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    let client = kube::Client::try_from(config).expect("client");
    let candidates: Api<LeaseCandidate> = Api::namespaced(client.clone(), NS);
    let c = lease_candidate("only", LEASE, "1.34.0", "1.34.0", Timestamp::now());
    candidates
        .create(&PostParams::default(), &c)
        .await
        .expect("create");
    let leases: Api<Lease> = Api::namespaced(client, NS);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let holder = leases
            .get_opt(LEASE)
            .await
            .expect("get")
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity);
        if holder.as_deref() == Some("only") {
            break;
        }
        assert!(Instant::now() < deadline, "not elected: {holder:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
