//! The guide's controller (`docs/guide/controllers.md`, `examples/mirror_controller.rs`)
//! as an operator runs it:
//! replicas as separate processes against the API emulator, each with its own
//! token. The first copies the sources; SIGTERM hands over to the second, which
//! copies the next change in a new term with no LIST; SIGKILL of the second
//! leaves a third to take over after the lease. Every copy is written by the
//! holder of the Lease at that instant, annotated with its term.

mod support;

use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use kube_emulator::{Emulator, Resource, Verb};
use support::{example_binary, read_until};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

struct Replica {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

fn replica(emu: &Emulator, dir: &std::path::Path, id: &str) -> Replica {
    let kubeconfig = dir.join(id);
    emu.write_kubeconfig(&kubeconfig, id).expect("kubeconfig");
    let mut child = Command::new(example_binary("mirror_controller"))
        .env("KUBECONFIG", &kubeconfig)
        .env("ELECTION_IDENTITY", id)
        .env_remove("POD_NAME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the controller");
    let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    Replica { child, lines }
}

/// Waits until `r` has copied every one of `names`, in any order (the
/// controller reconciles objects concurrently), and returns the term of the
/// last copy.
async fn copied(r: &mut Replica, names: &[&str]) -> String {
    let mut left = names.to_vec();
    let mut line = String::new();
    while !left.is_empty() {
        let seen = tokio::time::timeout(
            Duration::from_secs(20),
            read_until(&mut r.lines, " in term "),
        )
        .await
        .unwrap_or_else(|_| panic!("{left:?} copied within 20 s"));
        line = seen.last().expect("a line").clone();
        left.retain(|name| !line.contains(&format!("copied {name} in term")));
    }
    line.rsplit(' ').next().expect("the term").to_owned()
}

async fn set_value(sources: &Api<ConfigMap>, name: &str, value: &str) {
    let mut cm = sources.get(name).await.expect("get");
    cm.data = Some([("v".to_owned(), value.to_owned())].into());
    sources
        .replace(name, &PostParams::default(), &cm)
        .await
        .expect("update");
}

fn lists(emu: &Emulator, id: &str) -> u64 {
    emu.request_counts()
        .get(id, Verb::List, Resource::ConfigMap)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_replicas_hand_over_on_sigterm_and_fail_over_on_sigkill() {
    let emu = Emulator::start().await.expect("emulator");
    let admin = emu.client("admin").expect("client");
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    for ns in ["source", "mirror"] {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.into());
        namespaces
            .create(&PostParams::default(), &n)
            .await
            .expect("namespace");
    }
    let sources: Api<ConfigMap> = Api::namespaced(admin.clone(), "source");
    for name in ["s0", "s1", "s2"] {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.metadata.labels = Some([("mirror".to_owned(), "true".to_owned())].into());
        cm.data = Some([("v".to_owned(), "1".to_owned())].into());
        sources
            .create(&PostParams::default(), &cm)
            .await
            .expect("source");
    }
    let dir = std::env::temp_dir().join(format!("kube-elector-controller-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");

    let mut a = replica(&emu, &dir, "ctl-a");
    // All three: the test reads s0's copy next.
    let first = copied(&mut a, &["s0", "s1", "s2"]).await;
    let mut b = replica(&emu, &dir, "ctl-b");
    let copies: Api<ConfigMap> = Api::namespaced(admin.clone(), "mirror");
    let copy = copies.get("s0").await.expect("copy");
    assert_eq!(copy.data, Some([("v".to_owned(), "1".to_owned())].into()));
    let annotations = copy.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get("kube-elector.dev/term").map(String::as_str),
        Some(&*first),
        "the copy carries its term"
    );

    // SIGTERM: a drains and releases, b takes over and copies the next change.
    tokio::time::sleep(Duration::from_millis(500)).await; // b's caches sync
    let b_lists = lists(&emu, "ctl-b");
    support::signal(
        a.child.id().expect("running"),
        rustix::process::Signal::TERM,
    );
    let status = tokio::time::timeout(Duration::from_secs(10), a.child.wait())
        .await
        .expect("a exits after SIGTERM")
        .expect("status");
    assert!(status.success(), "{status:?}");
    set_value(&sources, "s1", "2").await;
    let second = copied(&mut b, &["s1"]).await;
    assert_ne!(second, first, "a new term");
    assert_eq!(
        lists(&emu, "ctl-b"),
        b_lists,
        "b listed nothing to take over"
    );

    // SIGKILL: b stops at once; c takes the lease once it expires.
    let mut c = replica(&emu, &dir, "ctl-c");
    tokio::time::sleep(Duration::from_millis(500)).await;
    support::signal(
        b.child.id().expect("running"),
        rustix::process::Signal::KILL,
    );
    let _ = b.child.wait().await;
    set_value(&sources, "s2", "2").await;
    let third = copied(&mut c, &["s2"]).await;
    assert!(third != first && third != second, "a third term");
    let copy = copies.get("s2").await.expect("copy");
    assert_eq!(copy.data, Some([("v".to_owned(), "2".to_owned())].into()));

    // Every committed copy by the Lease's holder of that instant, in commit order.
    let history = emu.committed_writes();
    let mut holder = String::new();
    let mut writers = Vec::new();
    for w in &history {
        if w.resource == Resource::Lease {
            holder = w
                .object
                .as_ref()
                .and_then(|o| o["spec"]["holderIdentity"].as_str())
                .unwrap_or("")
                .into();
        } else if w.namespace == "mirror" {
            assert_eq!(
                w.client, holder,
                "{} wrote {} while {holder} held the Lease",
                w.client, w.name
            );
            if writers.last() != Some(&w.client) {
                writers.push(w.client.clone());
            }
        }
    }
    assert_eq!(writers, ["ctl-a", "ctl-b", "ctl-c"]);
    support::signal(
        c.child.id().expect("running"),
        rustix::process::Signal::TERM,
    );
    let status = c.child.wait().await.expect("status");
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The guide's controller (`docs/guide/controllers.md`) is
/// `examples/mirror_controller.rs`, which CI compiles and the test above runs
/// (and the guide's doctests compile, `no_run`).
#[test]
fn the_guide_controller_is_the_example() {
    let guide = include_str!("../../docs/guide/controllers.md");
    let example = include_str!("../examples/mirror_controller.rs");
    let block = guide
        .split("# Controllers\n")
        .nth(1)
        .and_then(|rest| rest.split("```rust,no_run\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("a ```rust,no_run block in docs/guide/controllers.md");
    assert_eq!(
        block, example,
        "docs/guide/controllers.md's controller differs from examples/mirror_controller.rs"
    );
}
