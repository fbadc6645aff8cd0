//! Helpers the binary tests share: temporary directories, the sidecar's HTTP
//! endpoint, signals and process checks.
#![allow(dead_code)] // each test file uses some of them

use std::path::PathBuf;
use std::time::{Duration, Instant};

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
