//! The driver test suite on smol, in real time.

test_kit::driver_suite!(
    block_on = smol::block_on,
    runtime = adapter_smol::SmolRuntime::new()
);
