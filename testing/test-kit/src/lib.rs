//! The workspace's shared test tooling (`publish = false`): what the tests of
//! several crates run, kept out of the libraries they test.
//!
//! - [`driver_suite`](mod@driver_suite): the driver test suite over the memory lock, written once
//!   and instantiated by each adapter with [`driver_suite!`];
//! - [`kube_lock`]: the suite of a Kubernetes lock (`lock_kube::ObjectLock`
//!   over a codec) against the API emulator, written once and instantiated by
//!   `lock-lease` and `lock-configmap` with [`kube_lock_suite!`], the lock
//!   conformance suite and the election story on it;
//! - [`runtimes`]: one async test run on tokio, smol and async-std
//!   ([`runtime_tests!`]), runtime-neutral timers, a bridge for direct `kube` calls;
//! - [`story`]: the three-candidate election story on any lock and runtime, and
//!   the check of the leadership Events a Kubernetes lock records during it;
//! - [`rbac`]: a lock's RBAC Role checked against the requests a lock session
//!   makes on the emulator;
//! - [`admission`]: ValidatingAdmissionPolicy behaviours the fencing users
//!   rely on, checked on the emulator and on kube-apiserver alike;
//! - [`apiserver`]: a real kube-apiserver on etcd, built from source by
//!   `testing/k8s-server/build.sh`, for the real-server tests; and
//!   [`Server`](apiserver::Server), what a suite needs of an API server, so
//!   that one suite runs on the emulator and on kube-apiserver;
//! - [`poll`]: polling for who leads now and for the next one to start leading,
//!   as the benchmarks wait;
//! - [`proxy`]: a TCP proxy per client that holds or slows its traffic, for
//!   partitions and a slow API on the real kube-apiserver;
//! - [`stall`]: a watch that tells a real-time test whether the machine
//!   withheld its whole process (then a leader rightly loses at its deadline)
//!   or only an executor was blocked;
//! - [`figures`]: the nearest-rank percentile and the CPU model that the
//!   benchmarks (`examples`) and the chaos soak (`testing/chaos`) print.
//!
//! Add it as a dev-dependency:
//!
//! ```toml
//! [dev-dependencies]
//! test-kit.workspace = true
//! ```

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

pub mod admission;
pub mod apiserver;
pub mod driver_suite;
pub mod figures;
pub mod kube_lock;
pub mod poll;
pub mod proxy;
pub mod rbac;
pub mod runtimes;
pub mod stall;
pub mod story;
