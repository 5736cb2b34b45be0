//! `tx_scoreboard`: the transmit scoreboard of `mroce_model::tx_scoreboard` as a RustHDL block.
//!
//! SEND, ACK_WORD and EXPIRE: one operation per clock (II = 1) in any mix of paths, including
//! back-to-back operations on the same path. TIMER, CLEAR_BACKOFF and RESET (slow path) are
//! serialising: each waits for the operations ahead to leave stage B and holds the next one
//! until it has left stage B itself (at most 4 clocks each). Fixed latency [`TX_LATENCY`] from
//! acceptance to `out_valid` (output FIFO empty, `out_ready` high).
//!
//! # Operations (`in_op`)
//! - [`TX_OP_SEND`]: `send(path, now, rto)`: `ok` and `psn` (the assigned PSN);
//! - [`TX_OP_ACK_WORD`]: `ack_word(path, in_psn = word_psn, in_mask, in_lost_below, now, rto)`:
//!   `psn` (word_psn), `freed`, `lost`, `forged`;
//! - [`TX_OP_EXPIRE`]: `expire_head(path)`: `psn` (word_psn), `lost`;
//! - [`TX_OP_TIMER`]: `timer(path, now, rto)`: `ok` = Expired, `backoff`;
//! - [`TX_OP_CLEAR_BACKOFF`]: no result fields, `clear_backoff(path)`;
//! - [`TX_OP_RESET`]: `reset_path(path, isn = in_psn)`.
//!
//! Every record also carries the path's state after the operation that the connection layer
//! queries (`deadline()`, `outstanding() == 0`, `has_room()`), and `room_mask` (bit p =
//! `has_room(p)`) is kept as a register for the path selector; it reflects every operation
//! that has left stage B ([`TX_ROOM_LAG`] clocks after acceptance).
//!
//! # Micro-architecture
//! Per-path row (una, head, next, armed, deadline, backoff, one "word non-zero" flag per ring
//! word) and the outstanding ring banked by word live in LUT RAM; an operation rewrites at most
//! one word, and a word whose flag is clear reads as zero (lazy clear: reset and expiry write
//! no bitmap word). Stages: P (input, lost-below mask), A1 (RAM read; TIMER's rto << backoff),
//! A2 (forward the two operations whose write-back is still in flight; precompute every wide
//! result for each outcome of the operation then in B: "it slid the window" x "it assigned a
//! PSN", and the reductions of the word as read), B (select with the previous operation's
//! registered outcome; its written word is taken from its result register, reduced in
//! parallel), R (write-back, record fields read off the row, una after a slide), R2 (room
//! mask), FIFO.
//!
//! Timing (stage B is a one-clock loop through R's register): everything B needs from R is a
//! register (`sig`/`nu`/`wrn` come pre-ANDed with the next op's "same path" flag), the late
//! signals (word flags, progress, slide) select last, and what the next op does not read at
//! once (una after a slide, the record's armed/deadline/empty/room) is resolved at R. Invariants
//! used (true from reset, kept by every operation): 0 <= next - una <= `SACK_BITS` - 32, so
//! next - una is {nw[SIB-1:5] - head, nw[4:0]} (SIB = `SACK_INDEX_BITS` bits, no 32-bit
//! subtraction); every outstanding bit was sent (words hold PSNs in [una, next)), so an ACK's
//! freed bits are out & mask and the word left is out & !(mask | below), independent of the
//! sent mask.
//!
//! Dimensions follow `mroce_model::params`: `PATHS` rows and a ring of `SACK_WORDS` 32-bit words
//! per path (16 x 8 by default, 8 x 4 with `config-reduced`, 4 x 2 with `config-small`).

use crate::fifo_bram::{FifoStore, FIFO_BRAM_TRIPS};
use crate::fifo_occupancy::FifoOccupancy;
use crate::lutram::{kc, LutRam};
use mroce_model::params::{
    PATHS, PATH_BITS, RTO_MAX_BACKOFF, SACK_INDEX_BITS, SACK_WORDS, SACK_WORD_BITS, SACK_WORD_INDEX_BITS,
};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record (FIFO empty, `out_ready` high).
pub const TX_LATENCY: usize = 6;
/// Clocks from acceptance until `room_mask` reflects the operation.
pub const TX_ROOM_LAG: usize = 5;
/// Output FIFO depth (bound on accepted, undelivered operations).
pub const TX_FIFO_DEPTH: usize = 16;
/// `in_op` codes.
pub const TX_OP_SEND: u64 = 0;
pub const TX_OP_ACK_WORD: u64 = 1;
pub const TX_OP_EXPIRE: u64 = 2;
pub const TX_OP_TIMER: u64 = 3;
pub const TX_OP_CLEAR_BACKOFF: u64 = 4;
pub const TX_OP_RESET: u64 = 5;

// Widths of a path index, a ring word index and a bit index in the ring (a window offset); a
// signed window offset (next - word_psn), and the PSN bits above a window offset.
const PB: usize = PATH_BITS as usize;
const WIB: usize = SACK_WORD_INDEX_BITS as usize;
const SIB: usize = SACK_INDEX_BITS as usize;
const SIB1: usize = SIB + 1;
const HIB: usize = 32 - SIB;

// Bit offsets in a word are 5 bits of a 32-bit PSN, sliced at fixed places. Word and path
// indices need at least one bit (rust-hdl has no Bits<0>), and one word is kept as slack (a
// one-word window would have no room); the upper bounds are the configurations' range (tested).
const _: () = assert!(SACK_WORD_BITS == 32, "tx_scoreboard: 32-bit words");
const _: () = assert!(
    SACK_WORDS >= 2 && SACK_WORDS <= 8 && SACK_WORDS == 1 << WIB,
    "tx_scoreboard: 2, 4 or 8 ring words"
);
const _: () = assert!(
    PATHS >= 4 && PATHS <= 16 && PATHS == 1 << PB,
    "tx_scoreboard: 4, 8 or 16 paths"
);

/// Per-path row.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxState {
    pub una: Bits<32>,
    pub head: Bits<WIB>,
    pub nxt: Bits<32>,
    pub armed: Bit,
    pub deadline: Bits<32>,
    pub backoff: Bits<3>,
    /// Ring word i is non-zero (a clear flag makes the word read as zero).
    pub nz: Bits<SACK_WORDS>,
    /// ISN mod SACK_BITS: PSN x sits at bit (x - org) % 32 of ring word ((x - org) / 32) %
    /// SACK_WORDS for as long as it is in the window (una and head move together), so no 32-bit
    /// subtraction is needed.
    pub org: Bits<SIB>,
    /// (next - org) mod SACK_BITS: ring word [SIB-1:5] and bit [4:0] of the next PSN to send.
    pub nw: Bits<SIB>,
}

/// One output record.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxOut {
    pub op: Bits<3>,
    pub path: Bits<PB>,
    pub ok: Bit,
    pub psn: Bits<32>,
    pub freed: Bits<32>,
    pub lost: Bits<32>,
    pub forged: Bit,
    pub backoff: Bits<3>,
    pub armed: Bit,
    pub deadline: Bits<32>,
    pub empty: Bit,
    pub room: Bit,
}

/// Operation register (stages P, A1).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxP {
    pub v: Bit,
    pub op: Bits<3>,
    pub path: Bits<PB>,
    pub psn: Bits<32>,
    pub mask: Bits<32>,
    pub below: Bits<32>,
    pub now: Bits<32>,
    pub rto: Bits<32>,
    pub ser: Bit,
    /// word_psn - 32 (range check against una + 32 when the op in B slides).
    pub psm32: Bits<32>,
    /// (A1) ring word of word_psn, and word_psn is word-aligned (from the row's org).
    pub wa: Bits<WIB>,
    pub aligned: Bit,
    pub fwd: Bit,
    pub fwd2: Bit,
    /// Inverted copies of fwd / fwd2 for the row's forwarding mux (halves their fan-out; the
    /// inversion keeps synthesis from merging the copies).
    pub nfwd: Bit,
    pub nfwd2: Bit,
    pub same: Bit,
    /// (A1) TIMER: rto << min(backoff + 1, max) on the RAM row (current for serialising ops).
    pub rtb: Bits<32>,
}

/// Stage A2 result: the row as forwarded and every result precomputed per outcome of the op
/// in B (σ: it slid; ν: it assigned a PSN).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxA {
    pub v: Bit,
    pub op: Bits<3>,
    pub path: Bits<PB>,
    pub psn: Bits<32>,
    pub mask: Bits<32>,
    pub below: Bits<32>,
    pub same: Bit,
    pub is_send: Bit,
    pub is_ack: Bit,
    pub is_exp: Bit,
    pub is_ser: Bit,
    pub q: TxState,
    pub room00: Bit,
    pub room01: Bit,
    pub room10: Bit,
    pub room11: Bit,
    pub ge00: Bit,
    pub ge01: Bit,
    pub ge10: Bit,
    pub ge11: Bit,
    pub nx1: Bits<32>,
    pub nw1: Bits<SIB>,
    pub nw2: Bits<SIB>,
    pub nx2: Bits<32>,
    pub u32c: Bits<32>,
    pub u64c: Bits<32>,
    pub w0: Bits<WIB>,
    pub w1: Bits<WIB>,
    pub m0: Bits<32>,
    pub m1: Bits<32>,
    pub ws0: Bits<32>,
    pub ws1: Bits<32>,
    /// now and rto << backoff: SEND's deadline now + (rto << backoff) is added in B (off the loop).
    pub now: Bits<32>,
    pub rsh: Bits<32>,
    pub db: Bits<32>,
    pub aligned: Bit,
    /// word_psn - una < SACK_BITS (i0*) and word_psn - 32 - una < SACK_BITS (i1*) on each forwarding
    /// candidate (RAM, R, R after its slide, R2) and the one-hot candidate select: resolved in B,
    /// where the ACK's validity is not needed early.
    pub i0q: Bit,
    pub i0r: Bit,
    pub i0u: Bit,
    pub i0s: Bit,
    pub i1q: Bit,
    pub i1r: Bit,
    pub i1u: Bit,
    pub i1s: Bit,
    pub cq: Bit,
    pub cr: Bit,
    pub cu: Bit,
    pub cs: Bit,
    pub wa: Bits<WIB>,
    /// The row's head word is non-zero (before the op in B).
    pub hb0: Bit,
    /// wa is the row's head word.
    pub weq0: Bit,
    pub wsa: Bits<32>,
    /// !(mask | below): the bits an ACK leaves outstanding (every outstanding bit was sent).
    pub nmb: Bits<32>,
    /// The ack word as read leaves a bit outstanding / frees a bit (before the op in B).
    pub akn: Bit,
    pub fa: Bit,
    /// Before the op in B: no ring word but wa / but head is non-zero; no word is non-zero.
    pub ozaq: Bit,
    pub ozeq: Bit,
    pub nz0q: Bit,
    /// One-hot ring words w0, w1, wa, head, and head + 1.
    pub w0oh: Bits<SACK_WORDS>,
    pub w1oh: Bits<SACK_WORDS>,
    pub waoh: Bits<SACK_WORDS>,
    pub qhoh: Bits<SACK_WORDS>,
    pub h1: Bits<WIB>,
    /// The row's backoff is 0 (before the op in B).
    pub bz0: Bit,
    pub sent0: Bits<32>,
    pub sent1: Bits<32>,
    pub wh0: Bits<32>,
    pub wh1: Bits<32>,
    pub sr_ns: TxState,
    pub sr_ok: Bit,
    pub sr_bo: Bits<3>,
}

/// Stage B result (the row after the operation, the word it wrote, its outcome).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxR {
    pub v: Bit,
    pub path: Bits<PB>,
    pub ns: TxState,
    pub slid: Bit,
    pub sendok: Bit,
    /// slid / sendok / wrote, and the op then in A2 (next in B) is on the same path.
    pub sig: Bit,
    pub nu: Bit,
    pub wrn: Bit,
    /// una if the op slid (ns.una holds it otherwise): selected at R.
    pub uh: Bits<32>,
    /// ns.backoff is 0 (registered for the next op's first-arm deadline choice).
    pub bz: Bit,
    pub wrote: Bit,
    pub w: Bits<WIB>,
    pub nword: Bits<32>,
    pub rec: TxOut,
}

/// The transmit scoreboard block.
#[derive(LogicBlock)]
pub struct TxScoreboardHw {
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
    st: LutRam<TxState, PB>,
    bank: [LutRam<Bits<32>, PB>; SACK_WORDS],
    fifo: FifoStore<TxOut, 4>,
    pr: DFF<TxP>,
    p2: DFF<TxP>,
    q1: DFF<TxState>,
    x1: [DFF<Bits<32>>; SACK_WORDS],
    ar: DFF<TxA>,
    rr: DFF<TxR>,
    r2: DFF<TxR>,
    room: DFF<Bits<PATHS>>,
    wp: DFF<Bits<4>>,
    rp: DFF<Bits<4>>,
    cnt: DFF<Bits<5>>,
    occ: FifoOccupancy,
    // constants (named for the default configuration's widths, which are the Verilog
    // localparams' names; z8 / one8 are ring-word masks, k3 ring-word indices, one16 a path mask)
    c1: Constant<Bits<32>>,
    c2: Constant<Bits<32>>,
    c32: Constant<Bits<32>>,
    c64: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    ones32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    one3: Constant<Bits<3>>,
    z3: Constant<Bits<3>>,
    maxbo: Constant<Bits<3>>,
    z8: Constant<Bits<SACK_WORDS>>,
    one8: Constant<Bits<SACK_WORDS>>,
    /// Ring offsets (the row's org and nw).
    zr: Constant<Bits<SIB>>,
    oner: Constant<Bits<SIB>>,
    twor: Constant<Bits<SIB>>,
    one16: Constant<Bits<PATHS>>,
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
    k3: [Constant<Bits<WIB>>; SACK_WORDS],
    op_send: Constant<Bits<3>>,
    op_ack: Constant<Bits<3>>,
    op_expire: Constant<Bits<3>>,
    op_timer: Constant<Bits<3>>,
    op_clear: Constant<Bits<3>>,
    op_reset: Constant<Bits<3>>,
    // locals: input
    rdy: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    bdiff: Signal<Local, Bits<32>>,
    in_ser: Signal<Local, Bit>,
    // locals: A2
    rns: Signal<Local, TxState>,
    r2ns: Signal<Local, TxState>,
    q: Signal<Local, TxState>,
    qnz: Signal<Local, Bits<SACK_WORDS>>,
    wv: [Signal<Local, Bits<32>>; SACK_WORDS],
    p: Signal<Local, TxP>,
    m0: Signal<Local, Bits<32>>,
    ws0l: Signal<Local, Bits<32>>,
    ws0p: Signal<Local, Bits<32>>,
    w0p: Signal<Local, Bits<WIB>>,
    snxt: [Signal<Local, Bits<32>>; 3],
    suna: [Signal<Local, Bits<32>>; 3],
    snw: [Signal<Local, Bits<SIB>>; 3],
    shd: [Signal<Local, Bits<WIB>>; 3],
    ahi: [Signal<Local, Bits<WIB>>; 3],
    alo: [Signal<Local, Bit>; 3],
    sd0: [Signal<Local, Bits<32>>; 3],
    sd1: [Signal<Local, Bits<32>>; 3],
    sspan: [Signal<Local, Bits<SIB1>>; 3],
    f_r00: [Signal<Local, Bit>; 3],
    f_r01: [Signal<Local, Bit>; 3],
    f_r10: [Signal<Local, Bit>; 3],
    f_r11: [Signal<Local, Bit>; 3],
    f_g00: [Signal<Local, Bit>; 3],
    f_g01: [Signal<Local, Bit>; 3],
    f_g10: [Signal<Local, Bit>; 3],
    f_g11: [Signal<Local, Bit>; 3],
    f_i0: [Signal<Local, Bit>; 3],
    f_i1: [Signal<Local, Bit>; 3],
    qn: Signal<Local, Bits<32>>,
    pp: Signal<Local, Bits<32>>,
    kn: Signal<Local, Bits<SIB>>,
    ka: Signal<Local, Bits<SIB>>,
    q1r: Signal<Local, TxState>,
    bo1a: Signal<Local, Bits<3>>,
    prp: Signal<Local, Bits<32>>,
    s0: Signal<Local, Bits<32>>,
    s1: Signal<Local, Bits<32>>,
    w0: Signal<Local, Bits<WIB>>,
    w1: Signal<Local, Bits<WIB>>,
    wa: Signal<Local, Bits<WIB>>,
    qh1: Signal<Local, Bits<WIB>>,
    wsa: Signal<Local, Bits<32>>,
    bo1: Signal<Local, Bits<3>>,
    late: Signal<Local, Bits<32>>,
    srs: Signal<Local, TxState>,
    // locals: B
    a: Signal<Local, TxA>,
    qa: Signal<Local, TxState>,
    prs: Signal<Local, TxState>,
    sig: Signal<Local, Bit>,
    nu: Signal<Local, Bit>,
    head_k: Signal<Local, Bits<WIB>>,
    nz_k: Signal<Local, Bits<SACK_WORDS>>,
    armed_k: Signal<Local, Bit>,
    bo_k: Signal<Local, Bits<3>>,
    bzk: Signal<Local, Bit>,
    dl_k: Signal<Local, Bits<32>>,
    una_k: Signal<Local, Bits<32>>,
    nxt_k: Signal<Local, Bits<32>>,
    room_k: Signal<Local, Bit>,
    ge_k: Signal<Local, Bit>,
    w: Signal<Local, Bits<WIB>>,
    fromr: Signal<Local, Bit>,
    src: Signal<Local, Bits<32>>,
    sent: Signal<Local, Bits<32>>,
    rk: Signal<Local, Bit>,
    rf: Signal<Local, Bit>,
    nzw: Signal<Local, Bit>,
    frany: Signal<Local, Bit>,
    valid_ack: Signal<Local, Bit>,
    nword: Signal<Local, Bits<32>>,
    wrote: Signal<Local, Bit>,
    nz_set: Signal<Local, Bits<SACK_WORDS>>,
    rraw: Signal<Local, TxState>,
    da: Signal<Local, Bits<32>>,
    sd0u: Signal<Local, Bits<32>>,
    sd1u: Signal<Local, Bits<32>>,
    inr0: Signal<Local, Bit>,
    inr1: Signal<Local, Bit>,
    nz_clr: Signal<Local, Bits<SACK_WORDS>>,
    uh: Signal<Local, Bits<32>>,
    msel: Signal<Local, Bits<32>>,
    nwp: Signal<Local, Bits<32>>,
    nwr: Signal<Local, Bits<32>>,
    srcp: Signal<Local, Bits<32>>,
    nzh: Signal<Local, Bit>,
    hbk: Signal<Local, Bit>,
    fra: Signal<Local, Bit>,
    weqk: Signal<Local, Bit>,
    slide: Signal<Local, Bit>,
    sendok: Signal<Local, Bit>,
    ackok: Signal<Local, Bit>,
    hk1: Signal<Local, Bits<WIB>>,
    hoh: Signal<Local, Bits<SACK_WORDS>>,
    phoh: Signal<Local, Bits<SACK_WORDS>>,
    woh: Signal<Local, Bits<SACK_WORDS>>,
    oza: Signal<Local, Bit>,
    oze: Signal<Local, Bit>,
    nz0: Signal<Local, Bit>,
    wrn: Signal<Local, Bit>,
    fr0: Signal<Local, Bit>,
    fr1: Signal<Local, Bit>,
    frh: Signal<Local, Bit>,
    nmb: Signal<Local, Bits<32>>,
    xa: Signal<Local, Bits<32>>,
    ssel: Signal<Local, Bits<SIB1>>,
    thr: Signal<Local, Bits<32>>,
    sbo: [Signal<Local, Bits<3>>; 3],
    rsh: [Signal<Local, Bits<32>>; 3],
    rshs: Signal<Local, Bits<32>>,
    ns: Signal<Local, TxState>,
    rec: Signal<Local, TxOut>,
    // locals: R
    rrec: Signal<Local, TxOut>,
    rrec2: Signal<Local, TxOut>,
    alloc2: Signal<Local, Bits<WIB>>,
    roomr: Signal<Local, Bit>,
}

impl Default for TxScoreboardHw {
    fn default() -> Self {
        macro_rules! d {
            ($($f:ident),*) => {
                Self {
                    $($f: Default::default(),)*
                    c1: kc(1),
                    c2: kc(2),
                    c32: kc(SACK_WORD_BITS as u64),
                    c64: kc(2 * SACK_WORD_BITS as u64),
                    z32: kc(0),
                    ones32: kc(0xFFFF_FFFF),
                    one32: kc(1),
                    one3: kc(1),
                    z3: kc(0),
                    maxbo: kc(u64::from(RTO_MAX_BACKOFF)),
                    z8: kc(0),
                    one8: kc(1),
                    zr: kc(0),
                    oner: kc(1),
                    twor: kc(2),
                    one16: kc(1),
                    one4: kc(1),
                    one5: kc(1),
                    occ: FifoOccupancy::new(TX_FIFO_DEPTH),
                    k3: core::array::from_fn(|i| kc(i as u64)),
                    op_send: kc(TX_OP_SEND),
                    op_ack: kc(TX_OP_ACK_WORD),
                    op_expire: kc(TX_OP_EXPIRE),
                    op_timer: kc(TX_OP_TIMER),
                    op_clear: kc(TX_OP_CLEAR_BACKOFF),
                    op_reset: kc(TX_OP_RESET),
                }
            };
        }
        d!(
            clock,
            in_valid,
            in_ready,
            in_op,
            in_path,
            in_psn,
            in_mask,
            in_lost_below,
            in_now,
            in_rto,
            out_valid,
            out_ready,
            out,
            room_mask,
            st,
            bank,
            fifo,
            pr,
            p2,
            q1,
            x1,
            ar,
            rr,
            r2,
            room,
            wp,
            rp,
            cnt,
            rdy,
            accept,
            pop,
            bdiff,
            in_ser,
            rns,
            r2ns,
            q,
            qnz,
            wv,
            p,
            m0,
            ws0l,
            ws0p,
            w0p,
            snxt,
            suna,
            snw,
            shd,
            ahi,
            alo,
            sd0,
            sd1,
            sspan,
            f_r00,
            f_r01,
            f_r10,
            f_r11,
            f_g00,
            f_g01,
            f_g10,
            f_g11,
            f_i0,
            f_i1,
            qn,
            pp,
            kn,
            ka,
            q1r,
            bo1a,
            prp,
            s0,
            s1,
            w0,
            w1,
            wa,
            qh1,
            wsa,
            bo1,
            late,
            srs,
            a,
            qa,
            prs,
            sig,
            nu,
            head_k,
            nz_k,
            armed_k,
            bo_k,
            bzk,
            dl_k,
            una_k,
            nxt_k,
            room_k,
            ge_k,
            w,
            fromr,
            src,
            sent,
            rk,
            rf,
            nzw,
            frany,
            valid_ack,
            nword,
            wrote,
            nz_set,
            rraw,
            da,
            sd0u,
            sd1u,
            inr0,
            inr1,
            nz_clr,
            uh,
            msel,
            nwp,
            nwr,
            srcp,
            nzh,
            hbk,
            fra,
            weqk,
            slide,
            sendok,
            ackok,
            hk1,
            hoh,
            phoh,
            woh,
            oza,
            oze,
            nz0,
            wrn,
            fr0,
            fr1,
            frh,
            nmb,
            xa,
            ssel,
            thr,
            sbo,
            rsh,
            rshs,
            ns,
            rec,
            rrec,
            rrec2,
            alloc2,
            roomr
        )
    }
}

// Nested ifs stay nested: hdl_gen writes them into the Verilog as written.
// The FIFO_BRAM_TRIPS loop has no trips outside the small configuration (on purpose).
#[allow(clippy::reversed_empty_ranges, clippy::collapsible_if)]
impl Logic for TxScoreboardHw {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, pr, p2, q1, ar, rr, r2, room, wp, rp, cnt);
        self.occ.clock.next = self.clock.val();
        self.st.clock.next = self.clock.val();
        self.fifo.clock.next = self.clock.val();
        for i in 0..SACK_WORDS {
            self.bank[i].clock.next = self.clock.val();
            self.x1[i].clock.next = self.clock.val();
        }

        // ---------------- input / stage P ----------------
        self.in_ser.next = (self.in_op.val() == self.op_timer.val())
            || (self.in_op.val() == self.op_clear.val())
            || (self.in_op.val() == self.op_reset.val());
        self.rdy.next = self.occ.room.val()
            && !(self.pr.q.val().v && self.pr.q.val().ser)
            && !(self.p2.q.val().v && self.p2.q.val().ser)
            && !(self.ar.q.val().v && self.ar.q.val().is_ser)
            && !(self.in_ser.val() && (self.pr.q.val().v || self.p2.q.val().v || self.ar.q.val().v));
        self.in_ready.next = self.rdy.val();
        self.accept.next = self.in_valid.val() && self.rdy.val();
        self.pr.d.next.v = self.accept.val();
        self.pr.d.next.op = self.in_op.val();
        self.pr.d.next.path = self.in_path.val();
        self.pr.d.next.psn = self.in_psn.val();
        self.pr.d.next.mask = self.in_mask.val();
        self.pr.d.next.now = self.in_now.val();
        self.pr.d.next.rto = self.in_rto.val();
        self.pr.d.next.ser = self.in_ser.val();
        self.pr.d.next.psm32 = self.in_psn.val() - self.c32.val();
        // below_mask of ack_word: bits of PSNs under lost_below
        self.bdiff.next = self.in_lost_below.val() - self.in_psn.val();
        self.pr.d.next.below = self.ones32.val();
        if !(self.bdiff.val().get_bits::<27>(5).any()) {
            self.pr.d.next.below = !(self.ones32.val() << self.bdiff.val().get_bits::<5>(0));
        }
        if self.bdiff.val().get_bit(31) {
            self.pr.d.next.below = self.z32.val();
        }
        self.pr.d.next.fwd = false;
        self.pr.d.next.rtb = self.z32.val();
        self.pr.d.next.fwd2 = false;
        self.pr.d.next.same = false;

        // ---------------- stage A1: read the row and all its words ----------------
        self.st.read_address.next = self.pr.q.val().path;
        self.q1.d.next = self.st.read_data.val();
        for i in 0..SACK_WORDS {
            self.bank[i].read_address.next = self.pr.q.val().path;
            self.x1[i].d.next = self.bank[i].read_data.val();
        }
        self.p2.d.next = self.pr.q.val();
        // org changes only on RESET, which drains the pipeline: the RAM row's org is current
        self.q1r.next = self.st.read_data.val();
        self.prp.next = self.pr.q.val().psn;
        self.ka.next = self.prp.val().get_bits::<SIB>(0) - self.q1r.val().org;
        self.bo1a.next = self.q1r.val().backoff;
        if self.q1r.val().backoff < self.maxbo.val() {
            self.bo1a.next = self.q1r.val().backoff + self.one3.val();
        }
        self.p2.d.next.rtb = self.pr.q.val().rto << self.bo1a.val();
        self.p2.d.next.wa = self.ka.val().get_bits::<WIB>(5);
        self.p2.d.next.aligned = !self.ka.val().get_bits::<5>(0).any();
        self.p2.d.next.fwd = self.ar.q.val().v && (self.ar.q.val().path == self.pr.q.val().path);
        self.p2.d.next.fwd2 = self.rr.q.val().v && (self.rr.q.val().path == self.pr.q.val().path);
        self.p2.d.next.nfwd = !(self.ar.q.val().v && (self.ar.q.val().path == self.pr.q.val().path));
        self.p2.d.next.nfwd2 = !(self.rr.q.val().v && (self.rr.q.val().path == self.pr.q.val().path));
        self.p2.d.next.same = self.p2.q.val().v && (self.p2.q.val().path == self.pr.q.val().path);

        // ---------------- stage A2: forward, then precompute per outcome of the op in B ----------
        self.p.next = self.p2.q.val();
        // the row after the op in R (its una after a slide is resolved here, off stage B's loop)
        self.rns.next = self.rr.q.val().ns;
        if self.rr.q.val().slid {
            self.rns.next.una = self.rr.q.val().uh;
        }
        self.r2ns.next = self.r2.q.val().ns;
        self.q.next = self.q1.q.val();
        if !self.p.val().nfwd2 {
            self.q.next = self.r2ns.val();
        }
        if !self.p.val().nfwd {
            self.q.next = self.rns.val();
        }
        self.qnz.next = self.q.val().nz;
        for i in 0..SACK_WORDS {
            self.wv[i].next = self.x1[i].q.val();
            if self.p.val().fwd2 && self.r2.q.val().wrote && (self.r2.q.val().w == self.k3[i].val()) {
                self.wv[i].next = self.r2.q.val().nword;
            }
            if self.p.val().fwd && self.rr.q.val().wrote && (self.rr.q.val().w == self.k3[i].val()) {
                self.wv[i].next = self.rr.q.val().nword;
            }
            if !self.qnz.val().get_bit(i) {
                self.wv[i].next = self.z32.val();
            }
        }
        self.ar.d.next.v = self.p.val().v;
        self.ar.d.next.op = self.p.val().op;
        self.ar.d.next.path = self.p.val().path;
        self.ar.d.next.psn = self.p.val().psn;
        self.ar.d.next.mask = self.p.val().mask;
        self.ar.d.next.below = self.p.val().below;
        self.ar.d.next.same = self.p.val().same;
        self.ar.d.next.is_send = self.p.val().op == self.op_send.val();
        self.ar.d.next.is_ack = self.p.val().op == self.op_ack.val();
        self.ar.d.next.is_exp = self.p.val().op == self.op_expire.val();
        self.ar.d.next.is_ser = self.p.val().ser;
        self.ar.d.next.q = self.q.val();
        // allocation next - una (0 ..= SACK_BITS - 32) and its four variants: (σ, ν) = (slid, sent)
        // Comparisons are made on each candidate row (RAM, R, R2) straight from its register and
        // selected afterwards, so the forwarding mux is not in front of the carry chains.
        self.snxt[0].next = self.q1.q.val().nxt;
        self.snxt[1].next = self.rns.val().nxt;
        self.snxt[2].next = self.r2ns.val().nxt;
        self.sbo[0].next = self.q1.q.val().backoff;
        self.sbo[1].next = self.rns.val().backoff;
        self.sbo[2].next = self.r2ns.val().backoff;
        self.snw[0].next = self.q1.q.val().nw;
        self.snw[1].next = self.rns.val().nw;
        self.snw[2].next = self.r2ns.val().nw;
        self.shd[0].next = self.q1.q.val().head;
        self.shd[1].next = self.rns.val().head;
        self.shd[2].next = self.r2ns.val().head;
        self.suna[0].next = self.q1.q.val().una;
        // R's una is resolved at R: the range checks take both of its values, selected last
        self.rraw.next = self.rr.q.val().ns;
        self.suna[1].next = self.rraw.val().una;
        self.sd0u.next = self.p.val().psn - self.rr.q.val().uh;
        self.sd1u.next = self.p.val().psm32 - self.rr.q.val().uh;
        // In the window: the bits above a window offset are zero. hdl_gen writes a loop variable
        // as its value but a constant as its name, so one-pass loops bind the window's offset
        // width (sb = SIB) and its last ring word (top) where the Verilog needs literals.
        for sb in SIB..(SIB + 1) {
            self.ar.d.next.i0u = !self.sd0u.val().get_bits::<HIB>(sb).any();
            self.ar.d.next.i1u = !self.sd1u.val().get_bits::<HIB>(sb).any();
        }
        self.suna[2].next = self.r2ns.val().una;
        for j in 0..3 {
            // next - una (0 ..= SACK_BITS - 32) is {nw[SIB-1:5] - head, nw[4:0]} (una sits at bit 0
            // of the head word)
            self.ahi[j].next = self.snw[j].val().get_bits::<WIB>(5) - self.shd[j].val();
            self.alo[j].next = self.snw[j].val().get_bits::<5>(0).all();
            self.sd0[j].next = self.p.val().psn - self.suna[j].val();
            self.sd1[j].next = self.p.val().psm32 - self.suna[j].val();
            // next - word_psn in SIB + 1 bits: wherever the masks are used (aligned, 0 <= word_psn -
            // una < SACK_BITS, 0 <= next - una <= SACK_BITS - 32) it lies in -SACK_BITS ..=
            // SACK_BITS - 32, so SIB + 1 bits are exact
            self.sspan[j].next = self.snxt[j].val().get_bits::<SIB1>(0) - self.p.val().psn.get_bits::<SIB1>(0);
            // alloc < B, < B - 1, < B + 32, < B + 31; >= 32, >= 31, >= 64, >= 63, where
            // B = SACK_BITS - 32 bounds alloc (ahi is the top word iff alloc >= B)
            for top in (SACK_WORDS - 1)..SACK_WORDS {
                self.f_r00[j].next = self.ahi[j].val() != self.k3[top].val();
                self.f_r01[j].next = !((self.ahi[j].val() == self.k3[top].val())
                    || ((self.ahi[j].val() == self.k3[top - 1].val()) && self.alo[j].val()));
            }
            self.f_r10[j].next = true;
            self.f_r11[j].next = true;
            self.f_g00[j].next = self.ahi[j].val().any();
            self.f_g01[j].next = self.ahi[j].val().any() || self.alo[j].val();
            // ahi >= 2 (never with 2 words, where ahi is one bit)
            self.f_g10[j].next = (self.ahi[j].val() & !self.k3[1].val()).any();
            self.f_g11[j].next = (self.ahi[j].val() & !self.k3[1].val()).any()
                || ((self.ahi[j].val() == self.k3[1].val()) && self.alo[j].val());
            for sb in SIB..(SIB + 1) {
                self.f_i0[j].next = !self.sd0[j].val().get_bits::<HIB>(sb).any();
                self.f_i1[j].next = !self.sd1[j].val().get_bits::<HIB>(sb).any();
            }
        }
        // sent mask: PSNs word_psn .. next (a thermometer of next - word_psn, clipped to
        // 0 ..= 32); for next + 1 it is the same mask shifted in by one (empty if negative)
        self.ssel.next = self.sspan[0].val();
        if self.p.val().fwd2 {
            self.ssel.next = self.sspan[2].val();
        }
        if self.p.val().fwd {
            self.ssel.next = self.sspan[1].val();
        }
        self.thr.next = !(self.ones32.val() << self.ssel.val().get_bits::<5>(0));
        self.s0.next = self.thr.val();
        self.s1.next = (self.thr.val() << self.c1.val()) | self.one32.val();
        if self.ssel.val().get_bits::<WIB>(5).any() {
            self.s0.next = self.ones32.val();
            self.s1.next = self.ones32.val();
        }
        for sb in SIB..(SIB + 1) {
            if self.ssel.val().get_bit(sb) {
                self.s0.next = self.z32.val();
                self.s1.next = self.z32.val();
            }
        }
        self.ar.d.next.room00 = self.f_r00[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.room00 = self.f_r00[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.room00 = self.f_r00[1].val();
        }
        self.ar.d.next.room01 = self.f_r01[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.room01 = self.f_r01[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.room01 = self.f_r01[1].val();
        }
        self.ar.d.next.room10 = self.f_r10[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.room10 = self.f_r10[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.room10 = self.f_r10[1].val();
        }
        self.ar.d.next.room11 = self.f_r11[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.room11 = self.f_r11[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.room11 = self.f_r11[1].val();
        }
        self.ar.d.next.ge00 = self.f_g00[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.ge00 = self.f_g00[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.ge00 = self.f_g00[1].val();
        }
        self.ar.d.next.ge01 = self.f_g01[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.ge01 = self.f_g01[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.ge01 = self.f_g01[1].val();
        }
        self.ar.d.next.ge10 = self.f_g10[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.ge10 = self.f_g10[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.ge10 = self.f_g10[1].val();
        }
        self.ar.d.next.ge11 = self.f_g11[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.ge11 = self.f_g11[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.ge11 = self.f_g11[1].val();
        }
        self.ar.d.next.i0q = self.f_i0[0].val();
        self.ar.d.next.i0r = self.f_i0[1].val();
        self.ar.d.next.i0s = self.f_i0[2].val();
        self.ar.d.next.i1q = self.f_i1[0].val();
        self.ar.d.next.i1r = self.f_i1[1].val();
        self.ar.d.next.i1s = self.f_i1[2].val();
        self.ar.d.next.cq = !self.p.val().fwd && !self.p.val().fwd2;
        self.ar.d.next.cr = self.p.val().fwd && !self.rr.q.val().slid;
        self.ar.d.next.cu = self.p.val().fwd && self.rr.q.val().slid;
        self.ar.d.next.cs = !self.p.val().fwd && self.p.val().fwd2;
        self.ar.d.next.nx1 = self.q.val().nxt + self.c1.val();
        self.ar.d.next.nx2 = self.q.val().nxt + self.c2.val();
        self.ar.d.next.u32c = self.q.val().una + self.c32.val();
        self.ar.d.next.u64c = self.q.val().una + self.c64.val();
        // SEND: the PSN's word and bit for both values of next
        self.qn.next = self.q.val().nxt;
        self.pp.next = self.p.val().psn;
        self.kn.next = self.q.val().nw;
        self.ar.d.next.nw1 = self.q.val().nw + self.oner.val();
        self.ar.d.next.nw2 = self.q.val().nw + self.twor.val();
        self.w0.next = self.kn.val().get_bits::<WIB>(5);
        self.w1.next = self.w0.val();
        if self.kn.val().get_bits::<5>(0).all() {
            self.w1.next = self.w0.val() + self.k3[1].val();
        }
        self.ar.d.next.w0 = self.w0.val();
        self.ar.d.next.w1 = self.w1.val();
        self.m0.next = self.one32.val() << self.kn.val().get_bits::<5>(0);
        self.ar.d.next.m0 = self.m0.val();
        self.ar.d.next.m1 = self.m0.val() << self.c1.val();
        if self.m0.val().get_bit(31) {
            self.ar.d.next.m1 = self.one32.val();
        }
        // rto << backoff on each forwarding candidate, selected afterwards (off the adder's path)
        for j in 0..3 {
            self.rsh[j].next = self.p.val().rto << self.sbo[j].val();
        }
        self.rshs.next = self.rsh[0].val();
        if self.p.val().fwd2 {
            self.rshs.next = self.rsh[2].val();
        }
        if self.p.val().fwd {
            self.rshs.next = self.rsh[1].val();
        }
        self.ar.d.next.now = self.p.val().now;
        self.ar.d.next.rsh = self.rshs.val();
        self.ar.d.next.db = self.p.val().now + self.p.val().rto;
        // ACK_WORD: alignment, range for both una, sent masks for both next
        self.ar.d.next.aligned = self.p.val().aligned;
        self.wa.next = self.p.val().wa;
        self.ar.d.next.wa = self.wa.val();
        // stage B's slide test, taken off its path: the head word's flag and "ack word = head"
        self.ar.d.next.hb0 = false;
        for i in 0..SACK_WORDS {
            if self.q.val().head == self.k3[i].val() {
                self.ar.d.next.hb0 = self.qnz.val().get_bit(i);
            }
        }
        self.ar.d.next.weq0 = self.wa.val() == self.q.val().head;
        self.ar.d.next.sent0 = self.s0.val();
        self.ar.d.next.sent1 = self.s1.val();
        // words as read (before the op in B): at w0, w1, wa, head, head + 1
        self.qh1.next = self.q.val().head + self.k3[1].val();
        self.ws0l.next = self.z32.val();
        self.ws0p.next = self.z32.val();
        self.w0p.next = self.w0.val() + self.k3[1].val();
        self.wsa.next = self.z32.val();
        self.ar.d.next.wh0 = self.z32.val();
        self.ar.d.next.wh1 = self.z32.val();
        for i in 0..SACK_WORDS {
            if self.w0.val() == self.k3[i].val() {
                self.ws0l.next = self.wv[i].val();
            }
            if self.w0p.val() == self.k3[i].val() {
                self.ws0p.next = self.wv[i].val();
            }
            if self.wa.val() == self.k3[i].val() {
                self.wsa.next = self.wv[i].val();
            }
            if self.q.val().head == self.k3[i].val() {
                self.ar.d.next.wh0 = self.wv[i].val();
            }
            if self.qh1.val() == self.k3[i].val() {
                self.ar.d.next.wh1 = self.wv[i].val();
            }
        }
        self.ar.d.next.wsa = self.wsa.val();
        self.nmb.next = !(self.p.val().mask | self.p.val().below);
        self.ar.d.next.nmb = self.nmb.val();
        // the ack word keeps / frees a bit: each source (RAM, R, R2) reduced before the select
        self.xa.next = self.z32.val();
        for i in 0..SACK_WORDS {
            if self.wa.val() == self.k3[i].val() {
                self.xa.next = self.x1[i].q.val();
            }
        }
        self.ar.d.next.akn = (self.xa.val() & self.nmb.val()).any();
        self.ar.d.next.fa = (self.xa.val() & self.p.val().mask).any();
        if self.p.val().fwd2 && self.r2.q.val().wrote && (self.r2.q.val().w == self.wa.val()) {
            self.ar.d.next.akn = (self.r2.q.val().nword & self.nmb.val()).any();
            self.ar.d.next.fa = (self.r2.q.val().nword & self.p.val().mask).any();
        }
        if self.p.val().fwd && self.rr.q.val().wrote && (self.rr.q.val().w == self.wa.val()) {
            self.ar.d.next.akn = (self.rr.q.val().nword & self.nmb.val()).any();
            self.ar.d.next.fa = (self.rr.q.val().nword & self.p.val().mask).any();
        }
        if !(self.qnz.val() & (self.one8.val() << self.wa.val())).any() {
            self.ar.d.next.akn = false;
            self.ar.d.next.fa = false;
        }
        self.ar.d.next.ozaq = !(self.qnz.val() & !(self.one8.val() << self.wa.val())).any();
        self.ar.d.next.ozeq = !(self.qnz.val() & !(self.one8.val() << self.q.val().head)).any();
        self.ar.d.next.nz0q = !self.qnz.val().any();
        self.ar.d.next.w0oh = self.one8.val() << self.w0.val();
        self.ar.d.next.w1oh = self.one8.val() << self.w1.val();
        self.ar.d.next.waoh = self.one8.val() << self.wa.val();
        self.ar.d.next.qhoh = self.one8.val() << self.q.val().head;
        self.ar.d.next.h1 = self.qh1.val();
        self.ar.d.next.bz0 = !self.q.val().backoff.any();
        // the word of next + 1: the same word, or the following one when next ends a word
        self.ar.d.next.ws0 = self.ws0l.val();
        self.ar.d.next.ws1 = self.ws0l.val();
        if self.kn.val().get_bits::<5>(0).all() {
            self.ar.d.next.ws1 = self.ws0p.val();
        }
        // serialising ops: the whole result. They enter only behind an empty P/A2/B, so nothing is
        // forwarded to them and the RAM row q1 is current
        self.srs.next = self.q1.q.val();
        self.ar.d.next.sr_ok = false;
        self.bo1.next = self.q1.q.val().backoff;
        if self.q1.q.val().backoff < self.maxbo.val() {
            self.bo1.next = self.q1.q.val().backoff + self.one3.val();
        }
        self.ar.d.next.sr_bo = self.bo1.val();
        self.late.next = self.p.val().now - self.q1.q.val().deadline;
        if self.p.val().op == self.op_timer.val() {
            if self.q1.q.val().armed && !self.late.val().get_bit(31) {
                self.ar.d.next.sr_ok = true;
                self.srs.next.backoff = self.bo1.val();
                self.srs.next.deadline = self.p.val().now + self.p.val().rtb;
            }
        }
        if self.p.val().op == self.op_clear.val() {
            self.srs.next.backoff = self.z3.val();
        }
        if self.p.val().op == self.op_reset.val() {
            self.srs.next.una = self.p.val().psn;
            self.srs.next.nxt = self.p.val().psn;
            self.srs.next.head = self.k3[0].val();
            self.srs.next.armed = false;
            self.srs.next.deadline = self.z32.val();
            self.srs.next.backoff = self.z3.val();
            self.srs.next.nz = self.z8.val();
            self.srs.next.org = self.pp.val().get_bits::<SIB>(0);
            self.srs.next.nw = self.zr.val();
        }
        self.ar.d.next.sr_ns = self.srs.val();

        // ---------------- stage B: resolve with the previous op's registered outcome ----------
        // Every loop input from R is a register: sig / nu / wrn come pre-ANDed with "same path".
        // The ACK arithmetic uses the scoreboard invariant that every outstanding bit was sent
        // (bits of a word lie in [una, next)), so freed = out & mask and the word left is
        // out & !(mask | below): neither depends on the sent mask, which stays off the loop.
        self.a.next = self.ar.q.val();
        self.qa.next = self.a.val().q;
        self.prs.next = self.rns.val();
        self.sig.next = self.rr.q.val().sig;
        self.nu.next = self.rr.q.val().nu;
        self.wrn.next = self.rr.q.val().wrn;
        // the path's fields before this op: the previous op's result when it was on this path
        self.head_k.next = self.qa.val().head;
        self.hk1.next = self.a.val().h1;
        self.nz_k.next = self.qa.val().nz;
        self.armed_k.next = self.qa.val().armed;
        self.bo_k.next = self.qa.val().backoff;
        self.bzk.next = self.a.val().bz0;
        self.dl_k.next = self.qa.val().deadline;
        self.hoh.next = self.a.val().qhoh;
        self.hbk.next = self.a.val().hb0;
        self.weqk.next = self.a.val().weq0;
        self.oza.next = self.a.val().ozaq;
        self.oze.next = self.a.val().ozeq;
        self.nz0.next = self.a.val().nz0q;
        self.phoh.next = self.one8.val() << self.prs.val().head;
        if self.a.val().same {
            self.head_k.next = self.prs.val().head;
            self.hk1.next = self.prs.val().head + self.k3[1].val();
            self.nz_k.next = self.prs.val().nz;
            self.armed_k.next = self.prs.val().armed;
            self.bo_k.next = self.prs.val().backoff;
            self.bzk.next = self.rr.q.val().bz;
            self.dl_k.next = self.prs.val().deadline;
            self.hoh.next = self.phoh.val();
            self.hbk.next = (self.prs.val().nz & self.phoh.val()).any();
            self.weqk.next = self.a.val().wa == self.prs.val().head;
            self.oza.next = !(self.prs.val().nz & !self.a.val().waoh).any();
            self.oze.next = !(self.prs.val().nz & !self.phoh.val()).any();
            self.nz0.next = !self.prs.val().nz.any();
        }
        self.una_k.next = self.qa.val().una;
        if self.sig.val() {
            self.una_k.next = self.a.val().u32c;
        }
        self.nxt_k.next = self.qa.val().nxt;
        if self.nu.val() {
            self.nxt_k.next = self.a.val().nx1;
        }
        if self.sig.val() {
            self.room_k.next = self.a.val().room10;
            self.ge_k.next = self.a.val().ge10;
        } else if self.nu.val() {
            self.room_k.next = self.a.val().room01;
            self.ge_k.next = self.a.val().ge01;
        } else {
            self.room_k.next = self.a.val().room00;
            self.ge_k.next = self.a.val().ge00;
        }
        // the word this op touches (index and one-hot), and whether R holds its current value
        self.fr0.next = self.wrn.val() && (self.rr.q.val().w == self.a.val().w0);
        self.fr1.next = self.wrn.val() && (self.rr.q.val().w == self.a.val().w1);
        self.fra.next = self.wrn.val() && (self.rr.q.val().w == self.a.val().wa);
        self.frh.next = self.wrn.val() && (self.rr.q.val().w == self.prs.val().head);
        self.w.next = self.head_k.val();
        self.woh.next = self.hoh.val();
        self.fromr.next = self.frh.val();
        if self.a.val().is_send {
            self.w.next = self.a.val().w0;
            self.woh.next = self.a.val().w0oh;
            self.fromr.next = self.fr0.val();
            if self.nu.val() {
                self.w.next = self.a.val().w1;
                self.woh.next = self.a.val().w1oh;
                self.fromr.next = self.fr1.val();
            }
        }
        if self.a.val().is_ack {
            self.w.next = self.a.val().wa;
            self.woh.next = self.a.val().waoh;
            self.fromr.next = self.fra.val();
        }
        self.src.next = self.a.val().wh0;
        if self.sig.val() {
            self.src.next = self.a.val().wh1;
        }
        if self.a.val().is_send {
            self.src.next = self.a.val().ws0;
            if self.nu.val() {
                self.src.next = self.a.val().ws1;
            }
        }
        if self.a.val().is_ack {
            self.src.next = self.a.val().wsa;
        }
        self.srcp.next = self.src.val();
        if self.fromr.val() {
            self.src.next = self.rr.q.val().nword;
        }
        self.sent.next = self.a.val().sent0;
        if self.nu.val() {
            self.sent.next = self.a.val().sent1;
        }
        // ACK: the word keeps a bit / frees a bit; R's word reduced in parallel with the select
        self.rk.next = (self.rr.q.val().nword & self.a.val().nmb).any();
        self.rf.next = (self.rr.q.val().nword & self.a.val().mask).any();
        self.nzw.next = self.a.val().akn;
        self.frany.next = self.a.val().fa;
        if self.fra.val() {
            self.nzw.next = self.rk.val();
            self.frany.next = self.rf.val();
        }
        self.inr0.next = (self.a.val().cq && self.a.val().i0q)
            || (self.a.val().cr && self.a.val().i0r)
            || (self.a.val().cu && self.a.val().i0u)
            || (self.a.val().cs && self.a.val().i0s);
        self.inr1.next = (self.a.val().cq && self.a.val().i1q)
            || (self.a.val().cr && self.a.val().i1r)
            || (self.a.val().cu && self.a.val().i1u)
            || (self.a.val().cs && self.a.val().i1s);
        self.valid_ack.next = self.a.val().aligned && self.inr0.val();
        if self.sig.val() {
            self.valid_ack.next = self.a.val().aligned && self.inr1.val();
        }
        self.sendok.next = self.a.val().is_send && self.room_k.val();
        self.ackok.next = self.a.val().is_ack && self.valid_ack.val();
        // word written, and the ring words' non-zero flags after this op
        self.wrote.next = self.sendok.val() || self.ackok.val() || self.a.val().is_exp;
        // the word written, for both sources of its old value (R's word selected last)
        self.msel.next = self.a.val().m0;
        if self.nu.val() {
            self.msel.next = self.a.val().m1;
        }
        self.nwp.next = self.z32.val();
        self.nwr.next = self.z32.val();
        if self.a.val().is_send {
            self.nwp.next = self.srcp.val() | self.msel.val();
            self.nwr.next = self.rr.q.val().nword | self.msel.val();
        }
        if self.a.val().is_ack {
            self.nwp.next = self.srcp.val() & self.a.val().nmb;
            self.nwr.next = self.rr.q.val().nword & self.a.val().nmb;
        }
        self.nword.next = self.nwp.val();
        if self.fromr.val() {
            self.nword.next = self.nwr.val();
        }
        // slide_and_disarm (ack_word, expire_head): the head word is empty after this op
        self.nzh.next = self.hbk.val();
        if self.ackok.val() && self.weqk.val() {
            self.nzh.next = self.nzw.val();
        }
        self.slide.next = false;
        if self.a.val().is_ack {
            self.slide.next = !self.nzh.val() && self.ge_k.val();
        }
        if self.a.val().is_exp {
            self.slide.next = self.ge_k.val();
        }
        // the row after this op: the parts known early first (serialising ops included), the
        // late ones (word flags of an ACK, its progress, the slide) last, so they select last
        self.da.next = self.a.val().now + self.a.val().rsh;
        self.nz_set.next = self.nz_k.val() | self.woh.val();
        self.nz_clr.next = self.nz_k.val() & !self.woh.val();
        self.ns.next = self.qa.val();
        self.ns.next.una = self.una_k.val();
        self.ns.next.nxt = self.nxt_k.val();
        self.ns.next.nw = self.qa.val().nw;
        if self.nu.val() {
            self.ns.next.nw = self.a.val().nw1;
        }
        self.ns.next.head = self.head_k.val();
        self.ns.next.nz = self.nz_k.val();
        self.ns.next.armed = self.armed_k.val();
        self.ns.next.backoff = self.bo_k.val();
        self.ns.next.deadline = self.dl_k.val();
        if self.sendok.val() {
            self.ns.next.nz = self.nz_set.val();
            if self.nu.val() {
                self.ns.next.nxt = self.a.val().nx2;
                self.ns.next.nw = self.a.val().nw2;
            } else {
                self.ns.next.nxt = self.a.val().nx1;
                self.ns.next.nw = self.a.val().nw1;
            }
            if !self.armed_k.val() {
                self.ns.next.armed = true;
                self.ns.next.deadline = self.da.val();
                if self.bzk.val() {
                    self.ns.next.deadline = self.a.val().db;
                }
            }
        }
        if self.a.val().is_ack && !self.valid_ack.val() && self.nz0.val() {
            self.ns.next.armed = false;
        }
        if self.a.val().is_exp {
            self.ns.next.nz = self.nz_clr.val();
            if self.oze.val() {
                self.ns.next.armed = false;
            }
        }
        if self.a.val().is_ser {
            self.ns.next = self.a.val().sr_ns;
        }
        if self.ackok.val() {
            if self.frany.val() {
                self.ns.next.backoff = self.z3.val();
                self.ns.next.deadline = self.a.val().db;
            }
            if self.oza.val() && !self.nzw.val() {
                self.ns.next.armed = false;
            }
            if self.nzw.val() {
                self.ns.next.nz = self.nz_set.val();
            } else {
                self.ns.next.nz = self.nz_clr.val();
            }
        }
        // una after a slide is selected at R (the next op reads the slide from sig, not una)
        if self.slide.val() {
            self.ns.next.head = self.hk1.val();
        }
        self.uh.next = self.a.val().u32c;
        if self.sig.val() {
            self.uh.next = self.a.val().u64c;
        }
        // the record (off the loop)
        self.rec.next.op = self.a.val().op;
        self.rec.next.path = self.a.val().path;
        self.rec.next.ok = self.room_k.val();
        if self.a.val().is_ser {
            self.rec.next.ok = self.a.val().sr_ok;
        }
        self.rec.next.psn = self.a.val().psn;
        if self.a.val().is_send {
            self.rec.next.psn = self.nxt_k.val();
        }
        if self.a.val().is_exp {
            self.rec.next.psn = self.una_k.val();
        }
        self.rec.next.freed = self.z32.val();
        self.rec.next.lost = self.z32.val();
        self.rec.next.forged = false;
        if self.a.val().is_ack {
            self.rec.next.forged = !self.a.val().aligned;
            if self.valid_ack.val() {
                self.rec.next.forged = (self.a.val().mask & !self.sent.val()).any();
                self.rec.next.freed = self.src.val() & self.a.val().mask & self.sent.val();
                self.rec.next.lost = self.src.val() & !self.a.val().mask & self.a.val().below;
            }
        }
        if self.a.val().is_exp {
            self.rec.next.lost = self.src.val();
        }
        self.rec.next.backoff = self.a.val().sr_bo;
        // armed, deadline, empty and room are filled in at R from the registered row
        self.rec.next.armed = false;
        self.rec.next.deadline = self.z32.val();
        self.rec.next.empty = false;
        self.rec.next.room = false;
        self.rr.d.next.v = self.a.val().v;
        self.rr.d.next.path = self.a.val().path;
        self.rr.d.next.ns = self.ns.val();
        self.rr.d.next.slid = self.slide.val();
        self.rr.d.next.sendok = self.sendok.val();
        // the op in A2 enters B next clock (the pipeline never stalls): its "same path" flag
        self.rr.d.next.sig = self.slide.val() && self.p.val().same;
        self.rr.d.next.nu = self.sendok.val() && self.p.val().same;
        self.rr.d.next.wrn = self.wrote.val() && self.a.val().v && self.p.val().same;
        self.rr.d.next.wrote = self.wrote.val() && self.a.val().v;
        self.rr.d.next.w = self.w.val();
        self.rr.d.next.nword = self.nword.val();
        self.rr.d.next.uh = self.uh.val();
        self.rr.d.next.bz = !self.ns.val().backoff.any();
        self.rr.d.next.rec = self.rec.val();

        // ---------------- stage R: write-back and room; R2: room mask and output FIFO ----------
        self.r2.d.next = self.rr.q.val();
        self.r2.d.next.ns = self.rns.val();
        // next - una < SACK_BITS - 32: the allocation's word {nw[SIB-1:5] - head} is not the last
        self.alloc2.next = self.rns.val().nw.get_bits::<WIB>(5) - self.rns.val().head;
        for top in (SACK_WORDS - 1)..SACK_WORDS {
            self.roomr.next = self.alloc2.val() != self.k3[top].val();
        }
        self.rrec2.next = self.rr.q.val().rec;
        self.rrec2.next.room = self.roomr.val();
        self.rrec2.next.armed = self.rns.val().armed;
        self.rrec2.next.deadline = self.rns.val().deadline;
        self.rrec2.next.empty = !self.rns.val().nz.any();
        self.r2.d.next.rec = self.rrec2.val();
        self.st.write_address.next = self.rr.q.val().path;
        self.st.write_data.next = self.rns.val();
        self.st.write_enable.next = self.rr.q.val().v;
        for i in 0..SACK_WORDS {
            self.bank[i].write_address.next = self.rr.q.val().path;
            self.bank[i].write_data.next = self.rr.q.val().nword;
            self.bank[i].write_enable.next = self.rr.q.val().wrote && (self.rr.q.val().w == self.k3[i].val());
        }
        self.rrec.next = self.r2.q.val().rec;
        if self.r2.q.val().v {
            // stored inverted ("no room"), so the power-up value 0 means every path has room
            if self.rrec.val().room {
                self.room.d.next = self.room.q.val() & !(self.one16.val() << self.r2.q.val().path);
            } else {
                self.room.d.next = self.room.q.val() | (self.one16.val() << self.r2.q.val().path);
            }
        }
        self.room_mask.next = !self.room.q.val();
        self.fifo.write_address.next = self.wp.q.val();
        self.fifo.write_data.next = self.rrec.val();
        self.fifo.write_enable.next = self.r2.q.val().v;
        self.fifo.read_address.next = self.rp.q.val();
        self.out.next = self.fifo.read_data.val();
        self.out_valid.next = self.cnt.q.val().any();
        self.pop.next = self.cnt.q.val().any() && self.out_ready.val();
        if self.r2.q.val().v {
            self.wp.d.next = self.wp.q.val() + self.one4.val();
        }
        if self.pop.val() {
            self.rp.d.next = self.rp.q.val() + self.one4.val();
        }
        for _t in 0..FIFO_BRAM_TRIPS {
            // block-RAM FIFO (small configuration): read the head the pointer has after this edge
            self.fifo.read_address.next = self.rp.q.val();
            if self.pop.val() {
                self.fifo.read_address.next = self.rp.q.val() + self.one4.val();
            }
        }
        if self.r2.q.val().v && !self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() + self.one5.val();
        }
        if !self.r2.q.val().v && self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() - self.one5.val();
        }
        self.occ.accept.next = self.accept.val();
        self.occ.pop.next = self.pop.val();
    }
}
