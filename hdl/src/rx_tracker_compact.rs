//! `rx_tracker_compact`: the receive tracker of `mroce_model::rx_tracker` for small FPGAs.
//!
//! The same ports, operations, records and back-pressure as [`crate::rx_tracker::RxTrackerHw`],
//! and the same II = 1, but built for a slow clock (the iCE40 boards run at 25 MHz) instead of
//! 100 MHz: each operation reads its path's row, computes the model's transaction and writes the
//! row back within one clock (stage X), so an operation on the same path in the next clock reads
//! the new row and nothing is forwarded or computed for two outcomes. Fixed latency
//! [`RXC_LATENCY`] (input register, X, snapshot stage S into the output FIFO).
//!
//! The pipelined block spends most of its logic on keeping that read-modify-write loop short:
//! forwarding of the two operations in flight, every arithmetic result for both outcomes of the
//! one ahead, and eight stages of records. This block has none of it, at the price of a long
//! combinational path (row read, `psn - base`, word test, slide, write-back).
//!
//! Stages: **I** (input register; input-only sums: `psn + 1`, `floor - 32`, the floor's sanity);
//! **X** (the row read asynchronously at I's path, the ring words from block RAM read at
//! acceptance in the small configuration, asynchronously elsewhere; verdict, gap, counters, slide,
//! ACK decision; the row and every ring word written back at the clock edge, and the ACK
//! snapshot, ring unrotated, into the output FIFO's RAM, which shows it one clock later); **O**
//! (at the FIFO's output: rotate the ring by head, trailing ones of the head word, `cum`).

use crate::fifo_bram::{FifoStore, FIFO_BRAM_TRIPS};
use crate::lutram::{kc, LutRam};
use crate::record_fifo::RecordFifo;
use crate::rx_tracker::{
    RxOut, RX_DUPLICATE, RX_NEW, RX_OP_FLUSH, RX_OP_PACKET, RX_OP_RESET, RX_OUT_OF_WINDOW, RX_REFUSED,
};
use mroce_model::params::{
    ACK_COALESCE, PATHS, PATH_BITS, SACK_BITS, SACK_WORDS, SACK_WORD_BITS, SACK_WORD_INDEX_BITS,
};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record (FIFO empty, `out_ready` high).
pub const RXC_LATENCY: usize = 3;

const _: () = assert!(
    SACK_WORD_BITS == 32,
    "the 5-bit bit index and the trailing-ones encoder assume 32-bit words"
);
const _: () = assert!(
    SACK_WORDS.is_power_of_two() && SACK_WORDS >= 2 && SACK_WORDS <= 8,
    "the ring index wraps by its width; 2 to 8 words are the tested range"
);
const _: () = assert!(PATHS.is_power_of_two() && PATHS >= 4 && PATHS <= 16);

/// Width of a path index.
const PB: usize = PATH_BITS as usize;
/// Width of a ring word index.
const WB: usize = SACK_WORD_INDEX_BITS as usize;

/// Per-path state row (the ring words are in banks of their own).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxcRow {
    /// PSN of bit 0 of the head word.
    pub base: Bits<32>,
    /// Ring index of the head word.
    pub head: Bits<WB>,
    /// PSN expected next.
    pub expected: Bits<32>,
    /// CE count since the previous ACK.
    pub ecn: Bits<16>,
    /// Packet count since the previous ACK.
    pub pkt: Bits<16>,
}

/// Stage I register: the accepted operation and its input-only sums.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxcIn {
    pub v: Bit,
    pub op: Bits<2>,
    pub path: Bits<PB>,
    pub psn: Bits<32>,
    /// psn + 1.
    pub psn1: Bits<32>,
    /// floor - SACK_WORD_BITS: "the floor is past the head word" is `fm32 - base >= 0`.
    pub fm32: Bits<32>,
    /// psn - floor >= 0.
    pub fsane: Bit,
    /// CE on a packet.
    pub ce: Bit,
    pub ackreq: Bit,
    pub commit: Bit,
}

/// An output FIFO entry: the record's fields known after X (the ring words, unrotated, are in
/// FIFOs of their own).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxcSnap {
    pub op: Bits<2>,
    pub path: Bits<PB>,
    pub verdict: Bits<2>,
    pub ack: Bit,
    pub base: Bits<32>,
    pub head: Bits<WB>,
    pub ecn: Bits<16>,
    pub pkt: Bits<16>,
}

/// The compact receive tracker.
#[derive(LogicBlock)]
pub struct RxTrackerCompact {
    pub clock: Signal<In, Clock>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub in_op: Signal<In, Bits<2>>,
    pub in_path: Signal<In, Bits<PB>>,
    pub in_psn: Signal<In, Bits<32>>,
    pub in_floor: Signal<In, Bits<32>>,
    pub in_ce: Signal<In, Bit>,
    pub in_ack_req: Signal<In, Bit>,
    pub in_commit: Signal<In, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out: Signal<Out, RxOut>,
    pub out_sack: [Signal<Out, Bits<32>>; SACK_WORDS],
    // constants
    c1: Constant<Bits<32>>,
    c32: Constant<Bits<32>>,
    /// SACK_BITS: a PSN difference at or above it is out of the window.
    cbits: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    wone: Constant<Bits<WB>>,
    wzero: Constant<Bits<WB>>,
    one16: Constant<Bits<16>>,
    ffff16: Constant<Bits<16>>,
    z16: Constant<Bits<16>>,
    coal: Constant<Bits<16>>,
    op_packet: Constant<Bits<2>>,
    op_flush: Constant<Bits<2>>,
    op_reset: Constant<Bits<2>>,
    v_new: Constant<Bits<2>>,
    v_dup: Constant<Bits<2>>,
    v_oow: Constant<Bits<2>>,
    v_ref: Constant<Bits<2>>,
    kw: [Constant<Bits<WB>>; SACK_WORDS],
    enc: [Constant<Bits<32>>; 5],
    pow: [Constant<Bits<32>>; 6],
    // state
    st: LutRam<RxcRow, PB>,
    /// Ring words: block RAM in the small configuration (read at acceptance, a write to the
    /// same path at that edge bypassed), LUT RAM read in X elsewhere.
    bank: [FifoStore<Bits<32>, PB>; SACK_WORDS],
    fifo: RecordFifo<RxcSnap>,
    fifo_sack: [RecordFifo<Bits<32>>; SACK_WORDS],
    ir: DFF<RxcIn>,
    // stage I
    accept: Signal<Local, Bit>,
    pdiff: Signal<Local, Bits<32>>,
    // stage X
    q: Signal<Local, RxcRow>,
    words: [Signal<Local, Bits<32>>; SACK_WORDS],
    nw: [Signal<Local, Bits<32>>; SACK_WORDS],
    d: Signal<Local, Bits<32>>,
    fd: Signal<Local, Bits<32>>,
    w: Signal<Local, Bits<WB>>,
    m: Signal<Local, Bits<32>>,
    xw: Signal<Local, Bits<32>>,
    hw: Signal<Local, Bits<32>>,
    is_pkt: Signal<Local, Bit>,
    neg: Signal<Local, Bit>,
    oow: Signal<Local, Bit>,
    hit: Signal<Local, Bit>,
    iw: Signal<Local, Bit>,
    isnew: Signal<Local, Bit>,
    verdict: Signal<Local, Bits<2>>,
    gap: Signal<Local, Bit>,
    slide: Signal<Local, Bit>,
    ack: Signal<Local, Bit>,
    ns: Signal<Local, RxcRow>,
    // stage O
    tones: Signal<Local, Bits<32>>,
    t1: Signal<Local, Bits<32>>,
    sh: Signal<Local, Bits<32>>,
    rec: Signal<Local, RxOut>,
}

impl Default for RxTrackerCompact {
    fn default() -> Self {
        let mut enc = [0u64; 5];
        for (bit, e) in enc.iter_mut().enumerate() {
            for i in 0..32u64 {
                if i & (1 << bit) != 0 {
                    *e |= 1 << i;
                }
            }
        }
        Self {
            clock: Default::default(),
            in_valid: Default::default(),
            in_ready: Default::default(),
            in_op: Default::default(),
            in_path: Default::default(),
            in_psn: Default::default(),
            in_floor: Default::default(),
            in_ce: Default::default(),
            in_ack_req: Default::default(),
            in_commit: Default::default(),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out: Default::default(),
            out_sack: Default::default(),
            c1: kc(1),
            c32: kc(SACK_WORD_BITS as u64),
            cbits: kc(SACK_BITS as u64),
            z32: kc(0),
            one32: kc(1),
            wone: kc(1),
            wzero: kc(0),
            one16: kc(1),
            ffff16: kc(0xFFFF),
            z16: kc(0),
            coal: kc(u64::from(ACK_COALESCE)),
            op_packet: kc(RX_OP_PACKET),
            op_flush: kc(RX_OP_FLUSH),
            op_reset: kc(RX_OP_RESET),
            v_new: kc(RX_NEW),
            v_dup: kc(RX_DUPLICATE),
            v_oow: kc(RX_OUT_OF_WINDOW),
            v_ref: kc(RX_REFUSED),
            kw: core::array::from_fn(|i| kc(i as u64)),
            enc: core::array::from_fn(|i| kc(enc[i])),
            pow: core::array::from_fn(|i| kc(1 << i)),
            st: Default::default(),
            bank: Default::default(),
            fifo: Default::default(),
            fifo_sack: Default::default(),
            ir: Default::default(),
            accept: Default::default(),
            pdiff: Default::default(),
            q: Default::default(),
            words: Default::default(),
            nw: Default::default(),
            d: Default::default(),
            fd: Default::default(),
            w: Default::default(),
            m: Default::default(),
            xw: Default::default(),
            hw: Default::default(),
            is_pkt: Default::default(),
            neg: Default::default(),
            oow: Default::default(),
            hit: Default::default(),
            iw: Default::default(),
            isnew: Default::default(),
            verdict: Default::default(),
            gap: Default::default(),
            slide: Default::default(),
            ack: Default::default(),
            ns: Default::default(),
            tones: Default::default(),
            t1: Default::default(),
            sh: Default::default(),
            rec: Default::default(),
        }
    }
}

// The FIFO_BRAM_TRIPS loop has no trips outside the small configuration (on purpose).
#[allow(clippy::reversed_empty_ranges)]
impl Logic for RxTrackerCompact {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, ir);
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
        self.ir.d.next.psn1 = self.in_psn.val() + self.c1.val();
        self.ir.d.next.fm32 = self.in_floor.val() - self.c32.val();
        self.pdiff.next = self.in_psn.val() - self.in_floor.val();
        self.ir.d.next.fsane = !self.pdiff.val().get_bit(31);
        self.ir.d.next.ce = self.in_ce.val() && (self.in_op.val() == self.op_packet.val());
        self.ir.d.next.ackreq = self.in_ack_req.val();
        self.ir.d.next.commit = self.in_commit.val();

        // ---------------- stage X: the model's transaction on the path's row ----------------
        self.st.read_address.next = self.ir.q.val().path;
        self.q.next = self.st.read_data.val();
        self.is_pkt.next = self.ir.q.val().op == self.op_packet.val();
        self.d.next = self.ir.q.val().psn - self.q.val().base;
        self.neg.next = self.d.val().get_bit(31);
        self.oow.next = !self.neg.val() && (self.d.val() >= self.cbits.val());
        // the PSN's ring word (head + d / 32, wrapping in WB bits) and bit
        self.w.next = self.q.val().head + self.d.val().get_bits::<WB>(5);
        self.m.next = self.one32.val() << self.d.val().get_bits::<5>(0);
        self.xw.next = self.z32.val();
        for i in 0..SACK_WORDS {
            self.bank[i].read_address.next = self.ir.q.val().path;
            for _t in 0..FIFO_BRAM_TRIPS {
                // block RAM: read at the edge that accepts the operation, for X
                self.bank[i].read_address.next = self.in_path.val();
            }
            self.words[i].next = self.bank[i].read_data.val();
            if self.w.val() == self.kw[i].val() {
                self.xw.next = self.words[i].val();
            }
        }
        self.hit.next = (self.xw.val() & self.m.val()).any();
        self.iw.next = self.is_pkt.val() && !self.neg.val() && !self.oow.val() && !self.hit.val();
        self.isnew.next = self.iw.val() && self.ir.q.val().commit;
        if self.neg.val() {
            self.verdict.next = self.v_dup.val();
        } else if self.oow.val() {
            self.verdict.next = self.v_oow.val();
        } else if self.hit.val() {
            self.verdict.next = self.v_dup.val();
        } else if self.ir.q.val().commit {
            self.verdict.next = self.v_new.val();
        } else {
            self.verdict.next = self.v_ref.val();
        }
        // record the PSN, then test the head word (after the record)
        self.hw.next = self.z32.val();
        for i in 0..SACK_WORDS {
            self.nw[i].next = self.words[i].val();
            if self.isnew.val() && (self.w.val() == self.kw[i].val()) {
                self.nw[i].next = self.words[i].val() | self.m.val();
            }
            if self.q.val().head == self.kw[i].val() {
                self.hw.next = self.nw[i].val();
            }
        }
        self.gap.next = self.ir.q.val().psn != self.q.val().expected;
        self.fd.next = self.ir.q.val().fm32 - self.q.val().base;
        self.slide.next =
            self.is_pkt.val() && (self.hw.val().all() || (self.ir.q.val().fsane && !self.fd.val().get_bit(31)));
        self.ns.next = self.q.val();
        if self.iw.val() {
            self.ns.next.expected = self.ir.q.val().psn1;
        }
        if self.is_pkt.val() && (self.q.val().pkt != self.ffff16.val()) {
            self.ns.next.pkt = self.q.val().pkt + self.one16.val();
        }
        if self.ir.q.val().ce && (self.q.val().ecn != self.ffff16.val()) {
            self.ns.next.ecn = self.q.val().ecn + self.one16.val();
        }
        if self.slide.val() {
            self.ns.next.base = self.q.val().base + self.c32.val();
            self.ns.next.head = self.q.val().head + self.wone.val();
            for i in 0..SACK_WORDS {
                if self.q.val().head == self.kw[i].val() {
                    self.nw[i].next = self.z32.val();
                }
            }
        }
        self.ack.next = (self.ir.q.val().op == self.op_flush.val())
            || (self.is_pkt.val()
                && (self.ir.q.val().ackreq
                    || self.ir.q.val().ce
                    || self.gap.val()
                    || !self.isnew.val()
                    || (self.ns.val().pkt >= self.coal.val())));
        // the snapshot takes the counters before the ACK clears them; the FIFO's RAM registers it
        self.fifo.write_data.next.op = self.ir.q.val().op;
        self.fifo.write_data.next.path = self.ir.q.val().path;
        self.fifo.write_data.next.verdict = self.verdict.val();
        self.fifo.write_data.next.ack = self.ack.val();
        self.fifo.write_data.next.base = self.ns.val().base;
        self.fifo.write_data.next.head = self.ns.val().head;
        self.fifo.write_data.next.ecn = self.ns.val().ecn;
        self.fifo.write_data.next.pkt = self.ns.val().pkt;
        for i in 0..SACK_WORDS {
            self.fifo_sack[i].write_data.next = self.nw[i].val();
        }
        if self.ack.val() {
            self.ns.next.ecn = self.z16.val();
            self.ns.next.pkt = self.z16.val();
        }
        if self.ir.q.val().op == self.op_reset.val() {
            self.ns.next.base = self.ir.q.val().psn;
            self.ns.next.head = self.wzero.val();
            self.ns.next.expected = self.ir.q.val().psn;
            self.ns.next.ecn = self.z16.val();
            self.ns.next.pkt = self.z16.val();
            for i in 0..SACK_WORDS {
                self.nw[i].next = self.z32.val();
            }
        }
        self.st.write_address.next = self.ir.q.val().path;
        self.st.write_data.next = self.ns.val();
        self.st.write_enable.next = self.ir.q.val().v;
        for i in 0..SACK_WORDS {
            self.bank[i].write_address.next = self.ir.q.val().path;
            self.bank[i].write_data.next = self.nw[i].val();
            self.bank[i].write_enable.next = self.ir.q.val().v;
        }

        // ---------------- output FIFO (the snapshot and the ring words share its pointers) ----------------
        self.fifo.clock.next = self.clock.val();
        self.fifo.accept.next = self.accept.val();
        self.fifo.write.next = self.ir.q.val().v;
        self.fifo.out_ready.next = self.out_ready.val();
        self.out_valid.next = self.fifo.out_valid.val();
        for i in 0..SACK_WORDS {
            // the same pointers as `fifo` (yosys merges the identical registers)
            self.fifo_sack[i].clock.next = self.clock.val();
            self.fifo_sack[i].accept.next = self.accept.val();
            self.fifo_sack[i].write.next = self.ir.q.val().v;
            self.fifo_sack[i].out_ready.next = self.out_ready.val();
        }

        // ---------------- stage O: rotate by head, cum, at the FIFO's output ----------------
        // `n` is SACK_WORDS bound as a loop variable: rust-hdl resolves `(h + j) % n` only
        // with loop variables.
        self.sh.next = self.z32.val();
        for n in SACK_WORDS..(SACK_WORDS + 1) {
            for j in 0..SACK_WORDS {
                self.out_sack[j].next = self.fifo_sack[j].out.val();
                for h in 0..SACK_WORDS {
                    if self.fifo.out.val().head == self.kw[h].val() {
                        self.out_sack[j].next = self.fifo_sack[(h + j) % n].out.val();
                    }
                }
            }
        }
        for h in 0..SACK_WORDS {
            if self.fifo.out.val().head == self.kw[h].val() {
                self.sh.next = self.fifo_sack[h].out.val();
            }
        }
        // one-hot of the lowest zero bit of the head word, then its index
        self.t1.next = !self.sh.val() & (self.sh.val() + self.c1.val());
        self.tones.next = self.z32.val();
        for bit in 0..5 {
            if (self.t1.val() & self.enc[bit].val()).any() {
                self.tones.next = self.tones.val() | self.pow[bit].val();
            }
        }
        if self.sh.val().all() {
            self.tones.next = self.pow[5].val();
        }
        self.rec.next.op = self.fifo.out.val().op;
        self.rec.next.verdict = self.fifo.out.val().verdict;
        self.rec.next.ack = self.fifo.out.val().ack;
        self.rec.next.path = self.fifo.out.val().path;
        self.rec.next.base = self.fifo.out.val().base;
        self.rec.next.cum = self.fifo.out.val().base + self.tones.val();
        self.rec.next.ecn = self.fifo.out.val().ecn;
        self.rec.next.pkt = self.fifo.out.val().pkt;
        self.out.next = self.rec.val();
    }
}
