//! The `kube-emulator` binary: it prints where it listens, writes a
//! kubeconfig, and a kube client built from that kubeconfig works.

mod common;

use common::{Binary, kubectl, kubectl_fails};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

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

/// What kubectl is refused, each in words that say why: a typed create
/// (`kubectl create configmap`, sent as protobuf) gets 415 naming
/// kube-apiserver; `kubectl apply` with its default validation cannot
/// download the OpenAPI documents, and with `--validate=false`, when it asks
/// for server-side apply, gets 415 naming that; `kubectl get deployments`
/// finds no such resource type. Fails (does not skip) when kubectl is not
/// installed.
#[tokio::test]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-emulator --test binary -- --ignored"]
async fn kubectl_is_refused_what_the_emulator_does_not_serve_saying_why() {
    let binary = Binary::start("kubectl-refused").await;
    let kc = binary.kubeconfig.clone();
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: b\n";
    let [typed, validated, server_side, deployments] = tokio::task::spawn_blocking(move || {
        [
            kubectl_fails(
                &kc,
                &["create", "configmap", "cm1", "--from-literal=a=b"],
                None,
            ),
            kubectl_fails(&kc, &["apply", "-f", "-"], Some(config_map)),
            kubectl_fails(
                &kc,
                &["apply", "--server-side", "--validate=false", "-f", "-"],
                Some(config_map),
            ),
            kubectl_fails(&kc, &["get", "deployments"], None),
        ]
    })
    .await
    .expect("joined");
    assert!(
        typed.contains("takes JSON only; test a client that sends protobuf on kube-apiserver"),
        "{typed}"
    );
    assert!(
        validated.contains("failed to download openapi"),
        "{validated}"
    );
    assert!(
        server_side.contains(
            "server-side apply (application/apply-patch+yaml) is not supported by kube-emulator"
        ),
        "{server_side}"
    );
    assert!(
        deployments.contains("the server doesn't have a resource type \"deployments\""),
        "{deployments}"
    );
}
