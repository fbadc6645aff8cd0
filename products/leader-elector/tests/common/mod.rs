//! Helpers the binary tests share: temporary directories, the sidecar's HTTP
//! endpoint, signals and process checks, and [`Site`], the server a story
//! runs its sidecars against (the emulator or a real kube-apiserver).
#![allow(dead_code)] // each test file uses some of them

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube_emulator::Emulator;
use test_kit::apiserver::{ApiServer, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;

/// The sidecar binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_leader-elector");

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

/// Polls `/status` until the sidecar serving on `addr` leads (within `within`);
/// the last status seen.
pub async fn wait_leading(addr: &str, within: Duration) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let status = match get_path(addr, "/status").await {
            Some((_, body)) => serde_json::from_str(&body).expect("JSON status"),
            None => serde_json::Value::Null,
        };
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
