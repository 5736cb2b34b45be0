//! Equivalence: the Verilated `tx_scoreboard` and its model agree, record for record, on any
//! operation stream under any valid/ready stall pattern: a seed's, or phases written out in the
//! input (mroce-cosim lockstep engine; `fuzz_equivalence` clips the input and runs it).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_cosim::bench::TxTxn;
use mroce_cosim::run::{check_tx, fuzz_equivalence};

fuzz_target!(|input: (u64, Vec<u8>, Vec<TxTxn>)| {
    if let Err(e) = fuzz_equivalence("tx_scoreboard", check_tx, &input) {
        panic!("{e}");
    }
});
