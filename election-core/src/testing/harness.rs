//! [`Harness`]: a [`Driven`] elector whose every call a [`ScriptedLock`] answers.

use alloc::vec::Vec;
use core::ops::{Deref, DerefMut};
use core::time::Duration;

use crate::config::{Config, ConfigError};
use crate::event::Event;
use crate::lock::WatchEvent;
use crate::time::{Instant, WallTime};

use super::{Driven, ScriptedLock};

/// One elector ([`Driven`], which it dereferences to), a [`ScriptedLock`] and a
/// virtual clock starting at zero (wall time: seconds since the Unix epoch equal
/// to the virtual seconds). Every call is answered by the lock as soon as it is
/// made; a drain ends at once.
#[derive(Debug)]
pub struct Harness {
    /// The elector under test, on its virtual clock.
    pub driven: Driven,
    /// The lock it runs against.
    pub lock: ScriptedLock,
    /// How many events of the log [`settle`](Self::settle) has looked at.
    seen: usize,
}

impl Deref for Harness {
    type Target = Driven;

    fn deref(&self) -> &Driven {
        &self.driven
    }
}

impl DerefMut for Harness {
    fn deref_mut(&mut self) -> &mut Driven {
        &mut self.driven
    }
}

impl Harness {
    /// An elector with `config`, starting at time zero against an absent lock.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        Self::with_lock(config, ScriptedLock::new())
    }

    /// An elector with `config` against `lock` as the test prepared it.
    pub fn with_lock(config: Config, lock: ScriptedLock) -> Result<Self, ConfigError> {
        let mut h = Harness {
            driven: Driven::start(config, Instant::ZERO)?,
            lock,
            seen: 0,
        };
        h.settle();
        Ok(h)
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.driven.now
    }

    /// Takes the events so far, each with the virtual instant it came at.
    pub fn events(&mut self) -> Vec<(Instant, Event)> {
        self.driven.take_events()
    }

    /// Hands the elector a watch event (from [`ScriptedLock::put`] or
    /// [`ScriptedLock::delete`]) at the current time.
    pub fn watch(&mut self, event: WatchEvent) {
        self.driven.watch(event);
        self.settle();
    }

    /// Runs for `d` of virtual time, firing every timer on the way.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.driven.now + d;
        self.run_until(d, |h| h.driven.now >= end);
    }

    /// Runs until `done` holds (checked after every step) or `limit` of virtual
    /// time has passed; returns whether `done` held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Harness) -> bool) -> bool {
        let end = self.driven.now + limit;
        loop {
            if done(self) {
                return true;
            }
            // Wake at the next timer, or at the deadline where leadership ends
            // by itself, whichever comes first.
            let now = self.driven.now;
            match self.driven.wakes().filter(|&t| t > now).min() {
                Some(t) if t <= end => self.driven.advance_to(t),
                _ => {
                    self.driven.advance_to(end);
                    self.settle();
                    return done(self);
                }
            }
            self.settle();
        }
    }

    /// Answers calls and ends drains until the elector is idle.
    fn settle(&mut self) {
        loop {
            let mut busy = false;
            while let Some(action) = self.driven.next_action() {
                let since = self.driven.now.since_epoch();
                let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
                let wall = WallTime::new(secs, since.subsec_nanos());
                if let Some(input) = self.lock.answer(action, wall) {
                    self.driven.handle(input);
                    busy = true;
                }
            }
            // Every event once, in order; a drain ends at once, and the release
            // follows (its events join the log behind those looked at).
            while self.seen < self.driven.log.len() {
                let draining = matches!(self.driven.log[self.seen].1, Event::Draining { .. });
                self.seen += 1;
                if draining {
                    self.driven.work_stopped();
                    busy = true;
                }
            }
            if !busy {
                return;
            }
        }
    }
}
