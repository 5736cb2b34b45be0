//! `rx_tracker`: the receive tracker of `mroce_model::rx_tracker` as a pipelined RustHDL block.
//!
//! One operation per clock (II = 1) on any mix of paths, including back-to-back packets on the
//! same path, with a fixed latency of [`RX_LATENCY`] clocks from acceptance to `out_valid` (when
//! the output FIFO is empty and `out_ready` is high).
//!
//! # Operations (`in_op`)
//! - [`RX_OP_PACKET`]: `RxTracker::packet` (path, psn, floor, ce, ack_req, commit);
//! - [`RX_OP_FLUSH`]: `RxTracker::flush(path)` (delayed ACK: snapshot and clear the counters);
//! - [`RX_OP_RESET`]: `RxTracker::reset_path(path, isn)` with the ISN in `in_psn`.
//!
//! Every operation produces exactly one output record (verdict, `ack` flag and, when `ack` is
//! set, the ACK snapshot). Back-pressure: `in_ready` is low while the records already accepted
//! could fill the output FIFO, so nothing is ever dropped or duplicated; a reset (slow path)
//! holds `in_ready` low until it has written the path's row (four clocks).
//!
//! # Micro-architecture (design-notes §5)
//! Per-path state lives in LUT RAM (asynchronous read, `PATHS` rows): a state row (base, head,
//! expected, counters, a "word full" flag and a "word cleared" flag per ring word) and the
//! bitmap banked by word (`SACK_WORDS` banks of `PATHS` x 32 bits, written at most once per
//! packet). A slide clears its head word lazily through the "cleared" flag, so a packet writes
//! one bitmap word. The ring word and bit of a PSN never change while it is in the window: they
//! come from `psn - K` where `K` (`SACK_INDEX_BITS` bits, set at reset) is the ISN modulo
//! `SACK_BITS`.
//!
//! Stages: **P** (input register: word/bit/one-hot mask, floor arithmetic); **A1** (LUT-RAM
//! read of the row and the packet's word); **A2** (forward the two operations whose write-back
//! is still in flight, then precompute every arithmetic result for both outcomes of the packet
//! then in B: "it slid" x "it set a bit", with each candidate word reduced before selection);
//! **B** (resolve with the previous packet's registered outcome: a few LUT levels); **R**
//! (write-back: one row and at most one bitmap word); **C** (read the bitmap banks again, after
//! the write, for the snapshot, and rotate by half the ring when head's top bit is set);
//! **D** (rotate by the rest of head, trailing ones of the head word);
//! **E** (cum = base + ones, FIFO).

use crate::fifo_bram::{FifoStore, FIFO_BRAM_TRIPS};
use crate::fifo_occupancy::FifoOccupancy;
use crate::lutram::{kc, LutRam};
use mroce_model::params::{
    ACK_COALESCE, PATHS, PATH_BITS, SACK_INDEX_BITS, SACK_WORDS, SACK_WORD_BITS, SACK_WORD_INDEX_BITS,
};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record (FIFO empty, `out_ready` high).
pub const RX_LATENCY: usize = 8;
/// Depth of the output FIFO (and bound on accepted, not yet delivered operations).
pub const RX_FIFO_DEPTH: usize = 16;
/// `in_op`: a data or probe packet.
pub const RX_OP_PACKET: u64 = 0;
/// `in_op`: snapshot a path for a delayed ACK.
pub const RX_OP_FLUSH: u64 = 1;
/// `in_op`: re-initialise a path at ISN `in_psn`.
pub const RX_OP_RESET: u64 = 2;
/// `out.verdict` encoding of `RxVerdict::New`.
pub const RX_NEW: u64 = 0;
/// `out.verdict` encoding of `RxVerdict::Duplicate`.
pub const RX_DUPLICATE: u64 = 1;
/// `out.verdict` encoding of `RxVerdict::OutOfWindow`.
pub const RX_OUT_OF_WINDOW: u64 = 2;
/// `out.verdict` encoding of `RxVerdict::Refused`.
pub const RX_REFUSED: u64 = 3;

const _: () = assert!(
    ACK_COALESCE >= 2,
    "the ge-coalesce precompute assumes ACK_COALESCE >= 2"
);
const _: () = assert!(
    SACK_WORD_BITS == 32,
    "the 5-bit bit index, the trailing-ones encoder and the one- and two-word slide constants assume 32-bit words"
);
const _: () = assert!(
    SACK_WORDS.is_power_of_two() && SACK_WORDS >= 2 && SACK_WORDS <= 8,
    "a word index needs at least one bit (and a two-word slide two words); 2 to 8 words are the tested range"
);
const _: () = assert!(
    PATHS.is_power_of_two() && PATHS >= 4 && PATHS <= 16,
    "the per-path LUT RAMs have PATH_BITS-bit addresses; 4 to 16 paths are the tested range"
);

/// Width of a path index (LUT-RAM address of the per-path rows).
const PB: usize = PATH_BITS as usize;
/// Width of a ring word index (`head`, a packet's word).
const WB: usize = SACK_WORD_INDEX_BITS as usize;
/// Width of a bit index in the ring (`K`, `psn - K`).
const KB: usize = SACK_INDEX_BITS as usize;

/// The bits of a 32-bit PSN difference from bit `SACK_INDEX_BITS` up: any of them set means
/// "at or beyond the window". hdl_gen takes a slice offset only as a literal or through a
/// `get_my_offset_*` accessor (the LogicStruct field protocol), so this supplies the accessor.
trait AboveWindow {
    fn get_value_above(&self) -> Bits<{ 32 - KB }>;
    fn get_my_width_above(&self) -> usize;
    fn get_my_offset_above(&self) -> usize;
}

impl AboveWindow for Bits<32> {
    fn get_value_above(&self) -> Bits<{ 32 - KB }> {
        self.get_bits::<{ 32 - KB }>(KB)
    }
    fn get_my_width_above(&self) -> usize {
        32 - KB
    }
    fn get_my_offset_above(&self) -> usize {
        KB
    }
}

/// Per-path state row.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxState {
    pub base: Bits<32>,
    pub head: Bits<WB>,
    pub expected: Bits<32>,
    pub ecn: Bits<16>,
    pub pkt: Bits<16>,
    /// Word i of the ring is all ones.
    pub full: Bits<SACK_WORDS>,
    /// Word i of the ring is zero whatever its bank holds (lazy clear).
    pub zero: Bits<SACK_WORDS>,
}

/// One output record.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxOut {
    pub op: Bits<2>,
    pub verdict: Bits<2>,
    pub ack: Bit,
    pub path: Bits<PB>,
    pub base: Bits<32>,
    pub cum: Bits<32>,
    pub ecn: Bits<16>,
    pub pkt: Bits<16>,
}

/// Stage P register.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxP {
    pub v: Bit,
    /// (A2) the op in R is on the same path: forward its row.
    pub fwd: Bit,
    /// (A2) the op in R2 is on the same path: forward its row (unless `fwd`).
    pub fwd2: Bit,
    /// (A2) the op in B is on the same path: precompute both of its outcomes.
    pub same: Bit,
    pub op: Bits<2>,
    pub path: Bits<PB>,
    pub psn: Bits<32>,
    pub psn1: Bits<32>,
    pub psn_m32: Bits<32>,
    pub fm32: Bits<32>,
    pub fm64: Bits<32>,
    pub fsane: Bit,
    pub ce: Bit,
    pub ackreq: Bit,
    pub commit: Bit,
    pub w: Bits<WB>,
    pub b: Bits<5>,
    pub m: Bits<32>,
}

/// Stage A register (the operation in stage B).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxA {
    pub v: Bit,
    pub op: Bits<2>,
    pub path: Bits<PB>,
    pub psn: Bits<32>,
    pub psn1: Bits<32>,
    pub ce: Bit,
    pub ackreq: Bit,
    pub commit: Bit,
    pub fsane: Bit,
    pub w: Bits<WB>,
    pub b: Bits<5>,
    pub m: Bits<32>,
    pub same: Bit,
    pub neg0: Bit,
    pub oow0: Bit,
    pub neg1: Bit,
    pub oow1: Bit,
    pub fpast0: Bit,
    pub fpast1: Bit,
    pub xb: Bit,
    pub eqwb: Bit,
    pub ew: Bit,
    pub wq: Bit,
    pub wq1: Bit,
    pub pq: Bit,
    pub pq1: Bit,
    pub fh0: Bit,
    pub fh1: Bit,
    pub fx0: Bit,
    pub fx1: Bit,
    pub nw0: Bits<32>,
    pub nw1: Bits<32>,
    pub gapq: Bit,
    pub gapp: Bit,
    pub pka: Bits<16>,
    pub pkb: Bits<16>,
    pub pkc: Bits<16>,
    pub ge4a: Bit,
    pub ge4b: Bit,
    pub ge4c: Bit,
    pub eca: Bits<16>,
    pub ecb: Bits<16>,
    pub ecc: Bits<16>,
    pub b0: Bits<32>,
    pub b32: Bits<32>,
    pub b64: Bits<32>,
    pub h0: Bits<WB>,
    pub h1: Bits<WB>,
    pub h2: Bits<WB>,
    pub qexp: Bits<32>,
    pub pexp: Bits<32>,
    pub qfull: Bits<SACK_WORDS>,
    pub qzero: Bits<SACK_WORDS>,
    pub ohw: Bits<SACK_WORDS>,
    pub ohpw: Bits<SACK_WORDS>,
    pub ohqh: Bits<SACK_WORDS>,
    pub ohqh1: Bits<SACK_WORDS>,
}

/// Stage B result register (also the previous operation's outcome for stage B).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxR {
    pub v: Bit,
    pub ns: RxState,
    pub w: Bits<WB>,
    pub nword: Bits<32>,
    pub op: Bits<2>,
    pub path: Bits<PB>,
    pub verdict: Bits<2>,
    pub ack: Bit,
    pub slide: Bit,
    pub isnew: Bit,
    pub iw: Bit,
    pub fullw: Bit,
    pub base: Bits<32>,
    pub head: Bits<WB>,
    pub zero: Bits<SACK_WORDS>,
    pub ecn: Bits<16>,
    pub pkt: Bits<16>,
}

/// Stage C/D metadata register.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RxMeta {
    pub v: Bit,
    pub op: Bits<2>,
    pub path: Bits<PB>,
    pub verdict: Bits<2>,
    pub ack: Bit,
    pub base: Bits<32>,
    pub head: Bits<WB>,
    pub ecn: Bits<16>,
    pub pkt: Bits<16>,
    pub tones: Bits<32>,
}

/// The receive tracker block.
#[derive(LogicBlock)]
pub struct RxTrackerHw {
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
    c64: Constant<Bits<32>>,
    /// Base advance of a one-word slide (SACK_WORD_BITS; only the cosim mutation test changes it).
    slide_step: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    // `k*_3`/`z3`/`k3` are WB bits and `*8` SACK_WORDS bits wide; the names (localparams in the
    // Verilog) keep their default-configuration widths so that configuration's output is unchanged.
    k1_3: Constant<Bits<WB>>,
    k2_3: Constant<Bits<WB>>,
    z3: Constant<Bits<WB>>,
    one16: Constant<Bits<16>>,
    two16: Constant<Bits<16>>,
    fffe16: Constant<Bits<16>>,
    ffff16: Constant<Bits<16>>,
    z16: Constant<Bits<16>>,
    /// ACK_COALESCE - k: `sat(pkt + k) >= ACK_COALESCE` is `pkt >= ACK_COALESCE - k`.
    coal0: Constant<Bits<16>>,
    coal1: Constant<Bits<16>>,
    coal2: Constant<Bits<16>>,
    z8: Constant<Bits<SACK_WORDS>>,
    ones8: Constant<Bits<SACK_WORDS>>,
    one8: Constant<Bits<SACK_WORDS>>,
    op_packet: Constant<Bits<2>>,
    op_flush: Constant<Bits<2>>,
    op_reset: Constant<Bits<2>>,
    v_new: Constant<Bits<2>>,
    v_dup: Constant<Bits<2>>,
    v_oow: Constant<Bits<2>>,
    v_ref: Constant<Bits<2>>,
    k3: [Constant<Bits<WB>>; SACK_WORDS],
    /// SACK_WORDS / 2: stage C rotates by half the ring when `head` is at least this.
    khalf: Constant<Bits<WB>>,
    /// SACK_WORDS / 2 - 1: the part of `head` that stage D rotates by.
    klow: Constant<Bits<WB>>,
    enc: [Constant<Bits<32>>; 5],
    pow: [Constant<Bits<32>>; 6],
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
    st: LutRam<RxState, PB>,
    kram: LutRam<Bits<KB>, PB>,
    bank: [LutRam<Bits<32>, PB>; SACK_WORDS],
    snap: [LutRam<Bits<32>, PB>; SACK_WORDS],
    fifo: FifoStore<RxOut, 4>,
    fifo_sack: [FifoStore<Bits<32>, 4>; SACK_WORDS],
    pr: DFF<RxP>,
    p2: DFF<RxP>,
    q1: DFF<RxState>,
    x1: DFF<Bits<32>>,
    ar: DFF<RxA>,
    rr: DFF<RxR>,
    r2: DFF<RxR>,
    cr: DFF<RxMeta>,
    dr: DFF<RxMeta>,
    cw: [DFF<Bits<32>>; SACK_WORDS],
    chw: DFF<Bits<32>>,
    ds: [DFF<Bits<32>>; SACK_WORDS],
    wp: DFF<Bits<4>>,
    rp: DFF<Bits<4>>,
    cnt: DFF<Bits<5>>,
    occ: FifoOccupancy,
    // stage P / input
    accept: Signal<Local, Bit>,
    rdy: Signal<Local, Bit>,
    pdiff: Signal<Local, Bits<32>>,
    rzero: Signal<Local, Bits<SACK_WORDS>>,
    rbase: Signal<Local, Bits<32>>,
    rns: Signal<Local, RxState>,
    pop: Signal<Local, Bit>,
    kd: Signal<Local, Bits<KB>>,
    ce_in: Signal<Local, Bit>,
    // stage A
    q: Signal<Local, RxState>,
    qzero: Signal<Local, Bits<SACK_WORDS>>,
    qfull: Signal<Local, Bits<SACK_WORDS>>,
    qh1: Signal<Local, Bits<WB>>,
    words: [Signal<Local, Bits<32>>; SACK_WORDS],
    xw: Signal<Local, Bits<32>>,
    xr: Signal<Local, Bits<32>>,
    ws: [Signal<Local, Bits<32>>; 3],
    zs: [Signal<Local, Bits<SACK_WORDS>>; 3],
    sbit: [Signal<Local, Bit>; 3],
    sf0: [Signal<Local, Bit>; 3],
    sf1: [Signal<Local, Bit>; 3],
    szw: [Signal<Local, Bit>; 3],
    sel1: Signal<Local, Bit>,
    sel2: Signal<Local, Bit>,
    xbit: Signal<Local, Bit>,
    xf0: Signal<Local, Bit>,
    xf1: Signal<Local, Bit>,
    zw: Signal<Local, Bit>,
    r2ns: Signal<Local, RxState>,
    xw2: Signal<Local, Bits<32>>,
    d0: Signal<Local, Bits<32>>,
    d1: Signal<Local, Bits<32>>,
    f0: Signal<Local, Bits<32>>,
    f1: Signal<Local, Bits<32>>,
    u1: Signal<Local, Bits<16>>,
    u2: Signal<Local, Bits<16>>,
    e1: Signal<Local, Bits<16>>,
    e2: Signal<Local, Bits<16>>,
    // stage B
    sig: Signal<Local, Bit>,
    nu: Signal<Local, Bit>,
    clr: Signal<Local, Bit>,
    neg: Signal<Local, Bit>,
    oow: Signal<Local, Bit>,
    dupb: Signal<Local, Bit>,
    is_pkt: Signal<Local, Bit>,
    iw: Signal<Local, Bit>,
    isnew: Signal<Local, Bit>,
    verdict: Signal<Local, Bits<2>>,
    selw: Signal<Local, Bit>,
    fullw: Signal<Local, Bit>,
    newword: Signal<Local, Bits<32>>,
    fh: Signal<Local, Bit>,
    wh: Signal<Local, Bit>,
    slide: Signal<Local, Bit>,
    gap: Signal<Local, Bit>,
    pk: Signal<Local, Bits<16>>,
    ge4: Signal<Local, Bit>,
    ec: Signal<Local, Bits<16>>,
    ack: Signal<Local, Bit>,
    ns: Signal<Local, RxState>,
    f1s: Signal<Local, Bits<SACK_WORDS>>,
    z1s: Signal<Local, Bits<SACK_WORDS>>,
    ohh: Signal<Local, Bits<SACK_WORDS>>,
    // stage C
    rhalf: Signal<Local, Bit>,
    cz: [Signal<Local, Bits<32>>; SACK_WORDS],
    // stage D
    hlo: Signal<Local, Bits<WB>>,
    hw: Signal<Local, Bits<32>>,
    t1: Signal<Local, Bits<32>>,
    tones: Signal<Local, Bits<32>>,
    rec: Signal<Local, RxOut>,
}

impl RxTrackerHw {
    /// Test-only mutant for the co-simulation harness (mroce-cosim): a one-word slide advances
    /// the base by SACK_WORD_BITS + 1, an off-by-one the lockstep test must catch.
    #[doc(hidden)]
    pub fn with_base_advance_mutation() -> Self {
        Self {
            slide_step: kc(SACK_WORD_BITS as u64 + 1),
            ..Default::default()
        }
    }
}

impl Default for RxTrackerHw {
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
            c32: kc(32),
            c64: kc(64),
            slide_step: kc(SACK_WORD_BITS as u64),
            z32: kc(0),
            one32: kc(1),
            k1_3: kc(1),
            // head + 2 modulo SACK_WORDS: 0 in a two-word ring, where 2 does not fit in a 1-bit word index
            k2_3: kc(2 % SACK_WORDS as u64),
            z3: kc(0),
            one16: kc(1),
            two16: kc(2),
            fffe16: kc(0xFFFE),
            ffff16: kc(0xFFFF),
            z16: kc(0),
            coal0: kc(u64::from(ACK_COALESCE)),
            coal1: kc(u64::from(ACK_COALESCE) - 1),
            coal2: kc(u64::from(ACK_COALESCE) - 2),
            z8: kc(0),
            ones8: kc((1 << SACK_WORDS) - 1),
            one8: kc(1),
            op_packet: kc(RX_OP_PACKET),
            op_flush: kc(RX_OP_FLUSH),
            op_reset: kc(RX_OP_RESET),
            v_new: kc(RX_NEW),
            v_dup: kc(RX_DUPLICATE),
            v_oow: kc(RX_OUT_OF_WINDOW),
            v_ref: kc(RX_REFUSED),
            k3: core::array::from_fn(|i| kc(i as u64)),
            khalf: kc(SACK_WORDS as u64 / 2),
            klow: kc(SACK_WORDS as u64 / 2 - 1),
            enc: core::array::from_fn(|i| kc(enc[i])),
            pow: core::array::from_fn(|i| kc(1 << i)),
            one4: kc(1),
            one5: kc(1),
            st: Default::default(),
            kram: Default::default(),
            bank: Default::default(),
            snap: Default::default(),
            fifo: Default::default(),
            fifo_sack: Default::default(),
            pr: Default::default(),
            p2: Default::default(),
            q1: Default::default(),
            x1: Default::default(),
            ar: Default::default(),
            rr: Default::default(),
            r2: Default::default(),
            cr: Default::default(),
            dr: Default::default(),
            cw: Default::default(),
            chw: Default::default(),
            ds: Default::default(),
            wp: Default::default(),
            rp: Default::default(),
            cnt: Default::default(),
            occ: FifoOccupancy::new(RX_FIFO_DEPTH),
            accept: Default::default(),
            rdy: Default::default(),
            pdiff: Default::default(),
            rzero: Default::default(),
            rbase: Default::default(),
            rns: Default::default(),
            pop: Default::default(),
            kd: Default::default(),
            ce_in: Default::default(),
            q: Default::default(),
            qzero: Default::default(),
            qfull: Default::default(),
            qh1: Default::default(),
            words: Default::default(),
            xw: Default::default(),
            xr: Default::default(),
            ws: Default::default(),
            zs: Default::default(),
            sbit: Default::default(),
            sf0: Default::default(),
            sf1: Default::default(),
            szw: Default::default(),
            sel1: Default::default(),
            sel2: Default::default(),
            xbit: Default::default(),
            xf0: Default::default(),
            xf1: Default::default(),
            zw: Default::default(),
            r2ns: Default::default(),
            xw2: Default::default(),
            d0: Default::default(),
            d1: Default::default(),
            f0: Default::default(),
            f1: Default::default(),
            u1: Default::default(),
            u2: Default::default(),
            e1: Default::default(),
            e2: Default::default(),
            sig: Default::default(),
            nu: Default::default(),
            clr: Default::default(),
            neg: Default::default(),
            oow: Default::default(),
            dupb: Default::default(),
            is_pkt: Default::default(),
            iw: Default::default(),
            isnew: Default::default(),
            verdict: Default::default(),
            selw: Default::default(),
            fullw: Default::default(),
            newword: Default::default(),
            fh: Default::default(),
            wh: Default::default(),
            slide: Default::default(),
            gap: Default::default(),
            pk: Default::default(),
            ge4: Default::default(),
            ec: Default::default(),
            ack: Default::default(),
            ns: Default::default(),
            f1s: Default::default(),
            z1s: Default::default(),
            ohh: Default::default(),
            rhalf: Default::default(),
            cz: Default::default(),
            hlo: Default::default(),
            hw: Default::default(),
            t1: Default::default(),
            tones: Default::default(),
            rec: Default::default(),
        }
    }
}

// The FIFO_BRAM_TRIPS loop has no trips outside the small configuration (on purpose).
#[allow(clippy::reversed_empty_ranges)]
impl Logic for RxTrackerHw {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, chw, r2, pr, p2, q1, x1, ar, rr, cr, dr, wp, rp, cnt);
        self.occ.clock.next = self.clock.val();
        self.st.clock.next = self.clock.val();
        self.kram.clock.next = self.clock.val();
        self.fifo.clock.next = self.clock.val();
        for i in 0..SACK_WORDS {
            self.bank[i].clock.next = self.clock.val();
            self.snap[i].clock.next = self.clock.val();
            self.fifo_sack[i].clock.next = self.clock.val();
            self.cw[i].clock.next = self.clock.val();
            self.ds[i].clock.next = self.clock.val();
        }

        // ---------------- input and stage P ----------------
        self.rdy.next = self.occ.room.val()
            && !(self.pr.q.val().v && (self.pr.q.val().op == self.op_reset.val()))
            && !(self.p2.q.val().v && (self.p2.q.val().op == self.op_reset.val()))
            && !(self.ar.q.val().v && (self.ar.q.val().op == self.op_reset.val()))
            && !(self.rr.q.val().v && (self.rr.q.val().op == self.op_reset.val()));
        self.in_ready.next = self.rdy.val();
        self.accept.next = self.in_valid.val() && self.rdy.val();
        self.kram.read_address.next = self.in_path.val();
        self.kd.next = self.in_psn.val().get_bits::<KB>(0) - self.kram.read_data.val();
        self.ce_in.next = self.in_ce.val() && (self.in_op.val() == self.op_packet.val());
        self.pr.d.next.v = self.accept.val();
        self.pr.d.next.op = self.in_op.val();
        self.pr.d.next.path = self.in_path.val();
        self.pr.d.next.psn = self.in_psn.val();
        self.pr.d.next.psn1 = self.in_psn.val() + self.c1.val();
        self.pr.d.next.psn_m32 = self.in_psn.val() - self.c32.val();
        self.pr.d.next.fm32 = self.in_floor.val() - self.c32.val();
        self.pr.d.next.fm64 = self.in_floor.val() - self.c64.val();
        self.pdiff.next = self.in_psn.val() - self.in_floor.val();
        self.pr.d.next.fsane = !self.pdiff.val().get_bit(31);
        self.pr.d.next.ce = self.ce_in.val();
        self.pr.d.next.ackreq = self.in_ack_req.val();
        self.pr.d.next.commit = self.in_commit.val();
        self.pr.d.next.w = self.kd.val().get_bits::<WB>(5);
        self.pr.d.next.b = self.kd.val().get_bits::<5>(0);
        self.pr.d.next.m = self.one32.val() << self.kd.val().get_bits::<5>(0);

        // ---------------- stage A1: read the path's row and the packet's bitmap word ----------------
        self.st.read_address.next = self.pr.q.val().path;
        self.xw.next = self.z32.val();
        for i in 0..SACK_WORDS {
            self.bank[i].read_address.next = self.pr.q.val().path;
            self.words[i].next = self.bank[i].read_data.val();
            if self.pr.q.val().w == self.k3[i].val() {
                self.xw.next = self.words[i].val();
            }
        }
        self.p2.d.next = self.pr.q.val();
        self.p2.d.next.fwd = self.ar.q.val().v && (self.ar.q.val().path == self.pr.q.val().path);
        self.p2.d.next.fwd2 = self.rr.q.val().v && (self.rr.q.val().path == self.pr.q.val().path);
        self.p2.d.next.same = self.p2.q.val().v && (self.p2.q.val().path == self.pr.q.val().path);
        // the row the op now in R wrote, when it is on this path: that op is in R2 when this
        // one reaches A2, so its forwarding is decided here, off A2's multiplexer (whose select
        // fanned out to every bit of the row: seed 3's critical path, 4.6 ns of routing)
        self.q1.d.next = self.st.read_data.val();
        if self.rr.q.val().v && (self.rr.q.val().path == self.pr.q.val().path) {
            self.q1.d.next = self.rr.q.val().ns;
        }
        self.x1.d.next = self.xw.val();

        // ---------------- stage A2: forward the op in R, precompute both outcomes of the op in B ----
        // The row read in A1 misses the writes of the two ops ahead (in A2 and B then): the one
        // now in R is forwarded exactly, the one now in B is resolved in B. (The one now in R2
        // is in q1 already.)
        self.rns.next = self.rr.q.val().ns;
        self.r2ns.next = self.r2.q.val().ns;
        self.q.next = self.q1.q.val();
        if self.p2.q.val().fwd {
            self.q.next = self.rns.val();
        }
        self.qzero.next = self.q.val().zero;
        self.qfull.next = self.q.val().full;
        self.qh1.next = self.q.val().head + self.k1_3.val();
        // The packet's word: from the newest of (op in R, op in R2, RAM) that wrote it; each
        // candidate is reduced before the selection (keeps the 32-bit AND off the mux path).
        self.ws[0].next = self.x1.q.val();
        self.ws[1].next = self.rr.q.val().nword;
        self.ws[2].next = self.r2.q.val().nword;
        self.zs[0].next = self.q1.q.val().zero;
        self.zs[1].next = self.rns.val().zero;
        self.zs[2].next = self.r2ns.val().zero;
        for i in 0..3 {
            self.sbit[i].next = self.ws[i].val().get_bit(self.p2.q.val().b.index());
            self.sf0[i].next = (self.ws[i].val() | self.p2.q.val().m).all();
            self.sf1[i].next = (self.ws[i].val() | self.p2.q.val().m | self.ar.q.val().m).all();
            self.szw[i].next = self.zs[i].val().get_bit(self.p2.q.val().w.index());
        }
        self.sel1.next = self.p2.q.val().fwd && self.rr.q.val().isnew && (self.rr.q.val().w == self.p2.q.val().w);
        self.sel2.next = self.p2.q.val().fwd2 && self.r2.q.val().isnew && (self.r2.q.val().w == self.p2.q.val().w);
        self.xr.next = self.ws[0].val();
        self.xbit.next = self.sbit[0].val();
        self.xf0.next = self.sf0[0].val();
        self.xf1.next = self.sf1[0].val();
        if self.sel2.val() {
            self.xr.next = self.ws[2].val();
            self.xbit.next = self.sbit[2].val();
            self.xf0.next = self.sf0[2].val();
            self.xf1.next = self.sf1[2].val();
        }
        if self.sel1.val() {
            self.xr.next = self.ws[1].val();
            self.xbit.next = self.sbit[1].val();
            self.xf0.next = self.sf0[1].val();
            self.xf1.next = self.sf1[1].val();
        }
        self.zw.next = self.szw[0].val();
        if self.p2.q.val().fwd2 {
            self.zw.next = self.szw[2].val();
        }
        if self.p2.q.val().fwd {
            self.zw.next = self.szw[1].val();
        }
        self.xw2.next = self.xr.val();
        if self.zw.val() {
            self.xw2.next = self.z32.val();
        }
        self.d0.next = self.p2.q.val().psn - self.q.val().base;
        self.d1.next = self.p2.q.val().psn_m32 - self.q.val().base;
        self.f0.next = self.p2.q.val().fm32 - self.q.val().base;
        self.f1.next = self.p2.q.val().fm64 - self.q.val().base;
        self.ar.d.next.v = self.p2.q.val().v;
        self.ar.d.next.op = self.p2.q.val().op;
        self.ar.d.next.path = self.p2.q.val().path;
        self.ar.d.next.psn = self.p2.q.val().psn;
        self.ar.d.next.psn1 = self.p2.q.val().psn1;
        self.ar.d.next.ce = self.p2.q.val().ce;
        self.ar.d.next.ackreq = self.p2.q.val().ackreq;
        self.ar.d.next.commit = self.p2.q.val().commit;
        self.ar.d.next.fsane = self.p2.q.val().fsane;
        self.ar.d.next.w = self.p2.q.val().w;
        self.ar.d.next.b = self.p2.q.val().b;
        self.ar.d.next.m = self.p2.q.val().m;
        self.ar.d.next.same = self.p2.q.val().same;
        self.ar.d.next.neg0 = self.d0.val().get_bit(31);
        self.ar.d.next.oow0 = self.d0.val().get_value_above().any();
        self.ar.d.next.neg1 = self.d1.val().get_bit(31);
        self.ar.d.next.oow1 = self.d1.val().get_value_above().any();
        self.ar.d.next.fpast0 = !self.f0.val().get_bit(31);
        self.ar.d.next.fpast1 = !self.f1.val().get_bit(31);
        self.ar.d.next.xb = !self.zw.val() && self.xbit.val();
        self.ar.d.next.eqwb = (self.p2.q.val().w == self.ar.q.val().w) && (self.p2.q.val().b == self.ar.q.val().b);
        self.ar.d.next.ew = self.p2.q.val().w == self.ar.q.val().w;
        self.ar.d.next.wq = self.p2.q.val().w == self.q.val().head;
        self.ar.d.next.wq1 = self.p2.q.val().w == self.qh1.val();
        self.ar.d.next.pq = self.ar.q.val().w == self.q.val().head;
        self.ar.d.next.pq1 = self.ar.q.val().w == self.qh1.val();
        self.ar.d.next.fh0 = self.qfull.val().get_bit(self.q.val().head.index());
        self.ar.d.next.fh1 = self.qfull.val().get_bit(self.qh1.val().index());
        self.ar.d.next.nw0 = self.xw2.val() | self.p2.q.val().m;
        self.ar.d.next.nw1 = self.xw2.val() | self.p2.q.val().m | self.ar.q.val().m;
        self.ar.d.next.fx0 = !self.zw.val() && self.xf0.val();
        self.ar.d.next.fx1 = !self.zw.val() && self.xf1.val();
        self.ar.d.next.gapq = self.p2.q.val().psn != self.q.val().expected;
        self.ar.d.next.gapp = self.p2.q.val().psn != self.ar.q.val().psn1;
        // packet counters: u1 = sat(pkt + 1), u2 = sat(pkt + 2), computed in parallel
        self.u1.next = self.q.val().pkt + self.one16.val();
        if self.q.val().pkt.all() {
            self.u1.next = self.q.val().pkt;
        }
        self.u2.next = self.q.val().pkt + self.two16.val();
        if self.q.val().pkt >= self.fffe16.val() {
            self.u2.next = self.ffff16.val();
        }
        if self.p2.q.val().op == self.op_flush.val() {
            self.ar.d.next.pka = self.q.val().pkt;
            self.ar.d.next.pkb = self.u1.val();
            self.ar.d.next.pkc = self.z16.val();
            self.ar.d.next.ge4a = self.q.val().pkt >= self.coal0.val();
            self.ar.d.next.ge4b = self.q.val().pkt >= self.coal1.val();
        } else {
            self.ar.d.next.pka = self.u1.val();
            self.ar.d.next.pkb = self.u2.val();
            self.ar.d.next.pkc = self.one16.val();
            self.ar.d.next.ge4a = self.q.val().pkt >= self.coal1.val();
            self.ar.d.next.ge4b = self.q.val().pkt >= self.coal2.val();
        }
        self.ar.d.next.ge4c = false;
        // ECN counters: eca = sat(ecn + ce), ecb = sat(ecn + ce_prev + ce), in parallel
        self.e1.next = self.q.val().ecn + self.one16.val();
        if self.q.val().ecn.all() {
            self.e1.next = self.q.val().ecn;
        }
        self.e2.next = self.q.val().ecn + self.two16.val();
        if self.q.val().ecn >= self.fffe16.val() {
            self.e2.next = self.ffff16.val();
        }
        self.ar.d.next.eca = self.q.val().ecn;
        if self.p2.q.val().ce {
            self.ar.d.next.eca = self.e1.val();
        }
        self.ar.d.next.ecb = self.q.val().ecn;
        if self.p2.q.val().ce || self.ar.q.val().ce {
            self.ar.d.next.ecb = self.e1.val();
        }
        if self.p2.q.val().ce && self.ar.q.val().ce {
            self.ar.d.next.ecb = self.e2.val();
        }
        self.ar.d.next.ecc = self.z16.val();
        if self.p2.q.val().ce {
            self.ar.d.next.ecc = self.one16.val();
        }
        self.ar.d.next.b0 = self.q.val().base;
        self.ar.d.next.b32 = self.q.val().base + self.slide_step.val();
        self.ar.d.next.b64 = self.q.val().base + self.c64.val();
        self.ar.d.next.h0 = self.q.val().head;
        self.ar.d.next.h1 = self.qh1.val();
        self.ar.d.next.h2 = self.q.val().head + self.k2_3.val();
        self.ar.d.next.qexp = self.q.val().expected;
        self.ar.d.next.pexp = self.ar.q.val().psn1;
        self.ar.d.next.qfull = self.qfull.val();
        self.ar.d.next.qzero = self.qzero.val();
        self.ar.d.next.ohw = self.one8.val() << self.p2.q.val().w;
        self.ar.d.next.ohpw = self.one8.val() << self.ar.q.val().w;
        self.ar.d.next.ohqh = self.one8.val() << self.q.val().head;
        self.ar.d.next.ohqh1 = self.one8.val() << self.qh1.val();

        // ---------------- stage B: resolve with the previous outcome, write back ----------------
        self.sig.next = self.ar.q.val().same && self.rr.q.val().slide;
        self.nu.next = self.ar.q.val().same && self.rr.q.val().isnew;
        self.clr.next = self.sig.val() && self.ar.q.val().wq;
        self.neg.next = self.ar.q.val().neg0;
        self.oow.next = self.ar.q.val().oow0;
        if self.sig.val() {
            self.neg.next = self.ar.q.val().neg1;
            self.oow.next = self.ar.q.val().oow1;
        }
        self.dupb.next = !self.clr.val() && (self.ar.q.val().xb || (self.nu.val() && self.ar.q.val().eqwb));
        self.is_pkt.next = self.ar.q.val().op == self.op_packet.val();
        self.iw.next = self.is_pkt.val() && !self.neg.val() && !self.oow.val() && !self.dupb.val();
        self.isnew.next = self.iw.val() && self.ar.q.val().commit;
        if self.neg.val() {
            self.verdict.next = self.v_dup.val();
        } else if self.oow.val() {
            self.verdict.next = self.v_oow.val();
        } else if self.dupb.val() {
            self.verdict.next = self.v_dup.val();
        } else if self.ar.q.val().commit {
            self.verdict.next = self.v_new.val();
        } else {
            self.verdict.next = self.v_ref.val();
        }
        self.selw.next = self.nu.val() && self.ar.q.val().ew;
        self.fullw.next = !self.clr.val() && self.ar.q.val().fx0;
        if self.selw.val() {
            self.fullw.next = !self.clr.val() && self.ar.q.val().fx1;
        }
        if self.clr.val() {
            self.newword.next = self.ar.q.val().m;
        } else if self.selw.val() {
            self.newword.next = self.ar.q.val().nw1;
        } else {
            self.newword.next = self.ar.q.val().nw0;
        }
        if self.sig.val() {
            self.fh.next = self.ar.q.val().fh1;
            if self.nu.val() && self.ar.q.val().pq1 {
                self.fh.next = self.rr.q.val().fullw;
            }
            self.wh.next = self.ar.q.val().wq1;
            self.ohh.next = self.ar.q.val().ohqh1;
        } else {
            self.fh.next = self.ar.q.val().fh0;
            if self.nu.val() && self.ar.q.val().pq {
                self.fh.next = self.rr.q.val().fullw;
            }
            self.wh.next = self.ar.q.val().wq;
            self.ohh.next = self.ar.q.val().ohqh;
        }
        self.slide.next = self.fh.val();
        if self.isnew.val() && self.wh.val() {
            self.slide.next = self.fullw.val();
        }
        if self.sig.val() {
            self.slide.next =
                self.is_pkt.val() && (self.slide.val() || (self.ar.q.val().fsane && self.ar.q.val().fpast1));
        } else {
            self.slide.next =
                self.is_pkt.val() && (self.slide.val() || (self.ar.q.val().fsane && self.ar.q.val().fpast0));
        }
        self.gap.next = self.ar.q.val().gapq;
        if self.ar.q.val().same && self.rr.q.val().iw {
            self.gap.next = self.ar.q.val().gapp;
        }
        self.pk.next = self.ar.q.val().pka;
        self.ge4.next = self.ar.q.val().ge4a;
        self.ec.next = self.ar.q.val().eca;
        if self.ar.q.val().same {
            if self.rr.q.val().ack {
                self.pk.next = self.ar.q.val().pkc;
                self.ge4.next = self.ar.q.val().ge4c;
                self.ec.next = self.ar.q.val().ecc;
            } else {
                self.pk.next = self.ar.q.val().pkb;
                self.ge4.next = self.ar.q.val().ge4b;
                self.ec.next = self.ar.q.val().ecb;
            }
        }
        self.ack.next = (self.ar.q.val().op == self.op_flush.val())
            || (self.is_pkt.val()
                && (self.ar.q.val().ackreq
                    || self.ar.q.val().ce
                    || self.gap.val()
                    || !self.isnew.val()
                    || self.ge4.val()));
        // next state of the path
        if self.sig.val() {
            if self.slide.val() {
                self.ns.next.base = self.ar.q.val().b64;
                self.ns.next.head = self.ar.q.val().h2;
            } else {
                self.ns.next.base = self.ar.q.val().b32;
                self.ns.next.head = self.ar.q.val().h1;
            }
        } else if self.slide.val() {
            self.ns.next.base = self.ar.q.val().b32;
            self.ns.next.head = self.ar.q.val().h1;
        } else {
            self.ns.next.base = self.ar.q.val().b0;
            self.ns.next.head = self.ar.q.val().h0;
        }
        self.ns.next.expected = self.ar.q.val().qexp;
        if self.ar.q.val().same && self.rr.q.val().iw {
            self.ns.next.expected = self.ar.q.val().pexp;
        }
        if self.iw.val() {
            self.ns.next.expected = self.ar.q.val().psn1;
        }
        self.ns.next.ecn = self.ec.val();
        self.ns.next.pkt = self.pk.val();
        if self.ack.val() {
            self.ns.next.ecn = self.z16.val();
            self.ns.next.pkt = self.z16.val();
        }
        // full / zero flags: the previous op's effects (set, then slide), then this op's
        self.f1s.next = self.ar.q.val().qfull;
        self.z1s.next = self.ar.q.val().qzero;
        if self.nu.val() {
            self.z1s.next = self.z1s.val() & !self.ar.q.val().ohpw;
            if self.rr.q.val().fullw {
                self.f1s.next = self.f1s.val() | self.ar.q.val().ohpw;
            } else {
                self.f1s.next = self.f1s.val() & !self.ar.q.val().ohpw;
            }
        }
        if self.sig.val() {
            self.f1s.next = self.f1s.val() & !self.ar.q.val().ohqh;
            self.z1s.next = self.z1s.val() | self.ar.q.val().ohqh;
        }
        if self.isnew.val() {
            self.z1s.next = self.z1s.val() & !self.ar.q.val().ohw;
            if self.fullw.val() {
                self.f1s.next = self.f1s.val() | self.ar.q.val().ohw;
            } else {
                self.f1s.next = self.f1s.val() & !self.ar.q.val().ohw;
            }
        }
        if self.slide.val() {
            self.f1s.next = self.f1s.val() & !self.ohh.val();
            self.z1s.next = self.z1s.val() | self.ohh.val();
        }
        self.ns.next.full = self.f1s.val();
        self.ns.next.zero = self.z1s.val();
        if self.ar.q.val().op == self.op_reset.val() {
            self.ns.next.base = self.ar.q.val().psn;
            self.ns.next.head = self.z3.val();
            self.ns.next.expected = self.ar.q.val().psn;
            self.ns.next.ecn = self.z16.val();
            self.ns.next.pkt = self.z16.val();
            self.ns.next.full = self.z8.val();
            self.ns.next.zero = self.ones8.val();
        }
        // write-back from the R register (a clock after B: keeps B off the RAM write ports)
        self.st.write_address.next = self.rr.q.val().path;
        self.st.write_data.next = self.rr.q.val().ns;
        self.st.write_enable.next = self.rr.q.val().v;
        self.kram.write_address.next = self.rr.q.val().path;
        self.rbase.next = self.rns.val().base;
        self.kram.write_data.next = self.rbase.val().get_bits::<KB>(0);
        self.kram.write_enable.next = self.rr.q.val().v && (self.rr.q.val().op == self.op_reset.val());
        for i in 0..SACK_WORDS {
            self.bank[i].write_address.next = self.rr.q.val().path;
            self.bank[i].write_data.next = self.rr.q.val().nword;
            self.bank[i].write_enable.next =
                self.rr.q.val().v && self.rr.q.val().isnew && (self.rr.q.val().w == self.k3[i].val());
            self.snap[i].write_address.next = self.rr.q.val().path;
            self.snap[i].write_data.next = self.rr.q.val().nword;
            self.snap[i].write_enable.next =
                self.rr.q.val().v && self.rr.q.val().isnew && (self.rr.q.val().w == self.k3[i].val());
        }
        self.rr.d.next.v = self.ar.q.val().v;
        self.rr.d.next.ns = self.ns.val();
        self.rr.d.next.w = self.ar.q.val().w;
        self.rr.d.next.nword = self.newword.val();
        self.rr.d.next.op = self.ar.q.val().op;
        self.rr.d.next.path = self.ar.q.val().path;
        self.rr.d.next.verdict = self.verdict.val();
        self.rr.d.next.ack = self.ack.val();
        self.rr.d.next.slide = self.slide.val();
        self.rr.d.next.isnew = self.isnew.val();
        self.rr.d.next.iw = self.iw.val();
        self.rr.d.next.fullw = self.fullw.val();
        self.rr.d.next.base = self.ns.val().base;
        self.rr.d.next.head = self.ns.val().head;
        self.rr.d.next.zero = self.ns.val().zero;
        self.rr.d.next.ecn = self.ec.val();
        self.rr.d.next.pkt = self.pk.val();

        // ---------------- stage C: read the bitmap after the write ----------------
        self.r2.d.next = self.rr.q.val();
        self.cr.d.next.v = self.r2.q.val().v;
        self.cr.d.next.op = self.r2.q.val().op;
        self.cr.d.next.path = self.r2.q.val().path;
        self.cr.d.next.verdict = self.r2.q.val().verdict;
        self.cr.d.next.ack = self.r2.q.val().ack;
        self.cr.d.next.base = self.r2.q.val().base;
        self.cr.d.next.head = self.r2.q.val().head;
        self.cr.d.next.ecn = self.r2.q.val().ecn;
        self.cr.d.next.pkt = self.r2.q.val().pkt;
        self.cr.d.next.tones = self.z32.val();
        self.rzero.next = self.r2.q.val().zero;
        self.chw.d.next = self.z32.val();
        for i in 0..SACK_WORDS {
            self.snap[i].read_address.next = self.r2.q.val().path;
            self.cz[i].next = self.snap[i].read_data.val();
            if self.r2.q.val().head == self.k3[i].val() {
                self.chw.d.next = self.snap[i].read_data.val();
            }
        }
        for i in 0..SACK_WORDS {
            if self.rzero.val().get_bit(i) {
                self.cz[i].next = self.z32.val();
            }
        }
        if self.rzero.val().get_bit(self.r2.q.val().head.index()) {
            self.chw.d.next = self.z32.val();
        }
        // The rotation by `head` takes two steps: here by half the ring when head's top bit is
        // set, in stage D by the rest. Two narrow multiplexers per bit instead of one
        // SACK_WORDS-way one. `n` is SACK_WORDS bound as a loop variable (see stage D).
        self.rhalf.next = self.r2.q.val().head >= self.khalf.val();
        for n in SACK_WORDS..(SACK_WORDS + 1) {
            for i in 0..SACK_WORDS {
                self.cw[i].d.next = self.cz[i].val();
                if self.rhalf.val() {
                    self.cw[i].d.next = self.cz[(i + n / 2) % n].val();
                }
            }
        }

        // ---------------- stage D: rotate by the rest of head, trailing ones of the head word ----------------
        // `n` is SACK_WORDS bound as a loop variable: rust-hdl resolves the index `(h + j) % n`
        // at Verilog generation with an evaluator that knows only loop variables. `hlo` is
        // below SACK_WORDS / 2, so the compares with larger `h` are constant false.
        self.hlo.next = self.cr.q.val().head & self.klow.val();
        for n in SACK_WORDS..(SACK_WORDS + 1) {
            for j in 0..SACK_WORDS {
                self.ds[j].d.next = self.cw[j].q.val();
                for h in 0..SACK_WORDS {
                    if self.hlo.val() == self.k3[h].val() {
                        self.ds[j].d.next = self.cw[(h + j) % n].q.val();
                    }
                }
            }
        }
        self.hw.next = self.chw.q.val();
        // one-hot of the lowest zero bit, then its index
        self.t1.next = !self.hw.val() & (self.hw.val() + self.c1.val());
        self.tones.next = self.z32.val();
        for bit in 0..5 {
            if (self.t1.val() & self.enc[bit].val()).any() {
                self.tones.next = self.tones.val() | self.pow[bit].val();
            }
        }
        if self.hw.val().all() {
            self.tones.next = self.pow[5].val();
        }
        self.dr.d.next = self.cr.q.val();
        self.dr.d.next.tones = self.tones.val();

        // ---------------- stage E: cum, output FIFO ----------------
        self.rec.next.op = self.dr.q.val().op;
        self.rec.next.verdict = self.dr.q.val().verdict;
        self.rec.next.ack = self.dr.q.val().ack;
        self.rec.next.path = self.dr.q.val().path;
        self.rec.next.base = self.dr.q.val().base;
        self.rec.next.cum = self.dr.q.val().base + self.dr.q.val().tones;
        self.rec.next.ecn = self.dr.q.val().ecn;
        self.rec.next.pkt = self.dr.q.val().pkt;
        self.fifo.write_address.next = self.wp.q.val();
        self.fifo.write_data.next = self.rec.val();
        self.fifo.write_enable.next = self.dr.q.val().v;
        self.fifo.read_address.next = self.rp.q.val();
        self.out.next = self.fifo.read_data.val();
        for i in 0..SACK_WORDS {
            self.fifo_sack[i].write_address.next = self.wp.q.val();
            self.fifo_sack[i].write_data.next = self.ds[i].q.val();
            self.fifo_sack[i].write_enable.next = self.dr.q.val().v;
            self.fifo_sack[i].read_address.next = self.rp.q.val();
            self.out_sack[i].next = self.fifo_sack[i].read_data.val();
        }
        self.out_valid.next = self.cnt.q.val().any();
        self.pop.next = self.cnt.q.val().any() && self.out_ready.val();
        if self.dr.q.val().v {
            self.wp.d.next = self.wp.q.val() + self.one4.val();
        }
        if self.pop.val() {
            self.rp.d.next = self.rp.q.val() + self.one4.val();
        }
        for _t in 0..FIFO_BRAM_TRIPS {
            // block-RAM FIFOs (small configuration): read the head the pointer has after this edge
            self.fifo.read_address.next = self.rp.q.val();
            if self.pop.val() {
                self.fifo.read_address.next = self.rp.q.val() + self.one4.val();
            }
            for i in 0..SACK_WORDS {
                self.fifo_sack[i].read_address.next = self.rp.q.val();
                if self.pop.val() {
                    self.fifo_sack[i].read_address.next = self.rp.q.val() + self.one4.val();
                }
            }
        }
        if self.dr.q.val().v && !self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() + self.one5.val();
        }
        if !self.dr.q.val().v && self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() - self.one5.val();
        }
        self.occ.accept.next = self.accept.val();
        self.occ.pop.next = self.pop.val();
    }
}
