//! Equivalence: the Verilated `rx_tracker` and its model agree, record for record, on any
//! operation stream under any valid/ready stall pattern: a seed's, or phases written out in the
//! input (mroce-cosim lockstep engine; `fuzz_equivalence` clips the input and runs it).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_cosim::bench::RxTxn;
use mroce_cosim::run::{check_rx, fuzz_equivalence};

fuzz_target!(|input: (u64, Vec<u8>, Vec<RxTxn>)| {
    if let Err(e) = fuzz_equivalence("rx_tracker", check_rx, &input) {
        panic!("{e}");
    }
});
