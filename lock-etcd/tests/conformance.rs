//! The public lock conformance suite of `lock-memory`, unchanged, on a real etcd
//! (`lock_etcd::testing`): two clients per case, each case on a fresh key, the
//! deletion cases deleting the key as `etcdctl del` would.

use lock_etcd::EtcdLock;
use lock_etcd::testing::EtcdServer;
use lock_memory::conformance::{Case, Harness, run_all};

struct EtcdHarness {
    etcd: EtcdServer,
    cases: u32,
}

impl EtcdHarness {
    fn key(&self) -> String {
        format!("/conformance/case-{}", self.cases)
    }
}

impl Harness for EtcdHarness {
    type Lock = EtcdLock;

    async fn fresh(&mut self) -> (EtcdLock, EtcdLock) {
        self.cases += 1;
        let key = self.key();
        // Two locks built apart: two clients, two connection pools.
        (self.etcd.lock(&key), self.etcd.lock(&key))
    }

    async fn delete(&mut self) -> bool {
        self.etcd.delete(&self.key()).await.is_ok()
    }
}

#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_lock_passes_every_conformance_case() {
    let etcd = EtcdServer::start().await.expect("a throwaway etcd");
    let mut harness = EtcdHarness { etcd, cases: 0 };
    let report = run_all(&mut harness).await;
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.passed(), Case::ALL, "{report}");
}

/// The suite under a runtime that is not tokio: the lock brings its own tokio
/// context (`async-compat`) for hyper and its timers.
#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[test]
fn etcd_lock_passes_every_conformance_case_without_tokio() {
    let etcd = futures_lite::future::block_on(async_compat::Compat::new(EtcdServer::start()))
        .expect("a throwaway etcd");
    let mut harness = EtcdHarness { etcd, cases: 0 };
    let report = futures_lite::future::block_on(run_all(&mut harness));
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.passed(), Case::ALL, "{report}");
}
