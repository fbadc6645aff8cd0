//! A maintenance window on a Node, against the in-process API emulator.
//!
//! `cargo run --example maintenance`
//!
//! The Node `worker-1` is annotated for a 20 s window. The controller
//! `maint-a` takes the window Lease, cordons and drains the Node, and at the
//! window's end uncordons it, removes the request and ends the Lease. A second
//! controller, `maint-b`, started while `maint-a` holds the window, waits. Once
//! `maint-a` has finished (and stopped), the Node is annotated again, for 5 s:
//! `maint-b` takes that next window. Every status transition is printed; the
//! run ends on its own in about 30 s.

use std::error::Error as StdError;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_emulator::Emulator;
use lease_window::{
    Drainer, STATUS_ANNOTATION, Transition, WINDOW_ANNOTATION, WindowConfig, WindowController,
};
use serde_json::json;

const NODE: &str = "worker-1";

/// A drainer that only says what it would do.
struct PrintDrainer {
    identity: &'static str,
    start: Instant,
}

impl PrintDrainer {
    /// Prints what happened to the drain of `node`; nothing can fail.
    fn say(&self, node: &str, what: &str) -> BoxFuture<'static, DrainResult> {
        line(
            self.start,
            self.identity,
            &format!("  drain {node}: {what}"),
        );
        Box::pin(async { Ok(()) })
    }
}

type DrainResult = Result<(), Box<dyn StdError + Send + Sync>>;

impl Drainer for PrintDrainer {
    fn start<'a>(&'a self, node: &'a str) -> BoxFuture<'a, DrainResult> {
        self.say(node, "started")
    }
    fn cancel<'a>(&'a self, node: &'a str) -> BoxFuture<'a, DrainResult> {
        self.say(node, "cancelled")
    }
}

fn line(start: Instant, who: &str, what: &str) {
    println!("{:>7.1} s  {who:<8} {what}", start.elapsed().as_secs_f64());
}

fn controller(
    emu: &Emulator,
    identity: &'static str,
    start: Instant,
) -> Result<tokio::task::JoinHandle<()>, Box<dyn StdError>> {
    let config = WindowConfig::new(identity)?; // padding 30 s, clock skew 1 s
    let controller = WindowController::new(emu.client(identity)?, config)
        .drainer(PrintDrainer { identity, start })
        .on_transition(move |t: &Transition| {
            line(start, &t.identity, &format!("{} -> {}", t.node, t.status));
        });
    Ok(tokio::spawn(controller.run()))
}

async fn node_summary(nodes: &Api<Node>) -> Result<String, kube::Error> {
    let node = nodes.get(NODE).await?;
    let a = node.metadata.annotations.unwrap_or_default();
    Ok(format!(
        "request {:?}, status {:?}, unschedulable {}",
        a.get(WINDOW_ANNOTATION),
        a.get(STATUS_ANNOTATION),
        node.spec.and_then(|s| s.unschedulable).unwrap_or(false)
    ))
}

async fn wait_status(
    nodes: &Api<Node>,
    status: &str,
    within: Duration,
) -> Result<(), Box<dyn StdError>> {
    let until = Instant::now() + within;
    loop {
        let node = nodes.get(NODE).await?;
        let a = node.metadata.annotations.unwrap_or_default();
        if a.get(STATUS_ANNOTATION).map(String::as_str) == Some(status) {
            return Ok(());
        }
        if Instant::now() > until {
            return Err(format!("no status {status} within {within:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn request(nodes: &Api<Node>, seconds: &str) -> Result<(), kube::Error> {
    let patch = json!({"metadata": {"annotations": {WINDOW_ANNOTATION: seconds}}});
    nodes
        .patch(NODE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn StdError>> {
    let emu = Emulator::start().await?;
    let admin = emu.client("operator")?;
    let nodes: Api<Node> = Api::all(admin.clone());
    let leases: Api<Lease> = Api::default_namespaced(admin);
    let mut node = Node::default();
    node.metadata.name = Some(NODE.into());
    nodes.create(&PostParams::default(), &node).await?;
    let start = Instant::now();
    println!(
        "emulator at {}; Node {NODE}; window Leases in namespace default\n",
        emu.url()
    );

    let a = controller(&emu, "maint-a", start)?;
    line(
        start,
        "operator",
        &format!("annotate {NODE} {WINDOW_ANNOTATION}=20"),
    );
    request(&nodes, "20").await?;
    wait_status(&nodes, "active", Duration::from_secs(5)).await?;
    line(start, "operator", &node_summary(&nodes).await?);

    let b = controller(&emu, "maint-b", start)?;
    wait_status(&nodes, "ended", Duration::from_secs(30)).await?;
    tokio::time::sleep(Duration::from_millis(300)).await; // the Lease's end follows the status
    line(start, "operator", &node_summary(&nodes).await?);
    let lease = leases.get(NODE).await?.spec.unwrap_or_default();
    line(
        start,
        "operator",
        &format!(
            "Lease {NODE}: holder {:?}, leaseDurationSeconds {:?}",
            lease.holder_identity, lease.lease_duration_seconds
        ),
    );
    a.abort();
    line(start, "operator", "maint-a stopped (its window is done)");

    line(
        start,
        "operator",
        &format!("annotate {NODE} {WINDOW_ANNOTATION}=5 (the next window)"),
    );
    request(&nodes, "5").await?;
    wait_status(&nodes, "active", Duration::from_secs(5)).await?;
    wait_status(&nodes, "ended", Duration::from_secs(15)).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    line(start, "operator", &node_summary(&nodes).await?);
    let lease = leases.get(NODE).await?.spec.unwrap_or_default();
    line(
        start,
        "operator",
        &format!(
            "Lease {NODE}: holder {:?}, transitions {:?}",
            lease.holder_identity, lease.lease_transitions
        ),
    );
    b.abort();
    Ok(())
}
