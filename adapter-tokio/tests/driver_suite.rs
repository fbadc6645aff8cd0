//! The driver test suite on tokio, with paused (virtual) time: leases of seconds
//! run in milliseconds.

use std::future::Future;

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime")
        .block_on(f)
}

test_kit::driver_suite!(
    block_on = block_on,
    runtime = adapter_tokio::TokioRuntime::current()
        .expect("inside the runtime")
        .with_tokio_clock()
);
