//! `path_selector`: the path selector of `mroce_model::path_selector` as a RustHDL block.
//!
//! Per-path state is in flip-flops (every path's eligibility is evaluated on every `select`).
//! One operation per clock (II = 1), latency [`SEL_LATENCY`] to `out_valid`; the operation is
//! computed in one stage from the registered state (no forwarding needed), which makes this
//! block's Fmax the single-cycle cost of the model's `credit` (see the closing report).
//!
//! # Operations (`in_op`), fields `in_path`, `in_a`, `in_b`, `in_flag`, `in_room`
//! - [`SEL_OP_SELECT`]: `select(in_room)`: `ok` (a path was chosen), `path`;
//! - [`SEL_OP_CHARGE`]: `charge(in_path)`; [`SEL_OP_CHARGE_PROBE`]: `charge_probe(in_path)`;
//! - [`SEL_OP_CREDIT`]: `credit(path, acked = in_a, lost = in_b, probes = in_c, ce = in_flag)`: `ok` = re-route;
//! - [`SEL_OP_SET_HEALTH`]: `set_health(path, in_a[1:0])` (0 Up, 1 Suspect, 2 Down, 3 Disabled);
//! - [`SEL_OP_CLEAR_INFLIGHT`], [`SEL_OP_REQUEST_REROLL`] (`random = in_a`),
//!   [`SEL_OP_REROLL`] (`random = in_a`), [`SEL_OP_SET_PLANE`] (`plane = in_a`),
//!   [`SEL_OP_SET_PLANE_UP`] (`plane = in_a`, `up = in_flag`), [`SEL_OP_SET_CONN_LIMIT`]
//!   (`pkts = in_a`), [`SEL_OP_INIT`] (`PathSelector::new(paths = in_a, planes = in_b)`).
//!
//! Every record carries `path`, and that path's `entropy`, `plane` and `health` after the
//! operation (what the connection layer reads back with `path()`).

use crate::lutram::{kc, LutRam, Wide32};
use mroce_model::params::{
    ALPHA_ONE, CWND_FRAC_BITS, CWND_INIT_PKTS, CWND_MAX_PKTS, CWND_MIN_PKTS, CWND_ONE, ECN_G_SHIFT, MAX_PLANES, PATHS,
};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record.
pub const SEL_LATENCY: usize = 4;
/// Output FIFO depth.
pub const SEL_FIFO_DEPTH: usize = 16;
pub const SEL_OP_SELECT: u64 = 0;
pub const SEL_OP_CHARGE: u64 = 1;
pub const SEL_OP_CREDIT: u64 = 2;
pub const SEL_OP_SET_HEALTH: u64 = 3;
pub const SEL_OP_CLEAR_INFLIGHT: u64 = 4;
pub const SEL_OP_REQUEST_REROLL: u64 = 5;
pub const SEL_OP_REROLL: u64 = 6;
pub const SEL_OP_SET_PLANE: u64 = 7;
pub const SEL_OP_SET_PLANE_UP: u64 = 8;
pub const SEL_OP_SET_CONN_LIMIT: u64 = 9;
pub const SEL_OP_INIT: u64 = 10;
pub const SEL_OP_CHARGE_PROBE: u64 = 11;
/// Health encodings.
pub const HEALTH_UP: u64 = 0;
pub const HEALTH_SUSPECT: u64 = 1;
pub const HEALTH_DOWN: u64 = 2;
pub const HEALTH_DISABLED: u64 = 3;

const _: () = assert!(PATHS == 16 && MAX_PLANES == 8 && CWND_FRAC_BITS == 8 && ALPHA_ONE == 1024 && ECN_G_SHIFT == 4);
const _: () = assert!((CWND_MAX_PKTS << CWND_FRAC_BITS) < 65536, "cwnd is kept in 16 bits");

/// Operation register.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SelOp {
    pub v: Bit,
    pub op: Bits<4>,
    pub path: Bits<4>,
    pub room: Bits<16>,
    pub a: Bits<16>,
    pub b: Bits<16>,
    pub c: Bits<16>,
    pub flag: Bit,
}

/// One output record.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SelOut {
    pub op: Bits<4>,
    pub ok: Bit,
    pub path: Bits<4>,
    pub entropy: Bits<16>,
    pub plane: Bits<3>,
    pub health: Bits<2>,
}

/// Record pipeline register: the record, and for a credit that cut its window the snapshot
/// the re-route decision needs (every path's alpha and membership before the credit). The
/// decision only feeds the record, so its adder tree is pipelined over two stages (Q1, Q2).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SelQ {
    pub v: Bit,
    pub rec: SelOut,
    pub md: Bit,
    pub a_new: Bits<16>,
    pub member: Bits<16>,
}

/// The path selector block.
#[derive(LogicBlock)]
pub struct PathSelectorHw {
    pub clock: Signal<In, Clock>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub in_op: Signal<In, Bits<4>>,
    pub in_path: Signal<In, Bits<4>>,
    pub in_room: Signal<In, Bits<16>>,
    pub in_a: Signal<In, Bits<16>>,
    pub in_b: Signal<In, Bits<16>>,
    pub in_c: Signal<In, Bits<16>>,
    pub in_flag: Signal<In, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out: Signal<Out, SelOut>,
    fifo: LutRam<SelOut, 4>,
    q1r: DFF<SelQ>,
    q2r: DFF<SelQ>,
    q1a: [DFF<Bits<16>>; 16],
    q2s: [DFF<Bits<16>>; 4],
    q2c: [DFF<Bits<16>>; 4],
    pr: DFF<SelOp>,
    health: [DFF<Bits<2>>; 16],
    plane: [DFF<Bits<3>>; 16],
    entropy: [DFF<Bits<16>>; 16],
    cwnd: [DFF<Bits<16>>; 16],
    inflight: [DFF<Bits<16>>; 16],
    alpha: [DFF<Bits<16>>; 16],
    ai_acc: [DFF<Bits<32>>; 16],
    cwr_left: [DFF<Bits<16>>; 16],
    pending: [DFF<Bit>; 16],
    pend_ent: [DFF<Bits<16>>; 16],
    last: DFF<Bits<4>>,
    planes_up: DFF<Bits<8>>,
    /// conn_limit stored inverted (power-up value 0 = 65535)
    nlimit: DFF<Bits<16>>,
    total: DFF<Bits<16>>,
    probes: DFF<Bits<16>>,
    wp: DFF<Bits<4>>,
    rp: DFF<Bits<4>>,
    cnt: DFF<Bits<5>>,
    occ: DFF<Bits<5>>,
    // constants
    k4: [Constant<Bits<4>>; 16],
    p4: [Constant<Bits<4>>; 4],
    enc16: [Constant<Bits<16>>; 4],
    oh16: [Constant<Bits<16>>; 16],
    oh8: [Constant<Bits<8>>; 1],
    z16: Constant<Bits<16>>,
    z2: Constant<Bits<2>>,
    z3: Constant<Bits<3>>,
    one16: Constant<Bits<16>>,
    ones16: Constant<Bits<16>>,
    c_one: Constant<Bits<16>>,
    c_init: Constant<Bits<16>>,
    c_max: Constant<Bits<16>>,
    c_min: Constant<Bits<16>>,
    c_aone: Constant<Bits<16>>,
    c_g: Constant<Bits<16>>,
    c_a8: Constant<Bits<16>>,
    c_ent_hi: Constant<Bits<16>>,
    c_ent_lo: Constant<Bits<16>>,
    c8: Constant<Bits<16>>,
    c11: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
    depth5: Constant<Bits<5>>,
    h_up: Constant<Bits<2>>,
    h_suspect: Constant<Bits<2>>,
    h_down: Constant<Bits<2>>,
    h_disabled: Constant<Bits<2>>,
    op_select: Constant<Bits<4>>,
    op_charge: Constant<Bits<4>>,
    op_credit: Constant<Bits<4>>,
    op_health: Constant<Bits<4>>,
    op_clear: Constant<Bits<4>>,
    op_rreroll: Constant<Bits<4>>,
    op_reroll: Constant<Bits<4>>,
    op_plane: Constant<Bits<4>>,
    op_plane_up: Constant<Bits<4>>,
    op_limit: Constant<Bits<4>>,
    op_init: Constant<Bits<4>>,
    op_probe: Constant<Bits<4>>,
    pup: [Constant<Bits<8>>; 8],
    c8b: Constant<Bits<8>>,
    pmod: [Constant<Bits<3>>; 128],
    ent0: [Constant<Bits<16>>; 16],
    // locals
    rdy: Signal<Local, Bit>,
    pick: Signal<Local, Bits<16>>,
    xa: Signal<Local, Wide32>,
    xc: Signal<Local, Wide32>,
    xs: Signal<Local, Wide32>,
    sum2: Signal<Local, Bits<32>>,
    infl: Signal<Local, Bits<16>>,
    cwl: Signal<Local, Bits<16>>,
    wopen: Signal<Local, Bit>,
    is_sel: Signal<Local, Bit>,
    sel_ent: Signal<Local, Bits<16>>,
    sel_pl: Signal<Local, Bits<3>>,
    sel_h: Signal<Local, Bits<2>>,
    oh: Signal<Local, Bits<16>>,
    sel_idx: Signal<Local, Bits<4>>,
    member: Signal<Local, Bits<16>>,
    mem1: Signal<Local, Bits<16>>,
    am: [Signal<Local, Bits<16>>; 16],
    bm: [Signal<Local, Bits<16>>; 16],
    frec: Signal<Local, SelOut>,
    hm: Signal<Local, Bits<16>>,
    pm: Signal<Local, Bits<16>>,
    cur_ent: Signal<Local, Bits<16>>,
    cur_plane: Signal<Local, Bits<3>>,
    accept: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    o: Signal<Local, SelOp>,
    pi: Signal<Local, Bits<4>>,
    pu: Signal<Local, Bits<8>>,
    elig_h: Signal<Local, Bits<16>>,
    elig: Signal<Local, Bits<16>>,
    start: Signal<Local, Bits<4>>,
    found: Signal<Local, Bit>,
    cur_h: Signal<Local, Bits<2>>,
    cur_cwnd: Signal<Local, Bits<16>>,
    cur_inf: Signal<Local, Bits<16>>,
    cur_alpha: Signal<Local, Bits<16>>,
    cur_ai: Signal<Local, Bits<32>>,
    cur_cwr: Signal<Local, Bits<16>>,
    cur_pend: Signal<Local, Bit>,
    cur_pent: Signal<Local, Bits<16>>,
    n_h: Signal<Local, Bits<2>>,
    n_cwnd: Signal<Local, Bits<16>>,
    n_inf: Signal<Local, Bits<16>>,
    n_alpha: Signal<Local, Bits<16>>,
    n_ai: Signal<Local, Bits<32>>,
    n_cwr: Signal<Local, Bits<16>>,
    n_pend: Signal<Local, Bit>,
    n_pent: Signal<Local, Bits<16>>,
    n_ent: Signal<Local, Bits<16>>,
    set_ent: Signal<Local, Bit>,
    n_total: Signal<Local, Bits<16>>,
    wr: Signal<Local, Bit>,
    done: Signal<Local, Bits<16>>,
    sum: Signal<Local, Bits<16>>,
    up: Signal<Local, Bits<16>>,
    a_new: Signal<Local, Bits<16>>,
    prod: Signal<Local, Bits<32>>,
    cut: Signal<Local, Bits<32>>,
    cw_cut: Signal<Local, Bits<16>>,
    ai_sum: Signal<Local, Bits<32>>,
    acked32: Signal<Local, Bits<32>>,
    cwnd32: Signal<Local, Bits<32>>,
    amax1: Signal<Local, Bits<16>>,
    aup: Signal<Local, Bits<32>>,
    reroute: Signal<Local, Bit>,
    ent: Signal<Local, Bits<16>>,
    rec: Signal<Local, SelOut>,
    rpath: Signal<Local, Bits<4>>,
    lim1: Signal<Local, Bits<16>>,
    pc: Signal<Local, Bits<16>>,
    n_probes: Signal<Local, Bits<16>>,
    dmp: Signal<Local, Bits<16>>,
    npl: Signal<Local, Bits<4>>,
}

impl Default for PathSelectorHw {
    fn default() -> Self {
        macro_rules! d {
            ($($f:ident),*) => {
                Self {
                    $($f: Default::default(),)*
                    k4: core::array::from_fn(|i| kc(i as u64)),
                    p4: core::array::from_fn(|b| kc(1 << b)),
                    enc16: core::array::from_fn(|b| kc((0..16u64).filter(|i| i & (1 << b) != 0).map(|i| 1 << i).sum())),
                    c8b: kc(8),
                    pup: core::array::from_fn(|k| kc((1u64 << (k + 1)) - 1)),
                    pmod: core::array::from_fn(|x| kc((x % 16 % (x / 16 + 1)) as u64)),
                    ent0: core::array::from_fn(|i| kc(u64::from(mroce_model::path_selector::entropy_from(i as u16)))),
                    oh16: core::array::from_fn(|i| kc(1 << i)),
                    oh8: core::array::from_fn(|i| kc(1 << i)),
                    z16: kc(0),
                    z2: kc(0),
                    z3: kc(0),
                    one16: kc(1),
                    ones16: kc(0xFFFF),
                    c_one: kc(u64::from(CWND_ONE)),
                    c_init: kc(u64::from(CWND_INIT_PKTS << CWND_FRAC_BITS)),
                    c_max: kc(u64::from(CWND_MAX_PKTS << CWND_FRAC_BITS)),
                    c_min: kc(u64::from(CWND_MIN_PKTS << CWND_FRAC_BITS)),
                    c_aone: kc(u64::from(ALPHA_ONE)),
                    c_g: kc(u64::from(ALPHA_ONE >> ECN_G_SHIFT)),
                    c_a8: kc(u64::from(ALPHA_ONE / 8)),
                    c_ent_hi: kc(0xC000),
                    c_ent_lo: kc(0x3FFF),
                    c8: kc(u64::from(CWND_FRAC_BITS)),
                    c11: kc(11),
                    z32: kc(0),
                    one4: kc(1),
                    one5: kc(1),
                    depth5: kc(SEL_FIFO_DEPTH as u64),
                    h_up: kc(HEALTH_UP),
                    h_suspect: kc(HEALTH_SUSPECT),
                    h_down: kc(HEALTH_DOWN),
                    h_disabled: kc(HEALTH_DISABLED),
                    op_select: kc(SEL_OP_SELECT),
                    op_charge: kc(SEL_OP_CHARGE),
                    op_credit: kc(SEL_OP_CREDIT),
                    op_health: kc(SEL_OP_SET_HEALTH),
                    op_clear: kc(SEL_OP_CLEAR_INFLIGHT),
                    op_rreroll: kc(SEL_OP_REQUEST_REROLL),
                    op_reroll: kc(SEL_OP_REROLL),
                    op_plane: kc(SEL_OP_SET_PLANE),
                    op_plane_up: kc(SEL_OP_SET_PLANE_UP),
                    op_limit: kc(SEL_OP_SET_CONN_LIMIT),
                    op_init: kc(SEL_OP_INIT),
                    op_probe: kc(SEL_OP_CHARGE_PROBE),
                }
            };
        }
        d!(
            clock, in_valid, in_ready, in_op, in_path, in_room, in_a, in_b, in_c, in_flag, out_valid, out_ready, out,
            fifo, pr, health, plane, entropy, cwnd, inflight, alpha, ai_acc, cwr_left, pending, pend_ent, last,
            planes_up, nlimit, total, probes, wp, rp, cnt, occ, rdy, accept, pop, o, pi, pu, elig_h, elig, start,
            found, cur_h, cur_cwnd, cur_inf, cur_alpha, cur_ai, cur_cwr, cur_pend, cur_pent, n_h, n_cwnd, n_inf,
            n_alpha, n_ai, n_cwr, n_pend, n_pent, n_ent, set_ent, n_total, wr, done, sum, up, a_new, prod, cut, cw_cut,
            ai_sum, acked32, cwnd32, amax1, aup, reroute, ent, rec, rpath, lim1, npl, member, mem1, am, frec, q1r, q2r,
            q1a, q2s, q2c, bm, pc, n_probes, dmp, pick, xa, xc, xs, sum2, infl, cwl, wopen, is_sel, sel_ent, sel_pl,
            sel_h, oh, sel_idx, hm, pm, cur_ent, cur_plane
        )
    }
}

impl Logic for PathSelectorHw {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, q1r, q2r, pr, last, planes_up, nlimit, total, probes, wp, rp, cnt, occ);
        self.fifo.clock.next = self.clock.val();
        for i in 0..16 {
            self.q1a[i].clock.next = self.clock.val();
            self.q1a[i].d.next = self.alpha[i].q.val();
        }
        for i in 0..4 {
            self.q2s[i].clock.next = self.clock.val();
            self.q2c[i].clock.next = self.clock.val();
        }
        for i in 0..16 {
            self.health[i].clock.next = self.clock.val();
            self.plane[i].clock.next = self.clock.val();
            self.entropy[i].clock.next = self.clock.val();
            self.cwnd[i].clock.next = self.clock.val();
            self.inflight[i].clock.next = self.clock.val();
            self.alpha[i].clock.next = self.clock.val();
            self.ai_acc[i].clock.next = self.clock.val();
            self.cwr_left[i].clock.next = self.clock.val();
            self.pending[i].clock.next = self.clock.val();
            self.pend_ent[i].clock.next = self.clock.val();
            self.health[i].d.next = self.health[i].q.val();
            self.plane[i].d.next = self.plane[i].q.val();
            self.entropy[i].d.next = self.entropy[i].q.val();
            self.cwnd[i].d.next = self.cwnd[i].q.val();
            self.inflight[i].d.next = self.inflight[i].q.val();
            self.alpha[i].d.next = self.alpha[i].q.val();
            self.ai_acc[i].d.next = self.ai_acc[i].q.val();
            self.cwr_left[i].d.next = self.cwr_left[i].q.val();
            self.pending[i].d.next = self.pending[i].q.val();
            self.pend_ent[i].d.next = self.pend_ent[i].q.val();
        }

        // ---------------- input ----------------
        self.rdy.next = self.occ.q.val() < self.depth5.val();
        self.in_ready.next = self.rdy.val();
        self.accept.next = self.in_valid.val() && self.rdy.val();
        self.pr.d.next.v = self.accept.val();
        self.pr.d.next.op = self.in_op.val();
        self.pr.d.next.path = self.in_path.val();
        self.pr.d.next.room = self.in_room.val();
        self.pr.d.next.a = self.in_a.val();
        self.pr.d.next.b = self.in_b.val();
        self.pr.d.next.c = self.in_c.val();
        self.pr.d.next.flag = self.in_flag.val();

        // ---------------- the operation ----------------
        self.o.next = self.pr.q.val();
        self.pu.next = self.planes_up.q.val();
        // eligible_health (Up or Suspect, not draining for a re-roll, plane up) and window_open
        self.elig_h.next = self.z16.val();
        self.elig.next = self.z16.val();
        for i in 0..16 {
            if (self.health[i].q.val() == self.h_up.val() || self.health[i].q.val() == self.h_suspect.val())
                && !self.pending[i].q.val()
                && self.pu.val().get_bit(self.plane[i].q.val().index())
            {
                self.elig_h.next = self.elig_h.val() | self.oh16[i].val();
            }
        }
        for i in 0..16 {
            // (inflight << 8) < cwnd, with cwnd = 256 when Suspect: an 8-bit compare
            self.infl.next = self.inflight[i].q.val();
            self.cwl.next = self.cwnd[i].q.val();
            if self.health[i].q.val() == self.h_suspect.val() {
                self.cwl.next = self.c_one.val();
            }
            self.wopen.next = !self.infl.val().get_bits::<8>(8).any()
                && ((self.infl.val().get_bits::<8>(0) < self.cwl.val().get_bits::<8>(8))
                    || ((self.infl.val().get_bits::<8>(0) == self.cwl.val().get_bits::<8>(8))
                        && self.cwl.val().get_bits::<8>(0).any()));
            if self.elig_h.val().get_bit(i) && self.o.val().room.get_bit(i) && self.wopen.val() {
                self.elig.next = self.elig.val() | self.oh16[i].val();
            }
        }
        if self.total.q.val() >= !self.nlimit.q.val() {
            self.elig.next = self.z16.val();
        }
        // round robin from the path after `last`
        self.start.next = self.last.q.val() + self.one4.val();
        // lowest eligible path at or after `start`, else the lowest eligible: isolate the lowest
        // set bit with x & -x (a carry chain), then encode it
        self.hm.next = self.elig.val() & (self.ones16.val() << self.start.val());
        self.pick.next = self.elig.val();
        if self.hm.val().any() {
            self.pick.next = self.hm.val();
        }
        self.oh.next = self.pick.val() & (!self.pick.val() + self.one16.val());
        self.sel_idx.next = self.k4[0].val();
        for b in 0..4 {
            if (self.oh.val() & self.enc16[b].val()).any() {
                self.sel_idx.next = self.sel_idx.val() | self.p4[b].val();
            }
        }
        self.found.next = self.elig.val().any();
        self.pi.next = self.o.val().path;
        self.is_sel.next = (self.o.val().op == self.op_select.val()) && self.found.val();
        // the addressed path's state
        self.cur_h.next = self.health[0].q.val();
        self.cur_cwnd.next = self.cwnd[0].q.val();
        self.cur_inf.next = self.inflight[0].q.val();
        self.cur_alpha.next = self.alpha[0].q.val();
        self.cur_ai.next = self.ai_acc[0].q.val();
        self.cur_cwr.next = self.cwr_left[0].q.val();
        self.cur_pend.next = self.pending[0].q.val();
        self.cur_pent.next = self.pend_ent[0].q.val();
        self.cur_ent.next = self.entropy[0].q.val();
        self.cur_plane.next = self.plane[0].q.val();
        for i in 0..16 {
            if self.pi.val() == self.k4[i].val() {
                self.cur_h.next = self.health[i].q.val();
                self.cur_cwnd.next = self.cwnd[i].q.val();
                self.cur_inf.next = self.inflight[i].q.val();
                self.cur_alpha.next = self.alpha[i].q.val();
                self.cur_ai.next = self.ai_acc[i].q.val();
                self.cur_cwr.next = self.cwr_left[i].q.val();
                self.cur_pend.next = self.pending[i].q.val();
                self.cur_pent.next = self.pend_ent[i].q.val();
                self.cur_ent.next = self.entropy[i].q.val();
                self.cur_plane.next = self.plane[i].q.val();
            }
        }
        self.n_h.next = self.cur_h.val();
        self.n_cwnd.next = self.cur_cwnd.val();
        self.n_inf.next = self.cur_inf.val();
        self.n_alpha.next = self.cur_alpha.val();
        self.n_ai.next = self.cur_ai.val();
        self.n_cwr.next = self.cur_cwr.val();
        self.n_pend.next = self.cur_pend.val();
        self.n_pent.next = self.cur_pent.val();
        self.set_ent.next = false;
        self.n_ent.next = self.cur_pent.val();
        self.n_total.next = self.total.q.val();
        self.wr.next = false;
        self.reroute.next = false;
        self.ent.next = self.c_ent_hi.val() | (self.o.val().a & self.c_ent_lo.val());
        // charge (select and charge)
        if (self.o.val().op == self.op_charge.val()) || self.is_sel.val() {
            if !self.total.q.val().all() {
                self.n_total.next = self.total.q.val() + self.one16.val();
            }
        }
        if self.o.val().op == self.op_charge.val() {
            self.wr.next = true;
            if !self.cur_inf.val().all() {
                self.n_inf.next = self.cur_inf.val() + self.one16.val();
            }
        }
        self.n_probes.next = self.probes.q.val();
        if self.o.val().op == self.op_probe.val() {
            self.wr.next = true;
            if !self.cur_inf.val().all() {
                self.n_inf.next = self.cur_inf.val() + self.one16.val();
            }
            if !self.probes.q.val().all() {
                self.n_probes.next = self.probes.q.val() + self.one16.val();
            }
        }
        // credit
        self.member.next = self.elig_h.val() | (self.one16.val() << self.o.val().path);
        self.done.next = self.o.val().a + self.o.val().b;
        if self.done.val() < self.o.val().a {
            self.done.next = self.ones16.val();
        }
        if self.done.val() > self.cur_inf.val() {
            self.done.next = self.cur_inf.val();
        }
        self.a_new.next = self.cur_alpha.val() - (self.cur_alpha.val() >> self.k4[4].val());
        if self.o.val().flag {
            self.a_new.next = self.a_new.val() + self.c_g.val();
        }
        if self.a_new.val() > self.c_aone.val() {
            self.a_new.next = self.c_aone.val();
        }
        self.amax1.next = self.a_new.val();
        if !self.a_new.val().any() {
            self.amax1.next = self.one16.val();
        }
        self.prod.next = self.cur_cwnd.val() * self.amax1.val();
        self.cut.next = self.prod.val() >> self.c11.val();
        self.cw_cut.next = self.cur_cwnd.val() - self.cut.val().get_bits::<16>(0);
        if self.cw_cut.val() < self.c_min.val() {
            self.cw_cut.next = self.c_min.val();
        }
        self.xa.next.lo = self.o.val().a;
        self.xa.next.hi = self.z16.val();
        self.acked32.next = self.xa.val().into();
        self.acked32.next = self.acked32.val() << self.c8.val();
        self.xc.next.lo = self.cur_cwnd.val();
        self.xc.next.hi = self.z16.val();
        self.cwnd32.next = self.xc.val().into();
        self.ai_sum.next = self.cur_ai.val() + self.acked32.val();
        // probes among the credited packets leave the probe count, not the connection's
        self.pc.next = self.o.val().c;
        if self.pc.val() > self.done.val() {
            self.pc.next = self.done.val();
        }
        if self.pc.val() > self.probes.q.val() {
            self.pc.next = self.probes.q.val();
        }
        self.dmp.next = self.done.val() - self.pc.val();
        if self.o.val().op == self.op_credit.val() {
            self.wr.next = true;
            self.n_inf.next = self.cur_inf.val() - self.done.val();
            self.n_probes.next = self.probes.q.val() - self.pc.val();
            self.n_total.next = self.z16.val();
            if self.total.q.val() > self.dmp.val() {
                self.n_total.next = self.total.q.val() - self.dmp.val();
            }
            if self.cur_pend.val() && (self.cur_inf.val() == self.done.val()) {
                self.set_ent.next = true;
                self.n_pend.next = false;
            }
            if self.o.val().a.any() {
                if self.cur_h.val() == self.h_suspect.val() {
                    self.n_h.next = self.h_up.val();
                }
                self.n_alpha.next = self.a_new.val();
                self.n_cwr.next = self.z16.val();
                if self.cur_cwr.val() > self.o.val().a {
                    self.n_cwr.next = self.cur_cwr.val() - self.o.val().a;
                }
                if self.o.val().flag {
                    if !self.n_cwr.val().any() {
                        self.n_cwnd.next = self.cw_cut.val();
                        self.n_cwr.next = (self.cw_cut.val() >> self.c8.val()) + self.one16.val();
                        self.n_ai.next = self.z32.val();
                        self.reroute.next = true;
                    }
                } else {
                    self.n_ai.next = self.ai_sum.val();
                    if self.ai_sum.val() >= self.cwnd32.val() {
                        self.n_ai.next = self.ai_sum.val() - self.cwnd32.val();
                        self.n_cwnd.next = self.cur_cwnd.val() + self.c_one.val();
                        if self.n_cwnd.val() > self.c_max.val() {
                            self.n_cwnd.next = self.c_max.val();
                        }
                    }
                }
            }
        }
        if self.o.val().op == self.op_health.val() {
            self.wr.next = true;
            self.n_h.next = self.o.val().a.get_bits::<2>(0);
            if (self.n_h.val() == self.h_down.val()) || (self.n_h.val() == self.h_suspect.val()) {
                if self.cur_cwnd.val() > self.c_init.val() {
                    self.n_cwnd.next = self.c_init.val();
                }
            }
        }
        if self.o.val().op == self.op_clear.val() {
            self.wr.next = true;
            self.n_inf.next = self.z16.val();
            self.n_total.next = self.z16.val();
            if self.total.q.val() > self.cur_inf.val() {
                self.n_total.next = self.total.q.val() - self.cur_inf.val();
            }
            if self.cur_pend.val() {
                self.set_ent.next = true;
                self.n_pend.next = false;
            }
        }
        if self.o.val().op == self.op_rreroll.val() {
            self.wr.next = true;
            self.n_pent.next = self.ent.val();
            self.n_alpha.next = self.z16.val();
            self.n_cwr.next = self.z16.val();
            if self.cur_inf.val().any() {
                self.n_pend.next = true;
            } else {
                self.set_ent.next = true;
                self.n_ent.next = self.ent.val();
            }
        }
        if self.o.val().op == self.op_reroll.val() {
            self.set_ent.next = true;
            self.n_ent.next = self.ent.val();
        }
        // write back the addressed path
        for i in 0..16 {
            if self.o.val().v && (self.pi.val() == self.k4[i].val()) {
                if self.wr.val() {
                    self.health[i].d.next = self.n_h.val();
                    self.cwnd[i].d.next = self.n_cwnd.val();
                    self.inflight[i].d.next = self.n_inf.val();
                    self.alpha[i].d.next = self.n_alpha.val();
                    self.ai_acc[i].d.next = self.n_ai.val();
                    self.cwr_left[i].d.next = self.n_cwr.val();
                    self.pending[i].d.next = self.n_pend.val();
                    self.pend_ent[i].d.next = self.n_pent.val();
                }
                if self.set_ent.val() {
                    self.entropy[i].d.next = self.n_ent.val();
                }
                if self.o.val().op == self.op_plane.val() {
                    self.plane[i].d.next = self.o.val().a.get_bits::<3>(0);
                }
            }
            // select: charge the chosen path in place (no mux through the path index)
            if self.o.val().v && self.is_sel.val() && self.oh.val().get_bit(i) && !self.inflight[i].q.val().all() {
                self.inflight[i].d.next = self.inflight[i].q.val() + self.one16.val();
            }
        }
        self.lim1.next = self.o.val().a;
        if !self.o.val().a.any() {
            self.lim1.next = self.one16.val();
        }
        self.pm.next = (self.one16.val() << self.o.val().a.get_bits::<4>(0)) - self.one16.val();
        if self.o.val().a.get_bits::<4>(4).any() {
            self.pm.next = self.ones16.val();
        }
        if self.o.val().v {
            self.total.d.next = self.n_total.val();
            self.probes.d.next = self.n_probes.val();
            if (self.o.val().op == self.op_select.val()) && self.found.val() {
                self.last.d.next = self.sel_idx.val();
            }
            if self.o.val().op == self.op_plane_up.val() {
                if self.o.val().flag {
                    self.planes_up.d.next = self.pu.val() | (self.oh8[0].val() << self.o.val().a.get_bits::<3>(0));
                } else {
                    self.planes_up.d.next = self.pu.val() & !(self.oh8[0].val() << self.o.val().a.get_bits::<3>(0));
                }
            }
            if self.o.val().op == self.op_limit.val() {
                self.nlimit.d.next = !self.lim1.val();
            }
        }
        // new(paths = a, planes = b): planes clamped to 1..=8, path p on plane p % planes
        self.npl.next = self.o.val().b.get_bits::<4>(0);
        if !self.o.val().b.get_bits::<8>(0).any() {
            self.npl.next = self.one4.val();
        }
        if self.o.val().b.get_bits::<8>(0) > self.c8b.val() {
            self.npl.next = self.k4[8].val();
        }
        if self.o.val().v && (self.o.val().op == self.op_init.val()) {
            self.last.d.next = self.k4[15].val();
            self.probes.d.next = self.z16.val();
            self.nlimit.d.next = self.z16.val();
            self.total.d.next = self.z16.val();
            for k in 0..8 {
                if self.npl.val() == self.k4[k + 1].val() {
                    self.planes_up.d.next = self.pup[k].val();
                    for i in 0..16 {
                        self.plane[i].d.next = self.pmod[k * 16 + i].val();
                    }
                }
            }
            for i in 0..16 {
                self.health[i].d.next = self.h_disabled.val();
                if self.pm.val().get_bit(i) {
                    self.health[i].d.next = self.h_up.val();
                }
                self.entropy[i].d.next = self.ent0[i].val();
                self.cwnd[i].d.next = self.c_init.val();
                self.inflight[i].d.next = self.z16.val();
                self.alpha[i].d.next = self.z16.val();
                self.ai_acc[i].d.next = self.z32.val();
                self.cwr_left[i].d.next = self.z16.val();
                self.pending[i].d.next = false;
                self.pend_ent[i].d.next = self.z16.val();
            }
        }

        // ---------------- record and output FIFO ----------------
        self.rpath.next = self.pi.val();
        self.rec.next.op = self.o.val().op;
        self.rec.next.ok = self.reroute.val();
        if self.o.val().op == self.op_select.val() {
            self.rec.next.ok = self.found.val();
        }
        self.rec.next.path = self.pi.val();
        if self.o.val().op == self.op_select.val() {
            self.rec.next.path = self.sel_idx.val();
        }
        self.rec.next.entropy = self.cur_ent.val();
        if self.set_ent.val() {
            self.rec.next.entropy = self.n_ent.val();
        }
        self.rec.next.plane = self.cur_plane.val();
        if self.o.val().op == self.op_plane.val() {
            self.rec.next.plane = self.o.val().a.get_bits::<3>(0);
        }
        self.rec.next.health = self.n_h.val();
        self.sel_ent.next = self.z16.val();
        self.sel_pl.next = self.z3.val();
        self.sel_h.next = self.z2.val();
        for i in 0..16 {
            if self.oh.val().get_bit(i) {
                self.sel_ent.next = self.sel_ent.val() | self.entropy[i].q.val();
                self.sel_pl.next = self.sel_pl.val() | self.plane[i].q.val();
                self.sel_h.next = self.sel_h.val() | self.health[i].q.val();
            }
        }
        if self.o.val().op == self.op_select.val() {
            self.rec.next.entropy = self.sel_ent.val();
            self.rec.next.plane = self.sel_pl.val();
            self.rec.next.health = self.sel_h.val();
        }
        self.q1r.d.next.v = self.o.val().v;
        self.q1r.d.next.rec = self.rec.val();
        self.q1r.d.next.md = self.reroute.val() && (self.o.val().op == self.op_credit.val());
        self.q1r.d.next.a_new = self.a_new.val();
        self.q1r.d.next.member = self.member.val();
        // Q1: mask the snapshot, four partial sums, member count
        self.q2r.d.next = self.q1r.q.val();
        self.mem1.next = self.q1r.q.val().member;
        for i in 0..16 {
            self.am[i].next = self.z16.val();
            if self.mem1.val().get_bit(i) {
                self.am[i].next = self.q1a[i].q.val();
            }
        }
        for g in 0..4 {
            self.q2s[g].d.next = (self.am[4 * g].val() + self.am[4 * g + 1].val())
                + (self.am[4 * g + 2].val() + self.am[4 * g + 3].val());
        }
        for i in 0..16 {
            self.bm[i].next = self.z16.val();
            if self.mem1.val().get_bit(i) {
                self.bm[i].next = self.one16.val();
            }
        }
        for g in 0..4 {
            self.q2c[g].d.next = (self.bm[4 * g].val() + self.bm[4 * g + 1].val())
                + (self.bm[4 * g + 2].val() + self.bm[4 * g + 3].val());
        }
        // Q2: alpha * up > 2 * sum (the path's estimate is above twice the mean)
        self.sum.next = (self.q2s[0].q.val() + self.q2s[1].q.val()) + (self.q2s[2].q.val() + self.q2s[3].q.val());
        self.up.next = (self.q2c[0].q.val() + self.q2c[1].q.val()) + (self.q2c[2].q.val() + self.q2c[3].q.val());
        self.aup.next = self.q2r.q.val().a_new * self.up.val();
        self.xs.next.lo = self.sum.val() << self.one16.val();
        self.xs.next.hi = self.z16.val();
        self.sum2.next = self.xs.val().into();
        self.frec.next = self.q2r.q.val().rec;
        if self.q2r.q.val().md {
            self.frec.next.ok = (self.up.val() > self.one16.val())
                && (self.q2r.q.val().a_new >= self.c_a8.val())
                && (self.aup.val() > self.sum2.val());
        }
        self.fifo.write_address.next = self.wp.q.val();
        self.fifo.write_data.next = self.frec.val();
        self.fifo.write_enable.next = self.q2r.q.val().v;
        self.fifo.read_address.next = self.rp.q.val();
        self.out.next = self.fifo.read_data.val();
        self.out_valid.next = self.cnt.q.val().any();
        self.pop.next = self.cnt.q.val().any() && self.out_ready.val();
        if self.q2r.q.val().v {
            self.wp.d.next = self.wp.q.val() + self.one4.val();
        }
        if self.pop.val() {
            self.rp.d.next = self.rp.q.val() + self.one4.val();
        }
        if self.q2r.q.val().v && !self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() + self.one5.val();
        }
        if !self.q2r.q.val().v && self.pop.val() {
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
