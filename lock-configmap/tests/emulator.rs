//! The ConfigMap lock against the project's API emulator: the Kubernetes lock
//! suite (`test_kit::kube_lock`, shared with the Lease lock), each case named after
//! the docs/faults.md row it covers, and the cases of the ConfigMap record alone (its
//! annotation, malformed records, other clients' formats); each test runs on
//! tokio, smol and async-std (`on_tokio::a1_…`, `on_smol::a1_…`,
//! `on_async_std::a1_…`).

mod common;

use std::collections::BTreeMap;

use common::ConfigMapSuite;
use election_core::{Lock, Stamp, Version};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_emulator::Emulator;
use test_kit::kube_lock::{NS, held, lock, raw, record, start, unique};
use test_kit::runtimes::compat;

/// Writes a ConfigMap as another client would, returning its version.
async fn foreign(emu: &Emulator, name: &str, annotation: &str) -> Version {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.annotations = Some(BTreeMap::from([(
        lock_configmap::record::ANNOTATION.to_owned(),
        annotation.to_owned(),
    )]));
    cm.data = Some(BTreeMap::from([(
        "app.yaml".to_owned(),
        "replicas: 3".to_owned(),
    )]));
    let created = compat(async {
        let api: Api<ConfigMap> = Api::namespaced(emu.client("other-client").unwrap(), NS);
        api.create(&PostParams::default(), &cm).await
    })
    .await
    .expect("create");
    Version::new(created.metadata.resource_version.unwrap())
}

async fn create_makes_a_configmap_with_just_the_annotation() {
    let emu = start();
    let name = unique("create");
    lock::<ConfigMapSuite>(&emu, "a", NS, &name)
        .create(&held("a", 0))
        .await
        .expect("create");
    let obj = raw::<ConfigMapSuite>(&emu, &name);
    assert!(
        obj.get("data").is_none_or(serde_json::Value::is_null),
        "{obj}"
    );
    let annotations = obj["metadata"]["annotations"].as_object().unwrap();
    assert_eq!(annotations.len(), 1, "{annotations:?}");
}

async fn r6_a_malformed_record_is_held_by_an_unknown_holder_and_taken_over_by_cas() {
    let emu = start();
    let name = unique("r6");
    let v = foreign(
        &emu,
        &name,
        r#"{"holderIdentity":"x","leaseDurationSeconds":"fifteen"}"#,
    )
    .await;
    let a = lock::<ConfigMapSuite>(&emu, "a", NS, &name);
    let seen = a.get().await.expect("no permanent error");
    assert_eq!(seen.version, v);
    assert_eq!(
        seen.record.holder.as_ref(),
        lock_configmap::record::MALFORMED_HOLDER
    );
    assert_eq!(seen.record.lease_duration_secs, None);
    // After a lease (the elector's business), a compare-and-swap takes it over.
    let taken = a.update(&seen.version, &held("a", 1)).await.expect("CAS");
    assert_eq!(taken.record.holder.as_ref(), "a");
    assert_eq!(record::<ConfigMapSuite>(&emu, &name)["holderIdentity"], "a");
    assert_eq!(
        raw::<ConfigMapSuite>(&emu, &name)["data"]["app.yaml"],
        "replicas: 3",
        "data untouched"
    );
}

async fn r11_fabric8_and_python_records_are_read_and_replaced_by_client_gos() {
    let emu = start();
    for (i, json) in [
        r#"{"holderIdentity":"java","leaseDuration":"PT15S","acquireTime":"2026-08-07T23:11:09.123456Z","renewTime":"2026-08-07T23:11:09.123456Z","leaderTransitions":3}"#,
        r#"{"holderIdentity":"python","leaseDurationSeconds":"15","acquireTime":"2026-08-17 23:11:09.123456","renewTime":"2026-08-17 23:11:09.123456"}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let name = unique("r11");
        let v = foreign(&emu, &name, json).await;
        let a = lock::<ConfigMapSuite>(&emu, "a", NS, &name);
        let seen = a.get().await.expect("read");
        assert_eq!(seen.version, v);
        assert_eq!(seen.record.lease_duration_secs, Some(15), "{json}");
        assert_eq!(seen.record.holder.as_ref(), ["java", "python"][i]);
        assert!(matches!(seen.record.renew_time, Stamp::At(_)));
        a.update(&seen.version, &held("a", seen.record.transitions + 1))
            .await
            .expect("CAS");
        let written = record::<ConfigMapSuite>(&emu, &name);
        assert_eq!(written["leaseDurationSeconds"], 15);
        assert_eq!(written["renewTime"], "2026-08-07T23:11:09Z");
    }
}

test_kit::kube_lock_suite!(ConfigMapSuite; extra:
    create_makes_a_configmap_with_just_the_annotation,
    r6_a_malformed_record_is_held_by_an_unknown_holder_and_taken_over_by_cas,
    r11_fabric8_and_python_records_are_read_and_replaced_by_client_gos,
);
