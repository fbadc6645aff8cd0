//! What server-side fencing costs, on the project's API emulator with the real
//! `kube` client, policy off and on in one run (rounds interleaved):
//!
//! - **per write**: the round trip of a stamped ConfigMap replace and of a stamped
//!   JSON patch, as the leader makes them (the emulator evaluates the policy's CEL
//!   on each write it matches), and of a delete: unstamped (one request), and
//!   stamped (the deletion mark, then the delete);
//! - **handover**: from a graceful `shutdown` of the leader to the first write the
//!   new leader's application gets accepted (it writes once its handle says it
//!   leads; a refused write is retried every millisecond).
//!
//! `cargo run --release --example bench_fence`
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
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_emulator::Emulator;
use lock_lease::LeaseLock;
use test_kit::figures::median;
use test_kit::poll::Poll;

const LEASE: &str = "bench-fence";

fn candidate(emu: &Emulator, id: &str) -> Arc<Handle> {
    let client = lock_kube::lock_client(emu.kube_config(id)).expect("client");
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

/// The ConfigMap API as the application of `handle` (the candidate `id`)
/// writes it: from its Pod, named as its identity (the default fence's writer
/// check), stamped with its term.
fn stamped_api(emu: &Emulator, handle: &Arc<Handle>, id: &str) -> Api<ConfigMap> {
    let token = format!("app-{id}");
    emu.set_user(&token, kube_emulator::UserInfo::pod("default", "app", id));
    let client = kube::client::ClientBuilder::try_from(emu.kube_config(&token))
        .expect("config")
        .with_layer(&TermAnnotationLayer::new(Arc::clone(handle)))
        .build();
    Api::namespaced(client, "default")
}

/// Waits until `ok` (`what` says for what), for at most 10 s, looking every 2 ms.
async fn until(what: &str, ok: impl FnMut() -> bool) {
    let within = Duration::from_secs(10);
    Poll::within(within)
        .every(Duration::from_millis(2))
        .until(what, ok)
        .await;
}

async fn set_policy(emu: &Emulator, on: bool) {
    let fence = FencePolicy::new("default", LEASE).protect(Protected::new("", "v1", "configmaps"));
    let admin = emu.client("admin").expect("client");
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(admin.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(admin);
    let name = "fence-bench-fence";
    if on {
        fence
            .apply(emu.client("admin").expect("client"))
            .await
            .expect("policy and binding");
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
    median(times)
}

/// `n` JSON patches of the ConfigMap `w` through `api`; the median round trip.
async fn json_patches(api: &Api<ConfigMap>, n: usize) -> Duration {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let ops: json_patch::Patch = serde_json::from_value(serde_json::json!([
            {"op": "add", "path": "/data/j", "value": i.to_string()}
        ]))
        .expect("a JSON patch");
        let start = Instant::now();
        api.patch("w", &PatchParams::default(), &Patch::Json::<()>(ops))
            .await
            .expect("the leader's JSON patch passes");
        times.push(start.elapsed());
    }
    median(times)
}

/// `n` deletes through `api` of ConfigMaps `writer` creates just before; the
/// median delete round trip (through the stamp layer: the mark, then the delete).
async fn deletes(writer: &Api<ConfigMap>, api: &Api<ConfigMap>, n: usize) -> Duration {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("d{i}"));
        writer
            .create(&PostParams::default(), &cm)
            .await
            .expect("create");
        let start = Instant::now();
        api.delete(&format!("d{i}"), &DeleteParams::default())
            .await
            .expect("the leader's delete passes");
        times.push(start.elapsed());
    }
    median(times)
}

/// A leader and a follower; the leader shuts down; the time until the new
/// leader's first accepted write.
async fn handover(emu: &Emulator, round: usize) -> Duration {
    let (ida, idb) = (format!("a{round}"), format!("b{round}"));
    let a = candidate(emu, &ida);
    until("a leads", || a.is_leader()).await;
    let b = candidate(emu, &idb);
    let api_b = stamped_api(emu, &b, &idb);
    tokio::time::sleep(Duration::from_millis(300)).await; // b follows
    let start = Instant::now();
    a.shutdown().await;
    let name = format!("h{round}");
    // The new leader's application writes once its handle says it leads (as a
    // guarded client would), retrying a refused write every millisecond.
    loop {
        until("b leads", || b.term().is_some()).await;
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

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, per_round, handovers) = if quick { (2, 20, 1) } else { (6, 200, 5) };
    let emu = Emulator::start().await.expect("emulator");
    let leader = candidate(&emu, "writer");
    until("a leader", || leader.is_leader()).await;
    let api = stamped_api(&emu, &leader, "writer");

    // The same writes unstamped (no layer), the policy off: what stamping costs.
    let plain: Api<ConfigMap> =
        Api::namespaced(emu.client("app-plain").expect("client"), "default");
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let (mut j_off, mut j_on) = (Vec::new(), Vec::new());
    let (mut d_plain, mut d_off, mut d_on) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        set_policy(&emu, false).await;
        off.push(writes(&api, per_round).await);
        j_off.push(json_patches(&api, per_round).await);
        d_plain.push(deletes(&api, &plain, per_round).await);
        d_off.push(deletes(&api, &api, per_round).await);
        set_policy(&emu, true).await;
        on.push(writes(&api, per_round).await);
        j_on.push(json_patches(&api, per_round).await);
        d_on.push(deletes(&api, &api, per_round).await);
    }
    leader.shutdown().await;
    let (w_off, w_on) = (median(off), median(on));
    let (j_off, j_on) = (median(j_off), median(j_on));
    let (d_plain, d_off, d_on) = (median(d_plain), median(d_off), median(d_on));

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
        "stamped JSON patch round trip, median: policy off {}, on {} (x{:.2})",
        ms(j_off),
        ms(j_on),
        j_on.as_secs_f64() / j_off.as_secs_f64()
    );
    println!(
        "delete round trip, median: unstamped (one request, policy off) {}, stamped (mark + delete) policy off {} (x{:.2}), on {} (x{:.2})",
        ms(d_plain),
        ms(d_off),
        d_off.as_secs_f64() / d_plain.as_secs_f64(),
        ms(d_on),
        d_on.as_secs_f64() / d_plain.as_secs_f64()
    );
    println!(
        "handover, shutdown -> new leader's first accepted write, median: policy off {}, on {} (x{:.2})",
        ms(h_off),
        ms(h_on),
        h_on.as_secs_f64() / h_off.as_secs_f64()
    );
}
