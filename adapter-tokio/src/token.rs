//! Leader work that is told to stop through tokio's `CancellationToken`.

use std::future::Future;

use election_core::Term;
use election_driver::{LeaderWork, WorkRun};
use tokio_util::sync::CancellationToken;

/// Leader work for [`election_driver::Builder::custom_leader_work`] that gets a
/// [`CancellationToken`] (child tokens, `run_until_cancelled`, drop guards)
/// instead of the driver's [`election_driver::CancelSignal`]. The token is
/// cancelled when leadership is given up or lost; the same rules hold as for
/// [`election_driver::Builder::leader_work`].
///
/// ```
/// use adapter_tokio::{CancellationToken, token_work};
/// use election_core::{Config, Lock};
/// use election_driver::Builder;
///
/// fn builder<L: Lock>(lock: L) -> Builder<L> {
///     Builder::new(lock, Config::client_go("pod-a-7f9c")).custom_leader_work(token_work(
///         |term, cancel: CancellationToken| async move {
///             let work = async { println!("leading in term {term}") };
///             cancel.run_until_cancelled(work).await;
///         },
///     ))
/// }
/// ```
pub fn token_work<F, Fut>(work: F) -> impl LeaderWork
where
    F: FnMut(Term, CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    TokenWork(work)
}

struct TokenWork<F>(F);

impl<F, Fut> LeaderWork for TokenWork<F>
where
    F: FnMut(Term, CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn start(&mut self, term: Term) -> WorkRun {
        let token = CancellationToken::new();
        let future = (self.0)(term, token.clone());
        WorkRun {
            future: Box::pin(future),
            cancel: Box::new(move || token.cancel()),
        }
    }
}
