//! `coordination.k8s.io/v1beta1` LeaseCandidates through the real
//! `kube::Client` and kubectl: every verb, discovery and the API server's
//! validation.

mod common;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_emulator::{Emulator, Resource, Verb};
use serde_json::json;

use common::{api_status, kubectl, lease_candidate};

fn candidate(name: &str, lease: &str, binary: &str, emulation: &str) -> LeaseCandidate {
    lease_candidate(name, lease, binary, emulation, Timestamp::now())
}

async fn candidates(emu: &Emulator, token: &str) -> Api<LeaseCandidate> {
    Api::namespaced(emu.client(token).expect("client"), "default")
}

#[tokio::test]
async fn every_verb_serves_lease_candidates() {
    let emu = Emulator::start().await.expect("start");
    let api = candidates(&emu, "a").await;
    let mut events = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();

    let created = api
        .create(
            &PostParams::default(),
            &candidate("sched-a", "kube-scheduler", "1.34.0", "1.33.0"),
        )
        .await
        .expect("create");
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    let stored = emu
        .object(Resource::LeaseCandidate, "default", "sched-a")
        .expect("stored");
    assert_eq!(stored["apiVersion"], "coordination.k8s.io/v1beta1");
    let renewed = stored["spec"]["renewTime"].as_str().expect("renewTime");
    assert_eq!(
        renewed.len(),
        "2006-01-02T15:04:05.000000Z".len(),
        "{renewed}"
    );

    assert_eq!(api.get("sched-a").await.expect("get"), created);

    let mut next = created.clone();
    next.spec.ping_time = Some(MicroTime(Timestamp::now()));
    let replaced = api
        .replace("sched-a", &PostParams::default(), &next)
        .await
        .expect("update with the version read");
    assert!(replaced.spec.ping_time.is_some());
    let status = api_status(
        api.replace("sched-a", &PostParams::default(), &next)
            .await
            .expect_err("a stale version"),
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));

    let patched = api
        .patch(
            "sched-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"binaryVersion": "1.35.0"}})),
        )
        .await
        .expect("patch");
    assert_eq!(patched.spec.binary_version, "1.35.0");

    api.create(
        &PostParams::default(),
        &candidate("cm-a", "kube-controller-manager", "1.34.0", "1.34.0"),
    )
    .await
    .expect("create another");
    let for_scheduler = api
        .list(&ListParams::default().fields("spec.leaseName=kube-scheduler"))
        .await
        .expect("list by lease name");
    let names: Vec<_> = for_scheduler
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names, ["sched-a"]);

    api.delete("sched-a", &DeleteParams::default())
        .await
        .expect("delete");
    let status = api_status(api.get("sched-a").await.expect_err("gone"));
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            404,
            "leasecandidates.coordination.k8s.io \"sched-a\" not found"
        )
    );

    let mut seen = Vec::new();
    while seen.len() < 5 {
        match events.next().await.expect("an event").expect("decoded") {
            WatchEvent::Added(c) => {
                seen.push(format!("ADDED {}", c.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Modified(c) => {
                seen.push(format!("MODIFIED {}", c.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Deleted(c) => {
                seen.push(format!("DELETED {}", c.metadata.name.unwrap_or_default()))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            "ADDED sched-a",
            "MODIFIED sched-a",
            "MODIFIED sched-a",
            "ADDED cm-a",
            "DELETED sched-a"
        ]
    );
    let counts = emu.request_counts();
    for verb in [
        Verb::Create,
        Verb::Get,
        Verb::Update,
        Verb::Patch,
        Verb::List,
        Verb::Delete,
        Verb::Watch,
    ] {
        assert!(
            counts.get("a", verb, Resource::LeaseCandidate) > 0,
            "{verb}"
        );
    }
}

#[tokio::test]
async fn discovery_names_v1beta1_beside_the_preferred_v1() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("a").expect("client");
    let groups = client.list_api_groups().await.expect("/apis");
    let coordination = groups
        .groups
        .iter()
        .find(|g| g.name == "coordination.k8s.io")
        .expect("the group");
    let versions: Vec<_> = coordination
        .versions
        .iter()
        .map(|v| v.version.as_str())
        .collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    assert_eq!(
        coordination
            .preferred_version
            .as_ref()
            .map(|v| v.version.as_str()),
        Some("v1")
    );
    let beta = client
        .list_api_group_resources("coordination.k8s.io/v1beta1")
        .await
        .expect("/apis/coordination.k8s.io/v1beta1");
    let resources: Vec<_> = beta
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.kind.as_str(), r.namespaced))
        .collect();
    assert_eq!(resources, [("leasecandidates", "LeaseCandidate", true)]);
    assert_eq!(beta.resources[0].verbs.len(), 7);
}

/// The 422s of `ValidateLeaseCandidate` and `ValidateLeaseCandidateUpdate`,
/// worded as the API server words them.
#[tokio::test]
async fn invalid_candidates_are_refused_as_the_api_server_refuses_them() {
    let emu = Emulator::start().await.expect("start");
    let api = candidates(&emu, "a").await;
    let refused = |c: LeaseCandidate| {
        let api = api.clone();
        async move {
            api_status(
                api.create(&PostParams::default(), &c)
                    .await
                    .expect_err("invalid"),
            )
        }
    };

    let mut no_lease = candidate("c", "", "1.34.0", "1.33.0");
    no_lease.spec.strategy = "OldestEmulationVersion".into();
    let status = refused(no_lease).await;
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "LeaseCandidate.coordination.k8s.io \"c\" is invalid: spec.leaseName: Required value"
    );

    // As upstream, a version that does not parse counts as 0.0.0 in the
    // comparison after it.
    let status = refused(candidate("c", "l", "v1.34.0", "1.33.0")).await;
    assert_eq!(
        status.message,
        "LeaseCandidate.coordination.k8s.io \"c\" is invalid: [spec.binaryVersion: Invalid value: \"v1.34.0\": must be a valid semantic version, spec.binaryVersion: Invalid value: \"v1.34.0\": must be greater than or equal to `emulationVersion`]"
    );

    let status = refused(candidate("c", "l", "1.33.0", "1.34.0")).await;
    assert_eq!(
        status.message,
        "LeaseCandidate.coordination.k8s.io \"c\" is invalid: spec.binaryVersion: Invalid value: \"1.33.0\": must be greater than or equal to `emulationVersion`"
    );

    let mut no_emulation = candidate("c", "l", "1.34.0", "");
    no_emulation.spec.emulation_version = None;
    let status = refused(no_emulation).await;
    assert_eq!(
        status.message,
        "LeaseCandidate.coordination.k8s.io \"c\" is invalid: spec.emulationVersion: Required value: must be specified when `strategy` is 'OldestEmulationVersion'"
    );

    let mut unknown = candidate("c", "l", "1.34.0", "1.33.0");
    unknown.spec.strategy = "Newest".into();
    let status = refused(unknown).await;
    assert!(
        status.message.ends_with(
            "spec.strategy.strategy: Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\""
        ),
        "{}",
        status.message
    );
    let mut no_strategy = candidate("c", "l", "1.34.0", "1.33.0");
    no_strategy.spec.strategy = String::new();
    let status = refused(no_strategy).await;
    assert!(
        status.message.ends_with("spec.strategy: Required value"),
        "{}",
        status.message
    );
    let mut qualified = candidate("custom", "l", "1.34.0", "1.33.0");
    qualified.spec.strategy = "example.com/Mine".into();
    qualified.spec.emulation_version = None;
    api.create(&PostParams::default(), &qualified)
        .await
        .expect("a qualified strategy needs no emulation version");

    let status = refused(candidate("..bad", "l", "1.34.0", "1.33.0")).await;
    assert!(
        status
            .message
            .ends_with("metadata.name: Invalid value: \"..bad\": must not start with '..'"),
        "{}",
        status.message
    );
    api.create(
        &PostParams::default(),
        &candidate("Kube_Scheduler.A", "l", "1.34.0", "1.33.0"),
    )
    .await
    .expect("a candidate's name is a config key: upper case and '_' are fine");

    // leaseName is immutable.
    let mut moved = api.get("custom").await.expect("get");
    moved.spec.lease_name = "other".into();
    let status = api_status(
        api.replace("custom", &PostParams::default(), &moved)
            .await
            .expect_err("immutable"),
    );
    assert_eq!(
        status.message,
        "LeaseCandidate.coordination.k8s.io \"custom\" is invalid: spec.leaseName: Invalid value: \"other\": field is immutable"
    );
    // An update without a resourceVersion is refused: updates are
    // compare-and-swap (`AllowUnconditionalUpdate` is false).
    let mut blind = api.get("custom").await.expect("get");
    blind.metadata.resource_version = None;
    let status = api_status(
        api.replace("custom", &PostParams::default(), &blind)
            .await
            .expect_err("no version"),
    );
    assert_eq!(
        status.message,
        "leasecandidates.coordination.k8s.io \"custom\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
    // A PUT to a missing candidate creates it (`AllowCreateOnUpdate`).
    let put = api
        .replace(
            "fresh",
            &PostParams::default(),
            &candidate("fresh", "l", "1.34.0", "1.33.0"),
        )
        .await
        .expect("create on update");
    assert!(put.metadata.uid.is_some());
    // A wrong JSON type is the decoder's 400, naming v1beta1.
    let status = api_status(
        api.patch(
            "fresh",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"binaryVersion": 134}})),
        )
        .await
        .expect_err("a number"),
    );
    assert_eq!(status.code, 400);
    assert!(
        status.message.starts_with(
            "LeaseCandidate in version \"v1beta1\" cannot be handled as a LeaseCandidate"
        ),
        "{}",
        status.message
    );
}

/// kubectl applies (`--validate=false`: the emulator serves no OpenAPI
/// documents), lists (NAME and AGE: the emulator prints no Tables) and
/// deletes candidates. Fails (does not skip) when kubectl is not installed.
#[tokio::test]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-emulator --test lease_candidates -- --ignored"]
async fn kubectl_applies_lists_and_deletes_candidates() {
    let emu = Emulator::start().await.expect("start");
    let dir = std::env::temp_dir().join(format!(
        "kube-emulator-candidates-{}-{}",
        std::process::id(),
        emu.addr.port()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("config");
    emu.write_kubeconfig(&kubeconfig, "kubectl")
        .expect("kubeconfig");
    let client = emu.client("setup").expect("client");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mut team = k8s_openapi::api::core::v1::Namespace::default();
    team.metadata.name = Some("team".into());
    namespaces
        .create(&PostParams::default(), &team)
        .await
        .expect("namespace");
    let api: Api<LeaseCandidate> = Api::namespaced(client, "team");
    api.create(
        &PostParams::default(),
        &candidate("node-a", "kube-scheduler", "1.34.0", "1.33.0"),
    )
    .await
    .expect("create");

    let run = |args: Vec<String>, stdin: Option<String>| {
        let kubeconfig = kubeconfig.clone();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl(&kubeconfig, &args, stdin.as_deref())
        })
    };
    let args = |text: &str| text.split(' ').map(str::to_owned).collect::<Vec<_>>();
    let manifest = "apiVersion: coordination.k8s.io/v1beta1\nkind: LeaseCandidate\nmetadata:\n  name: node-b\n  namespace: team\nspec:\n  leaseName: kube-scheduler\n  binaryVersion: 1.35.0\n  emulationVersion: 1.34.0\n  strategy: OldestEmulationVersion\n";
    let applied = run(
        args("apply --validate=false -f -"),
        Some(manifest.to_owned()),
    )
    .await
    .expect("kubectl ran");
    assert!(
        applied.contains("leasecandidate.coordination.k8s.io/node-b created"),
        "{applied}"
    );

    let table = run(args("get leasecandidates -n team"), None)
        .await
        .expect("kubectl ran");
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "AGE"], "{table}");
    assert_eq!(lines[1][0], "node-a", "{table}");
    assert_eq!(lines[2][0], "node-b", "{table}");
    assert_eq!(lines.len(), 3, "{table}");

    let deleted = run(args("delete leasecandidates node-a -n team"), None)
        .await
        .expect("kubectl ran");
    assert!(deleted.contains("\"node-a\" deleted"), "{deleted}");
    assert!(
        emu.object(Resource::LeaseCandidate, "team", "node-a")
            .is_none()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
