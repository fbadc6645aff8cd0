//! `kubectl elector`, the kubectl plugin, against a real kube-apiserver and
//! through kubectl's own plugin discovery: the binary is put on `PATH` as
//! `kubectl-elector`, `kubectl plugin list` must name it, and every command
//! runs as `kubectl elector … --kubeconfig PATH` (kubectl hands a plugin the
//! arguments after its name).
//!
//! - `get`: a live election of this library (a LeaseLock election in this
//!   process) whose holder has a Pod (`Pending`: no scheduler runs), a Lease
//!   whose client-go-style holder `<hostname>_<uuid>` names that Pod by its
//!   hostname, one whose holder has none (`missing`), a released one; a
//!   LeaseCandidate and a coordinated strategy on one (a strategy of our own,
//!   which kube-apiserver's coordinator leaves alone); the fence of
//!   `election_ops::fence` on the live one. The table, `-o wide`, `-o json`
//!   field by field, `-o yaml` equal to the JSON, `-A` (the heartbeats of
//!   `kube-node-lease` and the API server's identity left out, shown with
//!   `--all-leases`), an empty namespace, a missing name, and a reader who may
//!   read Leases only (`?`, said once on stderr).
//! - `describe` after a failover: both `became leader` Events, oldest first.
//! - `release` of a live leader of this library: it stops leading within two
//!   seconds, and the Lease was emptied (or taken again, one term later);
//!   `--dry-run` writes nothing; a released Lease and a missing one are refused.
//! - `release` of a client-go leader (`testing/client-go-peer`), checking what
//!   the command says of client-go: it does not stop, and its next renewal
//!   takes the Lease back as a new term.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use adapter_tokio::TokioRuntime;
use election_core::{Config, Event, StopReason};
use election_driver::{Builder, Change, Handle};
use fleet::harness::client_go_peer;
use fleet::line::{Event as PeerEvent, mono_now};
use fleet::peer::{Library, Log, Peer, Spec};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::coordination::v1beta1::{LeaseCandidate, LeaseCandidateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;
use test_kit::apiserver::{ADMIN, ApiServer, Server};

/// The plugin under test.
const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-elector");

/// The strategy of the coordinated Lease: a qualified name of our own, which
/// kube-apiserver's coordinator (it runs only `OldestEmulationVersion`)
/// leaves alone.
const STRATEGY: &str = "kube-elector.dev/Manual";

/// The plugin installed as kubectl finds plugins: `kubectl-elector` in a
/// directory put first on kubectl's `PATH`.
struct Plugin {
    dir: PathBuf,
    path: OsString,
}

impl Plugin {
    fn install(test: &str) -> Plugin {
        let dir =
            std::env::temp_dir().join(format!("kubectl-elector-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).expect("temp dir");
        std::os::unix::fs::symlink(PLUGIN, bin.join("kubectl-elector")).expect("symlink");
        let mut dirs = vec![bin];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let path = std::env::join_paths(dirs).expect("PATH");
        Plugin { dir, path }
    }

    /// `kubectl ARGS --kubeconfig KUBECONFIG`, with the plugin on `PATH` and
    /// no `KUBECONFIG` in the environment. Not `kube_emulator::kubectl`, which
    /// puts its flags first: kubectl refuses flags before a plugin's name.
    async fn kubectl(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        let out = tokio::process::Command::new("kubectl")
            .args(args)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .env("PATH", &self.path)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap_or_else(|e| panic!("kubectl cannot be run (is it on PATH?): {e}"));
        eprintln!(
            "$ kubectl {}\n{}{}(exit {:?})",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            out.status.code()
        );
        out
    }

    /// `kubectl elector ARGS`, which must succeed: its stdout.
    async fn ok(&self, kubeconfig: &Path, args: &[&str]) -> String {
        let out = self.elector(kubeconfig, args).await;
        assert!(
            out.status.success(),
            "kubectl elector {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    }

    async fn elector(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        let mut all = vec!["elector"];
        all.extend_from_slice(args);
        self.kubectl(kubeconfig, &all).await
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The shared kube-apiserver (blocks while it starts).
fn server() -> &'static ApiServer {
    tokio::task::block_in_place(ApiServer::shared)
}

/// A new namespace (blocks briefly).
fn namespace(server: &ApiServer) -> String {
    tokio::task::block_in_place(|| server.namespace())
}

/// A kubeconfig for the tester `kubectl` whose context's namespace is `ns`.
fn operator(server: &ApiServer, dir: &Path, ns: &str) -> PathBuf {
    let path = dir.join(format!("operator-{ns}.kubeconfig"));
    server.write_kubeconfig("kubectl", ns, &path);
    path
}

/// A candidate `id` of this library on the Lease `ns/name` (a 2 s lease), its
/// lock authenticated as the tester `a`.
fn candidate(server: &dyn Server, ns: &str, name: &str, id: &str) -> Handle {
    let config = Config::fast(id);
    let client = lock_kube::lock_client(server.kube_config("a")).expect("client");
    let lock = lock_lease::LeaseLock::builder(client, ns, name)
        .build()
        .expect("valid names");
    Builder::new(lock, config)
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("valid config")
}

async fn wait_leading(handle: &Handle, within: Duration) {
    let start = Instant::now();
    while !handle.is_leader() {
        assert!(
            start.elapsed() < within,
            "{} does not lead after {within:?}",
            handle.identity()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Lease `name` in `ns` as an admin writes it.
async fn make_lease(admin: &kube::Client, ns: &str, name: &str, spec: LeaseSpec) {
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
    };
    Api::<Lease>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap_or_else(|e| panic!("create Lease {ns}/{name}: {e}"));
}

async fn read_lease(admin: &kube::Client, ns: &str, name: &str) -> LeaseSpec {
    Api::<Lease>::namespaced(admin.clone(), ns)
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("get Lease {ns}/{name}: {e}"))
        .spec
        .unwrap_or_default()
}

/// A table's rows (header first), split on whitespace: no cell has a space.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// The row whose cell `column` (by header) is `value`.
fn row<'a>(table: &'a [Vec<String>], column: &str, value: &str) -> &'a [String] {
    let at = table[0]
        .iter()
        .position(|h| h == column)
        .unwrap_or_else(|| panic!("no column {column}: {:?}", table[0]));
    table
        .iter()
        .skip(1)
        .find(|r| r.get(at).map(String::as_str) == Some(value))
        .unwrap_or_else(|| panic!("no row with {column} {value}: {table:?}"))
}

/// The cell `column` of `row` in `table`.
fn cell<'a>(table: &[Vec<String>], row: &'a [String], column: &str) -> &'a str {
    let at = table[0]
        .iter()
        .position(|h| h == column)
        .unwrap_or_else(|| panic!("no column {column}: {:?}", table[0]));
    row.get(at).map_or("", String::as_str)
}

/// The item of the JSON list named `name` (in `ns`).
fn item<'a>(list: &'a Value, ns: &str, name: &str) -> &'a Value {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["namespace"] == ns && i["name"] == name)
        .unwrap_or_else(|| panic!("no item {ns}/{name}: {list:#}"))
}

fn parse_time(v: &Value) -> Timestamp {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .parse()
        .unwrap_or_else(|e| panic!("not RFC 3339: {v}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver (bash testing/k8s-server/build.sh) and kubectl (.ci/install); CI runs it"]
async fn get_lists_elections_with_holders_pods_candidates_and_fences_on_kube_apiserver() {
    let server = server();
    let plugin = Plugin::install("get");
    let (ns, ns2, empty) = (namespace(server), namespace(server), namespace(server));
    let kubeconfig = operator(server, &plugin.dir, &ns);
    let admin = server.client(ADMIN);

    // kubectl finds the plugin on its PATH.
    let list = plugin.kubectl(&kubeconfig, &["plugin", "list"]).await;
    let listed = String::from_utf8_lossy(&list.stdout);
    let installed = plugin.dir.join("bin").join("kubectl-elector");
    assert!(
        listed
            .lines()
            .any(|l| l.trim() == installed.to_string_lossy()),
        "kubectl plugin list does not name {}: {listed}",
        installed.display()
    );

    // A live election of this library; its holder's Pod.
    let live = candidate(server, &ns, "live", "web-0");
    wait_leading(&live, Duration::from_secs(10)).await;
    tokio::task::block_in_place(|| server.pod_config(&ns, "web", "web-0"));
    // A client-go holder, `<hostname>_<uuid>`, whose hostname is that Pod.
    let now = Timestamp::now();
    let spec = |holder: &str, duration: i32, transitions: i32| LeaseSpec {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(duration),
        lease_transitions: Some(transitions),
        renew_time: Some(MicroTime(now)),
        acquire_time: Some(MicroTime(now)),
        ..LeaseSpec::default()
    };
    make_lease(
        &admin,
        &ns,
        "client-go",
        spec("web-0_5f1c2e4a-1b2c-4d5e-8f90-123456789abc", 15, 3),
    )
    .await;
    // A holder without a Pod, in a coordinated election of its own strategy
    // with a candidate.
    let ghost = LeaseSpec {
        strategy: Some(STRATEGY.to_owned()),
        preferred_holder: Some("cand-a".to_owned()),
        ..spec("ghost-7d9f", 3600, 7)
    };
    make_lease(&admin, &ns, "ghost", ghost).await;
    let candidacy = LeaseCandidate {
        metadata: ObjectMeta {
            name: Some("cand-a".to_owned()),
            ..ObjectMeta::default()
        },
        spec: LeaseCandidateSpec {
            lease_name: "ghost".to_owned(),
            binary_version: "1.36.0".to_owned(),
            emulation_version: Some("1.35.0".to_owned()),
            strategy: STRATEGY.to_owned(),
            renew_time: Some(MicroTime(now)),
            ping_time: None,
        },
    };
    Api::<LeaseCandidate>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &candidacy)
        .await
        .expect("create the LeaseCandidate");
    // A released Lease.
    make_lease(
        &admin,
        &ns,
        "done",
        LeaseSpec {
            holder_identity: Some(String::new()),
            ..spec("", 1, 2)
        },
    )
    .await;
    // The fence of the live election.
    election_ops::fence::FencePolicy::new(&ns, "live")
        .protect(election_ops::fence::Protected::new("", "v1", "configmaps"))
        .apply(admin.clone())
        .await
        .expect("the fence applied");
    // Another namespace's election, and a node's heartbeat.
    make_lease(&admin, &ns2, "other", spec("someone", 15, 0)).await;
    let heartbeat = format!("kubectl-elector-{}", std::process::id());
    make_lease(&admin, "kube-node-lease", &heartbeat, spec("node-1", 40, 0)).await;

    // The table, in the context's namespace.
    let table = rows(&plugin.ok(&kubeconfig, &["get"]).await);
    assert_eq!(
        table[0],
        ["NAME", "HOLDER", "TERM", "RENEWED", "STATE", "POD", "FENCE"]
    );
    let names: Vec<&str> = table.iter().skip(1).map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["client-go", "done", "ghost", "live"]);
    let term = read_lease(&admin, &ns, "live")
        .await
        .lease_transitions
        .unwrap_or(0);
    let r = row(&table, "NAME", "live");
    assert_eq!(cell(&table, r, "HOLDER"), "web-0");
    assert_eq!(cell(&table, r, "TERM"), term.to_string());
    let renewed = cell(&table, r, "RENEWED");
    assert!(
        ["0s/2s", "1s/2s", "2s/2s"].contains(&renewed),
        "a 2 s lease renewed every 250 ms: {renewed}"
    );
    assert_eq!(cell(&table, r, "STATE"), "held");
    assert_eq!(cell(&table, r, "POD"), "Pending");
    assert_eq!(cell(&table, r, "FENCE"), "fence-live");
    let r = row(&table, "NAME", "client-go");
    assert_eq!(cell(&table, r, "TERM"), "3");
    assert!(cell(&table, r, "RENEWED").ends_with("/15s"), "{r:?}");
    assert_eq!(cell(&table, r, "POD"), "Pending", "found by its hostname");
    assert_eq!(cell(&table, r, "FENCE"), "-");
    let r = row(&table, "NAME", "ghost");
    assert_eq!(cell(&table, r, "HOLDER"), "ghost-7d9f");
    assert_eq!(cell(&table, r, "TERM"), "7");
    assert!(cell(&table, r, "RENEWED").ends_with("/3600s"), "{r:?}");
    assert_eq!(cell(&table, r, "STATE"), "held");
    assert_eq!(cell(&table, r, "POD"), "missing");
    assert_eq!(cell(&table, r, "FENCE"), "-");
    let r = row(&table, "NAME", "done");
    assert_eq!(cell(&table, r, "HOLDER"), "<none>");
    assert_eq!(cell(&table, r, "TERM"), "2");
    assert_eq!(cell(&table, r, "STATE"), "released");
    assert_eq!(cell(&table, r, "POD"), "-");

    // -o wide: the candidates with their versions, the strategy, the
    // preferred holder, the acquisition's age.
    let wide = rows(&plugin.ok(&kubeconfig, &["get", "-o", "wide"]).await);
    assert_eq!(
        &wide[0][7..],
        ["CANDIDATES", "STRATEGY", "PREFERRED", "ACQUIRED"]
    );
    let r = row(&wide, "NAME", "ghost");
    assert_eq!(cell(&wide, r, "CANDIDATES"), "cand-a@1.36.0");
    assert_eq!(cell(&wide, r, "STRATEGY"), STRATEGY);
    assert_eq!(cell(&wide, r, "PREFERRED"), "cand-a");
    let r = row(&wide, "NAME", "live");
    assert_eq!(cell(&wide, r, "CANDIDATES"), "<none>");
    assert_eq!(cell(&wide, r, "STRATEGY"), "<none>");
    assert!(cell(&wide, r, "ACQUIRED").ends_with('s'), "{r:?}");

    // -o json, field by field.
    let json: Value =
        serde_json::from_str(&plugin.ok(&kubeconfig, &["get", "-o", "json"]).await).expect("JSON");
    assert_eq!(json["apiVersion"], "kube-elector.dev/v1");
    assert_eq!(json["kind"], "ElectionList");
    assert_eq!(json["items"].as_array().map(Vec::len), Some(4));
    let l = item(&json, &ns, "live");
    assert_eq!(l["holder"], "web-0");
    assert_eq!(l["term"], term);
    assert_eq!(l["leaseDurationSeconds"], 2);
    assert_eq!(l["state"], "held");
    assert_eq!(
        l["pod"],
        serde_json::json!({ "lookup": "found", "name": "web-0", "phase": "Pending" })
    );
    assert_eq!(
        l["fence"],
        serde_json::json!([{ "binding": "fence-live", "policy": "fence-live", "validationActions": ["Deny"] }])
    );
    assert_eq!(l["candidates"], serde_json::json!([]));
    assert_eq!(l["strategy"], Value::Null);
    let ago = l["renewedAgoSeconds"].as_f64().expect("seconds");
    assert!((-1.0..=3.0).contains(&ago), "{ago}");
    parse_time(&l["renewTime"]);
    parse_time(&l["acquireTime"]);
    let g = item(&json, &ns, "ghost");
    assert_eq!(g["holder"], "ghost-7d9f");
    assert_eq!(g["term"], 7);
    assert_eq!(g["leaseDurationSeconds"], 3600);
    assert_eq!(parse_time(&g["renewTime"]).as_second(), now.as_second());
    assert_eq!(g["pod"]["lookup"], "missing");
    assert_eq!(g["strategy"], STRATEGY);
    assert_eq!(g["preferredHolder"], "cand-a");
    assert_eq!(g["fence"], serde_json::json!([]));
    let c = &g["candidates"][0];
    assert_eq!(g["candidates"].as_array().map(Vec::len), Some(1));
    assert_eq!(c["name"], "cand-a");
    assert_eq!(c["binaryVersion"], "1.36.0");
    assert_eq!(c["emulationVersion"], "1.35.0");
    assert_eq!(c["strategy"], STRATEGY);
    let d = item(&json, &ns, "done");
    assert_eq!(d["holder"], Value::Null);
    assert_eq!(d["state"], "released");
    assert_eq!(d["pod"], Value::Null);
    assert_eq!(item(&json, &ns, "client-go")["pod"]["name"], "web-0");

    // -o yaml is the same document (less what moves between two reads: the
    // ages, and the live Lease's renewal).
    let yaml = plugin.ok(&kubeconfig, &["get", "-o", "yaml"]).await;
    let from_yaml: Value = serde_saphyr::from_str(&yaml).expect("YAML");
    let still = |mut doc: Value| {
        for i in doc["items"].as_array_mut().expect("items") {
            let i = i.as_object_mut().expect("an item");
            i.remove("renewedAgoSeconds");
            i.remove("acquiredAgoSeconds");
            if i["name"] == "live" {
                i.remove("renewTime");
            }
        }
        doc
    };
    assert_eq!(still(from_yaml), still(json));

    // -A: both namespaces, no node heartbeat, no API server identity; with
    // --all-leases, both.
    let all = rows(&plugin.ok(&kubeconfig, &["get", "-A"]).await);
    assert_eq!(all[0][..2], ["NAMESPACE", "NAME"]);
    assert!(
        all.iter()
            .any(|r| r[..2] == [ns.clone(), "live".to_owned()])
    );
    assert!(
        all.iter()
            .any(|r| r[..2] == [ns2.clone(), "other".to_owned()])
    );
    assert!(!all.iter().any(|r| r[0] == "kube-node-lease"), "{all:?}");
    assert!(
        !all.iter().any(|r| r[1].starts_with("apiserver-")),
        "{all:?}"
    );
    let identity = ListParams::default().labels("apiserver.kubernetes.io/identity");
    let identities = Api::<Lease>::namespaced(admin.clone(), "kube-system")
        .list(&identity)
        .await
        .expect("list");
    let everything = rows(&plugin.ok(&kubeconfig, &["get", "-A", "--all-leases"]).await);
    assert!(
        everything
            .iter()
            .any(|r| r[..2] == ["kube-node-lease".to_owned(), heartbeat.clone()]),
        "{everything:?}"
    );
    for lease in identities.items {
        let name = lease.metadata.name.unwrap_or_default();
        assert!(
            everything
                .iter()
                .any(|r| r[..2] == ["kube-system".to_owned(), name.clone()]),
            "{name}: {everything:?}"
        );
    }

    // -n: another namespace; an empty one; a name that is not there.
    let other = rows(&plugin.ok(&kubeconfig, &["get", "-n", &ns2]).await);
    assert_eq!(other.len(), 2, "{other:?}");
    assert_eq!(other[1][..2], ["other", "someone"]);
    let out = plugin.elector(&kubeconfig, &["get", "-n", &empty]).await;
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("No elections found in namespace {empty}.\n")
    );
    let out = plugin.elector(&kubeconfig, &["get", "absent"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: Lease \"absent\" not found in namespace \"{ns}\"\n")
    );

    // A reader of Leases only: Pods, candidates and fences are `?`, each said
    // once on stderr, and the command succeeds.
    let role = plugin.dir.join("lease-reader.yaml");
    std::fs::write(
        &role,
        "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: lease-reader }
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: lease-reader }
subjects: [{ kind: ServiceAccount, name: lease-reader }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: lease-reader }
",
    )
    .expect("write");
    let reader = plugin.dir.join("lease-reader.kubeconfig");
    tokio::task::block_in_place(|| {
        server.kubectl_apply(&ns, &[role]);
        server.write_service_account_kubeconfig(&ns, "lease-reader", &reader);
        let config = server.service_account_config(&ns, "lease-reader");
        server.wait_allowed(&config, &ns, "list", "coordination.k8s.io", "leases");
    });
    let out = plugin.elector(&reader, &["get", "-o", "wide"]).await;
    assert!(out.status.success(), "{out:?}");
    let limited = rows(&String::from_utf8_lossy(&out.stdout));
    let r = row(&limited, "NAME", "live");
    assert_eq!(cell(&limited, r, "HOLDER"), "web-0");
    assert_eq!(cell(&limited, r, "POD"), "?");
    assert_eq!(cell(&limited, r, "FENCE"), "?");
    assert_eq!(cell(&limited, r, "CANDIDATES"), "?");
    let r = row(&limited, "NAME", "done");
    assert_eq!(cell(&limited, r, "POD"), "-", "no holder: nothing to read");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for said in [
        "read Pods",
        "list LeaseCandidates",
        "ValidatingAdmissionPolicies",
    ] {
        assert_eq!(
            stderr.lines().filter(|l| l.contains(said)).count(),
            1,
            "{said}: {stderr}"
        );
    }

    live.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver (bash testing/k8s-server/build.sh) and kubectl (.ci/install); CI runs it"]
async fn describe_shows_the_failover_in_the_leases_events_on_kube_apiserver() {
    let server = server();
    let plugin = Plugin::install("describe");
    let ns = namespace(server);
    let kubeconfig = operator(server, &plugin.dir, &ns);
    describe_after_a_failover(server, &plugin, &kubeconfig, &ns).await;
}

/// Two candidates of this library on `ns/failover` of `server`, the first
/// shut down: `describe` (as the operator of `kubeconfig`, whose namespace is
/// `ns`) shows the second as holder and both `became leader` Events.
async fn describe_after_a_failover(
    server: &dyn Server,
    plugin: &Plugin,
    kubeconfig: &Path,
    ns: &str,
) {
    let kubeconfig = kubeconfig.to_owned();
    let a = candidate(server, ns, "failover", "node-a");
    wait_leading(&a, Duration::from_secs(10)).await;
    let b = candidate(server, ns, "failover", "node-b");
    // node-a stops and releases; node-b takes the released Lease at once.
    a.shutdown().await;
    wait_leading(&b, Duration::from_secs(10)).await;

    // The Events are written in the background: wait for both.
    let start = Instant::now();
    let text = loop {
        let text = plugin.ok(&kubeconfig, &["describe", "failover"]).await;
        if text.contains("node-b became leader") || start.elapsed() > Duration::from_secs(10) {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}:")))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {key}: {text}"))
            .to_owned()
    };
    assert_eq!(value("Name"), "failover");
    assert_eq!(value("Namespace"), ns);
    assert_eq!(value("Holder"), "node-b");
    assert_eq!(value("State"), "held");
    assert_eq!(value("Term"), "1 (leaseTransitions)");
    assert_eq!(value("Lease Duration"), "2s");
    assert_eq!(value("Holder Pod"), "missing (no Pod named as the holder)");
    assert_eq!(value("Candidates"), "<none>");
    assert_eq!(value("Fence"), "<none>");
    let events: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Events:"))
        .skip(1)
        .collect();
    assert_eq!(
        events
            .first()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["Age", "Type", "Reason", "From", "Message"]),
        "{text}"
    );
    let became = |id: &str| {
        events
            .iter()
            .position(|l| l.ends_with(&format!("{id} became leader")))
            .unwrap_or_else(|| panic!("no `{id} became leader`: {text}"))
    };
    assert!(became("node-a") < became("node-b"), "oldest first: {text}");
    let line = events[became("node-b")];
    assert!(
        line.contains(" Normal ") && line.contains(" LeaderElection "),
        "{line}"
    );
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver (bash testing/k8s-server/build.sh) and kubectl (.ci/install); CI runs it"]
async fn r2_release_stops_a_live_leader_of_this_library_on_kube_apiserver() {
    let server = server();
    let plugin = Plugin::install("release");
    let ns = namespace(server);
    let kubeconfig = operator(server, &plugin.dir, &ns);
    release_a_live_leader(server, &plugin, &kubeconfig, &ns).await;
}

/// A leader of this library on `ns/rel` of `server`: `release --dry-run`
/// writes nothing; `release` stops it within two seconds; a Lease with no
/// holder and a missing one are refused.
async fn release_a_live_leader(server: &dyn Server, plugin: &Plugin, kubeconfig: &Path, ns: &str) {
    let kubeconfig = kubeconfig.to_owned();
    let admin = server.client(ADMIN);

    let leader = candidate(server, ns, "rel", "rel-a");
    wait_leading(&leader, Duration::from_secs(10)).await;
    let before = read_lease(&admin, ns, "rel").await;
    let term = before.lease_transitions.unwrap_or(0);

    // --dry-run prints the record and writes nothing.
    let dry = plugin
        .ok(&kubeconfig, &["release", "rel", "--dry-run"])
        .await;
    assert!(dry.contains("holderIdentity: \"\"\n"), "{dry}");
    assert!(dry.contains("leaseDurationSeconds: 1\n"), "{dry}");
    assert!(
        dry.contains(&format!("leaseTransitions: {term}\n")),
        "{dry}"
    );
    assert!(leader.is_leader());
    let unchanged = read_lease(&admin, ns, "rel").await;
    assert_eq!(unchanged.holder_identity.as_deref(), Some("rel-a"));
    assert_eq!(unchanged.lease_transitions.unwrap_or(0), term);

    // The release: the leader stops within two seconds of it.
    let mut states = leader.states();
    let text = plugin.ok(&kubeconfig, &["release", "rel"]).await;
    assert!(
        text.starts_with(&format!(
            "Lease {ns}/rel released: holder \"rel-a\" emptied, term {term} kept (leaseTransitions {term})"
        )),
        "{text}"
    );
    assert!(text.contains("client-go"), "{text}");
    let stopped = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(state) = states.next().await {
            if let Change::Elector(Event::StoppedLeading { reason, .. }) = &state.change {
                return Some(reason.clone());
            }
        }
        None
    })
    .await
    .expect("the leader stops within 2 s of the release");
    assert!(
        matches!(
            &stopped,
            Some(StopReason::ObservedOtherHolder { holder } | StopReason::LostConflict { holder })
                if holder.is_empty()
        ),
        "stopped on seeing its holder emptied: {stopped:?}"
    );
    // Emptied, or taken again (by the only candidate) one term later.
    let after = read_lease(&admin, ns, "rel").await;
    match after.holder_identity.as_deref() {
        None | Some("") => assert_eq!(after.lease_transitions.unwrap_or(0), term),
        Some(_) => assert_eq!(after.lease_transitions.unwrap_or(0), term + 1),
    }

    // A Lease with no holder is refused, as is a Lease that is not there.
    let now = Timestamp::now();
    make_lease(
        &admin,
        ns,
        "free",
        LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            lease_transitions: Some(4),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        },
    )
    .await;
    let out = plugin.elector(&kubeconfig, &["release", "free"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: Lease {ns}/free is already released (it has no holder)\n")
    );
    let out = plugin.elector(&kubeconfig, &["release", "absent"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: Lease \"absent\" not found in namespace \"{ns}\"\n")
    );
    leader.shutdown().await;
}

/// What `release` says of client-go, checked against client-go itself
/// (`testing/client-go-peer`, `tools/leaderelection` as a Go controller runs
/// it): the client-go leader whose Lease is released does not stop leading;
/// its next renewal takes the Lease back as a new term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver and client-go peer (bash testing/k8s-server/build.sh) and kubectl (.ci/install); CI runs it"]
async fn release_of_a_client_go_leader_is_taken_back_as_a_new_term_without_a_stop_on_kube_apiserver()
 {
    let server = server();
    let plugin = Plugin::install("client-go");
    let ns = namespace(server);
    let kubeconfig = operator(server, &plugin.dir, &ns);
    let admin = server.client(ADMIN);
    // client-go's candidate as the mixed-fleet tests run it, its event lines
    // (`started`, `leading`, `tick`, `stopped`, …) read into `log`.
    let log = Log::default();
    let spec = Spec {
        library: Library::ClientGo,
        id: "cg-a".to_owned(),
        lease: "cg".to_owned(),
        namespace: ns.clone(),
        kubeconfig: kubeconfig.clone(),
        timings_ms: (4000, 3000, 500),
        tick_ms: 100,
        coordinated: None,
    };
    let _peer = Peer::spawn(&client_go_peer(), spec, &log).expect("start the client-go peer");
    let leading = log.wait_for(0, Duration::from_secs(15), |l| {
        l.event == PeerEvent::Leading
    });
    assert!(
        leading.await.is_some(),
        "the client-go peer does not lead: {:?}",
        log.lines()
    );
    let before = read_lease(&admin, &ns, "cg").await;
    assert_eq!(before.holder_identity.as_deref(), Some("cg-a"));
    let term = before.lease_transitions.unwrap_or(0);

    let said = plugin.ok(&kubeconfig, &["release", "cg"]).await;
    assert!(said.contains("holder \"cg-a\" emptied"), "{said}");
    assert!(
        said.contains("client-go leader, it does not stop"),
        "{said}"
    );
    assert!(
        said.contains(&format!("(leaseTransitions {})", term + 1)),
        "{said}"
    );

    // Taken back by the same client-go leader within a few retry periods, one
    // term later, and never stopped meanwhile.
    let start = Instant::now();
    loop {
        let now = read_lease(&admin, &ns, "cg").await;
        if now.holder_identity.as_deref() == Some("cg-a") && now.lease_transitions == Some(term + 1)
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "not taken back: {now:?}; {:?}",
            log.lines()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A second after, its leader work still ticks, never having stopped.
    let ticked = mono_now();
    let tick = log.wait_for(ticked, Duration::from_secs(1), |l| {
        l.event == PeerEvent::Tick
    });
    assert!(tick.await.is_some(), "{:?}", log.lines());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let events: Vec<PeerEvent> = log.lines().into_iter().map(|l| l.event).collect();
    assert!(!events.contains(&PeerEvent::Stopped), "{events:?}");
    assert_eq!(
        events.iter().filter(|e| **e == PeerEvent::Leading).count(),
        1,
        "{events:?}"
    );
}
