//! Helpers the binary tests share: temporary directories, the sidecar's HTTP
//! endpoint, signals and process checks, and [`Site`], the server a story
//! runs its sidecars against (the emulator or a real kube-apiserver).
#![allow(dead_code)] // each test file uses some of them

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube_emulator::Emulator;
use test_kit::apiserver::{ApiServer, Server};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// The sidecar binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_leader-elector");

/// Runs the sidecar binary with `args`, with no usable kube config.
pub fn run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN)
        .args(args)
        .env("KUBECONFIG", "/nonexistent/leader-elector-tests/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the sidecar")
}

/// Runs kubectl with `kubeconfig` and `stdin`; its output, whatever its status.
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    kube_emulator::kubectl_output(kubeconfig, args, Some(stdin)).unwrap_or_else(|e| {
        match e.kind() {
            std::io::ErrorKind::NotFound => {
                panic!("kubectl is not installed: this test uses it as the client")
            }
            _ => panic!("kubectl could not be run: {e}"),
        }
    })
}

/// Applies the fencing policy of the Lease `<ns>/<lease>` over ConfigMaps, as
/// `fence-policy` prints it with `flags`, with kubectl as the site's operator.
pub fn apply_policy(site: &Site<'_>, lease: &str, flags: &[&str]) {
    let mut args = vec![
        "--namespace",
        &site.ns,
        "fence-policy",
        "--lease",
        lease,
        "--protect",
        "v1/configmaps",
    ];
    args.extend_from_slice(flags);
    let printed = run(&args);
    assert!(printed.status.success(), "{printed:?}");
    let yaml = String::from_utf8(printed.stdout).expect("UTF-8");
    // The emulator serves no OpenAPI documents for kubectl's validation.
    let validate = if site.server.is_emulator() {
        "--validate=false"
    } else {
        "--validate=strict"
    };
    let out = kubectl(&site.operator, &["apply", validate, "-f", "-"], &yaml);
    assert!(out.status.success(), "{out:?}");
}

/// A fresh temporary directory for one test.
pub fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leader-elector-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A free address on 127.0.0.1.
pub fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    format!("127.0.0.1:{port}")
}

/// `GET path`: the status line and the body.
pub async fn get_path(addr: &str, path: &str) -> Option<(String, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_owned(), body.to_owned()))
}

/// `GET /`: the body.
pub async fn get(addr: &str) -> Option<String> {
    get_path(addr, "/").await.map(|(_, body)| body)
}

/// `kubeconfig` with its server's address replaced by `proxy`'s (the server
/// is on 127.0.0.1: only the port changes; TLS passes through the proxy).
pub fn through(kubeconfig: &Path, proxy: std::net::SocketAddr) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig).expect("read the kubeconfig");
    let at = text.find("127.0.0.1:").expect("a server on 127.0.0.1") + "127.0.0.1:".len();
    let digits = text[at..].chars().take_while(char::is_ascii_digit).count();
    let proxied = format!("{}{}{}", &text[..at], proxy.port(), &text[at + digits..]);
    let path = kubeconfig.with_extension(format!("proxied-{}", proxy.port()));
    std::fs::write(&path, proxied).expect("write the kubeconfig");
    path
}

/// The server's address as `kubeconfig` names it.
pub fn server_of(kubeconfig: &Path) -> std::net::SocketAddr {
    let text = std::fs::read_to_string(kubeconfig).expect("read the kubeconfig");
    let at = text.find("127.0.0.1:").expect("a server on 127.0.0.1");
    let end = at
        + "127.0.0.1:".len()
        + text[at + "127.0.0.1:".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
    text[at..end].parse().expect("an address")
}

/// The timing flags of every sidecar the tests start: a 2 s lease, a 1.5 s
/// renew deadline, a 250 ms retry period.
pub const FAST: [&str; 6] = [
    "--lease-duration",
    "2s",
    "--renew-deadline",
    "1.5s",
    "--retry-period",
    "250ms",
];

/// A `serve` sidecar `id` on the Lease `lease`, with `kubeconfig`, serving on
/// `addr`, on a 2 s lease (renew deadline 1.5 s, retry 250 ms); stdin closed,
/// its other streams the caller's to set.
pub fn serve(kubeconfig: &Path, id: &str, lease: &str, addr: &str) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(FAST)
        .args(["--identity", id])
        .args(["serve", "--lease", lease, "--addr", addr])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    command
}

/// `GET /status`, parsed (`null` when the sidecar does not answer).
pub async fn status(addr: &str) -> serde_json::Value {
    match get_path(addr, "/status").await {
        Some((_, body)) => serde_json::from_str(&body).expect("JSON status"),
        None => serde_json::Value::Null,
    }
}

/// Polls `/status` until the sidecar serving on `addr` leads (within `within`);
/// the last status seen.
pub async fn wait_leading(addr: &str, within: Duration) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let status = status(addr).await;
        if status["is_leader"] == true || start.elapsed() > within {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn pid_of(child: &Child) -> rustix::process::Pid {
    rustix::process::Pid::from_raw(child.id().expect("running") as i32).expect("pid")
}

/// Sends the sidecar SIGTERM.
pub fn sigterm(child: &Child) {
    rustix::process::kill_process(pid_of(child), rustix::process::Signal::TERM).expect("kill");
}

/// Sends the sidecar SIGKILL.
pub fn sigkill(child: &Child) {
    rustix::process::kill_process(pid_of(child), rustix::process::Signal::KILL).expect("kill");
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet: it runs no more).
pub fn gone(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) state …`: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits up to `within` for process `pid` to be gone; whether it is.
pub async fn wait_gone(pid: u64, within: Duration) -> bool {
    let start = Instant::now();
    while !gone(pid) && start.elapsed() < within {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gone(pid)
}

/// Where a story runs its sidecars: a server, a namespace on it, a temporary
/// directory, the kubeconfig each sidecar is given and an operator's (for
/// kubectl and reads).
pub struct Site<'a> {
    pub server: &'a dyn Server,
    pub ns: String,
    pub dir: PathBuf,
    /// kubectl's kubeconfig: an operator, the namespace `ns`.
    pub operator: PathBuf,
    accounts: Accounts<'a>,
}

enum Accounts<'a> {
    /// Each sidecar's own token on the emulator, named after its identity.
    Emulator(&'a Emulator),
    /// One ServiceAccount's kubeconfig on kube-apiserver, for every sidecar
    /// (the Pods of one Deployment share it).
    Account(PathBuf),
}

impl<'a> Site<'a> {
    /// The emulator, in its `default` namespace.
    pub fn emulator(emu: &'a Emulator, test: &str) -> Site<'a> {
        let dir = temp(&format!("{test}-emu"));
        let operator = dir.join("operator.kubeconfig");
        emu.write_kubeconfig(&operator, "operator")
            .expect("kubeconfig");
        Site {
            server: emu,
            ns: Server::namespace(emu),
            dir,
            operator,
            accounts: Accounts::Emulator(emu),
        }
    }

    /// kube-apiserver, in a new namespace where `kubectl apply -n <namespace>
    /// -f deploy/<manifest>…` has run with `manifests`, as their headers say:
    /// every sidecar runs as the ServiceAccount `account` they bind to their
    /// Role, with a token the server issued, under its RBAC authorizer.
    /// Blocks.
    pub fn apiserver(
        server: &'static ApiServer,
        test: &str,
        manifests: &[&str],
        account: &str,
    ) -> Site<'static> {
        let dir = temp(&format!("{test}-kas"));
        let ns = server.namespace();
        let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
        let files: Vec<PathBuf> = manifests.iter().map(|m| deploy.join(m)).collect();
        server.kubectl_apply(&ns, &files);
        let kubeconfig = dir.join(format!("{account}.kubeconfig"));
        server.write_service_account_kubeconfig(&ns, account, &kubeconfig);
        // The binding in force before a sidecar starts.
        let config = server.service_account_config(&ns, account);
        server.wait_allowed(&config, &ns, "get", "coordination.k8s.io", "leases");
        // The account has the Role's verbs, not more: not an admin's token.
        assert!(
            !server.allowed(&config, &ns, "delete", "coordination.k8s.io", "leases"),
            "{account} may delete Leases: not the shipped Role alone"
        );
        let operator = dir.join("operator.kubeconfig");
        server.write_kubeconfig("kubectl", &ns, &operator);
        Site {
            server,
            ns,
            dir,
            operator,
            accounts: Accounts::Account(kubeconfig),
        }
    }

    /// The kubeconfig of the sidecar `id`.
    pub fn kubeconfig(&self, id: &str) -> PathBuf {
        match &self.accounts {
            Accounts::Emulator(emu) => {
                let path = self.dir.join(format!("{id}.kubeconfig"));
                emu.write_kubeconfig(&path, id).expect("kubeconfig");
                path
            }
            Accounts::Account(path) => path.clone(),
        }
    }

    /// Whether the server enforces RBAC (kube-apiserver): a refusal there
    /// means the shipped Role is not enough.
    pub fn enforces_rbac(&self) -> bool {
        matches!(self.accounts, Accounts::Account(_))
    }

    /// Checks that a sidecar's log `logs` names no refused request: under
    /// RBAC, the Role granted everything it asked for.
    pub fn assert_nothing_forbidden(&self, logs: &str) {
        assert!(
            !logs.to_lowercase().contains("forbidden"),
            "{}: a request was refused: {logs}",
            self.server.name()
        );
    }
}

impl Drop for Site<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// kube-apiserver, in a namespace of its own, where `kubectl apply -f
/// deploy/rbac.yaml -f deploy/run-mode.yaml` ran: the sidecars and their
/// children run as its ServiceAccount `nightly-report`, which a Role of the
/// application's lets do `verbs` on ConfigMaps (what the children write).
/// Blocks.
pub fn run_mode_site(test: &str, verbs: &[&str]) -> Site<'static> {
    tokio::task::block_in_place(|| {
        let server = ApiServer::shared();
        let site = Site::apiserver(
            server,
            test,
            &["rbac.yaml", "run-mode.yaml"],
            "nightly-report",
        );
        let app = site.dir.join("app-role.yaml");
        let verbs = serde_json::to_string(verbs).expect("JSON");
        std::fs::write(
            &app,
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{ name: app }}
rules:
  - apiGroups: [\"\"]
    resources: [\"configmaps\"]
    verbs: {verbs}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{ name: app }}
subjects: [{{ kind: ServiceAccount, name: nightly-report }}]
roleRef: {{ apiGroup: rbac.authorization.k8s.io, kind: Role, name: app }}
"
            ),
        )
        .expect("write");
        server.kubectl_apply(&site.ns, &[app]);
        let config = server.service_account_config(&site.ns, "nightly-report");
        server.wait_allowed(&config, &site.ns, "patch", "", "configmaps");
        site
    })
}

/// `rbac` (a manifest's text) with `verb` on `resource` removed from its
/// Role's rules, and the rule with it if that was its only verb (a rule
/// without verbs is invalid); the manifest's other objects kept. The rules
/// are written one per `  - apiGroups:` entry, their verbs as a flow list, as
/// `deploy/` writes them.
pub fn without_verb(rbac: &str, resource: &str, verb: &str) -> String {
    let mut narrower = String::new();
    let mut removed = false;
    for (i, rule) in rbac.split("\n  - apiGroups: ").enumerate() {
        let on_resource = rule.contains(&format!("resources: [\"{resource}\"]"));
        let mut kept_rule = String::new();
        let mut left = 1;
        for line in rule.lines() {
            let line = match line.trim().strip_prefix("verbs: ") {
                Some(list) if on_resource => {
                    let all: Vec<&str> = list.trim_matches(['[', ']']).split(", ").collect();
                    let kept: Vec<&str> = all
                        .iter()
                        .copied()
                        .filter(|v| *v != format!("\"{verb}\""))
                        .collect();
                    removed |= kept.len() < all.len();
                    left = kept.len();
                    line.replace(list, &format!("[{}]", kept.join(", ")))
                }
                _ => line.to_owned(),
            };
            kept_rule.push_str(&line);
            kept_rule.push('\n');
        }
        if i == 0 {
            narrower.push_str(&kept_rule);
        } else if left > 0 {
            narrower.push_str("  - apiGroups: ");
            narrower.push_str(&kept_rule);
        } else {
            // The rule goes; what follows the Role (`---` and the next
            // objects: unindented) stays.
            let rest: Vec<&str> = kept_rule
                .lines()
                .skip(1) // the rest of its `- apiGroups:` line
                .skip_while(|l| l.starts_with(' ') || l.is_empty())
                .collect();
            if !rest.is_empty() {
                narrower.push_str(&rest.join("\n"));
                narrower.push('\n');
            }
        }
    }
    assert!(removed, "{verb} on {resource} is granted");
    narrower
}

/// A verb of a Role to remove: the resource, the verb, and what the admin
/// applies before the sidecar starts, for a verb used only on something that
/// exists (a manifest's text, or none).
pub type MissingVerb<'a> = (&'a str, &'a str, Option<&'a str>);

/// Reads `lines` into `seen` until one contains `wanted` (`true`), or the
/// stream ends or `within` passes first (`false`).
pub async fn read_until<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
    wanted: &str,
    seen: &mut Vec<String>,
    within: Duration,
) -> bool {
    let read = async {
        while let Ok(Some(line)) = lines.next_line().await {
            let hit = line.contains(wanted);
            seen.push(line);
            if hit {
                return true;
            }
        }
        false
    };
    tokio::time::timeout(within, read).await.unwrap_or(false)
}

/// Each of `verbs` of the Role in `deploy/<rbac>` is needed by a `serve`
/// sidecar `verbs-a` (with the global flags `flags`): for each, in a new
/// namespace of `server`, kubectl applies the manifest less that verb
/// ([`without_verb`]), `deploy/<others>` and the verb's own manifest; a
/// sidecar run as `account` must log kube-apiserver's refusal naming it,
/// `cannot <verb> resource "<resource>"`, within 10 s, or on its way out
/// after a SIGTERM (a verb used there).
pub async fn each_missing_verb_is_named(
    server: &'static ApiServer,
    rbac: &str,
    others: &[&str],
    account: &str,
    flags: &[&str],
    verbs: &[MissingVerb<'_>],
) {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    let shipped = std::fs::read_to_string(deploy.join(rbac)).expect("the shipped Role");
    let dir = temp(&format!("verbs-{account}"));
    for (resource, verb, before) in verbs {
        let role = dir.join(format!("without-{verb}-{resource}.yaml"));
        std::fs::write(&role, without_verb(&shipped, resource, verb)).expect("write");
        let existing = dir.join(format!("before-{verb}-{resource}.yaml"));
        if let Some(manifest) = before {
            std::fs::write(&existing, manifest).expect("write");
        }
        let kubeconfig = dir.join(format!("without-{verb}-{resource}.kubeconfig"));
        let ns = tokio::task::block_in_place(|| {
            let ns = server.namespace();
            let mut files = vec![role.clone()];
            files.extend(others.iter().map(|f| deploy.join(f)));
            if before.is_some() {
                files.push(existing.clone());
            }
            server.kubectl_apply(&ns, &files);
            server.write_service_account_kubeconfig(&ns, account, &kubeconfig);
            let config = server.service_account_config(&ns, account);
            let probe = if (*resource, *verb) == ("leases", "get") {
                "watch"
            } else {
                "get"
            };
            server.wait_allowed(&config, &ns, probe, "coordination.k8s.io", "leases");
            ns
        });
        let addr = free_addr();
        let mut sidecar = Command::new(BIN)
            .args(FAST)
            .args(flags)
            .args(["serve", "--lease", "verbs", "--addr", &addr])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env("ELECTION_IDENTITY", "verbs-a")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut lines = BufReader::new(sidecar.stderr.take().expect("piped")).lines();
        let wanted = format!("cannot {verb} resource \"{resource}\"");
        let mut seen = Vec::new();
        let within = Duration::from_secs(10);
        let mut found = read_until(&mut lines, &wanted, &mut seen, within).await;
        if !found {
            // A verb of the way out: SIGTERM, then the rest of the log.
            sigterm(&sidecar);
            found = read_until(&mut lines, &wanted, &mut seen, within).await;
        }
        let _ = sidecar.start_kill();
        let _ = sidecar.wait().await;
        assert!(
            found,
            "in {ns}, without {verb} on {resource}: no line names {wanted:?}: {seen:#?}"
        );
        eprintln!(
            "without {verb} on {resource}: {}",
            seen.last().expect("the line")
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
