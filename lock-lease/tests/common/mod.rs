//! The Lease lock as the shared Kubernetes lock suite (`test_kit::kube_lock`) sees
//! it: where the record lives in a stored Lease.

use k8s_openapi::api::coordination::v1::Lease;
use kube_emulator::Resource;
use lock_lease::LeaseCodec;
use test_kit::kube_lock::KubeLock;

/// The Lease lock under test.
pub struct LeaseSuite;

impl KubeLock for LeaseSuite {
    type Codec = LeaseCodec;
    const RESOURCE: Resource = Resource::Lease;
    const RBAC_YAML: &'static str = lock_lease::RBAC_YAML;
    const RENEW_TIME_AT_T0: &'static str = "2026-08-07T23:11:09.000000Z";
    const TRANSITIONS: &'static str = "leaseTransitions";

    fn record_json(obj: &serde_json::Value) -> serde_json::Value {
        obj["spec"].clone()
    }

    fn edit_record(lease: &mut Lease, holder: &str, renew_time: &str) {
        let spec = lease.spec.as_mut().unwrap();
        spec.holder_identity = Some(holder.into());
        spec.renew_time = Some(serde_json::from_value(serde_json::json!(renew_time)).unwrap());
    }
}
