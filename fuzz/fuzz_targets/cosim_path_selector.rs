//! Equivalence: the Verilated `path_selector` and its model agree, record for record, on any
//! operation stream under any valid/ready stall pattern: a seed's, or phases written out in the
//! input (mroce-cosim lockstep engine).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_cosim::bench::SelTxn;
use mroce_cosim::engine::MAX_STALL_SCRIPT;
use mroce_cosim::run::check_sel;

/// Operations per input: short runs keep the executions per second high.
const MAX_OPS: usize = 160;

fuzz_target!(|input: (u64, Vec<u8>, Vec<SelTxn>)| {
    let (stall_seed, script, ops) = input;
    let script = &script[..script.len().min(MAX_STALL_SCRIPT)];
    let ops = &ops[..ops.len().min(MAX_OPS)];
    match check_sel(stall_seed, script, ops) {
        Ok(None) => {}
        Ok(Some(replay)) => panic!(
            "path_selector differs from the model: {}\nreplay file (save as JSON, run `mroce cosim replay FILE`):\n{}",
            replay.mismatch.as_ref().map_or(String::new(), |m| m.to_string()),
            serde_json::to_string(&replay).unwrap_or_default()
        ),
        Err(e) => panic!("path_selector co-simulation could not run: {e}"),
    }
});
