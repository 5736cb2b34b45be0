//! mroce-conformance: the conformance suite of SPEC.md.
//!
//! A catalogue of numbered cases ([`cases::all`]), each tracing to a SPEC.md section and each
//! a scripted exchange with an implementation under test: frames in (as bytes, built by the
//! reference encoder), time advanced, frames, completions and counters expected out. Cases see
//! the implementation only through one small trait, [`adapter::Adapter`] (frames in/out,
//! clock, verbs, counters), implemented for
//!
//! - the reference model on a virtual clock ([`model::ModelAdapter`]),
//! - the UDP runtime over real loopback sockets ([`udp::UdpAdapter`]),
//! - the co-simulated HDL ([`hdl::HdlAdapter`]: the model's connection layer with every
//!   component operation replayed on the hardware blocks and compared).
//!
//! [`runner::run`] gives one verdict per case (pass / fail with the first difference / n/a
//! with the reason) and a summary; `mroce conformance --target model|udp|hdl` prints them.
//! [`mutation::Mutant`] wraps an adapter with deliberate faults, to show that the suite
//! catches them.
#![warn(missing_docs)]

pub mod adapter;
pub mod cases;
pub mod harness;
pub mod hdl;
pub mod model;
pub mod mutation;
pub mod runner;
pub mod udp;

pub use adapter::{Adapter, Env, Need, OutFrame, Setup};
pub use runner::{run, run_retrying, CaseResult, Summary, Verdict};

/// The `hdl` target: component operations replayed on the Verilated blocks, each connection
/// with its own stall pattern.
fn hdl_adapter() -> hdl::HdlAdapter {
    use mroce_cosim::component_replay::VerilatedReplay;
    use mroce_model::component_trace::ComponentReplay;
    let unavailable = VerilatedReplay::new(1).err().map(|e| e.to_string());
    let mut seed = 0u64;
    hdl::HdlAdapter::new(
        "hdl",
        Box::new(move || {
            seed += 1;
            VerilatedReplay::new(seed)
                .map(|r| Box::new(r) as Box<dyn ComponentReplay>)
                .map_err(|e| e.to_string())
        }),
        unavailable,
    )
}

/// Build the adapter for a target name ("model", "udp", "hdl").
pub fn adapter_for(target: &str) -> Option<Box<dyn Adapter>> {
    match target {
        "model" => Some(Box::new(model::ModelAdapter::new(0x6d72_6f63))),
        "udp" => Some(Box::new(udp::UdpAdapter::new())),
        "hdl" => Some(Box::new(hdl_adapter())),
        _ => None,
    }
}
