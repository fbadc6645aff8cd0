//! What one request through the emulator costs, as the real `kube::Client`
//! sees it over HTTP on 127.0.0.1: a GET, a compare-and-swap PUT, and the
//! delay from a write to its watch event. These are the floor under any
//! timing measured against the emulator by other crates' benchmarks.
//!
//! Run: `cargo bench -p kube-emulator --bench requests`

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube_emulator::Emulator;

fn lease(holder: &str) -> Lease {
    let mut l = Lease::default();
    l.metadata.name = Some("lock".into());
    l.spec = Some(LeaseSpec {
        holder_identity: Some(holder.into()),
        lease_duration_seconds: Some(15),
        ..LeaseSpec::default()
    });
    l
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (emu, api) = rt.block_on(async {
        let emu = Emulator::start().await.expect("start");
        let api: Api<Lease> = Api::namespaced(emu.client("bench").expect("client"), "default");
        api.create(&PostParams::default(), &lease("a"))
            .await
            .expect("create");
        (emu, api)
    });

    c.bench_function("lease_get", |b| {
        b.iter(|| rt.block_on(api.get("lock")).expect("get"));
    });

    let mut current = rt.block_on(api.get("lock")).expect("get");
    let mut n = 0u64;
    c.bench_function("lease_update_cas", |b| {
        b.iter(|| {
            n += 1;
            current.spec.as_mut().expect("spec").holder_identity = Some(format!("h{n}"));
            current = rt
                .block_on(api.replace("lock", &PostParams::default(), &current))
                .expect("update");
        });
    });

    let mut stream = rt
        .block_on(
            api.watch(
                &WatchParams::default()
                    .fields("metadata.name=lock")
                    .timeout(290)
                    .disable_bookmarks(),
                "0",
            ),
        )
        .expect("watch")
        .boxed();
    rt.block_on(stream.next()).expect("initial").expect("added");
    c.bench_function("update_to_watch_event", |b| {
        b.iter(|| {
            n += 1;
            current.spec.as_mut().expect("spec").holder_identity = Some(format!("h{n}"));
            rt.block_on(async {
                current = api
                    .replace("lock", &PostParams::default(), &current)
                    .await
                    .expect("update");
                match stream.next().await {
                    Some(Ok(WatchEvent::Modified(_))) => {}
                    other => panic!("expected MODIFIED, got {other:?}"),
                }
            });
        });
    });
    drop(stream);
    drop(emu);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
