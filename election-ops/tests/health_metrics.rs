//! Health, the HTTP endpoint and the metrics with a real driver on the Lease lock
//! over the API emulator: a wedged driver (A14), wedged leader work (H6), and a
//! scrape of the metrics text.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use common::{LEASE, candidate, get, value, wait_until};
use election_core::{Config, Layer, Layered, Lock, LockError, LockRecord, Observation, Version};
use election_driver::Builder;
use election_ops::health::{Health, Heartbeat, ReadyWhen, Unhealthy};
use election_ops::http::Endpoint;
use election_ops::{LeadershipView, Monitor};
use kube_emulator::{Emulator, Match, Resource, Verb};
use lock_lease::LeaseLock;

/// A lock whose updates block the calling thread while `wedged` is set (up to 10 s):
/// a hung call the driver cannot time out. `blocked` is set once one does.
struct Wedging {
    wedged: Arc<AtomicBool>,
    blocked: Arc<AtomicBool>,
    release: Arc<Mutex<std::sync::mpsc::Receiver<()>>>,
}

impl<L: Lock> Layer<L> for Wedging {
    async fn update(
        &self,
        inner: &L,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        if self.wedged.load(Ordering::SeqCst) {
            self.blocked.store(true, Ordering::SeqCst);
            let rx = self.release.lock().unwrap();
            let _ = rx.recv_timeout(Duration::from_secs(10));
        }
        inner.update(expected, record).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a14_hung_renew_that_wedges_the_driver_fails_liveness() {
    let emu = Emulator::start().await.expect("emulator");
    let config = Config::fast("node-a").seed(5);
    let client = lock_kube::lock_client(emu.kube_config("node-a")).expect("client");
    let lease = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("lock");
    let wedged = Arc::new(AtomicBool::new(false));
    let blocked = Arc::new(AtomicBool::new(false));
    let (unblock, rx) = std::sync::mpsc::channel();
    let lock = Layered::new(
        lease,
        Wedging {
            wedged: Arc::clone(&wedged),
            blocked: Arc::clone(&blocked),
            release: Arc::new(Mutex::new(rx)),
        },
    );
    let monitor = Monitor::new("leases/default/ops-lease", "node-a");
    // The driver runs on its own one-thread runtime, so that a blocked call wedges
    // it (and nothing else).
    let observed = monitor.lock(lock);
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let driver_thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let handle = Builder::new(observed, config)
                .spawn(TokioRuntime::current().expect("inside tokio"))
                .expect("config");
            handle_tx.send(handle).expect("send handle");
            let _ = stop_rx.await;
        });
    });
    let handle = Arc::new(handle_rx.recv().expect("handle"));
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
    let health = Health::new(Arc::clone(&handle))
        .tolerance(Duration::from_millis(200))
        .monitor(Arc::clone(&monitor));
    let mut registry = prometheus_client::registry::Registry::default();
    monitor.register_metrics(&mut registry);
    let addr = Endpoint::new(health)
        .metrics(Arc::clone(&monitor), registry)
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");

    assert!(wait_until(Duration::from_secs(10), || handle.is_leader()).await);
    assert_eq!(get(addr, "/healthz").await.0, 200);
    let healthy_series = r#"leader_election_healthy{name="ops-lease"}"#;
    assert_eq!(
        value(&get(addr, "/metrics").await.1, healthy_series),
        Some(1.0)
    );
    assert!(
        wait_until(Duration::from_secs(5), || monitor
            .snapshot()
            .last_renew
            .is_some())
        .await
    );
    wedged.store(true, Ordering::SeqCst);
    // The deadline is final once a renew blocks: one that was past the wedge
    // when it was set may still have moved it (read before, the check below
    // waited for a deadline already renewed past, and /healthz said 200).
    assert!(wait_until(Duration::from_secs(5), || blocked.load(Ordering::SeqCst)).await);
    let deadline = handle.deadline().expect("leading");
    // The next renew hangs the driver; past deadline + tolerance liveness fails.
    assert!(
        wait_until(Duration::from_secs(5), || {
            handle.now() > deadline.saturating_add(Duration::from_millis(250))
        })
        .await
    );
    assert!(!handle.is_leader(), "is_leader is time-bounded");
    assert!(
        handle.believes_leading(),
        "the wedged driver never published the loss: {:?} {:?}",
        handle.state(),
        monitor.snapshot()
    );
    let (code, body) = get(addr, "/healthz").await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("has not renewed"), "{body}");
    // The alert on a leader whose healthz fails reads this gauge.
    let text = get(addr, "/metrics").await.1;
    assert_eq!(value(&text, healthy_series), Some(0.0), "{text}");
    let (_, status) = get(addr, "/status").await;
    let status: serde_json::Value = serde_json::from_str(&status).expect("json");
    assert_eq!(status["healthy"], false);
    assert_eq!(status["is_leader"], false);
    assert!(
        status["last_renew_unix_secs"].as_f64().is_some(),
        "{status}"
    );
    assert!(
        status["deadline_in_secs"].as_f64().unwrap() < -0.2,
        "{status}"
    );

    wedged.store(false, Ordering::SeqCst);
    let _ = unblock.send(());
    // Unwedged, the driver notices the passed deadline and steps down (it may
    // then lead again, in a new term): healthy again.
    assert!(
        wait_until(Duration::from_secs(5), || monitor
            .snapshot()
            .last_stop
            .is_some())
        .await,
        "{:?}",
        handle.state()
    );
    assert_eq!(
        monitor.snapshot().last_stop.as_deref(),
        Some("renew deadline exceeded")
    );
    let mut healthy = false;
    for _ in 0..100 {
        if get(addr, "/healthz").await.0 == 200 {
            healthy = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(healthy, "healthy once the driver runs again");
    let text = get(addr, "/metrics").await.1;
    assert_eq!(value(&text, healthy_series), Some(1.0), "{text}");
    let _ = stop_tx.send(());
    driver_thread.join().expect("driver thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h6_wedged_leader_work_is_caught_by_health_while_renewals_go_on() {
    let emu = Emulator::start().await.expect("emulator");
    let config = Config::fast("node-a").seed(9);
    let client = lock_kube::lock_client(emu.kube_config("node-a")).expect("client");
    let lease = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("lock");
    let monitor = Monitor::new("leases/default/ops-lease", "node-a");
    let beat = Heartbeat::new();
    let work_beat = beat.clone();
    let handle = Builder::new(monitor.lock(lease), config)
        .leader_work(move |_term, _cancel| {
            let beat = work_beat.clone();
            async move {
                beat.beat();
                // Wedged: waits on something that never comes, ignoring cancel.
                std::future::pending::<()>().await;
            }
        })
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("config");
    let handle = Arc::new(handle);
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
    let health = Health::new(Arc::clone(&handle))
        .heartbeat(beat, Duration::from_millis(400))
        .ready_when(ReadyWhen::Leader);
    assert!(wait_until(Duration::from_secs(10), || handle.is_leader()).await);
    assert_eq!(health.liveness(), Ok(()));
    assert_eq!(health.readiness(), Ok(()));
    // The acquiring write is not a renew: wait for the first renew (one retry period).
    assert!(
        wait_until(Duration::from_secs(2), || monitor
            .snapshot()
            .last_renew
            .is_some())
        .await,
        "renewed before the stall"
    );
    let renewed_before = monitor.snapshot().last_renew;
    assert!(
        wait_until(Duration::from_secs(3), || matches!(
            health.liveness(),
            Err(Unhealthy::WorkStalled { .. })
        ))
        .await
    );
    // Renewals go on: a newer renew comes (waited for: under load the stall
    // may be seen before the next renew is due), and it still leads, stalled.
    assert!(
        wait_until(Duration::from_secs(2), || monitor.snapshot().last_renew
            > renewed_before)
        .await,
        "a renew after the stall was seen"
    );
    assert!(handle.is_leader());
    assert!(matches!(
        health.liveness(),
        Err(Unhealthy::WorkStalled { .. })
    ));
    drop(health);
    Arc::into_inner(handle).expect("only owner").abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_scraped_with_client_go_names() {
    let emu = Emulator::start().await.expect("emulator");
    // Two failed reads first: counted as transient lock errors.
    emu.faults("node-a").times(2).error(503);
    let (a, monitor) = candidate(&emu, "node-a");
    let mut registry = prometheus_client::registry::Registry::default();
    monitor.register_metrics(&mut registry);
    let addr = Endpoint::new(Health::new(Arc::clone(&a)))
        .metrics(Arc::clone(&monitor), registry)
        .spawn("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    assert!(wait_until(Duration::from_secs(10), || a.is_leader()).await);
    assert!(
        wait_until(Duration::from_secs(5), || monitor
            .snapshot()
            .last_renew
            .is_some())
        .await
    );

    // client-go's `name`: the election's name, by default the Lease's name.
    let name = r#"name="ops-lease""#;
    let (code, text) = get(addr, "/metrics").await;
    assert_eq!(code, 200);
    eprintln!("{text}");
    assert!(
        text.contains(&format!("leader_election_master_status{{{name}}} 1")),
        "{text}"
    );
    let slowpath_before = value(&text, &format!("leader_election_slowpath_total{{{name}}}"))
        .expect("the slowpath series exists from the start");
    assert!(
        text.contains(&format!("leader_election_transitions_total{{{name}}} 1")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "leader_election_lock_errors_total{{{name},class=\"transient\"}} "
        )),
        "{text}"
    );
    assert!(
        !text.contains("class=\"not_found\""),
        "a first read finding no lock is no error: {text}"
    );
    assert!(
        text.contains(&format!(
            "leader_election_renew_duration_seconds_count{{{name}}}"
        )),
        "{text}"
    );
    let left: f64 = text
        .lines()
        .find(|l| l.starts_with("leader_election_seconds_to_deadline{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .expect("seconds to deadline");
    assert!(left > 0.0 && left <= 1.5, "{left}");

    // client-go's slow path: a renew whose fast path (an update from the cached
    // record) failed, so that it reads the lock. One renew answered 409: exactly
    // one read, one count.
    let gets = |emu: &Emulator| {
        emu.request_counts()
            .get("node-a", Verb::Get, Resource::Lease)
    };
    let gets_before = gets(&emu);
    emu.faults("node-a")
        .on(Match::verbs(&[Verb::Update]).resource(Resource::Lease))
        .times(1)
        .error(409);
    let conflict = format!("leader_election_lock_errors_total{{{name},class=\"conflict\"}}");
    let mut text = String::new();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        text = get(addr, "/metrics").await.1;
        if value(&text, &conflict) == Some(1.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(value(&text, &conflict), Some(1.0), "{text}");
    // The read after the conflict, then a renew by compare-and-swap.
    let renewed = monitor.snapshot().last_renew;
    assert!(renewed.is_some());
    assert!(
        wait_until(Duration::from_secs(3), || monitor.snapshot().last_renew
            > renewed)
        .await
    );
    assert!(a.is_leader(), "a conflict on our own record is no loss");
    let (_, text) = get(addr, "/metrics").await;
    assert_eq!(gets(&emu) - gets_before, 1, "one read after the conflict");
    assert_eq!(
        value(&text, &format!("leader_election_slowpath_total{{{name}}}")),
        Some(slowpath_before + 1.0),
        "{text}"
    );

    a.step_down().await;
    assert!(
        wait_until(Duration::from_secs(3), || monitor
            .snapshot()
            .last_stop
            .is_some())
        .await
    );
    let (_, text) = get(addr, "/metrics").await;
    assert!(
        text.contains(&format!("leader_election_master_status{{{name}}} 0")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "leader_election_stops_total{{{name},reason=\"stepped_down\"}} 1"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("leader_election_seconds_to_deadline{{{name}}} 0")),
        "{text}"
    );
}
