//! `path_selector`: the path selector of `mroce_model::path_selector` as a RustHDL block.
//!
//! Sized by `mroce_model::params`: `PATHS` paths (16, or 8 or 4 in the reduced and small
//! configurations), path indices of `PATH_BITS` bits; windows, counters and entropies stay 16 bits.
//! Per-path state is in flip-flops (every path's eligibility is evaluated on every `select`).
//! One operation per clock (II = 1), latency [`SEL_LATENCY`] to `out_valid`. Stages:
//! - **input**: the operation decoded (one-hot path, operation flags, input-only sums), and
//!   whether a credit defers its sample (from the operation before it, SPEC.md §6.3);
//! - **P** (`pr`): the addressed path's window state read from the registers into `rr`, and
//!   its packets in flight into `rin`, with stage B's write forwarded; the deferred samples kept
//!   (a deferred credit adds to its path's, an AIMD credit takes it into its own);
//! - **A** (`pa`): one datapath computes every candidate of the AIMD credit's next window state
//!   from `rr` (`ac`); the path's packets in flight (`ifl`) from `rin`, with B's change
//!   forwarded, and whether a credit covers them (`geq`, for each value `ifl` may take);
//! - **B** (`po`): the candidates picked and written back; packets in flight, health, entropy,
//!   the connection's counters; SELECT searches a registered window mask (`nlm`, with the last
//!   choice's own term `sch & nwo` applied where it is read), and its charge lands a clock
//!   later (`sch`), so the choice only drives registers;
//! - **Q1–Q4**: the record, and the re-route test (sums, then the multiply, then the compare).
//!
//! The operation lag of SPEC.md §6.3 is what keeps the window arithmetic out of every one-clock
//! loop: SELECT tests the windows from before the previous operation, a register, so the search
//! is not behind the window compares; and an AIMD credit right behind a window write on its
//! path defers its sample, so A never needs B's result for the same path. Only the addressed
//! path changes, so the window arithmetic exists once, not per path. The reads work on
//! registered operations only: read from the input pins, Verilator evaluates the forwarding
//! cone in its input region on every evaluation (4x the code there). The decrease is a shift
//! by a per-path register that tracks alpha (`mroce_model::path_selector::decrease_shift`).
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

use crate::fifo_bram::{FifoStore, FIFO_BRAM_TRIPS};
use crate::fifo_occupancy::FifoOccupancy;
use crate::lutram::{kc, Wide32};
use mroce_model::params::{
    ALPHA_ONE, CWND_FRAC_BITS, CWND_INIT_PKTS, CWND_MAX_PKTS, CWND_MIN_PKTS, CWND_ONE, ECN_G_SHIFT, MAX_PLANES, PATHS,
    PATH_BITS,
};
use rust_hdl::prelude::*;

/// Clocks from acceptance to the output record.
pub const SEL_LATENCY: usize = 8;
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

const _: () = assert!(
    PATHS == 4 || PATHS == 8 || PATHS == 16,
    "the row multiplexer and the record's reduction trees are laid out for 4, 8 or 16 paths"
);
const _: () = assert!(MAX_PLANES == 8 && CWND_FRAC_BITS == 8 && ALPHA_ONE == 1024 && ECN_G_SHIFT == 4);
const _: () = assert!((CWND_MAX_PKTS << CWND_FRAC_BITS) < 65536, "cwnd is kept in 16 bits");
/// Width of a path index.
const PB: usize = PATH_BITS as usize;
/// Groups of four paths: the record and the re-route sums reduce each group, then the groups.
const GROUPS: usize = PATHS / 4;
/// 1 in the 16-path configuration, else 0 (and [`IF8`], [`IF4`]): the trip count of a `for` that
/// holds one configuration's code, since hdl_gen unrolls constant loops but has no constant `if`.
/// (A computed bound is parenthesised, `0..(PATHS / 2)`: hdl_gen appends `.into()` to it.)
const IF16: usize = (PATHS == 16) as usize;
const IF8: usize = (PATHS == 8) as usize;
const IF4: usize = (PATHS == 4) as usize;
/// The decrease shift for alpha = 0 (`decrease_shift(0)`), the value after INIT and REQUEST_REROLL.
const ASH_ZERO: u64 = (ALPHA_ONE.trailing_zeros() + 1) as u64;

/// Operation register: the operation as received, plus everything that depends on the input
/// alone, decoded one clock ahead (one-hot path, operation flags, acked + lost).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SelOp {
    pub v: Bit,
    pub op: Bits<4>,
    pub path: Bits<PB>,
    /// One-hot `path` (zero when not valid).
    pub hit: Bits<PATHS>,
    /// The paths below `path` (hit - 1; zero when not valid).
    pub low: Bits<PATHS>,
    pub room: Bits<16>,
    pub a: Bits<16>,
    pub b: Bits<16>,
    pub c: Bits<16>,
    pub flag: Bit,
    /// sat16(a + b): acked + lost.
    pub al: Bits<16>,
    /// -al (mod 2^16).
    pub nal: Bits<16>,
    /// a << 8 (acked in window units).
    pub a8: Bits<32>,
    pub a_nz: Bit,
    /// INIT: the mask of enabled paths (paths = a).
    pub pm: Bits<PATHS>,
    /// INIT: the plane count, clamped to 1..=8 (planes = b).
    pub npl: Bits<4>,
    /// The ECN sample step: ce ? ALPHA_ONE >> ECN_G_SHIFT : 0.
    pub g1: Bits<16>,
    /// entropy_from(a).
    pub ent: Bits<16>,
    pub is_sel: Bit,
    pub is_charge: Bit,
    pub is_credit: Bit,
    pub is_health: Bit,
    pub is_clear: Bit,
    pub is_rreroll: Bit,
    pub is_reroll: Bit,
    pub is_plane: Bit,
    pub is_plane_up: Bit,
    pub is_limit: Bit,
    pub is_init: Bit,
    pub is_probe: Bit,
    /// A credit that defers its AIMD sample: it follows an operation that wrote its path's
    /// window state (decided at the input from the operation before it, SPEC.md §6.3).
    pub dfr: Bit,
    /// The path's deferred AIMD sample as this operation finds it (read at the input, with the
    /// writes of the two operations ahead of it forwarded).
    pub da: Bits<16>,
}

/// A 16-bit value widened to 18 bits without a cast (see [`Wide32`]): room for the sign of
/// `total ± probes ∓ inflight`.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct Wide18 {
    pub lo: Bits<16>,
    pub hi: Bits<2>,
}

/// A 32-bit value widened to 34 bits (see [`Wide32`]): the additive-increase sums with their
/// wrap and sign.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct Wide34 {
    pub lo: Bits<32>,
    pub hi: Bits<2>,
}

/// The window state of one path that an AIMD credit reads: the operand of the single per-op
/// datapath, multiplexed out of the per-path registers by the operation's path (its packets
/// in flight and health are read where they are written, in stage B).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct PathRow {
    pub cwnd: Bits<16>,
    pub alpha: Bits<16>,
    pub ash: Bits<4>,
    pub ai_acc: Bits<32>,
    pub cwr_left: Bits<16>,
    /// Out of slow start (`!slow_start`; power-up and INIT value 0 = in slow start).
    pub nss: Bit,
}

/// Stage A's results for an AIMD credit: every candidate of its next state, with the compares
/// that pick among them (the row it read is beside it, `acr`) (stage B picks: the multiplexers are out of
/// the arithmetic's clock).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct AimdCand {
    pub anew: Bits<16>,
    pub nash: Bits<4>,
    pub cwrs: Bits<16>,
    pub cwr0: Bit,
    pub cwrn: Bits<16>,
    pub cwc: Bits<16>,
    pub cws: Bits<16>,
    pub ais: Bits<32>,
    pub aim: Bits<32>,
    pub aige: Bit,
    pub cwi: Bits<16>,
}

/// One output record.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SelOut {
    pub op: Bits<4>,
    pub ok: Bit,
    pub path: Bits<PB>,
    pub entropy: Bits<16>,
    pub plane: Bits<3>,
    pub health: Bits<2>,
}

/// Record pipeline register: the record, and for a credit that cut its window the snapshot
/// the re-route decision needs (every path's alpha and membership before the credit). The
/// decision only feeds the record, so it is pipelined over three stages (Q1: partial sums, Q2:
/// sums, Q3: alpha × n against twice the sum).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SelQ {
    pub v: Bit,
    pub rec: SelOut,
    pub md: Bit,
    pub a_new: Bits<16>,
    pub member: Bits<PATHS>,
    /// One-hot path whose fields the record carries (read from the registers in Q1, which by
    /// then hold the state after this operation).
    pub rsel: Bits<PATHS>,
}

/// The path selector block.
#[derive(LogicBlock)]
pub struct PathSelectorHw {
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
    fifo: FifoStore<SelOut, 4>,
    q1r: DFF<SelQ>,
    q2r: DFF<SelQ>,
    q3r: DFF<SelQ>,
    q3sum: DFF<Bits<16>>,
    q3up: DFF<Bits<16>>,
    /// Q4: the record, with alpha × n and twice the sum (the multiply has a stage of its own)
    q4r: DFF<SelQ>,
    q4aup: DFF<Bits<32>>,
    q4sum2: DFF<Bits<32>>,
    q4up: DFF<Bits<16>>,
    q1a: [DFF<Bits<16>>; PATHS],
    q2s: [DFF<Bits<16>>; GROUPS],
    q2c: [DFF<Bits<16>>; GROUPS],
    pr: DFF<SelOp>,
    /// The operation in stage A (the AIMD arithmetic; the one in `pr` a clock ago, its row then
    /// read), with the deferred sample joined to its own.
    pa: DFF<SelOp>,
    /// The operation in stage B (write-back, SELECT, the connection-wide counters).
    po: DFF<SelOp>,
    /// The addressed path's window state as the operation in `pa` finds it (read from `pr` with
    /// the operation in B forwarded), the operand of the single per-op datapath.
    rr: DFF<PathRow>,
    /// Stage A's result: the candidates of the addressed path's window state after an AIMD
    /// credit (B picks one, `nrw`, writes it back and forwards it to the read stage)
    ac: DFF<AimdCand>,
    acr: DFF<PathRow>,
    /// The packets in flight of the path of the operation in B, as it finds them: read in A
    /// from the registers with B's operation forwarded (its count, or SELECT's charge)
    ifl: DFF<Bits<16>>,
    /// The packets in flight of the path of the operation entering A: read in the read stage
    /// with the writes of the edge between forwarded
    rin: DFF<Bits<16>>,
    /// B's credit covers its path's packets in flight (`al >= inflight`): decided in A for each
    /// value `ifl` may take, picked by the same multiplexer, so B's drain and re-roll decisions
    /// start from a register and not from a compare behind `ifl`
    geq: DFF<Bit>,
    /// The sum of `al` of the operations entering A and B (a credit in B that writes the path
    /// of the one in A leaves `inflight - al_B`; `al_A >= inflight - al_B` is `al_A + al_B >=
    /// inflight`, one compare of registers)
    alab: DFF<Bits<18>>,
    /// `al - 1` and `al - 2` of the operation entering A (18 bits, with the sign), so that A
    /// tests `al >= m_in + 1` and `al >= m_in + 2` by one carry chain each
    alm1: DFF<Bits<18>>,
    alm2: DFF<Bits<18>>,
    health: [DFF<Bits<2>>; PATHS],
    plane: [DFF<Bits<3>>; PATHS],
    entropy: [DFF<Bits<16>>; PATHS],
    cwnd: [DFF<Bits<16>>; PATHS],
    inflight: [DFF<Bits<16>>; PATHS],
    alpha: [DFF<Bits<16>>; PATHS],
    /// The shift of the next decrease, kept next to alpha so the decrease is a shift by a
    /// register: decrease_shift(alpha), or 1 (halve) while the path is in slow start
    ash: [DFF<Bits<4>>; PATHS],
    ai_acc: [DFF<Bits<32>>; PATHS],
    cwr_left: [DFF<Bits<16>>; PATHS],
    /// Bit p: path p is out of slow start (`!slow_start`, so that power-up is INIT's state);
    /// one bit per path, read by the path's one-hot
    nss: DFF<Bits<PATHS>>,
    pending: [DFF<Bit>; PATHS],
    pend_ent: [DFF<Bits<16>>; PATHS],
    /// ELIGIBLE_HEALTH of the path, registered from the next state (a function of health,
    /// reroll_pending, plane and planes_up, so the selection does not recompute it)
    eh: [DFF<Bit>; PATHS],
    /// Paths above the one chosen last, the start of the round robin (power-up value 0 is the
    /// state after INIT, last = path PATHS - 1).
    above: DFF<Bits<PATHS>>,
    planes_up: DFF<Bits<8>>,
    /// The window mask the next SELECT tests, inverted (power-up 0: every window open, as after
    /// INIT): recorded by each operation from the registers before it, with its own charge
    nlm: DFF<Bits<PATHS>>,
    /// The windows the last operation's SELECT charge would close (`!wo1`): the SELECT's own
    /// term of the mask, `sch & nwo`, is applied where the mask is read, so the choice, the
    /// deepest signal of B, only goes to registers
    nwo: DFF<Bits<PATHS>>,
    /// SELECT's charge, applied a clock later (bit p: the path it chose), so that the choice,
    /// the deepest signal of stage B, drives one register per path and not sixteen; every reader
    /// of `inflight` adds it (the window tests, stage A's row, REQUEST_REROLL's drain test)
    sch: DFF<Bits<PATHS>>,
    /// The last accepted operation wrote the window state of path `wpath` (an AIMD credit,
    /// SET_HEALTH, REQUEST_REROLL), or of every path (`nwall` low: INIT; power-up is its state)
    wv: DFF<Bit>,
    nwall: DFF<Bit>,
    wpath: DFF<Bits<PB>>,
    /// Deferred AIMD samples, read and written in the read stage only (in order, so nothing
    /// is forwarded): acknowledged packets per path, and CE (bit p)
    dacc: [DFF<Bits<16>>; PATHS],
    /// The read stage's write of a deferred count, applied a clock later (so the sum that
    /// computes it does not also drive sixteen registers): valid, path (index and one-hot), value;
    /// the next operation on the same path reads it from here
    dwv: DFF<Bit>,
    dwi: DFF<Bits<PB>>,
    dwh: DFF<Bits<PATHS>>,
    dwn: DFF<Bits<16>>,
    dce: DFF<Bits<PATHS>>,
    /// conn_limit stored inverted (power-up value 0 = 65535)
    nlimit: DFF<Bits<16>>,
    total: DFF<Bits<16>>,
    probes: DFF<Bits<16>>,
    wp: DFF<Bits<4>>,
    rp: DFF<Bits<4>>,
    cnt: DFF<Bits<5>>,
    occ: FifoOccupancy,
    // constants
    k4: [Constant<Bits<4>>; 11],
    c12: Constant<Bits<4>>,
    // (names such as oh16, t8_cw or ge4 are from the 16-path layout, kept as the default
    // configuration's Verilog names)
    p4: [Constant<Bits<PB>>; PB],
    enc16: [Constant<Bits<PATHS>>; PB],
    oh16: [Constant<Bits<PATHS>>; PATHS],
    oh8: [Constant<Bits<8>>; 1],
    z16: Constant<Bits<16>>,
    z2: Constant<Bits<2>>,
    z3: Constant<Bits<3>>,
    one16: Constant<Bits<16>>,
    two16: Constant<Bits<16>>,
    c_ff: Constant<Bits<16>>,
    /// 1 and 2, 18 bits wide
    k18: [Constant<Bits<18>>; 2],
    one18: Constant<Bits<18>>,
    one34: Constant<Bits<34>>,
    /// 1, 2, 3 (two-bit shift digits)
    k2: [Constant<Bits<2>>; 3],
    ones16: Constant<Bits<16>>,
    c_one: Constant<Bits<16>>,
    c_init: Constant<Bits<16>>,
    c_max: Constant<Bits<16>>,
    c_max_less1: Constant<Bits<16>>,
    c_max32: Constant<Bits<32>>,
    /// 2 x the initial window - 1 (1/256 packets): below it, halving the window would go under
    /// the initial one
    c_init2m1: Constant<Bits<16>>,
    c_min: Constant<Bits<16>>,
    c_g: Constant<Bits<16>>,
    c_a8: Constant<Bits<16>>,
    c_ent_hi: Constant<Bits<16>>,
    c_ent_lo: Constant<Bits<16>>,
    c8: Constant<Bits<16>>,
    c8w: Constant<Bits<32>>,
    c_ash0: Constant<Bits<4>>,
    z32: Constant<Bits<32>>,
    one4: Constant<Bits<4>>,
    one5: Constant<Bits<5>>,
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
    pmod: [Constant<Bits<3>>; MAX_PLANES * PATHS],
    ent0: [Constant<Bits<16>>; PATHS],
    /// Zero, one and all ones as path masks, and the path count (INIT's `paths` at or above it
    /// enables every path)
    zp: Constant<Bits<PATHS>>,
    onep: Constant<Bits<PATHS>>,
    onesp: Constant<Bits<PATHS>>,
    c_paths: Constant<Bits<8>>,
    // locals: input stage
    rdy: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    ial: Signal<Local, Bits<16>>,
    ipm: Signal<Local, Bits<PATHS>>,
    inpl: Signal<Local, Bits<4>>,
    xa: Signal<Local, Wide32>,
    ia32: Signal<Local, Bits<32>>,
    xb: Signal<Local, Wide32>,
    ib32: Signal<Local, Bits<32>>,
    s32: Signal<Local, Bits<32>>,
    /// -(a + b) as a carry-save pair: sum and carry of ~a + ~b + 2
    ncs_s: Signal<Local, Bits<16>>,
    ncs_c: Signal<Local, Bits<16>>,
    // locals: selection
    o: Signal<Local, SelOp>,
    /// The operation in the read stage (`pr`).
    o1: Signal<Local, SelOp>,
    /// The operation in stage A (`pa`).
    oa: Signal<Local, SelOp>,
    /// The operation in B is an AIMD credit that ran its sample (it writes the window state).
    aimd: Signal<Local, Bit>,
    /// Per path: the window is above the initial one (SET_HEALTH's cap, in B).
    cgtp: [Signal<Local, Bit>; PATHS],
    /// `cgtp` as a mask, read through the read stage's one-hot path (SET_HEALTH's forwarded cap).
    cgtv: Signal<Local, Bits<PATHS>>,
    tainc: Signal<Local, Bits<16>>,
    s_hi: Signal<Local, Bit>,
    s_lo: Signal<Local, Bit>,
    s_hit: Signal<Local, Bit>,
    pu: Signal<Local, Bits<8>>,
    elig_h: Signal<Local, Bits<PATHS>>,
    elig: Signal<Local, Bits<PATHS>>,
    wlt: [Signal<Local, Bit>; PATHS],
    cwl: [Signal<Local, Bits<16>>; PATHS],
    lim_ok: Signal<Local, Bit>,
    ab: Signal<Local, Bits<PATHS>>,
    hm: Signal<Local, Bits<PATHS>>,
    oh: Signal<Local, Bits<PATHS>>,
    sel_idx: Signal<Local, Bits<PB>>,
    found: Signal<Local, Bit>,
    // locals: the operation lag
    idfr: Signal<Local, Bit>,
    iaimd: Signal<Local, Bit>,
    wm: Signal<Local, Bits<PATHS>>,
    wd: [Signal<Local, Bits<16>>; PATHS],
    wok: [Signal<Local, Bit>; PATHS],
    wo1: Signal<Local, Bits<PATHS>>,
    wlt2: [Signal<Local, Bit>; PATHS],
    nlmn: Signal<Local, Bits<PATHS>>,
    wlt1: [Signal<Local, Bit>; PATHS],
    tainc2: Signal<Local, Bits<16>>,
    /// Stage A's drain tests: `oa.al - m_in` (18 bits, with its sign) and each candidate's result
    gw: [Signal<Local, Wide18>; 4],
    gv: [Signal<Local, Bits<18>>; 4],
    gd: Signal<Local, Bits<18>>,
    gd1: Signal<Local, Bits<18>>,
    gd2: Signal<Local, Bits<18>>,
    g_m: Signal<Local, Bit>,
    g_t: Signal<Local, Bit>,
    g_t2: Signal<Local, Bit>,
    g_i: Signal<Local, Bit>,
    m_pc: Signal<Local, Bit>,
    chg: Signal<Local, Bits<PATHS>>,
    xda: Signal<Local, Bits<16>>,
    t8_da: [Signal<Local, Bits<16>>; PATHS / 2],
    t4_da: [Signal<Local, Bits<16>>; PATHS / 4],
    t2_da: [Signal<Local, Bits<16>>; PATHS / 8],
    dsum: Signal<Local, Bits<18>>,
    dw18: Signal<Local, Wide18>,
    aw18: Signal<Local, Wide18>,
    d18: Signal<Local, Bits<18>>,
    a18: Signal<Local, Bits<18>>,
    esum: Signal<Local, Bits<16>>,
    ece: Signal<Local, Bit>,
    xe: Signal<Local, Wide32>,
    e32: Signal<Local, Bits<32>>,
    // locals: the addressed path's row (a multiplexer tree on the path index: levels of PATHS/2,
    // PATHS/4, PATHS/8 entries, then the root `m_*`) and the one datapath that computes its next state
    rw: Signal<Local, PathRow>,
    rmx: Signal<Local, PathRow>,
    t8_cw: [Signal<Local, Bits<16>>; PATHS / 2],
    t4_cw: [Signal<Local, Bits<16>>; PATHS / 4],
    t2_cw: [Signal<Local, Bits<16>>; PATHS / 8],
    t8_in: [Signal<Local, Bits<16>>; PATHS / 2],
    t4_in: [Signal<Local, Bits<16>>; PATHS / 4],
    t2_in: [Signal<Local, Bits<16>>; PATHS / 8],
    t8_al: [Signal<Local, Bits<16>>; PATHS / 2],
    t4_al: [Signal<Local, Bits<16>>; PATHS / 4],
    t2_al: [Signal<Local, Bits<16>>; PATHS / 8],
    t8_sh: [Signal<Local, Bits<4>>; PATHS / 2],
    t4_sh: [Signal<Local, Bits<4>>; PATHS / 4],
    t2_sh: [Signal<Local, Bits<4>>; PATHS / 8],
    t8_ai: [Signal<Local, Bits<32>>; PATHS / 2],
    t4_ai: [Signal<Local, Bits<32>>; PATHS / 4],
    t2_ai: [Signal<Local, Bits<32>>; PATHS / 8],
    t8_cr: [Signal<Local, Bits<16>>; PATHS / 2],
    t4_cr: [Signal<Local, Bits<16>>; PATHS / 4],
    t2_cr: [Signal<Local, Bits<16>>; PATHS / 8],
    m_cw: Signal<Local, Bits<16>>,
    m_in: Signal<Local, Bits<16>>,
    r_in: Signal<Local, Bits<16>>,
    m_al: Signal<Local, Bits<16>>,
    m_sh: Signal<Local, Bits<4>>,
    m_ai: Signal<Local, Bits<32>>,
    m_cr: Signal<Local, Bits<16>>,
    nrw: Signal<Local, PathRow>,
    irow: Signal<Local, PathRow>,
    ge: Signal<Local, Bit>,
    at: Signal<Local, Bits<16>>,
    ash4: Signal<Local, Bits<16>>,
    anew: Signal<Local, Bits<16>>,
    nash: Signal<Local, Bits<4>>,
    cut: Signal<Local, Bits<16>>,
    cwc: Signal<Local, Bits<16>>,
    cwr0: Signal<Local, Bit>,
    cwrs: Signal<Local, Bits<16>>,
    cwrn: Signal<Local, Bits<16>>,
    xc: Signal<Local, Wide32>,
    cw32: Signal<Local, Bits<32>>,
    ais: Signal<Local, Bits<32>>,
    aige: Signal<Local, Bit>,
    aim: Signal<Local, Bits<32>>,
    cwi: Signal<Local, Bits<16>>,
    sss: Signal<Local, Bits<32>>,
    cws: Signal<Local, Bits<16>>,
    n_nss: Signal<Local, Bits<PATHS>>,
    idel: Signal<Local, Bits<16>>,
    izero: Signal<Local, Bit>,
    inew: Signal<Local, Bits<16>>,
    n_h: [Signal<Local, Bits<2>>; PATHS],
    n_ent: [Signal<Local, Bits<16>>; PATHS],
    n_pl: [Signal<Local, Bits<3>>; PATHS],
    n_pend: [Signal<Local, Bit>; PATHS],
    n_pu: Signal<Local, Bits<8>>,
    me: [Signal<Local, Bits<16>>; PATHS],
    mp: [Signal<Local, Bits<3>>; PATHS],
    mh: [Signal<Local, Bits<2>>; PATHS],
    ma: [Signal<Local, Bits<16>>; PATHS],
    ge4: [Signal<Local, Bits<16>>; GROUPS],
    gp4: [Signal<Local, Bits<3>>; GROUPS],
    gh4: [Signal<Local, Bits<2>>; GROUPS],
    ga4: [Signal<Local, Bits<16>>; GROUPS],
    sh1: Signal<Local, Bits<16>>,
    cwm: Signal<Local, Bits<16>>,
    w34: Signal<Local, Wide34>,
    w34c: Signal<Local, Wide34>,
    w34a: Signal<Local, Wide34>,
    a34: Signal<Local, Bits<34>>,
    x34: Signal<Local, Bits<34>>,
    c34: Signal<Local, Bits<34>>,
    s34: Signal<Local, Bits<34>>,
    y34: Signal<Local, Bits<34>>,
    neg_h: Signal<Local, Bits<PATHS>>,
    neg_l: Signal<Local, Bits<PATHS>>,
    oh_hi: Signal<Local, Bits<PATHS>>,
    oh_lo: Signal<Local, Bits<PATHS>>,
    // locals: connection-wide
    infp: Signal<Local, Bits<16>>,
    w18: [Signal<Local, Wide18>; 5],
    v18: [Signal<Local, Bits<18>>; 5],
    s_pc: Signal<Local, Bits<18>>,
    s_pa: Signal<Local, Bits<18>>,
    s_pi: Signal<Local, Bits<18>>,
    s_ca: Signal<Local, Bits<18>>,
    s_ci: Signal<Local, Bits<18>>,
    s_ti: Signal<Local, Bits<18>>,
    csx: [Signal<Local, Bits<18>>; 4],
    csy: [Signal<Local, Bits<18>>; 4],
    csz: [Signal<Local, Bits<18>>; 4],
    r3: [Signal<Local, Bits<18>>; 4],
    cp: Signal<Local, Bit>,
    lek: [Signal<Local, Bit>; 4],
    res: [Signal<Local, Bits<16>>; 4],
    pres: [Signal<Local, Bits<16>>; 4],
    tcr: Signal<Local, Bits<16>>,
    pcr: Signal<Local, Bits<16>>,
    n_total: Signal<Local, Bits<16>>,
    n_probes: Signal<Local, Bits<16>>,
    reroute: Signal<Local, Bit>,
    rec: Signal<Local, SelOut>,
    rec2: Signal<Local, SelOut>,
    lim1: Signal<Local, Bits<16>>,
    pm: Signal<Local, Bits<PATHS>>,
    npl: Signal<Local, Bits<4>>,
    // locals: record pipeline
    member: Signal<Local, Bits<PATHS>>,
    mem1: Signal<Local, Bits<PATHS>>,
    am: [Signal<Local, Bits<16>>; PATHS],
    bm: [Signal<Local, Bits<16>>; PATHS],
    sum: Signal<Local, Bits<16>>,
    up: Signal<Local, Bits<16>>,
    aup: Signal<Local, Bits<32>>,
    xs: Signal<Local, Wide32>,
    sum2: Signal<Local, Bits<32>>,
    frec: Signal<Local, SelOut>,
}

impl Default for PathSelectorHw {
    fn default() -> Self {
        macro_rules! d {
            ($($f:ident),*) => {
                Self {
                    $($f: Default::default(),)*
                    k4: core::array::from_fn(|i| kc(i as u64)),
                    p4: core::array::from_fn(|b| kc(1 << b)),
                    enc16: core::array::from_fn(|b| {
                        kc((0..PATHS as u64).filter(|i| i & (1 << b) != 0).map(|i| 1 << i).sum())
                    }),
                    c8b: kc(8),
                    pup: core::array::from_fn(|k| kc((1u64 << (k + 1)) - 1)),
                    pmod: core::array::from_fn(|x| kc((x % PATHS % (x / PATHS + 1)) as u64)),
                    ent0: core::array::from_fn(|i| kc(u64::from(mroce_model::path_selector::entropy_from(i as u16)))),
                    oh16: core::array::from_fn(|i| kc(1 << i)),
                    oh8: core::array::from_fn(|i| kc(1 << i)),
                    z16: kc(0),
                    z2: kc(0),
                    z3: kc(0),
                    one16: kc(1),
                    two16: kc(2),
                    c_ff: kc(0xFF),
                    k18: core::array::from_fn(|i| kc(i as u64 + 1)),
                    one18: kc(1),
                    one34: kc(1),
                    k2: core::array::from_fn(|i| kc(i as u64 + 1)),
                    c12: kc(12),
                    ones16: kc(0xFFFF),
                    c_one: kc(u64::from(CWND_ONE)),
                    c_init: kc(u64::from(CWND_INIT_PKTS << CWND_FRAC_BITS)),
                    c_max: kc(u64::from(CWND_MAX_PKTS << CWND_FRAC_BITS)),
                    c_max_less1: kc(u64::from((CWND_MAX_PKTS << CWND_FRAC_BITS) - CWND_ONE)),
                    c_max32: kc(u64::from(CWND_MAX_PKTS << CWND_FRAC_BITS)),
                    c_init2m1: kc(u64::from((2 * CWND_INIT_PKTS << CWND_FRAC_BITS) - 1)),
                    c_min: kc(u64::from(CWND_MIN_PKTS << CWND_FRAC_BITS)),
                    c_g: kc(u64::from(ALPHA_ONE >> ECN_G_SHIFT)),
                    c_a8: kc(u64::from(ALPHA_ONE / 8)),
                    c_ent_hi: kc(0xC000),
                    c_ent_lo: kc(0x3FFF),
                    c8: kc(u64::from(CWND_FRAC_BITS)),
                    c8w: kc(u64::from(CWND_FRAC_BITS)),
                    c_ash0: kc(ASH_ZERO),
                    z32: kc(0),
                    one4: kc(1),
                    one5: kc(1),
                    occ: FifoOccupancy::new(SEL_FIFO_DEPTH),
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
                    c_paths: kc(PATHS as u64),
                }
            };
        }
        d!(
            clock, in_valid, in_ready, in_op, in_path, in_room, in_a, in_b, in_c, in_flag, out_valid, out_ready, out,
            fifo, q1r, q2r, q3r, q3sum, q3up, q4r, q4aup, q4sum2, q4up, q1a, q2s, q2c, pr, po, health, plane, entropy,
            cwnd, inflight, alpha, ash, ai_acc, cwr_left, nss, pending, pend_ent, eh, above, planes_up, nlimit, total,
            probes, wp, rp, cnt, rdy, accept, pop, ial, xa, ia32, xb, ib32, s32, ncs_s, ncs_c, o, o1, pu, elig_h, elig,
            lim_ok, ab, hm, oh, sel_idx, found, ge, at, ash4, anew, nash, cut, cwc, cwr0, cwrs, xc, cw32, ais, aige,
            aim, cwi, sss, cws, n_nss, n_h, n_ent, n_pl, n_pend, n_pu, infp, w18, v18, s_pc, s_pa, s_pi, s_ca, s_ci,
            s_ti, csx, csy, csz, r3, cp, n_total, n_probes, reroute, rec, rec2, lim1, pm, npl, member, mem1, am, bm,
            sum, up, aup, xs, sum2, frec, rr, rmx, nrw, irow, m_cw, m_in, r_in, rin, m_al, m_sh, m_ai, m_cr, t8_cw,
            t4_cw, t2_cw, t8_in, t4_in, t2_in, t8_al, t4_al, t2_al, t8_sh, t4_sh, t2_sh, t8_ai, t4_ai, t2_ai, t8_cr,
            t4_cr, t2_cr, rw, cwrn, inew, sh1, cwm, w34, w34c, w34a, a34, x34, c34, s34, y34, wlt, lek, res, pres, tcr,
            pcr, ipm, inpl, cwl, idel, izero, neg_h, neg_l, oh_hi, oh_lo, me, mp, mh, ma, ge4, gp4, gh4, ga4, nlm, wv,
            nwall, wpath, dacc, dce, idfr, iaimd, wm, wo1, wd, wok, wlt2, nlmn, nwo, wlt1, tainc2, geq, alab, alm1,
            alm2, gw, gv, gd, gd1, gd2, g_m, g_t, g_t2, g_i, m_pc, sch, chg, xda, t8_da, t4_da, t2_da, dsum, dw18,
            aw18, d18, a18, dwv, dwi, dwh, dwn, esum, ece, xe, e32, pa, ac, acr, ifl, tainc, s_hi, s_lo, s_hit, oa,
            aimd, cgtp, cgtv
        )
    }
}

// The IF16 / IF8 / IF4 loops of the other configurations have no trips here (on purpose).
// Nested ifs stay nested: hdl_gen writes them into the Verilog as written.
#[allow(clippy::reversed_empty_ranges, clippy::collapsible_if)]
impl Logic for PathSelectorHw {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, q1r, q2r, q3r, q3sum, q3up, q4r, q4aup, q4sum2, q4up, pr, pa, po, rr, ac, acr, ifl, nss,
            above, planes_up, nlimit, total, probes, wp, rp, cnt, rin, nlm, nwo, sch, geq, alab, alm1, alm2, wv, nwall,
            wpath, dce, dwv, dwi, dwh, dwn
        );
        self.fifo.clock.next = self.clock.val();
        self.occ.clock.next = self.clock.val();
        for i in 0..PATHS {
            self.q1a[i].clock.next = self.clock.val();
            self.q1a[i].d.next = self.alpha[i].q.val();
        }
        for i in 0..GROUPS {
            self.q2s[i].clock.next = self.clock.val();
            self.q2c[i].clock.next = self.clock.val();
        }
        for i in 0..PATHS {
            self.health[i].clock.next = self.clock.val();
            self.plane[i].clock.next = self.clock.val();
            self.entropy[i].clock.next = self.clock.val();
            self.cwnd[i].clock.next = self.clock.val();
            self.inflight[i].clock.next = self.clock.val();
            self.alpha[i].clock.next = self.clock.val();
            self.ash[i].clock.next = self.clock.val();
            self.ai_acc[i].clock.next = self.clock.val();
            self.cwr_left[i].clock.next = self.clock.val();
            self.pending[i].clock.next = self.clock.val();
            self.pend_ent[i].clock.next = self.clock.val();
            self.eh[i].clock.next = self.clock.val();
            self.dacc[i].clock.next = self.clock.val();
            self.dacc[i].d.next = self.dacc[i].q.val();
            self.cwnd[i].d.next = self.cwnd[i].q.val();
            self.inflight[i].d.next = self.inflight[i].q.val();
            self.alpha[i].d.next = self.alpha[i].q.val();
            self.ash[i].d.next = self.ash[i].q.val();
            self.ai_acc[i].d.next = self.ai_acc[i].q.val();
            self.cwr_left[i].d.next = self.cwr_left[i].q.val();
            self.pend_ent[i].d.next = self.pend_ent[i].q.val();
        }

        // ---------------- input: decode everything that depends on the operation alone ----------
        self.rdy.next = self.occ.room.val();
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
        self.pr.d.next.hit = self.zp.val();
        self.pr.d.next.low = self.zp.val();
        if self.accept.val() {
            self.pr.d.next.hit = self.onep.val() << self.in_path.val();
            // the paths below in_path: (1 << p) - 1 without a carry chain
            self.pr.d.next.low = !(self.onesp.val() << self.in_path.val());
        }
        // al = min(a + b, 65535) and nal = -al, each one carry chain from the inputs (the
        // CSR command's input multiplexer sits in front of them): the overflow is the 17-bit
        // sum's carry, and -(a + b) = ~a + ~b + 2, a carry-save layer and one chain
        self.xa.next.lo = self.in_a.val();
        self.xa.next.hi = self.z16.val();
        self.ia32.next = self.xa.val().into();
        self.xb.next.lo = self.in_b.val();
        self.xb.next.hi = self.z16.val();
        self.ib32.next = self.xb.val().into();
        self.s32.next = self.ia32.val() + self.ib32.val();
        self.ncs_s.next = !self.in_a.val() ^ !self.in_b.val() ^ self.two16.val();
        self.ncs_c.next = ((!self.in_a.val() & !self.in_b.val())
            | (!self.in_a.val() & self.two16.val())
            | (!self.in_b.val() & self.two16.val()))
            << self.one16.val();
        self.ial.next = self.s32.val().get_bits::<16>(0);
        self.pr.d.next.nal = self.ncs_s.val() + self.ncs_c.val();
        if self.s32.val().get_bit(16) {
            self.ial.next = self.ones16.val();
            self.pr.d.next.nal = self.one16.val();
        }
        self.pr.d.next.al = self.ial.val();
        self.pr.d.next.a8 = self.ia32.val() << self.c8w.val();
        self.pr.d.next.a_nz = self.in_a.val().any();
        // new(paths = a, planes = b): planes clamped to 1..=8, path p on plane p % planes
        self.ipm.next = !(self.onesp.val() << self.in_a.val().get_bits::<PB>(0));
        if self.in_a.val().get_bits::<8>(0) >= self.c_paths.val() {
            self.ipm.next = self.onesp.val();
        }
        self.inpl.next = self.in_b.val().get_bits::<4>(0);
        if !self.in_b.val().get_bits::<8>(0).any() {
            self.inpl.next = self.one4.val();
        }
        if self.in_b.val().get_bits::<8>(0) > self.c8b.val() {
            self.inpl.next = self.k4[8].val();
        }
        self.pr.d.next.pm = self.ipm.val();
        self.pr.d.next.npl = self.inpl.val();
        self.pr.d.next.g1 = self.z16.val();
        if self.in_flag.val() {
            self.pr.d.next.g1 = self.c_g.val();
        }
        self.pr.d.next.ent = self.c_ent_hi.val() | (self.in_a.val() & self.c_ent_lo.val());
        self.pr.d.next.is_sel = self.accept.val() && (self.in_op.val() == self.op_select.val());
        self.pr.d.next.is_charge = self.accept.val() && (self.in_op.val() == self.op_charge.val());
        self.pr.d.next.is_credit = self.accept.val() && (self.in_op.val() == self.op_credit.val());
        self.pr.d.next.is_health = self.accept.val() && (self.in_op.val() == self.op_health.val());
        self.pr.d.next.is_clear = self.accept.val() && (self.in_op.val() == self.op_clear.val());
        self.pr.d.next.is_rreroll = self.accept.val() && (self.in_op.val() == self.op_rreroll.val());
        self.pr.d.next.is_reroll = self.accept.val() && (self.in_op.val() == self.op_reroll.val());
        self.pr.d.next.is_plane = self.accept.val() && (self.in_op.val() == self.op_plane.val());
        self.pr.d.next.is_plane_up = self.accept.val() && (self.in_op.val() == self.op_plane_up.val());
        self.pr.d.next.is_limit = self.accept.val() && (self.in_op.val() == self.op_limit.val());
        self.pr.d.next.is_init = self.accept.val() && (self.in_op.val() == self.op_init.val());
        self.pr.d.next.is_probe = self.accept.val() && (self.in_op.val() == self.op_probe.val());
        // an AIMD credit (acked > 0) right after an operation that wrote its path's window state
        // defers its sample (SPEC.md §6.3): input-only, from the last accepted operation
        self.iaimd.next = (self.in_op.val() == self.op_credit.val()) && self.in_a.val().any();
        self.idfr.next = self.iaimd.val()
            && (!self.nwall.q.val() || (self.wv.q.val() && (self.wpath.q.val() == self.in_path.val())));
        self.pr.d.next.dfr = self.accept.val() && self.idfr.val();
        if self.accept.val() {
            self.nwall.d.next = self.in_op.val() != self.op_init.val();
            self.wpath.d.next = self.in_path.val();
            self.wv.d.next = (self.in_op.val() == self.op_health.val())
                || (self.in_op.val() == self.op_rreroll.val())
                || (self.iaimd.val() && !self.idfr.val());
        }

        // ---------------- the operation: selection ----------------
        self.pa.d.next = self.pr.q.val();
        self.po.d.next = self.pa.q.val();
        self.o.next = self.po.q.val();
        self.oa.next = self.pa.q.val();
        self.o1.next = self.pr.q.val();
        // the read stage keeps the deferred samples (every operation passes it in order): a
        // deferred credit adds its sample to its path's, an AIMD credit takes the path's sample
        // into its own (acked, saturating; CE ORed) for the compute stage. The count itself is
        // read at the input (`da`, below), so that this stage only adds.
        // acked + deferred, saturating at 65535 (the saturation from the sum's carry)
        self.dw18.next.lo = self.o1.val().da;
        self.dw18.next.hi = self.z2.val();
        self.d18.next = self.dw18.val().into();
        self.aw18.next.lo = self.o1.val().a;
        self.aw18.next.hi = self.z2.val();
        self.a18.next = self.aw18.val().into();
        self.dsum.next = self.d18.val() + self.a18.val();
        self.esum.next = self.dsum.val().get_bits::<16>(0);
        if self.dsum.val().get_bit(16) {
            self.esum.next = self.ones16.val();
        }
        // last clock's write of a deferred count
        for i in 0..PATHS {
            if self.dwv.q.val() && self.dwh.q.val().get_bit(i) {
                self.dacc[i].d.next = self.dwn.q.val();
            }
        }
        self.dwv.d.next = false;
        self.dwi.d.next = self.o1.val().path;
        self.dwh.d.next = self.o1.val().hit;
        self.dwn.d.next = self.z16.val();
        self.ece.next = self.o1.val().flag || (self.dce.q.val() & self.o1.val().hit).any();
        self.xe.next.lo = self.esum.val();
        self.xe.next.hi = self.z16.val();
        self.e32.next = self.xe.val().into();
        if self.o1.val().is_credit && self.o1.val().a_nz {
            self.pa.d.next.a = self.esum.val();
            self.pa.d.next.a8 = self.e32.val() << self.c8w.val();
            self.pa.d.next.flag = self.ece.val();
            self.pa.d.next.g1 = self.z16.val();
            if self.ece.val() {
                self.pa.d.next.g1 = self.c_g.val();
            }
            self.dce.d.next = self.dce.q.val() & !self.o1.val().hit;
            if self.o1.val().dfr && self.ece.val() {
                self.dce.d.next = self.dce.q.val() | self.o1.val().hit;
            }
            self.dwv.d.next = true;
            if self.o1.val().dfr {
                self.dwn.d.next = self.esum.val();
            }
        }
        if self.o1.val().is_rreroll {
            self.dce.d.next = self.dce.q.val() & !self.o1.val().hit;
            self.dwv.d.next = true;
        }
        if self.o1.val().is_init {
            self.dce.d.next = self.zp.val();
            self.dwv.d.next = false;
            for i in 0..PATHS {
                self.dacc[i].d.next = self.z16.val();
            }
        }
        // the entering operation's deferred count: a binary multiplexer tree on its path, then
        // the write landing at this edge (last clock's), then the one this stage decides now
        for j in 0..(PATHS / 2) {
            self.t8_da[j].next = self.dacc[2 * j].q.val();
            if self.in_path.val().get_bit(0) {
                self.t8_da[j].next = self.dacc[2 * j + 1].q.val();
            }
        }
        for j in 0..(PATHS / 4) {
            self.t4_da[j].next = self.t8_da[2 * j].val();
            if self.in_path.val().get_bit(1) {
                self.t4_da[j].next = self.t8_da[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 8) {
            self.t2_da[j].next = self.t4_da[2 * j].val();
            if self.in_path.val().get_bit(2) {
                self.t2_da[j].next = self.t4_da[2 * j + 1].val();
            }
        }
        for j in 0..IF16 {
            self.xda.next = self.t2_da[2 * j].val();
            if self.in_path.val().get_bit(3) {
                self.xda.next = self.t2_da[2 * j + 1].val();
            }
        }
        for j in 0..IF8 {
            self.xda.next = self.t2_da[j].val();
        }
        for j in 0..IF4 {
            self.xda.next = self.t4_da[j].val();
        }
        if self.dwv.q.val() && (self.dwi.q.val() == self.in_path.val()) {
            self.xda.next = self.dwn.q.val();
        }
        self.pr.d.next.da = self.xda.val();
        if (self.o1.val().path == self.in_path.val())
            && ((self.o1.val().is_credit && self.o1.val().a_nz) || self.o1.val().is_rreroll)
        {
            self.pr.d.next.da = self.z16.val();
            if self.o1.val().dfr {
                self.pr.d.next.da = self.esum.val();
            }
        }
        if self.o1.val().is_init {
            self.pr.d.next.da = self.z16.val();
        }
        self.pu.next = self.planes_up.q.val();
        // eligible_health (Up or Suspect, not draining for a re-roll, plane up) and window_open
        self.elig_h.next = self.zp.val();
        self.elig.next = self.zp.val();
        self.wm.next = self.zp.val();
        self.wo1.next = self.zp.val();
        for i in 0..PATHS {
            if self.eh[i].q.val() {
                self.elig_h.next = self.elig_h.val() | self.oh16[i].val();
            }
        }
        for i in 0..PATHS {
            // window_open: (inflight << 8) < cwnd (256 when Suspect), an 8-bit compare
            self.cwl[i].next = self.cwnd[i].q.val();
            if self.health[i].q.val() == self.h_suspect.val() {
                self.cwl[i].next = self.c_min.val();
            }
            // the tests with 0, 1 and 2 more packets in flight: the last SELECT's charge
            // (`sch`) lands at this edge, so its path counts one more; a charge this operation
            // makes that closes the window is seen by the next SELECT at once. inflight + k <
            // (cwl >> 8) + (low byte nonzero): from one difference d = (cwl >> 8) - inflight's low
            // byte (one carry chain), d > k, or d = k with a nonzero low byte
            self.wd[i].next = (self.cwl[i].val() >> self.c8w.val()) - (self.inflight[i].q.val() & self.c_ff.val());
            self.wok[i].next = !self.inflight[i].q.val().get_bits::<8>(8).any() && !self.wd[i].val().get_bit(15);
            self.wlt[i].next = self.wok[i].val()
                && (self.wd[i].val().get_bits::<8>(0).any() || self.cwl[i].val().get_bits::<8>(0).any());
            self.wlt1[i].next = self.wok[i].val()
                && (self.wd[i].val().get_bits::<7>(1).any()
                    || (self.wd[i].val().get_bit(0) && self.cwl[i].val().get_bits::<8>(0).any()));
            self.wlt2[i].next = self.wok[i].val()
                && (self.wd[i].val().get_bits::<6>(2).any()
                    || (self.wd[i].val().get_bit(1)
                        && (self.wd[i].val().get_bit(0) || self.cwl[i].val().get_bits::<8>(0).any())));
            if self.sch.q.val().get_bit(i) {
                if self.wlt1[i].val() {
                    self.wm.next = self.wm.val() | self.oh16[i].val();
                }
                if self.wlt2[i].val() {
                    self.wo1.next = self.wo1.val() | self.oh16[i].val();
                }
            } else {
                if self.wlt[i].val() {
                    self.wm.next = self.wm.val() | self.oh16[i].val();
                }
                if self.wlt1[i].val() {
                    self.wo1.next = self.wo1.val() | self.oh16[i].val();
                }
            }
            // SELECT tests the windows recorded by the operation before it (SPEC.md §6.3)
            if self.eh[i].q.val()
                && self.o.val().room.get_bit(i)
                && !self.nlm.q.val().get_bit(i)
                && !(self.sch.q.val().get_bit(i) && self.nwo.q.val().get_bit(i))
            {
                self.elig.next = self.elig.val() | self.oh16[i].val();
            }
        }
        // the connection limit gates the outcome, not the search (its compare runs in parallel)
        self.lim_ok.next = self.total.q.val() < !self.nlimit.q.val();
        // round robin from the path after `last`: the lowest eligible path above `last`, else the
        // lowest eligible; both lowest set bits (x & -x, a carry chain each) in parallel, and from
        // the same chains the paths above the choice (x ^ -x), the next start
        self.hm.next = self.elig.val() & self.above.q.val();
        self.neg_h.next = !self.hm.val() + self.onep.val();
        self.neg_l.next = !self.elig.val() + self.onep.val();
        self.oh_hi.next = self.hm.val() & self.neg_h.val();
        self.oh_lo.next = self.elig.val() & self.neg_l.val();
        self.found.next = self.elig.val().any() && self.lim_ok.val();
        self.oh.next = self.oh_lo.val();
        self.ab.next = self.elig.val() ^ self.neg_l.val();
        if self.hm.val().any() {
            self.oh.next = self.oh_hi.val();
            self.ab.next = self.hm.val() ^ self.neg_h.val();
        }
        if !self.lim_ok.val() {
            self.oh.next = self.zp.val();
        }

        // ---------------- stage A: an AIMD credit's window arithmetic ----------------
        // Only the addressed path's window changes, so one datapath computes its next state from
        // `rr`, the row read a clock ahead: a copy of the window arithmetic per path (~4 k LUTs
        // for sixteen) would cost most of the simulated time for no throughput. The result is
        // registered (`ar`) and written back in stage B: the operation lag (SPEC.md §6.3) makes
        // an AIMD credit right behind one on its path defer its sample, so no operation reads
        // the window state stage A is computing, and the arithmetic is in no loop.
        self.rw.next = self.rr.q.val();
        self.w34a.next.lo = self.oa.val().a8;
        self.w34a.next.hi = self.z2.val();
        self.a34.next = self.w34a.val().into();
        // alpha <- alpha - alpha / 16 + (ce ? 64 : 0), at most 1024; its decrease shift
        // (no clamp needed: alpha <= 1024 holds by induction, 1024 - 64 + 64 = 1024, and as a
        // carry-save sum alpha + ~(alpha >> 4) + (ce ? 64 : 0) + 1 it is one carry chain)
        self.at.next = self.oa.val().g1;
        self.ash4.next = !(self.rw.val().alpha >> self.k4[4].val());
        self.anew.next = (self.rw.val().alpha ^ (self.ash4.val() ^ self.at.val()))
            + ((((self.rw.val().alpha & self.ash4.val())
                | ((self.rw.val().alpha & self.at.val()) | (self.ash4.val() & self.at.val())))
                << self.one16.val())
                | self.one16.val());
        self.nash.next = self.c_ash0.val();
        for k in 1..11 {
            if self.anew.val().get_bit(k) {
                self.nash.next = self.k4[11 - k].val();
            }
        }
        // decrease by the alpha before this credit: cwnd - (cwnd >> shift), at least one packet;
        // the shift as two 4:1 multiplexer levels, the floor test (cwnd - cut < 256, i.e.
        // cwnd < 256 or cwnd - 256 < cut) as a compare beside the subtraction
        self.sh1.next = self.rw.val().cwnd;
        if self.rw.val().ash.get_bits::<2>(0) == self.k2[0].val() {
            self.sh1.next = self.rw.val().cwnd >> self.k4[1].val();
        }
        if self.rw.val().ash.get_bits::<2>(0) == self.k2[1].val() {
            self.sh1.next = self.rw.val().cwnd >> self.k4[2].val();
        }
        if self.rw.val().ash.get_bits::<2>(0) == self.k2[2].val() {
            self.sh1.next = self.rw.val().cwnd >> self.k4[3].val();
        }
        self.cut.next = self.sh1.val();
        if self.rw.val().ash.get_bits::<2>(2) == self.k2[0].val() {
            self.cut.next = self.sh1.val() >> self.k4[4].val();
        }
        if self.rw.val().ash.get_bits::<2>(2) == self.k2[1].val() {
            self.cut.next = self.sh1.val() >> self.k4[8].val();
        }
        if self.rw.val().ash.get_bits::<2>(2) == self.k2[2].val() {
            self.cut.next = self.sh1.val() >> self.c12.val();
        }
        self.cwm.next = self.rw.val().cwnd - self.c_min.val();
        self.cwc.next = self.rw.val().cwnd - self.cut.val();
        if !self.rw.val().cwnd.get_bits::<8>(8).any() || (self.cwm.val() < self.cut.val()) {
            self.cwc.next = self.c_min.val();
        }
        // the mark that ends slow start (shift 1) halves the window, not below the initial one:
        // ceil(cwnd / 2) < init is cwnd < 2 init - 1, a compare of the row beside the subtraction
        // (in slow start cwnd >= init: it only grows, and SET_HEALTH caps it at init)
        if !self.rw.val().nss && (self.rw.val().cwnd < self.c_init2m1.val()) {
            self.cwc.next = self.c_init.val();
        }
        self.cwr0.next = self.oa.val().a >= self.rw.val().cwr_left;
        self.cwrs.next = self.rw.val().cwr_left - self.oa.val().a;
        self.cwrn.next = (self.rw.val().cwnd >> self.c8.val()) + self.one16.val();
        // additive increase
        self.xc.next.lo = self.rw.val().cwnd;
        self.xc.next.hi = self.z16.val();
        self.cw32.next = self.xc.val().into();
        // s = ai_acc + a8 (33 bits, wrapped to 32 as in the model) and y = ai_acc + a8 - cwnd
        // (34-bit signed, a carry-save layer and one chain) in parallel: ais >= cwnd is y >= 0
        // without the wrap, y >= 2^32 with it; ais - cwnd is y mod 2^32
        self.w34.next.lo = self.rw.val().ai_acc;
        self.w34.next.hi = self.z2.val();
        self.x34.next = self.w34.val().into();
        self.w34c.next.lo = self.cw32.val();
        self.w34c.next.hi = self.z2.val();
        self.c34.next = self.w34c.val().into();
        self.s34.next = self.x34.val() + self.a34.val();
        self.y34.next = (self.x34.val() ^ (self.a34.val() ^ !self.c34.val()))
            + ((((self.x34.val() & self.a34.val())
                | ((self.x34.val() & !self.c34.val()) | (self.a34.val() & !self.c34.val())))
                << self.one34.val())
                | self.one34.val());
        self.ais.next = self.s34.val().get_bits::<32>(0);
        self.aim.next = self.y34.val().get_bits::<32>(0);
        self.aige.next = !self.y34.val().get_bit(33);
        if self.s34.val().get_bit(32) {
            self.aige.next = !self.y34.val().get_bit(33) && self.y34.val().get_bit(32);
        }
        self.cwi.next = self.rw.val().cwnd + self.c_one.val();
        if self.rw.val().cwnd > self.c_max_less1.val() {
            self.cwi.next = self.c_max.val();
        }
        // slow start: cwnd + (acked << 8), at most the largest window (32 bits: no wrap)
        self.sss.next = self.cw32.val() + self.oa.val().a8;
        self.cws.next = self.sss.val().get_bits::<16>(0);
        if self.sss.val() > self.c_max32.val() {
            self.cws.next = self.c_max.val();
        }
        // the candidates, registered for stage B
        self.acr.d.next = self.rw.val();
        self.ac.d.next.anew = self.anew.val();
        self.ac.d.next.nash = self.nash.val();
        self.ac.d.next.cwrs = self.cwrs.val();
        self.ac.d.next.cwr0 = self.cwr0.val();
        self.ac.d.next.cwrn = self.cwrn.val();
        self.ac.d.next.cwc = self.cwc.val();
        self.ac.d.next.cws = self.cws.val();
        self.ac.d.next.ais = self.ais.val();
        self.ac.d.next.aim = self.aim.val();
        self.ac.d.next.aige = self.aige.val();
        self.ac.d.next.cwi = self.cwi.val();

        // ---------------- stage A: the addressed path's packets in flight ----------------
        // read in the read stage (`rin`, below), so that A starts from a register
        self.m_in.next = self.rin.q.val();
        self.tainc.next = self.m_in.val();
        if !self.m_in.val().all() {
            self.tainc.next = self.m_in.val() + self.one16.val();
        }
        self.tainc2.next = self.m_in.val() + self.two16.val();
        if self.m_in.val().get_bits::<15>(1).all() {
            self.tainc2.next = self.ones16.val();
        }
        // the last SELECT's charge, landing at this edge, is this path's (one more in flight)
        self.m_pc.next = (self.sch.q.val() & self.oa.val().hit).any();

        // ---------------- stage B: the addressed path's packets in flight ----------------
        self.infp.next = self.ifl.q.val();
        // credit: done = min(acked + lost, inflight)
        self.ge.next = self.geq.q.val();
        // the addressed path's inflight: inflight + delta (-(acked + lost), +1 or 0, one carry
        // chain) or zero (done >= inflight, clear)
        self.idel.next = self.z16.val();
        self.izero.next = false;
        if self.o.val().is_credit {
            self.idel.next = self.o.val().nal;
            if self.ge.val() {
                self.izero.next = true;
            }
        }
        if self.o.val().is_charge || self.o.val().is_probe {
            self.idel.next = self.one16.val();
        }
        if self.o.val().is_clear {
            self.izero.next = true;
        }
        // a charge saturates: the all-ones test runs beside the sum, not in front of it
        self.inew.next = self.infp.val() + self.idel.val();
        if (self.o.val().is_charge || self.o.val().is_probe) && self.infp.val().all() {
            self.inew.next = self.infp.val();
        }
        if self.izero.val() {
            self.inew.next = self.z16.val();
        }
        // ---------------- read stage: the addressed path's packets in flight ----------------
        // read from the registers (a binary multiplexer tree on the path bits), with the writes
        // landing at this edge forwarded (B's count, the last SELECT's charge, INIT), so that
        // A reads a register; A forwards the writes of the next edge (`ifl`)
        for j in 0..(PATHS / 2) {
            self.t8_in[j].next = self.inflight[2 * j].q.val();
            if self.o1.val().path.get_bit(0) {
                self.t8_in[j].next = self.inflight[2 * j + 1].q.val();
            }
        }
        for j in 0..(PATHS / 4) {
            self.t4_in[j].next = self.t8_in[2 * j].val();
            if self.o1.val().path.get_bit(1) {
                self.t4_in[j].next = self.t8_in[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 8) {
            self.t2_in[j].next = self.t4_in[2 * j].val();
            if self.o1.val().path.get_bit(2) {
                self.t2_in[j].next = self.t4_in[2 * j + 1].val();
            }
        }
        for j in 0..IF16 {
            self.r_in.next = self.t2_in[2 * j].val();
            if self.o1.val().path.get_bit(3) {
                self.r_in.next = self.t2_in[2 * j + 1].val();
            }
        }
        for j in 0..IF8 {
            self.r_in.next = self.t2_in[j].val();
        }
        for j in 0..IF4 {
            self.r_in.next = self.t4_in[j].val();
        }
        self.rin.d.next = self.r_in.val();
        if (self.sch.q.val() & self.o1.val().hit).any() && !self.r_in.val().all() {
            self.rin.d.next = self.r_in.val() + self.one16.val();
        }
        if (self.o.val().is_credit || self.o.val().is_charge || self.o.val().is_probe || self.o.val().is_clear)
            && (self.o.val().path == self.o1.val().path)
        {
            self.rin.d.next = self.inew.val();
        }
        if self.o.val().is_init {
            self.rin.d.next = self.z16.val();
        }
        // the next operation's count (stage A's): B's count when B writes that path, SELECT's
        // charge of it (the late choice picks between two ready values), zero after INIT
        self.ifl.d.next = self.m_in.val();
        if self.m_pc.val() {
            self.ifl.d.next = self.tainc.val();
        }
        if (self.o.val().is_credit || self.o.val().is_charge || self.o.val().is_probe || self.o.val().is_clear)
            && (self.o.val().path == self.oa.val().path)
        {
            self.ifl.d.next = self.inew.val();
        }
        // the select charges the next operation's path when that path is the lowest set bit of
        // the searched mask: tested beside the search's carry chains, not behind them
        self.s_hi.next = (self.hm.val() & self.oa.val().hit).any() && !(self.hm.val() & self.oa.val().low).any();
        self.s_lo.next = (self.elig.val() & self.oa.val().hit).any() && !(self.elig.val() & self.oa.val().low).any();
        self.s_hit.next = self.s_lo.val();
        if self.hm.val().any() {
            self.s_hit.next = self.s_hi.val();
        }
        if self.o.val().is_sel && self.lim_ok.val() && self.s_hit.val() {
            self.ifl.d.next = self.tainc.val();
            if self.m_pc.val() {
                self.ifl.d.next = self.tainc2.val();
            }
        }
        if self.o.val().is_init {
            self.ifl.d.next = self.z16.val();
        }
        // the drain test of the next operation, for each value `ifl` takes above: al >= m_in,
        // >= m_in + 1 and >= m_in + 2 from one difference (saturating as `tainc` does), and
        // for B's own count, al_A + al_B >= inflight (credit), al_A > inflight (a charge)
        self.gw[0].next.lo = self.oa.val().al;
        self.gw[0].next.hi = self.z2.val();
        self.gw[1].next.lo = self.m_in.val();
        self.gw[1].next.hi = self.z2.val();
        self.gw[2].next.lo = self.infp.val();
        self.gw[2].next.hi = self.z2.val();
        self.gw[3].next.lo = self.o1.val().al;
        self.gw[3].next.hi = self.z2.val();
        for k in 0..4 {
            self.gv[k].next = self.gw[k].val().into();
        }
        // for the next clock, when these two are in B and A
        self.alab.d.next = self.gv[3].val() + self.gv[0].val();
        self.alm1.d.next = self.gv[3].val() - self.k18[0].val();
        self.alm2.d.next = self.gv[3].val() - self.k18[1].val();
        self.gd.next = self.gv[0].val() - self.gv[1].val();
        self.gd1.next = self.alm1.q.val() - self.gv[1].val();
        self.gd2.next = self.alm2.q.val() - self.gv[1].val();
        self.g_m.next = !self.gd.val().get_bit(17);
        self.g_t.next = !self.gd1.val().get_bit(17);
        if self.m_in.val().all() {
            self.g_t.next = self.oa.val().al.all();
        }
        self.g_t2.next = !self.gd2.val().get_bit(17);
        if self.m_in.val().get_bits::<15>(1).all() {
            self.g_t2.next = self.oa.val().al.all();
        }
        self.g_i.next = true;
        if self.o.val().is_credit {
            self.g_i.next = self.ge.val() || (self.alab.q.val() >= self.gv[2].val());
        }
        if self.o.val().is_charge || self.o.val().is_probe {
            self.g_i.next = self.oa.val().al > self.infp.val();
            if self.infp.val().all() {
                self.g_i.next = self.oa.val().al.all();
            }
        }
        self.geq.d.next = self.g_m.val();
        if self.m_pc.val() {
            self.geq.d.next = self.g_t.val();
        }
        if (self.o.val().is_credit || self.o.val().is_charge || self.o.val().is_probe || self.o.val().is_clear)
            && (self.o.val().path == self.oa.val().path)
        {
            self.geq.d.next = self.g_i.val();
        }
        if self.o.val().is_sel && self.lim_ok.val() && self.s_hit.val() {
            self.geq.d.next = self.g_t.val();
            if self.m_pc.val() {
                self.geq.d.next = self.g_t2.val();
            }
        }
        if self.o.val().is_init {
            self.geq.d.next = true;
        }
        // ---------------- stage B: write-back ----------------
        self.aimd.next = self.o.val().is_credit && self.o.val().a_nz && !self.o.val().dfr;
        // the AIMD credit's next window state, picked among stage A's candidates
        self.nrw.next = self.acr.q.val();
        self.nrw.next.alpha = self.ac.q.val().anew;
        self.nrw.next.ash = self.ac.q.val().nash;
        // in slow start the next decrease (the mark that ends it) halves the window
        if !self.acr.q.val().nss && !self.o.val().flag {
            self.nrw.next.ash = self.k4[1].val();
        }
        self.nrw.next.cwr_left = self.ac.q.val().cwrs;
        if self.ac.q.val().cwr0 {
            self.nrw.next.cwr_left = self.z16.val();
        }
        if self.o.val().flag {
            // the first CE mark ends slow start
            self.nrw.next.nss = true;
            if self.ac.q.val().cwr0 {
                self.nrw.next.cwr_left = self.ac.q.val().cwrn;
                self.nrw.next.ai_acc = self.z32.val();
                self.nrw.next.cwnd = self.ac.q.val().cwc;
            }
        } else if !self.acr.q.val().nss {
            self.nrw.next.cwnd = self.ac.q.val().cws;
        } else {
            self.nrw.next.ai_acc = self.ac.q.val().ais;
            if self.ac.q.val().aige {
                self.nrw.next.ai_acc = self.ac.q.val().aim;
                self.nrw.next.cwnd = self.ac.q.val().cwi;
            }
        }
        // the addressed path's slow-start bit (INIT clears every bit below)
        self.n_nss.next = self.nss.q.val();
        if self.aimd.val() {
            self.n_nss.next = self.nss.q.val() & !self.o.val().hit;
            if self.nrw.val().nss {
                self.n_nss.next = self.nss.q.val() | self.o.val().hit;
            }
        }
        for i in 0..PATHS {
            // next state of this path
            self.n_h[i].next = self.health[i].q.val();
            self.n_ent[i].next = self.entropy[i].q.val();
            self.n_pl[i].next = self.plane[i].q.val();
            self.n_pend[i].next = self.pending[i].q.val();
            // SET_HEALTH to Down or Suspect caps the window at the initial one: tested beside
            // each path's register, which holds the window of every operation before it
            self.cgtp[i].next = self.cwnd[i].q.val() > self.c_init.val();
            // the last SELECT's charge lands (an operation on the path writes a count that has it)
            if self.sch.q.val().get_bit(i) && !self.inflight[i].q.val().all() {
                self.inflight[i].d.next = self.inflight[i].q.val() + self.one16.val();
            }
            if self.o.val().hit.get_bit(i) {
                if self.o.val().is_credit || self.o.val().is_charge || self.o.val().is_probe || self.o.val().is_clear {
                    self.inflight[i].d.next = self.inew.val();
                }
                if self.aimd.val() {
                    self.cwnd[i].d.next = self.nrw.val().cwnd;
                    self.alpha[i].d.next = self.nrw.val().alpha;
                    self.ash[i].d.next = self.nrw.val().ash;
                    self.ai_acc[i].d.next = self.nrw.val().ai_acc;
                    self.cwr_left[i].d.next = self.nrw.val().cwr_left;
                }
                // an ACK made progress: a Suspect path is Up again (a deferred credit's too)
                if self.o.val().is_credit && self.o.val().a_nz && (self.health[i].q.val() == self.h_suspect.val()) {
                    self.n_h[i].next = self.h_up.val();
                }
                if self.o.val().is_health {
                    self.n_h[i].next = self.o.val().a.get_bits::<2>(0);
                    if ((self.o.val().a.get_bits::<2>(0) == self.h_down.val())
                        || (self.o.val().a.get_bits::<2>(0) == self.h_suspect.val()))
                        && self.cgtp[i].val()
                    {
                        self.cwnd[i].d.next = self.c_init.val();
                    }
                }
                if self.o.val().is_rreroll {
                    self.alpha[i].d.next = self.z16.val();
                    self.cwr_left[i].d.next = self.z16.val();
                    self.ash[i].d.next = self.k4[1].val();
                    if self.nss.q.val().get_bit(i) {
                        self.ash[i].d.next = self.c_ash0.val();
                    }
                }
                if self.o.val().is_credit && self.ge.val() && self.pending[i].q.val() {
                    self.n_ent[i].next = self.pend_ent[i].q.val();
                    self.n_pend[i].next = false;
                }
                if self.o.val().is_clear {
                    if self.pending[i].q.val() {
                        self.n_ent[i].next = self.pend_ent[i].q.val();
                        self.n_pend[i].next = false;
                    }
                }
                if self.o.val().is_rreroll {
                    self.pend_ent[i].d.next = self.o.val().ent;
                    if self.inflight[i].q.val().any() || self.sch.q.val().get_bit(i) {
                        self.n_pend[i].next = true;
                    } else {
                        self.n_ent[i].next = self.o.val().ent;
                    }
                }
                if self.o.val().is_reroll {
                    self.n_ent[i].next = self.o.val().ent;
                }
                if self.o.val().is_plane {
                    self.n_pl[i].next = self.o.val().a.get_bits::<3>(0);
                }
            }
        }

        // ---------------- connection-wide counters ----------------
        // credit: done = min(acked + lost, inflight) (`ge`: the path's inflight is the smaller),
        // m = min(probes, probes_inflight) (`cp`: probes is the smaller), pr = min(done, m);
        // probes_inflight -= pr and total = satsub(total, done - pr). With X = done and M = m,
        // X <= M gives pr = X and leaves total alone, else pr = M and total = max(total + M - X, 0).
        // Every (X, M) outcome is computed in parallel from registers (the three-operand sums as a
        // carry-save layer and one carry chain); the compares only drive the last multiplexers.
        self.w18[0].next.lo = self.total.q.val();
        self.w18[1].next.lo = self.probes.q.val();
        self.w18[2].next.lo = self.o.val().c;
        self.w18[3].next.lo = self.o.val().al;
        self.w18[4].next.lo = self.infp.val();
        self.w18[0].next.hi = self.z2.val();
        self.w18[1].next.hi = self.z2.val();
        self.w18[2].next.hi = self.z2.val();
        self.w18[3].next.hi = self.z2.val();
        self.w18[4].next.hi = self.z2.val();
        for k in 0..5 {
            self.v18[k].next = self.w18[k].val().into();
        }
        self.s_pc.next = self.v18[1].val() - self.v18[2].val();
        self.s_pa.next = self.v18[1].val() - self.v18[3].val();
        self.s_pi.next = self.v18[1].val() - self.v18[4].val();
        self.s_ca.next = self.v18[2].val() - self.v18[3].val();
        self.s_ci.next = self.v18[2].val() - self.v18[4].val();
        self.s_ti.next = self.v18[0].val() - self.v18[4].val();
        // total + M - X for (X, M) = (al, c), (al, P), (I, c), (I, P)
        for k in 0..4 {
            self.csx[k].next = self.v18[0].val();
        }
        self.csy[0].next = self.v18[2].val();
        self.csz[0].next = !self.v18[3].val();
        self.csy[1].next = self.v18[1].val();
        self.csz[1].next = !self.v18[3].val();
        self.csy[2].next = self.v18[2].val();
        self.csz[2].next = !self.v18[4].val();
        self.csy[3].next = self.v18[1].val();
        self.csz[3].next = !self.v18[4].val();
        for k in 0..4 {
            self.r3[k].next = (self.csx[k].val() ^ (self.csy[k].val() ^ self.csz[k].val()))
                + ((((self.csx[k].val() & self.csy[k].val())
                    | ((self.csx[k].val() & self.csz[k].val()) | (self.csy[k].val() & self.csz[k].val())))
                    << self.one18.val())
                    | self.one18.val());
        }
        self.cp.next = !self.s_pc.val().get_bit(17);
        // per outcome k = (X, M): (al, c), (al, P), (I, c), (I, P); le: X <= M
        self.lek[0].next = !self.s_ca.val().get_bit(17);
        self.lek[1].next = !self.s_pa.val().get_bit(17);
        self.lek[2].next = !self.s_ci.val().get_bit(17);
        self.lek[3].next = !self.s_pi.val().get_bit(17);
        for k in 0..4 {
            self.res[k].next = self.total.q.val();
            if !self.lek[k].val() {
                self.res[k].next = self.z16.val();
                if !self.r3[k].val().get_bit(17) {
                    self.res[k].next = self.r3[k].val().get_bits::<16>(0);
                }
            }
        }
        // probes after the credit: P - X when X <= M, else P - M (0 when M = P)
        self.pres[0].next = self.s_pc.val().get_bits::<16>(0);
        if self.lek[0].val() {
            self.pres[0].next = self.s_pa.val().get_bits::<16>(0);
        }
        self.pres[1].next = self.z16.val();
        if self.lek[1].val() {
            self.pres[1].next = self.s_pa.val().get_bits::<16>(0);
        }
        self.pres[2].next = self.s_pc.val().get_bits::<16>(0);
        if self.lek[2].val() {
            self.pres[2].next = self.s_pi.val().get_bits::<16>(0);
        }
        self.pres[3].next = self.z16.val();
        if self.lek[3].val() {
            self.pres[3].next = self.s_pi.val().get_bits::<16>(0);
        }
        self.tcr.next = self.res[1].val();
        self.pcr.next = self.pres[1].val();
        if self.cp.val() {
            self.tcr.next = self.res[0].val();
            self.pcr.next = self.pres[0].val();
        }
        if self.ge.val() {
            self.tcr.next = self.res[3].val();
            self.pcr.next = self.pres[3].val();
            if self.cp.val() {
                self.tcr.next = self.res[2].val();
                self.pcr.next = self.pres[2].val();
            }
        }
        self.n_total.next = self.total.q.val();
        self.n_probes.next = self.probes.q.val();
        if self.o.val().is_charge && !self.total.q.val().all() {
            self.n_total.next = self.total.q.val() + self.one16.val();
        }
        if self.o.val().is_probe && !self.probes.q.val().all() {
            self.n_probes.next = self.probes.q.val() + self.one16.val();
        }
        if self.o.val().is_clear {
            self.n_total.next = self.z16.val();
            if !self.s_ti.val().get_bit(17) {
                self.n_total.next = self.s_ti.val().get_bits::<16>(0);
            }
        }
        if self.o.val().is_init {
            self.n_total.next = self.z16.val();
            self.n_probes.next = self.z16.val();
        }
        // the credit's outcome (the deepest input) is the last multiplexer in front of total and
        // probes; a select's charge (late condition, early data) the one before it
        self.probes.d.next = self.n_probes.val();
        self.total.d.next = self.n_total.val();
        if self.o.val().is_sel && self.found.val() && !self.total.q.val().all() {
            self.total.d.next = self.total.q.val() + self.one16.val();
        }
        if self.o.val().is_credit {
            self.total.d.next = self.tcr.val();
            self.probes.d.next = self.pcr.val();
        }
        if self.o.val().is_sel && self.found.val() {
            self.above.d.next = self.ab.val();
        }
        // the window mask for the next SELECT: this operation's, from the registers before it,
        // less a window its own charge closes (CHARGE, CHARGE_PROBE here; SELECT's choice by
        // `sch & nwo` where the mask is read); an empty slot keeps the mask, the choice's term
        // folded in (`sch` is cleared behind it)
        self.chg.next = self.zp.val();
        if self.o.val().is_charge || self.o.val().is_probe {
            self.chg.next = self.o.val().hit;
        }
        self.nlmn.next = self.nlm.q.val() | (self.sch.q.val() & self.nwo.q.val());
        if self.o.val().v {
            self.nlmn.next = !(self.wm.val() & !(self.chg.val() & !self.wo1.val()));
            self.nwo.d.next = !self.wo1.val();
        }
        if self.o.val().is_init {
            self.nlmn.next = self.zp.val();
        }
        self.nlm.d.next = self.nlmn.val();
        self.n_pu.next = self.pu.val();
        if self.o.val().is_plane_up {
            if self.o.val().flag {
                self.n_pu.next = self.pu.val() | (self.oh8[0].val() << self.o.val().a.get_bits::<3>(0));
            } else {
                self.n_pu.next = self.pu.val() & !(self.oh8[0].val() << self.o.val().a.get_bits::<3>(0));
            }
        }
        self.lim1.next = self.o.val().a;
        if !self.o.val().a.any() {
            self.lim1.next = self.one16.val();
        }
        if self.o.val().is_limit {
            self.nlimit.d.next = !self.lim1.val();
        }
        self.pm.next = self.o.val().pm;
        self.npl.next = self.o.val().npl;
        // SELECT's charge, applied by the next clock (`sch`)
        self.sch.d.next = self.zp.val();
        if self.o.val().is_sel {
            self.sch.d.next = self.oh.val();
        }
        if self.o.val().is_init {
            self.above.d.next = self.zp.val();
            self.nlimit.d.next = self.z16.val();
            // pmod's row k is plane count k + 1; `np` (= PATHS) is a loop variable because
            // hdl_gen evaluates array indices with loop variables only
            for np in PATHS..(PATHS + 1) {
                for k in 0..8 {
                    if self.npl.val() == self.k4[k + 1].val() {
                        self.n_pu.next = self.pup[k].val();
                        for i in 0..PATHS {
                            self.n_pl[i].next = self.pmod[k * np + i].val();
                        }
                    }
                }
            }
            for i in 0..PATHS {
                self.n_h[i].next = self.h_disabled.val();
                if self.pm.val().get_bit(i) {
                    self.n_h[i].next = self.h_up.val();
                }
                self.n_ent[i].next = self.ent0[i].val();
                self.cwnd[i].d.next = self.c_init.val();
                self.alpha[i].d.next = self.z16.val();
                self.ash[i].d.next = self.k4[1].val();
                self.ai_acc[i].d.next = self.z32.val();
                self.cwr_left[i].d.next = self.z16.val();
                self.n_pend[i].next = false;
                self.pend_ent[i].d.next = self.z16.val();
            }
        }
        self.planes_up.d.next = self.n_pu.val();
        self.nss.d.next = self.n_nss.val();
        if self.o.val().is_init {
            self.nss.d.next = self.zp.val();
        }
        for i in 0..PATHS {
            // every path's inflight is zero after INIT
            if self.o.val().is_init {
                self.inflight[i].d.next = self.z16.val();
            }
            self.health[i].d.next = self.n_h[i].val();
            self.entropy[i].d.next = self.n_ent[i].val();
            self.plane[i].d.next = self.n_pl[i].val();
            self.pending[i].d.next = self.n_pend[i].val();
            self.eh[i].d.next = ((self.n_h[i].val() == self.h_up.val()) || (self.n_h[i].val() == self.h_suspect.val()))
                && !self.n_pend[i].val()
                && self.n_pu.val().get_bit(self.n_pl[i].val().index());
            // after INIT every path's plane is up and nothing drains: eligible = enabled
            if self.o.val().is_init {
                self.eh[i].d.next = self.pm.val().get_bit(i);
            }
        }

        // ---------------- the next operation's row ----------------
        // read by the path of the operation in `pr` from the registers, with the operation in
        // the compute stage forwarded: INIT's reset row, the addressed row it writes back, or
        // SELECT's charge
        // a binary multiplexer tree on the path bits per field (native widths and selects, which
        // Verilator turns into conditional moves: a one-hot AND-OR or a wide row simulates slower)
        for j in 0..(PATHS / 2) {
            self.t8_cw[j].next = self.cwnd[2 * j].q.val();
            if self.o1.val().path.get_bit(0) {
                self.t8_cw[j].next = self.cwnd[2 * j + 1].q.val();
            }
        }
        for j in 0..(PATHS / 4) {
            self.t4_cw[j].next = self.t8_cw[2 * j].val();
            if self.o1.val().path.get_bit(1) {
                self.t4_cw[j].next = self.t8_cw[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 8) {
            self.t2_cw[j].next = self.t4_cw[2 * j].val();
            if self.o1.val().path.get_bit(2) {
                self.t2_cw[j].next = self.t4_cw[2 * j + 1].val();
            }
        }
        for j in 0..IF16 {
            self.m_cw.next = self.t2_cw[2 * j].val();
            if self.o1.val().path.get_bit(3) {
                self.m_cw.next = self.t2_cw[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 2) {
            self.t8_al[j].next = self.alpha[2 * j].q.val();
            if self.o1.val().path.get_bit(0) {
                self.t8_al[j].next = self.alpha[2 * j + 1].q.val();
            }
        }
        for j in 0..(PATHS / 4) {
            self.t4_al[j].next = self.t8_al[2 * j].val();
            if self.o1.val().path.get_bit(1) {
                self.t4_al[j].next = self.t8_al[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 8) {
            self.t2_al[j].next = self.t4_al[2 * j].val();
            if self.o1.val().path.get_bit(2) {
                self.t2_al[j].next = self.t4_al[2 * j + 1].val();
            }
        }
        for j in 0..IF16 {
            self.m_al.next = self.t2_al[2 * j].val();
            if self.o1.val().path.get_bit(3) {
                self.m_al.next = self.t2_al[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 2) {
            self.t8_sh[j].next = self.ash[2 * j].q.val();
            if self.o1.val().path.get_bit(0) {
                self.t8_sh[j].next = self.ash[2 * j + 1].q.val();
            }
        }
        for j in 0..(PATHS / 4) {
            self.t4_sh[j].next = self.t8_sh[2 * j].val();
            if self.o1.val().path.get_bit(1) {
                self.t4_sh[j].next = self.t8_sh[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 8) {
            self.t2_sh[j].next = self.t4_sh[2 * j].val();
            if self.o1.val().path.get_bit(2) {
                self.t2_sh[j].next = self.t4_sh[2 * j + 1].val();
            }
        }
        for j in 0..IF16 {
            self.m_sh.next = self.t2_sh[2 * j].val();
            if self.o1.val().path.get_bit(3) {
                self.m_sh.next = self.t2_sh[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 2) {
            self.t8_ai[j].next = self.ai_acc[2 * j].q.val();
            if self.o1.val().path.get_bit(0) {
                self.t8_ai[j].next = self.ai_acc[2 * j + 1].q.val();
            }
        }
        for j in 0..(PATHS / 4) {
            self.t4_ai[j].next = self.t8_ai[2 * j].val();
            if self.o1.val().path.get_bit(1) {
                self.t4_ai[j].next = self.t8_ai[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 8) {
            self.t2_ai[j].next = self.t4_ai[2 * j].val();
            if self.o1.val().path.get_bit(2) {
                self.t2_ai[j].next = self.t4_ai[2 * j + 1].val();
            }
        }
        for j in 0..IF16 {
            self.m_ai.next = self.t2_ai[2 * j].val();
            if self.o1.val().path.get_bit(3) {
                self.m_ai.next = self.t2_ai[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 2) {
            self.t8_cr[j].next = self.cwr_left[2 * j].q.val();
            if self.o1.val().path.get_bit(0) {
                self.t8_cr[j].next = self.cwr_left[2 * j + 1].q.val();
            }
        }
        for j in 0..(PATHS / 4) {
            self.t4_cr[j].next = self.t8_cr[2 * j].val();
            if self.o1.val().path.get_bit(1) {
                self.t4_cr[j].next = self.t8_cr[2 * j + 1].val();
            }
        }
        for j in 0..(PATHS / 8) {
            self.t2_cr[j].next = self.t4_cr[2 * j].val();
            if self.o1.val().path.get_bit(2) {
                self.t2_cr[j].next = self.t4_cr[2 * j + 1].val();
            }
        }
        for j in 0..IF16 {
            self.m_cr.next = self.t2_cr[2 * j].val();
            if self.o1.val().path.get_bit(3) {
                self.m_cr.next = self.t2_cr[2 * j + 1].val();
            }
        }
        // with fewer paths the tree ends a level or two early: its last level is the root
        for j in 0..IF8 {
            self.m_cw.next = self.t2_cw[j].val();
            self.m_al.next = self.t2_al[j].val();
            self.m_sh.next = self.t2_sh[j].val();
            self.m_ai.next = self.t2_ai[j].val();
            self.m_cr.next = self.t2_cr[j].val();
        }
        for j in 0..IF4 {
            self.m_cw.next = self.t4_cw[j].val();
            self.m_al.next = self.t4_al[j].val();
            self.m_sh.next = self.t4_sh[j].val();
            self.m_ai.next = self.t4_ai[j].val();
            self.m_cr.next = self.t4_cr[j].val();
        }
        self.rmx.next.cwnd = self.m_cw.val();
        self.rmx.next.alpha = self.m_al.val();
        self.rmx.next.ash = self.m_sh.val();
        self.rmx.next.ai_acc = self.m_ai.val();
        self.rmx.next.cwr_left = self.m_cr.val();
        self.rmx.next.nss = (self.nss.q.val() & self.o1.val().hit).any();
        self.irow.next.cwnd = self.c_init.val();
        self.irow.next.alpha = self.z16.val();
        self.irow.next.ash = self.k4[1].val();
        self.irow.next.ai_acc = self.z32.val();
        self.irow.next.cwr_left = self.z16.val();
        self.irow.next.nss = false;
        self.rr.d.next = self.rmx.val();
        // SET_HEALTH's cap tests the row's window by the per-path compares of stage B (the
        // registers the row is read from), not behind the multiplexer tree
        self.cgtv.next = self.zp.val();
        for i in 0..PATHS {
            if self.cgtp[i].val() {
                self.cgtv.next = self.cgtv.val() | self.oh16[i].val();
            }
        }
        // the window state stage B writes at this edge, forwarded when it is this path's: an
        // AIMD credit's (registered in `ar`), SET_HEALTH's cap, REQUEST_REROLL's reset, INIT's.
        // Stage A's operation needs no forwarding: when it writes this path's window state, the
        // operation read here does not read it (a credit defers its sample, SPEC.md §6.3)
        if (self.o.val().path == self.o1.val().path) && self.o.val().v {
            if self.aimd.val() {
                self.rr.d.next = self.nrw.val();
            }
            if self.o.val().is_health
                && ((self.o.val().a.get_bits::<2>(0) == self.h_down.val())
                    || (self.o.val().a.get_bits::<2>(0) == self.h_suspect.val()))
                && (self.cgtv.val() & self.o1.val().hit).any()
            {
                self.rr.d.next.cwnd = self.c_init.val();
            }
            if self.o.val().is_rreroll {
                self.rr.d.next.alpha = self.z16.val();
                self.rr.d.next.cwr_left = self.z16.val();
                self.rr.d.next.ash = self.k4[1].val();
                if self.rmx.val().nss {
                    self.rr.d.next.ash = self.c_ash0.val();
                }
            }
        }
        if self.o.val().is_init {
            self.rr.d.next = self.irow.val();
        }

        // ---------------- record and output FIFO ----------------
        self.reroute.next = self.aimd.val() && self.o.val().flag && self.ac.q.val().cwr0;
        self.rec.next.op = self.o.val().op;
        self.rec.next.ok = self.reroute.val();
        self.rec.next.path = self.o.val().path;
        if self.o.val().op == self.op_select.val() {
            self.rec.next.ok = self.found.val();
        }
        self.rec.next.entropy = self.z16.val();
        self.rec.next.plane = self.z3.val();
        self.rec.next.health = self.z2.val();
        // record source: the chosen path for select, the addressed path otherwise
        self.q1r.d.next.rsel = self.o.val().hit;
        if self.o.val().is_sel {
            self.q1r.d.next.rsel = self.oh.val();
        }
        self.member.next = self.elig_h.val() | self.o.val().hit;
        self.q1r.d.next.v = self.o.val().v;
        self.q1r.d.next.rec = self.rec.val();
        self.q1r.d.next.md = self.reroute.val();
        self.q1r.d.next.a_new = self.z16.val();
        self.q1r.d.next.member = self.member.val();
        // Q1: the record's path fields; mask the snapshot, a partial sum per group, member count
        self.q2r.d.next = self.q1r.q.val();
        for i in 0..PATHS {
            self.me[i].next = self.z16.val();
            self.mp[i].next = self.z3.val();
            self.mh[i].next = self.z2.val();
            self.ma[i].next = self.z16.val();
            if self.q1r.q.val().rsel.get_bit(i) {
                self.ma[i].next = self.alpha[i].q.val();
                self.me[i].next = self.entropy[i].q.val();
                self.mp[i].next = self.plane[i].q.val();
                self.mh[i].next = self.health[i].q.val();
            }
        }
        for g in 0..GROUPS {
            self.ge4[g].next = (self.me[4 * g].val() | self.me[4 * g + 1].val())
                | (self.me[4 * g + 2].val() | self.me[4 * g + 3].val());
            self.gp4[g].next = (self.mp[4 * g].val() | self.mp[4 * g + 1].val())
                | (self.mp[4 * g + 2].val() | self.mp[4 * g + 3].val());
            self.gh4[g].next = (self.mh[4 * g].val() | self.mh[4 * g + 1].val())
                | (self.mh[4 * g + 2].val() | self.mh[4 * g + 3].val());
            self.ga4[g].next = (self.ma[4 * g].val() | self.ma[4 * g + 1].val())
                | (self.ma[4 * g + 2].val() | self.ma[4 * g + 3].val());
        }
        self.rec2.next = self.q1r.q.val().rec;
        // a select's path: encode its one-hot choice (from k4[0] narrowed: a zero of its own
        // would leave k4[0] unused, which Verilator reports)
        self.sel_idx.next = self.k4[0].val().get_bits::<PB>(0);
        for b in 0..PB {
            if (self.q1r.q.val().rsel & self.enc16[b].val()).any() {
                self.sel_idx.next = self.sel_idx.val() | self.p4[b].val();
            }
        }
        if self.rec2.val().op == self.op_select.val() {
            self.rec2.next.path = self.sel_idx.val();
        }
        // the groups' ORs: a tree over four groups, two, or the one
        for g in 0..IF16 {
            self.rec2.next.entropy = (self.ge4[4 * g].val() | self.ge4[4 * g + 1].val())
                | (self.ge4[4 * g + 2].val() | self.ge4[4 * g + 3].val());
            self.rec2.next.plane = (self.gp4[4 * g].val() | self.gp4[4 * g + 1].val())
                | (self.gp4[4 * g + 2].val() | self.gp4[4 * g + 3].val());
            self.rec2.next.health = (self.gh4[4 * g].val() | self.gh4[4 * g + 1].val())
                | (self.gh4[4 * g + 2].val() | self.gh4[4 * g + 3].val());
        }
        for g in 0..IF8 {
            self.rec2.next.entropy = self.ge4[2 * g].val() | self.ge4[2 * g + 1].val();
            self.rec2.next.plane = self.gp4[2 * g].val() | self.gp4[2 * g + 1].val();
            self.rec2.next.health = self.gh4[2 * g].val() | self.gh4[2 * g + 1].val();
        }
        for g in 0..IF4 {
            self.rec2.next.entropy = self.ge4[g].val();
            self.rec2.next.plane = self.gp4[g].val();
            self.rec2.next.health = self.gh4[g].val();
        }
        self.q2r.d.next.rec = self.rec2.val();
        // the credited path's alpha after the credit (the registers hold it by now)
        for g in 0..IF16 {
            self.q2r.d.next.a_new = (self.ga4[4 * g].val() | self.ga4[4 * g + 1].val())
                | (self.ga4[4 * g + 2].val() | self.ga4[4 * g + 3].val());
        }
        for g in 0..IF8 {
            self.q2r.d.next.a_new = self.ga4[2 * g].val() | self.ga4[2 * g + 1].val();
        }
        for g in 0..IF4 {
            self.q2r.d.next.a_new = self.ga4[g].val();
        }
        self.mem1.next = self.q1r.q.val().member;
        for i in 0..PATHS {
            self.am[i].next = self.z16.val();
            if self.mem1.val().get_bit(i) {
                self.am[i].next = self.q1a[i].q.val();
            }
        }
        for g in 0..GROUPS {
            self.q2s[g].d.next = (self.am[4 * g].val() + self.am[4 * g + 1].val())
                + (self.am[4 * g + 2].val() + self.am[4 * g + 3].val());
        }
        for i in 0..PATHS {
            self.bm[i].next = self.z16.val();
            if self.mem1.val().get_bit(i) {
                self.bm[i].next = self.one16.val();
            }
        }
        for g in 0..GROUPS {
            self.q2c[g].d.next = (self.bm[4 * g].val() + self.bm[4 * g + 1].val())
                + (self.bm[4 * g + 2].val() + self.bm[4 * g + 3].val());
        }
        // Q2: the sum of alpha and the member count
        self.q3r.d.next = self.q2r.q.val();
        for g in 0..IF16 {
            self.q3sum.d.next = (self.q2s[4 * g].q.val() + self.q2s[4 * g + 1].q.val())
                + (self.q2s[4 * g + 2].q.val() + self.q2s[4 * g + 3].q.val());
            self.q3up.d.next = (self.q2c[4 * g].q.val() + self.q2c[4 * g + 1].q.val())
                + (self.q2c[4 * g + 2].q.val() + self.q2c[4 * g + 3].q.val());
        }
        for g in 0..IF8 {
            self.q3sum.d.next = self.q2s[2 * g].q.val() + self.q2s[2 * g + 1].q.val();
            self.q3up.d.next = self.q2c[2 * g].q.val() + self.q2c[2 * g + 1].q.val();
        }
        for g in 0..IF4 {
            self.q3sum.d.next = self.q2s[g].q.val();
            self.q3up.d.next = self.q2c[g].q.val();
        }
        // Q3: alpha * up and 2 * sum; Q4: alpha * up > 2 * sum (the path's estimate is above
        // twice the mean)
        self.sum.next = self.q3sum.q.val();
        self.up.next = self.q3up.q.val();
        self.aup.next = self.q3r.q.val().a_new * self.up.val();
        self.xs.next.lo = self.sum.val() << self.one16.val();
        self.xs.next.hi = self.z16.val();
        self.sum2.next = self.xs.val().into();
        self.q4r.d.next = self.q3r.q.val();
        self.q4aup.d.next = self.aup.val();
        self.q4sum2.d.next = self.sum2.val();
        self.q4up.d.next = self.up.val();
        self.frec.next = self.q4r.q.val().rec;
        if self.q4r.q.val().md {
            self.frec.next.ok = (self.q4up.q.val() > self.one16.val())
                && (self.q4r.q.val().a_new >= self.c_a8.val())
                && (self.q4aup.q.val() > self.q4sum2.q.val());
        }
        self.fifo.write_address.next = self.wp.q.val();
        self.fifo.write_data.next = self.frec.val();
        self.fifo.write_enable.next = self.q4r.q.val().v;
        self.fifo.read_address.next = self.rp.q.val();
        self.out.next = self.fifo.read_data.val();
        self.out_valid.next = self.cnt.q.val().any();
        self.pop.next = self.cnt.q.val().any() && self.out_ready.val();
        if self.q4r.q.val().v {
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
        if self.q4r.q.val().v && !self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() + self.one5.val();
        }
        if !self.q4r.q.val().v && self.pop.val() {
            self.cnt.d.next = self.cnt.q.val() - self.one5.val();
        }
        self.occ.accept.next = self.accept.val();
        self.occ.pop.next = self.pop.val();
    }
}
