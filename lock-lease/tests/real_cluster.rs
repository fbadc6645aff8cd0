//! The conformance suite against a real cluster, only when asked:
//! `KUBECONFIG=... cargo test -p lock-lease --test real_cluster -- --ignored`.
//! Ignored otherwise (cargo test lists it as ignored); run without a cluster it
//! fails. The tests build `kube` with rustls, so the kubeconfig may point at the
//! cluster's HTTPS endpoint directly (or at `kubectl proxy`). Leases named
//! `election-rs-conformance-*` are created in the kubeconfig's namespace and
//! deleted again.

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams};
use lock_lease::LeaseLock;
use lock_memory::conformance::{Harness, run_all};

struct RealHarness {
    config: kube::Config,
    prefix: String,
    n: u32,
    name: String,
}

impl RealHarness {
    fn lock(&self) -> LeaseLock {
        let client = lock_kube::lock_client(self.config.clone()).expect("client");
        LeaseLock::new(client, &self.config.default_namespace, &self.name).expect("valid names")
    }

    async fn delete_current(&self) -> bool {
        let client = lock_kube::lock_client(self.config.clone()).expect("client");
        let api: Api<Lease> = Api::namespaced(client, &self.config.default_namespace);
        api.delete(&self.name, &DeleteParams::default())
            .await
            .is_ok()
    }
}

impl Harness for RealHarness {
    type Lock = LeaseLock;

    async fn fresh(&mut self) -> (LeaseLock, LeaseLock) {
        if !self.name.is_empty() {
            self.delete_current().await;
        }
        self.n += 1;
        self.name = format!("{}-{}", self.prefix, self.n);
        (self.lock(), self.lock())
    }

    async fn delete(&mut self) -> bool {
        self.delete_current().await
    }
}

/// Panics unless `KUBECONFIG` names a kubeconfig: run without a cluster, the
/// test fails instead of passing having checked nothing.
fn require_kubeconfig() {
    match std::env::var_os("KUBECONFIG") {
        Some(path) if !path.is_empty() => {}
        _ => panic!(
            "KUBECONFIG is not set: this test runs the conformance suite against a real cluster; point KUBECONFIG at one"
        ),
    }
}

#[test]
#[ignore = "needs KUBECONFIG pointing at a real cluster; run with --ignored"]
fn real_cluster_lease_lock_passes_the_conformance_suite() {
    require_kubeconfig();
    // The suite's futures nest deeply in debug builds: give them a large stack.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(run())
        })
        .expect("thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

async fn run() {
    let config = kube::Config::infer()
        .await
        .expect("the cluster's configuration from KUBECONFIG");
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut h = RealHarness {
        config,
        prefix: format!("election-rs-conformance-{stamp}"),
        n: 0,
        name: String::new(),
    };
    let report = run_all(&mut h).await;
    h.delete_current().await;
    assert!(report.is_complete(), "every case ran and passed: {report}");
}
