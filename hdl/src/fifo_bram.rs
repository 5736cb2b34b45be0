//! `fifo_bram`: a FIFO's storage in block RAM, and [`FifoStore`], the storage the blocks' output
//! FIFOs use in this configuration.
//!
//! The ECP5 configurations keep their FIFOs in distributed RAM ([`LutRam`](crate::lutram::LutRam): the head is read
//! asynchronously at `read_address`, the FIFO's read pointer). An iCE40 has no distributed RAM:
//! there an asynchronous read becomes a flip-flop per bit and a multiplexer tree, so the small
//! configuration, built for iCE40, uses [`FifoBram`]. Its read is synchronous, as block RAM
//! requires: the block drives `read_address` with the address the head will have after this
//! clock edge (the read pointer's next value, [`FIFO_BRAM_TRIPS`]), the RAM registers the word
//! there, and a write to that same address at the same edge is taken from its own register.
//! Both give the block the same head word at every clock.
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

/// 1 when the output FIFOs are block RAM (the small configuration), else 0: the trip count of
/// the `for` in each block that drives [`FifoBram`]'s `read_address` with the next head (hdl_gen
/// has no constant `if`; a loop without trips emits nothing, so the other configurations'
/// Verilog is unchanged).
pub const FIFO_BRAM_TRIPS: usize = cfg!(feature = "config-small") as usize;

/// The storage of the pipelined blocks' output FIFOs and the compact blocks' ring words: block
/// RAM in the small configuration.
#[cfg(feature = "config-small")]
pub type FifoStore<D, const N: usize> = FifoBram<D, N>;
/// The storage of the blocks' output FIFOs: LUT RAM in the ECP5 configurations.
#[cfg(not(feature = "config-small"))]
pub type FifoStore<D, const N: usize> = crate::lutram::LutRam<D, N>;

/// Simulation state of [`FifoBram`] (boxed: the rust-hdl simulator walks every block's struct).
#[derive(Default)]
struct FifoBramSim<D: Synth, const N: usize> {
    mem: BTreeMap<Bits<N>, D>,
    /// The registered read, and whether the write at the same edge went to its address.
    rdata: D,
    bypass: bool,
    wdata: D,
}

/// `2^N` words of `D` with a synchronous read: `read_data` is the word at the `read_address` of
/// the last clock edge, including a write to it at that edge. The ports are [`LutRam`](crate::lutram::LutRam)'s, so a
/// block takes either.
#[derive(LogicBlock, Default)]
pub struct FifoBram<D: Synth, const N: usize> {
    pub clock: Signal<In, Clock>,
    /// The address to read at this edge: the FIFO's head after it.
    pub read_address: Signal<In, Bits<N>>,
    pub read_data: Signal<Out, D>,
    pub write_address: Signal<In, Bits<N>>,
    pub write_data: Signal<In, D>,
    pub write_enable: Signal<In, bool>,
    _sim: Box<FifoBramSim<D, N>>,
}

impl<D: Synth, const N: usize> Logic for FifoBram<D, N> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            let s = &mut *self._sim;
            if self.write_enable.val() {
                s.mem.insert(self.write_address.val(), self.write_data.val());
            }
            // read after the write: the same word as the hardware's read with its bypass
            s.rdata = *s.mem.get(&self.read_address.val()).unwrap_or(&D::default());
            s.bypass = self.write_enable.val() && self.write_address.val() == self.read_address.val();
            s.wdata = self.write_data.val();
        }
        self.read_data.next = if self._sim.bypass {
            self._sim.wdata
        } else {
            self._sim.rdata
        };
    }
    fn connect(&mut self) {
        self.read_data.connect();
    }
    fn hdl(&self) -> Verilog {
        let (d, a, w) = (D::BITS - 1, (1usize << N) - 1, D::BITS);
        // the RAM's own read-during-write behaviour never shows: a write to the address read
        // at the same edge is taken from `wdata` (`no_rw_check`: yosys need not emulate it;
        // `ram_style`: block RAM even for the compact blocks' 4-word rings);
        // `rdata` has no initial value, which block RAM cannot give without logic
        Verilog::Custom(format!(
            "(* ram_style = \"block\", no_rw_check *)\nreg [{d}:0] mem [0:{a}];\n\
             integer i;\ninitial begin\n   for (i = 0; i <= {a}; i = i + 1) mem[i] = {w}'h0;\nend\n\
             reg [{d}:0] rdata;\nreg [{d}:0] wdata = {w}'h0;\nreg bypass = 1'b0;\n\
             always @(posedge clock) begin\n   if (write_enable) mem[write_address] <= write_data;\nend\n\
             always @(posedge clock) begin\n   rdata <= mem[read_address];\n   \
             bypass <= write_enable && (write_address == read_address);\n   wdata <= write_data;\nend\n\
             always @(*) read_data = bypass ? wdata : rdata;\n"
        ))
    }
    fn timing(&self) -> Vec<TimingInfo> {
        vec![]
    }
}

/// The storage of [`crate::record_fifo::RecordFifo`]: block RAM without the write bypass in the
/// small configuration (the FIFO counts a record one clock after its write, when the RAM reads
/// it), LUT RAM in the ECP5 configurations.
#[cfg(feature = "config-small")]
pub type RecordStore<D, const N: usize> = BlockRam<D, N>;
/// The storage of [`crate::record_fifo::RecordFifo`]: LUT RAM in the ECP5 configurations.
#[cfg(not(feature = "config-small"))]
pub type RecordStore<D, const N: usize> = crate::lutram::LutRam<D, N>;

/// Simulation state of [`BlockRam`].
#[derive(Default)]
struct BlockRamSim<D: Synth, const N: usize> {
    mem: BTreeMap<Bits<N>, D>,
    rdata: D,
}

/// `2^N` words of `D` with a synchronous read and no bypass: `read_data` is the word at the
/// `read_address` of the last clock edge, undefined in hardware when that edge wrote it (the
/// simulation gives the word before the write). Nothing but the RAM is built. Ports as [`LutRam`](crate::lutram::LutRam).
#[derive(LogicBlock, Default)]
pub struct BlockRam<D: Synth, const N: usize> {
    pub clock: Signal<In, Clock>,
    pub read_address: Signal<In, Bits<N>>,
    pub read_data: Signal<Out, D>,
    pub write_address: Signal<In, Bits<N>>,
    pub write_data: Signal<In, D>,
    pub write_enable: Signal<In, bool>,
    _sim: Box<BlockRamSim<D, N>>,
}

impl<D: Synth, const N: usize> Logic for BlockRam<D, N> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            let s = &mut *self._sim;
            s.rdata = *s.mem.get(&self.read_address.val()).unwrap_or(&D::default());
            if self.write_enable.val() {
                s.mem.insert(self.write_address.val(), self.write_data.val());
            }
        }
        self.read_data.next = self._sim.rdata;
    }
    fn connect(&mut self) {
        self.read_data.connect();
    }
    fn hdl(&self) -> Verilog {
        let (d, a, w) = (D::BITS - 1, (1usize << N) - 1, D::BITS);
        // `no_rw_check`: a word read at the edge that writes it is never used (RecordFifo counts
        // a record one clock after its write), so yosys need not build the RAM's read-old
        // behaviour in logic, a register and a multiplexer per bit; nor has `rdata` an initial
        // value, which block RAM cannot give without logic either
        Verilog::Custom(format!(
            "(* ram_style = \"block\", no_rw_check *)\nreg [{d}:0] mem [0:{a}];\n\
             integer i;\ninitial begin\n   for (i = 0; i <= {a}; i = i + 1) mem[i] = {w}'h0;\nend\n\
             reg [{d}:0] rdata;\n\
             always @(posedge clock) begin\n   if (write_enable) mem[write_address] <= write_data;\nend\n\
             always @(posedge clock) rdata <= mem[read_address];\n\
             always @(*) read_data = rdata;\n"
        ))
    }
    fn timing(&self) -> Vec<TimingInfo> {
        vec![]
    }
}
