//! The lock conformance suite of `lock-memory`, run against the Lease lock over the
//! API emulator, under tokio, smol and async-std.

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams};
use kube_emulator::Emulator;
use lock_lease::LeaseLock;
use lock_memory::conformance::{Harness, run_all};

struct LeaseHarness {
    emu: Emulator,
    name: String,
}

impl LeaseHarness {
    fn lock(&self, token: &str) -> LeaseLock {
        let client = kube_support::lock_client(self.emu.kube_config(token)).expect("client");
        LeaseLock::new(client, "default", &self.name).expect("valid names")
    }
}

impl Harness for LeaseHarness {
    type Lock = LeaseLock;

    async fn fresh(&mut self) -> (LeaseLock, LeaseLock) {
        static N: AtomicU32 = AtomicU32::new(0);
        self.name = format!("conformance-{}", N.fetch_add(1, Ordering::Relaxed));
        (self.lock("a"), self.lock("b"))
    }

    async fn delete(&mut self) -> bool {
        let client = kube_support::lock_client(self.emu.kube_config("admin")).expect("client");
        let api: Api<Lease> = Api::namespaced(client, "default");
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
    let mut h = LeaseHarness {
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
fn lease_lock_passes_the_conformance_suite_on_tokio() {
    run(|f| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    });
}

#[test]
fn lease_lock_passes_the_conformance_suite_on_smol() {
    run(smol::block_on);
}

#[test]
fn lease_lock_passes_the_conformance_suite_on_async_std() {
    run(async_std::task::block_on);
}
