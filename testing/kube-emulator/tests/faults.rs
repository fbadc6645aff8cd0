//! Per-client faults as the real `kube::Client` sees them, request counting
//! and the write history.

mod common;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, PostParams};
use kube_emulator::{Emulator, Fault, Match, Resource, Verb};

use common::api_status;

fn lease(name: &str, holder: &str) -> Lease {
    let mut l = Lease::default();
    l.metadata.name = Some(name.to_owned());
    l.spec = Some(LeaseSpec {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(15),
        ..LeaseSpec::default()
    });
    l
}

fn holder_of(emu: &Emulator, name: &str) -> String {
    emu.object(Resource::Lease, "default", name)
        .expect("stored")["spec"]["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn setup(token: &str) -> (Emulator, Api<Lease>) {
    let emu = Emulator::start().await.expect("start");
    let api = Api::namespaced(emu.client(token).expect("client"), "default");
    (emu, api)
}

#[tokio::test]
async fn a9_429_with_retry_after_reaches_the_client() {
    let (emu, api) = setup("a").await;
    emu.faults("a").too_many_requests(3);
    let status = api_status(api.get("lock").await.expect_err("throttled"));
    assert_eq!(
        (status.code, status.reason.as_str()),
        (429, "TooManyRequests")
    );
    assert_eq!(status.details.expect("details").retry_after_seconds, 3);

    // The header itself, as a raw request sees it.
    let client = emu.client("a").expect("client");
    let req = hyper::Request::get("/apis/coordination.k8s.io/v1/namespaces/default/leases/lock")
        .body(kube::client::Body::from(Vec::new()))
        .expect("request");
    let resp = client.send(req).await.expect("an HTTP answer");
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(
        resp.headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("3")
    );

    // Another client is not affected; after clear() neither is this one.
    let other: Api<Lease> = Api::namespaced(emu.client("b").expect("client"), "default");
    let status = api_status(
        other
            .get("lock")
            .await
            .expect_err("not found, not throttled"),
    );
    assert_eq!(status.code, 404);
    emu.faults("a").clear();
    assert_eq!(
        api_status(api.get("lock").await.expect_err("not found")).code,
        404
    );
}

#[tokio::test]
async fn a10_500_after_commit_leaves_the_write_applied() {
    let (emu, api) = setup("a").await;
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    emu.faults("a")
        .on(Match::writes())
        .times(1)
        .error_after_commit(500);
    let mut next = created.clone();
    next.spec.as_mut().expect("spec").holder_identity = Some("a-renewed".into());
    let status = api_status(
        api.replace("lock", &PostParams::default(), &next)
            .await
            .expect_err("500"),
    );
    assert_eq!(status.code, 500);
    assert_eq!(
        holder_of(&emu, "lock"),
        "a-renewed",
        "the write committed before the 500"
    );

    let history = emu.write_history();
    let last = history.last().expect("recorded");
    assert_eq!(
        (
            last.verb,
            last.resource,
            last.name.as_str(),
            last.client.as_str()
        ),
        (Verb::Update, Resource::Lease, "lock", "a")
    );
    assert!(last.committed);
    assert_eq!(last.code, 200);
    assert_eq!(
        last.spoiled_by,
        Some(Fault::StatusAfterCommit { code: 500 })
    );
    assert!(last.at >= history[0].at, "server timestamps in order");
    // The retry with the old version now conflicts: the client's view was stale.
    let status = api_status(
        api.replace("lock", &PostParams::default(), &next)
            .await
            .expect_err("stale"),
    );
    assert_eq!(status.code, 409);
}

#[tokio::test]
async fn a14_hung_request_ends_in_a_client_side_timeout() {
    let emu = Emulator::start().await.expect("start");
    let mut config = emu.kube_config("a");
    config.read_timeout = Some(Duration::from_millis(300));
    let api: Api<Lease> =
        Api::namespaced(kube::Client::try_from(config).expect("client"), "default");
    emu.faults("a").on(Match::reads()).times(1).hang();
    let started = tokio::time::Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(3), api.get("lock"))
        .await
        .expect("the client's read timeout fires")
        .expect_err("no answer");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a timeout, not an API answer: {err:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    // The rule was used up: the next request is answered.
    assert_eq!(
        api_status(api.get("lock").await.expect_err("not found")).code,
        404
    );
}

#[tokio::test]
async fn a13_dropped_connection_before_and_after_commit() {
    let (emu, api) = setup("a").await;
    emu.faults("a").times(1).reset();
    let err = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect_err("dropped");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a transport error: {err:?}"
    );
    assert!(
        emu.object(Resource::Lease, "default", "lock").is_none(),
        "dropped before the write"
    );

    emu.faults("a").times(1).inject(Fault::AnswerLost);
    let err = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect_err("dropped");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a transport error: {err:?}"
    );
    assert_eq!(holder_of(&emu, "lock"), "a", "dropped after the write");
    let status = api_status(
        api.create(&PostParams::default(), &lease("lock", "a"))
            .await
            .expect_err("exists"),
    );
    assert_eq!(status.reason, "AlreadyExists");
}

#[tokio::test]
async fn a12_connection_refused_while_not_listening() {
    let (emu, api) = setup("a").await;
    api.create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    emu.stop_listening().await;
    let err = api.get("lock").await.expect_err("refused");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a transport error: {err:?}"
    );
    emu.resume_listening().await.expect("listen again");
    let got = api.get("lock").await.expect("served again");
    assert_eq!(
        got.spec.expect("spec").holder_identity.as_deref(),
        Some("a")
    );
}

#[tokio::test]
async fn a6_forbidden_names_user_verb_and_resource() {
    let (emu, api) = setup("node-a").await;
    emu.faults("node-a")
        .on(Match::verbs(&[Verb::Update]))
        .forbidden();
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create allowed");
    let status = api_status(
        api.replace("lock", &PostParams::default(), &created)
            .await
            .expect_err("403"),
    );
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "leases.coordination.k8s.io \"lock\" is forbidden: User \"node-a\" cannot update resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\""
    );
}

#[tokio::test]
async fn error_codes_503_and_504_and_latency() {
    let (emu, api) = setup("a").await;
    emu.faults("a").times(1).error(503);
    assert_eq!(api_status(api.get("x").await.expect_err("503")).code, 503);
    emu.faults("a").times(1).error(504);
    assert_eq!(api_status(api.get("x").await.expect_err("504")).code, 504);

    emu.faults("a").latency(Duration::from_millis(150));
    let started = tokio::time::Instant::now();
    assert_eq!(api_status(api.get("x").await.expect_err("404")).code, 404);
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "latency applied"
    );

    // A16: the answer is held after the write committed.
    emu.faults("a").clear();
    emu.faults("a")
        .on(Match::writes())
        .times(1)
        .inject(Fault::DelayAfterCommit(Duration::from_millis(300)));
    let pending = tokio::spawn({
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &lease("lock", "a"))
                .await
        }
    });
    let committed = tokio::time::timeout(Duration::from_millis(250), async {
        while emu.object(Resource::Lease, "default", "lock").is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        committed.is_ok(),
        "the write is visible before its answer arrives"
    );
    assert!(!pending.is_finished(), "the answer is still held");
    pending.await.expect("joined").expect("created in the end");
}

#[tokio::test]
async fn faults_for_all_clients_and_match_by_name() {
    let emu = Emulator::start().await.expect("start");
    let a: Api<Lease> = Api::namespaced(emu.client("a").expect("client"), "default");
    let b: Api<Lease> = Api::namespaced(emu.client("b").expect("client"), "default");
    emu.faults_for_all()
        .on(Match::any().name("locked"))
        .error(503);
    assert_eq!(
        api_status(a.get("locked").await.expect_err("503")).code,
        503
    );
    assert_eq!(
        api_status(b.get("locked").await.expect_err("503")).code,
        503
    );
    assert_eq!(api_status(b.get("other").await.expect_err("404")).code, 404);
    emu.faults_for_all().clear();
    assert_eq!(
        api_status(a.get("locked").await.expect_err("404")).code,
        404
    );
}

#[tokio::test]
async fn requests_are_counted_per_client_verb_and_resource() {
    let emu = Emulator::start().await.expect("start");
    let a: Api<Lease> = Api::namespaced(emu.client("a").expect("client"), "default");
    let b: Api<Lease> = Api::namespaced(emu.client("b").expect("client"), "default");
    let created = a
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    for _ in 0..3 {
        a.get("lock").await.expect("get");
    }
    b.get("lock").await.expect("get");
    let mut by_b = created.clone();
    by_b.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    b.replace("lock", &PostParams::default(), &by_b)
        .await
        .expect("update");
    let _ = a
        .replace("lock", &PostParams::default(), &created)
        .await
        .expect_err("stale");
    let counts = emu.request_counts();
    assert_eq!(counts.get("a", Verb::Create, Resource::Lease), 1);
    assert_eq!(counts.get("a", Verb::Get, Resource::Lease), 3);
    assert_eq!(
        counts.get("a", Verb::Update, Resource::Lease),
        1,
        "failed requests count too"
    );
    assert_eq!(counts.get("b", Verb::Get, Resource::Lease), 1);
    assert_eq!(counts.get("b", Verb::Update, Resource::Lease), 1);
    assert_eq!(counts.client_total("a"), 5);
    assert_eq!(counts.client_writes("b"), 1);
    assert_eq!(counts.total(), 7);
    let writes = emu.write_history();
    assert_eq!(writes.len(), 3);
    assert_eq!(
        writes.iter().filter(|w| w.committed).count(),
        2,
        "the stale update did not commit"
    );
    emu.reset_request_counts();
    assert_eq!(emu.request_counts().total(), 0);
}

#[tokio::test]
async fn w3_stale_read_serves_the_version_before_the_latest_write() {
    let (emu, api) = setup("a").await;
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    emu.faults("a").times(1).inject(Fault::StaleRead);
    let status = api_status(
        api.get("lock")
            .await
            .expect_err("the cache has not seen the create"),
    );
    assert_eq!(status.code, 404);
    let mut next = created.clone();
    next.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    let updated = api
        .replace("lock", &PostParams::default(), &next)
        .await
        .expect("update");
    emu.faults("a").times(1).inject(Fault::StaleRead);
    let stale = api.get("lock").await.expect("stale get");
    assert_eq!(
        stale.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(
        stale
            .spec
            .as_ref()
            .expect("spec")
            .holder_identity
            .as_deref(),
        Some("a")
    );
    // A write from the stale copy is refused: compare-and-swap on the version.
    let status = api_status(
        api.replace("lock", &PostParams::default(), &stale)
            .await
            .expect_err("stale write"),
    );
    assert_eq!(status.code, 409);
    // The rule was used up: reads are fresh again.
    assert_eq!(
        api.get("lock")
            .await
            .expect("fresh")
            .metadata
            .resource_version,
        updated.metadata.resource_version
    );
}

/// `committed_writes` is the commit order, deletions in their place: a
/// deletion records the version it committed (its answer, a `Status`, carries
/// none), so a Lease created, updated, deleted and created again reads back in
/// that order, with growing versions.
#[tokio::test]
async fn committed_writes_keep_deletions_in_commit_order() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("a").expect("client"), "default");
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    let mut next = created.clone();
    next.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    api.replace("lock", &PostParams::default(), &next)
        .await
        .expect("update");
    api.delete("lock", &kube::api::DeleteParams::default())
        .await
        .expect("delete");
    api.create(&PostParams::default(), &lease("lock", "c"))
        .await
        .expect("create again");

    let writes = emu.committed_writes();
    let verbs: Vec<Verb> = writes.iter().map(|w| w.verb).collect();
    assert_eq!(
        verbs,
        [Verb::Create, Verb::Update, Verb::Delete, Verb::Create]
    );
    let versions: Vec<u64> = writes
        .iter()
        .map(|w| w.version().expect("every committed write has a version"))
        .collect();
    assert!(
        versions.windows(2).all(|v| v[0] < v[1]),
        "versions grow in commit order: {versions:?}"
    );
}
