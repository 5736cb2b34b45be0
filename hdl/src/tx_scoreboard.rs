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
//! - [`TX_OP_CLEAR_BACKOFF`]: `clear_backoff(path)`;
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
//! no bitmap word). Stages: P (input, lost-below mask), A1 (RAM read), A2 (forward the two
//! operations whose write-back is still in flight; precompute every wide result for each
//! outcome of the operation then in B: "it slid the window" x "it assigned a PSN", and the
//! reductions of the word as read), B (select with the previous operation's registered outcome;
//! its written word is taken from its result register, reduced in parallel), R (write-back),
//! R2 (room mask), FIFO. The room comparisons rely on the scoreboard invariant 0 <= next - una <= 224 (true
//! from reset: SEND needs room, a slide needs next - una >= 32).

use crate::lutram::{kc, LutRam};
use mroce_model::params::{PATHS, RTO_MAX_BACKOFF, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
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

const _: () = assert!(
    PATHS == 16 && SACK_WORDS == 8 && SACK_WORD_BITS == 32,
    "tx_scoreboard is laid out for 16 x 8 x 32"
);

/// Per-path row.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxState {
    pub una: Bits<32>,
    pub head: Bits<3>,
    pub nxt: Bits<32>,
    pub armed: Bit,
    pub deadline: Bits<32>,
    pub backoff: Bits<3>,
    /// Ring word i is non-zero (a clear flag makes the word read as zero).
    pub nz: Bits<8>,
    /// ISN mod 256: PSN x sits at bit (x - k8) % 32 of ring word ((x - k8) / 32) % 8 for as long
    /// as it is in the window (una and head move together), so no 32-bit subtraction is needed.
    pub k8: Bits<8>,
    /// (next - k8) mod 256: ring word [7:5] and bit [4:0] of the next PSN to send.
    pub nw: Bits<8>,
}

/// One output record.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxOut {
    pub op: Bits<3>,
    pub path: Bits<4>,
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
    pub path: Bits<4>,
    pub psn: Bits<32>,
    pub mask: Bits<32>,
    pub below: Bits<32>,
    pub now: Bits<32>,
    pub rto: Bits<32>,
    pub ser: Bit,
    /// word_psn - 32 (range check against una + 32 when the op in B slides).
    pub psm32: Bits<32>,
    /// (A1) ring word of word_psn, and word_psn is word-aligned (from the row's k8).
    pub wa: Bits<3>,
    pub aligned: Bit,
    pub fwd: Bit,
    pub fwd2: Bit,
    pub same: Bit,
}

/// Stage A2 result: the row as forwarded and every result precomputed per outcome of the op
/// in B (σ: it slid; ν: it assigned a PSN).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxA {
    pub v: Bit,
    pub op: Bits<3>,
    pub path: Bits<4>,
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
    pub nw1: Bits<8>,
    pub nw2: Bits<8>,
    pub nx2: Bits<32>,
    pub u32c: Bits<32>,
    pub u64c: Bits<32>,
    pub w0: Bits<3>,
    pub w1: Bits<3>,
    pub m0: Bits<32>,
    pub m1: Bits<32>,
    pub ws0: Bits<32>,
    pub ws1: Bits<32>,
    pub da: Bits<32>,
    pub db: Bits<32>,
    pub aligned: Bit,
    pub inr0: Bit,
    pub inr1: Bit,
    pub wa: Bits<3>,
    /// The row's head word is non-zero (before the op in B).
    pub hb0: Bit,
    /// wa is the row's head word.
    pub weq0: Bit,
    pub wsa: Bits<32>,
    pub keep0: Bits<32>,
    pub keep1: Bits<32>,
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
    pub path: Bits<4>,
    pub ns: TxState,
    pub slid: Bit,
    pub sendok: Bit,
    pub wrote: Bit,
    pub w: Bits<3>,
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
    pub in_path: Signal<In, Bits<4>>,
    pub in_psn: Signal<In, Bits<32>>,
    pub in_mask: Signal<In, Bits<32>>,
    pub in_lost_below: Signal<In, Bits<32>>,
    pub in_now: Signal<In, Bits<32>>,
    pub in_rto: Signal<In, Bits<32>>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out: Signal<Out, TxOut>,
    /// Bit p: path p has window room (`has_room(p)`).
    pub room_mask: Signal<Out, Bits<16>>,
    st: LutRam<TxState, 4>,
    bank: [LutRam<Bits<32>, 4>; 8],
    fifo: LutRam<TxOut, 4>,
    pr: DFF<TxP>,
    p2: DFF<TxP>,
    q1: DFF<TxState>,
    x1: [DFF<Bits<32>>; 8],
    ar: DFF<TxA>,
    rr: DFF<TxR>,
    r2: DFF<TxR>,
    room: DFF<Bits<16>>,
    wp: DFF<Bits<4>>,
    rp: DFF<Bits<4>>,
    cnt: DFF<Bits<5>>,
    occ: DFF<Bits<5>>,
    // constants
    c1: Constant<Bits<32>>,
    c2: Constant<Bits<32>>,
    c32: Constant<Bits<32>>,
    c64: Constant<Bits<32>>,
    c31: Constant<Bits<32>>,
    c63: Constant<Bits<32>>,
    c_room: Constant<Bits<32>>,
    c_room1: Constant<Bits<32>>,
    c_win: Constant<Bits<32>>,
    c_win1: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    ones32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    one3: Constant<Bits<3>>,
    z3: Constant<Bits<3>>,
    maxbo: Constant<Bits<3>>,
    z8: Constant<Bits<8>>,
    one8: Constant<Bits<8>>,
    two8: Constant<Bits<8>>,
    one16: Constant<Bits<16>>,
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
    depth5: Constant<Bits<5>>,
    k3: [Constant<Bits<3>>; 8],
    k5: [Constant<Bits<5>>; 31],
    pow32: [Constant<Bits<32>>; 31],
    pow32b: [Constant<Bits<32>>; 31],
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
    qnz: Signal<Local, Bits<8>>,
    wv: [Signal<Local, Bits<32>>; 8],
    p: Signal<Local, TxP>,
    m0: Signal<Local, Bits<32>>,
    ws0l: Signal<Local, Bits<32>>,
    ws0p: Signal<Local, Bits<32>>,
    w0p: Signal<Local, Bits<3>>,
    snxt: [Signal<Local, Bits<32>>; 3],
    suna: [Signal<Local, Bits<32>>; 3],
    sa00: [Signal<Local, Bits<32>>; 3],
    sd0: [Signal<Local, Bits<32>>; 3],
    sd1: [Signal<Local, Bits<32>>; 3],
    sspan: [Signal<Local, Bits<9>>; 3],
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
    sth0: [Signal<Local, Bits<32>>; 3],
    sth1: [Signal<Local, Bits<32>>; 3],
    skp0: [Signal<Local, Bits<32>>; 3],
    skp1: [Signal<Local, Bits<32>>; 3],
    qn: Signal<Local, Bits<32>>,
    pp: Signal<Local, Bits<32>>,
    kn: Signal<Local, Bits<8>>,
    ka: Signal<Local, Bits<8>>,
    q1r: Signal<Local, TxState>,
    prp: Signal<Local, Bits<32>>,
    s0: Signal<Local, Bits<32>>,
    s1: Signal<Local, Bits<32>>,
    k0: Signal<Local, Bits<32>>,
    k1: Signal<Local, Bits<32>>,
    w0: Signal<Local, Bits<3>>,
    w1: Signal<Local, Bits<3>>,
    wa: Signal<Local, Bits<3>>,
    qh1: Signal<Local, Bits<3>>,
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
    head_k: Signal<Local, Bits<3>>,
    nz_k: Signal<Local, Bits<8>>,
    armed_k: Signal<Local, Bit>,
    bo_k: Signal<Local, Bits<3>>,
    dl_k: Signal<Local, Bits<32>>,
    una_k: Signal<Local, Bits<32>>,
    nxt_k: Signal<Local, Bits<32>>,
    room_k: Signal<Local, Bit>,
    ge_k: Signal<Local, Bit>,
    w: Signal<Local, Bits<3>>,
    fromr: Signal<Local, Bit>,
    src: Signal<Local, Bits<32>>,
    keep: Signal<Local, Bits<32>>,
    sent: Signal<Local, Bits<32>>,
    rk: Signal<Local, Bit>,
    rk0: Signal<Local, Bit>,
    rk1: Signal<Local, Bit>,
    ak0: Signal<Local, Bit>,
    ak1: Signal<Local, Bit>,
    rf: Signal<Local, Bit>,
    nzw: Signal<Local, Bit>,
    frany: Signal<Local, Bit>,
    valid_ack: Signal<Local, Bit>,
    nword: Signal<Local, Bits<32>>,
    wrote: Signal<Local, Bit>,
    nz_after: Signal<Local, Bits<8>>,
    nzh: Signal<Local, Bit>,
    hbk: Signal<Local, Bit>,
    fra: Signal<Local, Bit>,
    nzwa: Signal<Local, Bit>,
    weqk: Signal<Local, Bit>,
    slide: Signal<Local, Bit>,
    sendok: Signal<Local, Bit>,
    ns: Signal<Local, TxState>,
    rec: Signal<Local, TxOut>,
    // locals: R
    rrec: Signal<Local, TxOut>,
    rrec2: Signal<Local, TxOut>,
    alloc2: Signal<Local, Bits<32>>,
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
                    c31: kc(SACK_WORD_BITS as u64 - 1),
                    c63: kc(2 * SACK_WORD_BITS as u64 - 1),
                    c_room: kc((SACK_BITS - SACK_WORD_BITS) as u64),
                    c_room1: kc((SACK_BITS - SACK_WORD_BITS - 1) as u64),
                    c_win: kc(SACK_BITS as u64),
                    c_win1: kc(SACK_BITS as u64 - 1),
                    z32: kc(0),
                    ones32: kc(0xFFFF_FFFF),
                    one32: kc(1),
                    one3: kc(1),
                    z3: kc(0),
                    maxbo: kc(u64::from(RTO_MAX_BACKOFF)),
                    z8: kc(0),
                    one8: kc(1),
                    two8: kc(2),
                    one16: kc(1),
                    one4: kc(1),
                    one5: kc(1),
                    depth5: kc(TX_FIFO_DEPTH as u64),
                    k3: core::array::from_fn(|i| kc(i as u64)),
                    k5: core::array::from_fn(|i| kc(i as u64)),
                    pow32: core::array::from_fn(|i| kc(1 << i)),
                    pow32b: core::array::from_fn(|i| kc(2 << i)),
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
            occ,
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
            qn,
            pp,
            kn,
            ka,
            q1r,
            prp,
            s0,
            ws0l,
            ws0p,
            w0p,
            snxt,
            suna,
            sa00,
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
            sth0,
            sth1,
            skp0,
            skp1,
            s1,
            k0,
            k1,
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
            dl_k,
            una_k,
            nxt_k,
            room_k,
            ge_k,
            w,
            fromr,
            src,
            keep,
            sent,
            rk,
            rk0,
            rk1,
            ak0,
            ak1,
            rf,
            nzw,
            frany,
            valid_ack,
            nword,
            wrote,
            nz_after,
            nzh,
            hbk,
            fra,
            nzwa,
            weqk,
            slide,
            sendok,
            ns,
            rec,
            rrec,
            rrec2,
            alloc2,
            roomr
        )
    }
}

impl Logic for TxScoreboardHw {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, pr, p2, q1, ar, rr, r2, room, wp, rp, cnt, occ);
        self.st.clock.next = self.clock.val();
        self.fifo.clock.next = self.clock.val();
        for i in 0..8 {
            self.bank[i].clock.next = self.clock.val();
            self.x1[i].clock.next = self.clock.val();
        }

        // ---------------- input / stage P ----------------
        self.in_ser.next = (self.in_op.val() == self.op_timer.val())
            || (self.in_op.val() == self.op_clear.val())
            || (self.in_op.val() == self.op_reset.val());
        self.rdy.next = (self.occ.q.val() < self.depth5.val())
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
            self.pr.d.next.below = (self.one32.val() << self.bdiff.val().get_bits::<5>(0)) - self.one32.val();
        }
        if self.bdiff.val().get_bit(31) {
            self.pr.d.next.below = self.z32.val();
        }
        self.pr.d.next.fwd = false;
        self.pr.d.next.fwd2 = false;
        self.pr.d.next.same = false;

        // ---------------- stage A1: read the row and all 8 words ----------------
        self.st.read_address.next = self.pr.q.val().path;
        self.q1.d.next = self.st.read_data.val();
        for i in 0..8 {
            self.bank[i].read_address.next = self.pr.q.val().path;
            self.x1[i].d.next = self.bank[i].read_data.val();
        }
        self.p2.d.next = self.pr.q.val();
        // k8 changes only on RESET, which drains the pipeline: the RAM row's k8 is current
        self.q1r.next = self.st.read_data.val();
        self.prp.next = self.pr.q.val().psn;
        self.ka.next = self.prp.val().get_bits::<8>(0) - self.q1r.val().k8;
        self.p2.d.next.wa = self.ka.val().get_bits::<3>(5);
        self.p2.d.next.aligned = !self.ka.val().get_bits::<5>(0).any();
        self.p2.d.next.fwd = self.ar.q.val().v && (self.ar.q.val().path == self.pr.q.val().path);
        self.p2.d.next.fwd2 = self.rr.q.val().v && (self.rr.q.val().path == self.pr.q.val().path);
        self.p2.d.next.same = self.p2.q.val().v && (self.p2.q.val().path == self.pr.q.val().path);

        // ---------------- stage A2: forward, then precompute per outcome of the op in B ----------
        self.p.next = self.p2.q.val();
        self.rns.next = self.rr.q.val().ns;
        self.r2ns.next = self.r2.q.val().ns;
        self.q.next = self.q1.q.val();
        if self.p.val().fwd2 {
            self.q.next = self.r2ns.val();
        }
        if self.p.val().fwd {
            self.q.next = self.rns.val();
        }
        self.qnz.next = self.q.val().nz;
        for i in 0..8 {
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
        // allocation next - una (0 ..= 224) and its four variants: (σ, ν) = (slid, sent)
        // Wide comparisons are made on each candidate row (RAM, R, R2) straight from its register
        // and selected afterwards, so the forwarding mux is not in front of the carry chains.
        self.snxt[0].next = self.q1.q.val().nxt;
        self.snxt[1].next = self.rns.val().nxt;
        self.snxt[2].next = self.r2ns.val().nxt;
        self.suna[0].next = self.q1.q.val().una;
        self.suna[1].next = self.rns.val().una;
        self.suna[2].next = self.r2ns.val().una;
        for j in 0..3 {
            self.sa00[j].next = self.snxt[j].val() - self.suna[j].val();
            self.sd0[j].next = self.p.val().psn - self.suna[j].val();
            self.sd1[j].next = self.p.val().psm32 - self.suna[j].val();
            // next - word_psn in 9 bits: wherever the masks are used (aligned, 0 <= word_psn - una
            // < 256, 0 <= next - una <= 224) it lies in -256 ..= 224, so 9 bits are exact
            self.sspan[j].next = self.snxt[j].val().get_bits::<9>(0) - self.p.val().psn.get_bits::<9>(0);
            self.f_r00[j].next = self.sa00[j].val() < self.c_room.val();
            self.f_r01[j].next = self.sa00[j].val() < self.c_room1.val();
            self.f_r10[j].next = self.sa00[j].val() < self.c_win.val();
            self.f_r11[j].next = self.sa00[j].val() < self.c_win1.val();
            self.f_g00[j].next = self.sa00[j].val() >= self.c32.val();
            self.f_g01[j].next = self.sa00[j].val() >= self.c31.val();
            self.f_g10[j].next = self.sa00[j].val() >= self.c64.val();
            self.f_g11[j].next = self.sa00[j].val() >= self.c63.val();
            self.f_i0[j].next = self.sd0[j].val() < self.c_win.val();
            self.f_i1[j].next = self.sd1[j].val() < self.c_win.val();
            // sent mask: PSNs word_psn .. next (a thermometer of next - word_psn, clipped to
            // 0 ..= 32); for next + 1 it is the same mask shifted in by one (empty if negative)
            self.sth0[j].next = self.z32.val();
            self.sth1[j].next = self.one32.val();
            for i in 0..31 {
                if self.k5[i].val() < self.sspan[j].val().get_bits::<5>(0) {
                    self.sth0[j].next = self.sth0[j].val() | self.pow32[i].val();
                    self.sth1[j].next = self.sth1[j].val() | self.pow32b[i].val();
                }
            }
            if self.sspan[j].val().get_bits::<3>(5).any() {
                self.sth0[j].next = self.ones32.val();
                self.sth1[j].next = self.ones32.val();
            }
            if self.sspan[j].val().get_bit(8) {
                self.sth0[j].next = self.z32.val();
                self.sth1[j].next = self.z32.val();
            }
            self.skp0[j].next = !((self.p.val().mask & self.sth0[j].val()) | (!self.p.val().mask & self.p.val().below));
            self.skp1[j].next = !((self.p.val().mask & self.sth1[j].val()) | (!self.p.val().mask & self.p.val().below));
        }
        self.s0.next = self.sth0[0].val();
        self.s1.next = self.sth1[0].val();
        self.k0.next = self.skp0[0].val();
        self.k1.next = self.skp1[0].val();
        if self.p.val().fwd2 {
            self.s0.next = self.sth0[2].val();
            self.s1.next = self.sth1[2].val();
            self.k0.next = self.skp0[2].val();
            self.k1.next = self.skp1[2].val();
        }
        if self.p.val().fwd {
            self.s0.next = self.sth0[1].val();
            self.s1.next = self.sth1[1].val();
            self.k0.next = self.skp0[1].val();
            self.k1.next = self.skp1[1].val();
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
        self.ar.d.next.inr0 = self.f_i0[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.inr0 = self.f_i0[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.inr0 = self.f_i0[1].val();
        }
        self.ar.d.next.inr1 = self.f_i1[0].val();
        if self.p.val().fwd2 {
            self.ar.d.next.inr1 = self.f_i1[2].val();
        }
        if self.p.val().fwd {
            self.ar.d.next.inr1 = self.f_i1[1].val();
        }
        self.ar.d.next.nx1 = self.q.val().nxt + self.c1.val();
        self.ar.d.next.nx2 = self.q.val().nxt + self.c2.val();
        self.ar.d.next.u32c = self.q.val().una + self.c32.val();
        self.ar.d.next.u64c = self.q.val().una + self.c64.val();
        // SEND: the PSN's word and bit for both values of next
        self.qn.next = self.q.val().nxt;
        self.pp.next = self.p.val().psn;
        self.kn.next = self.q.val().nw;
        self.ar.d.next.nw1 = self.q.val().nw + self.one8.val();
        self.ar.d.next.nw2 = self.q.val().nw + self.two8.val();
        self.w0.next = self.kn.val().get_bits::<3>(5);
        self.w1.next = self.w0.val();
        if self.kn.val().get_bits::<5>(0).all() {
            self.w1.next = self.w0.val() + self.one3.val();
        }
        self.ar.d.next.w0 = self.w0.val();
        self.ar.d.next.w1 = self.w1.val();
        self.m0.next = self.one32.val() << self.kn.val().get_bits::<5>(0);
        self.ar.d.next.m0 = self.m0.val();
        self.ar.d.next.m1 = self.m0.val() << self.c1.val();
        if self.m0.val().get_bit(31) {
            self.ar.d.next.m1 = self.one32.val();
        }
        self.ar.d.next.da = self.p.val().now + (self.p.val().rto << self.q.val().backoff);
        self.ar.d.next.db = self.p.val().now + self.p.val().rto;
        // ACK_WORD: alignment, range for both una, sent masks for both next
        self.ar.d.next.aligned = self.p.val().aligned;
        self.wa.next = self.p.val().wa;
        self.ar.d.next.wa = self.wa.val();
        // stage B's slide test, taken off its path: the head word's flag and "ack word = head"
        self.ar.d.next.hb0 = false;
        for i in 0..8 {
            if self.q.val().head == self.k3[i].val() {
                self.ar.d.next.hb0 = self.qnz.val().get_bit(i);
            }
        }
        self.ar.d.next.weq0 = self.wa.val() == self.q.val().head;
        self.ar.d.next.sent0 = self.s0.val();
        self.ar.d.next.sent1 = self.s1.val();
        self.ar.d.next.keep0 = self.k0.val();
        self.ar.d.next.keep1 = self.k1.val();
        // words as read (before the op in B): at w0, w1, wa, head, head + 1
        self.qh1.next = self.q.val().head + self.one3.val();
        self.ws0l.next = self.z32.val();
        self.ws0p.next = self.z32.val();
        self.w0p.next = self.w0.val() + self.one3.val();
        self.wsa.next = self.z32.val();
        self.ar.d.next.wh0 = self.z32.val();
        self.ar.d.next.wh1 = self.z32.val();
        for i in 0..8 {
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
        // the word of next + 1: the same word, or the following one when next ends a word
        self.ar.d.next.ws0 = self.ws0l.val();
        self.ar.d.next.ws1 = self.ws0l.val();
        if self.kn.val().get_bits::<5>(0).all() {
            self.ar.d.next.ws1 = self.ws0p.val();
        }
        // serialising ops (no same-path op ahead): the whole result
        self.srs.next = self.q.val();
        self.ar.d.next.sr_ok = false;
        self.bo1.next = self.q.val().backoff;
        if self.q.val().backoff < self.maxbo.val() {
            self.bo1.next = self.q.val().backoff + self.one3.val();
        }
        self.ar.d.next.sr_bo = self.bo1.val();
        self.late.next = self.p.val().now - self.q.val().deadline;
        if self.p.val().op == self.op_timer.val() {
            if self.q.val().armed && !self.late.val().get_bit(31) {
                self.ar.d.next.sr_ok = true;
                self.srs.next.backoff = self.bo1.val();
                self.srs.next.deadline = self.p.val().now + (self.p.val().rto << self.bo1.val());
            }
        }
        if self.p.val().op == self.op_clear.val() {
            self.srs.next.backoff = self.z3.val();
        }
        if self.p.val().op == self.op_reset.val() {
            self.srs.next.una = self.p.val().psn;
            self.srs.next.nxt = self.p.val().psn;
            self.srs.next.head = self.z3.val();
            self.srs.next.armed = false;
            self.srs.next.deadline = self.z32.val();
            self.srs.next.backoff = self.z3.val();
            self.srs.next.nz = self.z8.val();
            self.srs.next.k8 = self.pp.val().get_bits::<8>(0);
            self.srs.next.nw = self.z8.val();
        }
        self.ar.d.next.sr_ns = self.srs.val();

        // ---------------- stage B: resolve with the previous op's registered outcome ----------
        self.a.next = self.ar.q.val();
        self.qa.next = self.a.val().q;
        self.prs.next = self.rns.val();
        self.sig.next = self.a.val().same && self.rr.q.val().slid;
        self.nu.next = self.a.val().same && self.rr.q.val().sendok;
        // the path's fields before this op: the previous op's result when it was on this path
        self.head_k.next = self.qa.val().head;
        self.nz_k.next = self.qa.val().nz;
        self.armed_k.next = self.qa.val().armed;
        self.bo_k.next = self.qa.val().backoff;
        self.dl_k.next = self.qa.val().deadline;
        if self.a.val().same {
            self.head_k.next = self.prs.val().head;
            self.nz_k.next = self.prs.val().nz;
            self.armed_k.next = self.prs.val().armed;
            self.bo_k.next = self.prs.val().backoff;
            self.dl_k.next = self.prs.val().deadline;
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
        // the word this op touches, and where its current value is
        self.w.next = self.head_k.val();
        if self.a.val().is_send {
            self.w.next = self.a.val().w0;
            if self.nu.val() {
                self.w.next = self.a.val().w1;
            }
        }
        if self.a.val().is_ack {
            self.w.next = self.a.val().wa;
        }
        self.fromr.next = self.a.val().same && self.rr.q.val().wrote && (self.rr.q.val().w == self.w.val());
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
        if self.fromr.val() {
            self.src.next = self.rr.q.val().nword;
        }
        self.keep.next = self.a.val().keep0;
        self.sent.next = self.a.val().sent0;
        if self.nu.val() {
            self.keep.next = self.a.val().keep1;
            self.sent.next = self.a.val().sent1;
        }
        // reductions of the previous op's word, in parallel with the selection
        // both outcomes reduced in parallel, selected last
        self.rk0.next = (self.rr.q.val().nword & self.a.val().keep0).any();
        self.rk1.next = (self.rr.q.val().nword & self.a.val().keep1).any();
        self.ak0.next = (self.a.val().wsa & self.a.val().keep0).any();
        self.ak1.next = (self.a.val().wsa & self.a.val().keep1).any();
        self.rk.next = self.rk0.val();
        self.nzw.next = self.ak0.val();
        if self.nu.val() {
            self.rk.next = self.rk1.val();
            self.nzw.next = self.ak1.val();
        }
        self.rf.next = (self.rr.q.val().nword & self.a.val().mask & self.sent.val()).any();
        self.frany.next = (self.a.val().wsa & self.a.val().mask & self.sent.val()).any();
        if self.fromr.val() {
            self.nzw.next = self.rk.val();
            self.frany.next = self.rf.val();
        }
        self.valid_ack.next = self.a.val().aligned && self.a.val().inr0;
        if self.sig.val() {
            self.valid_ack.next = self.a.val().aligned && self.a.val().inr1;
        }
        // defaults: nothing changes
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
        self.wrote.next = false;
        self.nword.next = self.z32.val();
        self.slide.next = false;
        self.sendok.next = false;
        self.nz_after.next = self.nz_k.val();
        self.rec.next.op = self.a.val().op;
        self.rec.next.path = self.a.val().path;
        self.rec.next.ok = false;
        self.rec.next.psn = self.a.val().psn;
        self.rec.next.freed = self.z32.val();
        self.rec.next.lost = self.z32.val();
        self.rec.next.forged = false;
        self.rec.next.backoff = self.bo_k.val();
        if self.a.val().is_send {
            self.rec.next.ok = self.room_k.val();
            self.rec.next.psn = self.nxt_k.val();
            if self.room_k.val() {
                self.sendok.next = true;
                self.wrote.next = true;
                if self.nu.val() {
                    self.nword.next = self.src.val() | self.a.val().m1;
                    self.ns.next.nxt = self.a.val().nx2;
                    self.ns.next.nw = self.a.val().nw2;
                } else {
                    self.nword.next = self.src.val() | self.a.val().m0;
                    self.ns.next.nxt = self.a.val().nx1;
                    self.ns.next.nw = self.a.val().nw1;
                }
                self.nz_after.next = self.nz_k.val() | (self.one8.val() << self.w.val());
                if !self.armed_k.val() {
                    self.ns.next.armed = true;
                    self.ns.next.deadline = self.a.val().da;
                    if !self.bo_k.val().any() {
                        self.ns.next.deadline = self.a.val().db;
                    }
                }
            }
        }
        if self.a.val().is_ack {
            self.rec.next.forged = !self.a.val().aligned;
            if self.valid_ack.val() {
                self.rec.next.forged = (self.a.val().mask & !self.sent.val()).any();
                self.wrote.next = true;
                self.nword.next = self.src.val() & self.keep.val();
                self.rec.next.freed = self.src.val() & self.a.val().mask & self.sent.val();
                self.rec.next.lost = self.src.val() & !self.a.val().mask & self.a.val().below;
                if self.nzw.val() {
                    self.nz_after.next = self.nz_k.val() | (self.one8.val() << self.w.val());
                } else {
                    self.nz_after.next = self.nz_k.val() & !(self.one8.val() << self.w.val());
                }
                if self.frany.val() {
                    self.ns.next.backoff = self.z3.val();
                    self.ns.next.deadline = self.a.val().db;
                }
            }
        }
        if self.a.val().is_exp {
            self.rec.next.psn = self.una_k.val();
            self.rec.next.lost = self.src.val();
            self.wrote.next = true;
            self.nz_after.next = self.nz_k.val() & !(self.one8.val() << self.w.val());
        }
        // slide_and_disarm (ack_word, expire_head)
        // the head word is non-zero after this op (only ack_word and expire_head slide): expire
        // empties it; an ack that wrote it leaves nzw; otherwise its flag, both candidates (RAM
        // row or the previous op's result) taken from registers
        self.hbk.next = self.a.val().hb0;
        self.weqk.next = self.a.val().weq0;
        if self.a.val().same {
            for i in 0..8 {
                if self.prs.val().head == self.k3[i].val() {
                    self.hbk.next = self.prs.val().nz.get_bit(i);
                }
            }
            self.weqk.next = self.a.val().wa == self.prs.val().head;
        }
        self.nzh.next = self.hbk.val();
        // for an ack the written word is wa: its "from R" test skips the word-index multiplexer
        self.fra.next = self.a.val().same && self.rr.q.val().wrote && (self.rr.q.val().w == self.a.val().wa);
        self.nzwa.next = self.ak0.val();
        if self.nu.val() {
            self.nzwa.next = self.ak1.val();
        }
        if self.fra.val() {
            self.nzwa.next = self.rk.val();
        }
        if self.a.val().is_ack && self.valid_ack.val() && self.weqk.val() {
            self.nzh.next = self.nzwa.val();
        }
        if self.a.val().is_exp {
            self.nzh.next = false;
        }
        if self.a.val().is_ack || self.a.val().is_exp {
            self.slide.next = !self.nzh.val() && self.ge_k.val();
            if !self.nz_after.val().any() {
                self.ns.next.armed = false;
            }
        }
        if self.slide.val() {
            self.ns.next.head = self.head_k.val() + self.one3.val();
            self.ns.next.una = self.a.val().u32c;
            if self.sig.val() {
                self.ns.next.una = self.a.val().u64c;
            }
        }
        self.ns.next.nz = self.nz_after.val();
        if self.a.val().is_ser {
            self.ns.next = self.a.val().sr_ns;
            self.rec.next.ok = self.a.val().sr_ok;
            self.rec.next.backoff = self.a.val().sr_bo;
        }
        self.rec.next.armed = self.ns.val().armed;
        self.rec.next.deadline = self.ns.val().deadline;
        self.rec.next.empty = !self.ns.val().nz.any();
        self.rec.next.room = false;
        self.rr.d.next.v = self.a.val().v;
        self.rr.d.next.path = self.a.val().path;
        self.rr.d.next.ns = self.ns.val();
        self.rr.d.next.slid = self.slide.val();
        self.rr.d.next.sendok = self.sendok.val();
        self.rr.d.next.wrote = self.wrote.val() && self.a.val().v;
        self.rr.d.next.w = self.w.val();
        self.rr.d.next.nword = self.nword.val();
        self.rr.d.next.rec = self.rec.val();

        // ---------------- stage R: write-back and room; R2: room mask and output FIFO ----------
        self.r2.d.next = self.rr.q.val();
        self.alloc2.next = self.rns.val().nxt - self.rns.val().una;
        self.roomr.next = self.alloc2.val() < self.c_room.val();
        self.rrec2.next = self.rr.q.val().rec;
        self.rrec2.next.room = self.roomr.val();
        self.r2.d.next.rec = self.rrec2.val();
        self.st.write_address.next = self.rr.q.val().path;
        self.st.write_data.next = self.rns.val();
        self.st.write_enable.next = self.rr.q.val().v;
        for i in 0..8 {
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
        if self.r2.q.val().v && !self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() + self.one5.val();
        }
        if !self.r2.q.val().v && self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() - self.one5.val();
        }
        if self.accept.val() && !self.pop.val() {
            self.occ.d.next = self.occ.q.val() + self.one5.val();
        }
        if !self.accept.val() && self.pop.val() {
            self.occ.d.next = self.occ.q.val() - self.one5.val();
        }
    }
}
