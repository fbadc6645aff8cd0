//! Each library reads the other's record exactly, on the real kube-apiserver:
//! the Lease as client-go writes it (an acquisition, a renewal, a release, in
//! coordinated mode with `strategy` and `preferredHolder`), as kube-elector
//! writes it, and as kube-apiserver's coordinator writes it, read by
//! kube-elector's codec (`lock_lease::record`) and by client-go's LeaseLock
//! (`client-go-peer --read`), every field compared with what the API server
//! stored; and each written again by kube-elector's codec loses no field.
//! Ignored in the workspace run; `.ci/run` runs it.

use std::time::Duration;

use fleet::harness::{Fleet, LEASE, TIMINGS_MS};
use fleet::line::{Event, mono_now};
use fleet::peer::Signal;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube_elector::core::{Stamp, WallTime};
use kube_elector::lease::record::{record_from_lease, spec_from_record};
use serde_json::Value;
use test_kit::apiserver::ADMIN;
use test_kit::runtimes::Runtime;

/// kube-elector's peer, built by cargo for this test.
const ELECTOR_PEER: &str = env!("CARGO_BIN_EXE_elector-peer");

/// An RFC 3339 time as (seconds, nanoseconds).
fn instant(s: &str) -> (i64, u32) {
    let t: jiff::Timestamp = s.parse().unwrap_or_else(|e| panic!("a time {s:?}: {e}"));
    (
        t.as_second(),
        u32::try_from(t.subsec_nanosecond()).expect("positive"),
    )
}

fn stamp_instant(stamp: Stamp) -> Option<(i64, u32)> {
    match stamp {
        Stamp::At(WallTime { unix_secs, nanos }) => Some((unix_secs, nanos)),
        _ => None,
    }
}

/// The Lease as the API server stores it, typed and as JSON.
async fn stored(fleet: &Fleet) -> (Lease, Value) {
    use test_kit::apiserver::Server;
    let api: Api<Lease> = Api::namespaced(fleet.server.client(ADMIN), &fleet.ns);
    let lease = api.get(LEASE).await.expect("the Lease");
    let raw = serde_json::to_value(&lease).expect("JSON");
    (lease, raw)
}

/// The record as client-go's LeaseLock reads it.
fn client_go_reads(fleet: &Fleet) -> Value {
    let out = std::process::Command::new(fleet::harness::client_go_peer())
        .args(["--read", "--lease", LEASE, "--namespace", &fleet.ns])
        .arg("--kubeconfig")
        .arg(&fleet.kubeconfig)
        .output()
        .expect("client-go-peer --read");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

/// Both libraries read what the API server stored, field by field; the record
/// written again by kube-elector's codec keeps every stored field.
async fn read_exactly(fleet: &Fleet, what: &str) -> Value {
    // One version of the Lease read by both (the holder renews meanwhile).
    let (lease, raw, go) = loop {
        let (lease, raw) = stored(fleet).await;
        let go = client_go_reads(fleet);
        if go["resourceVersion"] == raw["metadata"]["resourceVersion"] {
            break (lease, raw, go);
        }
    };
    let spec = &raw["spec"];
    let ours = record_from_lease(&lease);
    eprintln!("{what}: stored {spec}\n  client-go reads {go}");
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    assert_eq!(
        text(&go["holderIdentity"]),
        text(&spec["holderIdentity"]),
        "{what}"
    );
    assert_eq!(&*ours.holder, text(&spec["holderIdentity"]), "{what}");
    assert_eq!(
        go["leaseDurationSeconds"].as_i64(),
        Some(spec["leaseDurationSeconds"].as_i64().unwrap_or(0)),
        "{what}"
    );
    assert_eq!(
        ours.lease_duration_secs,
        spec["leaseDurationSeconds"].as_i64(),
        "{what}"
    );
    let transitions = spec["leaseTransitions"].as_i64().unwrap_or(0);
    assert_eq!(
        go["leaderTransitions"].as_i64(),
        Some(transitions),
        "{what}"
    );
    assert_eq!(i64::from(ours.transitions), transitions, "{what}");
    for (field, ours) in [
        ("acquireTime", ours.acquire_time),
        ("renewTime", ours.renew_time),
    ] {
        let stored = spec[field].as_str().map(instant);
        let go = Some(text(&go[field]))
            .filter(|t| !t.is_empty())
            .map(|t| instant(&t));
        assert_eq!(go, stored, "{what}: client-go's {field}");
        assert_eq!(
            stamp_instant(ours),
            stored,
            "{what}: kube-elector's {field}"
        );
    }
    assert_eq!(text(&go["strategy"]), text(&spec["strategy"]), "{what}");
    assert_eq!(
        ours.strategy.as_deref().unwrap_or(""),
        text(&spec["strategy"]),
        "{what}"
    );
    assert_eq!(
        text(&go["preferredHolder"]),
        text(&spec["preferredHolder"]),
        "{what}"
    );
    let preferred = ours.handover.as_ref().map_or("", |h| &*h.to);
    assert_eq!(preferred, text(&spec["preferredHolder"]), "{what}");

    // Written again (a time of the write that no stamp uses), no field lost.
    let now = WallTime {
        unix_secs: 0,
        nanos: 0,
    };
    let again = serde_json::to_value(spec_from_record(&ours, now)).expect("JSON");
    for (key, value) in spec.as_object().expect("a spec") {
        let same = match key.as_str() {
            "acquireTime" | "renewTime" => {
                again[key].as_str().map(instant) == value.as_str().map(instant)
            }
            _ => &again[key] == value,
        };
        assert!(
            same,
            "{what}: {key} written again as {} (stored {value})",
            again[key]
        );
    }
    spec.clone()
}

#[test]
#[ignore = "needs the built kube-apiserver and client-go peer: bash testing/k8s-server/build.sh; CI runs it"]
fn each_library_reads_the_others_record_exactly() {
    Runtime::Tokio.run(|| async {
        let lease = Duration::from_millis(TIMINGS_MS.0);
        let mut fleet = Fleet::new(ELECTOR_PEER.as_ref()).await;
        fleet.start("g-0", None).await;
        fleet
            .next_leader(0, "", lease * 3)
            .await
            .expect("g-0 leads");
        // Past client-go's first renewal.
        tokio::time::sleep(Duration::from_millis(TIMINGS_MS.2 * 2)).await;
        read_exactly(&fleet, "client-go's acquisition and renewal").await;

        fleet.start("r-0", None).await;
        let since = mono_now();
        fleet.signal("g-0", Signal::Term).await;
        let spec = read_exactly(
            &fleet,
            "client-go's release, or kube-elector's acquisition after it",
        )
        .await;
        let (next, _) = fleet
            .next_leader(since, "g-0", lease * 3)
            .await
            .expect("r-0 leads");
        assert_eq!(next, "r-0");
        if spec["holderIdentity"] == "" {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_millis(TIMINGS_MS.2 * 2)).await;
        read_exactly(&fleet, "kube-elector's acquisition and renewal").await;
        fleet.signal("r-0", Signal::Term).await;
        let spec = read_exactly(&fleet, "kube-elector's release").await;
        assert_eq!(spec["holderIdentity"], "", "released");
        fleet.finish().await.assert_clean();
    });
}

#[test]
#[ignore = "needs the built kube-apiserver and client-go peer: bash testing/k8s-server/build.sh; CI runs it"]
fn each_library_reads_the_coordinators_and_the_others_coordinated_record_exactly() {
    Runtime::Tokio.run(|| async {
        let mut fleet = Fleet::new(ELECTOR_PEER.as_ref()).await;
        // client-go on 1.36 alone: the coordinator assigns it the Lease.
        fleet.start("g-0", Some("1.36.0")).await;
        fleet
            .next_leader(0, "", Duration::from_secs(30))
            .await
            .expect("the coordinator assigns g-0");
        read_exactly(
            &fleet,
            "the coordinator's assignment, then client-go's renewals",
        )
        .await;
        // kube-elector on 1.35 (older: better by OldestEmulationVersion): the
        // coordinator names it preferredHolder; client-go ends its term.
        let since = mono_now();
        fleet.start("r-0", Some("1.35.0")).await;
        let started = std::time::Instant::now();
        loop {
            let (_, raw) = stored(&fleet).await;
            if raw["spec"]["preferredHolder"] == "r-0" {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no preferredHolder: {raw}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        read_exactly(&fleet, "the coordinator's preferredHolder").await;
        let (next, _) = fleet
            .next_leader(since, "g-0", Duration::from_secs(30))
            .await
            .expect("r-0 takes over");
        assert_eq!(next, "r-0");
        tokio::time::sleep(Duration::from_millis(TIMINGS_MS.2 * 2)).await;
        let spec = read_exactly(&fleet, "kube-elector's coordinated renewal").await;
        assert_eq!(spec["holderIdentity"], "r-0");
        assert!(
            fleet
                .log
                .lines()
                .iter()
                .all(|l| l.event != Event::Leading || l.identity != "r-0" || l.mono > since),
            "r-0 led only after it joined"
        );
        fleet.finish().await.assert_clean();
    });
}
