//! Leader election for Kubernetes, in one dependency.
//!
//! This crate only re-exports: the parts stay separate crates underneath (as
//! `kube` re-exports `kube-client` and `kube-runtime`), picked by feature.
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | — | always | [`Builder`], [`Handle`], [`Config`] and the election's types; the modules [`core`] (`election-core`) and [`driver`] (`election-driver`) |
//! | `tokio` | yes | `TokioRuntime`, `state_watch`, `token_work` (`adapter-tokio`) |
//! | `lease` | yes | `LeaseLock` and the module `lease` (`lock-lease`); `client`, `kube`, `k8s_openapi`; `candidate` (coordinated election's `LeaseCandidate`) |
//! | `smol` | | `SmolRuntime` (`adapter-smol`), for smol and async-std |
//! | `configmap` | | `ConfigMapLock` and the module `configmap` (`lock-configmap`) |
//! | `memory` | | `MemoryStore` and the module `memory` (`lock-memory`): the lock to test with |
//! | `etcd` | | `EtcdLock` and the module `etcd` (`lock-etcd`): a lock on one etcd v3 key |
//! | `controller` | | the module `controller` (`election-controller`): kube-runtime controllers that reconcile only while leading, from caches kept warm on every replica; `runtime` (kube-runtime); with `tokio`, `lease`, `ops-guard` |
//! | `shards` | | the module `shards` (`election-shards`): `S` shard Leases spread fairly over the replicas that campaign for them; with `lease` |
//! | `window` | | the module `window` (`lease-window`): maintenance windows on Nodes, time-boxed Leases taken, cordoned, drained and ended by a kube-runtime controller |
//! | `ops` | | the module `ops` (`election-ops`): identities, the monitor; `ops-guard`, `ops-health`, `ops-http`, `ops-metrics` add its parts |
//! | `rustls-tls` | | kube's rustls TLS stack with ring, for a real API server (the libraries leave TLS to the binary; or enable a stack in your own `kube` dependency) |
//!
//! As every library on `k8s-openapi`, this crate picks no Kubernetes version: the
//! binary does, with `k8s-openapi = { version = "0.29", features = ["latest"] }`.
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
//!   configuration to the lock when it starts ([`core::Lock::configure`]), which
//!   takes from it the bound of its own reads (a watch's first read, Events).
//! - **kube's own retries are off** in a client made by `client`: the elector
//!   retries by its own rules, within its deadlines, and a write kube retried by
//!   itself would hide an outcome the elector must know is unknown.
//!
//! # Testing without a cluster
//!
//! With `memory`, the same election runs on an in-process lock:
//!
//! ```
//! use kube_elector::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryStore::new();
//! // Config::fast: a 2 s lease; the first leader of a fresh lock waits one lease.
//! let handle = Builder::new(store.client("node-a"), Config::fast("node-a"))
//!     .leader_work(|term, cancel| async move {
//!         println!("leading in term {term}");
//!         cancel.cancelled().await;
//!     })
//!     .spawn(TokioRuntime::current()?)?;
//! while !handle.is_leader() {
//!     tokio::time::sleep(std::time::Duration::from_millis(50)).await;
//! }
//! handle.shutdown().await; // the work is cancelled and awaited, then the lock released
//! assert_eq!(store.current().map(|o| o.record.holder.is_empty()), Some(true));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]
// docs.rs labels each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The sans-IO election (`election-core`): the [`Elector`](core::Elector), the
/// [`Lock`] trait, records, [`Config`] and its presets.
pub use election_core as core;
/// The async driver (`election-driver`): the builder, the handle, the runtime trait.
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
pub use lock_lease as lease;
#[cfg(feature = "lease")]
pub use lock_lease::LeaseLock;

/// The ConfigMap lock (`lock-configmap`).
#[cfg(feature = "configmap")]
pub use lock_configmap as configmap;
#[cfg(feature = "configmap")]
pub use lock_configmap::ConfigMapLock;

/// The in-memory lock with fault injection, for tests (`lock-memory`).
#[cfg(feature = "memory")]
pub use lock_memory as memory;
#[cfg(feature = "memory")]
pub use lock_memory::MemoryStore;

/// Running it in production (`election-ops`): identities, the monitor and, by
/// feature, the write guard, health, the HTTP endpoint and metrics.
#[cfg(feature = "ops")]
pub use election_ops as ops;

#[cfg(feature = "kube")]
pub use {k8s_openapi, kube};

/// One watch for the Lease (or ConfigMap) locks of many elections in a
/// namespace, found by a label (`LeaseLock::shared_watch`,
/// `LockBuilder::shared_watch`), and the settings of a watch.
#[cfg(feature = "kube")]
pub use kube_support::{SharedWatch, WatchConfig};

/// Coordinated leader election's candidacy: the `LeaseCandidate` a replica
/// publishes beside an election in `Mode::Coordinated` (README, "Coordinated
/// leader election").
#[cfg(feature = "kube")]
pub use kube_support::candidate;

/// kube-runtime controllers that reconcile only while leading, with warm
/// standby (`election-controller`).
#[cfg(feature = "controller")]
pub use election_controller as controller;
#[cfg(feature = "controller")]
pub use election_controller::{ElectedController, TermContext, Warm};
/// kube-runtime, as the controllers use it.
#[cfg(feature = "controller")]
pub use kube_runtime as runtime;

/// Sharded leadership: `S` shard Leases spread fairly over the replicas that
/// campaign for them (`election-shards`).
#[cfg(feature = "shards")]
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
pub use lease_window as window;

/// A lock on one etcd v3 key (`lock-etcd`).
#[cfg(feature = "etcd")]
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
    kube_support::lock_client(config)
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
