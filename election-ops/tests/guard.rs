//! The write guard on a real `kube::Client` against the API emulator: a
//! non-leader's writes never reach the server, a leader's pass, the guard closes by
//! the deadline after a partition (docs/faults.md N7) and after `StoppedLeading`.

mod common;

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use common::{candidate, wait_until, write};
use election_ops::LeadershipView;
use election_ops::guard::{WriteGuardLayer, not_leader};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube_emulator::{Emulator, Resource, Verb};

const MARGIN: Duration = Duration::from_millis(300);

fn guarded<V: LeadershipView + Clone>(emu: &Emulator, token: &str, view: V) -> kube::Client {
    let layer = WriteGuardLayer::new(view).margin(MARGIN).term_header(true);
    kube::client::ClientBuilder::try_from(emu.kube_config(token))
        .expect("config")
        .with_layer(&layer)
        .build()
}

fn refused(err: &kube::Error) -> bool {
    not_leader(err).is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_leader_writes_never_reach_the_server_and_leader_writes_pass() {
    let emu = Emulator::start().await.expect("emulator");
    let (a, _) = candidate(&emu, "node-a");
    let (b, _) = candidate(&emu, "node-b");
    assert!(
        wait_until(Duration::from_secs(10), || a.is_leader() || b.is_leader()).await,
        "someone leads"
    );
    let (leader, follower) = if a.is_leader() { (a, b) } else { (b, a) };
    let lead_client = guarded(&emu, "app-leader", Arc::clone(&leader));
    let follow_client = guarded(&emu, "app-follower", Arc::clone(&follower));

    for i in 0..5 {
        let err = write(&follow_client, &format!("f-{i}"))
            .await
            .expect_err("refused");
        assert!(refused(&err), "typed NotLeader, got {err:?}");
    }
    assert_eq!(
        emu.request_counts().client_writes("app-follower"),
        0,
        "nothing sent"
    );
    // Reads always pass, also for the follower.
    let api: Api<ConfigMap> = Api::namespaced(follow_client.clone(), "default");
    api.list(&Default::default()).await.expect("list passes");
    assert_eq!(
        emu.request_counts()
            .get("app-follower", Verb::List, Resource::ConfigMap),
        1
    );

    write(&lead_client, "from-leader")
        .await
        .expect("leader's write passes");
    assert_eq!(emu.request_counts().client_writes("app-leader"), 1);
    assert!(
        emu.object(Resource::ConfigMap, "default", "from-leader")
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n7_guard_closes_by_the_deadline_after_a_partition() {
    let emu = Emulator::start().await.expect("emulator");
    let (a, _) = candidate(&emu, "node-a");
    assert!(wait_until(Duration::from_secs(10), || a.is_leader()).await);
    let client = guarded(&emu, "app-a", Arc::clone(&a));
    write(&client, "before").await.expect("leading: passes");

    // Partition the leader's lock calls from the API (they hang); the app's own
    // connection stays up, so only the guard can stop its writes.
    emu.faults("node-a").hang();
    // A renew already answered may still move the deadline; none sent from now on.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let deadline = a.deadline().expect("leading");
    let mut i = 0;
    loop {
        let sent_at = a.now();
        match write(&client, &format!("during-{i}")).await {
            Ok(_) => assert!(
                sent_at.saturating_add(MARGIN) < deadline,
                "a write passed at {sent_at:?} within the margin of the deadline {deadline:?}"
            ),
            Err(e) => {
                assert!(refused(&e), "{e:?}");
                break;
            }
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(a.now() <= deadline, "closed by the deadline, not after it");
    let sent = emu.request_counts().client_writes("app-a");
    // Past the deadline every write is refused locally.
    assert!(wait_until(Duration::from_secs(3), || a.now() > deadline).await);
    for j in 0..3 {
        let e = write(&client, &format!("after-{j}"))
            .await
            .expect_err("refused");
        assert!(refused(&e));
    }
    assert_eq!(
        emu.request_counts().client_writes("app-a"),
        sent,
        "none sent"
    );
    emu.faults("node-a").clear();
}

/// Stamps (wall clock) each write that reaches it: put inside the guard, it sees
/// the writes the guard let through, as they leave for the server.
#[derive(Clone)]
struct Stamp<S> {
    inner: S,
    passed: Arc<Mutex<Vec<SystemTime>>>,
}

impl<S, B> tower::Service<hyper::Request<B>> for Stamp<S>
where
    S: tower::Service<hyper::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }
    fn call(&mut self, req: hyper::Request<B>) -> Self::Future {
        if req.method() != hyper::Method::GET {
            self.passed.lock().unwrap().push(SystemTime::now());
        }
        self.inner.call(req)
    }
}

/// Pinniped's ordering, checked on the server's write history: every write the
/// guard let through left before the lease's release reached the server, and no
/// write reached the server that the guard had not let through. The writer goes
/// on (20 refusals) after the step-down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_guarded_write_is_sent_after_stopped_leading() {
    let emu = Emulator::start().await.expect("emulator");
    let (a, _) = candidate(&emu, "node-a");
    assert!(wait_until(Duration::from_secs(10), || a.is_leader()).await);
    let passed = Arc::new(Mutex::new(Vec::new()));
    let stamp = {
        let passed = Arc::clone(&passed);
        tower::layer::layer_fn(move |inner| Stamp {
            inner,
            passed: Arc::clone(&passed),
        })
    };
    let client = kube::client::ClientBuilder::try_from(emu.kube_config("app-a"))
        .expect("config")
        .with_layer(&stamp)
        .with_layer(&WriteGuardLayer::new(Arc::clone(&a)).margin(MARGIN))
        .build();

    // A controller on this replica writes continuously.
    let writer = tokio::spawn(async move {
        let mut refusals = 0;
        let mut ok = 0;
        for i in 0..10_000 {
            match write(&client, &format!("w-{i}")).await {
                Ok(_) => ok += 1,
                Err(e) if refused(&e) => {
                    refusals += 1;
                    if refusals > 20 {
                        break;
                    }
                }
                Err(e) => panic!("unexpected {e:?}"),
            }
            tokio::task::yield_now().await;
        }
        (ok, refusals)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.step_down().await;
    let (ok, refusals) = writer.await.expect("writer");
    assert!(ok > 0, "writes passed while leading");
    assert!(refusals > 20, "the writer went on after the step-down");

    let history = emu.write_history();
    let release = history
        .iter()
        .find(|w| {
            w.client == "node-a"
                && w.resource == Resource::Lease
                && w.verb == Verb::Update
                && w.committed
                && w.object.as_ref().is_some_and(|o| {
                    o["spec"]["holderIdentity"]
                        .as_str()
                        .unwrap_or("")
                        .is_empty()
                })
        })
        .expect("the release is in the server's write history");
    let app: Vec<_> = history.iter().filter(|w| w.client == "app-a").collect();
    let passed = passed.lock().unwrap().clone();
    assert_eq!(
        app.len(),
        ok,
        "every write the server saw from the app succeeded"
    );
    assert_eq!(
        passed.len(),
        ok,
        "the guard let through exactly the writes that reached the server"
    );
    let last_passed = *passed.iter().max().expect("non-empty");
    assert!(
        last_passed < release.at,
        "a write left the guard at {last_passed:?}, after the release reached the server at {:?}",
        release.at
    );
}

/// `TermAnnotationLayer` outside the guard: the leader's creates, replaces and merge
/// patches reach the server with the term in the object's annotations (the server
/// stores it, with the holder). (Every other verb, JSON patches and deletes
/// included: `n17_every_write_verb_is_stamped_with_the_term_and_a_token_of_its_own`
/// in `fake_view.rs`, and the fence's tests in `fence_writes.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaders_writes_carry_its_term_as_an_annotation() {
    use election_ops::guard::{HOLDER_ANNOTATION, TERM_ANNOTATION, TermAnnotationLayer};
    use kube::api::{Patch, PatchParams, PostParams};

    let emu = Emulator::start().await.expect("emulator");
    let (a, _) = candidate(&emu, "node-a");
    assert!(wait_until(Duration::from_secs(10), || a.is_leader()).await);
    let term = a.term().expect("leading").to_string();
    let client = kube::client::ClientBuilder::try_from(emu.kube_config("app-a"))
        .expect("config")
        .with_layer(&WriteGuardLayer::new(Arc::clone(&a)).margin(MARGIN))
        .with_layer(&TermAnnotationLayer::new(Arc::clone(&a)))
        .build();
    let stored = |name: &str| {
        emu.object(Resource::ConfigMap, "default", name)
            .expect("stored")["metadata"]["annotations"][TERM_ANNOTATION]
            .clone()
    };
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    let created = write_with(&api, "annotated").await;
    assert_eq!(stored("annotated"), term.as_str(), "create");
    let holder = &emu
        .object(Resource::ConfigMap, "default", "annotated")
        .expect("stored")["metadata"]["annotations"][HOLDER_ANNOTATION];
    assert_eq!(holder, "node-a", "the holder it was written for");

    // A replace of an object whose annotation a human removed puts it back.
    let mut cm = created;
    cm.metadata.annotations = None;
    cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    api.replace("annotated", &PostParams::default(), &cm)
        .await
        .expect("replace passes");
    assert_eq!(stored("annotated"), term.as_str(), "replace");

    api.patch(
        "annotated",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"annotations": {TERM_ANNOTATION: null}}, "data": {"m": "1"}})),
    )
    .await
    .expect("merge patch passes");
    assert_eq!(
        stored("annotated"),
        term.as_str(),
        "merge patch: the layer's value wins"
    );

    async fn write_with(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.to_owned());
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create passes")
    }
}
