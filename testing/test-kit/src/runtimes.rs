//! Test plumbing to run one async test on tokio, smol and async-std.
//!
//! A test written as a plain `async fn` that names no runtime runs on all three
//! with [`runtime_tests!`](crate::runtime_tests), which makes one `#[test]` per
//! runtime, in the modules `on_tokio`, `on_smol` and `on_async_std`:
//!
//! ```
//! use std::time::Duration;
//!
//! use kube_emulator::Emulator;
//! use test_kit::runtimes::{sleep, timeout};
//!
//! async fn a1_the_emulator_answers() {
//!     // Its own thread and tokio runtime: there is none under smol or async-std.
//!     let emu = Emulator::start_blocking().expect("emulator");
//!     assert_eq!(timeout(Duration::from_secs(1), sleep(Duration::ZERO)).await, Some(()));
//!     assert!(emu.url().starts_with("http://127.0.0.1:"));
//! }
//!
//! test_kit::runtime_tests!(a1_the_emulator_answers);
//! # fn main() {
//! #     // The `#[test]`s are not built here: run the test as they would.
//! #     for runtime in test_kit::runtimes::Runtime::ALL {
//! #         runtime.run(a1_the_emulator_answers);
//! #     }
//! # }
//! ```
//!
//! Inside such a test:
//!
//! - start the emulator with [`Emulator::start_blocking`](kube_emulator::Emulator::start_blocking);
//! - make direct `kube` calls (an admin's, a human's: any not made through a lock)
//!   inside [`compat`], which gives kube's client the tokio reactor it wants under
//!   smol and async-std (building a `kube::Client` wants one too). A lock's own
//!   calls are not wrapped: bridging the runtime is the lock's job;
//! - wait with [`sleep`] and [`timeout`], which work on any runtime.

use std::future::Future;
use std::time::Duration;

/// The stack of the thread a test runs on: futures nest deeply in debug builds
/// (the lock conformance suite overflows the default 2 MiB).
pub const TEST_STACK: usize = 64 << 20;

/// An async runtime to run a test on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// A multi-thread tokio runtime with two workers, IO and timers enabled.
    Tokio,
    /// `smol::block_on`; what the test spawns through smol runs on smol's
    /// global executor.
    Smol,
    /// `async_std::task::block_on`.
    AsyncStd,
}

impl Runtime {
    /// The three runtimes.
    pub const ALL: [Runtime; 3] = [Runtime::Tokio, Runtime::Smol, Runtime::AsyncStd];

    /// Runs `future` to completion on this runtime, on the calling thread.
    ///
    /// # Panics
    ///
    /// If the tokio runtime cannot be built (no threads), or if `future` panics.
    pub fn block_on<F: Future>(self, future: F) -> F::Output {
        match self {
            Runtime::Tokio => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime")
                .block_on(future),
            Runtime::Smol => smol::block_on(future),
            Runtime::AsyncStd => async_std::task::block_on(future),
        }
    }

    /// Runs the test `test` on this runtime on a thread of its own with a
    /// [`TEST_STACK`] stack, named as the calling thread (the test harness names
    /// it after the test); a panic in the test is resumed on the caller.
    ///
    /// `test` makes the future on that thread, so the future need not be `Send`.
    ///
    /// # Panics
    ///
    /// If the thread cannot be started, or when the test panics.
    pub fn run<T, F>(self, test: T) -> F::Output
    where
        T: FnOnce() -> F + Send,
        F: Future,
        F::Output: Send,
    {
        let mut thread = std::thread::Builder::new().stack_size(TEST_STACK);
        if let Some(name) = std::thread::current().name() {
            thread = thread.name(name.to_owned());
        }
        std::thread::scope(|scope| {
            thread
                .spawn_scoped(scope, move || self.block_on(test()))
                .expect("a test thread")
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

/// Runs `future` with a tokio runtime context: the caller's under tokio, else
/// the one `async-compat` keeps. For direct `kube` calls (and for building a
/// `kube::Client`) from a test that runs on any runtime.
pub async fn compat<F: Future>(future: F) -> F::Output {
    async_compat::Compat::new(future).await
}

/// Waits `duration` on any runtime (`async-io`'s timer).
pub async fn sleep(duration: Duration) {
    smol::Timer::after(duration).await;
}

/// `future`'s output, or `None` if it is not ready within `limit`; on any
/// runtime (`async-io`'s timer). A future ready at the same time as the limit
/// wins.
pub async fn timeout<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    smol::future::or(async { Some(future.await) }, async {
        sleep(limit).await;
        None
    })
    .await
}

/// Makes one `#[test]` per runtime of [`Runtime::ALL`] for each named test, an
/// `async fn()` of the calling module that names no runtime.
///
/// `test_kit::runtime_tests!(a1_stale_update, w1_broken_watch)` expands to the
/// modules `on_tokio`, `on_smol` and `on_async_std`, each holding `#[test] fn
/// a1_stale_update()` and `#[test] fn w1_broken_watch()`, which
/// [`Runtime::run`] the test on that runtime (on a thread with a large stack).
/// So a test keeps its name, prefixed by its runtime: `on_smol::a1_stale_update`.
/// Attributes written before a name (`#[ignore]`, doc comments) go on each of
/// its three tests.
///
/// See the [module documentation](crate::runtimes) for what such a test may use.
#[macro_export]
macro_rules! runtime_tests {
    ($($(#[$attr:meta])* $name:ident),+ $(,)?) => {
        $crate::runtime_tests!(@on on_tokio, Tokio; $($(#[$attr])* $name),+);
        $crate::runtime_tests!(@on on_smol, Smol; $($(#[$attr])* $name),+);
        $crate::runtime_tests!(@on on_async_std, AsyncStd; $($(#[$attr])* $name),+);
    };
    (@on $module:ident, $runtime:ident; $($(#[$attr:meta])* $name:ident),+) => {
        mod $module {
            $(
                $(#[$attr])*
                #[test]
                fn $name() {
                    $crate::runtimes::Runtime::$runtime.run(super::$name)
                }
            )+
        }
    };
}
