//! What the kube-emulator tests share: the binary, `kubectl`, and reading an API error.

#![allow(dead_code)] // each test file takes what it needs

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The `kube-emulator` binary on a free port, with a kubeconfig for `token`;
/// killed, and its directory removed, when dropped.
pub struct Binary {
    child: std::process::Child,
    /// Its temporary directory.
    pub dir: PathBuf,
    /// The kubeconfig it wrote.
    pub kubeconfig: PathBuf,
    /// The three lines it printed on start-up.
    pub lines: Vec<String>,
}

impl Binary {
    /// Starts it and reads the three lines it prints (all of them: a binary
    /// whose stdout is closed early dies of EPIPE on its next line).
    pub async fn start(token: &str) -> Binary {
        Binary::start_with(token, &[]).await
    }

    /// As [`Binary::start`], with more flags (`--coordinated-leader-election`).
    pub async fn start_with(token: &str, flags: &[&str]) -> Binary {
        let dir =
            std::env::temp_dir().join(format!("kube-emulator-{token}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let kubeconfig = dir.join("config");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kube-emulator"))
            .args(["--port", "0", "--token", token, "--kubeconfig"])
            .arg(&kubeconfig)
            .args(flags)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the binary");
        let stdout = child.stdout.take().expect("piped");
        let lines = tokio::task::spawn_blocking(move || {
            BufReader::new(stdout)
                .lines()
                .take(3)
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .expect("joined")
        .expect("the binary announced itself");
        Binary {
            child,
            dir,
            kubeconfig,
            lines,
        }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs kubectl with `kubeconfig` (its cache beside it), `args` and `stdin`;
/// its stdout. The test fails, naming it, where kubectl is not installed, and
/// with kubectl's stderr where it fails.
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    kubectl_output(kubeconfig, args, stdin).0
}

/// As [`kubectl`], with its stderr too (where `-v=8` logs each request).
pub fn kubectl_output(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (String, String) {
    let out = kubectl_run(kubeconfig, args, stdin);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// kubectl that is expected to fail: its stderr. The test fails, with
/// kubectl's stdout, where it succeeds.
pub fn kubectl_fails(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = kubectl_run(kubeconfig, args, stdin);
    assert!(
        !out.status.success(),
        "kubectl {args:?} succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs kubectl as [`kubectl`] does, whatever its exit status.
fn kubectl_run(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    kube_emulator::kubectl_output(kubeconfig, args, stdin).unwrap_or_else(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            panic!("kubectl is not installed: this test uses it as a client")
        }
        _ => panic!("kubectl could not be run: {e}"),
    })
}

/// The Status of an API error; panics on any other error.
pub fn api_status(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A LeaseCandidate `name` for the Lease `lease` under the
/// `OldestEmulationVersion` strategy, last renewed at `renewed`.
pub fn lease_candidate(
    name: &str,
    lease: &str,
    binary: &str,
    emulation: &str,
    renewed: k8s_openapi::jiff::Timestamp,
) -> k8s_openapi::api::coordination::v1beta1::LeaseCandidate {
    use k8s_openapi::api::coordination::v1beta1::{LeaseCandidate, LeaseCandidateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    let mut c = LeaseCandidate::default();
    c.metadata.name = Some(name.to_owned());
    c.spec = LeaseCandidateSpec {
        lease_name: lease.to_owned(),
        binary_version: binary.to_owned(),
        emulation_version: Some(emulation.to_owned()),
        strategy: "OldestEmulationVersion".to_owned(),
        renew_time: Some(MicroTime(renewed)),
        ..LeaseCandidateSpec::default()
    };
    c
}
