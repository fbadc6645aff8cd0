//! Prometheus metrics (feature `metrics`), with client-go's names where it has them.
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `leader_election_master_status` | gauge | `name` | 1 while this node leads, else 0 (client-go) |
//! | `leader_election_slowpath_total` | counter | `name` | reads the leader had to make (client-go counts its renew's slow path, a GET before the update) |
//! | `leader_election_transitions_total` | counter | `name` | times this node started leading |
//! | `leader_election_renew_duration_seconds` | histogram | `name` | latency of successful renews |
//! | `leader_election_seconds_to_deadline` | gauge | `name` | time left before the leadership deadline (0 when not leading), refreshed at scrape |
//! | `leader_election_lock_errors_total` | counter | `name`, `class` | failed lock calls by class (`conflict`, `transient`, `forbidden`, `invalid`, `unknown`, `timeout`, …) |
//! | `leader_election_stops_total` | counter | `name`, `reason` | leaderships ended, by reason (`deadline_exceeded`, `stepped_down`, …) |
//! | `leader_election_healthy` | gauge | `name` | 1 while `/healthz` passes, 0 while it fails (a leader wedged past its deadline, or its work stalled): set at each scrape by the `http::Endpoint` that serves both (feature `http`), absent without one |
//!
//! `name` is the election's name ([`MonitorBuilder::name`](crate::monitor::MonitorBuilder::name),
//! by default the lock's object name, e.g. the Lease's name, as client-go uses).
//!
//! Several elections can share one [`Metrics`] (one set of families, registered
//! once), each with its own `name`:
//!
//! ```
//! use election_ops::Monitor;
//! use election_ops::metrics::Metrics;
//!
//! let metrics = Metrics::new();
//! let mut registry = prometheus_client::registry::Registry::default();
//! metrics.register(&mut registry);
//! let a = Monitor::builder("leases/default/a", "node-1").metrics(&metrics).build();
//! let b = Monitor::builder("leases/default/b", "node-1").metrics(&metrics).build();
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains(r#"leader_election_master_status{name="a"} 0"#));
//! assert!(text.contains(r#"leader_election_master_status{name="b"} 0"#));
//! # let _ = (a, b);
//! ```

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::monitor::Monitor;
use crate::view::LeadershipView;

type Labels = Vec<(String, String)>;

/// The metric families of any number of elections, keyed by their `name` label.
/// Clones share the families: give one to each [`Monitor`]
/// ([`MonitorBuilder::metrics`](crate::monitor::MonitorBuilder::metrics)) and
/// register it once.
#[derive(Clone, Debug)]
pub struct Metrics {
    master_status: Family<Labels, Gauge>,
    slowpath: Family<Labels, Counter>,
    transitions: Family<Labels, Counter>,
    renew_latency: Family<Labels, Histogram>,
    to_deadline: Family<Labels, Gauge<f64, AtomicU64>>,
    errors: Family<Labels, Counter>,
    stops: Family<Labels, Counter>,
    healthy: Family<Labels, Gauge>,
}

fn renew_histogram() -> Histogram {
    // 1 ms … ~16 s
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn named(name: &str) -> Labels {
    vec![("name".to_owned(), name.to_owned())]
}

fn with(name: &str, key: &str, value: &str) -> Labels {
    vec![
        ("name".to_owned(), name.to_owned()),
        (key.to_owned(), value.to_owned()),
    ]
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty families; each [`Monitor`] given them adds its series.
    pub fn new() -> Self {
        Metrics {
            master_status: Family::default(),
            slowpath: Family::default(),
            transitions: Family::default(),
            renew_latency: Family::new_with_constructor(renew_histogram as fn() -> Histogram),
            to_deadline: Family::default(),
            errors: Family::default(),
            stops: Family::default(),
            healthy: Family::default(),
        }
    }

    /// The series of election `name` exist from the start, as client-go sets
    /// "off" at construction.
    pub(crate) fn add(&self, name: &str) {
        self.master_status.get_or_create(&named(name)).set(0);
        self.slowpath.get_or_create(&named(name)).inc_by(0);
        self.transitions.get_or_create(&named(name)).inc_by(0);
    }

    pub(crate) fn set_master(&self, name: &str, leading: bool) {
        self.master_status
            .get_or_create(&named(name))
            .set(i64::from(leading));
    }

    pub(crate) fn started_leading(&self, name: &str) {
        self.transitions.get_or_create(&named(name)).inc();
    }

    pub(crate) fn stopped_leading(&self, name: &str, reason: &str) {
        self.stops
            .get_or_create(&with(name, "reason", reason))
            .inc();
    }

    pub(crate) fn lock_error(&self, name: &str, class: &str) {
        self.errors.get_or_create(&with(name, "class", class)).inc();
    }

    pub(crate) fn slowpath(&self, name: &str) {
        self.slowpath.get_or_create(&named(name)).inc();
    }

    pub(crate) fn renewed(&self, name: &str, took: Duration) {
        self.renew_latency
            .get_or_create(&named(name))
            .observe(took.as_secs_f64());
    }

    /// Whether election `name`'s liveness check passes, as read at a scrape.
    #[cfg(feature = "http")]
    pub(crate) fn set_healthy(&self, name: &str, healthy: bool) {
        self.healthy
            .get_or_create(&named(name))
            .set(i64::from(healthy));
    }

    /// The gauges read from the view: seconds to deadline, and master status by
    /// time (0 once the deadline has passed, even if the driver is wedged and has
    /// published nothing since).
    fn refresh(&self, name: &str, view: &dyn LeadershipView) {
        let now = view.now();
        let left = view
            .deadline()
            .map_or(0.0, |d| d.saturating_duration_since(now).as_secs_f64());
        self.to_deadline.get_or_create(&named(name)).set(left);
        self.set_master(name, view.leads_with_margin(Duration::ZERO));
    }

    /// Registers the families in `registry`. Do it once per registry, however many
    /// monitors share these metrics.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease",
            self.master_status.clone(),
        );
        registry.register(
            "leader_election_slowpath",
            "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease",
            self.slowpath.clone(),
        );
        registry.register(
            "leader_election_transitions",
            "Times this node started leading",
            self.transitions.clone(),
        );
        registry.register(
            "leader_election_renew_duration_seconds",
            "Latency of successful lease renewals",
            self.renew_latency.clone(),
        );
        registry.register(
            "leader_election_seconds_to_deadline",
            "Seconds left before the leadership deadline (0 when not leading)",
            self.to_deadline.clone(),
        );
        registry.register(
            "leader_election_lock_errors",
            "Failed lock calls by class",
            self.errors.clone(),
        );
        registry.register(
            "leader_election_stops",
            "Leaderships ended, by reason",
            self.stops.clone(),
        );
        registry.register(
            "leader_election_healthy",
            "1 while the health check (/healthz) passes, 0 while it fails",
            self.healthy.clone(),
        );
    }
}

impl Monitor {
    /// Registers this monitor's metric families in `registry`. When several
    /// monitors share one [`Metrics`], register it once instead
    /// ([`Metrics::register`]).
    pub fn register_metrics(&self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    /// The metric families this monitor reports to.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Refreshes this election's gauges that are read from the view (seconds to
    /// deadline; master status by time, 0 once past the deadline). Call before
    /// each scrape, for every monitor sharing the registry;
    /// [`Monitor::encode_metrics`] does it for this one.
    pub fn refresh_metrics(&self, view: &dyn LeadershipView) {
        self.metrics.refresh(self.name(), view);
    }

    /// Refreshes from `view` and encodes `registry` in the Prometheus text format.
    pub fn encode_metrics(
        &self,
        view: &dyn LeadershipView,
        registry: &Registry,
    ) -> Result<String, std::fmt::Error> {
        self.refresh_metrics(view);
        let mut out = String::new();
        encode(&mut out, registry)?;
        Ok(out)
    }
}
