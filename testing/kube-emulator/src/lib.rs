//! A Kubernetes API emulator for tests: the unmodified `kube::Client` (or
//! `kubectl`) talks to it over real HTTP on 127.0.0.1, and the test decides what
//! goes wrong.
//!
//! It is a product of its own, in two forms:
//!
//! - **a library** that a test starts in-process, on a free port, and points its
//!   `kube::Client` at (below): for the integration tests of any code that uses
//!   Leases, ConfigMaps, Events or watches, leader election or not;
//! - **a binary** (`cargo run -p kube-emulator -- --port 6443`) that serves until
//!   Ctrl-C and writes a kubeconfig for `kubectl` and other clients.
//!
//! It serves what election tests need: Leases and LeaseCandidates
//! (`coordination.k8s.io/v1beta1`), ConfigMaps, Events (core and
//! `events.k8s.io/v1`), Namespaces and Nodes (with owner garbage collection),
//! and ValidatingAdmissionPolicies with their bindings (evaluated on every
//! write they match, with a real CEL interpreter: server-side fencing). It
//! serves them with the API
//! server's rules: get, list, create, update (PUT), patch
//! (merge and JSON patch), delete and watch; one global, growing resourceVersion;
//! `metav1.Status` errors worded as `k8s.io/apimachinery/pkg/api/errors` words
//! them (409 `Conflict` on a stale version, 409 `AlreadyExists`, 404 `NotFound`,
//! 422 `Invalid` with the Lease and LeaseCandidate validation rules); `fieldValidation` (`Strict`,
//! `Warn`, `Ignore`) for fields a kind does not have; create-on-update for
//! Leases and LeaseCandidates; lists with label and field selectors, pages (`limit`, `continue`) and
//! `resourceVersion` / `resourceVersionMatch`; watches with selectors, bookmarks,
//! `timeoutSeconds`, resume from a
//! version, and a 410 `Expired` ERROR event when the version left the history.
//!
//! Faults are injected per client, told apart by bearer token: latency, error
//! codes (429 with `Retry-After`), a 500 after the write committed, requests
//! that hang, dropped connections, watches that close, break or go silent.
//! Request counts and a write history with server timestamps are kept (the
//! workspace's tests check the counts against the RBAC Roles it ships).
//!
//! On request it also runs coordinated leader election (KEP-4355) as the API
//! server's leader-election controller does: see [`Coordinator`]. It depends on
//! no crate of this workspace: that election is the API server's, not theirs.
//!
//! # Use in your own integration tests
//!
//! ```toml
//! [dev-dependencies]
//! kube-emulator = { version = "0.1", features = ["client"] }
//! kube = { version = "5", default-features = false, features = ["client"] }
//! k8s-openapi = { version = "0.29", features = ["latest"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```
//!
//! Start one emulator per test (each on a free port, with its own store), point a
//! client at it, and inject faults per client:
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
//! To build the client your code builds (its own timeouts, layers, retries), start
//! from `Emulator::kube_config` instead of `Emulator::client`; a program that
//! reads `KUBECONFIG` gets [`Emulator::write_kubeconfig`]:
//!
//! ```
//! # #[cfg(feature = "client")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//!
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::Api;
//! use kube_emulator::Emulator;
//!
//! let emu = Emulator::start().await?;
//! let mut config = emu.kube_config("my-controller"); // the token names the client
//! config.read_timeout = Some(Duration::from_secs(2));
//! let client = kube::Client::try_from(config)?;
//! let maps: Api<ConfigMap> = Api::default_namespaced(client); // "default"
//! assert!(maps.get_opt("settings").await?.is_none());
//!
//! let path = std::env::temp_dir().join(format!("emulator-{}.kubeconfig", emu.addr.port()));
//! emu.write_kubeconfig(&path, "a-subprocess")?; // for KUBECONFIG=<path> <program>
//! # std::fs::remove_file(&path)?;
//! # Ok(()) }
//! # #[cfg(feature = "client")]
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
//! ```
//!
//! The emulator serves
//! on a tokio runtime: [`Emulator::start`] uses the caller's; under smol,
//! async-std or in a plain `#[test]`, [`Emulator::start_blocking`] gives it a
//! thread and runtime of its own. Dropping the [`Emulator`] closes its port.
//!
//! # Features
//!
//! `client` (off by default) adds `Emulator::kube_config` and
//! `Emulator::client`; off so that the binary builds without choosing a
//! k8s-openapi version (the test that enables it picks one, as above).
//!
//! # What it serves, and where to test the rest
//!
//! The kinds of leader election and of its fencing, nothing more: a
//! controller's own kinds (Pods, Deployments, Roles, custom resources) are
//! not served, nor server-side apply, protobuf bodies, server-side printing
//! (Tables) or OpenAPI documents. Test code that needs them on kube-apiserver
//! (`test_kit::apiserver` builds and starts one; the workspace's guide,
//! `docs/guide/testing.md`, says how). A request for a kind or an API group
//! it does not serve gets a 404 `NotFound` `Status` that says so: `the server
//! could not find the requested resource: deployments.apps is not served by
//! kube-emulator, which serves the kinds of leader election only; test this
//! on kube-apiserver`. A path outside the API gets the API server's bare 404.
//!
//! # API server rules worth knowing
//!
//! These follow the generic registry of the API server and are easy to get
//! wrong in a lock:
//!
//! - **PUT to a missing Lease creates it** (create-on-update), and the
//!   `resourceVersion` in the body is then ignored. But a **`metadata.uid`
//!   in the body is a precondition checked first**: a PUT of a cached copy
//!   (which carries the old uid) to a deleted Lease gets 409 `Conflict`
//!   ("Precondition failed: UID in precondition: …"), not a re-creation.
//!   ConfigMaps have no create-on-update: 404.
//! - **Deleting an object deletes its dependents**: every object whose
//!   `metadata.ownerReferences` names the deleted uid goes too (a Node's Lease),
//!   unless another owner it names still exists (then only the dangling
//!   reference is removed); `propagationPolicy: Orphan` keeps the dependents
//!   and removes the reference. The API server's collector does this in the
//!   background, a little later; the emulator does it in the same write, so the
//!   dependents' DELETED events follow the owner's at once.
//! - **An update that changes nothing is not written**: same
//!   `resourceVersion`, no watch event (etcd3's `GuaranteedUpdate` skips
//!   identical bytes). A renew must change something (`renewTime`) to be
//!   seen as a new version.
//! - An absent or `"0"` `resourceVersion` in a PUT or patch is an
//!   unconditional write; any other must equal the stored one or 409.
//! - `MicroTime` fields of a Lease are re-serialised as
//!   `2006-01-02T15:04:05.000000Z` in UTC; a malformed one is a 400.
//! - A DELETE of a Lease or ConfigMap answers with a `Success` Status;
//!   `DeleteOptions.preconditions` (uid, resourceVersion) are honoured.
//! - `dryRun` writes are checked and answered but not stored.
//!
//! # Faults
//!
//! | fault | what the client sees | store |
//! |---|---|---|
//! | [`Fault::Latency`] | a slower answer | as usual |
//! | [`Fault::Status`] (429 + `Retry-After`, 500, 503, 504, 401 …) | `kube::Error::Api` with that code | untouched |
//! | [`Fault::TooManyRequestsPlain`] | 429 as the real API server's filter: `Retry-After` header, plain-text body | untouched |
//! | [`Fault::Forbidden`] | 403 worded as RBAC words it | untouched |
//! | [`Fault::StatusAfterCommit`] | 500 (or the code given) | **written** |
//! | [`Fault::DelayAfterCommit`] | the answer, late | written at once |
//! | [`Fault::Hang`] / [`Fault::HangAfterCommit`] | nothing (use a client timeout) | untouched / written |
//! | [`Fault::Reset`] / [`Fault::AnswerLost`] | connection closed, no answer | untouched / written |
//! | [`Fault::WatchCloseAfter`] / [`Fault::WatchBreakAfter`] / [`Fault::WatchSilent`] | a watch that ends, breaks, or says nothing | — |
//! | [`Fault::StaleRead`] | a GET answered from before the latest write | — |
//! | [`Emulator::stop_listening`] | connection refused | — |
//! | [`Emulator::drop_connections`] | every open request and watch cut | — |
//! | [`Emulator::compact`] | 410 `Expired` on a watch resume | history dropped |
//!
//! # Coordinated leader election
//!
//! With a [`Coordinator`], the emulator elects the holder of every Lease that
//! LeaseCandidates name: it pings the candidates, waits for their acks, and
//! gives the Lease to the one with the oldest emulation version. Scale its
//! timings down for tests:
//!
//! ```
//! # #[cfg(feature = "client")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::coordination::v1::Lease;
//! use k8s_openapi::api::coordination::v1beta1::{LeaseCandidate, LeaseCandidateSpec};
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
//! use kube::api::{Api, PostParams};
//! use kube_emulator::{Coordinator, Emulator};
//!
//! let emu = Emulator::builder()
//!     .coordinator(Coordinator::default().scaled(0.1)) // 0.5 s to ack, 1 s Leases
//!     .start()
//!     .await?;
//! let client = emu.client("scheduler-a")?;
//! let mut candidate = LeaseCandidate::default();
//! candidate.metadata.name = Some("scheduler-a".into());
//! candidate.spec = LeaseCandidateSpec {
//!     lease_name: "kube-scheduler".into(),
//!     binary_version: "1.34.0".into(),
//!     emulation_version: Some("1.33.0".into()),
//!     strategy: "OldestEmulationVersion".into(),
//!     // Renewed just now: it counts without a ping.
//!     renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
//!     ..LeaseCandidateSpec::default()
//! };
//! Api::<LeaseCandidate>::default_namespaced(client.clone())
//!     .create(&PostParams::default(), &candidate)
//!     .await?;
//! let leases: Api<Lease> = Api::default_namespaced(client);
//! let holder = loop {
//!     let lease = leases.get_opt("kube-scheduler").await?;
//!     if let Some(holder) = lease.and_then(|l| l.spec?.holder_identity) {
//!         break holder;
//!     }
//!     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
//! };
//! assert_eq!(holder, "scheduler-a");
//! # Ok(()) }
//! # #[cfg(feature = "client")]
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
//! ```
//!
//! A candidate acks a ping (`spec.pingTime`) by setting `spec.renewTime` after
//! it. A better candidate for a valid Lease only gets `spec.preferredHolder`;
//! the holder is expected to step down. The coordinator's writes appear in
//! [`Emulator::write_history`] under [`Coordinator::CLIENT`].
//!
//! # Run as a server
//!
//! `cargo run -p kube-emulator -- --port 6443` prints where it listens and
//! writes a kubeconfig (`--kubeconfig PATH` to choose where, `--token` for the
//! client's name); then `KUBECONFIG=<path> kubectl get leases -A`. kubectl's
//! `get`, `patch`, `label`, `annotate`, `cordon` and `delete` work as on a real
//! server (`get` prints NAME and AGE: no Tables); `create -f`, `apply -f` and
//! `edit` need `--validate=false` (kubectl validates by the OpenAPI documents,
//! which are not served); typed creates (`kubectl create configmap`) send
//! protobuf and get 415. `--coordinated-leader-election` turns the
//! [`Coordinator`] on, and `--coordinator-scale 0.1` runs it ten times faster.
//!
//! # Differences from a real API server
//!
//! - Plain HTTP (no TLS), HTTP/1.1. Request and answer bodies are JSON: a
//!   protobuf body gets 415, and a client that asks for a `meta.k8s.io`
//!   Table gets the object (kubectl then prints NAME and AGE).
//! - ValidatingAdmissionPolicies are evaluated as the API server evaluates them,
//!   for the parts its admission module names (resource rules, namespace
//!   selectors by labels, match conditions, a Lease or other served kind as the
//!   parameter, variables, validations, `Deny` and `Warn`); a token's user for
//!   `request.userInfo` is set with [`Emulator::set_user`] (a Pod's service
//!   account with [`UserInfo::pod`]), else it is the token's own name.
//! - No authentication or RBAC: the bearer token only names the client;
//!   403 and 401 come from injected faults ([`Fault::Forbidden`], [`Fault::Status`]).
//! - Reads in a missing namespace answer as for a missing object (as the real
//!   server does); creates in a missing namespace get `namespaces "x" not found`.
//! - Deleting a namespace removes its objects at once (no Terminating phase that lasts).
//! - The two Event APIs are stored apart.
//! - Server-side apply is not served: a PATCH of `application/apply-patch+yaml`
//!   (`kubectl apply --server-side`) gets 415 `UnsupportedMediaType` naming it.
//! - `managedFields` and `generation` are not maintained.
//! - The [`Coordinator`] is one task, always running (the API server's
//!   controller is itself leader-elected among API servers). It looks again at
//!   a Lease the moment the Lease expires, where the API server's controller
//!   notices at its next periodic look, and at any write to the store. Expired
//!   LeaseCandidates are ignored but not deleted (the API server's garbage
//!   collector deletes them). Its writes are counted and recorded, but faults
//!   are not injected into them (they do not cross HTTP).
//! - No OpenAPI documents (`/openapi/v3` and `/openapi/v2` are 404), so kubectl
//!   sends no `fieldValidation` and validates nothing itself unless told
//!   `--validate=false`; a client that sends `fieldValidation` gets it.
//! - `fieldValidation` knows every field of the served kinds except inside
//!   the opaque ones (`metadata.managedFields`, a Node's or Namespace's
//!   `status`, a Node's `spec.configSource`, the timestamps the server sets),
//!   which are kept as written. Duplicate fields in a JSON body are not
//!   reported (the last one wins), and several unknown fields are listed in
//!   the order of their paths, not of the body. A patch's own JSON-patch
//!   operations are not checked for unknown keys.
//! - Nodes are objects only: no kubelet heartbeats, no status conditions, no
//!   taints added on cordon (`spec.unschedulable` is stored as written).

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

// The binary's only dependency of its own (src/main.rs parses its command line
// with it), named so that the check above passes. The binary is not checked:
// every dependency of the library (per feature) would have to be named there.
use clap as _;

mod admission;
mod coordinator;
mod discovery;
mod emulator;
mod faults;
#[doc(hidden)]
pub mod fuzzing;
mod list;
mod patch;
mod resource;
mod schema;
mod selector;
mod semver;
mod server;
mod status;
mod store;
mod time;
mod validation;
mod watch;

pub use admission::UserInfo;
pub use coordinator::Coordinator;
pub use emulator::{Emulator, EmulatorBuilder, Error, kubectl, kubectl_output};
pub use faults::{Fault, Faults, Match, RequestCounts, WriteRecord};
pub use resource::{Resource, Verb};
