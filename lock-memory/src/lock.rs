//! [`MemoryLock`]: one client's handle on a [`crate::MemoryStore`], implementing
//! [`election_core::Lock`], with a blocking twin of each call for code without an
//! async runtime.

use std::sync::Arc;
use std::time::Duration;

use election_core::{
    Action, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, OpKind, Version,
    WatchStream,
};

use crate::faults::{CallPlan, Fate, Gate};
use crate::store::{Shared, State};
use crate::watch::MemoryWatch;

/// How long a blocking call that hangs waits before it reports
/// [`LockError::Unknown`], unless set with [`MemoryLock::with_blocking_timeout`].
pub const DEFAULT_BLOCKING_TIMEOUT: Duration = Duration::from_secs(5);

/// One client's handle on a [`crate::MemoryStore`]: the lock an elector is given.
/// Cloning gives another handle of the same client.
///
/// Calls go through the client's faults (see [`crate::faults`]). An async call
/// that hangs never completes: the caller's request timeout must cut it off, as
/// it would a hung HTTP request. The blocking calls ([`MemoryLock::blocking_get`]
/// and friends) sleep the thread for latency and turn a hang into
/// [`LockError::Unknown`] after the blocking timeout.
#[derive(Clone)]
pub struct MemoryLock {
    shared: Arc<Shared>,
    name: Arc<str>,
    blocking_timeout: Duration,
    /// Whether [`Lock::watch`] offers a watch (see [`MemoryLock::without_watch`]).
    watch: bool,
}

/// A call on the store.
enum Call<'a> {
    Get,
    Create(&'a LockRecord),
    Update(&'a Version, &'a LockRecord),
}

impl Call<'_> {
    fn kind(&self) -> OpKind {
        match self {
            Call::Get => OpKind::Get,
            Call::Create(_) => OpKind::Create,
            Call::Update(..) => OpKind::Update,
        }
    }

    fn apply(&self, st: &mut State, who: &str) -> Result<Observation, LockError> {
        match self {
            Call::Get => st.get(),
            Call::Create(record) => st.create(who, record),
            Call::Update(expected, record) => st.update(who, expected, record),
        }
    }
}

/// Why a call ends without its answer.
enum Stop {
    Fail(LockError),
    Hang,
}

impl MemoryLock {
    pub(crate) fn new(shared: Arc<Shared>, name: Arc<str>) -> Self {
        MemoryLock {
            shared,
            name,
            blocking_timeout: DEFAULT_BLOCKING_TIMEOUT,
            watch: true,
        }
    }

    /// The client's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets how long a hanging blocking call waits before it reports
    /// [`LockError::Unknown`] (the blocking caller's request timeout).
    #[must_use]
    pub fn with_blocking_timeout(mut self, timeout: Duration) -> Self {
        self.blocking_timeout = timeout;
        self
    }

    /// Offers no watch: electors on this client poll the lock every jittered
    /// retry period, as client-go's do (the baseline of the benchmarks, and what a
    /// backend without a watch looks like to the driver).
    #[must_use]
    pub fn without_watch(mut self) -> Self {
        self.watch = false;
        self
    }

    /// Counts the call, checks the partition, then draws the call's plan.
    fn begin(&self, call: &Call<'_>) -> Result<CallPlan, Stop> {
        self.shared.with_client(&self.name, |c| {
            c.count(call.kind());
            match c.gate() {
                Gate::Open => Ok(c.plan_call(call.kind())),
                Gate::Refused => Err(Stop::Fail(LockError::transient(
                    "connection refused (partitioned)",
                ))),
                Gate::Hung => Err(Stop::Hang),
            }
        })
    }

    /// After the request delay: the request reaches the store, or not. Applies it.
    fn arrive(
        &self,
        call: &Call<'_>,
        plan: &CallPlan,
    ) -> Result<Result<Observation, LockError>, Stop> {
        self.shared.with_state(|st| {
            match st.client(&self.name).gate() {
                Gate::Open => {}
                Gate::Refused => {
                    return Err(Stop::Fail(LockError::transient(
                        "connection refused (partitioned)",
                    )));
                }
                Gate::Hung => return Err(Stop::Hang),
            }
            match &plan.fate {
                Fate::Hang => Err(Stop::Hang),
                Fate::Error(e) => Err(Stop::Fail(e.clone())),
                Fate::StaleRead if matches!(call, Call::Get) => Ok(st.stale_get()),
                Fate::Answer | Fate::AnswerLost | Fate::HangAfterCommit | Fate::StaleRead => {
                    Ok(call.apply(st, &self.name))
                }
            }
        })
    }

    /// After the response delay: the answer reaches the caller, or not.
    fn answer(
        &self,
        plan: &CallPlan,
        result: Result<Observation, LockError>,
    ) -> Result<Result<Observation, LockError>, Stop> {
        match self.shared.with_client(&self.name, |c| c.gate()) {
            Gate::Open => {}
            Gate::Refused => {
                return Err(Stop::Fail(LockError::unknown(
                    "connection reset (partitioned after sending)",
                )));
            }
            Gate::Hung => return Err(Stop::Hang),
        }
        match plan.fate {
            Fate::AnswerLost => Err(Stop::Fail(LockError::unknown("answer lost (injected)"))),
            Fate::HangAfterCommit => Err(Stop::Hang),
            _ => Ok(result),
        }
    }

    async fn sleep(&self, d: Duration) {
        if !d.is_zero() {
            let sleeper = self.shared.sleeper();
            sleeper(d).await;
        }
    }

    async fn call(&self, call: Call<'_>) -> Result<Observation, LockError> {
        let outcome = async {
            let plan = self.begin(&call)?;
            self.sleep(plan.request_delay).await;
            let result = self.arrive(&call, &plan)?;
            self.sleep(plan.response_delay).await;
            self.answer(&plan, result)
        }
        .await;
        match outcome {
            Ok(result) => result,
            Err(Stop::Fail(e)) => Err(e),
            Err(Stop::Hang) => std::future::pending().await,
        }
    }

    fn call_blocking(&self, call: Call<'_>) -> Result<Observation, LockError> {
        let sleep = |d: Duration| {
            if !d.is_zero() {
                std::thread::sleep(d);
            }
        };
        let outcome = (|| {
            let plan = self.begin(&call)?;
            sleep(plan.request_delay);
            let result = self.arrive(&call, &plan)?;
            sleep(plan.response_delay);
            self.answer(&plan, result)
        })();
        match outcome {
            Ok(result) => result,
            Err(Stop::Fail(e)) => Err(e),
            Err(Stop::Hang) => {
                sleep(self.blocking_timeout);
                Err(LockError::unknown(format!(
                    "no answer within {:?} (hung)",
                    self.blocking_timeout
                )))
            }
        }
    }

    /// [`Lock::get`], blocking the thread; latency sleeps the thread.
    pub fn blocking_get(&self) -> Result<Observation, LockError> {
        self.call_blocking(Call::Get)
    }

    /// [`Lock::create`], blocking the thread.
    pub fn blocking_create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        self.call_blocking(Call::Create(record))
    }

    /// [`Lock::update`], blocking the thread.
    pub fn blocking_update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        self.call_blocking(Call::Update(expected, record))
    }

    /// The call `action` asks for, blocking the thread: the `call` of
    /// [`election_core::answer_calls`], for an elector driven with no async runtime.
    pub fn blocking_call(&self, action: &Action) -> Result<Observation, LockError> {
        match action {
            Action::Get { .. } => self.blocking_get(),
            Action::Create { record, .. } => self.blocking_create(record),
            Action::Update {
                expected, record, ..
            } => self.blocking_update(expected, record),
        }
    }
}

impl Lock for MemoryLock {
    async fn get(&self) -> Result<Observation, LockError> {
        self.call(Call::Get).await
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        self.call(Call::Create(record)).await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        self.call(Call::Update(expected, record)).await
    }

    /// Yields every change after `from` in order; the current state first when
    /// `from` is `None`, unknown to this store, or older than the retained history
    /// ([`crate::MemoryStore::with_history`]). An absent lock's state is
    /// [`election_core::WatchEvent::Deleted`].
    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        if !self.watch {
            return None;
        }
        Some(Box::pin(MemoryWatch::start(
            self.shared.clone(),
            self.name.clone(),
            from,
        )))
    }

    fn describe(&self) -> String {
        format!("memory/{}", self.name)
    }

    fn configure(&self, config: &election_core::Config) {
        let _ = config; // nothing to configure
    }

    /// Nothing to record: the store has no Events.
    fn leadership_changed(&self, _identity: &str, _change: LeadershipChange) -> Option<LockTask> {
        None
    }
}

impl std::fmt::Debug for MemoryLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLock")
            .field("client", &self.name)
            .finish_non_exhaustive()
    }
}
