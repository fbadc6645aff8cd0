//! A `tokio::sync::watch` of leadership states, fed by the driver's `on_state`.

use election_core::Config;
use election_driver::LeadershipState;
use tokio::sync::watch;

/// A watch of leadership states for [`election_driver::Builder::on_state`]: the
/// hook to add and the receiver that sees each state the hook is given.
///
/// The receiver holds only the latest state (what `tokio::sync::watch` is for:
/// "who leads now?"); [`election_driver::Handle::states`] streams every state in
/// order. It starts at [`LeadershipState::initial`] and, once every handle is
/// gone and the driver has ended, keeps the final state ([`changed`] then
/// errs).
///
/// ```
/// use adapter_tokio::{TokioRuntime, state_watch};
/// use election_core::{Config, Lock};
/// use election_driver::Builder;
///
/// # async fn run(lock: impl Lock) -> Result<(), election_driver::DriverError> {
/// let config = Config::client_go("pod-a-7f9c");
/// let (hook, mut states) = state_watch(&config);
/// let handle = Builder::new(lock, config).on_state(hook).spawn(TokioRuntime::current()?)?;
/// while states.changed().await.is_ok() {
///     let s = states.borrow_and_update().clone();
///     println!("{:?}: leader {:?}", s.change, s.leader);
/// }
/// # drop(handle);
/// # Ok(())
/// # }
/// ```
///
/// [`changed`]: watch::Receiver::changed
pub fn state_watch(
    config: &Config,
) -> (
    impl Fn(&LeadershipState) + Send + Sync + 'static,
    watch::Receiver<LeadershipState>,
) {
    let (tx, rx) = watch::channel(LeadershipState::initial(config.identity.clone()));
    let hook = move |state: &LeadershipState| {
        tx.send_replace(state.clone());
    };
    (hook, rx)
}
