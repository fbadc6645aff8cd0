//! What the tests that start the examples as processes share.

#![allow(dead_code)] // each test takes what it needs

use std::path::{Path, PathBuf};

use tokio::io::{BufReader, Lines};
use tokio::process::ChildStdout;

/// An example binary, which `cargo test` builds next to the test binaries
/// (`target/<profile>/examples/`).
pub fn example_binary(name: &str) -> PathBuf {
    let test = std::env::current_exe().expect("the test binary's path");
    let profile_dir = test
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: `cargo test -p kube-elector` builds it (or `cargo build -p kube-elector --all-features --example {name}`)",
        bin.display()
    );
    bin
}

/// Reads lines until one contains `needle`; all lines read.
pub async fn read_until(lines: &mut Lines<BufReader<ChildStdout>>, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(line) = lines.next_line().await.expect("stdout") {
        let found = line.contains(needle);
        seen.push(line);
        if found {
            return seen;
        }
    }
    panic!("stdout ended before {needle:?}: {seen:?}");
}

/// Sends `signal` to the process `pid`.
pub fn signal(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).expect("a pid")).expect("a pid");
    rustix::process::kill_process(pid, signal).expect("signal");
}
