//! The lock conformance suite of `lock-memory`, run against the ConfigMap lock over the
//! API emulator, under tokio, smol and async-std.

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};
use kube_emulator::Emulator;
use lock_configmap::ConfigMapLock;
use lock_memory::conformance::{Harness, run_all};

struct ConfigMapHarness {
    emu: Emulator,
    name: String,
}

impl ConfigMapHarness {
    fn lock(&self, token: &str) -> ConfigMapLock {
        let client = kube_support::lock_client(self.emu.kube_config(token)).expect("client");
        ConfigMapLock::new(client, "default", &self.name).expect("valid names")
    }
}

impl Harness for ConfigMapHarness {
    type Lock = ConfigMapLock;

    async fn fresh(&mut self) -> (ConfigMapLock, ConfigMapLock) {
        static N: AtomicU32 = AtomicU32::new(0);
        self.name = format!("conformance-{}", N.fetch_add(1, Ordering::Relaxed));
        (self.lock("a"), self.lock("b"))
    }

    async fn delete(&mut self) -> bool {
        let client = kube_support::lock_client(self.emu.kube_config("admin")).expect("client");
        let api: Api<ConfigMap> = Api::namespaced(client, "default");
        let name = self.name.clone();
        // The emulator's client wants a tokio reactor, also under smol and async-std.
        async_compat::Compat::new(async move { api.delete(&name, &DeleteParams::default()).await })
            .await
            .is_ok()
    }
}

/// Starts an emulator on a runtime thread of its own, so that the suite can run
/// under any executor.
fn emulator() -> (Emulator, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let emu = rt.block_on(Emulator::start()).expect("emulator");
    (emu, rt)
}

type BlockOn = fn(std::pin::Pin<Box<dyn std::future::Future<Output = String>>>) -> String;

/// Runs the suite with `block_on` on a thread with a large stack (the suite's
/// futures nest deeply in debug builds).
fn run(block_on: BlockOn) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || run_here(block_on))
        .expect("thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

fn run_here(block_on: BlockOn) {
    let (emu, _rt) = emulator();
    let mut h = ConfigMapHarness {
        emu,
        name: String::new(),
    };
    let report = block_on(Box::pin(async move {
        let r = run_all(&mut h).await;
        assert!(r.is_success(), "{r}");
        assert!(r.skipped().is_empty(), "nothing skipped: {r}");
        r.to_string()
    }));
    assert!(!report.is_empty());
}

#[test]
fn configmap_lock_passes_the_conformance_suite_on_tokio() {
    run(|f| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    });
}

#[test]
fn configmap_lock_passes_the_conformance_suite_on_smol() {
    run(smol::block_on);
}

#[test]
fn configmap_lock_passes_the_conformance_suite_on_async_std() {
    run(async_std::task::block_on);
}
