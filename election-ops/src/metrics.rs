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
//!
//! `name` is the lock's name as given to the [`Monitor`](crate::Monitor).

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

/// The metric families of one election.
#[derive(Debug)]
pub(crate) struct Metrics {
    name: String,
    master_status: Family<Labels, Gauge>,
    slowpath: Family<Labels, Counter>,
    transitions: Family<Labels, Counter>,
    renew_latency: Family<Labels, Histogram>,
    to_deadline: Family<Labels, Gauge<f64, AtomicU64>>,
    errors: Family<Labels, Counter>,
    stops: Family<Labels, Counter>,
}

fn renew_histogram() -> Histogram {
    // 1 ms … ~16 s
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

impl Metrics {
    pub(crate) fn new(name: &str) -> Self {
        let m = Metrics {
            name: name.to_owned(),
            master_status: Family::default(),
            slowpath: Family::default(),
            transitions: Family::default(),
            renew_latency: Family::new_with_constructor(renew_histogram as fn() -> Histogram),
            to_deadline: Family::default(),
            errors: Family::default(),
            stops: Family::default(),
        };
        // client-go sets "off" at construction: the series exists from the start.
        m.master_status.get_or_create(&m.name()).set(0);
        m.slowpath.get_or_create(&m.name()).inc_by(0);
        m.transitions.get_or_create(&m.name()).inc_by(0);
        m
    }

    fn name(&self) -> Labels {
        vec![("name".to_owned(), self.name.clone())]
    }

    fn with(&self, key: &str, value: &str) -> Labels {
        vec![
            ("name".to_owned(), self.name.clone()),
            (key.to_owned(), value.to_owned()),
        ]
    }

    pub(crate) fn set_master(&self, leading: bool) {
        self.master_status
            .get_or_create(&self.name())
            .set(i64::from(leading));
    }

    pub(crate) fn started_leading(&self) {
        self.transitions.get_or_create(&self.name()).inc();
    }

    pub(crate) fn stopped_leading(&self, reason: &str) {
        self.stops.get_or_create(&self.with("reason", reason)).inc();
    }

    pub(crate) fn lock_error(&self, class: &str) {
        self.errors.get_or_create(&self.with("class", class)).inc();
    }

    pub(crate) fn slowpath(&self) {
        self.slowpath.get_or_create(&self.name()).inc();
    }

    pub(crate) fn renewed(&self, took: Duration) {
        self.renew_latency
            .get_or_create(&self.name())
            .observe(took.as_secs_f64());
    }

    fn refresh(&self, view: &dyn LeadershipView) {
        let left = view.deadline().map_or(0.0, |d| {
            d.saturating_duration_since(view.now()).as_secs_f64()
        });
        self.to_deadline.get_or_create(&self.name()).set(left);
    }

    fn register(&self, registry: &mut Registry) {
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
    }
}

impl Monitor {
    /// Registers this election's metrics in `registry` (once per registry).
    pub fn register_metrics(&self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    /// Refreshes the gauges that are read from the view (seconds to deadline,
    /// master status by time). Call before each scrape; [`Monitor::encode_metrics`]
    /// does.
    pub fn refresh_metrics(&self, view: &dyn LeadershipView) {
        self.metrics.refresh(view);
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
