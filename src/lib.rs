//! mroce drivers and CLI support: everything that runs the sans-IO model
//! (`mroce_model`) against a clock and a wire.
//!
//! - [`pipe`]: in-memory lossy multipath link harness (discrete-event simulation);
//! - [`plane_failure`]: the firmware plane-failure scenario (issue 6) on a transport-core backend;
//! - [`pipe_sweep`]: the pipe over losses, transports and seeds, with medians;
//! - [`pcap`]: classic pcap writer shared by the drivers (lives in `mroce_sim`, re-exported);
//! - [`cli_sim`]: the `mroce sim ...` experiments (fabric simulator in `mroce_sim`);
//! - [`transports`]: the single factory that builds a transport by kind;
//! - [`late_endpoints`]: the registers that miss the clock, from nextpnr's detailed report;
//! - [`rng`]: deterministic generators; [`size`]: byte-size arguments.
#![warn(missing_docs)]

pub use mroce_sim::pcap;
pub mod cli_conformance;
pub mod cli_hdl;
pub mod cli_sim;
pub mod cli_synth;
pub mod cli_udp;
pub mod cli_value;
pub mod late_endpoints;
pub mod pipe;
pub mod pipe_sweep;
pub mod plane_failure;
pub mod rng;
pub mod size;
pub mod soc_scenario;
pub mod transports;
