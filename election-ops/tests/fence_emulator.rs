//! The fencing policy enforced: the emulator evaluates the generated
//! ValidatingAdmissionPolicy on every write, as the API server does, and the real
//! `kube` client sees the API server's refusal. The cases in `fence_cases` run
//! on kube-apiserver too (`fence_apiserver.rs`).

mod common;
mod fence_cases;

use std::sync::Arc;
use std::time::Duration;

use common::{LEASE, candidate, fenced, hold, refusal, wait_until};
use election_ops::LeadershipView;
use election_ops::fence::{FencePolicy, Protected, Writer};
use election_ops::guard::TermAnnotationLayer;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube_emulator::{Emulator, Resource, UserInfo};

fn policy() -> FencePolicy {
    FencePolicy::new("default", "orders").protect(Protected::new("", "v1", "configmaps"))
}

/// A ConfigMap `name` created as `token`, stamped by hand for `holder` at `term`
/// with a token of its own (no stamp when `None`).
async fn write(
    emu: &Emulator,
    token: &str,
    name: &str,
    stamp: Option<(&str, &str)>,
) -> Result<ConfigMap, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(emu.client(token).unwrap(), "default");
    api.create(
        &PostParams::default(),
        &common::stamped_configmap(name, stamp),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_refuses_writes_not_stamped_with_the_current_term() {
    let emu = Emulator::start().await.expect("emulator");
    fence_cases::writes_not_stamped_with_the_current_term_are_refused(
        &emu,
        fence_cases::configmaps,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_check_admits_the_holders_pod_only_and_fences_deletes() {
    let emu = Emulator::start().await.expect("emulator");
    fence_cases::the_writer_check_admits_the_holders_pod_only(&emu, |ns, lease| {
        fence_cases::configmaps(ns, lease).writer(Writer::PodName)
    })
    .await;
}

/// H11 (the emulator does not serve server-side apply: 415).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h11_a_write_of_what_is_stored_changes_nothing_under_the_default_fence() {
    let emu = Emulator::start().await.expect("emulator");
    fence_cases::a_write_of_what_is_stored_changes_nothing_under_the_default_fence(&emu, false)
        .await;
}

/// A leader whose process stops (its lock calls hang, as under SIGSTOP) with a
/// write in flight that reaches the API server only after another candidate took
/// over: the server refuses it, naming the policy, and stores nothing. The same
/// leader's writes passed the same policy before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n16_a_paused_leaders_write_that_lands_after_a_takeover_is_refused() {
    let emu =
        fenced(FencePolicy::new("default", LEASE).protect(Protected::new("", "v1", "configmaps")))
            .await;
    // The leader's application writes from its Pod, named as its identity.
    emu.set_user("app-a", UserInfo::pod("default", "app", "node-a"));
    let (a, _) = candidate(&emu, "node-a");
    assert!(wait_until(Duration::from_secs(10), || a.is_leader()).await);
    let client = kube::client::ClientBuilder::try_from(emu.kube_config("app-a"))
        .expect("config")
        .with_layer(&TermAnnotationLayer::new(Arc::clone(&a)))
        .build();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let configmap = |name: &str| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.to_owned());
        cm
    };
    api.create(&PostParams::default(), &configmap("steady"))
        .await
        .expect("the leader's writes pass in steady state");

    // The leader stops: its renewals hang, and the write it sends now (while it
    // still leads, so it is stamped with its term) is held 8 s on the way, four
    // lease durations: node-b takes over well before it lands.
    emu.faults("node-a").hang();
    let held = Duration::from_secs(8);
    emu.faults("app-a").latency(held);
    let sent = std::time::Instant::now();
    assert!(a.term().is_some(), "still leading when the write is sent");
    let late =
        tokio::spawn(async move { api.create(&PostParams::default(), &configmap("late")).await });
    let (b, _) = candidate(&emu, "node-b");
    assert!(
        wait_until(held, || b.is_leader()).await && sent.elapsed() < held,
        "node-b takes over before the write lands"
    );
    let s = refusal(late.await.expect("joined"));
    assert_eq!(s.code, 403, "{s:?}");
    assert!(
        s.message.contains("'fence-ops-lease'") && s.message.contains("held by \"node-b\""),
        "{}",
        s.message
    );
    assert_eq!(emu.object(Resource::ConfigMap, "default", "late"), None);
    b.shutdown().await;
}

/// docs/faults.md A4 in a mixed fleet, fenced: the Lease is deleted under this
/// library's leader, and a candidate that creates and leads at once (client-go's
/// way, `LockDelay::Immediate`) takes it. Whatever the old leader's watch tells
/// it and when, a write stamped with its term (as it writes while it believes it
/// leads) is refused by the API server once the other holds the Lease; the new
/// holder's own stamped writes pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a4_a_deposed_leaders_writes_in_a_mixed_fleet_are_refused_by_the_server() {
    use adapter_tokio::TokioRuntime;
    use election_core::{Config, LockDelay};
    use election_driver::Builder;
    use lock_lease::LeaseLock;

    let emu =
        fenced(FencePolicy::new("default", LEASE).protect(Protected::new("", "v1", "configmaps")))
            .await;
    // Each leader's application writes from its Pod, named as its identity.
    emu.set_user("app-a", UserInfo::pod("default", "app", "node-a"));
    emu.set_user("app-b", UserInfo::pod("default", "app", "eager"));
    let (a, _) = candidate(&emu, "node-a");
    assert!(wait_until(Duration::from_secs(10), || a.is_leader()).await);
    let term = a.term().expect("leading").to_string();
    // What the leader writes while it believes it leads: its stamp.
    let stamp = ("node-a", term.as_str());
    write(&emu, "app-a", "before", Some(stamp))
        .await
        .expect("the leader's write passes while it holds the Lease");

    let mut eager = Config::fast("eager").seed(5);
    eager.lock_delay = LockDelay::Immediate;
    let client = lock_kube::lock_client(emu.kube_config("eager")).expect("client");
    let lock = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("valid names");
    let b = Builder::new(lock, eager)
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("valid config");
    // The leader's lock calls are refused (429) from here, as in the A4 test, so
    // that the eager candidate's create wins the Lease.
    emu.faults("node-a")
        .on(kube_emulator::Match::verbs(&[
            kube_emulator::Verb::Get,
            kube_emulator::Verb::Create,
            kube_emulator::Verb::Update,
        ]))
        .too_many_requests(1);
    Api::<Lease>::namespaced(emu.client("admin").unwrap(), "default")
        .delete(LEASE, &DeleteParams::default())
        .await
        .expect("the admin deletes the Lease");
    assert!(
        wait_until(Duration::from_secs(10), || b.is_leader()).await,
        "the eager candidate leads on its create"
    );
    let s = refusal(write(&emu, "app-a", "after", Some(stamp)).await);
    assert_eq!(s.code, 403, "{s:?}");
    assert!(s.message.contains("held by \"eager\""), "{}", s.message);
    assert_eq!(emu.object(Resource::ConfigMap, "default", "after"), None);
    let eager_term = b.term().expect("leading").to_string();
    write(
        &emu,
        "app-b",
        "theirs",
        Some(("eager", eager_term.as_str())),
    )
    .await
    .expect("the new holder's stamped write passes");
    b.shutdown().await;
    a.shutdown().await;
}

/// Several namespaces fenced with one Lease (`matchExpressions … In`): writes in
/// each are checked, writes elsewhere are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespaces_listed_are_fenced_and_no_other() {
    use k8s_openapi::api::core::v1::Namespace;
    let emu = fenced(policy().namespaces(["default", "extra"])).await;
    let admin = emu.client("admin").unwrap();
    for ns in ["extra", "free"] {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.to_owned());
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &n)
            .await
            .expect("namespace");
    }
    hold(&emu, "app-0", 1).await;
    let bare = |ns: &str| {
        let api: Api<ConfigMap> = Api::namespaced(emu.client("app-0").unwrap(), ns);
        async move {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some("bare".to_owned());
            api.create(&PostParams::default(), &cm).await
        }
    };
    assert_eq!(refusal(bare("default").await).code, 403);
    assert_eq!(refusal(bare("extra").await).code, 403);
    bare("free")
        .await
        .expect("a namespace not listed is not fenced");
}

/// `FencePolicy::apply` writes the policy and its binding with the real `kube`
/// client, and a second apply replaces them (here: warn instead of refuse); a
/// policy that cannot be rendered is a typed error and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_creates_then_replaces_the_policy_and_its_binding() {
    use election_ops::fence::{ApplyError, Enforcement, FenceError};
    use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    let emu = Emulator::start().await.expect("emulator");
    let admin = emu.client("admin").expect("client");
    policy().apply(admin.clone()).await.expect("created");
    policy()
        .enforcement(Enforcement::WarnAndAudit)
        .apply(admin.clone())
        .await
        .expect("replaced");
    let binding = Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
        .get("fence-orders")
        .await
        .expect("the binding");
    let actions = binding.spec.validation_actions;
    assert_eq!(actions, ["Warn", "Audit"]);
    hold(&emu, "app-0", 1).await;
    write(&emu, "app-0", "bare-but-warned", None)
        .await
        .expect("warned, not refused");

    let nothing = FencePolicy::new("default", "other").apply(admin).await;
    assert!(
        matches!(
            nothing,
            Err(ApplyError::Fence(FenceError::NothingProtected))
        ),
        "{nothing:?}"
    );
    assert_eq!(
        emu.object(Resource::ValidatingAdmissionPolicy, "", "fence-other"),
        None
    );
}

/// A policy that does not compile is refused when written, as kube-apiserver
/// refuses it; the generated one is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_policy_compiles_where_a_broken_one_is_refused() {
    let emu = Emulator::start().await.expect("emulator");
    fence_cases::the_generated_policy_compiles_where_a_broken_one_is_refused(&emu).await;
}
