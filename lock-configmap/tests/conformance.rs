//! The lock conformance suite of `lock-memory`, run against the ConfigMap lock over the
//! API emulator, under tokio, smol and async-std.

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};
use kube_emulator::Emulator;
use lock_configmap::ConfigMapLock;
use lock_memory::conformance::{Case, Harness, run_all};
use test_kit::runtimes::compat;

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
        compat(async move { api.delete(&name, &DeleteParams::default()).await })
            .await
            .is_ok()
    }
}

/// The whole suite, on whichever runtime runs it ([`runtime_tests!`] runs it on a
/// thread with a large stack: the suite's futures nest deeply in debug builds).
///
/// [`runtime_tests!`]: test_kit::runtime_tests
async fn configmap_lock_passes_the_conformance_suite() {
    let mut h = ConfigMapHarness {
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

test_kit::runtime_tests!(configmap_lock_passes_the_conformance_suite);
