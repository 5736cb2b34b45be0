//! mroce drivers and CLI support: everything that runs the sans-IO model
//! (`mroce_model`) against a clock and a wire.
//!
//! - [`pipe`]: in-memory lossy multipath link harness (discrete-event simulation);
//! - [`pipe_sweep`]: the pipe over losses, transports and seeds, with medians;
//! - [`pcap`]: classic pcap writer shared by the drivers;
//! - [`transports`]: the single factory that builds a transport by kind;
//! - [`rng`]: deterministic generators; [`size`]: byte-size arguments.
#![warn(missing_docs)]

pub mod pcap;
pub mod pipe;
pub mod pipe_sweep;
pub mod rng;
pub mod size;
pub mod transports;
