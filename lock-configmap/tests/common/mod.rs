//! The ConfigMap lock as the shared Kubernetes lock suite (`test_kit::kube_lock`)
//! sees it: where the record lives in a stored ConfigMap.

use k8s_openapi::api::core::v1::ConfigMap;
use kube_emulator::Resource;
use lock_configmap::ConfigMapCodec;
use lock_configmap::record::ANNOTATION;
use test_kit::kube_lock::KubeLock;

/// The ConfigMap lock under test.
pub struct ConfigMapSuite;

impl KubeLock for ConfigMapSuite {
    type Codec = ConfigMapCodec;
    const RESOURCE: Resource = Resource::ConfigMap;
    const RBAC_YAML: &'static str = lock_configmap::RBAC_YAML;
    const RENEW_TIME_AT_T0: &'static str = "2026-08-07T23:11:09Z";
    const TRANSITIONS: &'static str = "leaderTransitions";

    /// The JSON in the annotation.
    fn record_json(obj: &serde_json::Value) -> serde_json::Value {
        let json = obj["metadata"]["annotations"][ANNOTATION]
            .as_str()
            .expect("the annotation");
        serde_json::from_str(json).expect("JSON")
    }

    fn edit_record(cm: &mut ConfigMap, holder: &str, renew_time: &str) {
        let annotations = cm.metadata.annotations.as_mut().unwrap();
        let mut record: serde_json::Value =
            serde_json::from_str(&annotations[ANNOTATION]).expect("JSON");
        record["holderIdentity"] = holder.into();
        record["renewTime"] = renew_time.into();
        annotations.insert(ANNOTATION.to_owned(), record.to_string());
    }
}
