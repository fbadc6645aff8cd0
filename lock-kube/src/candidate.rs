//! A candidacy for Kubernetes' coordinated leader election (KEP-4355): the
//! `LeaseCandidate` (`coordination.k8s.io/v1beta1`) that tells the coordinator
//! this process may lead a Lease, with its versions and strategy.
//!
//! [`LeaseCandidate::run`] keeps it for as long as the candidacy lasts:
//!
//! - it creates the object (named after the identity, as the coordinator writes
//!   that name into the Lease), or takes over one a previous life left, writing
//!   the spec afresh: a restarted process with a new version is seen with it
//!   (client-go renews an existing candidate without updating its versions);
//! - it acknowledges each ping at once: it watches its own object, and when the
//!   coordinator sets `pingTime` after `renewTime`, it renews; it also renews on
//!   its own every renew interval (5 minutes, as client-go), so that the
//!   coordinator's garbage collection never takes a live candidate;
//! - when `stop` completes it deletes the object, so that the coordinator stops
//!   choosing this process; stop the candidacy before the election releases the
//!   Lease, or the coordinator may give it straight back.
//!
//! API failures are logged and retried after a pause (a second, growing to the
//! renew interval); only `stop` ends the candidacy. The election itself runs in
//! [`election_core::Mode::Coordinated`].
//!
//! Every Kubernetes version k8s-openapi 0.29 supports (1.33 and later) serves
//! `coordination.k8s.io/v1beta1` LeaseCandidates; the cluster needs the
//! `CoordinatedLeaderElection` feature gate and the API enabled, and the
//! candidate's Role the verbs of [`RBAC_VERBS`] on `leasecandidates`.

use std::future::Future;
use std::time::Duration;

use async_compat::Compat;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::coordination::v1beta1::{
    LeaseCandidate as LeaseCandidateObject, LeaseCandidateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};

use crate::error::{Target, Verb};
use crate::names::{NameError, validate_name, validate_namespace};
use crate::time::{Clock, to_timestamp};

/// The strategy the Kubernetes coordinator implements: the candidate with the
/// oldest emulation version (then binary version, then the oldest candidate).
pub const OLDEST_EMULATION_VERSION: &str = "OldestEmulationVersion";

/// The verbs a candidate needs on `leasecandidates` (`coordination.k8s.io`).
pub const RBAC_VERBS: [&str; 5] = ["get", "create", "update", "watch", "delete"];

/// The resource, as RBAC and error messages name it.
const RESOURCE: &str = "leasecandidates.coordination.k8s.io";

/// A candidacy that cannot be published as configured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CandidateError {
    /// The namespace, the identity (the object's name) or the Lease's name is
    /// not a valid Kubernetes name.
    #[error("invalid LeaseCandidate: {0}")]
    Name(#[from] NameError),
    /// A version is not a semantic version `MAJOR.MINOR.PATCH` (no leading `v`),
    /// as the API requires.
    #[error(
        "{field} must be a semantic version such as 1.2.3, without a leading 'v' (got {value:?})"
    )]
    Version {
        /// `binaryVersion` or `emulationVersion`.
        field: &'static str,
        /// What was given.
        value: String,
    },
    /// The emulation version is newer than the binary version, which the API
    /// refuses.
    #[error("emulationVersion {emulation} must not be newer than binaryVersion {binary}")]
    EmulationAboveBinary {
        /// The emulation version given.
        emulation: String,
        /// The binary version given.
        binary: String,
    },
    /// The strategy is neither `OldestEmulationVersion` nor a qualified name
    /// (`example.com/my-strategy`).
    #[error(
        "strategy must be {OLDEST_EMULATION_VERSION} or a qualified name such as example.com/x (got {0:?})"
    )]
    Strategy(String),
}

/// The `LeaseCandidate` one process publishes for one Lease; see the module docs.
#[derive(Clone)]
pub struct LeaseCandidate {
    api: Api<LeaseCandidateObject>,
    target: Target,
    spec: LeaseCandidateSpec,
    renew_interval: Duration,
    request_timeout: Duration,
    clock: Clock,
}

/// Builds a [`LeaseCandidate`]: [`LeaseCandidate::builder`].
#[derive(Clone)]
pub struct CandidateBuilder {
    client: kube::Client,
    namespace: String,
    identity: String,
    lease_name: String,
    binary_version: String,
    emulation_version: Option<String>,
    strategy: String,
    renew_interval: Duration,
    request_timeout: Duration,
    clock: Clock,
}

impl std::fmt::Debug for LeaseCandidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseCandidate")
            .field("target", &self.target)
            .field("spec", &self.spec)
            .field("renew_interval", &self.renew_interval)
            .finish_non_exhaustive()
    }
}

impl LeaseCandidate {
    /// A candidacy of `identity` (the election's identity, which names the
    /// object) for the Lease `lease_name` in `namespace`. The binary version
    /// defaults to this crate's version; set the application's own with
    /// [`CandidateBuilder::binary_version`].
    pub fn builder(
        client: kube::Client,
        namespace: &str,
        identity: &str,
        lease_name: &str,
    ) -> CandidateBuilder {
        CandidateBuilder {
            client,
            namespace: namespace.into(),
            identity: identity.into(),
            lease_name: lease_name.into(),
            binary_version: env!("CARGO_PKG_VERSION").into(),
            emulation_version: None,
            strategy: OLDEST_EMULATION_VERSION.into(),
            renew_interval: Duration::from_secs(300),
            request_timeout: Duration::from_secs(5),
            clock: Clock::system(),
        }
    }

    /// The spec this candidacy publishes (its `renewTime` and `pingTime` unset).
    pub fn spec(&self) -> &LeaseCandidateSpec {
        &self.spec
    }

    /// Publishes the candidacy and keeps it until `stop` completes, then
    /// deletes it (bounded by the request timeout). Runs on any async runtime.
    pub async fn run(&self, stop: impl Future<Output = ()>) {
        let stop = stop.fuse();
        futures::pin_mut!(stop);
        let mut pause = Duration::from_secs(1);
        loop {
            let kept = Compat::new(self.keep()).fuse();
            futures::pin_mut!(kept);
            futures::select! {
                () = stop => break,
                err = kept => {
                    tracing::warn!(target = %self.target, error = %err, ?pause, "LeaseCandidate: retrying after a failure");
                }
            }
            // Made inside the context too: a tokio timer registers when created.
            let sleep = Compat::new(async move { tokio::time::sleep(pause).await }).fuse();
            futures::pin_mut!(sleep);
            futures::select! {
                () = stop => break,
                () = sleep => {}
            }
            pause = (pause * 2).min(self.renew_interval);
        }
        self.delete().await;
    }

    /// Publishes the candidacy, then acknowledges pings and renews on the renew
    /// interval, until something fails (the error, for the log).
    async fn keep(&self) -> kube::Error {
        let mut version = match self.publish().await {
            Ok(v) => v,
            Err(e) => return e,
        };
        loop {
            let fields = format!("metadata.name={}", self.target.name);
            let secs = u32::try_from(self.renew_interval.as_secs().max(1)).unwrap_or(u32::MAX);
            let params = WatchParams::default().fields(&fields).timeout(secs);
            let events = match self.bounded(self.api.watch(&params, &version)).await {
                Ok(events) => events,
                Err(e) => return e,
            };
            let events = events.fuse();
            futures::pin_mut!(events);
            let renew_at = tokio::time::sleep(self.renew_interval).fuse();
            futures::pin_mut!(renew_at);
            loop {
                let event = futures::select! {
                    () = renew_at => None,
                    event = events.next() => Some(event),
                };
                match event {
                    // The renew interval passed, or the server ended the watch:
                    // renew, and watch afresh.
                    None | Some(None) => break,
                    Some(Some(Ok(WatchEvent::Modified(obj) | WatchEvent::Added(obj)))) => {
                        if pinged(&obj) {
                            tracing::debug!(target = %self.target, "LeaseCandidate: pinged; acknowledging");
                            break;
                        }
                    }
                    Some(Some(Ok(WatchEvent::Bookmark(_)))) => {}
                    // Deleted (by a garbage collection or a human): published
                    // again by the renew below, which creates it.
                    Some(Some(Ok(WatchEvent::Deleted(_)))) => break,
                    Some(Some(Ok(WatchEvent::Error(status)))) => {
                        return kube::Error::Api(status);
                    }
                    Some(Some(Err(e))) => return e,
                }
            }
            version = match self.publish().await {
                Ok(v) => v,
                Err(e) => return e,
            };
        }
    }

    /// Creates the object, or writes the spec and a fresh `renewTime` over the
    /// one that exists (by compare-and-swap on the version read); returns the
    /// version written.
    async fn publish(&self) -> Result<String, kube::Error> {
        let name = &self.target.name;
        let existing = self.bounded(self.api.get_opt(name)).await?;
        let mut obj = existing.unwrap_or_else(|| LeaseCandidateObject {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(self.target.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: self.spec.clone(),
        });
        obj.spec = LeaseCandidateSpec {
            ping_time: obj.spec.ping_time.take(),
            renew_time: Some(MicroTime(to_timestamp(self.clock.now()))),
            ..self.spec.clone()
        };
        let pp = PostParams::default();
        let written = if obj.metadata.resource_version.is_some() {
            self.bounded(self.api.replace(name, &pp, &obj)).await?
        } else {
            self.bounded(self.api.create(&pp, &obj)).await?
        };
        Ok(written.metadata.resource_version.unwrap_or_default())
    }

    /// Deletes the object, best-effort (a failure is logged: the coordinator's
    /// garbage collection removes a candidacy left behind).
    async fn delete(&self) {
        let name = &self.target.name;
        let params = DeleteParams::default();
        let deleted = self.bounded(self.api.delete(name, &params));
        match Compat::new(deleted).await {
            Ok(_) => tracing::debug!(target = %self.target, "LeaseCandidate deleted"),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                let err = crate::error::classify(&e, Verb::Delete, &self.target);
                tracing::warn!(target = %self.target, error = %err, "LeaseCandidate: delete failed");
            }
        }
    }

    /// `fut` cut off after the request timeout.
    async fn bounded<T>(
        &self,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, kube::Error> {
        match tokio::time::timeout(self.request_timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(kube::Error::Service(
                format!("no answer within {:?}", self.request_timeout).into(),
            )),
        }
    }
}

/// Whether the coordinator pinged after the last renewal.
fn pinged(obj: &LeaseCandidateObject) -> bool {
    let spec = &obj.spec;
    match (&spec.ping_time, &spec.renew_time) {
        (Some(ping), Some(renew)) => ping.0 > renew.0,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

impl CandidateBuilder {
    /// The application's version (`MAJOR.MINOR.PATCH`), for example
    /// `env!("CARGO_PKG_VERSION")`. Default: this crate's version.
    #[must_use]
    pub fn binary_version(mut self, version: impl Into<String>) -> Self {
        self.binary_version = version.into();
        self
    }

    /// The version whose behaviour the binary keeps (the one the coordinator
    /// compares first, oldest wins). Default: the binary version.
    #[must_use]
    pub fn emulation_version(mut self, version: impl Into<String>) -> Self {
        self.emulation_version = Some(version.into());
        self
    }

    /// The strategy ([`OLDEST_EMULATION_VERSION`] by default, the one the
    /// Kubernetes coordinator implements).
    #[must_use]
    pub fn strategy(mut self, strategy: impl Into<String>) -> Self {
        self.strategy = strategy.into();
        self
    }

    /// How often the candidacy renews on its own, pings aside (default 5 min).
    #[must_use]
    pub fn renew_interval(mut self, every: Duration) -> Self {
        self.renew_interval = every.max(Duration::from_secs(1));
        self
    }

    /// The bound of each API call (default 5 s; use the election's
    /// `Config::request_timeout`).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The wall clock that stamps `renewTime` (tests).
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Checks the names, versions and strategy, as the API server would.
    pub fn build(self) -> Result<LeaseCandidate, CandidateError> {
        validate_namespace(&self.namespace)?;
        validate_name(&self.identity)?;
        validate_name(&self.lease_name)?;
        let binary = semver(&self.binary_version).ok_or_else(|| CandidateError::Version {
            field: "binaryVersion",
            value: self.binary_version.clone(),
        })?;
        let emulation = self
            .emulation_version
            .clone()
            .unwrap_or_else(|| self.binary_version.clone());
        let parsed = semver(&emulation).ok_or_else(|| CandidateError::Version {
            field: "emulationVersion",
            value: emulation.clone(),
        })?;
        if parsed > binary {
            return Err(CandidateError::EmulationAboveBinary {
                emulation,
                binary: self.binary_version,
            });
        }
        if self.strategy != OLDEST_EMULATION_VERSION && !self.strategy.contains('/') {
            return Err(CandidateError::Strategy(self.strategy));
        }
        let api =
            crate::call::in_tokio_context(|| Api::namespaced(self.client.clone(), &self.namespace));
        Ok(LeaseCandidate {
            api,
            target: Target::new(RESOURCE, &self.namespace, &self.identity),
            spec: LeaseCandidateSpec {
                binary_version: self.binary_version,
                emulation_version: Some(emulation),
                lease_name: self.lease_name,
                ping_time: None,
                renew_time: None,
                strategy: self.strategy,
            },
            renew_interval: self.renew_interval,
            request_timeout: self.request_timeout,
            clock: self.clock,
        })
    }
}

/// `MAJOR.MINOR.PATCH`, each a number without leading zeros, optionally followed
/// by `-pre` or `+build` (compared by the numbers only, which is all the
/// coordinator's order and this check need).
fn semver(v: &str) -> Option<(u64, u64, u64)> {
    let core = v.split(['-', '+']).next()?;
    let mut parts = core.split('.');
    let mut num = || -> Option<u64> {
        let p = parts.next()?;
        let ok = !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && (p == "0" || !p.starts_with('0'));
        ok.then(|| p.parse().ok()).flatten()
    };
    let v = (num()?, num()?, num()?);
    parts.next().is_none().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_checked_as_the_api_checks_them() {
        assert_eq!(semver("1.34.2"), Some((1, 34, 2)));
        assert_eq!(semver("1.34.0-rc.1+abc"), Some((1, 34, 0)));
        for bad in ["v1.34.2", "1.34", "1.34.2.1", "01.2.3", "", "1..3", "a.b.c"] {
            assert_eq!(semver(bad), None, "{bad}");
        }
    }
}
