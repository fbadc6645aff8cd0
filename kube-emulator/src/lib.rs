//! A Kubernetes API emulator for tests: the unmodified `kube::Client` talks to
//! it over real HTTP on 127.0.0.1, and the test decides what goes wrong.
//!
//! It serves what leader election depends on, with the API server's rules:
//! Leases, ConfigMaps, Events (core and `events.k8s.io/v1`) and Namespaces;
//! get, list, create, update (PUT), patch (merge and JSON patch), delete and
//! watch; one global, growing resourceVersion; `metav1.Status` errors worded
//! as `k8s.io/apimachinery/pkg/api/errors` words them (409 `Conflict` on a
//! stale version, 409 `AlreadyExists`, 404 `NotFound`, 422 `Invalid` with the
//! Lease validation rules); create-on-update for Leases; watches with field
//! selectors, bookmarks, `timeoutSeconds`, resume from a version, and a 410
//! `Expired` ERROR event when the version left the history.
//!
//! Faults are injected per client, told apart by bearer token: latency, error
//! codes (429 with `Retry-After`), a 500 after the write committed, requests
//! that hang, dropped connections, watches that close, break or go silent.
//! Request counts and a write history with server timestamps are kept.
//!
//! # Use from a test
//!
//! ```
//! # #[cfg(feature = "client")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::coordination::v1::Lease;
//! use kube::api::{Api, PostParams};
//! use kube_emulator::{Emulator, Resource, Verb};
//!
//! let emu = Emulator::start().await?;            // 127.0.0.1, a free port
//! let client = emu.client("node-a")?;            // bearer token "node-a"
//! let leases: Api<Lease> = Api::namespaced(client, "default");
//!
//! emu.faults("node-a").too_many_requests(1);     // every request of node-a: 429
//! let err = leases.get("lock").await.unwrap_err();
//! assert!(matches!(err, kube::Error::Api(s) if s.code == 429));
//! emu.faults("node-a").clear();
//!
//! let mut lease = Lease::default();
//! lease.metadata.name = Some("lock".into());
//! let created = leases.create(&PostParams::default(), &lease).await?;
//! assert!(created.metadata.resource_version.is_some());
//! assert_eq!(emu.request_counts().get("node-a", Verb::Create, Resource::Lease), 1);
//! # Ok(()) }
//! # #[cfg(feature = "client")]
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
//! ```
//!
//! # Run as a server
//!
//! `cargo run -p kube-emulator -- --port 6443` prints where it listens and
//! writes a kubeconfig (`--kubeconfig PATH` to choose where).
//!
//! # Differences from a real API server
//!
//! - Plain HTTP, JSON only (no protobuf, no TLS), HTTP/1.1.
//! - No authentication or RBAC: the bearer token only names the client;
//!   403 and 401 come from injected faults ([`Fault::Forbidden`], [`Fault::Status`]).
//! - Reads in a missing namespace answer as for a missing object (as the real
//!   server does); creates in a missing namespace get `namespaces "x" not found`.
//! - Deleting a namespace removes its objects at once (no Terminating phase that lasts).
//! - The two Event APIs are stored apart; server-side apply is not served.
//! - `managedFields` and `generation` are not maintained.

mod discovery;
mod emulator;
mod faults;
mod patch;
mod resource;
mod selector;
mod server;
mod status;
mod store;
mod time;
mod validation;
mod watch;

pub use emulator::{Emulator, EmulatorBuilder, Error};
pub use faults::{Fault, Faults, Match, RequestCounts, WriteRecord};
pub use resource::{Resource, Verb};
