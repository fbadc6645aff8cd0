//! [`ScriptedLock`]: a [`Register`] answering each call as a script says.

use alloc::collections::VecDeque;

use crate::action::Action;
use crate::input::Input;
use crate::lock::WatchEvent;
use crate::record::LockRecord;
use crate::time::WallTime;

use super::{Register, Reply};

/// A [`Register`] that answers each call as scripted ([`Reply::Serve`] unless
/// told otherwise).
#[derive(Debug, Default)]
pub struct ScriptedLock {
    /// The lock record.
    pub register: Register,
    script: VecDeque<Reply>,
    always: Option<Reply>,
}

impl ScriptedLock {
    /// An absent lock.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next call (after those already scripted) is answered so.
    pub fn script(&mut self, reply: Reply) {
        self.script.push_back(reply);
    }

    /// Every call after the scripted ones is answered so (`Reply::Serve` to undo).
    pub fn script_always(&mut self, reply: Reply) {
        self.always = Some(reply);
    }

    /// A write by someone outside the election (a human, another tool), stamped
    /// at `wall`; the watch event that reports it.
    pub fn put(&mut self, record: LockRecord, wall: WallTime) -> WatchEvent {
        WatchEvent::Changed(self.register.put(record, wall))
    }

    /// Deletes the lock; the watch event that reports it.
    pub fn delete(&mut self) -> WatchEvent {
        WatchEvent::Deleted(Some(self.register.delete()))
    }

    /// Runs `action` at wall time `wall` as scripted: the input that answers it,
    /// or `None` if no answer comes ([`Reply::Hang`], [`Reply::AnswerLost`]).
    pub fn answer(&mut self, action: Action, wall: WallTime) -> Option<Input> {
        let reply = self
            .script
            .pop_front()
            .or_else(|| self.always.clone())
            .unwrap_or(Reply::Serve);
        reply.answer(&mut self.register, &action, wall)
    }
}
