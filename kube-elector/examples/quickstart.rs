//! The quick start: lead with the Lease `$LEASE_NAME` (`quickstart`) until SIGTERM, then release it.
use kube_elector::ops::{Monitor, health::Health, http::Endpoint, identity};
use kube_elector::{kube, prelude::*};
use std::env;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr) // the election's warnings: an API server out of reach, a loss
        .init();
    let identity = identity::from_env()?; // ELECTION_IDENTITY, else POD_NAME or hostname + suffix
    let kube_config = kube::Config::infer().await?; // KUBECONFIG, ~/.kube/config or in-cluster
    let namespace = kube_config.default_namespace.clone();
    let client = kube_elector::client(kube_config)?; // kube's own retries off
    let lease = env::var("LEASE_NAME").unwrap_or_else(|_| "quickstart".into());
    let lock = LeaseLock::new(client, &namespace, &lease)?;
    let addr = env::var("PROBE_ADDR").unwrap_or_else(|_| "127.0.0.1:0".into()); // any free port
    let addr: std::net::SocketAddr = addr.parse()?; // deploy/quickstart.yaml: 0.0.0.0:8080
    let mut sigterm = signal(SignalKind::terminate())?;
    let monitor = Monitor::new(lock.describe(), identity.clone()); // last renew and error, in /status
    let handle = Builder::new(monitor.lock(lock), Config::client_go(identity))
        .leader_work(|term, cancel| async move {
            println!("leading in term {term}");
            cancel.cancelled().await; // work here until leadership is given up or lost
            println!("stopped leading in term {term}");
        })
        .spawn(TokioRuntime::current()?)?;
    tokio::spawn(monitor.clone().follow(handle.states())); // a renew counts while leading
    let probes = Endpoint::new(Health::new(handle.observer()).monitor(monitor)); // /healthz, /readyz, /status
    let bound = probes.spawn(addr).await;
    if bound.is_err() {
        handle.shutdown().await; // the election ends before the program does
    }
    println!("probes on http://{}", bound?);
    sigterm.recv().await;
    handle.shutdown().await; // cancels and awaits the work, then releases the Lease
    println!("released; exiting");
    Ok(())
}
