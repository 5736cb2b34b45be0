//! `fifo_ram`: the storage of a block's output FIFO, in LUT RAM or in block RAM.
//!
//! The FIFO reads its head at `read_address` and advances it by one when `read_advance` is set
//! (a pop at this clock edge). With [`FIFO_BLOCK_RAM`] off (the ECP5 configurations) the store is
//! distributed RAM with an asynchronous read of `read_address`, and `read_advance` is unused.
//! With it on (the small configuration, built for iCE40, which has no distributed RAM: there an
//! asynchronous read becomes a flip-flop per bit and a multiplexer tree) the read is
//! synchronous: the RAM registers the address the head will have after this edge,
//! `read_advance ? read_address + 1 : read_address`, as block RAM requires, and a write to that
//! same address at this edge is bypassed to the output. Both read the same data at every clock:
//! the block around it cannot tell them apart.
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

/// The output FIFOs use a synchronous-read RAM that maps to block RAM (iCE40 EBR): in the
/// small configuration only, so the ECP5 configurations keep their LUT RAM FIFOs.
pub const FIFO_BLOCK_RAM: bool = cfg!(feature = "config-small");

/// Simulation state of [`FifoRam`] (boxed: the rust-hdl simulator walks every block's struct).
#[derive(Default)]
struct FifoRamSim<D: Synth, const N: usize> {
    mem: BTreeMap<Bits<N>, D>,
    /// Block-RAM variant: the registered read, and whether the write of the last edge hit it.
    rdata: D,
    bypass: bool,
    wdata: D,
}

/// A FIFO's storage: `2^N` words of `D`, one write port, one read port at the FIFO's head.
#[derive(LogicBlock, Default)]
pub struct FifoRam<D: Synth, const N: usize> {
    pub clock: Signal<In, Clock>,
    /// The head (the FIFO's read pointer before this edge).
    pub read_address: Signal<In, Bits<N>>,
    /// The FIFO pops at this edge: the head moves to `read_address + 1`.
    pub read_advance: Signal<In, bool>,
    /// The word at the head.
    pub read_data: Signal<Out, D>,
    pub write_address: Signal<In, Bits<N>>,
    pub write_data: Signal<In, D>,
    pub write_enable: Signal<In, bool>,
    _sim: Box<FifoRamSim<D, N>>,
}

impl<D: Synth, const N: usize> Logic for FifoRam<D, N> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            if self.write_enable.val() {
                self._sim.mem.insert(self.write_address.val(), self.write_data.val());
            }
            if FIFO_BLOCK_RAM {
                let next = if self.read_advance.val() {
                    self.read_address.val() + Bits::<N>::from(1u64)
                } else {
                    self.read_address.val()
                };
                // read after the write: equal to the hardware's read-before-write plus bypass
                let s = &mut *self._sim;
                s.rdata = *s.mem.get(&next).unwrap_or(&D::default());
                s.bypass = self.write_enable.val() && self.write_address.val() == next;
                s.wdata = self.write_data.val();
            }
        }
        self.read_data.next = if FIFO_BLOCK_RAM {
            if self._sim.bypass {
                self._sim.wdata
            } else {
                self._sim.rdata
            }
        } else {
            *self._sim.mem.get(&self.read_address.val()).unwrap_or(&D::default())
        };
    }
    fn connect(&mut self) {
        self.read_data.connect();
    }
    fn hdl(&self) -> Verilog {
        let (d, a, w) = (D::BITS - 1, (1usize << N) - 1, D::BITS);
        let init = format!(
            "reg [{d}:0] mem [0:{a}];\n\
             integer i;\ninitial begin\n   for (i = 0; i <= {a}; i = i + 1) mem[i] = {w}'h0;\nend\n\
             always @(posedge clock) begin\n   if (write_enable) mem[write_address] <= write_data;\nend\n"
        );
        Verilog::Custom(if FIFO_BLOCK_RAM {
            // The read is registered from the next head (block RAM); a write to that address at
            // the same edge is taken from its own register, so the RAM's read-during-write
            // behaviour never shows.
            format!(
                "{init}\
                 wire [{n1}:0] head_next = read_advance ? read_address + {n}'d1 : read_address;\n\
                 reg [{d}:0] rdata = {w}'h0;\nreg [{d}:0] wdata = {w}'h0;\nreg bypass = 1'b0;\n\
                 always @(posedge clock) begin\n   rdata <= mem[head_next];\n   \
                 bypass <= write_enable && (write_address == head_next);\n   wdata <= write_data;\nend\n\
                 always @(*) read_data = bypass ? wdata : rdata;\n",
                n1 = N - 1,
                n = N
            )
        } else {
            format!("{init}always @(*) read_data = mem[read_address];\n")
        })
    }
    fn timing(&self) -> Vec<TimingInfo> {
        vec![]
    }
}
