//! Equivalence: the Verilated `rx_tracker` and its model agree, record for record, on any
//! operation stream under any valid/ready stall pattern: a seed's, or phases written out in the
//! input (mroce-cosim lockstep engine).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_cosim::bench::RxTxn;
use mroce_cosim::engine::MAX_STALL_SCRIPT;
use mroce_cosim::run::check_rx;

/// Operations per input: short runs keep the executions per second high.
const MAX_OPS: usize = 160;

fuzz_target!(|input: (u64, Vec<u8>, Vec<RxTxn>)| {
    let (stall_seed, script, ops) = input;
    let script = &script[..script.len().min(MAX_STALL_SCRIPT)];
    let ops = &ops[..ops.len().min(MAX_OPS)];
    match check_rx(stall_seed, script, ops) {
        Ok(None) => {}
        Ok(Some(replay)) => panic!(
            "rx_tracker differs from the model: {}\nreplay file (save as JSON, run `mroce cosim replay FILE`):\n{}",
            replay.mismatch.as_ref().map_or(String::new(), |m| m.to_string()),
            serde_json::to_string(&replay).unwrap_or_default()
        ),
        Err(e) => panic!("rx_tracker co-simulation could not run: {e}"),
    }
});
