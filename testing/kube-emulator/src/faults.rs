//! Per-client fault injection, request counting and the write history.
//!
//! A client is told apart by its bearer token (`Authorization: Bearer <t>`),
//! falling back to its `User-Agent`, then to `"anonymous"`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::resource::{Resource, Verb};

/// One fault. Faults "before" act before the request touches the store;
/// faults "after commit" let the request take effect, then spoil the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Wait this long before handling the request.
    Latency(Duration),
    /// Answer with this HTTP code and a `Status` body, without touching the
    /// store. `retry_after` (seconds) sets the `Retry-After` header and
    /// `details.retryAfterSeconds`, as a 429 from the API server does.
    Status {
        /// HTTP code (e.g. 429, 500, 503, 504).
        code: u16,
        /// Seconds for `Retry-After`.
        retry_after: Option<u32>,
    },
    /// A 429 as a real API server's max-in-flight or priority-and-fairness
    /// filter answers it: the `Retry-After` header (seconds) and a plain-text
    /// body (`Too many requests, please try again later.`), so no
    /// `details.retryAfterSeconds`. Without touching the store.
    TooManyRequestsPlain {
        /// Seconds for `Retry-After`.
        retry_after: u32,
    },
    /// A 403 worded as RBAC words it, naming the client, verb and resource.
    Forbidden,
    /// Handle the request (a write is committed), then answer with this code
    /// instead of the result: the client cannot know the write happened.
    StatusAfterCommit {
        /// HTTP code, usually 500 or 504.
        code: u16,
    },
    /// Handle the request, then hold the answer this long (asymmetric delay).
    DelayAfterCommit(Duration),
    /// Never answer (until the emulator stops or the connection is dropped).
    Hang,
    /// Handle the request, then never answer.
    HangAfterCommit,
    /// Close the connection without an answer, before handling the request.
    Reset,
    /// Handle the request, then close the connection without an answer.
    AnswerLost,
    /// A watch ends cleanly (end of the chunked body) after this long.
    WatchCloseAfter(Duration),
    /// A watch breaks (the connection is aborted mid-body) after this long.
    WatchBreakAfter(Duration),
    /// A watch is accepted but never sends anything, bookmarks included.
    WatchSilent,
    /// A GET is answered from a lagging cache: the object as it was before
    /// its latest write (404 if that write created it), as a stale API
    /// server replica or watch cache would serve it. Only affects GET.
    StaleRead,
}

impl Fault {
    fn stage(&self) -> Stage {
        match self {
            Fault::Latency(_) => Stage::Latency,
            Fault::Status { .. }
            | Fault::TooManyRequestsPlain { .. }
            | Fault::Forbidden
            | Fault::Hang
            | Fault::Reset => Stage::Before,
            Fault::StatusAfterCommit { .. }
            | Fault::DelayAfterCommit(_)
            | Fault::HangAfterCommit
            | Fault::AnswerLost => Stage::After,
            Fault::WatchCloseAfter(_) | Fault::WatchBreakAfter(_) | Fault::WatchSilent => {
                Stage::Watch
            }
            Fault::StaleRead => Stage::Read,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Latency,
    Before,
    After,
    Watch,
    Read,
}

/// Which requests a rule applies to. The default matches every request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct Match {
    verbs: Option<Vec<Verb>>,
    resource: Option<Resource>,
    name: Option<String>,
}

impl Match {
    /// Every request.
    pub fn any() -> Match {
        Match::default()
    }

    /// Requests with one of these verbs.
    pub fn verbs(verbs: &[Verb]) -> Match {
        Match {
            verbs: Some(verbs.to_vec()),
            ..Match::default()
        }
    }

    /// Create, update, patch and delete.
    pub fn writes() -> Match {
        Match::verbs(&[Verb::Create, Verb::Update, Verb::Patch, Verb::Delete])
    }

    /// Get, list and watch.
    pub fn reads() -> Match {
        Match::verbs(&[Verb::Get, Verb::List, Verb::Watch])
    }

    /// Only requests on this resource.
    pub fn resource(mut self, resource: Resource) -> Match {
        self.resource = Some(resource);
        self
    }

    /// Only requests naming this object (a get, update, patch or delete of it,
    /// or a create whose body names it).
    pub fn name(mut self, name: impl Into<String>) -> Match {
        self.name = Some(name.into());
        self
    }

    pub(crate) fn matches(&self, verb: Verb, resource: Resource, name: &str) -> bool {
        self.verbs.as_ref().is_none_or(|v| v.contains(&verb))
            && self.resource.is_none_or(|r| r == resource)
            && self.name.as_deref().is_none_or(|n| n == name)
    }
}

#[derive(Debug, Clone)]
struct Rule {
    on: Match,
    fault: Fault,
    remaining: Option<u32>,
}

/// What the server does to one request, decided when it arrives.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub(crate) latency: Duration,
    pub(crate) before: Option<Fault>,
    pub(crate) after: Option<Fault>,
    pub(crate) watch: Vec<Fault>,
    /// A GET is answered from before the latest write of the object.
    pub(crate) stale_read: bool,
}

/// A committed or attempted write, with the server's wall-clock time.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteRecord {
    /// When the server handled it.
    pub at: SystemTime,
    /// The client (token, else user agent).
    pub client: String,
    /// Create, update, patch or delete.
    pub verb: Verb,
    /// The resource written.
    pub resource: Resource,
    /// Namespace (`""` for cluster-scoped).
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// The HTTP code the store produced (before any after-commit fault).
    pub code: u16,
    /// Whether the store changed (`code` 2xx and not a no-op update).
    pub committed: bool,
    /// The resourceVersion the write committed, when it succeeded: the
    /// object's after the write, or for a deletion the version of the deletion
    /// (the one its watch event carries; a deletion of a namespace: the
    /// namespace's own).
    pub resource_version: Option<String>,
    /// A fault that spoiled the answer after the write (the client saw that instead).
    pub spoiled_by: Option<Fault>,
    /// The object as stored after the write, when it succeeded.
    pub object: Option<serde_json::Value>,
}

impl WriteRecord {
    /// The resourceVersion the write produced, as a number: the server's commit
    /// order (one global, growing version). `None` when nothing was written.
    pub fn version(&self) -> Option<u64> {
        self.resource_version.as_deref()?.parse().ok()
    }
}

/// Requests seen, per client, verb and resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestCounts {
    counts: BTreeMap<(String, Verb, Resource), u64>,
}

impl RequestCounts {
    /// Requests of `client` with `verb` on `resource`.
    pub fn get(&self, client: &str, verb: Verb, resource: Resource) -> u64 {
        self.counts
            .get(&(client.to_owned(), verb, resource))
            .copied()
            .unwrap_or(0)
    }

    /// All requests of `client`.
    pub fn client_total(&self, client: &str) -> u64 {
        self.counts
            .iter()
            .filter(|((c, _, _), _)| c == client)
            .map(|(_, n)| n)
            .sum()
    }

    /// Writes (create, update, patch, delete) of `client`.
    pub fn client_writes(&self, client: &str) -> u64 {
        self.counts
            .iter()
            .filter(|((c, v, _), _)| c == client && v.is_write())
            .map(|(_, n)| n)
            .sum()
    }

    /// All requests.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Every (client, verb, resource, count), ordered.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Verb, Resource, u64)> + '_ {
        self.counts
            .iter()
            .map(|((c, v, r), n)| (c.as_str(), *v, *r, *n))
    }
}

/// Fault rules, counts and history, shared by the server and the handles.
#[derive(Debug)]
pub(crate) struct Control {
    rules: BTreeMap<Option<String>, Vec<Rule>>,
    counts: RequestCounts,
    writes: VecDeque<WriteRecord>,
    write_limit: usize,
}

impl Default for Control {
    fn default() -> Self {
        Control::new(DEFAULT_WRITE_HISTORY)
    }
}

/// Write records kept by default (the oldest are dropped beyond this).
pub(crate) const DEFAULT_WRITE_HISTORY: usize = 100_000;

/// Locks a mutex, recovering the data if a holder panicked (the state stays usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Control {
    pub(crate) fn new(write_limit: usize) -> Control {
        Control {
            rules: BTreeMap::new(),
            counts: RequestCounts::default(),
            writes: VecDeque::new(),
            write_limit: write_limit.max(1),
        }
    }

    pub(crate) fn count(&mut self, client: &str, verb: Verb, resource: Resource) {
        *self
            .counts
            .counts
            .entry((client.to_owned(), verb, resource))
            .or_insert(0) += 1;
    }

    pub(crate) fn counts(&self) -> RequestCounts {
        self.counts.clone()
    }

    pub(crate) fn reset_counts(&mut self) {
        self.counts = RequestCounts::default();
    }

    pub(crate) fn record_write(&mut self, record: WriteRecord) {
        if self.writes.len() >= self.write_limit {
            self.writes.pop_front();
        }
        self.writes.push_back(record);
    }

    pub(crate) fn writes(&self) -> Vec<WriteRecord> {
        self.writes.iter().cloned().collect()
    }

    /// Decides the faults of one request and uses up counted rules.
    pub(crate) fn plan(
        &mut self,
        client: &str,
        verb: Verb,
        resource: Resource,
        name: &str,
    ) -> Plan {
        let mut plan = Plan::default();
        for key in [Some(client.to_owned()), None] {
            let Some(rules) = self.rules.get_mut(&key) else {
                continue;
            };
            for rule in rules.iter_mut() {
                if rule.remaining == Some(0) || !rule.on.matches(verb, resource, name) {
                    continue;
                }
                let used = match rule.fault.stage() {
                    Stage::Latency => {
                        if let Fault::Latency(d) = rule.fault {
                            plan.latency += d;
                        }
                        true
                    }
                    Stage::Before if plan.before.is_none() => {
                        plan.before = Some(rule.fault.clone());
                        true
                    }
                    Stage::After if plan.after.is_none() => {
                        plan.after = Some(rule.fault.clone());
                        true
                    }
                    Stage::Watch if verb == Verb::Watch => {
                        plan.watch.push(rule.fault.clone());
                        true
                    }
                    Stage::Read if verb == Verb::Get => {
                        plan.stale_read = true;
                        true
                    }
                    Stage::Before | Stage::After | Stage::Watch | Stage::Read => false,
                };
                if used && let Some(n) = rule.remaining.as_mut() {
                    *n -= 1;
                }
            }
            rules.retain(|r| r.remaining != Some(0));
        }
        plan
    }
}

/// A handle that adds fault rules for one client (or for all clients).
///
/// Rules apply in the order added; the first matching "before" fault and the
/// first matching "after commit" fault win, latencies add up. A rule lasts
/// until [`Faults::clear`] unless limited with [`Faults::times`].
///
/// ```
/// # async fn demo() -> Result<(), kube_emulator::Error> {
/// use kube_emulator::{Emulator, Fault, Match};
/// use std::time::Duration;
/// let emu = Emulator::start().await?;
/// emu.faults("node-a").latency(Duration::from_millis(50));
/// emu.faults("node-a").on(Match::writes()).times(1).inject(Fault::StatusAfterCommit { code: 500 });
/// emu.faults("node-b").too_many_requests(2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Faults {
    control: Arc<Mutex<Control>>,
    client: Option<String>,
    on: Match,
    times: Option<u32>,
}

impl Faults {
    pub(crate) fn new(control: Arc<Mutex<Control>>, client: Option<String>) -> Faults {
        Faults {
            control,
            client,
            on: Match::any(),
            times: None,
        }
    }

    /// Restricts the rules added through the returned handle to matching requests.
    pub fn on(mut self, on: Match) -> Faults {
        self.on = on;
        self
    }

    /// Limits the rules added through the returned handle to `n` matching requests.
    pub fn times(mut self, n: u32) -> Faults {
        self.times = Some(n);
        self
    }

    /// Adds a rule.
    pub fn inject(&self, fault: Fault) -> &Faults {
        let rule = Rule {
            on: self.on.clone(),
            fault,
            remaining: self.times,
        };
        lock(&self.control)
            .rules
            .entry(self.client.clone())
            .or_default()
            .push(rule);
        self
    }

    /// Adds latency before each matching request.
    pub fn latency(&self, d: Duration) -> &Faults {
        self.inject(Fault::Latency(d))
    }

    /// Answers matching requests with `code` and a Status body.
    pub fn error(&self, code: u16) -> &Faults {
        self.inject(Fault::Status {
            code,
            retry_after: None,
        })
    }

    /// Answers matching requests with 429 and `Retry-After: secs`.
    pub fn too_many_requests(&self, secs: u32) -> &Faults {
        self.inject(Fault::Status {
            code: 429,
            retry_after: Some(secs),
        })
    }

    /// Answers matching requests with 429 as a real API server does: the
    /// `Retry-After: secs` header and a plain-text body.
    pub fn too_many_requests_plain(&self, secs: u32) -> &Faults {
        self.inject(Fault::TooManyRequestsPlain { retry_after: secs })
    }

    /// Answers matching requests with an RBAC-worded 403.
    pub fn forbidden(&self) -> &Faults {
        self.inject(Fault::Forbidden)
    }

    /// Commits matching writes, then answers with `code`.
    pub fn error_after_commit(&self, code: u16) -> &Faults {
        self.inject(Fault::StatusAfterCommit { code })
    }

    /// Never answers matching requests.
    pub fn hang(&self) -> &Faults {
        self.inject(Fault::Hang)
    }

    /// Closes the connection of matching requests without an answer.
    pub fn reset(&self) -> &Faults {
        self.inject(Fault::Reset)
    }

    /// Removes every rule of this client (or the all-clients rules).
    pub fn clear(&self) {
        lock(&self.control).rules.remove(&self.client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_rules_run_out_and_match_filters_apply() {
        let control = Arc::new(Mutex::new(Control::default()));
        let f = Faults::new(control.clone(), Some("a".into()));
        f.clone()
            .on(Match::writes())
            .times(1)
            .inject(Fault::StatusAfterCommit { code: 500 });
        f.latency(Duration::from_millis(5));
        let mut c = lock(&control);
        let read = c.plan("a", Verb::Get, Resource::Lease, "l");
        assert_eq!((read.latency, read.after), (Duration::from_millis(5), None));
        let write = c.plan("a", Verb::Update, Resource::Lease, "l");
        assert_eq!(write.after, Some(Fault::StatusAfterCommit { code: 500 }));
        let again = c.plan("a", Verb::Update, Resource::Lease, "l");
        assert_eq!(again.after, None);
        let other = c.plan("b", Verb::Update, Resource::Lease, "l");
        assert_eq!(other.latency, Duration::ZERO);
    }

    #[test]
    fn write_history_keeps_the_newest_records() {
        let mut c = Control::new(2);
        for name in ["a", "b", "c"] {
            c.record_write(WriteRecord {
                at: SystemTime::now(),
                client: "x".into(),
                verb: Verb::Create,
                resource: Resource::Lease,
                namespace: "default".into(),
                name: name.into(),
                code: 201,
                committed: true,
                resource_version: None,
                spoiled_by: None,
                object: None,
            });
        }
        let names: Vec<String> = c.writes().into_iter().map(|w| w.name).collect();
        assert_eq!(names, ["b", "c"]);
    }
}
