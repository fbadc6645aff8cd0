//! Shared setup: candidates on the Lease lock over the API emulator, on tokio.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use election_ops::Monitor;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_emulator::Emulator;
use lock_lease::LeaseLock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The lease every test elects on.
pub const LEASE: &str = "ops-lease";

/// A candidate whose lock calls carry the bearer token `id`, its lock wrapped by a
/// monitor.
pub fn candidate(emu: &Emulator, id: &str) -> (Arc<Handle>, Arc<Monitor>) {
    let config = Config::fast(id).seed(id.len() as u64 + 11);
    let client = lock_kube::lock_client(emu.kube_config(id)).expect("client");
    let lock = LeaseLock::builder(client, "default", LEASE)
        .build()
        .expect("valid names");
    let monitor = Monitor::new(format!("leases/default/{LEASE}"), id);
    let handle = Builder::new(monitor.lock(lock), config)
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("valid config");
    let handle = Arc::new(handle);
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
    (handle, monitor)
}

/// Waits (polling every 20 ms, up to `within`) until `pred` holds.
pub async fn wait_until(within: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < within {
        if pred() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pred()
}

/// Creates a ConfigMap `name` through `client`.
pub async fn write(client: &kube::Client, name: &str) -> Result<ConfigMap, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    api.create(&PostParams::default(), &cm).await
}

/// A node's view as a paused process keeps it: it believes it leads `term`
/// (with a deadline far ahead), whatever happened since.
#[derive(Clone)]
pub struct Believes {
    state: election_driver::LeadershipState,
}

impl Believes {
    /// `identity` leading the term `transitions@version`.
    pub fn leading(identity: &str, transitions: u32, version: &str) -> Self {
        let mut state = election_driver::LeadershipState::initial(identity.into());
        state.role = election_core::Role::Leader;
        state.term = Some(election_core::Term {
            transitions,
            version: election_core::Version::new(version),
        });
        Believes { state }
    }
}

impl election_ops::LeadershipView for Believes {
    fn now(&self) -> election_core::Instant {
        election_core::Instant::from_millis(0)
    }
    fn deadline(&self) -> Option<election_core::Instant> {
        Some(election_core::Instant::from_millis(3_600_000))
    }
    fn state(&self) -> election_driver::LeadershipState {
        self.state.clone()
    }
}

/// A client with `config` whose writes are stamped by `TermAnnotationLayer`
/// with `view`'s term, each with a token of its own if `write_tokens`.
pub fn stamped<V>(config: kube::Config, view: V, write_tokens: bool) -> kube::Client
where
    V: election_ops::LeadershipView + Clone,
{
    let layer = election_ops::stamp::TermAnnotationLayer::new(view).write_tokens(write_tokens);
    kube::client::ClientBuilder::try_from(config)
        .expect("config")
        .with_layer(&layer)
        .build()
}

/// An emulator with `policy` and its binding applied, and the tokens `app-0`
/// and `app-1` of the Pods of those names.
pub async fn fenced(policy: election_ops::fence::FencePolicy) -> Emulator {
    let emu = Emulator::start().await.expect("emulator");
    policy
        .apply(emu.client("admin").expect("client"))
        .await
        .expect("policy and binding applied");
    for (token, pod) in [("app-0", "app-0"), ("app-1", "app-1")] {
        emu.set_user(token, kube_emulator::UserInfo::pod("default", "app", pod));
    }
    emu
}

/// The Lease `default/orders` as `holder` takes it at `transitions`: every write
/// to it passes (it is not fenced).
pub async fn hold(emu: &Emulator, holder: &str, transitions: i32) {
    let api = Api::namespaced(emu.client(holder).unwrap(), "default");
    put_lease(&api, "orders", holder, transitions).await;
}

/// Creates or replaces the Lease `name` as `holder` at `transitions` (15 s).
pub async fn put_lease(
    api: &Api<k8s_openapi::api::coordination::v1::Lease>,
    name: &str,
    holder: &str,
    transitions: i32,
) {
    let mut lease: k8s_openapi::api::coordination::v1::Lease =
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name },
            "spec": { "holderIdentity": holder, "leaseTransitions": transitions,
                      "leaseDurationSeconds": 15 },
        }))
        .unwrap();
    match api.get_opt(name).await.expect("read") {
        None => {
            api.create(&PostParams::default(), &lease)
                .await
                .expect("the Lease is not fenced");
        }
        Some(current) => {
            lease.metadata.resource_version = current.metadata.resource_version;
            api.replace(name, &PostParams::default(), &lease)
                .await
                .expect("the Lease is not fenced");
        }
    }
}

/// A ConfigMap `name`, stamped by hand for `holder` at `term` with a write
/// token of its own (no stamp when `None`).
pub fn stamped_configmap(name: &str, stamp: Option<(&str, &str)>) -> ConfigMap {
    use election_ops::fence::{HOLDER_ANNOTATION, TERM_ANNOTATION, WRITE_ANNOTATION};
    static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    if let Some((holder, term)) = stamp {
        let token = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        cm.metadata.annotations = Some(
            [
                (HOLDER_ANNOTATION.to_owned(), holder.to_owned()),
                (TERM_ANNOTATION.to_owned(), term.to_owned()),
                (WRITE_ANNOTATION.to_owned(), format!("{token:016x}")),
            ]
            .into(),
        );
    }
    cm
}

/// The API server's refusal of a write.
pub fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// `GET path` on 127.0.0.1:`addr`; the status code and body.
pub async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("send");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    let code = out[9..12].parse().expect("status code");
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (code, body)
}

/// The value of `series` (its name and labels, as printed) in a scrape.
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}
