//! `serve` mode against the API emulator: `GET /` names the holder, `/healthz`,
//! `/readyz`, `/status` and `/metrics` answer, and SIGTERM releases the Lease.

use std::process::Stdio;
use std::time::{Duration, Instant};

use kube_emulator::Emulator;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// `GET path`: the status line and the body.
async fn get_path(addr: &str, path: &str) -> Option<(String, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_owned(), body.to_owned()))
}

async fn get(addr: &str) -> Option<String> {
    get_path(addr, "/").await.map(|(_, body)| body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_names_the_holder() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = std::env::temp_dir().join(format!("leader-elector-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, "serve-a")
        .expect("kubeconfig");
    // A free port on 127.0.0.1.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut s = Command::new(env!("CARGO_BIN_EXE_leader-elector"))
        .args([
            "--lease-duration-ms",
            "2000",
            "--renew-deadline-ms",
            "1500",
            "--retry-period-ms",
            "250",
        ])
        .args(["serve", "--lease", "served", "--addr", &addr])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        // `--kubeconfig` wins over the environment.
        .env("KUBECONFIG", dir.join("missing"))
        .env("ELECTION_IDENTITY", "serve-a")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < Duration::from_secs(15) {
        last = get(&addr).await;
        if last.as_deref() == Some(r#"{"name":"serve-a"}"#) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last.as_deref(), Some(r#"{"name":"serve-a"}"#));

    // Health, readiness, status and metrics on the same address.
    let (line, body) = get_path(&addr, "/healthz").await.expect("healthz");
    assert!(line.contains(" 200 "), "{line}: {body}");
    let (line, _) = get_path(&addr, "/readyz").await.expect("readyz");
    assert!(line.contains(" 200 "), "{line}");
    // It names itself as soon as its create lands, and leads after the strict lock
    // delay (one lease from the create).
    let start = Instant::now();
    let status = loop {
        let (_, status) = get_path(&addr, "/status").await.expect("status");
        let status: serde_json::Value = serde_json::from_str(&status).expect("JSON status");
        if status["is_leader"] == true || start.elapsed() > Duration::from_secs(10) {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["is_leader"], true, "{status}");
    assert_eq!(status["role"], "Leader", "{status}");
    assert_eq!(status["holder"], "serve-a", "{status}");
    let (line, metrics) = get_path(&addr, "/metrics").await.expect("metrics");
    assert!(line.contains(" 200 "), "{line}");
    assert!(
        metrics.contains("leader_election_master_status{name=\"served\"} 1"),
        "{metrics}"
    );
    let (line, _) = get_path(&addr, "/nothing").await.expect("404");
    assert!(line.contains(" 404 "), "{line}");

    // SIGTERM: the sidecar releases the Lease (holder present and empty) and exits 0.
    let pid = rustix::process::Pid::from_raw(s.id().expect("running") as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let status = tokio::time::timeout(Duration::from_secs(10), s.wait())
        .await
        .expect("exits after SIGTERM")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    let lease = emu
        .object(kube_emulator::Resource::Lease, "default", "served")
        .expect("the lease exists");
    assert_eq!(lease["spec"]["holderIdentity"], "", "released: {lease}");
    let _ = std::fs::remove_dir_all(dir);
}
