//! `serve` mode against the API emulator: `GET /` names the holder.

use std::process::Stdio;
use std::time::{Duration, Instant};

use kube_emulator::Emulator;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

async fn get(addr: &str) -> Option<String> {
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())
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
        .env("KUBECONFIG", &kubeconfig)
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
    s.start_kill().expect("kill");
    let _ = s.wait().await;
    let _ = std::fs::remove_dir_all(dir);
}
