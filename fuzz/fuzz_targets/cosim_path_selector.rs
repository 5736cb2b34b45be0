//! Equivalence: the Verilated `path_selector` and its model agree, record for record, on any
//! operation stream under any valid/ready stall pattern: a seed's, or phases written out in the
//! input (mroce-cosim lockstep engine; `fuzz_equivalence` clips the input and runs it).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_cosim::bench::SelTxn;
use mroce_cosim::run::{check_sel, fuzz_equivalence};

fuzz_target!(|input: (u64, Vec<u8>, Vec<SelTxn>)| {
    if let Err(e) = fuzz_equivalence("path_selector", check_sel, &input) {
        panic!("{e}");
    }
});
