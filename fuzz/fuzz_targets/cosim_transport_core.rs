//! Equivalence: the Verilated `transport_core` and its model agree, record for record, on any
//! operation stream under any valid/ready stall pattern: a seed's, or phases written out in the
//! input (mroce-cosim lockstep engine; `fuzz_equivalence` clips the input and runs it).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_cosim::core::CoreTxn;
use mroce_cosim::run::{check_core, fuzz_equivalence};

fuzz_target!(|input: (u64, Vec<u8>, Vec<CoreTxn>)| {
    if let Err(e) = fuzz_equivalence("transport_core", check_core, &input) {
        panic!("{e}");
    }
});
