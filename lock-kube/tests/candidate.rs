//! `lock_kube::candidate::LeaseCandidate` against the API emulator with the
//! real `kube` client: published with its spec, acknowledged at once when the
//! coordinator pings (here the test pings, as the coordinator does), renewed
//! with a new version by a restarted process (client-go keeps the old one), and
//! deleted on stop. Bad versions and strategies are refused before any call.

use std::time::Duration;

use futures::channel::oneshot;
use k8s_openapi::api::coordination::v1beta1::LeaseCandidate as Object;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use kube_emulator::Emulator;
use lock_kube::candidate::{CandidateError, LeaseCandidate, OLDEST_EMULATION_VERSION};

const NS: &str = "default";

/// Polls `check` every 10 ms until it holds, for at most `within`.
async fn eventually(within: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Runs the candidacy `c` until the returned sender fires; the receiver tells
/// when it ended (its object deleted).
fn spawn(c: LeaseCandidate) -> (oneshot::Sender<()>, oneshot::Receiver<()>) {
    let (stop, stop_rx) = oneshot::channel::<()>();
    let (done, ended) = oneshot::channel::<()>();
    tokio::spawn(async move {
        c.run(async {
            let _ = stop_rx.await;
        })
        .await;
        let _ = done.send(());
    });
    (stop, ended)
}

fn candidate(emu: &Emulator, id: &str, version: &str) -> LeaseCandidate {
    let client = lock_kube::lock_client(emu.kube_config(id)).expect("client");
    LeaseCandidate::builder(client, NS, id, "my-lease")
        .binary_version(version)
        .emulation_version("1.33.0")
        .request_timeout(Duration::from_secs(1))
        .build()
        .expect("a valid candidacy")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c6_a_candidacy_is_published_acked_on_ping_and_deleted_on_stop() {
    let emu = Emulator::start_blocking().expect("emulator");
    let admin: Api<Object> = Api::namespaced(emu.client("admin").expect("client"), NS);
    let (stop, ended) = spawn(candidate(&emu, "node-a", "1.34.2"));
    assert!(
        eventually(Duration::from_secs(5), async || admin
            .get_opt("node-a")
            .await
            .ok()
            .flatten()
            .is_some())
        .await,
        "published"
    );
    let obj = admin.get("node-a").await.expect("read");
    let spec = &obj.spec;
    assert_eq!(spec.lease_name, "my-lease");
    assert_eq!(spec.binary_version, "1.34.2");
    assert_eq!(spec.emulation_version.as_deref(), Some("1.33.0"));
    assert_eq!(spec.strategy, OLDEST_EMULATION_VERSION);
    let renewed = spec.renew_time.clone().expect("renewTime set").0;
    // The coordinator's ping: pingTime after renewTime.
    let mut pinged = obj.clone();
    let ping = renewed + jiff::SignedDuration::from_millis(1);
    pinged.spec.ping_time = Some(MicroTime(ping));
    admin
        .replace("node-a", &PostParams::default(), &pinged)
        .await
        .expect("ping");
    let acked = eventually(Duration::from_secs(2), async || {
        let o = admin.get("node-a").await.expect("read");
        o.spec.renew_time.is_some_and(|r| r.0 > ping)
    })
    .await;
    assert!(acked, "the ping was acknowledged within 2 s");
    stop.send(()).expect("running");
    tokio::time::timeout(Duration::from_secs(5), ended)
        .await
        .expect("ended")
        .expect("ended");
    assert!(
        admin.get_opt("node-a").await.expect("read").is_none(),
        "deleted on stop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c6_a_restarted_candidate_publishes_its_new_version() {
    let emu = Emulator::start_blocking().expect("emulator");
    let admin: Api<Object> = Api::namespaced(emu.client("admin").expect("client"), NS);
    // What a process that crashed at 1.34.0 left behind (no delete on a crash).
    let mut left = Object::default();
    left.metadata.name = Some("node-b".into());
    left.spec.lease_name = "my-lease".into();
    left.spec.binary_version = "1.34.0".into();
    left.spec.emulation_version = Some("1.33.0".into());
    left.spec.strategy = OLDEST_EMULATION_VERSION.into();
    admin
        .create(&PostParams::default(), &left)
        .await
        .expect("left behind");
    // Restarted at 1.35.0 with the same identity (a StatefulSet's Pod).
    let (stop, ended) = spawn(candidate(&emu, "node-b", "1.35.0"));
    let updated = eventually(Duration::from_secs(5), async || {
        admin
            .get("node-b")
            .await
            .is_ok_and(|o| o.spec.binary_version == "1.35.0" && o.spec.renew_time.is_some())
    })
    .await;
    assert!(updated, "the new version replaced the old one");
    stop.send(()).expect("running");
    let _ = ended.await;
}

#[test]
fn c6_bad_versions_and_strategies_are_refused_before_any_call() {
    let emu = Emulator::start_blocking().expect("emulator");
    let client = || lock_kube::lock_client(emu.kube_config("x")).expect("client");
    let build = |binary: &str, emulation: Option<&str>, strategy: &str| {
        let mut b = LeaseCandidate::builder(client(), NS, "node-a", "my-lease")
            .binary_version(binary)
            .strategy(strategy);
        if let Some(e) = emulation {
            b = b.emulation_version(e);
        }
        b.build().map(|_| ())
    };
    assert_eq!(
        build("v1.2.3", None, OLDEST_EMULATION_VERSION),
        Err(CandidateError::Version {
            field: "binaryVersion",
            value: "v1.2.3".into()
        })
    );
    assert!(matches!(
        build("1.2.3", Some("1.3"), OLDEST_EMULATION_VERSION),
        Err(CandidateError::Version {
            field: "emulationVersion",
            ..
        })
    ));
    assert!(matches!(
        build("1.2.3", Some("1.3.0"), OLDEST_EMULATION_VERSION),
        Err(CandidateError::EmulationAboveBinary { .. })
    ));
    assert_eq!(
        build("1.2.3", None, "Newest"),
        Err(CandidateError::Strategy("Newest".into()))
    );
    assert_eq!(build("1.2.3", None, "example.com/mine"), Ok(()));
    let bad_name = LeaseCandidate::builder(client(), NS, "Node_A", "my-lease").build();
    assert!(
        matches!(bad_name, Err(CandidateError::Name(_))),
        "{bad_name:?}"
    );
}
