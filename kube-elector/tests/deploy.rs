//! The manifests of `deploy/` as a real API server takes them: `kubectl apply
//! --dry-run=server -f deploy/` against the API emulator, which checks each
//! object's fields and their JSON types against the kind's schema (as the API
//! server's strict decoding does for kubectl) and the validation rules a
//! manifest most often breaks (a selector that does not match the template's
//! labels, a container without an image). A manifest with a misspelled field,
//! or with a selector that selects nothing of its own, is refused: the check
//! can fail. Uses kubectl as the client; it fails, saying so, where kubectl is
//! not installed.

use std::path::{Path, PathBuf};
use std::process::Output;

use kube_emulator::{Emulator, Resource};

/// The workspace's `deploy/` folder.
fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// `kubectl --kubeconfig <kubeconfig> <args>`, its cache beside the kubeconfig.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    kube_emulator::kubectl(kubeconfig)
        .args(args)
        .output()
        .unwrap_or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                panic!("kubectl is not installed: this test uses it as the client")
            }
            _ => panic!("kubectl could not be run: {e}"),
        })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every object of `deploy/`, as `kind/name` in kubectl's lower-case form.
fn objects() -> Vec<String> {
    let mut objects = Vec::new();
    for entry in std::fs::read_dir(deploy_dir()).expect("deploy/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let yaml = std::fs::read_to_string(&path).expect("a manifest");
        for doc in yaml.split("\n---\n") {
            let field = |key: &str| {
                doc.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(|v| v.trim().to_owned())
            };
            let kind = field("kind: ").expect("a kind");
            let name = doc
                .lines()
                .skip_while(|l| *l != "metadata:")
                .find_map(|l| l.trim().strip_prefix("name: "))
                .expect("a name");
            let group = field("apiVersion: ")
                .and_then(|v| v.split_once('/').map(|(g, _)| g.to_owned()))
                .filter(|g| !g.is_empty());
            let kind = kind.to_lowercase();
            objects.push(match group {
                Some(g) => format!("{kind}.{g}/{name}"),
                None => format!("{kind}/{name}"),
            });
        }
    }
    objects.sort();
    objects
}

/// An emulator, and a temporary directory `test` with its kubeconfig for kubectl.
async fn emulator(test: &str) -> (Emulator, PathBuf, PathBuf) {
    let emu = Emulator::start().await.expect("emulator");
    let dir = std::env::temp_dir().join(format!("kube-elector-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, "operator")
        .expect("kubeconfig");
    (emu, dir, kubeconfig)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-elector --test deploy -- --ignored"]
async fn every_manifest_passes_a_server_dry_run_and_nothing_is_stored() {
    let (emu, dir, kubeconfig) = emulator("deploy").await;
    let deploy = deploy_dir();
    let deploy = deploy.to_str().expect("a UTF-8 path");

    let out = kubectl(&kubeconfig, &["apply", "--dry-run=server", "-f", deploy]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl apply --dry-run=server -f deploy/ failed:\n{}{stdout}",
        text(&out.stderr)
    );
    let mut applied: Vec<String> = stdout
        .lines()
        .map(|l| {
            l.strip_suffix(" created (server dry run)")
                .unwrap_or_else(|| panic!("a created object: {l:?}"))
                .to_owned()
        })
        .collect();
    applied.sort();
    let expected = objects();
    assert_eq!(applied, expected, "every object of deploy/, once");
    for kind in [
        "deployment.apps/quickstart",
        "poddisruptionbudget.policy/quickstart",
        "role.rbac.authorization.k8s.io/leader-election",
        "rolebinding.rbac.authorization.k8s.io/quickstart-leader-election",
        "serviceaccount/quickstart",
        "deployment.apps/my-app",
    ] {
        assert!(expected.iter().any(|o| o == kind), "{kind} in {expected:?}");
    }
    for (r, name) in [
        (Resource::Deployment, "quickstart"),
        (Resource::Role, "leader-election"),
        (Resource::ServiceAccount, "quickstart"),
    ] {
        assert_eq!(
            emu.object(r, "default", name),
            None,
            "a dry run stores nothing"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The check above can fail: a misspelled field, a field of the wrong type, and
/// a selector that does not select the template's Pods are each refused, with
/// the API server's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-elector --test deploy -- --ignored"]
async fn a_broken_manifest_is_refused_by_the_dry_run() {
    let (_emu, dir, kubeconfig) = emulator("broken").await;
    let manifest =
        std::fs::read_to_string(deploy_dir().join("quickstart.yaml")).expect("quickstart.yaml");
    let breakages = [
        (
            "livenessProbe:",
            "livenesProbe:",
            r#"unknown field "spec.template.spec.containers[0].livenesProbe""#,
        ),
        (
            "terminationGracePeriodSeconds: 15",
            "terminationGracePeriodSeconds: \"15\"",
            "cannot unmarshal string into Go struct field PodSpec.spec.template.spec.terminationGracePeriodSeconds of type int64",
        ),
        (
            "    matchLabels: { app.kubernetes.io/name: quickstart }",
            "    matchLabels: { app.kubernetes.io/name: other }",
            "`selector` does not match template `labels`",
        ),
    ];
    for (i, (from, to, message)) in breakages.into_iter().enumerate() {
        let broken = manifest.replacen(from, to, 1);
        assert_ne!(broken, manifest, "{from:?} is in quickstart.yaml");
        let path = dir.join(format!("broken-{i}.yaml"));
        std::fs::write(&path, broken).expect("write");
        let out = kubectl(
            &kubeconfig,
            &[
                "apply",
                "--dry-run=server",
                "-f",
                path.to_str().expect("UTF-8"),
            ],
        );
        let stderr = text(&out.stderr);
        assert!(
            !out.status.success(),
            "{to:?} was taken: {}",
            text(&out.stdout)
        );
        assert!(
            stderr.contains(message),
            "{to:?}: {stderr}\nwanted: {message}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
