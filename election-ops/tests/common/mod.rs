//! Shared setup: candidates on the Lease lock over the API emulator, on tokio.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use election_ops::Monitor;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_emulator::Emulator;
use lock_lease::LeaseLock;

/// The lease every test elects on.
pub const LEASE: &str = "ops-lease";

/// A candidate whose lock calls carry the bearer token `id`, its lock wrapped by a
/// monitor.
pub fn candidate(emu: &Emulator, id: &str) -> (Arc<Handle>, Arc<Monitor>) {
    let config = Config::fast(id).seed(id.len() as u64 + 11);
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    let lock = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("valid names");
    let monitor = Monitor::new(format!("leases/default/{LEASE}"), id);
    let handle = Builder::new(monitor.lock(lock), config)
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("valid config");
    let handle = Arc::new(handle);
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
    (handle, monitor)
}

/// Waits (polling every 20 ms, up to `within`) until `pred` holds.
pub async fn wait_until(within: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < within {
        if pred() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pred()
}

/// Creates a ConfigMap `name` through `client`.
pub async fn write(client: &kube::Client, name: &str) -> Result<ConfigMap, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    api.create(&PostParams::default(), &cm).await
}
