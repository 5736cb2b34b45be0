//! `transport_core` in lockstep with its reference: the three model components plus the CSR
//! semantics of `mroce_csr`.
//!
//! Every run starts with the preamble ([`core_preamble`]: rx paths reset, selector `Init`)
//! without stalls, then one mixed stream of rx, tx and selector operations and CSR accesses;
//! each stream has its own stall pattern and advances independently, records are compared per
//! stream in order.
//! Reference rules (from hdl/src/transport_core.rs and hdl/tests/transport_core.rs):
//! - a CSR access at cycle k returns, at cycle k + 1, the register as of cycle k (counters count
//!   the operations accepted before cycle k); a write takes effect at cycle k + 1;
//! - `ROOM_MASK` at cycle k reflects every scoreboard operation accepted at a cycle
//!   c <= k - `CORE_TX_ROOM_LAG` - 1 ([`crate::bench::RoomHistory`]); with `CONTROL` bit 0 a SELECT
//!   accepted at cycle k uses that mask;
//! - a `SEL_CMD` write queues one selector operation ahead of the `sel_in` stream; the driver
//!   polls `SEL_CMD` bit 31 (as the control core would) and holds the `sel_in` stream meanwhile,
//!   so the command's place in the selector's order and its cycle are known exactly;
//! - the per-path counters, `P_STATE` and the sticky events follow [`CoreCounters`]; they move
//!   a few clocks after their operations, so they are compared at audits ([`CoreTxn::Audit`],
//!   [`CoreTxn::AuditPath`]): the driver holds the three streams until the core is quiescent,
//!   then reads every path's (or one path's) window and the event registers and clears the
//!   events.
use crate::bench::{
    rx_expect, sel_expect, sel_random, tx_expect, Rng, RoomHistory, RxRec, RxTxn, SelRec, SelTxn, TxRec, TxTxn,
    PATH_MASK,
};
use crate::core_counters::{record_path, state_word, CoreCounters, EVENT_REGS};
use crate::engine::{Mismatch, RunOpts, RunResult, Stalls, Timer, MAX_IDLE_CYCLES};
use crate::pins::{CoreIn, CoreOut, SelIn};
use crate::{Backend, CosimError};
use mroce_csr as csr;
use mroce_hdl::path_selector::SEL_OP_SELECT;
use mroce_hdl::transport_core::CORE_SEL_LATENCY;
use mroce_model::params::PATHS;
use mroce_model::path_selector::PathSelector;
use mroce_model::rx_tracker::RxTracker;
use mroce_model::tx_scoreboard::TxScoreboard;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;

// The poll that reveals when a queued command was accepted is seen two cycles later.
const _: () = assert!(
    CORE_SEL_LATENCY >= 2,
    "the SEL_CMD poll needs the selector latency >= 2"
);

/// One `transport_core` transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stream", rename_all = "snake_case")]
pub enum CoreTxn {
    Rx {
        op: RxTxn,
    },
    Tx {
        op: TxTxn,
    },
    Sel {
        op: SelTxn,
    },
    CsrRead {
        addr: u16,
    },
    CsrWrite {
        addr: u16,
        data: u32,
    },
    /// A selector command from the control core: `SEL_CMD_ARG` then `SEL_CMD` (two CSR writes;
    /// a credit's `probes` is its `acked`, as the command has one argument word).
    SelCmd {
        op: SelTxn,
    },
    /// Hold the streams until the core is quiescent, then read every path's counter window
    /// (`PATH_SEL` + the `P_*` registers) and the event registers, and clear the events.
    /// Not drawn by the fuzzer: at ~170 CSR accesses it would dominate every input's clocks.
    Audit,
    /// [`CoreTxn::Audit`] of one path's window only (17 CSR accesses): the counters are
    /// cumulative, so auditing paths one at a time checks the same rules.
    AuditPath {
        path: u8,
    },
}

/// The fuzzer's mix, in 256ths: mostly stream operations, as in [`core_stream`]. An audit holds
/// every stream for ~40 clocks, so one in 64 operations is one (a uniform choice made it one in
/// seven, and audits took most of each input's clocks); full audits are not drawn.
#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for CoreTxn {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        // (xor 0x80: runs of 0x00 and 0xFF, libFuzzer's favourite insertions, pick stream
        // operations, not audits)
        Ok(match u.arbitrary::<u8>()? ^ 0x80 {
            0..=74 => CoreTxn::Rx { op: u.arbitrary()? },
            75..=149 => CoreTxn::Tx { op: u.arbitrary()? },
            150..=209 => CoreTxn::Sel { op: u.arbitrary()? },
            210..=227 => CoreTxn::CsrRead { addr: u.arbitrary()? },
            228..=239 => CoreTxn::CsrWrite {
                addr: u.arbitrary()?,
                data: u.arbitrary()?,
            },
            240..=251 => CoreTxn::SelCmd { op: u.arbitrary()? },
            _ => CoreTxn::AuditPath { path: u.arbitrary()? },
        })
    }
}

/// Clocks without an accepted operation or a record before an audit reads the counters (the
/// scoreboard records reach their counters through five register stages).
pub const AUDIT_QUIET_CYCLES: u64 = 16;

/// The CSR accesses of an audit of `paths`: (address, `Some(data)` for a write).
pub fn audit_accesses(paths: impl IntoIterator<Item = u32>) -> Vec<(u16, Option<u32>)> {
    let mut v = Vec::new();
    for p in paths {
        v.push((csr::PATH_SEL, Some(p)));
        v.extend(csr::PATH_WINDOW.iter().map(|&a| (a, None)));
    }
    v.extend(EVENT_REGS.iter().map(|&a| (a, None)));
    v.push((csr::EVT_SUMMARY, None));
    v.extend(EVENT_REGS.iter().map(|&a| (a, Some(0xFFFF))));
    v
}

/// A `transport_core` record (per stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stream", rename_all = "snake_case")]
pub enum CoreRec {
    Rx(RxRec),
    Tx(TxRec),
    Sel(SelRec),
    Csr { addr: u16, rdata: u32 },
}

/// The CSR registers the reference models (reads of others are not compared).
pub fn modelled_csr(addr: u16) -> bool {
    [
        csr::ID,
        csr::VERSION,
        csr::PARAMS,
        csr::CONTROL,
        csr::ROOM_MASK,
        csr::RX_OPS,
        csr::TX_OPS,
        csr::SEL_OPS,
        csr::SEL_CMD_ARG,
        csr::SEL_CMD,
        csr::SCRATCH,
        csr::CAPS,
        csr::CTX_SEL,
        csr::FAULT,
        csr::IRQ_ENABLE,
        csr::PATH_SEL,
    ]
    .contains(&addr)
        || !csr::REGS.iter().any(|r| r.offset == addr)
}

impl CoreTxn {
    /// The transaction with its fields folded into the ranges the reference defines (selector
    /// arguments as in [`SelTxn::normalized`]; CSR reads of modelled registers and unmapped
    /// word addresses; raw writes only to CONTROL, SCRATCH, SEL_CMD_ARG, FAULT, IRQ_ENABLE,
    /// PATH_SEL and a read-only register, selector commands only through [`CoreTxn::SelCmd`],
    /// counters and events only through [`CoreTxn::Audit`] and [`CoreTxn::AuditPath`]).
    pub fn normalized(self) -> Self {
        match self {
            CoreTxn::Sel { op } => CoreTxn::Sel { op: op.normalized() },
            CoreTxn::SelCmd { op } => CoreTxn::SelCmd { op: op.normalized() },
            CoreTxn::CsrRead { addr } => {
                let a = (addr & 0xFC) % 0x80;
                CoreTxn::CsrRead {
                    addr: if modelled_csr(a) { a } else { csr::SCRATCH },
                }
            }
            CoreTxn::CsrWrite { addr, data } => {
                let targets = [
                    csr::CONTROL,
                    csr::SCRATCH,
                    csr::SEL_CMD_ARG,
                    csr::ID,
                    csr::FAULT,
                    csr::IRQ_ENABLE,
                    csr::PATH_SEL,
                ];
                CoreTxn::CsrWrite {
                    addr: targets[usize::from(addr) % targets.len()],
                    data,
                }
            }
            CoreTxn::AuditPath { path } => CoreTxn::AuditPath {
                path: path % PATHS as u8,
            },
            t => t,
        }
    }

    /// The paths an audit reads (`None`: not an audit).
    pub fn audited_paths(&self) -> Option<core::ops::Range<u32>> {
        match *self {
            CoreTxn::Audit => Some(0..PATHS as u32),
            CoreTxn::AuditPath { path } => {
                let p = u32::from(path) % PATHS as u32;
                Some(p..p + 1)
            }
            _ => None,
        }
    }

    /// The CSR writes of a selector command: (SEL_CMD_ARG value, SEL_CMD value).
    pub fn sel_cmd_words(op: &SelTxn) -> (u32, u32) {
        let p = op.pins(true);
        (
            u32::from(p.a) | (u32::from(p.b) << 16),
            u32::from(p.op) | (u32::from(p.path) << 4) | (u32::from(p.flag) << 8),
        )
    }
}

#[derive(Clone)]
struct Csr {
    control: u32,
    scratch: u32,
    cmd_arg: u32,
    cmd: u32,
    rx_ops: u32,
    tx_ops: u32,
    sel_ops: u32,
    fault: u32,
    irq_en: u32,
    path_sel: u32,
}

#[derive(Clone)]
struct Reference {
    rx: RxTracker,
    tx: TxScoreboard,
    sel: PathSelector,
    csr: Csr,
    room: RoomHistory,
    counters: CoreCounters,
}

impl Reference {
    fn new() -> Self {
        let tx = TxScoreboard::new(0);
        let room_base = tx.room_mask() as u16;
        Self {
            rx: RxTracker::new(0),
            tx,
            sel: PathSelector::default(),
            csr: Csr {
                control: 0,
                scratch: 0,
                cmd_arg: 0,
                cmd: 0,
                rx_ops: 0,
                tx_ops: 0,
                sel_ops: 0,
                fault: 0,
                irq_en: 0,
                path_sel: 0,
            },
            room: RoomHistory::new(room_base, mroce_hdl::transport_core::CORE_TX_ROOM_LAG),
            counters: CoreCounters::new(),
        }
    }

    /// Expected read data of `addr` at cycle `k` (None: not modelled).
    fn read(&mut self, addr: u16, k: u64, pending: bool) -> Option<u32> {
        if !modelled_csr(addr) {
            return None;
        }
        Some(match addr {
            a if a == csr::ID => csr::ID_VALUE,
            a if a == csr::VERSION => csr::MAP_VERSION,
            a if a == csr::PARAMS => csr::PARAMS_VALUE,
            a if a == csr::CONTROL => self.csr.control,
            a if a == csr::ROOM_MASK => u32::from(self.room.at(k)),
            a if a == csr::RX_OPS => self.csr.rx_ops,
            a if a == csr::TX_OPS => self.csr.tx_ops,
            a if a == csr::SEL_OPS => self.csr.sel_ops,
            a if a == csr::SEL_CMD_ARG => self.csr.cmd_arg,
            a if a == csr::SEL_CMD => u32::from(pending) << 31,
            a if a == csr::SCRATCH => self.csr.scratch,
            a if a == csr::CAPS => csr::CAPS_VALUE,
            a if a == csr::FAULT => self.csr.fault,
            a if a == csr::IRQ_ENABLE => self.csr.irq_en,
            a if a == csr::PATH_SEL => self.csr.path_sel,
            _ => 0,
        })
    }

    /// Expected read data of `addr` in an audit (the core is quiescent).
    fn read_audit(&mut self, addr: u16, k: u64) -> Option<u32> {
        self.counters
            .read(addr, self.csr.path_sel)
            .or_else(|| self.read(addr, k, false))
    }

    /// A selector operation was accepted with these pins and gave `rec`.
    fn sel_counted(&mut self, pins: &SelIn, rec: &SelRec) {
        let op = u64::from(pins.op);
        self.counters.sel_accepted(op, pins.path & PATH_MASK, pins.flag);
        // a SELECT's record carries the chosen path (none when it failed)
        let path = if op == SEL_OP_SELECT {
            rec.path
        } else {
            record_path(op, pins.path & PATH_MASK)
        };
        let state = if op == SEL_OP_SELECT && !rec.ok {
            0
        } else {
            state_word(self.sel.path(path))
        };
        self.counters.sel_record(op, rec.ok, path, state);
    }
}

/// The reference's state and the clock after [`core_preamble`]: where every stream starts.
#[derive(Clone)]
pub struct CoreStart {
    r: Reference,
    cycle: u64,
    last_busy: u64,
}

/// Run the preamble (rx paths reset to ISN 0, selector `Init(PATHS, 1)`) without stalls, so
/// the hardware matches the reference's initial state. Without stalls the preamble is the same
/// clock by clock in every run: the fuzzer runs it once and restores the model's state after it
/// ([`crate::pins::Verilated`]'s `save_state`). `Err` carries a preamble mismatch.
pub fn core_preamble<D>(dut: &mut D, opts: &RunOpts) -> Result<Result<CoreStart, Mismatch>, CosimError>
where
    D: Backend<In = CoreIn, Out = CoreOut>,
{
    let mut all: Vec<CoreTxn> = (0..PATHS as u8)
        .map(|path| CoreTxn::Rx {
            op: RxTxn::Reset { path, isn: 0 },
        })
        .collect();
    all.push(CoreTxn::Sel {
        op: SelTxn::Init {
            paths: PATHS as u8,
            planes: 1,
        },
    });
    let orig = vec![0; all.len()];
    let audit_flag = vec![0u8; all.len()];
    let mut st = CoreStart {
        r: Reference::new(),
        cycle: 0,
        last_busy: 0,
    };
    Ok(match drive(dut, &all, &orig, &audit_flag, &mut st, None, opts)? {
        None => Ok(st),
        Some(m) => Err(m),
    })
}

/// The `transport_core` lockstep run: [`core_preamble`], then `txns` under the stall pattern of
/// `opts.stall_seed`.
pub fn run_core<D>(dut: &mut D, txns: &[CoreTxn], opts: &RunOpts) -> Result<RunResult, CosimError>
where
    D: Backend<In = CoreIn, Out = CoreOut>,
{
    let t0 = Timer::start();
    match core_preamble(dut, opts)? {
        Ok(start) => run_core_from(dut, &start, txns, opts, t0),
        Err(m) => Ok(RunResult {
            transactions: txns.len(),
            cycles: m.cycle,
            wall_s: t0.wall_s(),
            cpu_s: t0.cpu_s(),
            mismatch: Some(m),
        }),
    }
}

/// `txns` under the stall pattern of `opts.stall_seed`, from `start` (the hardware must be in
/// the state the preamble left it in).
pub fn run_core_from<D>(
    dut: &mut D,
    start: &CoreStart,
    txns: &[CoreTxn],
    opts: &RunOpts,
    t0: Timer,
) -> Result<RunResult, CosimError>
where
    D: Backend<In = CoreIn, Out = CoreOut>,
{
    // selector commands expand into their two CSR writes; `orig` maps back to `txns`
    let mut all: Vec<CoreTxn> = Vec::with_capacity(txns.len());
    let mut orig: Vec<usize> = Vec::with_capacity(txns.len());
    // 1: first access of an audit (waits for quiescence), 2: any other audit access
    let mut audit_flag: Vec<u8> = Vec::with_capacity(txns.len());
    for (k, t) in txns.iter().enumerate() {
        if let CoreTxn::SelCmd { op } = t {
            let (arg, cmd) = CoreTxn::sel_cmd_words(op);
            all.push(CoreTxn::CsrWrite {
                addr: csr::SEL_CMD_ARG,
                data: arg,
            });
            all.push(CoreTxn::CsrWrite {
                addr: csr::SEL_CMD,
                data: cmd,
            });
            orig.extend([k, k]);
            audit_flag.extend([0, 0]);
        } else if let Some(paths) = t.audited_paths() {
            for (i, (addr, w)) in audit_accesses(paths).into_iter().enumerate() {
                all.push(match w {
                    Some(data) => CoreTxn::CsrWrite { addr, data },
                    None => CoreTxn::CsrRead { addr },
                });
                orig.push(k);
                audit_flag.push(if i == 0 { 1 } else { 2 });
            }
        } else {
            all.push(*t);
            orig.push(k);
            audit_flag.push(0);
        }
    }
    let mut st = start.clone();
    let mismatch = drive(dut, &all, &orig, &audit_flag, &mut st, Some(opts.stall_seed), opts)?;
    Ok(RunResult {
        transactions: txns.len(),
        cycles: st.cycle,
        wall_s: t0.wall_s(),
        cpu_s: t0.cpu_s(),
        mismatch,
    })
}

/// Drive the expanded stream `all` (`orig`: index in the caller's stream; `audit_flag` as in
/// [`run_core_from`]) from state `st` to its last record; `stall_seed: None` means no stalls.
fn drive<D>(
    dut: &mut D,
    all: &[CoreTxn],
    orig: &[usize],
    audit_flag: &[u8],
    st: &mut CoreStart,
    stall_seed: Option<u64>,
    opts: &RunOpts,
) -> Result<Option<Mismatch>, CosimError>
where
    D: Backend<In = CoreIn, Out = CoreOut>,
{
    let index = |k: usize| orig.get(k).copied().unwrap_or(0);
    // per-stream queues of (global index, transaction)
    let mut rxq = VecDeque::new();
    let mut txq = VecDeque::new();
    let mut selq = VecDeque::new();
    let mut csrq = VecDeque::new();
    for (k, t) in all.iter().enumerate() {
        match *t {
            CoreTxn::Rx { op } => rxq.push_back((k, op)),
            CoreTxn::Tx { op } => txq.push_back((k, op)),
            CoreTxn::Sel { op } => selq.push_back((k, op)),
            CoreTxn::CsrRead { .. } | CoreTxn::CsrWrite { .. } | CoreTxn::SelCmd { .. } => csrq.push_back((k, *t)),
            CoreTxn::Audit | CoreTxn::AuditPath { .. } => {}
        }
    }
    let total = all.len();
    let is_audit = |k: usize| audit_flag.get(k).is_some_and(|&f| f != 0);
    let (mut cycle, mut last_busy) = (st.cycle, st.last_busy);
    let r = &mut st.r;
    let mut exp_rx: VecDeque<(usize, RxRec)> = VecDeque::new();
    let mut exp_tx: VecDeque<(usize, TxRec)> = VecDeque::new();
    let mut exp_sel: VecDeque<(usize, SelRec)> = VecDeque::new();
    let stalls = |i: u64| {
        stall_seed.map_or_else(Stalls::none, |s| {
            // each stream starts at its own place in a script
            Stalls::scripted(
                s.wrapping_add(i),
                opts.max_stall_phase,
                opts.stall_script,
                i as usize * 5,
            )
        })
    };
    let (mut st_rx, mut st_tx, mut st_sel, mut st_csr) = (stalls(0), stalls(1), stalls(2), stalls(3));
    // CSR access issued in the previous cycle: (global index or None for a poll, addr, expected)
    let mut csr_prev: Option<(Option<usize>, u16, Option<u32>)> = None;
    // SEL_CMD written and not yet seen accepted: (global index of the write)
    let mut polling: Option<usize> = None;
    let mut pending_hw = false;
    let (mut done, mut idle) = (0usize, 0u64);
    let mut mismatch: Option<Mismatch> = None;
    let mut polls = 0u64;
    'run: while done < total || !exp_sel.is_empty() || polling.is_some() {
        if let Some((path, from)) = &opts.trace {
            if cycle == *from {
                dut.trace(path)?;
            }
        }
        // ---- this cycle's CSR access (expected data is the state as of this cycle)
        let mut csr_now: Option<(Option<usize>, u16, Option<u32>)> = None;
        let mut csr_write: Option<(u16, u32)> = None;
        let mut inp = CoreIn::default();
        let (csr_go, _) = st_csr.next();
        if polling.is_some() {
            inp.csr_addr = csr::SEL_CMD;
            csr_now = Some((None, csr::SEL_CMD, None));
            polls += 1;
            if polls > MAX_IDLE_CYCLES {
                mismatch = fail(index(polling.unwrap_or(0)), "sel_cmd", cycle, Value::Null, Value::Null);
                break 'run;
            }
        } else if csr_go {
            // (an audit starts once every stream operation before it was accepted and its
            // record taken, and the counters had time to move)
            let quiescent = |k: usize| {
                rxq.front().is_none_or(|f| f.0 > k)
                    && txq.front().is_none_or(|f| f.0 > k)
                    && selq.front().is_none_or(|f| f.0 > k)
                    && exp_rx.is_empty()
                    && exp_tx.is_empty()
                    && exp_sel.is_empty()
                    && cycle >= last_busy + AUDIT_QUIET_CYCLES
            };
            if let Some(&(k, t)) = csrq.front().filter(|&&(k, _)| audit_flag[k] != 1 || quiescent(k)) {
                csrq.pop_front();
                let want = |r: &mut Reference, addr: u16| {
                    if is_audit(k) {
                        r.read_audit(addr, cycle)
                    } else {
                        r.read(addr, cycle, pending_hw)
                    }
                };
                match t {
                    CoreTxn::CsrRead { addr } => {
                        inp.csr_addr = addr;
                        csr_now = Some((Some(k), addr, want(r, addr)));
                    }
                    CoreTxn::CsrWrite { addr, data } => {
                        inp.csr_addr = addr;
                        inp.csr_wdata = data;
                        inp.csr_we = true;
                        csr_now = Some((Some(k), addr, want(r, addr)));
                        csr_write = Some((addr, data));
                        if addr == csr::SEL_CMD {
                            polling = Some(k);
                        }
                    }
                    _ => {}
                }
            }
        }
        // ---- streams (an operation after an audit waits from the audit's turn on the CSR port
        // to its last access; the operations before it go first)
        let busy_audit =
            csr_now.is_some_and(|c| c.0.is_some_and(is_audit)) || csr_prev.is_some_and(|c| c.0.is_some_and(is_audit));
        let audit_at = csrq.front().filter(|&&(k, _)| is_audit(k)).map(|&(k, _)| k);
        let held = |front: Option<usize>| busy_audit || audit_at.is_some_and(|a| front.is_some_and(|f| f > a));
        let (v_rx, rdy_rx) = st_rx.next();
        let (v_tx, rdy_tx) = st_tx.next();
        let (v_sel, rdy_sel) = st_sel.next();
        let off_rx = v_rx && !rxq.is_empty() && !held(rxq.front().map(|f| f.0));
        let off_tx = v_tx && !txq.is_empty() && !held(txq.front().map(|f| f.0));
        // the sel stream waits while a queued command's acceptance is not yet known
        let off_sel = v_sel
            && !selq.is_empty()
            && !held(selq.front().map(|f| f.0))
            && polling.is_none()
            && csr_write.is_none_or(|w| w.0 != csr::SEL_CMD);
        inp.rx = if off_rx {
            rxq[0].1.pins(rdy_rx)
        } else {
            Default::default()
        };
        inp.rx.out_ready = rdy_rx;
        inp.tx = if off_tx {
            txq[0].1.pins(rdy_tx)
        } else {
            Default::default()
        };
        inp.tx.out_ready = rdy_tx;
        inp.sel = if off_sel {
            selq[0].1.pins(rdy_sel)
        } else {
            Default::default()
        };
        inp.sel.out_ready = rdy_sel;
        dut.set(&inp);
        let o = dut.eval();
        // ---- the previous cycle's CSR read data
        if let Some((k, addr, want)) = csr_prev.take() {
            match k {
                None => {
                    // poll of SEL_CMD: bit 31 clear means the command was accepted the cycle
                    // before the poll was issued, i.e. at cycle - 2
                    if o.csr_rdata >> 31 == 0 && polling.is_some() {
                        let wk = polling.take().unwrap_or(0);
                        polls = 0;
                        let acc = cycle.saturating_sub(2);
                        let cmd = r.csr.cmd;
                        let arg = r.csr.cmd_arg;
                        let pins = SelIn {
                            valid: true,
                            op: (cmd & 15) as u8,
                            // the command's path field is PATH_BITS wide from bit 4
                            path: (cmd >> 4) as u8 & PATH_MASK,
                            room: 0,
                            a: arg as u16,
                            b: (arg >> 16) as u16,
                            c: arg as u16,
                            flag: (cmd >> 8) & 1 == 1,
                            out_ready: false,
                        };
                        let room = r.room.at(acc);
                        let rec = sel_expect(&mut r.sel, &pins, room);
                        r.sel_counted(&pins, &rec);
                        exp_sel.push_back((wk, rec));
                        last_busy = cycle;
                        r.csr.sel_ops = r.csr.sel_ops.wrapping_add(1);
                        pending_hw = false;
                    }
                }
                Some(k) => {
                    if let Some(w) = want {
                        if w != o.csr_rdata {
                            mismatch = fail(
                                index(k),
                                "csr",
                                cycle,
                                js(&CoreRec::Csr { addr, rdata: w }),
                                js(&CoreRec::Csr {
                                    addr,
                                    rdata: o.csr_rdata,
                                }),
                            );
                            break 'run;
                        }
                    }
                    done += 1;
                }
            }
        }
        // ---- acceptances (the selector's SELECT sees CONTROL and the room as of this cycle)
        if off_rx && o.rx.in_ready {
            let (k, _) = rxq.pop_front().unwrap_or((0, RxTxn::Flush { path: 0 }));
            exp_rx.push_back((k, rx_expect(&mut r.rx, &inp.rx)));
            r.counters
                .rx_accepted(u64::from(inp.rx.op), inp.rx.path & PATH_MASK, inp.rx.ce);
            r.csr.rx_ops = r.csr.rx_ops.wrapping_add(1);
            last_busy = cycle;
        }
        let mut tx_acc = None;
        if off_tx && o.tx.in_ready {
            let (k, _) = txq.pop_front().unwrap_or((0, TxTxn::Expire { path: 0 }));
            let rec = tx_expect(&mut r.tx, &inp.tx);
            let (op, path) = (u64::from(inp.tx.op), inp.tx.path & PATH_MASK);
            r.counters.tx_accepted(op, path, inp.tx.now);
            r.counters.tx_record(op, path, rec.ok, rec.lost, rec.freed);
            exp_tx.push_back((k, rec));
            r.csr.tx_ops = r.csr.tx_ops.wrapping_add(1);
            last_busy = cycle;
            tx_acc = Some(r.tx.room_mask() as u16);
        }
        if off_sel && o.sel.in_ready {
            let (k, _) = selq.pop_front().unwrap_or((0, SelTxn::Select { room: 0 }));
            let room =
                if r.csr.control & csr::CONTROL_ROOM_FROM_SCOREBOARD != 0 && u64::from(inp.sel.op) == SEL_OP_SELECT {
                    r.room.at(cycle)
                } else {
                    inp.sel.room
                };
            let rec = sel_expect(&mut r.sel, &inp.sel, room);
            r.sel_counted(&inp.sel, &rec);
            exp_sel.push_back((k, rec));
            r.csr.sel_ops = r.csr.sel_ops.wrapping_add(1);
            last_busy = cycle;
        }
        if let Some(m) = tx_acc {
            r.room.push(cycle, m);
        }
        // ---- records
        let mut got_any = false;
        if o.rx.out_valid && rdy_rx {
            let got = RxRec::from_pins(&o.rx);
            match exp_rx.pop_front() {
                Some((_, w)) if w == got => done += 1,
                w => {
                    mismatch = fail(
                        index(w.map_or(0, |x| x.0)),
                        "rx",
                        cycle,
                        w.map_or(Value::Null, |x| js(&x.1)),
                        js(&got),
                    );
                    break 'run;
                }
            }
            got_any = true;
        }
        if o.tx.out_valid && rdy_tx {
            let got = TxRec::from_pins(&o.tx);
            match exp_tx.pop_front() {
                Some((_, w)) if w == got => done += 1,
                w => {
                    mismatch = fail(
                        index(w.map_or(0, |x| x.0)),
                        "tx",
                        cycle,
                        w.map_or(Value::Null, |x| js(&x.1)),
                        js(&got),
                    );
                    break 'run;
                }
            }
            got_any = true;
        }
        if o.sel.out_valid && rdy_sel {
            let got = SelRec::from_pins(&o.sel);
            match exp_sel.pop_front() {
                Some((k, w)) if w == got => {
                    // an injected command's record is not a transaction of its own
                    let injected = matches!(all.get(k), Some(CoreTxn::CsrWrite { .. }));
                    if !injected {
                        done += 1;
                    }
                }
                w => {
                    mismatch = fail(
                        index(w.map_or(0, |x| x.0)),
                        "sel",
                        cycle,
                        w.map_or(Value::Null, |x| js(&x.1)),
                        js(&got),
                    );
                    break 'run;
                }
            }
            got_any = true;
        }
        // ---- this cycle's CSR write takes effect at the edge
        if let Some((addr, data)) = csr_write {
            match addr {
                a if a == csr::CONTROL => r.csr.control = data,
                a if a == csr::SCRATCH => r.csr.scratch = data,
                a if a == csr::SEL_CMD_ARG => r.csr.cmd_arg = data,
                a if a == csr::FAULT => r.csr.fault = data,
                a if a == csr::IRQ_ENABLE => r.csr.irq_en = data,
                a if a == csr::PATH_SEL => r.csr.path_sel = data,
                a if EVENT_REGS.contains(&a) => r.counters.write(a, data),
                a if a == csr::SEL_CMD => {
                    r.csr.cmd = data;
                    pending_hw = true;
                }
                _ => {}
            }
        }
        csr_prev = csr_now;
        if got_any {
            last_busy = cycle;
        }
        if got_any || csr_prev.is_some() {
            idle = 0;
        } else {
            idle += 1;
            if idle > MAX_IDLE_CYCLES {
                let k = exp_rx
                    .front()
                    .map(|x| x.0)
                    .or(exp_tx.front().map(|x| x.0))
                    .or(exp_sel.front().map(|x| x.0))
                    .unwrap_or(0);
                mismatch = fail(index(k), "stuck", cycle, Value::Null, Value::Null);
                break 'run;
            }
        }
        if let Some(p) = opts.progress {
            if cycle % 16384 == 0 {
                p(index(done) as u64);
            }
        }
        dut.tick();
        cycle += 1;
    }
    st.cycle = cycle;
    st.last_busy = last_busy;
    Ok(mismatch)
}

fn js<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

fn fail(index: usize, stream: &str, cycle: u64, want: Value, got: Value) -> Option<Mismatch> {
    Some(Mismatch {
        index,
        stream: stream.into(),
        cycle,
        want,
        got,
    })
}

/// Random `transport_core` stream: the three blocks' random streams interleaved, plus CSR
/// reads of every modelled register, CONTROL toggling (SELECT room from the scoreboard),
/// scratch writes, selector commands through `SEL_CMD` and counter audits (the last
/// transaction is always one).
pub fn core_stream(seed: u64, n: usize) -> Vec<CoreTxn> {
    let mut rng = Rng::new(seed ^ 0xC0DE);
    let rx = crate::bench::rx_stream(seed, n);
    let tx = crate::bench::tx_stream(seed.wrapping_add(1), n);
    let sel = crate::bench::sel_stream(seed.wrapping_add(2), n);
    let (mut a, mut b, mut c) = (0, 0, 0);
    let readable: Vec<u16> = csr::REGS
        .iter()
        .map(|r| r.offset)
        .filter(|&a| modelled_csr(a))
        .chain([0x3C])
        .collect();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let t = match rng.below(100) {
            0..=31 => {
                a += 1;
                CoreTxn::Rx { op: rx[a - 1] }
            }
            32..=63 => {
                b += 1;
                CoreTxn::Tx { op: tx[b - 1] }
            }
            64..=89 => {
                c += 1;
                CoreTxn::Sel { op: sel[c - 1] }
            }
            90..=95 => CoreTxn::CsrRead {
                addr: readable[rng.below(readable.len() as u32) as usize],
            },
            96 => CoreTxn::CsrWrite {
                addr: csr::CONTROL,
                data: (rng.below(2) * csr::CONTROL_ROOM_FROM_SCOREBOARD) | (rng.next() & !1 & 0xF0),
            },
            97 => CoreTxn::CsrWrite {
                addr: csr::SCRATCH,
                data: rng.next(),
            },
            _ => CoreTxn::SelCmd {
                op: sel_random(&mut rng),
            },
        };
        out.push(t);
        // about one audit per 4,096 transactions (half of them of one path), and one at the end
        match rng.below(8192) {
            0 => out.push(CoreTxn::Audit),
            1 => out.push(CoreTxn::AuditPath {
                path: rng.below(PATHS as u32) as u8,
            }),
            _ => {}
        }
    }
    out.truncate(n);
    if let Some(last) = out.last_mut() {
        *last = CoreTxn::Audit;
    }
    out
}
