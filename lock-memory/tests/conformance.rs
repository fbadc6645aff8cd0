//! The lock conformance suite against `MemoryStore`, on two executors.

use lock_memory::conformance::{Case, MemoryHarness, Outcome, run_all, run_case};

#[test]
fn memory_store_passes_every_case_on_futures_lite() {
    let report = futures_lite::future::block_on(run_all(&mut MemoryHarness::new()));
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed().len(), Case::ALL.len(), "{report}");
}

#[tokio::test(flavor = "current_thread")]
async fn memory_store_passes_every_case_on_tokio() {
    let report = run_all(&mut MemoryHarness::new()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed().len(), Case::ALL.len(), "{report}");
}

#[test]
fn cases_run_one_by_one() {
    let mut harness = MemoryHarness::new();
    for case in Case::ALL {
        let result = futures_lite::future::block_on(run_case(&mut harness, case));
        assert_eq!(result, Ok(Outcome::Passed), "{case}");
    }
}
