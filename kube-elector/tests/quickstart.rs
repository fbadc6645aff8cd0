//! The quick start as an operator runs it (the README's snippet as a program,
//! docs/design.md §8): the example binary against the API emulator, with `KUBECONFIG`
//! pointing at it and `ELECTION_IDENTITY` set. It leads (after the strict lock
//! delay of one lease, the Lease being new), SIGTERM makes it cancel its work
//! and release the Lease, and it exits 0. The README's quick start is the
//! example, byte for byte.

use std::process::Stdio;
use std::time::Duration;

use kube_emulator::{Emulator, Resource};
mod support;

use support::{example_binary, read_until};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const IDENTITY: &str = "quickstart-a";

fn holder(emu: &Emulator) -> Option<String> {
    let lease = emu.object(Resource::Lease, "default", "quickstart")?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_leads_then_releases_on_sigterm_and_exits_0() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = std::env::temp_dir().join(format!("kube-elector-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, IDENTITY)
        .expect("kubeconfig");
    let mut child = Command::new(example_binary("quickstart"))
        .env("KUBECONFIG", &kubeconfig)
        .env("ELECTION_IDENTITY", IDENTITY)
        .env_remove("POD_NAME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the quick start");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();

    // A new Lease: its creator leads one lease duration (15 s) after the create.
    let led = tokio::time::timeout(
        Duration::from_secs(60),
        read_until(&mut lines, "leading in term"),
    )
    .await
    .expect("it leads within a minute");
    assert_eq!(holder(&emu).as_deref(), Some(IDENTITY), "{led:?}");

    support::signal(child.id().expect("running"), rustix::process::Signal::TERM);
    let rest = tokio::time::timeout(Duration::from_secs(20), async {
        let mut rest = Vec::new();
        while let Some(line) = lines.next_line().await.expect("stdout") {
            rest.push(line);
        }
        rest
    })
    .await
    .expect("stdout ends after SIGTERM");
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("it exits after SIGTERM")
        .expect("its status");
    assert!(
        status.success(),
        "{status:?}, output after SIGTERM: {rest:?}"
    );
    let term = led
        .last()
        .and_then(|l| l.strip_prefix("leading in term "))
        .expect("the line names the term");
    assert_eq!(
        rest,
        [
            format!("stopped leading in term {term}"),
            "released; exiting".into()
        ],
        "the work was cancelled and awaited before the release"
    );
    assert_eq!(holder(&emu).as_deref(), Some(""), "the Lease is released");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's quick start is `examples/quickstart.rs`, which CI compiles and
/// the test above runs.
#[test]
fn the_readme_quick_start_is_the_example() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../examples/quickstart.rs");
    let block = readme
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a ```rust,ignore block in the README: the quick start");
    assert_eq!(
        block, example,
        "README.md's quick start differs from examples/quickstart.rs"
    );
    let lines = example.lines().count();
    assert!(
        lines <= 25,
        "the quick start has {lines} lines (25 at most)"
    );
}
