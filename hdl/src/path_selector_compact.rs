//! `path_selector_compact`: the path selector of `mroce_model::path_selector` for small FPGAs.
//!
//! The same ports, operations and records as [`crate::path_selector::PathSelectorHw`], II = 1,
//! built for a slow clock (the iCE40 boards run at 25 MHz): stage X evaluates every path's
//! eligibility, runs the round-robin search and the addressed path's window arithmetic as the
//! model does, and writes the new state at the clock edge, so the next operation sees it and
//! nothing is forwarded. Fixed latency [`SELC_LATENCY`].
//!
//! Per-path state is in flip-flops, one register per field and path (every SELECT tests every
//! path). The re-route test's `alpha × up` is a sum of `alpha` over the member paths, so there
//! is no multiplier (an iCE40 HX has none). Power-up state is all zeros: an INIT
//! (`PathSelector::new`) comes first, as the board self-test and the co-simulation's preamble
//! send it.
//!
//! The operation lag of SPEC.md §6.3 is kept as the model keeps it: a register holds the window
//! mask recorded by the previous operation (`nlm`), and the previous operation's window write
//! (`wv`, `wall`, `wpath`) decides whether a credit defers its sample (`dacc`, `dce`).
//!
//! Stages: **I** (input register; input-only values: `acked + lost` saturated, `acked << 8`,
//! the entropy of `a`, INIT's path mask and plane count); **X** (the operation; state written at
//! the clock edge, and the record into the output FIFO's RAM, which shows it one clock later).

use crate::lutram::{kc, Wide32};
use crate::path_selector::{
    SelOut, HEALTH_DISABLED, HEALTH_DOWN, HEALTH_SUSPECT, HEALTH_UP, SEL_OP_CHARGE, SEL_OP_CHARGE_PROBE,
    SEL_OP_CLEAR_INFLIGHT, SEL_OP_CREDIT, SEL_OP_INIT, SEL_OP_REQUEST_REROLL, SEL_OP_REROLL, SEL_OP_SELECT,
    SEL_OP_SET_CONN_LIMIT, SEL_OP_SET_HEALTH, SEL_OP_SET_PLANE, SEL_OP_SET_PLANE_UP,
};
use crate::record_fifo::RecordFifo;
use mroce_model::params::{
    ALPHA_ONE, CWND_FRAC_BITS, CWND_INIT_PKTS, CWND_MAX_PKTS, CWND_MIN_PKTS, CWND_ONE, ECN_G_SHIFT, MAX_PLANES, PATHS,
    PATH_BITS, SEL_OP_LAG,
};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record (FIFO empty, `out_ready` high).
pub const SELC_LATENCY: usize = 3;

const _: () = assert!(MAX_PLANES == 8 && CWND_FRAC_BITS == 8 && ALPHA_ONE == 1024 && ECN_G_SHIFT == 4);
const _: () = assert!((CWND_MAX_PKTS << CWND_FRAC_BITS) < 65536, "cwnd is kept in 16 bits");
const _: () = assert!(PATHS >= 4 && PATHS <= 16 && PATHS == 1 << PB);

/// Width of a path index.
const PB: usize = PATH_BITS as usize;

/// Stage I register: the accepted operation and its input-only values.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SelcIn {
    pub v: Bit,
    pub op: Bits<4>,
    pub path: Bits<PB>,
    pub room: Bits<PATHS>,
    pub a: Bits<16>,
    pub c: Bits<16>,
    pub flag: Bit,
    /// sat16(a + b): acked + lost.
    pub al: Bits<16>,
    /// a << 8: acked in window units.
    pub a8: Bits<32>,
    /// entropy_from(a).
    pub ent: Bits<16>,
    /// INIT: the enabled paths (p < a).
    pub pm: Bits<PATHS>,
    /// INIT: the plane count clamped to 1..=8.
    pub npl: Bits<4>,
}

/// The compact path selector.
#[derive(LogicBlock)]
pub struct PathSelectorCompact {
    pub clock: Signal<In, Clock>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub in_op: Signal<In, Bits<4>>,
    pub in_path: Signal<In, Bits<PB>>,
    pub in_room: Signal<In, Bits<16>>,
    pub in_a: Signal<In, Bits<16>>,
    pub in_b: Signal<In, Bits<16>>,
    pub in_c: Signal<In, Bits<16>>,
    pub in_flag: Signal<In, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out: Signal<Out, SelOut>,
    // constants
    kp: [Constant<Bits<PB>>; PATHS],
    /// kpl[k] = k + 1: a plane count.
    kpl: [Constant<Bits<4>>; 8],
    /// pmod[k * PATHS + p] = p % (k + 1): path p's plane after INIT with k + 1 planes.
    pmod: [Constant<Bits<3>>; 8 * PATHS],
    /// pup[k] = (1 << (k + 1)) - 1: the planes up after INIT with k + 1 planes.
    pup: [Constant<Bits<8>>; 8],
    ent0: [Constant<Bits<16>>; PATHS],
    enc: [Constant<Bits<PATHS>>; PB],
    pow: [Constant<Bits<PB>>; PB],
    lgk: [Constant<Bits<4>>; 11],
    c11: Constant<Bits<4>>,
    c8b: Constant<Bits<8>>,
    c8w: Constant<Bits<32>>,
    c_paths: Constant<Bits<8>>,
    last_init: Constant<Bits<PB>>,
    z16: Constant<Bits<16>>,
    one16: Constant<Bits<16>>,
    ones16: Constant<Bits<16>>,
    z32: Constant<Bits<32>>,
    z8: Constant<Bits<8>>,
    one8: Constant<Bits<8>>,
    one8p: Constant<Bits<8>>,
    c_one: Constant<Bits<16>>,
    c_init: Constant<Bits<16>>,
    c_max: Constant<Bits<16>>,
    c_max_less1: Constant<Bits<16>>,
    c_max32: Constant<Bits<32>>,
    c_min: Constant<Bits<16>>,
    c_g: Constant<Bits<16>>,
    c_a8: Constant<Bits<16>>,
    c_alpha1: Constant<Bits<16>>,
    c_ent_hi: Constant<Bits<16>>,
    c_ent_lo: Constant<Bits<16>>,
    c8: Constant<Bits<16>>,
    c_g_shift: Constant<Bits<16>>,
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
    zp: Constant<Bits<PATHS>>,
    onep: Constant<Bits<PATHS>>,
    onesp: Constant<Bits<PATHS>>,
    // per-path state
    health: [DFF<Bits<2>>; PATHS],
    plane: [DFF<Bits<3>>; PATHS],
    entropy: [DFF<Bits<16>>; PATHS],
    cwnd: [DFF<Bits<16>>; PATHS],
    inflight: [DFF<Bits<16>>; PATHS],
    alpha: [DFF<Bits<16>>; PATHS],
    ai_acc: [DFF<Bits<32>>; PATHS],
    cwr_left: [DFF<Bits<16>>; PATHS],
    /// Bit p: path p is out of slow start (`!slow_start`; INIT clears every bit)
    nss: DFF<Bits<PATHS>>,
    pending: [DFF<Bit>; PATHS],
    pend_ent: [DFF<Bits<16>>; PATHS],
    // connection state
    last: DFF<Bits<PB>>,
    planes_up: DFF<Bits<8>>,
    limit: DFF<Bits<16>>,
    total: DFF<Bits<16>>,
    probes: DFF<Bits<16>>,
    /// The window mask the next SELECT tests, inverted (power-up 0: every window open, as
    /// after INIT): recorded by each operation before it changes anything, with its own charge
    nlm: DFF<Bits<PATHS>>,
    /// The previous operation wrote the window state of path `wpath` (an AIMD credit,
    /// SET_HEALTH, REQUEST_REROLL), or of every path (`wall`: INIT; power-up is INIT's state)
    wv: DFF<Bit>,
    nwall: DFF<Bit>,
    wpath: DFF<Bits<PB>>,
    /// Deferred AIMD samples: acknowledged packets per path, and CE (bit p)
    dacc: [DFF<Bits<16>>; PATHS],
    dce: DFF<Bits<PATHS>>,
    ir: DFF<SelcIn>,
    fifo: RecordFifo<SelOut>,
    // stage I
    accept: Signal<Local, Bit>,
    ial: Signal<Local, Bits<16>>,
    xa: Signal<Local, Wide32>,
    ia32: Signal<Local, Bits<32>>,
    ipm: Signal<Local, Bits<PATHS>>,
    inpl: Signal<Local, Bits<4>>,
    // stage X: eligibility and the search
    eh: Signal<Local, Bits<PATHS>>,
    cwl: [Signal<Local, Bits<16>>; PATHS],
    elig: Signal<Local, Bits<PATHS>>,
    above: Signal<Local, Bits<PATHS>>,
    hm: Signal<Local, Bits<PATHS>>,
    oh: Signal<Local, Bits<PATHS>>,
    sp: Signal<Local, Bits<PB>>,
    found: Signal<Local, Bit>,
    // stage X: the operation lag
    /// All ones with the operation lag (`SEL_OP_LAG`), else zero: as a path mask and a count mask
    lagp: Constant<Bits<PATHS>>,
    lag16: Constant<Bits<16>>,
    wsel: Signal<Local, Bits<PATHS>>,
    wm: Signal<Local, Bits<PATHS>>,
    cin: [Signal<Local, Bits<16>>; PATHS],
    wo1: Signal<Local, Bits<PATHS>>,
    chg: Signal<Local, Bits<PATHS>>,
    dfr: Signal<Local, Bit>,
    xda: Signal<Local, Bits<16>>,
    dsum: Signal<Local, Bits<16>>,
    esum: Signal<Local, Bits<16>>,
    ea: Signal<Local, Bits<16>>,
    ece: Signal<Local, Bit>,
    xea: Signal<Local, Wide32>,
    ea8: Signal<Local, Bits<32>>,
    // stage X: the addressed path (x*: as read, n*: as written)
    /// The path the operation addresses, and its record carries: path 0 for the
    /// connection-wide operations (INIT, SET_PLANE_UP, SET_CONN_LIMIT), as the pipelined block.
    rpath: Signal<Local, Bits<PB>>,
    hit: Signal<Local, Bits<PATHS>>,
    xh: Signal<Local, Bits<2>>,
    xpl: Signal<Local, Bits<3>>,
    xent: Signal<Local, Bits<16>>,
    xcw: Signal<Local, Bits<16>>,
    xin: Signal<Local, Bits<16>>,
    xal: Signal<Local, Bits<16>>,
    xai: Signal<Local, Bits<32>>,
    xcr: Signal<Local, Bits<16>>,
    xpd: Signal<Local, Bit>,
    xpe: Signal<Local, Bits<16>>,
    nh: Signal<Local, Bits<2>>,
    npl: Signal<Local, Bits<3>>,
    nent: Signal<Local, Bits<16>>,
    ncw: Signal<Local, Bits<16>>,
    nin: Signal<Local, Bits<16>>,
    nal: Signal<Local, Bits<16>>,
    nai: Signal<Local, Bits<32>>,
    ncr: Signal<Local, Bits<16>>,
    npd: Signal<Local, Bit>,
    npe: Signal<Local, Bits<16>>,
    ntotal: Signal<Local, Bits<16>>,
    nprobes: Signal<Local, Bits<16>>,
    // credit arithmetic
    done: Signal<Local, Bits<16>>,
    pd: Signal<Local, Bits<16>>,
    dt: Signal<Local, Bits<16>>,
    anew: Signal<Local, Bits<16>>,
    lg: Signal<Local, Bits<4>>,
    cut: Signal<Local, Bits<16>>,
    cwc: Signal<Local, Bits<16>>,
    xc: Signal<Local, Wide32>,
    cw32: Signal<Local, Bits<32>>,
    ais: Signal<Local, Bits<32>>,
    xnss: Signal<Local, Bit>,
    nns: Signal<Local, Bit>,
    sss: Signal<Local, Bits<32>>,
    asum: Signal<Local, Bits<16>>,
    aup: Signal<Local, Bits<16>>,
    up: Signal<Local, Bits<8>>,
    reroute: Signal<Local, Bit>,
    rec: Signal<Local, SelOut>,
}

impl Default for PathSelectorCompact {
    fn default() -> Self {
        macro_rules! d {
            ($($f:ident),*) => {
                Self {
                    $($f: Default::default(),)*
                    kp: core::array::from_fn(|i| kc(i as u64)),
                    kpl: core::array::from_fn(|i| kc(i as u64 + 1)),
                    pmod: core::array::from_fn(|x| kc((x % PATHS % (x / PATHS + 1)) as u64)),
                    pup: core::array::from_fn(|k| kc((1u64 << (k + 1)) - 1)),
                    ent0: core::array::from_fn(|i| kc(u64::from(mroce_model::path_selector::entropy_from(i as u16)))),
                    enc: core::array::from_fn(|b| {
                        kc((0..PATHS as u64).filter(|i| i & (1 << b) != 0).map(|i| 1 << i).sum())
                    }),
                    pow: core::array::from_fn(|b| kc(1 << b)),
                    lgk: core::array::from_fn(|i| kc(i as u64)),
                    c11: kc(u64::from(ALPHA_ONE.trailing_zeros() + 1)),
                    c8b: kc(8),
                    c8w: kc(u64::from(CWND_FRAC_BITS)),
                    c_paths: kc(PATHS as u64),
                    last_init: kc(PATHS as u64 - 1),
                    z16: kc(0),
                    one16: kc(1),
                    ones16: kc(0xFFFF),
                    z32: kc(0),
                    z8: kc(0),
                    one8: kc(1),
                    one8p: kc(1),
                    c_one: kc(u64::from(CWND_ONE)),
                    c_init: kc(u64::from(CWND_INIT_PKTS << CWND_FRAC_BITS)),
                    c_max: kc(u64::from(CWND_MAX_PKTS << CWND_FRAC_BITS)),
                    c_max_less1: kc(u64::from((CWND_MAX_PKTS << CWND_FRAC_BITS) - CWND_ONE)),
                    c_max32: kc(u64::from(CWND_MAX_PKTS << CWND_FRAC_BITS)),
                    c_min: kc(u64::from(CWND_MIN_PKTS << CWND_FRAC_BITS)),
                    c_g: kc(u64::from(ALPHA_ONE >> ECN_G_SHIFT)),
                    c_a8: kc(u64::from(ALPHA_ONE / 8)),
                    c_alpha1: kc(u64::from(ALPHA_ONE)),
                    c_ent_hi: kc(0xC000),
                    c_ent_lo: kc(0x3FFF),
                    c8: kc(u64::from(CWND_FRAC_BITS)),
                    c_g_shift: kc(u64::from(ECN_G_SHIFT)),
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
                    zp: kc(0),
                    onep: kc(1),
                    onesp: kc((1 << PATHS) - 1),
                    lagp: kc(if SEL_OP_LAG { (1 << PATHS) - 1 } else { 0 }),
                    lag16: kc(if SEL_OP_LAG { 0xFFFF } else { 0 }),
                }
            };
        }
        d!(
            clock, in_valid, in_ready, in_op, in_path, in_room, in_a, in_b, in_c, in_flag, out_valid, out_ready, out,
            health, plane, entropy, cwnd, inflight, alpha, ai_acc, cwr_left, nss, xnss, nns, sss, pending, pend_ent,
            last, planes_up, limit, total, probes, nlm, wv, nwall, wpath, dacc, dce, wsel, wm, cin, wo1, chg, dfr, xda,
            dsum, esum, ea, ece, xea, ea8, ir, fifo, accept, ial, xa, ia32, ipm, inpl, eh, cwl, elig, above, hm, oh,
            sp, found, rpath, hit, xh, xpl, xent, xcw, xin, xal, xai, xcr, xpd, xpe, nh, npl, nent, ncw, nin, nal, nai,
            ncr, npd, npe, ntotal, nprobes, done, pd, dt, anew, lg, cut, cwc, xc, cw32, ais, asum, aup, up, reroute,
            rec
        )
    }
}

impl Logic for PathSelectorCompact {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, last, planes_up, limit, total, probes, ir, nss, nlm, wv, nwall, wpath, dce);
        for i in 0..PATHS {
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
            self.dacc[i].clock.next = self.clock.val();
            self.dacc[i].d.next = self.dacc[i].q.val();
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

        // ---------------- stage I: accept (room for every accepted record in the FIFO) ----------------
        self.in_ready.next = self.fifo.room.val();
        self.accept.next = self.in_valid.val() && self.fifo.room.val();
        self.ir.d.next.v = self.accept.val();
        self.ir.d.next.op = self.in_op.val();
        self.ir.d.next.path = self.in_path.val();
        self.ir.d.next.room = self.in_room.val().get_bits::<PATHS>(0);
        self.ir.d.next.a = self.in_a.val();
        self.ir.d.next.c = self.in_c.val();
        self.ir.d.next.flag = self.in_flag.val();
        self.ial.next = self.in_a.val() + self.in_b.val();
        if self.ial.val() < self.in_a.val() {
            self.ial.next = self.ones16.val();
        }
        self.ir.d.next.al = self.ial.val();
        self.xa.next.lo = self.in_a.val();
        self.xa.next.hi = self.z16.val();
        self.ia32.next = self.xa.val().into();
        self.ir.d.next.a8 = self.ia32.val() << self.c8w.val();
        self.ir.d.next.ent = self.c_ent_hi.val() | (self.in_a.val() & self.c_ent_lo.val());
        // new(paths = a, planes = b): paths below a enabled, planes clamped to 1..=8
        self.ipm.next = (self.onep.val() << self.in_a.val().get_bits::<PB>(0)) - self.onep.val();
        if self.in_a.val().get_bits::<8>(0) >= self.c_paths.val() {
            self.ipm.next = self.onesp.val();
        }
        self.ir.d.next.pm = self.ipm.val();
        self.inpl.next = self.in_b.val().get_bits::<4>(0);
        if !self.in_b.val().get_bits::<8>(0).any() {
            self.inpl.next = self.kpl[0].val();
        }
        if self.in_b.val().get_bits::<8>(0) > self.c8b.val() {
            self.inpl.next = self.kpl[7].val();
        }
        self.ir.d.next.npl = self.inpl.val();

        // ---------------- stage X: eligibility and the round-robin search ----------------
        self.eh.next = self.zp.val();
        self.elig.next = self.zp.val();
        self.wm.next = self.zp.val();
        self.wo1.next = self.zp.val();
        for i in 0..PATHS {
            // eligible_health: Up or Suspect, not draining for a re-roll, on a plane that is up
            if ((self.health[i].q.val() == self.h_up.val()) || (self.health[i].q.val() == self.h_suspect.val()))
                && !self.pending[i].q.val()
                && self.planes_up.q.val().get_bit(self.plane[i].q.val().index())
            {
                self.eh.next = self.eh.val() | (self.onep.val() << self.kp[i].val());
            }
            // window_open: (inflight << 8) < cwnd (256 when Suspect)
            self.cwl[i].next = self.cwnd[i].q.val();
            if self.health[i].q.val() == self.h_suspect.val() {
                self.cwl[i].next = self.c_one.val();
            }
            if !self.inflight[i].q.val().get_bits::<8>(8).any()
                && ((self.inflight[i].q.val().get_bits::<8>(0) < self.cwl[i].val().get_bits::<8>(8))
                    || ((self.inflight[i].q.val().get_bits::<8>(0) == self.cwl[i].val().get_bits::<8>(8))
                        && self.cwl[i].val().get_bits::<8>(0).any()))
            {
                self.wm.next = self.wm.val() | (self.onep.val() << self.kp[i].val());
            }
            // the same test with one more packet in flight (saturating): a charge that closes
            // the window is seen by the next SELECT at once
            self.cin[i].next = self.inflight[i].q.val();
            if self.inflight[i].q.val() != self.ones16.val() {
                self.cin[i].next = self.inflight[i].q.val() + self.one16.val();
            }
            if !self.cin[i].val().get_bits::<8>(8).any()
                && ((self.cin[i].val().get_bits::<8>(0) < self.cwl[i].val().get_bits::<8>(8))
                    || ((self.cin[i].val().get_bits::<8>(0) == self.cwl[i].val().get_bits::<8>(8))
                        && self.cwl[i].val().get_bits::<8>(0).any()))
            {
                self.wo1.next = self.wo1.val() | (self.onep.val() << self.kp[i].val());
            }
        }
        // SELECT tests the windows recorded by the operation before it (SPEC.md §6.3), or, without
        // the operation lag (`SEL_OP_LAG`, the small configuration), the windows of now: a
        // constant picks, and synthesis drops the other
        self.wsel.next = (!self.nlm.q.val() & self.lagp.val()) | (self.wm.val() & !self.lagp.val());
        for i in 0..PATHS {
            if self.eh.val().get_bit(i) && self.ir.q.val().room.get_bit(i) && self.wsel.val().get_bit(i) {
                self.elig.next = self.elig.val() | (self.onep.val() << self.kp[i].val());
            }
        }
        // the lowest eligible path after `last`, else the lowest eligible path
        self.above.next = !((self.onep.val() << (self.last.q.val() + self.kp[1].val())) - self.onep.val());
        self.hm.next = self.elig.val() & self.above.val();
        if !self.hm.val().any() {
            self.hm.next = self.elig.val();
        }
        self.oh.next = self.hm.val() & (!self.hm.val() + self.onep.val());
        self.sp.next = self.kp[0].val();
        for b in 0..PB {
            if (self.oh.val() & self.enc[b].val()).any() {
                self.sp.next = self.sp.val() | self.pow[b].val();
            }
        }
        self.found.next = self.elig.val().any() && (self.total.q.val() < self.limit.q.val());

        // ---------------- stage X: the addressed path's row ----------------
        self.rpath.next = self.ir.q.val().path;
        if (self.ir.q.val().op == self.op_init.val())
            || (self.ir.q.val().op == self.op_plane_up.val())
            || (self.ir.q.val().op == self.op_limit.val())
        {
            self.rpath.next = self.kp[0].val();
        }
        self.hit.next = self.onep.val() << self.rpath.val();
        self.xh.next = self.health[0].q.val();
        self.xpl.next = self.plane[0].q.val();
        self.xent.next = self.entropy[0].q.val();
        self.xcw.next = self.cwnd[0].q.val();
        self.xin.next = self.inflight[0].q.val();
        self.xal.next = self.alpha[0].q.val();
        self.xai.next = self.ai_acc[0].q.val();
        self.xcr.next = self.cwr_left[0].q.val();
        self.xpd.next = self.pending[0].q.val();
        self.xpe.next = self.pend_ent[0].q.val();
        for i in 1..PATHS {
            if self.hit.val().get_bit(i) {
                self.xh.next = self.health[i].q.val();
                self.xpl.next = self.plane[i].q.val();
                self.xent.next = self.entropy[i].q.val();
                self.xcw.next = self.cwnd[i].q.val();
                self.xin.next = self.inflight[i].q.val();
                self.xal.next = self.alpha[i].q.val();
                self.xai.next = self.ai_acc[i].q.val();
                self.xcr.next = self.cwr_left[i].q.val();
                self.xpd.next = self.pending[i].q.val();
                self.xpe.next = self.pend_ent[i].q.val();
            }
        }
        self.xnss.next = (self.nss.q.val() & self.hit.val()).any();
        // an AIMD credit right after an operation that wrote this path's window state defers its
        // sample; otherwise a deferred sample joins it (saturating sums)
        self.dfr.next = (self.ir.q.val().op == self.op_credit.val())
            && self.lagp.val().any()
            && self.ir.q.val().a.any()
            && (!self.nwall.q.val() || (self.wv.q.val() && (self.wpath.q.val() == self.ir.q.val().path)));
        self.xda.next = self.dacc[0].q.val();
        for i in 1..PATHS {
            if self.hit.val().get_bit(i) {
                self.xda.next = self.dacc[i].q.val();
            }
        }
        self.dsum.next = (self.xda.val() & self.lag16.val()) + self.ir.q.val().a;
        self.esum.next = self.dsum.val();
        if self.dsum.val() < self.ir.q.val().a {
            self.esum.next = self.ones16.val();
        }
        self.ea.next = self.esum.val();
        self.ece.next = self.ir.q.val().flag || (self.dce.q.val() & self.hit.val() & self.lagp.val()).any();
        self.xea.next.lo = self.ea.val();
        self.xea.next.hi = self.z16.val();
        self.ea8.next = self.xea.val().into();
        self.nns.next = self.xnss.val();
        self.nh.next = self.xh.val();
        self.npl.next = self.xpl.val();
        self.nent.next = self.xent.val();
        self.ncw.next = self.xcw.val();
        self.nin.next = self.xin.val();
        self.nal.next = self.xal.val();
        self.nai.next = self.xai.val();
        self.ncr.next = self.xcr.val();
        self.npd.next = self.xpd.val();
        self.npe.next = self.xpe.val();
        self.ntotal.next = self.total.q.val();
        self.nprobes.next = self.probes.q.val();
        self.reroute.next = false;

        // CREDIT: return the packets, then the ECN AIMD of the path
        self.done.next = self.xin.val();
        if self.ir.q.val().al < self.xin.val() {
            self.done.next = self.ir.q.val().al;
        }
        self.pd.next = self.done.val();
        if self.ir.q.val().c < self.pd.val() {
            self.pd.next = self.ir.q.val().c;
        }
        if self.probes.q.val() < self.pd.val() {
            self.pd.next = self.probes.q.val();
        }
        self.dt.next = self.done.val() - self.pd.val();
        // alpha <- alpha - alpha / 16 + (ce ? 1024 / 16 : 0), at most ALPHA_ONE
        self.anew.next = self.xal.val() - (self.xal.val() >> self.c_g_shift.val());
        if self.ece.val() {
            self.anew.next = self.anew.val() + self.c_g.val();
        }
        if self.anew.val() > self.c_alpha1.val() {
            self.anew.next = self.c_alpha1.val();
        }
        // the decrease shift from alpha before this credit: 11 - floor(log2(max(alpha, 1)))
        self.lg.next = self.lgk[0].val();
        for b in 1..11 {
            if self.xal.val().get_bit(b) {
                self.lg.next = self.lgk[b].val();
            }
        }
        self.cut.next = self.xcw.val() >> (self.c11.val() - self.lg.val());
        // the mark that ends slow start halves the window ...
        if !self.xnss.val() {
            self.cut.next = self.xcw.val() >> self.one16.val();
        }
        self.cwc.next = self.z16.val();
        if self.xcw.val() > self.cut.val() {
            self.cwc.next = self.xcw.val() - self.cut.val();
        }
        if self.cwc.val() < self.c_min.val() {
            self.cwc.next = self.c_min.val();
        }
        // ... not below the initial window (in slow start cwnd >= init: it only grows, and
        // SET_HEALTH caps it at init)
        if !self.xnss.val() && (self.cwc.val() < self.c_init.val()) {
            self.cwc.next = self.c_init.val();
        }
        self.xc.next.lo = self.xcw.val();
        self.xc.next.hi = self.z16.val();
        self.cw32.next = self.xc.val().into();
        self.ais.next = self.xai.val() + (self.ea8.val() << self.c8w.val());
        // slow start: cwnd + (acked << 8) (32 bits: no wrap)
        self.sss.next = self.cw32.val() + (self.ea8.val() << self.c8w.val());
        // the re-route test's sums over the paths counted (eligible, or this one)
        self.asum.next = self.z16.val();
        self.aup.next = self.z16.val();
        self.up.next = self.z8.val();
        for i in 0..PATHS {
            if self.eh.val().get_bit(i) || self.hit.val().get_bit(i) {
                self.asum.next = self.asum.val() + self.alpha[i].q.val();
                self.aup.next = self.aup.val() + self.anew.val();
                self.up.next = self.up.val() + self.one8.val();
            }
        }
        if self.ir.q.val().op == self.op_credit.val() {
            self.nin.next = self.xin.val() - self.done.val();
            self.nprobes.next = self.probes.q.val() - self.pd.val();
            self.ntotal.next = self.z16.val();
            if self.total.q.val() > self.dt.val() {
                self.ntotal.next = self.total.q.val() - self.dt.val();
            }
            if self.xpd.val() && !self.nin.val().any() {
                self.nent.next = self.xpe.val();
                self.npd.next = false;
            }
            if self.ir.q.val().a.any() && (self.xh.val() == self.h_suspect.val()) {
                self.nh.next = self.h_up.val();
            }
            if self.ir.q.val().a.any() && !self.dfr.val() {
                self.nal.next = self.anew.val();
                self.ncr.next = self.z16.val();
                if self.xcr.val() > self.ea.val() {
                    self.ncr.next = self.xcr.val() - self.ea.val();
                }
                if self.ece.val() {
                    // the first CE mark ends slow start
                    self.nns.next = true;
                    if !self.ncr.val().any() {
                        // multiplicative decrease, at most once per window of packets
                        self.ncr.next = (self.xcw.val() >> self.c8.val()) + self.one16.val();
                        self.ncw.next = self.cwc.val();
                        self.nai.next = self.z32.val();
                        self.reroute.next = (self.up.val() > self.one8p.val())
                            && (self.anew.val() >= self.c_a8.val())
                            && (self.aup.val() > (self.asum.val() + self.asum.val()));
                    }
                } else if !self.xnss.val() {
                    // slow start: one packet per packet acknowledged, at most the largest window
                    self.ncw.next = self.sss.val().get_bits::<16>(0);
                    if self.sss.val() > self.c_max32.val() {
                        self.ncw.next = self.c_max.val();
                    }
                } else {
                    // additive increase: one packet per window of acknowledged packets
                    self.nai.next = self.ais.val();
                    if self.ais.val() >= self.cw32.val() {
                        self.nai.next = self.ais.val() - self.cw32.val();
                        self.ncw.next = self.c_max.val();
                        if self.xcw.val() < self.c_max_less1.val() {
                            self.ncw.next = self.xcw.val() + self.c_one.val();
                        }
                    }
                }
            }
        }
        if self.ir.q.val().op == self.op_charge.val() {
            if self.xin.val() != self.ones16.val() {
                self.nin.next = self.xin.val() + self.one16.val();
            }
            if self.total.q.val() != self.ones16.val() {
                self.ntotal.next = self.total.q.val() + self.one16.val();
            }
        }
        if self.ir.q.val().op == self.op_probe.val() {
            if self.xin.val() != self.ones16.val() {
                self.nin.next = self.xin.val() + self.one16.val();
            }
            if self.probes.q.val() != self.ones16.val() {
                self.nprobes.next = self.probes.q.val() + self.one16.val();
            }
        }
        if self.ir.q.val().op == self.op_health.val() {
            self.nh.next = self.ir.q.val().a.get_bits::<2>(0);
            if ((self.nh.val() == self.h_down.val()) || (self.nh.val() == self.h_suspect.val()))
                && (self.xcw.val() > self.c_init.val())
            {
                self.ncw.next = self.c_init.val();
            }
        }
        if self.ir.q.val().op == self.op_clear.val() {
            self.ntotal.next = self.z16.val();
            if self.total.q.val() > self.xin.val() {
                self.ntotal.next = self.total.q.val() - self.xin.val();
            }
            self.nin.next = self.z16.val();
            if self.xpd.val() {
                self.nent.next = self.xpe.val();
                self.npd.next = false;
            }
        }
        if self.ir.q.val().op == self.op_rreroll.val() {
            self.npe.next = self.ir.q.val().ent;
            self.nal.next = self.z16.val();
            self.ncr.next = self.z16.val();
            if self.xin.val().any() {
                self.npd.next = true;
            } else {
                self.nent.next = self.ir.q.val().ent;
            }
        }
        if self.ir.q.val().op == self.op_reroll.val() {
            self.nent.next = self.ir.q.val().ent;
        }
        if self.ir.q.val().op == self.op_plane.val() {
            self.npl.next = self.ir.q.val().a.get_bits::<3>(0);
        }
        if self.ir.q.val().op == self.op_init.val() {
            // the record's path 0 as INIT leaves it (the per-path writes below set every path)
            self.nent.next = self.ent0[0].val();
            self.npl.next = self.pmod[0].val();
            self.nh.next = self.h_disabled.val();
            if self.ir.q.val().pm.get_bit(0) {
                self.nh.next = self.h_up.val();
            }
        }

        // ---------------- stage X: write the new state ----------------
        // the charge of this operation (SELECT's choice, CHARGE, CHARGE_PROBE)
        self.chg.next = self.zp.val();
        if (self.ir.q.val().op == self.op_select.val()) && self.found.val() {
            self.chg.next = self.oh.val();
        }
        if (self.ir.q.val().op == self.op_charge.val()) || (self.ir.q.val().op == self.op_probe.val()) {
            self.chg.next = self.hit.val();
        }
        if self.ir.q.val().v {
            self.nlm.d.next = !(self.wm.val() & !(self.chg.val() & !self.wo1.val()));
            self.nwall.d.next = true;
            self.wpath.d.next = self.ir.q.val().path;
            self.wv.d.next = (self.ir.q.val().op == self.op_health.val())
                || (self.ir.q.val().op == self.op_rreroll.val())
                || ((self.ir.q.val().op == self.op_credit.val()) && self.ir.q.val().a.any() && !self.dfr.val());
            if (self.ir.q.val().op == self.op_credit.val()) && self.ir.q.val().a.any() {
                for i in 0..PATHS {
                    if self.hit.val().get_bit(i) {
                        self.dacc[i].d.next = self.z16.val();
                        if self.dfr.val() {
                            self.dacc[i].d.next = self.esum.val();
                        }
                    }
                }
                self.dce.d.next = self.dce.q.val() & !self.hit.val();
                if self.dfr.val() && self.ece.val() {
                    self.dce.d.next = self.dce.q.val() | self.hit.val();
                }
            }
            if self.ir.q.val().op == self.op_rreroll.val() {
                for i in 0..PATHS {
                    if self.hit.val().get_bit(i) {
                        self.dacc[i].d.next = self.z16.val();
                    }
                }
                self.dce.d.next = self.dce.q.val() & !self.hit.val();
            }
            for i in 0..PATHS {
                if self.hit.val().get_bit(i) {
                    self.health[i].d.next = self.nh.val();
                    self.plane[i].d.next = self.npl.val();
                    self.entropy[i].d.next = self.nent.val();
                    self.cwnd[i].d.next = self.ncw.val();
                    self.inflight[i].d.next = self.nin.val();
                    self.alpha[i].d.next = self.nal.val();
                    self.ai_acc[i].d.next = self.nai.val();
                    self.cwr_left[i].d.next = self.ncr.val();
                    self.pending[i].d.next = self.npd.val();
                    self.pend_ent[i].d.next = self.npe.val();
                }
            }
            self.nss.d.next = self.nss.q.val() & !self.hit.val();
            if self.nns.val() {
                self.nss.d.next = self.nss.q.val() | self.hit.val();
            }
            self.total.d.next = self.ntotal.val();
            self.probes.d.next = self.nprobes.val();
            if self.ir.q.val().op == self.op_select.val() {
                // the addressed path's row is written back unchanged; the charge goes to the choice
                self.total.d.next = self.total.q.val();
                if self.found.val() {
                    self.last.d.next = self.sp.val();
                    if self.total.q.val() != self.ones16.val() {
                        self.total.d.next = self.total.q.val() + self.one16.val();
                    }
                    for i in 0..PATHS {
                        if self.oh.val().get_bit(i) && (self.inflight[i].q.val() != self.ones16.val()) {
                            self.inflight[i].d.next = self.inflight[i].q.val() + self.one16.val();
                        }
                    }
                }
            }
            if self.ir.q.val().op == self.op_plane_up.val() {
                if self.ir.q.val().flag {
                    self.planes_up.d.next =
                        self.planes_up.q.val() | (self.one8.val() << self.ir.q.val().a.get_bits::<3>(0));
                } else {
                    self.planes_up.d.next =
                        self.planes_up.q.val() & !(self.one8.val() << self.ir.q.val().a.get_bits::<3>(0));
                }
            }
            if self.ir.q.val().op == self.op_limit.val() {
                self.limit.d.next = self.ir.q.val().a;
                if !self.ir.q.val().a.any() {
                    self.limit.d.next = self.one16.val();
                }
            }
            if self.ir.q.val().op == self.op_init.val() {
                self.nlm.d.next = self.zp.val();
                self.nwall.d.next = false;
                self.dce.d.next = self.zp.val();
                for i in 0..PATHS {
                    self.dacc[i].d.next = self.z16.val();
                }
                self.last.d.next = self.last_init.val();
                self.limit.d.next = self.ones16.val();
                self.nss.d.next = self.zp.val();
                self.total.d.next = self.z16.val();
                self.probes.d.next = self.z16.val();
                // pmod's row k is plane count k + 1; `np` (= PATHS) is a loop variable because
                // hdl_gen evaluates array indices with loop variables only
                for np in PATHS..(PATHS + 1) {
                    for k in 0..8 {
                        if self.ir.q.val().npl == self.kpl[k].val() {
                            self.planes_up.d.next = self.pup[k].val();
                            for i in 0..PATHS {
                                self.plane[i].d.next = self.pmod[k * np + i].val();
                            }
                        }
                    }
                }
                for i in 0..PATHS {
                    self.health[i].d.next = self.h_disabled.val();
                    if self.ir.q.val().pm.get_bit(i) {
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
        }

        // ---------------- the record: the operation's path after it ----------------
        self.rec.next.op = self.ir.q.val().op;
        self.rec.next.ok = self.reroute.val();
        self.rec.next.path = self.rpath.val();
        self.rec.next.entropy = self.nent.val();
        self.rec.next.plane = self.npl.val();
        self.rec.next.health = self.nh.val();
        if self.ir.q.val().op == self.op_select.val() {
            self.rec.next.ok = self.found.val();
            self.rec.next.path = self.sp.val();
            for i in 0..PATHS {
                if self.oh.val().get_bit(i) {
                    self.rec.next.entropy = self.entropy[i].q.val();
                    self.rec.next.plane = self.plane[i].q.val();
                    self.rec.next.health = self.health[i].q.val();
                }
            }
        }

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
