//! Equivalence: the Verilated `transport_core` and its model agree, record for record, on any
//! operation stream under any valid/ready stall pattern: a seed's, or phases written out in the
//! input (mroce-cosim lockstep engine).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_cosim::core::CoreTxn;
use mroce_cosim::engine::MAX_STALL_SCRIPT;
use mroce_cosim::run::check_core;

/// Operations per input: short runs keep the executions per second high.
const MAX_OPS: usize = 160;

fuzz_target!(|input: (u64, Vec<u8>, Vec<CoreTxn>)| {
    let (stall_seed, script, ops) = input;
    let script = &script[..script.len().min(MAX_STALL_SCRIPT)];
    let ops = &ops[..ops.len().min(MAX_OPS)];
    match check_core(stall_seed, script, ops) {
        Ok(None) => {}
        Ok(Some(replay)) => panic!(
            "transport_core differs from the model: {}\nreplay file (save as JSON, run `mroce cosim replay FILE`):\n{}",
            replay.mismatch.as_ref().map_or(String::new(), |m| m.to_string()),
            serde_json::to_string(&replay).unwrap_or_default()
        ),
        Err(e) => panic!("transport_core co-simulation could not run: {e}"),
    }
});
