//! Distributed (LUT) RAM with an asynchronous read port and a synchronous write port.
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

#[derive(LogicBlock, Default)]
pub struct LutRam<D: Synth, const N: usize> {
    pub clock: Signal<In, Clock>,
    pub read_address: Signal<In, Bits<N>>,
    pub read_data: Signal<Out, D>,
    pub write_address: Signal<In, Bits<N>>,
    pub write_data: Signal<In, D>,
    pub write_enable: Signal<In, bool>,
    // boxed so the block's struct stays small in the rust-hdl simulator's tree of blocks
    #[allow(clippy::box_collection)]
    _sim: Box<BTreeMap<Bits<N>, D>>,
}

impl<D: Synth, const N: usize> Logic for LutRam<D, N> {
    fn update(&mut self) {
        if self.clock.pos_edge() && self.write_enable.val() {
            self._sim.insert(self.write_address.val(), self.write_data.val());
        }
        self.read_data.next = *self._sim.get(&self.read_address.val()).unwrap_or(&D::default());
    }
    fn connect(&mut self) {
        self.read_data.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "reg [{d}:0] mem [0:{a}];\n\
             integer i;\ninitial begin\n   for (i = 0; i <= {a}; i = i + 1) mem[i] = {w}'h0;\nend\n\
             always @(posedge clock) begin\n   if (write_enable) mem[write_address] <= write_data;\nend\n\
             always @(*) read_data = mem[read_address];\n",
            d = D::BITS - 1,
            a = (1usize << N) - 1,
            w = D::BITS
        ))
    }
    fn timing(&self) -> Vec<TimingInfo> {
        vec![]
    }
}

/// A sized constant (emitted as a sized `localparam`, so the Verilog has no unsized literals).
pub fn kc<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(v.into())
}

/// A 16-bit value zero-extended to 32 bits without a cast (rust-hdl's `bit_cast` emits an
/// operand-width mismatch that Verilator's WIDTH check reports): set `lo`, clear `hi`, `.into()`.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct Wide32 {
    pub lo: Bits<16>,
    pub hi: Bits<16>,
}
