//! Answering an elector's lock calls by hand, with no async runtime.

use crate::action::Action;
use crate::elector::Elector;
use crate::lock::LockError;
use crate::record::Observation;
use crate::time::Instant;

/// Makes every lock call `elector` asks for, one at a time, until it asks for
/// none: `call` makes one [`Action`]'s call and returns the lock's answer
/// (blocking until there is one), and the answer goes back to the elector, as a
/// read's or a write's by the action's kind ([`crate::OpId::answer`]), at the
/// time `now()` tells once the call returned.
///
/// This is the first step of a loop that drives an elector by hand (the crate's
/// documentation shows the whole loop): answer the calls, then take the events
/// ([`Elector::poll_event`]), then wait for [`Elector::poll_timeout`] and hand
/// it to [`Elector::handle_timeout`]. A blocking lock makes `call` a one-liner,
/// e.g. `|action| lock.blocking_call(&action)` with `lock-memory`'s lock.
pub fn answer_calls(
    elector: &mut Elector,
    mut call: impl FnMut(Action) -> Result<Observation, LockError>,
    mut now: impl FnMut() -> Instant,
) {
    while let Some(action) = elector.poll_action() {
        let op = action.op();
        let result = call(action);
        elector.handle(op.answer(result), now());
    }
}
