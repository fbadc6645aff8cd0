//! [`Case::ConcurrentUpdatesHaveOneWinner`]: compare-and-swap updates from both
//! clients at once, all on the same version. Exactly one may win each round; the
//! others get `Conflict`; a read shows the winner's record at the winner's version.
//!
//! The racers run in two ways, since a lock can be wrong in either:
//! - on threads of their own, released together by a barrier, each awaiting its
//!   call with a plain `block_on` (no async runtime): a lock that checks the
//!   version and writes in two steps is caught even with no `.await` between
//!   them, as two threads interleave the steps;
//! - interleaved on the caller's task: a lock that checks the version, awaits
//!   something, then writes, is caught every round, whatever the machine's load.
//!
//! The threads come first and make every call of their part themselves (the
//! create included), so that no connection a lock opened on the caller's
//! executor is needed while that executor waits for the threads.
//!
//! [`Case::ConcurrentUpdatesHaveOneWinner`]: super::Case::ConcurrentUpdatesHaveOneWinner

use std::future::Future;
use std::pin::Pin;
use std::sync::Barrier;
use std::task::Poll;

use election_core::{Lock, LockError, LockRecord, Observation, Version};
use futures_lite::future::block_on;

use super::diff::observation_diff;
use super::{CaseResult, Outcome, Timeouts, call, held, ok, reads_back};

/// Racing calls per round: two per client.
const RACERS: usize = 4;
/// Rounds on threads, then rounds interleaved on one task.
const THREAD_ROUNDS: u32 = 16;
const INTERLEAVED_ROUNDS: u32 = 8;

type Answer = Result<Result<Observation, LockError>, String>;

pub(super) async fn concurrent_updates_have_one_winner<L: Lock>(
    t: &Timeouts,
    a: &L,
    b: &L,
) -> CaseResult {
    let last = std::thread::scope(|s| {
        s.spawn(|| on_threads(t, a, b))
            .join()
            .map_err(|p| format!("a racing thread panicked: {}", panic_text(&*p)))?
    })?;
    let mut current = last;
    for round in 0..INTERLEAVED_ROUNDS {
        let records = racers(round + THREAD_ROUNDS);
        let answers = join_all(
            records
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let lock = if i % 2 == 0 { a } else { b };
                    Box::pin(call(t, "a racing update", lock.update(&current.version, r)))
                        as Pin<Box<dyn Future<Output = Answer> + '_>>
                })
                .collect(),
        )
        .await;
        current = one_winner(
            "interleaved on one task",
            round,
            &current.version,
            &records,
            answers,
        )?;
        reads_back(t, a, &current).await?;
    }
    Ok(Outcome::Passed)
}

/// The threaded rounds, every call made from a thread of the suite's own.
/// Returns the last winner's observation.
fn on_threads<L: Lock>(t: &Timeouts, a: &L, b: &L) -> Result<Observation, String> {
    let mut current = block_on(ok(t, "create", a.create(&held("a"))))?;
    for round in 0..THREAD_ROUNDS {
        let records = racers(round);
        let barrier = Barrier::new(RACERS);
        let expected = &current.version;
        let answers: Vec<Answer> = std::thread::scope(|s| {
            let handles: Vec<_> = records
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let lock = if i % 2 == 0 { a } else { b };
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        block_on(call(t, "a racing update", lock.update(expected, r)))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|p| {
                        Err(format!(
                            "the update panicked on a thread with no async runtime ({}): \
                             a lock whose futures need one must bring it (async-compat)",
                            panic_text(&*p)
                        ))
                    })
                })
                .collect()
        });
        current = one_winner("on threads", round, expected, &records, answers)?;
        block_on(reads_back(t, b, &current))?;
    }
    Ok(current)
}

/// The records of one round's racers: each names its racer and the round, so
/// that a read shows which one won.
fn racers(round: u32) -> Vec<LockRecord> {
    (0..RACERS)
        .map(|i| LockRecord {
            transitions: round,
            ..held(&format!("racer-{i}"))
        })
        .collect()
}

/// Exactly one answer is a success, storing its racer's record at a new
/// version; every other is `Conflict`. Returns the winner's observation.
fn one_winner(
    how: &str,
    round: u32,
    expected: &Version,
    records: &[LockRecord],
    answers: Vec<Answer>,
) -> Result<Observation, String> {
    let mut winners = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        match answer? {
            Ok(obs) => winners.push((i, obs)),
            Err(LockError::Conflict) => {}
            Err(e) => {
                return Err(format!(
                    "round {round} ({how}): racer {i}'s update on {expected} gave {e:?}, \
                     expected success or Conflict"
                ));
            }
        }
    }
    let (i, won) = match winners.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(format!(
                "round {round} ({how}): {RACERS} updates on {expected} all got Conflict: one must win"
            ));
        }
        many => {
            let names: Vec<String> = many
                .iter()
                .map(|(i, o)| format!("racer {i} at {}", o.version))
                .collect();
            return Err(format!(
                "round {round} ({how}): {} updates on the same version {expected} all succeeded ({}): \
                 the compare-and-swap is not atomic",
                many.len(),
                names.join(", ")
            ));
        }
    };
    let want = Observation::new(won.version.clone(), records[i].clone());
    let diff = observation_diff(&want, &won, ("wrote", "answered"));
    if won.version == *expected {
        return Err(format!(
            "round {round} ({how}): the winning update answered the version it replaced ({expected})"
        ));
    }
    if !diff.is_empty() {
        return Err(format!("round {round} ({how}): the winning update: {diff}"));
    }
    Ok(won)
}

/// Polls every future on the caller's task until all are done.
async fn join_all<'a, T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + 'a>>>) -> Vec<T> {
    let mut done: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (f, slot) in futures.iter_mut().zip(done.iter_mut()) {
            if slot.is_none()
                && let Poll::Ready(v) = f.as_mut().poll(cx)
            {
                *slot = Some(v);
            }
        }
        if done.iter().all(Option::is_some) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// A panic's message, where it has one.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}
