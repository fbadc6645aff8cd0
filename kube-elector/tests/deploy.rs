//! The manifests of `deploy/` as a real API server takes them: `kubectl apply
//! --dry-run=server -f deploy/` against kube-apiserver
//! (`test_kit::apiserver`), which must take every manifest and store none,
//! and refuse broken ones: a manifest with a misspelled field, a string for
//! an integer, a selector that selects nothing of its own or a Role's rule
//! without verbs is refused, so the check can fail. Also: the manifests of
//! each documented set define what they refer to, and the Lease lock's Role
//! is deploy's. Uses kubectl as the client; it fails, saying so, where
//! kubectl is not installed.

use std::path::{Path, PathBuf};
use std::process::Output;

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

/// Where a check runs: the shared kube-apiserver, a namespace of its own on
/// it, and a temporary directory with a kubeconfig for kubectl whose
/// context's namespace is that one, as the admin.
struct Target {
    ns: String,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A new namespace of the shared kube-apiserver for `test`.
fn on_apiserver(test: &str) -> Target {
    let server = ApiServer::shared();
    let dir = std::env::temp_dir().join(format!("kube-elector-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    let ns = server.namespace();
    server.write_kubeconfig(ADMIN, &ns, &kubeconfig);
    Target {
        ns,
        dir,
        kubeconfig,
    }
}

/// `kubectl apply --dry-run=server -f deploy/` creates every object of
/// `deploy/` once, as the server's dry run, and stores none of them. Not
/// recursive: `deploy/monitoring/` holds a Prometheus Operator object, a
/// Grafana dashboard and promtool's tests, for which kube-apiserver has no
/// kinds (election-ops' `tests/monitoring.rs` checks them).
fn every_manifest_passes_a_server_dry_run(at: &Target) {
    let deploy = deploy_dir();
    let deploy = deploy.to_str().expect("a UTF-8 path");
    let out = kubectl(&at.kubeconfig, &["apply", "--dry-run=server", "-f", deploy]);
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
    let stored = kubectl(
        &at.kubeconfig,
        &[
            "get",
            "-n",
            &at.ns,
            "--ignore-not-found",
            "-o",
            "name",
            "deployment/quickstart",
            "role/leader-election",
            "serviceaccount/quickstart",
        ],
    );
    assert!(stored.status.success(), "{}", text(&stored.stderr));
    assert_eq!(text(&stored.stdout), "", "a dry run stores nothing");
}

/// The check above can fail: a misspelled field, a field of the wrong type, a
/// selector that does not select the template's Pods, and a Role's rule
/// without verbs are each refused, in kube-apiserver's words.
fn a_broken_manifest_is_refused(at: &Target) {
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
            "{to:?} was taken: {}",
            text(&out.stdout)
        );
        assert!(
            stderr.contains(message),
            "{to:?}: {stderr}\nwanted: {message}"
        );
    }
}

/// kube-apiserver takes every manifest of `deploy/` as a dry run and stores
/// none.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn every_manifest_passes_a_server_dry_run_on_kube_apiserver() {
    every_manifest_passes_a_server_dry_run(&on_apiserver("deploy"));
}

/// kube-apiserver refuses the four broken manifests in the words expected.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn a_broken_manifest_is_refused_by_the_dry_run_on_kube_apiserver() {
    a_broken_manifest_is_refused(&on_apiserver("broken"));
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
