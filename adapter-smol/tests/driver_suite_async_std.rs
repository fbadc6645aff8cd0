//! The driver test suite on async-std (the test bodies run on async-std's
//! executor; the driver uses smol's timers and executor, which work from any), in
//! real time, every case at once (`harness = false`: the suite's own harness).

test_kit::driver_suite!(
    main,
    block_on = async_std::task::block_on,
    runtime = adapter_smol::SmolRuntime::new()
);
