//! The manifests of `deploy/` as a real API server takes them: `kubectl apply
//! --dry-run=server -R -f deploy/` against the API emulator, which checks each
//! object's fields and their JSON types against the kind's schema (as the API
//! server's strict decoding does for kubectl) and the validation rules a
//! manifest most often breaks (a selector that does not match the template's
//! labels, a container without an image); and the same code against a real
//! kube-apiserver (`test_kit::apiserver`), which must take the manifests and
//! refuse the broken ones in the same words. A manifest with a misspelled
//! field, or with a selector that selects nothing of its own, is refused: the
//! check can fail. Uses kubectl as the client; it fails, saying so, where
//! kubectl is not installed.

use std::path::{Path, PathBuf};
use std::process::Output;

use kube_emulator::{Emulator, Resource};
use test_kit::apiserver::{ADMIN, ApiServer, Server};

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

/// Where a check runs: a server, a namespace of its own on it, and a
/// temporary directory with a kubeconfig for kubectl whose context's namespace
/// is that one (the operator on the emulator, the admin on kube-apiserver).
struct Target<'a> {
    server: &'a dyn Server,
    ns: String,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Drop for Target<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A temporary directory for `test` on `server`.
fn temp_dir(server: &dyn Server, test: &str) -> PathBuf {
    let tag = if server.name() == "emulator" {
        "emu"
    } else {
        "kas"
    };
    let dir =
        std::env::temp_dir().join(format!("kube-elector-{test}-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The emulator, in its `default` namespace.
fn on_emulator<'a>(emu: &'a Emulator, test: &str) -> Target<'a> {
    let dir = temp_dir(emu, test);
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, "operator")
        .expect("kubeconfig");
    Target {
        server: emu,
        ns: Server::namespace(emu),
        dir,
        kubeconfig,
    }
}

/// The shared kube-apiserver, in a new namespace.
fn on_apiserver(server: &'static ApiServer, test: &str) -> Target<'static> {
    let dir = temp_dir(server, test);
    let kubeconfig = dir.join("kubeconfig");
    let ns = server.namespace();
    server.write_kubeconfig(ADMIN, &ns, &kubeconfig);
    Target {
        server,
        ns,
        dir,
        kubeconfig,
    }
}

/// `kubectl apply --dry-run=server -R -f deploy/` creates every object of
/// `deploy/` once, as the server's dry run, and stores none of them.
fn every_manifest_passes_a_server_dry_run(at: &Target<'_>) {
    let deploy = deploy_dir();
    let deploy = deploy.to_str().expect("a UTF-8 path");
    let out = kubectl(
        &at.kubeconfig,
        &["apply", "--dry-run=server", "-R", "-f", deploy],
    );
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{}: kubectl apply --dry-run=server -R -f deploy/ failed:\n{}{stdout}",
        at.server.name(),
        text(&out.stderr)
    );
    let mut applied: Vec<String> = stdout
        .lines()
        .map(|l| {
            l.strip_suffix(" created (server dry run)")
                .unwrap_or_else(|| panic!("{}: a created object: {l:?}", at.server.name()))
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
            at.server.object(r, &at.ns, name),
            None,
            "{}: a dry run stores nothing",
            at.server.name()
        );
    }
}

/// The check above can fail: a misspelled field, a field of the wrong type, a
/// selector that does not select the template's Pods, and a Role's rule
/// without verbs are each refused, with kube-apiserver's words (on both
/// servers).
fn a_broken_manifest_is_refused(at: &Target<'_>) {
    let breakages = [
        (
            "quickstart.yaml",
            "livenessProbe:",
            "livenesProbe:",
            r#"unknown field "spec.template.spec.containers[0].livenesProbe""#,
        ),
        (
            "quickstart.yaml",
            "terminationGracePeriodSeconds: 15",
            "terminationGracePeriodSeconds: \"15\"",
            "cannot unmarshal string into Go struct field PodSpec.spec.template.spec.terminationGracePeriodSeconds of type int64",
        ),
        (
            "quickstart.yaml",
            "    matchLabels: { app.kubernetes.io/name: quickstart }",
            "    matchLabels: { app.kubernetes.io/name: other }",
            "`selector` does not match template `labels`",
        ),
        (
            "rbac.yaml",
            r#"verbs: ["create"]"#,
            "verbs: []",
            r#"The Role "leader-election" is invalid: rules[1].verbs: Required value: verbs must contain at least one value"#,
        ),
    ];
    for (i, (file, from, to, message)) in breakages.into_iter().enumerate() {
        let manifest = std::fs::read_to_string(deploy_dir().join(file)).expect("a manifest");
        let broken = manifest.replacen(from, to, 1);
        assert_ne!(broken, manifest, "{from:?} is in {file}");
        let path = at.dir.join(format!("broken-{i}.yaml"));
        std::fs::write(&path, broken).expect("write");
        let out = kubectl(
            &at.kubeconfig,
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
            "{}: {to:?} was taken: {}",
            at.server.name(),
            text(&out.stdout)
        );
        assert!(
            stderr.contains(message),
            "{}: {to:?}: {stderr}\nwanted: {message}",
            at.server.name()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-elector --test deploy -- --ignored"]
async fn every_manifest_passes_a_server_dry_run_and_nothing_is_stored() {
    let emu = Emulator::start().await.expect("emulator");
    let at = on_emulator(&emu, "deploy");
    tokio::task::block_in_place(|| every_manifest_passes_a_server_dry_run(&at));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p kube-elector --test deploy -- --ignored"]
async fn a_broken_manifest_is_refused_by_the_dry_run() {
    let emu = Emulator::start().await.expect("emulator");
    let at = on_emulator(&emu, "broken");
    tokio::task::block_in_place(|| a_broken_manifest_is_refused(&at));
}

/// The same dry run against kube-apiserver: it takes every manifest of
/// `deploy/` and stores none.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn every_manifest_passes_a_server_dry_run_on_kube_apiserver() {
    every_manifest_passes_a_server_dry_run(&on_apiserver(ApiServer::shared(), "deploy"));
}

/// kube-apiserver refuses the three broken manifests in the words the
/// emulator's test expects.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn a_broken_manifest_is_refused_by_the_dry_run_on_kube_apiserver() {
    a_broken_manifest_is_refused(&on_apiserver(ApiServer::shared(), "broken"));
}

/// The objects of one manifest set that refer to others: each RoleBinding's
/// Role and ServiceAccounts, each Deployment's ServiceAccount. `kind/name`
/// strings.
struct Refs {
    defined: Vec<String>,
    needed: Vec<(String, String)>,
}

/// What the manifests `files` (names in `deploy/`) define, and what they refer to
/// (the referrer, then the object referred to).
fn refs(files: &[&str]) -> Refs {
    let mut defined = Vec::new();
    let mut needed = Vec::new();
    for file in files {
        let yaml = std::fs::read_to_string(deploy_dir().join(file))
            .unwrap_or_else(|e| panic!("deploy/{file}: {e}"));
        for doc in yaml.split("\n---\n") {
            let kind = doc
                .lines()
                .find_map(|l| l.strip_prefix("kind: "))
                .unwrap_or_else(|| panic!("deploy/{file}: a kind"));
            let name = doc
                .lines()
                .skip_while(|l| *l != "metadata:")
                .find_map(|l| l.trim().strip_prefix("name: "))
                .unwrap_or_else(|| panic!("deploy/{file}: a name"));
            let this = format!("{kind}/{name}");
            // A value on the line after `key`, indented under it.
            let under = |key: &str| -> Vec<String> {
                let mut lines = doc.lines().skip_while(|l| l.trim() != key).skip(1);
                let mut out = Vec::new();
                for l in lines.by_ref() {
                    if !l.starts_with("  ") {
                        break;
                    }
                    if let Some(v) = l.trim().trim_start_matches("- ").strip_prefix("name: ") {
                        out.push(v.split(" #").next().unwrap_or(v).trim().to_owned());
                    }
                }
                out
            };
            match kind {
                "RoleBinding" => {
                    for role in under("roleRef:") {
                        needed.push((this.clone(), format!("Role/{role}")));
                    }
                    for sa in under("subjects:") {
                        needed.push((this.clone(), format!("ServiceAccount/{sa}")));
                    }
                }
                "Deployment" => {
                    for sa in doc
                        .lines()
                        .filter_map(|l| l.trim().strip_prefix("serviceAccountName: "))
                    {
                        needed.push((this.clone(), format!("ServiceAccount/{sa}")));
                    }
                }
                _ => {}
            }
            defined.push(this);
        }
    }
    Refs { defined, needed }
}

/// What `files` refer to and do not define.
fn missing(files: &[&str]) -> Vec<(String, String)> {
    let r = refs(files);
    r.needed
        .into_iter()
        .filter(|(_, to)| !r.defined.contains(to))
        .collect()
}

/// Every `kubectl apply -n <namespace> -f deploy/… -f deploy/…` the manifests'
/// headers, the README and the guide's pages (`docs/guide/production.md` holds
/// the table) give, as its list of files (placeholders skipped).
fn documented_sets() -> Vec<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut texts = vec![std::fs::read_to_string(root.join("README.md")).expect("README.md")];
    for entry in std::fs::read_dir(root.join("docs/guide")).expect("docs/guide/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            texts.push(std::fs::read_to_string(path).expect("a guide page"));
        }
    }
    for entry in std::fs::read_dir(deploy_dir()).expect("deploy/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            texts.push(std::fs::read_to_string(path).expect("a manifest"));
        }
    }
    let mut sets = Vec::new();
    for text in texts {
        for line in text.lines() {
            let Some((_, command)) = line.split_once("kubectl apply -n <namespace>") else {
                continue;
            };
            let files: Vec<String> = command
                .split_whitespace()
                .filter_map(|w| w.trim_end_matches('`').strip_prefix("deploy/"))
                .filter(|f| f.ends_with(".yaml"))
                .map(str::to_owned)
                .collect();
            if !files.is_empty() && !sets.contains(&files) {
                sets.push(files);
            }
        }
    }
    sets
}

/// Each set of manifests the documents tell a user to apply together stands on
/// its own: every Role a RoleBinding names and every ServiceAccount a binding or
/// a Deployment names is in the set (a RoleBinding to a missing Role is accepted
/// by the API server and grants nothing: the Pods then fail every Lease call).
/// The check can fail: a set without `rbac.yaml` is refused.
#[test]
fn every_documented_set_of_manifests_defines_what_it_refers_to() {
    let sets = documented_sets();
    for wanted in ["quickstart.yaml", "sidecar.yaml", "run-mode.yaml"] {
        assert!(
            sets.iter().any(|s| s.iter().any(|f| f == wanted)),
            "no documented command applies {wanted}: {sets:?}"
        );
    }
    for set in &sets {
        let files: Vec<&str> = set.iter().map(String::as_str).collect();
        assert_eq!(missing(&files), [], "kubectl apply -f {files:?}");
        let alone: Vec<&str> = files
            .iter()
            .copied()
            .filter(|f| *f != "rbac.yaml")
            .collect();
        if !alone.is_empty() && alone.len() < files.len() {
            assert!(
                missing(&alone)
                    .iter()
                    .any(|(_, to)| to == "Role/leader-election"),
                "without rbac.yaml, {alone:?} should lack the Role"
            );
        }
    }
}

/// The Role a Lease election needs has one content: `lock_lease::RBAC_YAML`
/// (`lock-lease/rbac.yaml`, published with the crate) grants what
/// `deploy/rbac.yaml` grants (the Role CI runs the quick start and the sidecars
/// under), rule for rule; only their comments differ.
#[test]
fn the_lease_locks_role_is_deploys_role() {
    fn rules(yaml: &str) -> Vec<String> {
        let role = yaml
            .split("\n---\n")
            .find(|doc| doc.lines().any(|l| l == "kind: Role"))
            .expect("a Role");
        role.lines()
            .map(str::trim)
            .filter(|l| {
                ["- apiGroups:", "resources:", "verbs:"]
                    .iter()
                    .any(|k| l.starts_with(k))
            })
            .map(str::to_owned)
            .collect()
    }
    let deploy = std::fs::read_to_string(deploy_dir().join("rbac.yaml")).expect("deploy/rbac.yaml");
    let published = rules(kube_elector::lease::RBAC_YAML);
    assert_eq!(
        published.len(),
        6,
        "two rules of three lines: {published:?}"
    );
    assert_eq!(
        published,
        rules(&deploy),
        "lock-lease/rbac.yaml and deploy/rbac.yaml grant different things"
    );
}
