//! mroce NIC control-core firmware (issue 6): the slow paths of the transport, run on a small
//! RISC-V core (PicoRV32) next to `transport_core`, which it drives through the CSR map of
//! `mroce_csr` only.
//!
//! - [`access`]: the hardware-access trait [`access::Csr`] and its memory-mapped implementation;
//! - [`bank`]: a host register-bank model of `transport_core`'s CSR side effects (tests);
//! - [`control`]: connection setup/teardown, path and plane health, CC parameters, telemetry;
//! - [`memory_map`]: the SoC memory map the soft-core image is linked for;
//! - [`elf`]: section sizes, segments and symbols of the soft-core image;
//! - [`soc_status`]: the heartbeat and status record the soft-core image publishes.
//!
//! `no_std`, no allocator: every table is fixed capacity (const generics).
#![no_std]
#![warn(missing_docs)]

pub mod access;
pub mod bank;
pub mod control;
pub mod elf;
pub mod error;
pub mod memory_map;
pub mod soc_status;

pub use access::{Csr, Mmio};
pub use control::{CcParams, Config, ConnId, ConnRequest, ConnTable, Firmware, PollReport, Telemetry};
pub use error::Error;
