//! The `kube-emulator` binary: it prints where it listens, writes a
//! kubeconfig, and a kube client built from that kubeconfig works.

mod common;

use common::{Binary, kubectl, kubectl_fails, kubectl_output};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

#[tokio::test]
async fn binary_serves_and_writes_a_working_kubeconfig() {
    let binary = Binary::start("cli-user").await;
    let (lines, path) = (&binary.lines, &binary.kubeconfig);
    assert!(
        lines[0].starts_with("kube-emulator listening on http://127.0.0.1:"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1],
        format!("kubeconfig written to {}", path.display())
    );

    let kubeconfig = Kubeconfig::read_from(path).expect("a valid kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("usable config");
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        lines[0].trim_start_matches("kube-emulator listening on ")
    );
    let api: Api<Lease> = Api::default_namespaced(kube::Client::try_from(config).expect("client"));
    let mut lease = Lease::default();
    lease.metadata.name = Some("from-cli".into());
    api.create(&PostParams::default(), &lease)
        .await
        .expect("create through the binary");
    let got = api.get("from-cli").await.expect("get");
    assert_eq!(got.metadata.namespace.as_deref(), Some("default"));
}

/// kubectl creates, annotates, cordons and uncordons a Node on the binary, and
/// deleting the Node takes the Lease it owns with it. Fails (does not skip)
/// when kubectl is not installed.
#[tokio::test]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-emulator --test binary -- --ignored"]
async fn kubectl_cordons_and_annotates_a_node_and_its_lease_goes_with_it() {
    let binary = Binary::start("kubectl").await;
    let path = binary.kubeconfig.clone();
    let kc = path.clone();
    let run = move |args: &'static [&'static str], stdin: Option<&'static str>| {
        let kc = kc.clone();
        tokio::task::spawn_blocking(move || kubectl(&kc, args, stdin))
    };
    run(
        &["create", "--validate=false", "-f", "-"],
        Some("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\n"),
    )
    .await
    .expect("joined");
    run(
        &["annotate", "node", "worker-1", "example.com/window=20"],
        None,
    )
    .await
    .expect("joined");
    run(&["cordon", "worker-1"], None).await.expect("joined");
    let got = run(
        &[
            "get",
            "node",
            "worker-1",
            "-o",
            "jsonpath={.spec.unschedulable} {.metadata.annotations.example\\.com/window}",
        ],
        None,
    )
    .await
    .expect("joined");
    assert_eq!(got, "true 20");
    run(&["uncordon", "worker-1"], None).await.expect("joined");
    let got = run(
        &[
            "get",
            "nodes",
            "-o",
            "jsonpath={.items[*].spec.unschedulable}",
        ],
        None,
    )
    .await
    .expect("joined");
    assert_eq!(got, "", "uncordon clears spec.unschedulable");

    // A Lease owned by the Node, through the kube client on the same binary.
    let kubeconfig = Kubeconfig::read_from(&path).expect("a valid kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("usable config");
    let client = kube::Client::try_from(config).expect("client");
    let node = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .get("worker-1")
        .await
        .expect("the node kubectl made");
    let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    let mut lease = Lease::default();
    lease.metadata.name = Some("worker-1".into());
    lease.metadata.owner_references = Some(vec![
        kube::Resource::controller_owner_ref(&node, &()).expect("name and uid"),
    ]);
    leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("owned lease");
    run(&["delete", "node", "worker-1"], None)
        .await
        .expect("joined");
    assert!(
        leases.get_opt("worker-1").await.expect("get").is_none(),
        "the Lease went with its Node"
    );
}

/// What kubectl's `-v=8` log says it sent with its POST: the body went out
/// as protobuf (else the test would pass on a JSON body), and kubectl takes a
/// JSON answer (the emulator answers nothing else).
fn assert_posted_protobuf(log: &str) {
    let request: Vec<&str> = log
        .lines()
        .skip_while(|l| !l.contains("POST http"))
        .take_while(|l| !l.contains("Response Status"))
        .collect();
    let header = |name: &str| {
        request
            .iter()
            .find_map(|l| l.split_once(&format!("{name}: ")).map(|(_, v)| v.trim()))
            .unwrap_or_else(|| panic!("no {name} header of a POST in kubectl's -v=8 log:\n{log}"))
    };
    assert_eq!(
        header("Content-Type"),
        "application/vnd.kubernetes.protobuf",
        "{log}"
    );
    assert!(
        header("Accept")
            .split(',')
            .any(|t| t.trim() == "application/json"),
        "{log}"
    );
}

/// `kubectl create namespace` and `kubectl create configmap` send protobuf
/// bodies (kubectl 1.32); the binary decodes them and the objects arrive with
/// their fields, binary data included. Fails (does not skip) when kubectl is
/// not installed.
#[tokio::test]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-emulator --test binary -- --ignored"]
async fn kubectl_typed_creates_send_protobuf_and_the_objects_arrive() {
    let binary = Binary::start("kubectl-proto").await;
    let kc = binary.kubeconfig.clone();
    let blob = binary.dir.join("blob.bin");
    std::fs::write(&blob, [0x00, 0x01, 0xff, b'\n']).expect("write the binary file");
    let from_file = format!("--from-file=blob={}", blob.display());
    let (namespace, config_map) = tokio::task::spawn_blocking(move || {
        let (_, log) = kubectl_output(&kc, &["create", "namespace", "demo", "-v=8"], None);
        assert_posted_protobuf(&log);
        let (_, log) = kubectl_output(
            &kc,
            &[
                "create",
                "configmap",
                "cm1",
                "-n",
                "demo",
                "--from-literal=a=b",
                &from_file,
                "-v=8",
            ],
            None,
        );
        assert_posted_protobuf(&log);
        let get = |args: &[&str]| -> Value {
            serde_json::from_str(&kubectl(&kc, args, None)).expect("kubectl printed JSON")
        };
        (
            get(&["get", "namespace", "demo", "-o", "json"]),
            get(&["get", "configmap", "cm1", "-n", "demo", "-o", "json"]),
        )
    })
    .await
    .expect("joined");

    assert_eq!(namespace["metadata"]["name"], "demo");
    assert_eq!(
        namespace["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "demo"
    );
    assert_eq!(namespace["status"]["phase"], "Active");
    assert_eq!(config_map["kind"], "ConfigMap");
    assert_eq!(config_map["metadata"]["name"], "cm1");
    assert_eq!(config_map["metadata"]["namespace"], "demo");
    assert!(config_map["metadata"]["uid"].is_string());
    assert_eq!(config_map["data"], json!({"a": "b"}));
    assert_eq!(config_map["binaryData"], json!({"blob": "AAH/Cg=="}));
}

/// Objects of every kind kubectl writes here, with ordinary fields only.
const MANIFESTS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: demo}
data:
  mode: one
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: lock
spec:
  holderIdentity: node-a
  leaseDurationSeconds: 15
---
apiVersion: v1
kind: Namespace
metadata:
  name: demo
---
apiVersion: v1
kind: Node
metadata:
  name: worker-1
spec:
  unschedulable: true
";

/// kubectl's default validation (`--validate=strict`) reads the emulator's
/// OpenAPI v3 documents, finds that PATCH takes `fieldValidation`, and leaves
/// validation to the server: `create`, `apply` (twice, the second a
/// strategic merge patch that changes values) and `replace` work without
/// `--validate=false`, and a misspelled field is refused with the server's
/// strict-decoding message. Fails (does not skip) when kubectl is not installed.
#[tokio::test]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-emulator --test binary -- --ignored"]
async fn kubectl_create_apply_and_replace_validate_on_the_server() {
    let binary = Binary::start("kubectl-validate").await;
    let kc = binary.kubeconfig.clone();
    let (applied, replaced, misspelled) = tokio::task::spawn_blocking(move || {
        let get = |args: &[&str]| -> Value {
            serde_json::from_str(&kubectl(&kc, args, None)).expect("kubectl printed JSON")
        };
        let (out, log) = kubectl_output(&kc, &["create", "-f", "-", "-v=6"], Some(MANIFESTS));
        assert!(out.contains("configmap/settings created"), "{out}");
        assert!(out.contains("node/worker-1 created"), "{out}");
        assert!(
            log.contains("/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create&fieldValidation=Strict 201"),
            "kubectl left validation to the server:\n{log}"
        );
        kubectl(&kc, &["delete", "-f", "-"], Some(MANIFESTS));

        let out = kubectl(&kc, &["apply", "-f", "-"], Some(MANIFESTS));
        assert!(out.contains("lease.coordination.k8s.io/lock created"), "{out}");
        let changed = MANIFESTS
            .replace("mode: one", "mode: two")
            .replace("holderIdentity: node-a", "holderIdentity: node-b")
            .replace("leaseDurationSeconds: 15", "leaseDurationSeconds: 30");
        let (out, log) = kubectl_output(&kc, &["apply", "-f", "-", "-v=6"], Some(&changed));
        assert!(out.contains("configmap/settings configured"), "{out}");
        assert!(out.contains("lease.coordination.k8s.io/lock configured"), "{out}");
        assert!(out.contains("node/worker-1 unchanged"), "{out}");
        assert!(!log.contains("warning"), "{log}");
        assert!(
            log.contains("PATCH http") && log.contains("fieldValidation=Strict 200"),
            "{log}"
        );
        let applied = (
            get(&["get", "configmap", "settings", "-o", "json"]),
            get(&["get", "lease", "lock", "-o", "json"]),
        );

        let replacement = changed
            .replace("mode: two", "mode: three\n  extra: kept")
            .replace("holderIdentity: node-b", "holderIdentity: node-c");
        let out = kubectl(&kc, &["replace", "-f", "-"], Some(&replacement));
        assert!(out.contains("configmap/settings replaced"), "{out}");
        let replaced = (
            get(&["get", "configmap", "settings", "-o", "json"]),
            get(&["get", "lease", "lock", "-o", "json"]),
        );

        let err = kubectl_fails(
            &kc,
            &["create", "-f", "-"],
            Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: misspelled\ndatta:\n  a: b\n"),
        );
        let names = kubectl(&kc, &["get", "configmaps", "-o", "jsonpath={.items[*].metadata.name}"], None);
        (applied, replaced, (err, names))
    })
    .await
    .expect("joined");

    let (config_map, lease) = applied;
    assert_eq!(config_map["data"], json!({"mode": "two"}));
    assert_eq!(config_map["metadata"]["labels"], json!({"app": "demo"}));
    let last_applied =
        config_map["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("apply keeps its annotation");
    assert!(last_applied.contains("\"mode\":\"two\""), "{last_applied}");
    assert_eq!(lease["spec"]["holderIdentity"], "node-b");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 30);

    let (config_map, lease) = replaced;
    assert_eq!(
        config_map["data"],
        json!({"mode": "three", "extra": "kept"})
    );
    assert_eq!(lease["spec"]["holderIdentity"], "node-c");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 30);

    let (err, names) = misspelled;
    assert!(
        err.contains(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datta\""
        ),
        "{err}"
    );
    assert!(err.contains("BadRequest"), "{err}");
    assert_eq!(
        names, "settings",
        "the misspelled ConfigMap was not created"
    );
}

/// `kubectl apply --server-side` sends an apply patch, which the emulator does
/// not serve: kubectl reports the 415 naming server-side apply. Fails (does not
/// skip) when kubectl is not installed.
#[tokio::test]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-emulator --test binary -- --ignored"]
async fn kubectl_server_side_apply_is_refused_naming_it() {
    let binary = Binary::start("kubectl-ssa").await;
    let kc = binary.kubeconfig.clone();
    let err = tokio::task::spawn_blocking(move || {
        kubectl_fails(
            &kc,
            &["apply", "--server-side", "-f", "-"],
            Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: b\n"),
        )
    })
    .await
    .expect("joined");
    assert!(
        err.contains(
            "server-side apply (application/apply-patch+yaml) is not supported by kube-emulator"
        ),
        "{err}"
    );
}

/// kubectl and the kinds of the feature `workloads` (Deployments here): built
/// without it, as by default, the binary lists none of them in discovery, so
/// kubectl says it knows no such resource type or kind, and a raw request
/// gets the emulator's 404 naming the feature; built with it, kubectl applies
/// and lists them. Fails (does not skip) when kubectl is not installed.
#[tokio::test]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-emulator --test binary -- --ignored"]
async fn kubectl_finds_the_workload_kinds_only_with_their_feature() {
    const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
";
    let binary = Binary::start("kubectl-workloads").await;
    let kc = binary.kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        if cfg!(feature = "workloads") {
            let out = kubectl(&kc, &["apply", "-f", "-"], Some(DEPLOYMENT));
            assert!(out.contains("deployment.apps/web created"), "{out}");
            let names = kubectl(&kc, &["get", "deployments", "-o", "name"], None);
            assert_eq!(names.trim(), "deployment.apps/web");
            return;
        }
        let err = kubectl_fails(&kc, &["get", "deployments"], None);
        assert!(
            err.contains("the server doesn't have a resource type \"deployments\""),
            "{err}"
        );
        let err = kubectl_fails(
            &kc,
            &["apply", "--validate=false", "-f", "-"],
            Some(DEPLOYMENT),
        );
        assert!(
            err.contains("no matches for kind \"Deployment\" in version \"apps/v1\""),
            "{err}"
        );
        let err = kubectl_fails(
            &kc,
            &["get", "--raw", "/apis/apps/v1/namespaces/default/deployments"],
            None,
        );
        assert!(
            err.contains(
                "Error from server (NotFound): the server could not find the requested resource: deployments.apps is served by kube-emulator only with its cargo feature \"workloads\""
            ),
            "{err}"
        );
    })
    .await
    .expect("joined");
}
