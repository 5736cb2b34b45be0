//! `record_fifo`: the output FIFO of the compact blocks, with the bound that makes their
//! back-pressure lossless.
//!
//! `room` (the block's `in_ready`) is high while fewer than [`RECORD_FIFO_DEPTH`] operations
//! have been accepted and not yet delivered, counting those still in the block's stages, so a
//! record always finds a free entry and nothing is dropped or duplicated.
//!
//! The storage is [`RecordStore`]: block RAM in the small configuration, read at the head's
//! next address, without a bypass register. A record written at a clock edge is counted (and
//! shown) one clock later, when the RAM has read it; the compact blocks write their records
//! straight from their stage X, so a block's latency is what a record register in front of a
//! bypassed RAM gives, and neither register is built.
use crate::fifo_bram::{RecordStore, FIFO_BRAM_TRIPS};
use crate::fifo_occupancy::FifoOccupancy;
use crate::lutram::kc;
use rust_hdl::prelude::*;

/// Entries of the FIFO (and bound on accepted, undelivered operations).
pub const RECORD_FIFO_DEPTH: usize = 16;

/// A 16-record FIFO of `D`.
#[derive(LogicBlock)]
pub struct RecordFifo<D: Synth> {
    pub clock: Signal<In, Clock>,
    /// The block accepted an operation at this clock edge (its record comes later).
    pub accept: Signal<In, Bit>,
    /// The block may accept an operation.
    pub room: Signal<Out, Bit>,
    /// Write `write_data` at this clock edge (it is at `out` one clock later at the earliest).
    pub write: Signal<In, Bit>,
    pub write_data: Signal<In, D>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out: Signal<Out, D>,
    store: RecordStore<D, 4>,
    /// A write at the last clock edge: counted in `cnt` at this one.
    wl: DFF<Bit>,
    wp: DFF<Bits<4>>,
    rp: DFF<Bits<4>>,
    cnt: DFF<Bits<5>>,
    occ: FifoOccupancy,
    pop: Signal<Local, Bit>,
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
}

impl<D: Synth> Default for RecordFifo<D> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            accept: Default::default(),
            room: Default::default(),
            write: Default::default(),
            write_data: Default::default(),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out: Default::default(),
            store: Default::default(),
            wl: Default::default(),
            wp: Default::default(),
            rp: Default::default(),
            cnt: Default::default(),
            occ: FifoOccupancy::new(RECORD_FIFO_DEPTH),
            pop: Default::default(),
            one4: kc(1),
            one5: kc(1),
        }
    }
}

// The FIFO_BRAM_TRIPS loop has no trips outside the small configuration (on purpose).
#[allow(clippy::reversed_empty_ranges)]
impl<D: Synth> Logic for RecordFifo<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wl, wp, rp, cnt);
        self.occ.clock.next = self.clock.val();
        self.store.clock.next = self.clock.val();
        self.room.next = self.occ.room.val();
        self.store.write_address.next = self.wp.q.val();
        self.store.write_data.next = self.write_data.val();
        self.store.write_enable.next = self.write.val();
        self.store.read_address.next = self.rp.q.val();
        self.out.next = self.store.read_data.val();
        self.out_valid.next = self.cnt.q.val().any();
        self.pop.next = self.cnt.q.val().any() && self.out_ready.val();
        if self.write.val() {
            self.wp.d.next = self.wp.q.val() + self.one4.val();
        }
        if self.pop.val() {
            self.rp.d.next = self.rp.q.val() + self.one4.val();
        }
        for _t in 0..FIFO_BRAM_TRIPS {
            // block RAM (small configuration): read the head the pointer has after this edge
            self.store.read_address.next = self.rp.q.val();
            if self.pop.val() {
                self.store.read_address.next = self.rp.q.val() + self.one4.val();
            }
        }
        self.wl.d.next = self.write.val();
        if self.wl.q.val() && !self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() + self.one5.val();
        }
        if !self.wl.q.val() && self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() - self.one5.val();
        }
        self.occ.accept.next = self.accept.val();
        self.occ.pop.next = self.pop.val();
    }
}
