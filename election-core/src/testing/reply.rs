//! [`Reply`]: how a lock answers one call, played out on a [`Register`].

use crate::action::Action;
use crate::input::Input;
use crate::lock::LockError;
use crate::time::WallTime;

use super::Register;

/// How a lock answers one call: what [`ScriptedLock`](super::ScriptedLock) is
/// scripted with, and what the scenario tests' links between a node and the
/// lock come down to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Applied and answered as a compare-and-swap store would.
    Serve,
    /// Not applied; answered with this error (a refused connection, a 403, a 429).
    Fail(LockError),
    /// Never answered and never applied: the request hangs until the elector's
    /// request timeout.
    Hang,
    /// Applied, but the answer is lost: the elector learns nothing (its request
    /// timeout fires), while the write stands.
    AnswerLost,
}

impl Reply {
    /// Plays `action` out on `register` at wall time `wall` as this reply says:
    /// the input that answers it, or `None` if no answer comes ([`Reply::Hang`],
    /// [`Reply::AnswerLost`]).
    pub fn answer(self, register: &mut Register, action: &Action, wall: WallTime) -> Option<Input> {
        let op = action.op();
        match self {
            Reply::Serve => Some(op.answer(register.apply(action, wall))),
            Reply::Fail(e) => Some(op.answer(Err(e))),
            Reply::Hang => None,
            Reply::AnswerLost => {
                let _ = register.apply(action, wall);
                None
            }
        }
    }
}
