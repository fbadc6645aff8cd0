//! The driver test suite on smol, in real time, every case at once
//! (`harness = false`: the suite's own harness).

test_kit::driver_suite!(
    main,
    block_on = smol::block_on,
    runtime = adapter_smol::SmolRuntime::new()
);
