//! Everything traced during an election (by this crate, the driver, the lock, kube
//! and hyper), captured by a tiny subscriber: the spans carry the lock name, the
//! identity and the term, and the bearer token never appears.

mod common;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use common::{LEASE, wait_until, write};
use election_core::Config;
use election_driver::Builder;
use election_ops::Monitor;
use election_ops::guard::{WriteGuardLayer, not_leader};
use kube_emulator::Emulator;
use lock_lease::LeaseLock;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const TOKEN: &str = "s3cr3t-t0ken-9f8e7d";

/// Writes every span (name and fields) and every event (fields) as a line.
struct Capture {
    out: Arc<Mutex<String>>,
    next: AtomicU64,
}

struct Fields<'a>(&'a mut String);
impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = format!("span {}:", span.metadata().name());
        span.record(&mut Fields(&mut line));
        line.push('\n');
        self.out.lock().unwrap().push_str(&line);
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed))
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut line = "record:".to_owned();
        values.record(&mut Fields(&mut line));
        line.push('\n');
        self.out.lock().unwrap().push_str(&line);
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = format!(
            "event {} {}:",
            event.metadata().level(),
            event.metadata().target()
        );
        event.record(&mut Fields(&mut line));
        line.push('\n');
        self.out.lock().unwrap().push_str(&line);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_is_ever_traced_and_spans_name_lock_identity_and_term() {
    let out = Arc::new(Mutex::new(String::new()));
    tracing::subscriber::set_global_default(Capture {
        out: Arc::clone(&out),
        next: AtomicU64::new(1),
    })
    .expect("the only subscriber in this test binary");

    let emu = Emulator::start().await.expect("emulator");
    // Some failures, so that error paths are traced too.
    emu.faults(TOKEN).times(2).error(503);
    let config = Config::fast("node-a").seed(3);
    let client = lock_kube::lock_client(emu.kube_config(TOKEN)).expect("client");
    let lock = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("lock");
    let monitor = Monitor::new(lock_name(), "node-a");
    let handle = Arc::new(
        Builder::new(monitor.lock(lock), config)
            .spawn(TokioRuntime::current().expect("inside tokio"))
            .expect("config"),
    );
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
    assert!(wait_until(Duration::from_secs(10), || handle.is_leader()).await);
    assert!(
        wait_until(Duration::from_secs(5), || monitor
            .snapshot()
            .last_renew
            .is_some())
        .await
    );

    let app = kube::client::ClientBuilder::try_from(emu.kube_config(TOKEN))
        .expect("config")
        .with_layer(&WriteGuardLayer::new(Arc::clone(&handle)).margin(Duration::from_millis(300)))
        .build();
    write(&app, "traced").await.expect("leader writes");
    handle.step_down().await;
    let e = write(&app, "refused").await.expect_err("not leader");
    assert!(not_leader(&e).is_some());
    tokio::time::sleep(Duration::from_millis(100)).await;

    let text = out.lock().unwrap().clone();
    assert!(!text.contains(TOKEN), "the token was traced");
    assert!(
        !text.contains("Bearer"),
        "an authorization header was traced"
    );
    let term = monitor.snapshot().term.expect("led in a term");
    assert!(
        text.lines().any(|l| l.contains("started leading")
            && l.contains("identity=node-a")
            && l.contains(&term)),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("span lock_call:")
            && l.contains(&format!("lock={}", lock_name()))
            && l.contains("identity=node-a")
            && l.contains(&format!("term={term}"))),
        "a lock call while leading carries the term: {text}"
    );
    assert!(text.contains("write refused locally"), "{text}");
    assert!(
        text.lines().count() > 20,
        "kube and the driver traced too: {text}"
    );
    // kube's own request spans were captured (they name the URL), so the check
    // above covered the HTTP layer too.
    assert!(
        text.contains("/apis/coordination.k8s.io/v1/namespaces/default/leases"),
        "{text}"
    );
}

fn lock_name() -> String {
    format!("leases/default/{LEASE}")
}
