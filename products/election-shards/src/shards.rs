//! The sharded election of one replica: a candidate for every shard Lease, its
//! registration as a member, and the balancer that decides which candidates
//! campaign and which stand by.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use election_core::{Config, LockDelay, Term};
use election_driver::{Builder, CancelSignal, DriverError, Handle, Runtime};
use futures::StreamExt;
use futures::future::{AbortHandle, Abortable, BoxFuture};
use k8s_openapi::api::coordination::v1::Lease;
use lock_kube::{NameError, SharedWatch, WatchConfig};
use lock_lease::LeaseLock;

use crate::balance::{Stance, floor, stances};
use crate::membership::{GROUP_LABEL, holdings, live_members, member_lease, registered};

/// Why a sharded election could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardsError {
    /// A Lease name made from the group, a shard number or the identity is not
    /// one Kubernetes accepts.
    #[error("invalid Lease name: {0}")]
    Name(#[from] NameError),
    /// The configuration breaks a rule of `Config::validate`.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// A group of no shards.
    #[error("a shard group needs at least one shard")]
    NoShards,
}

/// The work of one shard while this replica leads it: the shard's number, the
/// term, and the signal that asks it to stop.
type ShardWork = Arc<dyn Fn(usize, Term, CancelSignal) -> BoxFuture<'static, ()> + Send + Sync>;

/// Builds one replica's sharded election ([`Shards::builder`]).
#[must_use = "a builder does nothing until spawned"]
pub struct ShardsBuilder {
    client: kube::Client,
    namespace: String,
    group: String,
    shards: usize,
    config: Config,
    watch: WatchConfig,
    work: Option<ShardWork>,
}

impl ShardsBuilder {
    /// The settings of the shared watch the group's Leases are followed through.
    pub fn watch(mut self, watch: WatchConfig) -> Self {
        self.watch = watch;
        self
    }

    /// The work to run for a shard while this replica leads it; it is told to
    /// stop (and awaited) before the shard is handed over or lost.
    pub fn shard_work<F, Fut>(mut self, work: F) -> Self
    where
        F: Fn(usize, Term, CancelSignal) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.work = Some(Arc::new(move |shard, term, cancel| {
            Box::pin(work(shard, term, cancel))
        }));
        self
    }

    /// Starts the shared watch, the member registration, a candidate per shard
    /// (on standby until the balancer's first decision) and the balancer, on `rt`.
    pub fn spawn<R: Runtime>(self, rt: R) -> Result<Shards, ShardsError> {
        if self.shards == 0 {
            return Err(ShardsError::NoShards);
        }
        let label = [(GROUP_LABEL.to_owned(), self.group.clone())];
        let shared = LeaseLock::shared_watch(
            self.client.clone(),
            &self.namespace,
            label,
            self.watch.clone(),
        );
        let lock = |name: &str| {
            LeaseLock::builder(self.client.clone(), &self.namespace, name)
                .shared_watch(&shared)
                .build()
        };
        let identity = self.config.identity.clone();
        // The member Lease has one candidate, this replica: it leads at once.
        let mut member_config = self.config.clone();
        member_config.lock_delay = LockDelay::Immediate;
        let member_lock = lock(&member_lease(&self.group, &identity))?;
        let mut candidates = Vec::with_capacity(self.shards);
        for shard in 0..self.shards {
            let mut b = Builder::new(
                lock(&format!("{}-{shard}", self.group))?,
                self.config.clone(),
            )
            .standby(true);
            if let Some(work) = &self.work {
                let work = work.clone();
                b = b.leader_work(move |term, cancel| work(shard, term, cancel));
            }
            candidates.push(b);
        }
        let member = Builder::new(member_lock, member_config).spawn(rt.clone())?;
        let candidates = candidates
            .into_iter()
            .map(|b| b.spawn(rt.clone()).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let (abort, registration) = AbortHandle::new_pair();
        let watch = Abortable::new(shared.run(), registration);
        rt.spawn(Box::pin(async move {
            let _ = watch.await;
        }));
        let inner = Arc::new(Inner {
            group: self.group,
            identity: identity.to_string(),
            lease: self.config.lease_duration,
            shared,
            member,
            candidates,
            stances: Mutex::new(Vec::new()),
            members: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            watch_task: abort,
        });
        let (balancer, registration) = AbortHandle::new_pair();
        let period = self.config.retry_period;
        let task = inner.clone();
        let sleeper = rt.clone();
        // A member joining, leaving or registering is acted on at once, a
        // crashed one when its lease runs out (see the loop).
        let members = format!("{}-member-", task.group);
        let mut changes = Box::pin(
            task.shared
                .changes()
                .filter(move |name| futures::future::ready(name.starts_with(&members))),
        );
        rt.spawn(Box::pin(async move {
            let run = async {
                loop {
                    // Next decision: at the next member change, at the instant a
                    // silent member's lease runs out, or a retry period from now.
                    let wait = task.tick(&sleeper).map_or(period, |d| d.min(period));
                    let sleep = sleeper.sleep(wait);
                    futures::future::select(sleep, changes.next()).await;
                }
            };
            let _ = Abortable::new(run, registration).await;
        }));
        Ok(Shards { inner, balancer })
    }
}

struct Inner {
    group: String,
    identity: String,
    lease: Duration,
    shared: SharedWatch<Lease>,
    member: Handle,
    candidates: Vec<Arc<Handle>>,
    /// The stance each candidate was last given.
    stances: Mutex<Vec<Stance>>,
    members: AtomicUsize,
    stopping: AtomicBool,
    watch_task: AbortHandle,
}

impl Inner {
    /// One decision: who campaigns, who stands by, what is handed over. Returns
    /// how long until the first live member would be counted out if it stays
    /// silent (its lease runs out), so that a crash is acted on then.
    fn tick<R: Runtime>(&self, rt: &R) -> Option<Duration> {
        if self.stopping.load(Ordering::Acquire) {
            return None;
        }
        let snapshot = self.shared.snapshot();
        // Decide only once our own registration is seen: then the count is what
        // the others see too, give or take a retry period.
        if !registered(&snapshot, &self.group, &self.identity) {
            return None;
        }
        let shards = self.candidates.len();
        let live = live_members(&snapshot, &self.group, self.lease);
        let members = live.len().max(1);
        self.members.store(members, Ordering::Release);
        // Another live replica under its floor goes first (a joiner, say).
        let holdings = holdings(&snapshot, &self.group, shards);
        let needy = live.iter().any(|m| {
            m.identity != self.identity
                && holdings.get(m.identity).copied().unwrap_or(0) < floor(shards, members)
        });
        let held: BTreeSet<usize> = (0..shards)
            .filter(|&s| self.candidates[s].is_leader())
            .collect();
        let next = stances(shards, members, &held, needy);
        let mut last = self.stances.lock().unwrap_or_else(|e| e.into_inner());
        for (shard, &stance) in next.iter().enumerate() {
            if last.get(shard) == Some(&stance) && stance != Stance::HandOver {
                continue;
            }
            let h = &self.candidates[shard];
            match stance {
                Stance::Campaign => h.set_standby(false),
                Stance::Standby => h.set_standby(true),
                Stance::HandOver => {
                    tracing::info!(shard, members, "handing a shard over");
                    h.set_standby(true);
                    let h = h.clone();
                    rt.spawn(Box::pin(async move { h.step_down().await }));
                }
            }
        }
        *last = next;
        live.iter().map(|m| m.counted_out_in).min()
    }
}

/// One replica's sharded election: it campaigns for every shard of the group but
/// holds at most `ceil(shards / replicas)` of them once the replicas are known.
/// See the [crate docs](crate).
pub struct Shards {
    inner: Arc<Inner>,
    balancer: AbortHandle,
}

impl Shards {
    /// A sharded election of `shards` Leases named `<group>-0` … `<group>-{shards - 1}`
    /// in `namespace`, with a member Lease `<group>-member-<identity>`; every
    /// election uses `config` (its identity is this replica's). Build the client
    /// with `lock_kube::lock_client`.
    pub fn builder(
        client: kube::Client,
        namespace: &str,
        group: &str,
        shards: usize,
        config: Config,
    ) -> ShardsBuilder {
        ShardsBuilder {
            client,
            namespace: namespace.to_owned(),
            group: group.to_owned(),
            shards,
            config,
            watch: WatchConfig::default(),
            work: None,
        }
    }

    /// The shards this replica leads now, in order.
    pub fn held(&self) -> Vec<usize> {
        (0..self.inner.candidates.len())
            .filter(|&s| self.inner.candidates[s].is_leader())
            .collect()
    }

    /// The number of live replicas at the balancer's last decision (0 before it).
    pub fn members(&self) -> usize {
        self.inner.members.load(Ordering::Acquire)
    }

    /// The election of `shard`.
    pub fn handle(&self, shard: usize) -> Option<&Handle> {
        self.inner.candidates.get(shard).map(|h| &**h)
    }

    /// Leaves the group gracefully: the member Lease is released first (the
    /// others count one replica less at once), then every shard's election is
    /// shut down, which drains its work and releases the shards it leads, so
    /// that the others take them at once.
    pub async fn shutdown(self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.balancer.abort();
        self.inner.member.shutdown().await;
        futures::future::join_all(self.inner.candidates.iter().map(|h| h.shutdown())).await;
        self.inner.watch_task.abort();
    }

    /// Stops everything at once without releasing, as a crash would: the shards
    /// stay held until their leases expire. For tests and demos.
    pub fn abort(self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.balancer.abort();
        self.inner.watch_task.abort();
        self.inner.member.abort();
        for h in &self.inner.candidates {
            h.abort();
        }
    }
}
