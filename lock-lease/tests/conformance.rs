//! The lock conformance suite of `lock-memory`, run against the Lease lock over the
//! API emulator, under tokio, smol and async-std.

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams};
use kube_emulator::Emulator;
use lock_lease::LeaseLock;
use lock_memory::conformance::{Case, Harness, run_all};
use test_kit::runtimes::compat;

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
        compat(async move { api.delete(&name, &DeleteParams::default()).await })
            .await
            .is_ok()
    }
}

/// The whole suite, on whichever runtime runs it ([`runtime_tests!`] runs it on a
/// thread with a large stack: the suite's futures nest deeply in debug builds).
///
/// [`runtime_tests!`]: test_kit::runtime_tests
async fn lease_lock_passes_the_conformance_suite() {
    let mut h = LeaseHarness {
        emu: Emulator::start_blocking().expect("emulator"),
        name: String::new(),
    };
    let r = run_all(&mut h).await;
    assert!(r.is_success(), "{r}");
    assert!(r.skipped().is_empty(), "nothing skipped: {r}");
    // Every case ran and passed, in the suite's order, and the report says so
    // line by line.
    assert_eq!(r.passed(), Case::ALL, "{r}");
    let lines: Vec<String> = r.to_string().lines().map(str::to_owned).collect();
    let expected: Vec<String> = Case::ALL.iter().map(|c| format!("ok      {c}")).collect();
    assert_eq!(lines, expected);
}

test_kit::runtime_tests!(lease_lock_passes_the_conformance_suite);
