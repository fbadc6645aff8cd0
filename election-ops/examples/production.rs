//! The production guide's snippets together (docs/guide/production.md and
//! fencing.md): a Lease election on tokio with a default identity,
//! a monitored lock, a guarded `kube::Client`, health and metrics on one endpoint.
//!
//! Run against the emulator: `cargo run -p kube-emulator -- --port 6443 --kubeconfig
//! /tmp/kc` (prints the URL), then `KUBE_URL=http://127.0.0.1:6443 cargo run -p
//! election-ops --example production`.

use std::sync::Arc;
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::{Config, Lock};
use election_driver::Builder;
use election_ops::guard::{WriteGuardLayer, not_leader};
use election_ops::health::{Health, Heartbeat, ReadyWhen};
use election_ops::http::Endpoint;
use election_ops::{Monitor, identity};
use prometheus_client::registry::Registry;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("KUBE_URL").unwrap_or_else(|_| "http://127.0.0.1:6443".into());
    let mut kube_config = kube::Config::new(url.parse()?);
    kube_config.default_namespace = "default".into();

    let id = identity::from_env()?;
    let config = Config::fast(id.clone());
    let lock = lock_lease::LeaseLock::builder(
        lock_kube::lock_client(kube_config.clone())?,
        "default",
        "example",
    )
    .build()?;

    let monitor = Monitor::new(lock.describe(), id);
    let mut registry = Registry::default();
    monitor.register_metrics(&mut registry);
    let beat = Heartbeat::new();
    let work_beat = beat.clone();
    let handle = Builder::new(monitor.lock(lock), config)
        .leader_work(move |term, cancel| {
            let beat = work_beat.clone();
            async move {
                println!("leading in term {term}");
                while !cancel.is_cancelled() {
                    beat.beat();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        })
        .spawn(TokioRuntime::current()?)?;
    let handle = Arc::new(handle);
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));

    let health = Health::new(Arc::clone(&handle))
        .ready_when(ReadyWhen::Leader)
        .heartbeat(beat, Duration::from_secs(5))
        .monitor(Arc::clone(&monitor));
    let addr = Endpoint::new(health)
        .metrics(Arc::clone(&monitor), registry)
        .spawn("127.0.0.1:0".parse()?)
        .await?;
    println!("health on http://{addr}/healthz, /readyz, /status, /metrics");

    let layer = WriteGuardLayer::new(Arc::clone(&handle)).margin(Duration::from_millis(500));
    let client = kube::client::ClientBuilder::try_from(kube_config)?
        .with_layer(&layer)
        .build();
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client, "default");
    for i in 0..20 {
        let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
        cm.metadata.name = Some(format!("example-{i}"));
        match api.create(&Default::default(), &cm).await {
            Ok(_) => println!("write {i} sent"),
            Err(e) if not_leader(&e).is_some() => println!("write {i} refused: not leader"),
            Err(e) => println!("write {i} failed: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Give the lock up (drain the work, release) before exiting; the endpoint
    // still holds the handle, so `shutdown(self)` is not reachable here.
    handle.step_down().await;
    Ok(())
}
