//! `tx_scoreboard_compact`: the transmit scoreboard of `mroce_model::tx_scoreboard` for small
//! FPGAs.
//!
//! The same ports, operations and records as [`crate::tx_scoreboard::TxScoreboardHw`], II = 1
//! for every operation (the slow-path ones too), built for a slow clock (the iCE40 boards run at
//! 25 MHz): stage X reads the path's row and ring words, computes the model's transaction and
//! writes them back within one clock, so the next operation on the same path reads the new row
//! and nothing is forwarded. Fixed latency [`TXC_LATENCY`]; `room_mask` reflects an operation
//! [`TXC_ROOM_LAG`] clocks after its acceptance.
//!
//! Stages: **I** (input register; in the small configuration the ring words are block RAM, read
//! at acceptance); **X** (the transaction; the row, every ring word and the
//! path's `room_mask` bit written at the clock edge, and the record into the output FIFO's RAM,
//! which shows it one clock later).

use crate::fifo_bram::{FifoStore, FIFO_BRAM_TRIPS};
use crate::lutram::{kc, LutRam};
use crate::record_fifo::RecordFifo;
use crate::tx_scoreboard::{
    TxOut, TX_OP_ACK_WORD, TX_OP_CLEAR_BACKOFF, TX_OP_EXPIRE, TX_OP_RESET, TX_OP_SEND, TX_OP_TIMER,
};
use mroce_model::params::{
    PATHS, PATH_BITS, RTO_MAX_BACKOFF, SACK_BITS, SACK_WORDS, SACK_WORD_BITS, SACK_WORD_INDEX_BITS,
};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record (FIFO empty, `out_ready` high).
pub const TXC_LATENCY: usize = 3;
/// Clocks from acceptance until `room_mask` reflects the operation.
pub const TXC_ROOM_LAG: usize = 1;

const _: () = assert!(SACK_WORD_BITS == 32, "tx_scoreboard_compact: 32-bit words");
const _: () = assert!(SACK_WORDS >= 2 && SACK_WORDS <= 8 && SACK_WORDS == 1 << WB);
const _: () = assert!(PATHS >= 4 && PATHS <= 16 && PATHS == 1 << PB);

/// Width of a path index.
const PB: usize = PATH_BITS as usize;
/// Width of a ring word index.
const WB: usize = SACK_WORD_INDEX_BITS as usize;

/// Per-path row (the ring words are in banks of their own).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxcRow {
    /// PSN of bit 0 of the head word.
    pub una: Bits<32>,
    /// Ring index of the head word.
    pub head: Bits<WB>,
    /// Next PSN to assign.
    pub nxt: Bits<32>,
    pub armed: Bit,
    pub deadline: Bits<32>,
    pub backoff: Bits<3>,
}

/// Stage I register: the accepted operation.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxcIn {
    pub v: Bit,
    pub op: Bits<3>,
    pub path: Bits<PB>,
    pub psn: Bits<32>,
    pub mask: Bits<32>,
    pub below: Bits<32>,
    pub now: Bits<32>,
    pub rto: Bits<32>,
    /// now + rto (the deadline after an ACK's progress).
    pub nowrto: Bits<32>,
}

/// The compact transmit scoreboard.
#[derive(LogicBlock)]
pub struct TxScoreboardCompact {
    pub clock: Signal<In, Clock>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub in_op: Signal<In, Bits<3>>,
    pub in_path: Signal<In, Bits<PB>>,
    pub in_psn: Signal<In, Bits<32>>,
    pub in_mask: Signal<In, Bits<32>>,
    pub in_lost_below: Signal<In, Bits<32>>,
    pub in_now: Signal<In, Bits<32>>,
    pub in_rto: Signal<In, Bits<32>>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out: Signal<Out, TxOut>,
    /// Bit p: path p has window room (`has_room(p)`).
    pub room_mask: Signal<Out, Bits<PATHS>>,
    // constants
    c1: Constant<Bits<32>>,
    c32: Constant<Bits<32>>,
    /// SACK_BITS: a word offset at or above it is outside the window.
    cbits: Constant<Bits<32>>,
    /// SACK_BITS - SACK_WORD_BITS: the window's capacity (one word of slack).
    croom: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    ones32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    one3: Constant<Bits<3>>,
    z3: Constant<Bits<3>>,
    maxbo: Constant<Bits<3>>,
    wone: Constant<Bits<WB>>,
    wzero: Constant<Bits<WB>>,
    onep: Constant<Bits<PATHS>>,
    kw: [Constant<Bits<WB>>; SACK_WORDS],
    op_send: Constant<Bits<3>>,
    op_ack: Constant<Bits<3>>,
    op_expire: Constant<Bits<3>>,
    op_timer: Constant<Bits<3>>,
    op_clear: Constant<Bits<3>>,
    op_reset: Constant<Bits<3>>,
    // state
    st: LutRam<TxcRow, PB>,
    /// Ring words: block RAM in the small configuration (read at acceptance, a write to the
    /// same path at that edge bypassed), LUT RAM read in X elsewhere.
    bank: [FifoStore<Bits<32>, PB>; SACK_WORDS],
    fifo: RecordFifo<TxOut>,
    ir: DFF<TxcIn>,
    /// Stored inverted ("no room"), so the power-up value 0 means every path has room.
    noroom: DFF<Bits<PATHS>>,
    // stage I
    accept: Signal<Local, Bit>,
    // stage X
    q: Signal<Local, TxcRow>,
    ns: Signal<Local, TxcRow>,
    words: [Signal<Local, Bits<32>>; SACK_WORDS],
    nw: [Signal<Local, Bits<32>>; SACK_WORDS],
    alloc: Signal<Local, Bits<32>>,
    room: Signal<Local, Bit>,
    /// has_room after a SEND that allocates, and after a slide: `next - una` is `alloc + 1` or
    /// `alloc - 32` then, compared beside the transaction instead of after it (the record's room
    /// bit and `room_mask` were the board's critical path).
    room_send: Signal<Local, Bit>,
    room_slide: Signal<Local, Bit>,
    nroom: Signal<Local, Bit>,
    w: Signal<Local, Bits<WB>>,
    m: Signal<Local, Bits<32>>,
    d: Signal<Local, Bits<32>>,
    inwin: Signal<Local, Bit>,
    span: Signal<Local, Bits<32>>,
    smask: Signal<Local, Bits<32>>,
    bspan: Signal<Local, Bits<32>>,
    bmask: Signal<Local, Bits<32>>,
    out_w: Signal<Local, Bits<32>>,
    freed: Signal<Local, Bits<32>>,
    lost: Signal<Local, Bits<32>>,
    hw: Signal<Local, Bits<32>>,
    tdiff: Signal<Local, Bits<32>>,
    bo1: Signal<Local, Bits<3>>,
    /// The deadline a SEND arms or a TIMER re-arms: now + (rto << backoff), one shifter and
    /// one adder for both (TIMER shifts by the backoff it raises).
    dl: Signal<Local, Bits<32>>,
    shamt: Signal<Local, Bits<3>>,
    is_send: Signal<Local, Bit>,
    is_ack: Signal<Local, Bit>,
    is_exp: Signal<Local, Bit>,
    any_nz: Signal<Local, Bit>,
    rec: Signal<Local, TxOut>,
}

impl Default for TxScoreboardCompact {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            in_valid: Default::default(),
            in_ready: Default::default(),
            in_op: Default::default(),
            in_path: Default::default(),
            in_psn: Default::default(),
            in_mask: Default::default(),
            in_lost_below: Default::default(),
            in_now: Default::default(),
            in_rto: Default::default(),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out: Default::default(),
            room_mask: Default::default(),
            c1: kc(1),
            c32: kc(SACK_WORD_BITS as u64),
            cbits: kc(SACK_BITS as u64),
            croom: kc((SACK_BITS - SACK_WORD_BITS) as u64),
            z32: kc(0),
            ones32: kc(0xFFFF_FFFF),
            one32: kc(1),
            one3: kc(1),
            z3: kc(0),
            maxbo: kc(u64::from(RTO_MAX_BACKOFF)),
            wone: kc(1),
            wzero: kc(0),
            onep: kc(1),
            kw: core::array::from_fn(|i| kc(i as u64)),
            op_send: kc(TX_OP_SEND),
            op_ack: kc(TX_OP_ACK_WORD),
            op_expire: kc(TX_OP_EXPIRE),
            op_timer: kc(TX_OP_TIMER),
            op_clear: kc(TX_OP_CLEAR_BACKOFF),
            op_reset: kc(TX_OP_RESET),
            st: Default::default(),
            bank: Default::default(),
            fifo: Default::default(),
            ir: Default::default(),
            noroom: Default::default(),
            accept: Default::default(),
            q: Default::default(),
            ns: Default::default(),
            words: Default::default(),
            nw: Default::default(),
            alloc: Default::default(),
            room: Default::default(),
            room_send: Default::default(),
            room_slide: Default::default(),
            nroom: Default::default(),
            w: Default::default(),
            m: Default::default(),
            d: Default::default(),
            inwin: Default::default(),
            span: Default::default(),
            smask: Default::default(),
            bspan: Default::default(),
            bmask: Default::default(),
            out_w: Default::default(),
            freed: Default::default(),
            lost: Default::default(),
            hw: Default::default(),
            tdiff: Default::default(),
            bo1: Default::default(),
            dl: Default::default(),
            shamt: Default::default(),
            is_send: Default::default(),
            is_ack: Default::default(),
            is_exp: Default::default(),
            any_nz: Default::default(),
            rec: Default::default(),
        }
    }
}

// The FIFO_BRAM_TRIPS loop has no trips outside the small configuration (on purpose).
#[allow(clippy::reversed_empty_ranges)]
impl Logic for TxScoreboardCompact {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, ir, noroom);
        self.st.clock.next = self.clock.val();
        for i in 0..SACK_WORDS {
            self.bank[i].clock.next = self.clock.val();
        }

        // ---------------- stage I: accept (room for every accepted record in the FIFO) ----------------
        self.in_ready.next = self.fifo.room.val();
        self.accept.next = self.in_valid.val() && self.fifo.room.val();
        self.ir.d.next.v = self.accept.val();
        self.ir.d.next.op = self.in_op.val();
        self.ir.d.next.path = self.in_path.val();
        self.ir.d.next.psn = self.in_psn.val();
        self.ir.d.next.mask = self.in_mask.val();
        self.ir.d.next.below = self.in_lost_below.val();
        self.ir.d.next.now = self.in_now.val();
        self.ir.d.next.rto = self.in_rto.val();
        self.ir.d.next.nowrto = self.in_now.val() + self.in_rto.val();

        // ---------------- stage X: the model's transaction on the path's row ----------------
        self.st.read_address.next = self.ir.q.val().path;
        self.q.next = self.st.read_data.val();
        self.ns.next = self.q.val();
        self.is_send.next = self.ir.q.val().op == self.op_send.val();
        self.is_ack.next = self.ir.q.val().op == self.op_ack.val();
        self.is_exp.next = self.ir.q.val().op == self.op_expire.val();
        for i in 0..SACK_WORDS {
            self.bank[i].read_address.next = self.ir.q.val().path;
            for _t in 0..FIFO_BRAM_TRIPS {
                // block RAM: read at the edge that accepts the operation, for X
                self.bank[i].read_address.next = self.in_path.val();
            }
            self.words[i].next = self.bank[i].read_data.val();
            self.nw[i].next = self.words[i].val();
        }
        self.rec.next.op = self.ir.q.val().op;
        self.rec.next.path = self.ir.q.val().path;
        self.rec.next.ok = false;
        self.rec.next.psn = self.z32.val();
        self.rec.next.freed = self.z32.val();
        self.rec.next.lost = self.z32.val();
        self.rec.next.forged = false;
        self.rec.next.backoff = self.z3.val();
        // has_room before the operation: next - una < SACK_BITS - 32
        self.alloc.next = self.q.val().nxt - self.q.val().una;
        self.room.next = self.alloc.val() < self.croom.val();
        self.room_send.next = (self.alloc.val() + self.c1.val()) < self.croom.val();
        self.room_slide.next = (self.alloc.val() - self.c32.val()) < self.croom.val();
        self.nroom.next = self.room.val();
        // SEND: the bit of `next`; ACK_WORD: the word of `word_psn` (word_psn - una)
        if self.is_send.val() {
            self.d.next = self.alloc.val();
        } else {
            self.d.next = self.ir.q.val().psn - self.q.val().una;
        }
        self.w.next = self.q.val().head + self.d.val().get_bits::<WB>(5);
        self.m.next = self.one32.val() << self.d.val().get_bits::<5>(0);
        self.out_w.next = self.z32.val();
        for i in 0..SACK_WORDS {
            if self.w.val() == self.kw[i].val() {
                self.out_w.next = self.words[i].val();
            }
        }
        // ACK_WORD: the sent mask (PSNs below next) and the lost-below mask of the word
        self.span.next = self.q.val().nxt - self.ir.q.val().psn;
        if self.span.val().get_bit(31) {
            self.smask.next = self.z32.val();
        } else if self.span.val() >= self.c32.val() {
            self.smask.next = self.ones32.val();
        } else {
            self.smask.next = (self.one32.val() << self.span.val().get_bits::<5>(0)) - self.one32.val();
        }
        self.bspan.next = self.ir.q.val().below - self.ir.q.val().psn;
        if self.bspan.val().get_bit(31) {
            self.bmask.next = self.z32.val();
        } else if self.bspan.val() >= self.c32.val() {
            self.bmask.next = self.ones32.val();
        } else {
            self.bmask.next = (self.one32.val() << self.bspan.val().get_bits::<5>(0)) - self.one32.val();
        }
        self.inwin.next = !self.d.val().get_bit(31) && (self.d.val() < self.cbits.val());
        self.freed.next = self.out_w.val() & self.ir.q.val().mask & self.smask.val();
        self.lost.next = self.out_w.val() & !self.ir.q.val().mask & self.bmask.val();
        if self.q.val().backoff < self.maxbo.val() {
            self.bo1.next = self.q.val().backoff + self.one3.val();
        } else {
            self.bo1.next = self.maxbo.val();
        }
        self.shamt.next = self.q.val().backoff;
        if self.ir.q.val().op == self.op_timer.val() {
            self.shamt.next = self.bo1.val();
        }
        self.dl.next = self.ir.q.val().now + (self.ir.q.val().rto << self.shamt.val());
        if self.is_send.val() {
            self.rec.next.ok = self.room.val();
            self.rec.next.psn = self.q.val().nxt;
            if self.room.val() {
                for i in 0..SACK_WORDS {
                    if self.w.val() == self.kw[i].val() {
                        self.nw[i].next = self.words[i].val() | self.m.val();
                    }
                }
                self.ns.next.nxt = self.q.val().nxt + self.c1.val();
                self.nroom.next = self.room_send.val();
                if !self.q.val().armed {
                    self.ns.next.armed = true;
                    self.ns.next.deadline = self.dl.val();
                }
            }
        }
        if self.is_ack.val() {
            self.rec.next.psn = self.ir.q.val().psn;
            if self.d.val().get_bits::<5>(0).any() {
                self.rec.next.forged = true;
            } else if self.inwin.val() {
                self.rec.next.forged = (self.ir.q.val().mask & !self.smask.val()).any();
                self.rec.next.freed = self.freed.val();
                self.rec.next.lost = self.lost.val();
                for i in 0..SACK_WORDS {
                    if self.w.val() == self.kw[i].val() {
                        self.nw[i].next = self.words[i].val() & !(self.freed.val() | self.lost.val());
                    }
                }
                if self.freed.val().any() {
                    // progress: restart the timer from now with the backoff cleared
                    self.ns.next.backoff = self.z3.val();
                    self.ns.next.deadline = self.ir.q.val().nowrto;
                }
            }
        }
        if self.is_exp.val() {
            self.rec.next.psn = self.q.val().una;
            for i in 0..SACK_WORDS {
                if self.q.val().head == self.kw[i].val() {
                    self.rec.next.lost = self.words[i].val();
                    self.nw[i].next = self.z32.val();
                }
            }
        }
        // ACK_WORD and EXPIRE: slide past an empty head word, disarm an empty window
        self.hw.next = self.z32.val();
        for i in 0..SACK_WORDS {
            if self.q.val().head == self.kw[i].val() {
                self.hw.next = self.nw[i].val();
            }
        }
        self.any_nz.next = false;
        for i in 0..SACK_WORDS {
            if self.nw[i].val().any() {
                self.any_nz.next = true;
            }
        }
        if self.is_ack.val() || self.is_exp.val() {
            if !self.hw.val().any() && (self.alloc.val() >= self.c32.val()) {
                self.ns.next.head = self.q.val().head + self.wone.val();
                self.ns.next.una = self.q.val().una + self.c32.val();
                self.nroom.next = self.room_slide.val();
            }
            if !self.any_nz.val() {
                self.ns.next.armed = false;
            }
        }
        // TIMER: expired when armed and not now < deadline
        self.tdiff.next = self.ir.q.val().now - self.q.val().deadline;
        if (self.ir.q.val().op == self.op_timer.val()) && self.q.val().armed && !self.tdiff.val().get_bit(31) {
            self.rec.next.ok = true;
            self.rec.next.backoff = self.bo1.val();
            self.ns.next.backoff = self.bo1.val();
            self.ns.next.deadline = self.dl.val();
        }
        if self.ir.q.val().op == self.op_clear.val() {
            self.ns.next.backoff = self.z3.val();
        }
        if self.ir.q.val().op == self.op_reset.val() {
            self.ns.next.una = self.ir.q.val().psn;
            self.ns.next.nxt = self.ir.q.val().psn;
            self.ns.next.head = self.wzero.val();
            self.ns.next.armed = false;
            self.ns.next.deadline = self.z32.val();
            self.ns.next.backoff = self.z3.val();
            for i in 0..SACK_WORDS {
                self.nw[i].next = self.z32.val();
            }
        }
        // the path's state after the operation
        self.any_nz.next = false;
        for i in 0..SACK_WORDS {
            if self.nw[i].val().any() {
                self.any_nz.next = true;
            }
        }
        self.rec.next.armed = self.ns.val().armed;
        self.rec.next.deadline = self.ns.val().deadline;
        self.rec.next.empty = !self.any_nz.val();
        // next - una after the operation (a RESET leaves 0, below the room bound)
        self.rec.next.room = self.nroom.val() || (self.ir.q.val().op == self.op_reset.val());
        self.st.write_address.next = self.ir.q.val().path;
        self.st.write_data.next = self.ns.val();
        self.st.write_enable.next = self.ir.q.val().v;
        for i in 0..SACK_WORDS {
            self.bank[i].write_address.next = self.ir.q.val().path;
            self.bank[i].write_data.next = self.nw[i].val();
            self.bank[i].write_enable.next = self.ir.q.val().v;
        }
        if self.ir.q.val().v {
            if self.rec.val().room {
                self.noroom.d.next = self.noroom.q.val() & !(self.onep.val() << self.ir.q.val().path);
            } else {
                self.noroom.d.next = self.noroom.q.val() | (self.onep.val() << self.ir.q.val().path);
            }
        }
        self.room_mask.next = !self.noroom.q.val();

        // ---------------- output FIFO ----------------
        self.fifo.clock.next = self.clock.val();
        self.fifo.accept.next = self.accept.val();
        // the record straight from X: the FIFO's RAM registers it
        self.fifo.write.next = self.ir.q.val().v;
        self.fifo.write_data.next = self.rec.val();
        self.fifo.out_ready.next = self.out_ready.val();
        self.out_valid.next = self.fifo.out_valid.val();
        self.out.next = self.fifo.out.val();
    }
}
