//! Leader election for Kubernetes, in one dependency.
//!
//! This crate only re-exports: the parts stay separate crates underneath (as
//! `kube` re-exports `kube-client` and `kube-runtime`), picked by feature.
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | — | always | [`Builder`], [`Handle`], [`Config`], [`Lock`] and the election's types; the modules `core` (`election-core`: records, versions, the `Lock` trait's types) and `driver` (`election-driver`) |
//! | `tokio` | yes | `TokioRuntime`, `state_watch`, `token_work` (`adapter-tokio`) |
//! | `lease` | yes | `LeaseLock` and the module `lease` (`lock-lease`); with `kube` (below): `client`, `kube`, `k8s_openapi`, `candidate` (coordinated election's `LeaseCandidate`), `SharedWatch`, `WatchConfig` |
//! | `smol` | | `SmolRuntime` (`adapter-smol`), for smol and async-std |
//! | `configmap` | | `ConfigMapLock` and the module `configmap` (`lock-configmap`); with `kube` |
//! | `memory` | | `MemoryStore` and the module `memory` (`lock-memory`): the lock to test with |
//! | `conformance` | | the module `memory::conformance`: the suite a lock of your own must pass (with `memory`) |
//! | `etcd` | | `EtcdLock` and the module `etcd` (`lock-etcd`): a lock on one etcd v3 key |
//! | `controller` | | the module `controller` (`election-controller`): kube-runtime controllers that reconcile only while leading, from caches kept warm on every replica; `runtime` (kube-runtime); with `tokio`, `lease`, `ops-guard` |
//! | `shards` | | the module `shards` (`election-shards`): `S` shard Leases spread fairly over the replicas that campaign for them; with `lease` |
//! | `window` | | the module `window` (`lease-window`): maintenance windows on Nodes, time-boxed Leases taken, cordoned, drained and ended by a kube-runtime controller |
//! | `ops` | | the module `ops` (`election-ops`): identities (`ops::identity`), the `ops::Monitor` |
//! | `ops-guard` | | `ops::guard`, `ops::client`, `ops::stamp`: a `kube::Client` whose writes pass only while this node leads, stamped with its term |
//! | `ops-fence` | | `ops::fence`: the ValidatingAdmissionPolicy that makes the API server refuse a deposed leader's writes (with `ops-guard`) |
//! | `ops-health` | | `ops::health`: liveness with client-go's meaning, readiness per role, a JSON status |
//! | `ops-http` | | `ops::http`: `/healthz`, `/readyz`, `/status` (and `/metrics`) on hyper and tokio (with `ops-health`) |
//! | `ops-metrics` | | `ops::metrics` and `prometheus_client`: client-go's metric names |
//! | `ops-proxy` | | `ops::proxy`: the Kubernetes API served on loopback through the guarded, stamped client, so a program in any language has its writes fenced (the sidecar's `run --api-proxy`; with `ops-guard`, `ops-http`) |
//! | `kube` | | what the Kubernetes parts share: `client`, `kube`, `k8s_openapi`, `candidate`, `SharedWatch`, `WatchConfig`; enabled by `lease`, `configmap`, `window`, `ops-fence`, `ops-proxy`, `rustls-tls` (the labels on docs.rs name it) |
//! | `rustls-tls` | | kube's rustls TLS stack with ring, for a real API server (the libraries leave TLS to the binary; or enable a stack in your own `kube` dependency) |
//!
//! An item named in code above exists only with its feature (the [list of
//! re-exports](#reexports) labels each, on docs.rs). As every library on
//! `k8s-openapi`, this crate picks no Kubernetes version: the binary does, with
//! `k8s-openapi = { version = "0.29", features = ["latest"] }`.
//!
//! # Which crate, which features
//!
//! - **An application** depends on this crate alone and picks parts by feature;
//!   the defaults, `tokio` and `lease`, elect on a Lease under tokio.
//! - **A smol or async-std application** turns the defaults off:
//!   `default-features = false, features = ["smol", "memory"]` builds no tokio at
//!   all (`examples/smol_app.rs`). tokio comes back into the build with `tokio`, and
//!   with every feature that talks to a server or serves HTTP: `lease`,
//!   `configmap` and `etcd` (kube's and hyper's clients are built on tokio; the
//!   locks bring a tokio context of their own, `async-compat`, and run under smol
//!   anyway), `ops-guard`, `ops-fence`, `ops-http` and `ops-proxy` (which serve on a tokio
//!   runtime), `controller`, `shards`, `window`, `rustls-tls`. `smol`, `memory`,
//!   `conformance`, `ops`, `ops-health` and `ops-metrics` need none.
//! - **A lock of your own**, published as a crate, depends on `election-core`
//!   alone (the `Lock` trait and the record; `lock-json` for client-go's JSON
//!   record) and tests with this crate's `conformance` feature
//!   (`examples/custom_lock.rs`).
//!
//! # Quick start
//!
//! A whole program (`examples/quickstart.rs`, which CI runs against the API
//! emulator): it campaigns for the Lease `quickstart`, works while it leads, and
//! on SIGTERM cancels and awaits the work, then releases the Lease.
//!
//! ```toml
//! [dependencies]
//! kube-elector = { version = "0.1", features = ["ops-http", "rustls-tls"] }
//! k8s-openapi = { version = "0.29", features = ["latest"] }
//! tokio = { version = "1", features = ["rt-multi-thread", "macros", "signal"] }
//! ```
//!
#![doc = concat!("```no_run\n", include_str!("../examples/quickstart.rs"), "```")]
//!
//! - **One builder, one handle, every runtime**: [`Builder::spawn`] takes the
//!   runtime (`TokioRuntime::current()?`, `SmolRuntime::new()`); the [`Handle`] is
//!   the same type everywhere, and `election-ops` reads it.
//! - **Timeouts are set once**, in [`Config`] (`request_timeout`, by client-go's
//!   rule in its presets): the driver bounds every lock call with it and hands the
//!   configuration to the lock when it starts ([`Lock::configure`]), which
//!   takes from it the bound of its own reads (a watch's first read, Events).
//! - **kube's own retries are off** in a client made by `client`: the elector
//!   retries by its own rules, within its deadlines, and a write kube retried by
//!   itself would hide an outcome the elector must know is unknown.
//!
//! # Testing without a cluster
//!
//! With `memory`, the same election runs on an in-process lock, and on tokio's
//! paused clock a failover takes no real time. A test needs tokio's `test-util`
//! feature for `start_paused` (without it the attribute fails to compile, with an
//! error that points elsewhere):
//!
//! ```toml
//! [dev-dependencies]
//! kube-elector = { version = "0.1", features = ["memory"] }
//! tokio = { version = "1", features = ["test-util", "macros", "rt"] }
//! ```
//!
//! Three candidates; the leader crashes, and another takes over about one lease
//! (2 s of virtual time with `Config::fast`) later:
//!
//! ```
//! # // Runs the test below on a paused runtime: a doctest is no test harness.
//! # macro_rules! run_paused {
//! #     ($(#[$attr:meta])* async fn $name:ident() $body:block) => {
//! #         tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true)
//! #             .build().unwrap().block_on(async $body)
//! #     };
//! # }
//! use std::time::Duration;
//!
//! use kube_elector::prelude::*;
//!
//! # run_paused! {
//! #[tokio::test(start_paused = true)]
//! async fn another_candidate_takes_over_a_crashed_leader() {
//!     // Latency injected into the store (none here) would wait on tokio's clock too.
//!     let store = MemoryStore::new().with_sleeper(tokio::time::sleep);
//!     // `current()` finds tokio's clock paused, and the driver reads it.
//!     let rt = TokioRuntime::current().unwrap();
//!     let candidates: Vec<Handle> = ["a", "b", "c"]
//!         .into_iter()
//!         .map(|id| Builder::new(store.client(id), Config::fast(id)).spawn(rt.clone()).unwrap())
//!         .collect();
//!     // The candidate that leads, leaving out `crashed`.
//!     let leader = |crashed: Option<usize>| {
//!         (0..candidates.len()).find(|&i| Some(i) != crashed && candidates[i].is_leader())
//!     };
//!     let start = tokio::time::Instant::now();
//!     let first = loop {
//!         // A fresh lock's creator leads one lease after its create.
//!         if let Some(i) = leader(None) {
//!             break i;
//!         }
//!         assert!(start.elapsed() < Duration::from_secs(10), "no leader");
//!         tokio::time::sleep(Duration::from_millis(10)).await;
//!     };
//!     candidates[first].abort(); // a crash: no release, the others wait out its lease
//!     let crashed = tokio::time::Instant::now();
//!     while leader(Some(first)).is_none() {
//!         assert!(crashed.elapsed() < Duration::from_secs(10), "no failover");
//!         tokio::time::sleep(Duration::from_millis(10)).await;
//!     }
//!     let took = crashed.elapsed(); // virtual: the test takes milliseconds
//!     assert!(took > Duration::from_secs(1) && took < Duration::from_secs(4), "{took:?}");
//!     for candidate in &candidates {
//!         candidate.shutdown().await; // the new leader releases the lock
//!     }
//!     assert_eq!(store.current().map(|o| o.record.holder.is_empty()), Some(true));
//! }
//! # }
//! ```
//!
//! `TokioRuntime::current()` reads tokio's clock when it finds that clock paused
//! as it is called, and the suspend-aware boot clock otherwise (production's).
//! `TokioRuntime::current()?.with_tokio_clock()` asks for tokio's clock outright:
//! for a runtime made before the test pauses the clock (`tokio::time::pause()`
//! after `current()`), whose driver would otherwise time its leases by the real
//! clock while its timers race ahead in virtual time. Never in production: tokio's
//! clock stops while the machine is suspended.
//!
//! Without tokio, `MemoryStore` runs on any executor (its default timer is
//! `async-io`'s), and `core::testing` drives one elector by hand on a virtual
//! clock against a scripted lock.
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]
// docs.rs labels each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The sans-IO election (`election-core`): the `Elector`, the [`Lock`] trait
/// and what a lock reads and writes (`LockRecord`, `Observation`, `Version`,
/// `Stamp`, `WallTime`, `WatchEvent`), [`Config`] and its presets, `testing`.
#[doc(inline)]
pub use election_core as core;
/// The async driver (`election-driver`): the builder, the handle, the runtime trait.
#[doc(inline)]
pub use election_driver as driver;

pub use election_core::{Config, Event, Lock, LockError, Role, StopReason, Term};
pub use election_driver::{
    Builder, CancelSignal, Change, DriverError, Handle, LeaderWork, LeadershipState, OnLoss,
    Runtime,
};

#[cfg(feature = "tokio")]
pub use adapter_tokio::{CancellationToken, TokioRuntime, state_watch, token_work};

#[cfg(feature = "smol")]
pub use adapter_smol::SmolRuntime;

/// The Lease lock (`lock-lease`): record mapping, RBAC, Events.
#[cfg(feature = "lease")]
#[doc(inline)]
pub use lock_lease as lease;
#[cfg(feature = "lease")]
pub use lock_lease::LeaseLock;

/// The ConfigMap lock (`lock-configmap`).
#[cfg(feature = "configmap")]
#[doc(inline)]
pub use lock_configmap as configmap;
#[cfg(feature = "configmap")]
pub use lock_configmap::ConfigMapLock;

/// The in-memory lock with fault injection, for tests (`lock-memory`).
#[cfg(feature = "memory")]
#[doc(inline)]
pub use lock_memory as memory;
#[cfg(feature = "memory")]
pub use lock_memory::MemoryStore;

/// Running it in production (`election-ops`): identities, the monitor and, by
/// feature, the write guard, health, the HTTP endpoint and metrics.
#[cfg(feature = "ops")]
#[doc(inline)]
pub use election_ops as ops;

/// prometheus-client, at the version the metrics of `ops` register in
/// (`Monitor::register_metrics(&mut prometheus_client::registry::Registry)`).
#[cfg(feature = "ops-metrics")]
pub use prometheus_client;

#[cfg(feature = "kube")]
pub use {k8s_openapi, kube};

// One watch for the Lease (or ConfigMap) locks of many elections in a namespace
// (`LeaseLock::shared_watch`), and the settings of a watch: each item's own docs.
#[cfg(feature = "kube")]
pub use lock_kube::{SharedWatch, WatchConfig};

/// Coordinated leader election's candidacy: the `LeaseCandidate` a replica
/// publishes beside an election in `Mode::Coordinated` (the guide's
/// `docs/guide/coordinated.md`).
#[cfg(feature = "kube")]
#[doc(inline)]
pub use lock_kube::candidate;

/// kube-runtime controllers that reconcile only while leading, with warm
/// standby (`election-controller`).
#[cfg(feature = "controller")]
#[doc(inline)]
pub use election_controller as controller;
#[cfg(feature = "controller")]
pub use election_controller::{ElectedController, TermContext, Warm};
/// kube-runtime, as the controllers use it.
#[cfg(feature = "controller")]
pub use kube_runtime as runtime;

/// Sharded leadership: `S` shard Leases spread fairly over the replicas that
/// campaign for them (`election-shards`).
#[cfg(feature = "shards")]
#[doc(inline)]
pub use election_shards as shards;

/// Maintenance windows on Nodes: time-boxed Leases (`lease-window`).
///
/// ```no_run
/// use kube_elector::window::{WindowConfig, WindowController};
///
/// # async fn run(client: kube_elector::kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let config = WindowConfig::new("maint-a")?;
/// WindowController::new(client, config).run().await;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "window")]
#[doc(inline)]
pub use lease_window as window;

/// A lock on one etcd v3 key (`lock-etcd`).
#[cfg(feature = "etcd")]
#[doc(inline)]
pub use lock_etcd as etcd;
#[cfg(feature = "etcd")]
pub use lock_etcd::EtcdLock;

/// A `kube` client for the locks, built from `config` with kube's own retries of
/// 429, 503 and 504 off (the elector retries by its own rules; a write kube
/// re-sent by itself would hide an unknown outcome) and no read timeout (a watch
/// may stay quiet; each call is bounded by [`Config::request_timeout`] instead).
/// A `Retry-After` header reaches the elector.
///
/// # Errors
/// kube's, when `config` cannot make a client (a TLS stack is missing for an
/// `https` server: enable `rustls-tls`, or a TLS feature of your own `kube`
/// dependency).
#[cfg(feature = "kube")]
pub fn client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    lock_kube::lock_client(config)
}

/// The names most programs use: `use kube_elector::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Builder, CancelSignal, Change, Config, Event, Handle, LeadershipState, Lock, OnLoss,
    };

    #[cfg(feature = "tokio")]
    pub use crate::TokioRuntime;

    #[cfg(feature = "smol")]
    pub use crate::SmolRuntime;

    #[cfg(feature = "lease")]
    pub use crate::LeaseLock;

    #[cfg(feature = "configmap")]
    pub use crate::ConfigMapLock;

    #[cfg(feature = "memory")]
    pub use crate::MemoryStore;
}

/// The README's Rust snippets, compiled as doctests of the facade, so that they
/// cannot drift from it: each goes through `kube_elector::…`, and the
/// dev-dependencies enable every feature they use.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The guide's controllers page (`docs/guide/controllers.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/controllers.md")]
struct GuideControllers;

/// The guide's coordinated election page (`docs/guide/coordinated.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/coordinated.md")]
struct GuideCoordinated;

/// The guide's page on writing a lock (`docs/guide/custom-locks.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/custom-locks.md")]
struct GuideCustomLocks;

/// The guide's fencing page (`docs/guide/fencing.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/fencing.md")]
struct GuideFencing;

/// The guide's maintenance windows page (`docs/guide/maintenance-windows.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/maintenance-windows.md")]
struct GuideMaintenanceWindows;

/// The guide's many-elections page (`docs/guide/many-elections.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/many-elections.md")]
struct GuideManyElections;

/// The guide's production page (`docs/guide/production.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/production.md")]
struct GuideProduction;

/// The guide's testing page (`docs/guide/testing.md`), compiled the same way.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/testing.md")]
struct GuideTesting;
