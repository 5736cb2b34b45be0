//! `tx_scoreboard`: the transmit scoreboard of `mroce_model::tx_scoreboard` as a RustHDL block.
//!
//! One operation per clock (II = 1) on any mix of paths and operations, fixed latency
//! [`TX_LATENCY`] from acceptance to `out_valid` (output FIFO empty, `out_ready` high).
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
//! operations whose write-back is still in flight), B (the transaction, with an exact bypass of
//! the previous operation's result when it is on the same path), R (write-back), FIFO.

use crate::lutram::{kc, LutRam};
use mroce_model::params::{PATHS, RTO_MAX_BACKOFF, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record (FIFO empty, `out_ready` high).
pub const TX_LATENCY: usize = 5;
/// Clocks from acceptance until `room_mask` reflects the operation.
pub const TX_ROOM_LAG: usize = 4;
/// Output FIFO depth (bound on accepted, undelivered operations).
pub const TX_FIFO_DEPTH: usize = 16;
/// `in_op` codes.
pub const TX_OP_SEND: u64 = 0;
pub const TX_OP_ACK_WORD: u64 = 1;
pub const TX_OP_EXPIRE: u64 = 2;
pub const TX_OP_TIMER: u64 = 3;
pub const TX_OP_CLEAR_BACKOFF: u64 = 4;
pub const TX_OP_RESET: u64 = 5;

const _: () = assert!(PATHS == 16 && SACK_WORDS == 8 && SACK_WORD_BITS == 32, "tx_scoreboard is laid out for 16 x 8 x 32");

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

/// Operation register (stages P, A1/A2).
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
    pub fwd: Bit,
    pub fwd2: Bit,
    pub same: Bit,
}

/// Stage B result (the row after the operation, and the word it wrote).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxR {
    pub v: Bit,
    pub path: Bits<4>,
    pub ns: TxState,
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
    ar: DFF<TxP>,
    aq: DFF<TxState>,
    ax: [DFF<Bits<32>>; 8],
    rr: DFF<TxR>,
    r2: DFF<TxR>,
    room: DFF<Bits<16>>,
    wp: DFF<Bits<4>>,
    rp: DFF<Bits<4>>,
    cnt: DFF<Bits<5>>,
    occ: DFF<Bits<5>>,
    // constants
    c1: Constant<Bits<32>>,
    c32: Constant<Bits<32>>,
    c_room: Constant<Bits<32>>,
    c_win: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    ones32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    one3: Constant<Bits<3>>,
    z3: Constant<Bits<3>>,
    maxbo: Constant<Bits<3>>,
    z8: Constant<Bits<8>>,
    one8: Constant<Bits<8>>,
    one16: Constant<Bits<16>>,
    ones16: Constant<Bits<16>>,
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
    depth5: Constant<Bits<5>>,
    k3: [Constant<Bits<3>>; 8],
    op_send: Constant<Bits<3>>,
    op_ack: Constant<Bits<3>>,
    op_expire: Constant<Bits<3>>,
    op_timer: Constant<Bits<3>>,
    op_clear: Constant<Bits<3>>,
    op_reset: Constant<Bits<3>>,
    // locals
    rdy: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    bdiff: Signal<Local, Bits<32>>,
    rns: Signal<Local, TxState>,
    r2ns: Signal<Local, TxState>,
    q: Signal<Local, TxState>,
    qnz: Signal<Local, Bits<8>>,
    s: Signal<Local, TxState>,
    snz: Signal<Local, Bits<8>>,
    op: Signal<Local, TxP>,
    words: [Signal<Local, Bits<32>>; 8],
    alloc: Signal<Local, Bits<32>>,
    hasroom: Signal<Local, Bit>,
    d: Signal<Local, Bits<32>>,
    span: Signal<Local, Bits<32>>,
    sent: Signal<Local, Bits<32>>,
    w: Signal<Local, Bits<3>>,
    out_w: Signal<Local, Bits<32>>,
    freed: Signal<Local, Bits<32>>,
    lost: Signal<Local, Bits<32>>,
    nword: Signal<Local, Bits<32>>,
    wrote: Signal<Local, Bit>,
    ns: Signal<Local, TxState>,
    nnz: Signal<Local, Bits<8>>,
    rec: Signal<Local, TxOut>,
    bo1: Signal<Local, Bits<3>>,
    late: Signal<Local, Bits<32>>,
    alloc2: Signal<Local, Bits<32>>,
    nzh: Signal<Local, Bit>,
    rrec: Signal<Local, TxOut>,
}

impl Default for TxScoreboardHw {
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
            st: Default::default(),
            bank: Default::default(),
            fifo: Default::default(),
            pr: Default::default(),
            p2: Default::default(),
            q1: Default::default(),
            x1: Default::default(),
            ar: Default::default(),
            aq: Default::default(),
            ax: Default::default(),
            rr: Default::default(),
            r2: Default::default(),
            room: Default::default(),
            wp: Default::default(),
            rp: Default::default(),
            cnt: Default::default(),
            occ: Default::default(),
            c1: kc(1),
            c32: kc(SACK_WORD_BITS as u64),
            c_room: kc((SACK_BITS - SACK_WORD_BITS) as u64),
            c_win: kc(SACK_BITS as u64),
            z32: kc(0),
            ones32: kc(0xFFFF_FFFF),
            one32: kc(1),
            one3: kc(1),
            z3: kc(0),
            maxbo: kc(u64::from(RTO_MAX_BACKOFF)),
            z8: kc(0),
            one8: kc(1),
            one16: kc(1),
            ones16: kc(0xFFFF),
            one4: kc(1),
            one5: kc(1),
            depth5: kc(TX_FIFO_DEPTH as u64),
            k3: core::array::from_fn(|i| kc(i as u64)),
            op_send: kc(TX_OP_SEND),
            op_ack: kc(TX_OP_ACK_WORD),
            op_expire: kc(TX_OP_EXPIRE),
            op_timer: kc(TX_OP_TIMER),
            op_clear: kc(TX_OP_CLEAR_BACKOFF),
            op_reset: kc(TX_OP_RESET),
            rdy: Default::default(),
            accept: Default::default(),
            pop: Default::default(),
            bdiff: Default::default(),
            rns: Default::default(),
            r2ns: Default::default(),
            q: Default::default(),
            qnz: Default::default(),
            s: Default::default(),
            snz: Default::default(),
            op: Default::default(),
            words: Default::default(),
            alloc: Default::default(),
            hasroom: Default::default(),
            d: Default::default(),
            span: Default::default(),
            sent: Default::default(),
            w: Default::default(),
            out_w: Default::default(),
            freed: Default::default(),
            lost: Default::default(),
            nword: Default::default(),
            wrote: Default::default(),
            ns: Default::default(),
            nnz: Default::default(),
            rec: Default::default(),
            bo1: Default::default(),
            late: Default::default(),
            alloc2: Default::default(),
            nzh: Default::default(),
            rrec: Default::default(),
        }
    }
}

impl Logic for TxScoreboardHw {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, pr, p2, q1, ar, aq, rr, r2, wp, rp, cnt, occ);
        self.room.clock.next = self.clock.val();
        self.room.d.next = self.room.q.val();
        self.st.clock.next = self.clock.val();
        self.fifo.clock.next = self.clock.val();
        for i in 0..8 {
            self.bank[i].clock.next = self.clock.val();
            self.x1[i].clock.next = self.clock.val();
            self.ax[i].clock.next = self.clock.val();
        }

        // ---------------- input / stage P ----------------
        self.rdy.next = self.occ.q.val() < self.depth5.val();
        self.in_ready.next = self.rdy.val();
        self.accept.next = self.in_valid.val() && self.rdy.val();
        self.pr.d.next.v = self.accept.val();
        self.pr.d.next.op = self.in_op.val();
        self.pr.d.next.path = self.in_path.val();
        self.pr.d.next.psn = self.in_psn.val();
        self.pr.d.next.mask = self.in_mask.val();
        self.pr.d.next.now = self.in_now.val();
        self.pr.d.next.rto = self.in_rto.val();
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

        // ---------------- stage A1: read row and all 8 words ----------------
        self.st.read_address.next = self.pr.q.val().path;
        self.q1.d.next = self.st.read_data.val();
        for i in 0..8 {
            self.bank[i].read_address.next = self.pr.q.val().path;
            self.x1[i].d.next = self.bank[i].read_data.val();
        }
        self.p2.d.next = self.pr.q.val();
        self.p2.d.next.fwd = self.ar.q.val().v && (self.ar.q.val().path == self.pr.q.val().path);
        self.p2.d.next.fwd2 = self.rr.q.val().v && (self.rr.q.val().path == self.pr.q.val().path);
        self.p2.d.next.same = self.p2.q.val().v && (self.p2.q.val().path == self.pr.q.val().path);

        // ---------------- stage A2: forward the two write-backs in flight ----------------
        self.rns.next = self.rr.q.val().ns;
        self.r2ns.next = self.r2.q.val().ns;
        self.q.next = self.q1.q.val();
        if self.p2.q.val().fwd2 {
            self.q.next = self.r2ns.val();
        }
        if self.p2.q.val().fwd {
            self.q.next = self.rns.val();
        }
        self.qnz.next = self.q.val().nz;
        for i in 0..8 {
            self.ax[i].d.next = self.x1[i].q.val();
            if self.p2.q.val().fwd2 && self.r2.q.val().wrote && (self.r2.q.val().w == self.k3[i].val()) {
                self.ax[i].d.next = self.r2.q.val().nword;
            }
            if self.p2.q.val().fwd && self.rr.q.val().wrote && (self.rr.q.val().w == self.k3[i].val()) {
                self.ax[i].d.next = self.rr.q.val().nword;
            }
            if !self.qnz.val().get_bit(i) {
                self.ax[i].d.next = self.z32.val();
            }
        }
        self.aq.d.next = self.q.val();
        self.ar.d.next = self.p2.q.val();

        // ---------------- stage B: the transaction (bypass of the previous op on this path) ----
        self.op.next = self.ar.q.val();
        self.s.next = self.aq.q.val();
        for i in 0..8 {
            self.words[i].next = self.ax[i].q.val();
        }
        if self.ar.q.val().same {
            self.s.next = self.rns.val();
            for i in 0..8 {
                if self.rr.q.val().wrote && (self.rr.q.val().w == self.k3[i].val()) {
                    self.words[i].next = self.rr.q.val().nword;
                }
            }
        }
        self.snz.next = self.s.val().nz;
        for i in 0..8 {
            if !self.snz.val().get_bit(i) {
                self.words[i].next = self.z32.val();
            }
        }
        self.alloc.next = self.s.val().nxt - self.s.val().una;
        self.hasroom.next = self.alloc.val() < self.c_room.val();
        self.ns.next = self.s.val();
        self.nnz.next = self.s.val().nz;
        self.wrote.next = false;
        self.w.next = self.s.val().head;
        self.nword.next = self.z32.val();
        self.freed.next = self.z32.val();
        self.lost.next = self.z32.val();
        self.rec.next.op = self.op.val().op;
        self.rec.next.path = self.op.val().path;
        self.rec.next.ok = false;
        self.rec.next.psn = self.op.val().psn;
        self.rec.next.forged = false;
        self.rec.next.backoff = self.s.val().backoff;
        self.d.next = self.op.val().psn - self.s.val().una;
        self.span.next = self.s.val().nxt - self.op.val().psn;
        self.sent.next = self.ones32.val();
        if !(self.span.val().get_bits::<27>(5).any()) {
            self.sent.next = (self.one32.val() << self.span.val().get_bits::<5>(0)) - self.one32.val();
        }
        if self.span.val().get_bit(31) {
            self.sent.next = self.z32.val();
        }
        if self.op.val().op == self.op_send.val() {
            self.w.next = self.s.val().head + self.alloc.val().get_bits::<3>(5);
        }
        if self.op.val().op == self.op_ack.val() {
            self.w.next = self.s.val().head + self.d.val().get_bits::<3>(5);
        }
        self.out_w.next = self.z32.val();
        for i in 0..8 {
            if self.w.val() == self.k3[i].val() {
                self.out_w.next = self.words[i].val();
            }
        }
        self.bo1.next = self.s.val().backoff;
        if self.s.val().backoff < self.maxbo.val() {
            self.bo1.next = self.s.val().backoff + self.one3.val();
        }
        self.late.next = self.op.val().now - self.s.val().deadline;
        if self.op.val().op == self.op_send.val() {
            self.rec.next.ok = self.hasroom.val();
            self.rec.next.psn = self.s.val().nxt;
            if self.hasroom.val() {
                self.wrote.next = true;
                self.nword.next = self.out_w.val() | (self.one32.val() << self.alloc.val().get_bits::<5>(0));
                self.ns.next.nxt = self.s.val().nxt + self.c1.val();
                if !self.s.val().armed {
                    self.ns.next.armed = true;
                    self.ns.next.deadline = self.op.val().now + (self.op.val().rto << self.s.val().backoff);
                }
            }
        }
        if self.op.val().op == self.op_ack.val() {
            if self.d.val().get_bits::<5>(0).any() {
                self.rec.next.forged = true;
            } else if !self.d.val().get_bit(31) && (self.d.val() < self.c_win.val()) {
                self.rec.next.forged = (self.op.val().mask & !self.sent.val()).any();
                self.freed.next = self.out_w.val() & self.op.val().mask & self.sent.val();
                self.lost.next = self.out_w.val() & !self.op.val().mask & self.op.val().below;
                self.wrote.next = true;
                self.nword.next = self.out_w.val() & !(self.freed.val() | self.lost.val());
                if self.freed.val().any() {
                    self.ns.next.backoff = self.z3.val();
                    self.ns.next.deadline = self.op.val().now + self.op.val().rto;
                }
            }
        }
        if self.op.val().op == self.op_expire.val() {
            self.rec.next.psn = self.s.val().una;
            self.lost.next = self.out_w.val();
            self.wrote.next = true;
            self.nword.next = self.z32.val();
        }
        // word non-zero flags after the write
        if self.wrote.val() {
            if self.nword.val().any() {
                self.nnz.next = self.nnz.val() | (self.one8.val() << self.w.val());
            } else {
                self.nnz.next = self.nnz.val() & !(self.one8.val() << self.w.val());
            }
        }
        // slide_and_disarm (ack_word, expire_head)
        self.nzh.next = self.nnz.val().get_bit(self.s.val().head.index());
        if (self.op.val().op == self.op_ack.val()) || (self.op.val().op == self.op_expire.val()) {
            if !self.nzh.val() && (self.alloc.val() >= self.c32.val()) {
                self.ns.next.head = self.s.val().head + self.one3.val();
                self.ns.next.una = self.s.val().una + self.c32.val();
            }
            if !self.nnz.val().any() {
                self.ns.next.armed = false;
            }
        }
        if self.op.val().op == self.op_timer.val() {
            if self.s.val().armed && !self.late.val().get_bit(31) {
                self.rec.next.ok = true;
                self.rec.next.backoff = self.bo1.val();
                self.ns.next.backoff = self.bo1.val();
                self.ns.next.deadline = self.op.val().now + (self.op.val().rto << self.bo1.val());
            }
        }
        if self.op.val().op == self.op_clear.val() {
            self.ns.next.backoff = self.z3.val();
        }
        self.ns.next.nz = self.nnz.val();
        if self.op.val().op == self.op_reset.val() {
            self.ns.next.una = self.op.val().psn;
            self.ns.next.nxt = self.op.val().psn;
            self.ns.next.head = self.z3.val();
            self.ns.next.armed = false;
            self.ns.next.deadline = self.z32.val();
            self.ns.next.backoff = self.z3.val();
            self.ns.next.nz = self.z8.val();
        }
        self.alloc2.next = self.ns.val().nxt - self.ns.val().una;
        self.rec.next.freed = self.freed.val();
        self.rec.next.lost = self.lost.val();
        self.rec.next.armed = self.ns.val().armed;
        self.rec.next.deadline = self.ns.val().deadline;
        self.rec.next.empty = !self.ns.val().nz.any();
        self.rec.next.room = self.alloc2.val() < self.c_room.val();
        self.rr.d.next.v = self.ar.q.val().v;
        self.rr.d.next.path = self.ar.q.val().path;
        self.rr.d.next.ns = self.ns.val();
        self.rr.d.next.wrote = self.wrote.val() && self.ar.q.val().v;
        self.rr.d.next.w = self.w.val();
        self.rr.d.next.nword = self.nword.val();
        self.rr.d.next.rec = self.rec.val();

        // ---------------- stage R: write-back, room mask, output FIFO ----------------
        self.r2.d.next = self.rr.q.val();
        self.rrec.next = self.rr.q.val().rec;
        self.st.write_address.next = self.rrec.val().path;
        self.st.write_data.next = self.rns.val();
        self.st.write_enable.next = self.rr.q.val().v;
        for i in 0..8 {
            self.bank[i].write_address.next = self.rrec.val().path;
            self.bank[i].write_data.next = self.rr.q.val().nword;
            self.bank[i].write_enable.next = self.rr.q.val().wrote && (self.rr.q.val().w == self.k3[i].val());
        }
        if self.rr.q.val().v {
            // stored inverted ("no room"), so the power-up value 0 means every path has room
            if self.rrec.val().room {
                self.room.d.next = self.room.q.val() & !(self.one16.val() << self.rrec.val().path);
            } else {
                self.room.d.next = self.room.q.val() | (self.one16.val() << self.rrec.val().path);
            }
        }
        self.room_mask.next = !self.room.q.val();
        self.fifo.write_address.next = self.wp.q.val();
        self.fifo.write_data.next = self.rrec.val();
        self.fifo.write_enable.next = self.rr.q.val().v;
        self.fifo.read_address.next = self.rp.q.val();
        self.out.next = self.fifo.read_data.val();
        self.out_valid.next = self.cnt.q.val().any();
        self.pop.next = self.cnt.q.val().any() && self.out_ready.val();
        if self.rr.q.val().v {
            self.wp.d.next = self.wp.q.val() + self.one4.val();
        }
        if self.pop.val() {
            self.rp.d.next = self.rp.q.val() + self.one4.val();
        }
        if self.rr.q.val().v && !self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() + self.one5.val();
        }
        if !self.rr.q.val().v && self.pop.val() {
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
