//! The quick start as an operator runs it (the README's snippet as a program,
//! docs/design.md §8): the example binary against the API emulator, with `KUBECONFIG`
//! pointing at it and `ELECTION_IDENTITY` set, as `deploy/quickstart.yaml` runs
//! it. It serves its probes, leads (after the strict lock delay of one lease,
//! the Lease being new) and shows its last renew in `/status`; SIGTERM makes it
//! cancel its work and release the Lease, and it exits 0. Every request it made
//! is granted by the Role of `deploy/rbac.yaml`, and the Role grants nothing it
//! did not use. The same run against a real kube-apiserver
//! (`test_kit::apiserver`), as the ServiceAccount `quickstart` after `kubectl
//! apply -f deploy/rbac.yaml -f deploy/quickstart.yaml -f deploy/pdb.yaml`, as
//! the manifest's header says: under kube-apiserver's RBAC that Role is
//! enough. The README's quick start is the example, byte for byte.

use std::process::Stdio;
use std::time::Duration;

use kube_emulator::{Emulator, Resource, Verb};
use test_kit::apiserver::{ApiServer, Server};
use test_kit::rbac::{not_granted, role_rules, unused};
mod support;

use support::{example_binary, read_until};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Command;

const IDENTITY: &str = "quickstart-a";

/// The deployed Role.
const RBAC_YAML: &str = include_str!("../../deploy/rbac.yaml");

/// The status line and body of `GET path` on the probes at `addr`.
async fn probe(addr: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).await.expect("the probes listen");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    let status = answer.lines().next().unwrap_or("").to_owned();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

fn holder(server: &dyn Server, ns: &str) -> Option<String> {
    let lease = server.object(Resource::Lease, ns, "quickstart")?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// A temporary directory for `tag`.
fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kube-elector-quickstart-{tag}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_leads_then_releases_on_sigterm_and_exits_0() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = temp_dir("emu");
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, IDENTITY)
        .expect("kubeconfig");
    leads_then_releases(&emu, "default", &kubeconfig).await;
    let _ = std::fs::remove_dir_all(&dir);

    // The Role of deploy/rbac.yaml grants every request, and no more.
    let counts = emu.request_counts();
    let rules = role_rules(RBAC_YAML);
    assert_eq!(
        not_granted(&counts, IDENTITY, &rules),
        [],
        "rules: {rules:?}"
    );
    assert_eq!(unused(&counts, IDENTITY, &rules), [], "rules: {rules:?}");
    // A Role without one of its verbs would fail the check above.
    for verb in ["get", "create", "update", "watch"] {
        let narrower = RBAC_YAML
            .replace(&format!("\"{verb}\", "), "")
            .replace(&format!(", \"{verb}\""), "");
        assert_ne!(narrower, RBAC_YAML, "{verb} is in the Role");
        let missing = not_granted(&counts, IDENTITY, &role_rules(&narrower));
        assert!(
            missing
                .iter()
                .any(|(v, r)| v.as_str() == verb && *r == Resource::Lease),
            "without {verb}: {missing:?}"
        );
    }
    let without_events = RBAC_YAML.replace("resources: [\"events\"]", "resources: []");
    assert_eq!(
        not_granted(&counts, IDENTITY, &role_rules(&without_events)),
        [(Verb::Create, Resource::Event)]
    );
}

/// The quick start on kube-apiserver, in a namespace where the operator ran
/// `kubectl apply -n <namespace> -f deploy/rbac.yaml -f deploy/quickstart.yaml
/// -f deploy/pdb.yaml` (its header's command), authenticated as the
/// ServiceAccount `quickstart` those bind to the Role (a token the server
/// issued): it leads, renews, releases, with no error in `/status`, and its
/// leadership Event is stored. Nothing else grants it anything: it may not
/// delete the Lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn quickstart_leads_then_releases_on_sigterm_and_exits_0_on_kube_apiserver() {
    let server = ApiServer::shared();
    let dir = temp_dir("kas");
    let kubeconfig = dir.join("kubeconfig");
    let ns = tokio::task::block_in_place(|| {
        let ns = server.namespace();
        let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
        server.kubectl_apply(
            &ns,
            &["rbac.yaml", "quickstart.yaml", "pdb.yaml"].map(|f| deploy.join(f)),
        );
        server.write_service_account_kubeconfig(&ns, "quickstart", &kubeconfig);
        let account = server.service_account_config(&ns, "quickstart");
        server.wait_allowed(&account, &ns, "create", "coordination.k8s.io", "leases");
        assert!(
            !server.allowed(&account, &ns, "delete", "coordination.k8s.io", "leases"),
            "the account has more than the Role"
        );
        ns
    });
    leads_then_releases(server, &ns, &kubeconfig).await;
    let events = tokio::task::block_in_place(|| server.objects(Resource::Event, &ns));
    assert!(
        events
            .iter()
            .any(|e| e["involvedObject"]["name"] == "quickstart"
                && e["message"] == format!("{IDENTITY} became leader")),
        "the leadership Event is stored: {events:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The quick start with `kubeconfig` (its context's namespace `ns`): it serves
/// its probes, leads, renews, and on SIGTERM stops its work, releases the
/// Lease and exits 0; `/status` names no error.
async fn leads_then_releases(server: &dyn Server, ns: &str, kubeconfig: &std::path::Path) {
    let mut child = Command::new(example_binary("quickstart"))
        .env("KUBECONFIG", kubeconfig)
        .env("ELECTION_IDENTITY", IDENTITY)
        .env("PROBE_ADDR", "127.0.0.1:0")
        .env_remove("POD_NAME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the quick start");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let started = tokio::time::timeout(
        Duration::from_secs(30),
        read_until(&mut lines, "probes on http://"),
    )
    .await
    .expect("it serves its probes within 30 s (an example binary older than the test does not)");
    let probes = started
        .last()
        .and_then(|l| l.strip_prefix("probes on http://"))
        .expect("the line names the address")
        .to_owned();
    for path in ["/healthz", "/readyz"] {
        let (status, body) = probe(&probes, path).await;
        assert_eq!(
            (status.as_str(), body.as_str()),
            ("HTTP/1.1 200 OK", "ok"),
            "{path} while campaigning"
        );
    }

    let (_, body) = probe(&probes, "/status").await;
    let status: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        status["last_renew_unix_secs"],
        serde_json::Value::Null,
        "no renew before leading: {status}"
    );

    // A new Lease: its creator leads one lease duration (15 s) after the create.
    let led = tokio::time::timeout(
        Duration::from_secs(60),
        read_until(&mut lines, "leading in term"),
    )
    .await
    .expect("it leads within a minute");
    assert_eq!(
        tokio::task::block_in_place(|| holder(server, ns)).as_deref(),
        Some(IDENTITY),
        "{led:?}"
    );
    let (status, body) = probe(&probes, "/healthz").await;
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ok"),
        "/healthz while leading"
    );
    // `/status` shows the last renew while leading (the monitor wired in): the
    // first renew comes one retry period (2 s) after the takeover.
    let renewed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let (_, body) = probe(&probes, "/status").await;
            let status: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            if status["last_renew_unix_secs"].is_number() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("/status shows a renew within 10 s of leading");
    assert_eq!(renewed["is_leader"], true, "{renewed}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    let renew = renewed["last_renew_unix_secs"].as_f64().expect("a number");
    assert!(
        renew <= now && now - renew < 10.0,
        "the last renew, {renew}, is recent (now {now})"
    );

    // No lock call, watch or Event failed so far (a refused request would be
    // the last error).
    let (_, body) = probe(&probes, "/status").await;
    let before: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        before["last_error"],
        serde_json::Value::Null,
        "no error while leading: {before}"
    );
    support::signal(child.id().expect("running"), rustix::process::Signal::TERM);
    let rest = tokio::time::timeout(Duration::from_secs(20), async {
        let mut rest = Vec::new();
        while let Some(line) = lines.next_line().await.expect("stdout") {
            rest.push(line);
        }
        rest
    })
    .await
    .expect("stdout ends after SIGTERM");
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("it exits after SIGTERM")
        .expect("its status");
    assert!(
        status.success(),
        "{status:?}, output after SIGTERM: {rest:?}"
    );
    let term = led
        .last()
        .and_then(|l| l.strip_prefix("leading in term "))
        .expect("the line names the term");
    assert_eq!(
        rest,
        [
            format!("stopped leading in term {term}"),
            "released; exiting".into()
        ],
        "the work was cancelled and awaited before the release"
    );
    assert_eq!(
        tokio::task::block_in_place(|| holder(server, ns)).as_deref(),
        Some(""),
        "the Lease is released"
    );
}

/// The README's quick start is `examples/quickstart.rs`, which CI compiles and
/// the test above runs (and the README's doctests compile, `no_run`).
#[test]
fn the_readme_quick_start_is_the_example() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../examples/quickstart.rs");
    let block = readme
        .split("## Quick start")
        .nth(1)
        .and_then(|rest| rest.split("```rust,no_run\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("a ```rust,no_run block in the README's quick start");
    assert_eq!(
        block, example,
        "README.md's quick start differs from examples/quickstart.rs"
    );
    let lines = example.lines().count();
    assert!(
        lines <= 40,
        "the quick start has {lines} lines (40 at most)"
    );
}
