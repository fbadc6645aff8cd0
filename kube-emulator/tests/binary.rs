//! The `kube-emulator` binary: it prints where it listens, writes a
//! kubeconfig, and a kube client built from that kubeconfig works.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Kills the child on every exit path of the test.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_serves_and_writes_a_working_kubeconfig() {
    let dir = std::env::temp_dir().join(format!("kube-emulator-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("config");
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_kube-emulator"))
            .args(["--port", "0", "--token", "cli-user", "--kubeconfig"])
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the binary"),
    );
    let stdout = child.0.stdout.take().expect("piped");
    let lines: Vec<String> = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .take(2)
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .expect("joined")
    .expect("two lines");
    assert!(
        lines[0].starts_with("kube-emulator listening on http://127.0.0.1:"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1],
        format!("kubeconfig written to {}", path.display())
    );

    let kubeconfig = Kubeconfig::read_from(&path).expect("a valid kubeconfig");
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
    drop(child);
    let _ = std::fs::remove_dir_all(&dir);
}
