//! docs/faults.md N20: a live leader's finalizers under the server-side fence.
//! kube-runtime's `finalizer()` adds and removes finalizers with JSON patches;
//! the term client (`election_ops::client::guarded_client` with the stamp, as
//! `TermContext::client` is built) stamps them, so after a graceful handover the
//! new leader adds and removes a finalizer on an object the old leader created
//! (it used to be refused: the object kept the old term's stamp), while the
//! same patch sent unstamped by the deposed leader's Pod is refused (the
//! default fence: the writer check, a stamp fixed for the term).

use std::sync::Arc;
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use election_ops::client::guarded_client;
use election_ops::fence::{FencePolicy, HOLDER_ANNOTATION, Protected};
use election_ops::guard::WriteGuardLayer;
use election_ops::stamp::TermAnnotationLayer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_emulator::{Emulator, UserInfo};
use lock_lease::LeaseLock;

const LEASE: &str = "finalizing";
const FINALIZER: &str = "example.com/cleanup";

fn candidate(emu: &Emulator, id: &str) -> Arc<Handle> {
    let client = lock_kube::lock_client(emu.kube_config(id)).expect("client");
    let lock = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("valid names");
    Arc::new(
        Builder::new(lock, Config::fast(id).seed(id.len() as u64))
            .spawn(TokioRuntime::current().expect("inside tokio"))
            .expect("valid config"),
    )
}

/// The term client of `handle`, as `TermContext::client` is built.
fn term_client(emu: &Emulator, handle: &Arc<Handle>, token: &str) -> Api<ConfigMap> {
    let guard = WriteGuardLayer::new(Arc::clone(handle)).margin(Duration::from_millis(500));
    let stamp = TermAnnotationLayer::new(Arc::clone(handle));
    let client = guarded_client(emu.kube_config(token), &guard, Some(&stamp)).expect("client");
    Api::namespaced(client, "default")
}

async fn until(what: &str, ok: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !ok() {
        assert!(start.elapsed() < Duration::from_secs(10), "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// kube-runtime's patch that removes the finalizer at `index` (the shape its
/// `finalizer()` sends once an object is deleting, which the emulator does not
/// model: it deletes at once).
fn removal(index: usize) -> Patch<()> {
    let path = format!("/metadata/finalizers/{index}");
    Patch::Json(
        serde_json::from_value(serde_json::json!([
            {"op": "test", "path": path, "value": FINALIZER},
            {"op": "remove", "path": path}
        ]))
        .expect("a JSON patch"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n20_a_new_leaders_finalizers_pass_the_fence_on_an_object_the_old_one_wrote() {
    let emu = Emulator::start().await.expect("emulator");
    // Each replica's application writes from its Pod, named as its identity.
    for (token, pod) in [("app-a", "a"), ("app-b", "b")] {
        emu.set_user(token, UserInfo::pod("default", "app", pod));
    }
    let fence = FencePolicy::new("default", LEASE).protect(Protected::new("", "v1", "configmaps"));
    fence
        .apply(emu.client("admin").expect("client"))
        .await
        .expect("policy and binding");

    let a = candidate(&emu, "a");
    until("a leads", || a.term().is_some()).await;
    let b = candidate(&emu, "b");
    let mut obj = ConfigMap::default();
    obj.metadata.name = Some("work".into());
    term_client(&emu, &a, "app-a")
        .create(&PostParams::default(), &obj)
        .await
        .expect("a's create passes the fence");
    a.shutdown().await;
    until("b leads", || b.term().is_some()).await;

    let api = term_client(&emu, &b, "app-b");
    let stored = Arc::new(api.get("work").await.expect("read"));
    kube_runtime::finalizer(&api, FINALIZER, stored, |_| async {
        Ok::<_, std::io::Error>(kube_runtime::controller::Action::await_change())
    })
    .await
    .expect("b's finalizer() adds its finalizer through the fence");
    let stored = api.get("work").await.expect("read");
    assert_eq!(stored.metadata.finalizers, Some(vec![FINALIZER.to_owned()]));
    let annotations = stored.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get(HOLDER_ANNOTATION).map(String::as_str),
        Some("b")
    );

    // The same removal by the deposed leader's Pod, unstamped (around the
    // stamp layer): refused.
    let plain: Api<ConfigMap> = Api::namespaced(emu.client("app-a").expect("client"), "default");
    let refused = plain
        .patch("work", &PatchParams::default(), &removal(0))
        .await
        .expect_err("an unstamped patch by the deposed Pod is refused");
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 403 && s.message.contains("not the holder Pod")),
        "{refused:?}"
    );
    api.patch("work", &PatchParams::default(), &removal(0))
        .await
        .expect("b removes its finalizer through the fence");
    let stored = api.get("work").await.expect("read");
    assert!(stored.metadata.finalizers.unwrap_or_default().is_empty());
    b.shutdown().await;
}

/// N20 and H11 on kube-apiserver, under the default fence (the writer check,
/// a stamp fixed for the term): the live leader's Pod creates an object, adds
/// its finalizer with kube-runtime's `finalizer()`, deletes it through the
/// stamp layer (the stamp, then the delete: the object stays, terminating, as
/// kube-apiserver keeps it for its finalizer), and `finalizer()`'s cleanup
/// removes the finalizer, after which the object is gone; a deposed replica's
/// Pod's removal of the finalizer, unstamped, is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn n20_a_live_leaders_finalizer_and_delete_pass_the_default_fence_on_kube_apiserver() {
    use kube_runtime::finalizer::Event;
    use test_kit::apiserver::{ADMIN, ApiServer, Server};

    let server = ApiServer::shared();
    let ns = server.namespace();
    let rules = [serde_json::json!({
        "apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    })];
    test_kit::rbac::grant(server, &ns, "app", &rules).await;
    let (leader, deposed) = (
        server.pod_config(&ns, "app", "app-0"),
        server.pod_config(&ns, "app", "app-1"),
    );
    server.wait_allowed(&leader, &ns, "patch", "", "configmaps");
    let lease = format!("finalizing-{ns}");
    FencePolicy::new(&ns, &lease)
        .protect(Protected::new("", "v1", "configmaps"))
        .apply(server.client(ADMIN))
        .await
        .expect("the default fence");
    test_kit::admission::until_configmaps_fenced(server.client(ADMIN), &ns).await;

    let lock = LeaseLock::builder(
        lock_kube::lock_client(server.kube_config(ADMIN)).expect("client"),
        &ns,
        &lease,
    )
    .build()
    .expect("valid names");
    let handle = Arc::new(
        Builder::new(lock, Config::fast("app-0"))
            .spawn(TokioRuntime::current().expect("inside tokio"))
            .expect("valid config"),
    );
    until("app-0 leads", || handle.term().is_some()).await;
    let guard = WriteGuardLayer::new(Arc::clone(&handle)).margin(Duration::from_millis(500));
    let stamp = TermAnnotationLayer::new(Arc::clone(&handle));
    let api: Api<ConfigMap> = Api::namespaced(
        guarded_client(leader, &guard, Some(&stamp)).expect("client"),
        &ns,
    );
    let mut obj = ConfigMap::default();
    obj.metadata.name = Some("work".into());
    api.create(&PostParams::default(), &obj)
        .await
        .expect("the leader creates");
    let reconcile = |api: Api<ConfigMap>| async move {
        let stored = Arc::new(api.get("work").await.expect("read"));
        kube_runtime::finalizer(&api, FINALIZER, stored, |event| async move {
            match event {
                Event::Apply(_) | Event::Cleanup(_) => {
                    Ok::<_, std::io::Error>(kube_runtime::controller::Action::await_change())
                }
            }
        })
        .await
    };
    reconcile(api.clone())
        .await
        .expect("finalizer() adds the finalizer through the fence");
    let stored = api.get("work").await.expect("read");
    assert_eq!(stored.metadata.finalizers, Some(vec![FINALIZER.to_owned()]));
    let version = stored.metadata.resource_version.clone();
    reconcile(api.clone())
        .await
        .expect("a second reconcile, the finalizer in place");
    assert_eq!(
        api.get("work")
            .await
            .expect("read")
            .metadata
            .resource_version,
        version,
        "a reconcile that changes nothing writes nothing"
    );

    api.delete("work", &kube::api::DeleteParams::default())
        .await
        .expect("the leader's delete, stamped first, passes");
    let terminating = api.get("work").await.expect("kept for its finalizer");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let plain: Api<ConfigMap> =
        Api::namespaced(kube::Client::try_from(deposed).expect("client"), &ns);
    let refused = plain
        .patch("work", &PatchParams::default(), &removal(0))
        .await
        .expect_err("another Pod's removal is refused");
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 403 && s.message.contains("not the holder Pod")),
        "{refused:?}"
    );
    reconcile(api.clone())
        .await
        .expect("finalizer()'s cleanup removes the finalizer through the fence");
    assert!(
        api.get_opt("work").await.expect("read").is_none(),
        "gone once its finalizer is removed"
    );
    handle.shutdown().await;
}
