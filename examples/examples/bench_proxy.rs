//! What the sidecar's API proxy (`election_ops::proxy`, `leader-elector run
//! --api-proxy`) costs a program: the same `kube` client requests sent to the
//! API server directly and through the proxy of a leading candidate (guard,
//! stamp, one more loopback hop), in one run, rounds interleaved:
//!
//! - **latency**: the median round trip of a read (`get`) and of a write (a
//!   merge patch that changes the object, stamped through the proxy), each
//!   sent one after the other;
//! - **throughput**: reads per second from 16 concurrent tasks for a while.
//!
//! On the project's API emulator by default; with `--apiserver`, on the real
//! kube-apiserver too (`test_kit::apiserver`, built by `.ci/install`).
//! `cargo run --release --example bench_proxy`
//! (`-- --quick` for the smoke run). Figures and machine in BENCHMARKS.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use election_ops::client::guarded_client;
use election_ops::guard::WriteGuardLayer;
use election_ops::proxy::ApiProxy;
use election_ops::stamp::TermAnnotationLayer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use lock_lease::LeaseLock;
use test_kit::figures::median;
use test_kit::poll::Poll;

/// A leading candidate on `config`'s server, in `namespace`.
async fn leader(config: kube::Config, namespace: &str) -> Arc<Handle> {
    let client = lock_kube::lock_client(config).expect("client");
    let lock = LeaseLock::builder(client, namespace, "bench-proxy")
        .build()
        .expect("valid names");
    let handle = Arc::new(
        Builder::new(lock, Config::fast("bench"))
            .spawn(TokioRuntime::current().expect("inside tokio"))
            .expect("valid config"),
    );
    Poll::within(Duration::from_secs(20))
        .every(Duration::from_millis(5))
        .until("the candidate leads", || handle.is_leader())
        .await;
    handle
}

/// The proxy of `handle` in front of `config`'s server; a client of it, as a
/// program given the proxy's kubeconfig builds one.
async fn proxied(config: kube::Config, handle: &Arc<Handle>, namespace: &str) -> kube::Client {
    let mut upstream = config;
    upstream.default_retry = false;
    let guard = WriteGuardLayer::new(Arc::clone(handle));
    let stamp = TermAnnotationLayer::new(Arc::clone(handle));
    let client = guarded_client(upstream, &guard, Some(&stamp)).expect("client");
    let addr = ApiProxy::new(client)
        .spawn("127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("bind");
    let mut config = kube::Config::new(format!("http://{addr}").parse().expect("a URL"));
    config.default_namespace = namespace.to_owned();
    kube::Client::try_from(config).expect("client")
}

/// `n` reads, then `n` writes, one after the other: the medians.
async fn round_trips(api: &Api<ConfigMap>, n: usize, seq: &mut u64) -> (Duration, Duration) {
    let mut reads = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        api.get("target").await.expect("a read");
        reads.push(start.elapsed());
    }
    let mut writes = Vec::with_capacity(n);
    for _ in 0..n {
        *seq += 1;
        let patch = serde_json::json!({ "data": { "n": seq.to_string() } });
        let start = Instant::now();
        api.patch("target", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("a write");
        writes.push(start.elapsed());
    }
    (median(reads), median(writes))
}

/// Reads per second from `tasks` concurrent tasks during `window`.
async fn throughput(api: &Api<ConfigMap>, tasks: usize, window: Duration) -> f64 {
    let start = Instant::now();
    let workers: Vec<_> = (0..tasks)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move {
                let mut done = 0u64;
                while start.elapsed() < window {
                    api.get("target").await.expect("a read");
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for w in workers {
        total += w.await.expect("a task");
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// One server: the figures, direct and through the proxy, and their ratios.
async fn bench(name: &str, config: kube::Config, namespace: &str, quick: bool) {
    let handle = leader(config.clone(), namespace).await;
    let direct: Api<ConfigMap> = Api::namespaced(
        kube::Client::try_from(config.clone()).expect("client"),
        namespace,
    );
    let through: Api<ConfigMap> =
        Api::namespaced(proxied(config, &handle, namespace).await, namespace);
    let mut target = ConfigMap::default();
    target.metadata.name = Some("target".to_owned());
    let _ = direct.create(&PostParams::default(), &target).await;
    let (rounds, n, window) = if quick {
        (1, 20, Duration::from_millis(300))
    } else {
        (5, 200, Duration::from_secs(3))
    };
    let mut seq = 0;
    let (mut d_rt, mut p_rt, mut d_tp, mut p_tp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        d_rt.push(round_trips(&direct, n, &mut seq).await);
        p_rt.push(round_trips(&through, n, &mut seq).await);
        d_tp.push(throughput(&direct, 16, window).await);
        p_tp.push(throughput(&through, 16, window).await);
    }
    let mid = |v: &[(Duration, Duration)], f: fn(&(Duration, Duration)) -> Duration| {
        median(v.iter().map(f).collect())
    };
    let (dr, dw) = (mid(&d_rt, |x| x.0), mid(&d_rt, |x| x.1));
    let (pr, pw) = (mid(&p_rt, |x| x.0), mid(&p_rt, |x| x.1));
    let tp = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (dt, pt) = (tp(&mut d_tp), tp(&mut p_tp));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("{name} ({rounds} rounds of {n} requests each way, 16 readers for {window:?}):");
    println!("| | direct | through the proxy | added | ratio |");
    println!("|---|---|---|---|---|");
    for (what, d, p) in [
        ("read (get), median", dr, pr),
        ("write (merge patch), median", dw, pw),
    ] {
        println!(
            "| {what} | {:.2} ms | {:.2} ms | {:+.2} ms | {:.2}x |",
            ms(d),
            ms(p),
            ms(p) - ms(d),
            ms(p) / ms(d)
        );
    }
    println!(
        "| reads per second, 16 tasks | {dt:.0} | {pt:.0} | | {:.2}x |",
        pt / dt
    );
    let stamped = direct.get("target").await.expect("a read");
    let annotations = stamped.metadata.annotations.unwrap_or_default();
    assert!(
        annotations.contains_key(election_ops::stamp::TERM_ANNOTATION),
        "the proxied writes were stamped: {annotations:?}"
    );
    handle.shutdown().await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let emu = kube_emulator::Emulator::start().await.expect("emulator");
    bench("the emulator", emu.kube_config("bench"), "default", quick).await;
    if args.iter().any(|a| a == "--apiserver") {
        let (config, namespace) = tokio::task::spawn_blocking(|| {
            use test_kit::apiserver::{ADMIN, ApiServer, Server};
            let server = ApiServer::shared();
            (server.kube_config(ADMIN), server.namespace())
        })
        .await
        .expect("kube-apiserver");
        bench("kube-apiserver", config, &namespace, quick).await;
    }
}
