//! What server-side fencing costs, on the project's API emulator with the real
//! `kube` client, policy off and on in one run (rounds interleaved):
//!
//! - **per write**: the round trip of a stamped ConfigMap replace, as the leader
//!   makes it (the emulator evaluates the policy's CEL on each write it matches);
//! - **handover**: from a graceful `shutdown` of the leader to the first write the
//!   new leader's application gets accepted (it writes once its handle says it
//!   leads; a refused write is retried every millisecond).
//!
//! `cargo run --release -p election-ops --example bench_fence --features fence`
//! (`-- --quick` for the smoke run). Figures and machine in BENCHMARKS.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use election_ops::fence::{FencePolicy, Protected};
use election_ops::guard::TermAnnotationLayer;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube_emulator::Emulator;
use lock_lease::LeaseLock;

const LEASE: &str = "bench-fence";

fn candidate(emu: &Emulator, id: &str) -> Arc<Handle> {
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    let lock = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("valid names");
    let config = Config::fast(id).seed(id.len() as u64);
    Arc::new(
        Builder::new(lock, config)
            .spawn(TokioRuntime::current().expect("inside tokio"))
            .expect("valid config"),
    )
}

/// The ConfigMap API as `handle`'s application writes it: stamped with its term.
fn stamped_api(emu: &Emulator, handle: &Arc<Handle>, token: &str) -> Api<ConfigMap> {
    let client = kube::client::ClientBuilder::try_from(emu.kube_config(token))
        .expect("config")
        .with_layer(&TermAnnotationLayer::new(Arc::clone(handle)))
        .build();
    Api::namespaced(client, "default")
}

async fn until(within: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < within, "timed out");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn set_policy(emu: &Emulator, on: bool) {
    let fence = FencePolicy::new("default", LEASE).protect(Protected::new("", "v1", "configmaps"));
    let admin = emu.client("admin").expect("client");
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(admin.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(admin);
    let name = "fence-bench-fence";
    if on {
        let p = serde_json::from_value(fence.policy().expect("policy")).expect("typed");
        let b = serde_json::from_value(fence.binding().expect("binding")).expect("typed");
        policies
            .create(&PostParams::default(), &p)
            .await
            .expect("policy");
        bindings
            .create(&PostParams::default(), &b)
            .await
            .expect("binding");
    } else {
        let _ = bindings.delete(name, &DeleteParams::default()).await;
        let _ = policies.delete(name, &DeleteParams::default()).await;
    }
}

/// `n` replaces of one ConfigMap through `api`; the median round trip.
async fn writes(api: &Api<ConfigMap>, n: usize) -> Duration {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("w".to_owned());
    let mut cm = match api.get_opt("w").await.expect("read") {
        Some(cm) => cm,
        None => api
            .create(&PostParams::default(), &cm)
            .await
            .expect("create"),
    };
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        cm.data = Some([("i".to_owned(), i.to_string())].into());
        let start = Instant::now();
        cm = api
            .replace("w", &PostParams::default(), &cm)
            .await
            .expect("the leader's write passes");
        times.push(start.elapsed());
    }
    times.sort();
    times[n / 2]
}

/// A leader and a follower; the leader shuts down; the time until the new
/// leader's first accepted write.
async fn handover(emu: &Emulator, round: usize) -> Duration {
    let (ida, idb) = (format!("a{round}"), format!("b{round}"));
    let a = candidate(emu, &ida);
    until(Duration::from_secs(10), || a.is_leader()).await;
    let b = candidate(emu, &idb);
    let api_b = stamped_api(emu, &b, &format!("app-{idb}"));
    tokio::time::sleep(Duration::from_millis(300)).await; // b follows
    let start = Instant::now();
    a.shutdown().await;
    let name = format!("h{round}");
    // The new leader's application writes once its handle says it leads (as a
    // guarded client would), retrying a refused write every millisecond.
    loop {
        until(Duration::from_secs(10), || b.term().is_some()).await;
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.clone());
        if api_b.create(&PostParams::default(), &cm).await.is_ok() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no handover");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = start.elapsed();
    b.shutdown().await;
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, per_round, handovers) = if quick { (2, 20, 1) } else { (6, 200, 5) };
    let emu = Emulator::start().await.expect("emulator");
    let leader = candidate(&emu, "writer");
    until(Duration::from_secs(10), || leader.is_leader()).await;
    let api = stamped_api(&emu, &leader, "app-writer");

    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        set_policy(&emu, false).await;
        off.push(writes(&api, per_round).await);
        set_policy(&emu, true).await;
        on.push(writes(&api, per_round).await);
    }
    leader.shutdown().await;
    let (w_off, w_on) = (median(off), median(on));

    let (mut h_off, mut h_on) = (Vec::new(), Vec::new());
    for round in 0..handovers {
        set_policy(&emu, false).await;
        h_off.push(handover(&emu, 2 * round).await);
        set_policy(&emu, true).await;
        h_on.push(handover(&emu, 2 * round + 1).await);
    }
    let (h_off, h_on) = (median(h_off), median(h_on));

    println!(
        "server-side fencing on the emulator, Config::fast, {rounds} rounds x {per_round} writes, {handovers} handovers per mode{}",
        if quick { " (QUICK smoke mode)" } else { "" }
    );
    println!(
        "stamped write round trip, median: policy off {}, on {} (x{:.2})",
        ms(w_off),
        ms(w_on),
        w_on.as_secs_f64() / w_off.as_secs_f64()
    );
    println!(
        "handover, shutdown -> new leader's first accepted write, median: policy off {}, on {} (x{:.2})",
        ms(h_off),
        ms(h_on),
        h_on.as_secs_f64() / h_off.as_secs_f64()
    );
}
