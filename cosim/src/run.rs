//! Entry points: a seeded lockstep run of one block on one backend (with a side-by-side run of
//! rust-hdl's simulator on a prefix of the same stream), failure artifacts (shrunk replay file,
//! VCD of the last cycles) and replays.
use crate::bench::{RxBench, SelBench, StreamBench, TxBench};
use crate::core::{core_preamble, core_stream, run_core, run_core_from, CoreStart, CoreTxn};
use crate::engine::{run_stream, shrink, Mismatch, ReplayFile, RunOpts, RunResult, Timer, MAX_STALL_SCRIPT};
use crate::pins::{
    PathSelectorPins, RustHdl, RxTrackerMutantPins, RxTrackerPins, TransportCorePins, TxScoreboardPins, Verilated,
};
use crate::verilated::ModelState;
use crate::Backend;
use crate::CosimError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockName {
    RxTracker,
    TxScoreboard,
    PathSelector,
    TransportCore,
}

impl BlockName {
    pub const ALL: [BlockName; 4] = [
        BlockName::RxTracker,
        BlockName::TxScoreboard,
        BlockName::PathSelector,
        BlockName::TransportCore,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            BlockName::RxTracker => "rx_tracker",
            BlockName::TxScoreboard => "tx_scoreboard",
            BlockName::PathSelector => "path_selector",
            BlockName::TransportCore => "transport_core",
        }
    }
}

impl std::str::FromStr for BlockName {
    type Err = CosimError;
    fn from_str(s: &str) -> Result<Self, CosimError> {
        BlockName::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| CosimError::UnknownBlock(s.to_string()))
    }
}

/// Simulator backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Verilator,
    Rusthdl,
}

/// One lockstep run.
pub struct CosimConfig<'a> {
    pub block: BlockName,
    pub backend: BackendKind,
    pub transactions: usize,
    pub seed: u64,
    /// VCD of the whole run (Verilator).
    pub vcd: Option<PathBuf>,
    /// Transactions of the same stream also run on rust-hdl's simulator for the speed
    /// comparison (0: none).
    pub compare_prefix: usize,
    /// Where a mismatch's replay file and VCD go.
    pub artifacts: PathBuf,
    /// Use the rx_tracker with the injected mutation (harness self-test).
    pub mutant: bool,
    /// Shrinking budget (lockstep reruns).
    pub shrink_budget: usize,
    /// Cut every stall phase to this many clocks (a fuzz input's replay; see [`check_core`]).
    pub max_stall_phase: Option<u32>,
    /// Stall phases written out (a fuzz input's replay; see [`RunOpts::stall_script`]).
    pub stall_script: Vec<u8>,
    pub progress: Option<&'a dyn Fn(u64)>,
}

impl CosimConfig<'_> {
    pub fn new(block: BlockName, transactions: usize, seed: u64) -> Self {
        Self {
            block,
            backend: BackendKind::Verilator,
            transactions,
            seed,
            vcd: None,
            compare_prefix: 0,
            artifacts: PathBuf::from("target/cosim-failures"),
            mutant: false,
            shrink_budget: 400,
            max_stall_phase: None,
            stall_script: Vec::new(),
            progress: None,
        }
    }

    /// Options that reproduce this run's stall pattern (seed, cap, script), nothing else.
    fn stall_opts(&self) -> RunOpts<'_> {
        RunOpts {
            stall_seed: self.seed,
            max_stall_phase: self.max_stall_phase,
            stall_script: &self.stall_script,
            ..Default::default()
        }
    }
}

/// The rust-hdl side-by-side figures.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub transactions: usize,
    pub cycles: u64,
    pub cycles_per_s: f64,
    pub wall_s: f64,
    pub cycles_per_cpu_s: Option<f64>,
    pub mismatches: u32,
    /// This run's cycles_per_s over rust-hdl's.
    pub speedup: f64,
}

/// Speed of the Verilated model alone: the input pins of every cycle of the lockstep run,
/// recorded, then applied to a fresh model with no reference model, queues or comparisons.
#[derive(Clone, Debug, Serialize)]
pub struct HardwareOnly {
    pub cycles: u64,
    pub cycles_per_s: f64,
    pub wall_s: f64,
    pub cycles_per_cpu_s: Option<f64>,
}

/// Backend wrapper that records the inputs of every cycle.
struct Recording<'a, D: Backend> {
    inner: &'a mut D,
    inputs: Vec<D::In>,
}

impl<D: Backend> Backend for Recording<'_, D>
where
    D::In: Clone,
{
    type In = D::In;
    type Out = D::Out;
    fn set(&mut self, i: &Self::In) {
        self.inputs.push(i.clone());
        self.inner.set(i);
    }
    fn eval(&mut self) -> Self::Out {
        self.inner.eval()
    }
    fn tick(&mut self) {
        self.inner.tick()
    }
    fn reset(&mut self) -> Result<(), CosimError> {
        self.inputs.clear();
        self.inner.reset()
    }
    fn trace(&mut self, path: &Path) -> Result<(), CosimError> {
        self.inner.trace(path)
    }
}

/// [`HardwareOnly`] for transport_core on `t` (stall pattern `seed`).
pub fn hardware_only_core(t: &[CoreTxn], seed: u64) -> Result<HardwareOnly, CosimError> {
    let mut dut = Verilated::<TransportCorePins>::new()?;
    let mut rec = Recording {
        inner: &mut dut,
        inputs: Vec::new(),
    };
    let o = RunOpts {
        stall_seed: seed,
        ..Default::default()
    };
    run_core(&mut rec, t, &o)?;
    let inputs = rec.inputs;
    let mut fresh = Verilated::<TransportCorePins>::new()?;
    let timer = Timer::start();
    let mut sink = 0u32;
    for i in &inputs {
        fresh.set(i);
        // the outputs are read as in lockstep (the comparison itself is what is left out)
        sink ^= fresh.eval().csr_rdata;
        fresh.tick();
    }
    std::hint::black_box(sink);
    let wall = timer.wall_s();
    let n = inputs.len() as u64;
    Ok(HardwareOnly {
        cycles: n,
        cycles_per_s: n as f64 / wall.max(1e-9),
        wall_s: wall,
        cycles_per_cpu_s: timer.cpu_s().filter(|c| *c > 0.05).map(|c| n as f64 / c),
    })
}

/// Report of one run (`mroce cosim --json`).
#[derive(Clone, Debug, Serialize)]
pub struct CosimReport {
    pub block: &'static str,
    pub backend: BackendKind,
    pub transactions: usize,
    pub mismatches: u32,
    pub cycles: u64,
    pub cycles_per_s: f64,
    pub wall_s: f64,
    /// Simulated cycles per CPU second of the simulating thread (the one-core figure on a
    /// loaded machine).
    pub cycles_per_cpu_s: Option<f64>,
    pub cpu_s: Option<f64>,
    pub seed: u64,
    pub verilator: Option<String>,
    pub rusthdl: Option<Comparison>,
    pub mismatch: Option<Mismatch>,
    pub replay_file: Option<PathBuf>,
    pub vcd_file: Option<PathBuf>,
    /// Transactions in the shrunk replay.
    pub replay_transactions: Option<usize>,
    /// transport_core, Verilator backend: the Verilated core alone on the same stimulus.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardware_only: Option<HardwareOnly>,
}

type Runner<'r, T> = Box<dyn Fn(&[T], &RunOpts) -> Result<RunResult, CosimError> + 'r>;

fn stream_runner<'r, B, P>() -> Runner<'r, B::Txn>
where
    B: StreamBench<Pins = P> + 'r,
    P: crate::pins::VerilatedPins + 'r,
{
    Box::new(|t: &[B::Txn], o: &RunOpts| {
        run_stream::<B, _>(&mut Verilated::<P>::with_trace_support(o.trace.is_some())?, t, o)
    })
}

fn stream_runner_hdl<'r, B, P>() -> Runner<'r, B::Txn>
where
    B: StreamBench<Pins = P> + 'r,
    P: crate::pins::RustHdlPins + 'r,
{
    Box::new(|t: &[B::Txn], o: &RunOpts| run_stream::<B, _>(&mut RustHdl::<P>::new(), t, o))
}

fn core_runner<'r>() -> Runner<'r, CoreTxn> {
    Box::new(|t: &[CoreTxn], o: &RunOpts| {
        run_core(
            &mut Verilated::<TransportCorePins>::with_trace_support(o.trace.is_some())?,
            t,
            o,
        )
    })
}

fn core_runner_hdl<'r>() -> Runner<'r, CoreTxn> {
    Box::new(|t: &[CoreTxn], o: &RunOpts| run_core(&mut RustHdl::<TransportCorePins>::new(), t, o))
}

/// Generic part of a run: main run, rust-hdl comparison, failure artifacts.
#[allow(clippy::too_many_arguments)]
fn lockstep<T: Clone + Serialize>(
    cfg: &CosimConfig,
    txns: &[T],
    main: &Runner<T>,
    verilated: &Runner<T>,
    hdl: &Runner<T>,
) -> Result<CosimReport, CosimError> {
    let opts = RunOpts {
        trace: cfg.vcd.clone().map(|p| (p, 0)),
        progress: cfg.progress,
        ..cfg.stall_opts()
    };
    let res = main(txns, &opts)?;
    let mut rep = CosimReport {
        block: cfg.block.as_str(),
        backend: cfg.backend,
        transactions: res.transactions,
        mismatches: u32::from(res.mismatch.is_some()),
        cycles: res.cycles,
        cycles_per_s: res.cycles as f64 / res.wall_s.max(1e-9),
        wall_s: res.wall_s,
        // schedstat is updated at scheduler ticks: too short a run has no meaningful CPU time
        cycles_per_cpu_s: res.cpu_s.filter(|c| *c > 0.05).map(|c| res.cycles as f64 / c),
        cpu_s: res.cpu_s,
        seed: cfg.seed,
        verilator: crate::verilated::verilator_version().map(str::to_string),
        rusthdl: None,
        mismatch: res.mismatch.clone(),
        replay_file: None,
        vcd_file: cfg.vcd.clone(),
        replay_transactions: None,
        hardware_only: None,
    };
    if let Some(m) = &res.mismatch {
        let (file, vcd, n) = artifacts(cfg, txns, m, verilated)?;
        rep.replay_file = Some(file);
        rep.vcd_file = vcd;
        rep.replay_transactions = Some(n);
        return Ok(rep);
    }
    if cfg.compare_prefix > 0 && cfg.backend == BackendKind::Verilator {
        let k = cfg.compare_prefix.min(txns.len());
        let prefix = &txns[..k];
        let ropts = cfg.stall_opts();
        let h = hdl(prefix, &ropts)?;
        let cps = h.cycles as f64 / h.wall_s.max(1e-9);
        rep.rusthdl = Some(Comparison {
            transactions: k,
            cycles: h.cycles,
            cycles_per_s: cps,
            wall_s: h.wall_s,
            cycles_per_cpu_s: h.cpu_s.filter(|c| *c > 0.05).map(|c| h.cycles as f64 / c),
            mismatches: u32::from(h.mismatch.is_some()),
            speedup: rep.cycles_per_s / cps.max(1e-9),
        });
    }
    Ok(rep)
}

/// Shrink the failing stream, write the replay file and a VCD of the replay's last cycles.
fn artifacts<T: Clone + Serialize>(
    cfg: &CosimConfig,
    txns: &[T],
    m: &Mismatch,
    verilated: &Runner<T>,
) -> Result<(PathBuf, Option<PathBuf>, usize), CosimError> {
    let opts = cfg.stall_opts();
    let upto = (m.index + 1).min(txns.len());
    let fails = |c: &[T]| matches!(verilated(c, &opts), Ok(r) if r.mismatch.is_some());
    let base: Vec<T> = if fails(&txns[..upto]) {
        txns[..upto].to_vec()
    } else {
        txns.to_vec()
    };
    let small = shrink(base, cfg.shrink_budget, fails);
    let last = verilated(&small, &opts)?;
    std::fs::create_dir_all(&cfg.artifacts).map_err(|err| CosimError::Io {
        path: cfg.artifacts.clone(),
        err,
    })?;
    let stem = format!(
        "{}{}-seed{}",
        cfg.block.as_str(),
        if cfg.mutant { "-mutant" } else { "" },
        cfg.seed
    );
    let file = cfg.artifacts.join(format!("{stem}.replay.json"));
    ReplayFile {
        block: cfg.block.as_str().into(),
        mutant: cfg.mutant,
        stall_seed: cfg.seed,
        max_stall_phase: cfg.max_stall_phase,
        stall_script: cfg.stall_script.clone(),
        transactions: serde_json::to_value(&small).unwrap_or_default(),
        mismatch: last.mismatch.clone().or(Some(m.clone())),
    }
    .write(&file)?;
    let vcd = cfg.artifacts.join(format!("{stem}.vcd"));
    let from = last.mismatch.as_ref().map_or(0, |x| x.cycle.saturating_sub(2000));
    let traced = verilated(
        &small,
        &RunOpts {
            trace: Some((vcd.clone(), from)),
            ..cfg.stall_opts()
        },
    );
    let vcd = traced.ok().map(|_| vcd);
    Ok((file, vcd, small.len()))
}

/// Run `cfg.block` on a seeded random stream.
pub fn run(cfg: &CosimConfig) -> Result<CosimReport, CosimError> {
    let n = cfg.transactions;
    match cfg.block {
        BlockName::RxTracker => {
            let t = RxBench::random_stream(cfg.seed, n);
            run_block_rx(cfg, &t)
        }
        BlockName::TxScoreboard => {
            let t = TxBench::random_stream(cfg.seed, n);
            run_block::<TxBench, TxScoreboardPins>(cfg, &t)
        }
        BlockName::PathSelector => {
            let t = SelBench::random_stream(cfg.seed, n);
            run_block::<SelBench, PathSelectorPins>(cfg, &t)
        }
        BlockName::TransportCore => {
            let t = core_stream(cfg.seed, n);
            run_transactions_core(cfg, &t)
        }
    }
}

fn run_block<B, P>(cfg: &CosimConfig, t: &[B::Txn]) -> Result<CosimReport, CosimError>
where
    B: StreamBench<Pins = P>,
    P: crate::pins::VerilatedPins + crate::pins::RustHdlPins + 'static,
    B: 'static,
{
    let v = stream_runner::<B, P>();
    let h = stream_runner_hdl::<B, P>();
    let main = match cfg.backend {
        BackendKind::Verilator => &v,
        BackendKind::Rusthdl => &h,
    };
    lockstep(cfg, t, main, &v, &h)
}

/// rx_tracker (or its mutant) on given transactions.
pub fn run_block_rx(cfg: &CosimConfig, t: &[crate::bench::RxTxn]) -> Result<CosimReport, CosimError> {
    if cfg.mutant {
        run_block::<MutantRxBench, RxTrackerMutantPins>(cfg, t)
    } else {
        run_block::<RxBench, RxTrackerPins>(cfg, t)
    }
}

/// tx_scoreboard on given transactions.
pub fn run_block_tx(cfg: &CosimConfig, t: &[crate::bench::TxTxn]) -> Result<CosimReport, CosimError> {
    run_block::<TxBench, TxScoreboardPins>(cfg, t)
}

/// path_selector on given transactions.
pub fn run_block_sel(cfg: &CosimConfig, t: &[crate::bench::SelTxn]) -> Result<CosimReport, CosimError> {
    run_block::<SelBench, PathSelectorPins>(cfg, t)
}

/// transport_core on given transactions.
pub fn run_transactions_core(cfg: &CosimConfig, t: &[CoreTxn]) -> Result<CosimReport, CosimError> {
    let v = core_runner();
    let h = core_runner_hdl();
    let main = match cfg.backend {
        BackendKind::Verilator => &v,
        BackendKind::Rusthdl => &h,
    };
    let mut rep = lockstep(cfg, t, main, &v, &h)?;
    if cfg.backend == BackendKind::Verilator && rep.mismatch.is_none() && cfg.vcd.is_none() {
        rep.hardware_only = Some(hardware_only_core(t, cfg.seed)?);
    }
    Ok(rep)
}

/// `RxBench` on the mutant's pins (same semantics and reference).
pub struct MutantRxBench;

impl StreamBench for MutantRxBench {
    const NAME: &'static str = "rx_tracker";
    type Txn = crate::bench::RxTxn;
    type Rec = crate::bench::RxRec;
    type Reference = <RxBench as StreamBench>::Reference;
    type Pins = RxTrackerMutantPins;
    fn reference() -> Self::Reference {
        RxBench::reference()
    }
    fn preamble() -> Vec<Self::Txn> {
        RxBench::preamble()
    }
    fn drive(t: Option<&Self::Txn>, r: bool) -> crate::pins::RxIn {
        RxBench::drive(t, r)
    }
    fn expect(m: &mut Self::Reference, i: &crate::pins::RxIn, cycle: u64) -> Self::Rec {
        RxBench::expect(m, i, cycle)
    }
    fn handshake(o: &crate::pins::RxPinsOut) -> (bool, bool) {
        RxBench::handshake(o)
    }
    fn record(o: &crate::pins::RxPinsOut) -> Self::Rec {
        RxBench::record(o)
    }
    fn random_stream(seed: u64, n: usize) -> Vec<Self::Txn> {
        RxBench::random_stream(seed, n)
    }
}

fn parse_txns<T: DeserializeOwned>(path: &Path, v: &serde_json::Value) -> Result<Vec<T>, CosimError> {
    serde_json::from_value(v.clone()).map_err(|e| CosimError::Replay {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })
}

/// Rerun a replay file on Verilator (optionally with a VCD of the whole replay). The report's
/// `mismatch` is the replay's own result.
pub fn replay(path: &Path, vcd: Option<PathBuf>) -> Result<CosimReport, CosimError> {
    let mut f = ReplayFile::read(path)?;
    let block: BlockName = f.block.parse()?;
    let mut cfg = CosimConfig::new(block, 0, f.stall_seed);
    cfg.vcd = vcd;
    cfg.mutant = f.mutant;
    cfg.max_stall_phase = f.max_stall_phase;
    cfg.stall_script = std::mem::take(&mut f.stall_script);
    // a replay reproduces; it writes no new artifacts
    cfg.shrink_budget = 0;
    cfg.artifacts = std::env::temp_dir().join("mroce-cosim-replay");
    let mut rep = match block {
        BlockName::RxTracker => run_block_rx(&cfg, &parse_txns(path, &f.transactions)?)?,
        BlockName::TxScoreboard => run_block_tx(&cfg, &parse_txns(path, &f.transactions)?)?,
        BlockName::PathSelector => run_block_sel(&cfg, &parse_txns(path, &f.transactions)?)?,
        BlockName::TransportCore => run_transactions_core(&cfg, &parse_txns(path, &f.transactions)?)?,
    };
    rep.replay_file = Some(path.to_path_buf());
    Ok(rep)
}

/// Lockstep check of one fuzz input on the fast Verilated model: `None` when hardware and model
/// agree on every record (used by the cargo-fuzz equivalence targets in fuzz/). `stall_script`
/// writes the valid/ready phases out ([`crate::engine::Stalls::scripted`]); empty, the seed
/// draws them.
/// On a mismatch the result is a replay file (save it as JSON for `mroce cosim replay`).
pub fn check_rx(
    stall_seed: u64,
    stall_script: &[u8],
    t: &[crate::bench::RxTxn],
) -> Result<Option<ReplayFile>, CosimError> {
    let o = RunOpts {
        stall_seed,
        stall_script,
        ..Default::default()
    };
    let m = run_stream::<RxBench, _>(&mut Verilated::<RxTrackerPins>::new()?, t, &o)?.mismatch;
    Ok(m.map(|m| replay_file("rx_tracker", &o, t, m)))
}

fn replay_file<T: Serialize>(block: &str, o: &RunOpts, t: &[T], m: Mismatch) -> ReplayFile {
    ReplayFile {
        block: block.into(),
        mutant: false,
        stall_seed: o.stall_seed,
        max_stall_phase: o.max_stall_phase,
        stall_script: o.stall_script.to_vec(),
        transactions: serde_json::to_value(t).unwrap_or_default(),
        mismatch: Some(m),
    }
}

/// [`check_rx`] for `tx_scoreboard`.
pub fn check_tx(
    stall_seed: u64,
    stall_script: &[u8],
    t: &[crate::bench::TxTxn],
) -> Result<Option<ReplayFile>, CosimError> {
    let o = RunOpts {
        stall_seed,
        stall_script,
        ..Default::default()
    };
    let m = run_stream::<TxBench, _>(&mut Verilated::<TxScoreboardPins>::new()?, t, &o)?.mismatch;
    Ok(m.map(|m| replay_file("tx_scoreboard", &o, t, m)))
}

/// [`check_rx`] for `path_selector` (operations are normalized to the selector's ranges).
pub fn check_sel(
    stall_seed: u64,
    stall_script: &[u8],
    t: &[crate::bench::SelTxn],
) -> Result<Option<ReplayFile>, CosimError> {
    let o = RunOpts {
        stall_seed,
        stall_script,
        ..Default::default()
    };
    let t: Vec<_> = t.iter().map(|x| x.normalized()).collect();
    let m = run_stream::<SelBench, _>(&mut Verilated::<PathSelectorPins>::new()?, &t, &o)?.mismatch;
    Ok(m.map(|m| replay_file("path_selector", &o, &t, m)))
}

/// [`check_rx`] for `transport_core` (transactions are normalized, see [`CoreTxn::normalized`]).
///
/// The model is built and taken through the preamble once per thread; every call restores its
/// state after the preamble, which the preamble (run without stalls) always leaves the same.
/// That is most of a short input's clocks, so the fuzzer runs about twice as many inputs.
pub fn check_core(stall_seed: u64, stall_script: &[u8], t: &[CoreTxn]) -> Result<Option<ReplayFile>, CosimError> {
    let o = RunOpts {
        stall_seed,
        max_stall_phase: Some(FUZZ_MAX_STALL_PHASE),
        stall_script,
        ..Default::default()
    };
    let t: Vec<_> = t.iter().map(|x| x.normalized()).collect();
    let m = CORE_AFTER_PREAMBLE.with(|cell| -> Result<Option<Mismatch>, CosimError> {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let mut dut = Verilated::<TransportCorePins>::new()?;
            match core_preamble(&mut dut, &o)? {
                Ok(start) => {
                    let state = dut.model().save_state();
                    *cell = Some((dut, state, start));
                }
                Err(m) => return Ok(Some(m)),
            }
        }
        if let Some((dut, state, start)) = cell.as_mut() {
            if dut.model().restore_state(state) {
                return Ok(run_core_from(dut, start, &t, &o, Timer::start())?.mismatch);
            }
        }
        Ok(run_core(&mut Verilated::<TransportCorePins>::new()?, &t, &o)?.mismatch)
    })?;
    Ok(m.map(|m| replay_file("transport_core", &o, &t, m)))
}

/// [`check_core`]'s longest stall phase, in clocks. A fuzz input has at most a few hundred
/// operations, and phases of up to 2,000 clocks (the random streams' pattern) made most of its
/// clocks idle ones; 64 still fills every output FIFO (16 entries) behind a stalled consumer.
pub const FUZZ_MAX_STALL_PHASE: u32 = 64;

/// Operations per fuzz input: short runs keep the executions per second high.
pub const FUZZ_MAX_OPS: usize = 160;

/// One input `(stall seed, stall script, operations)` of an equivalence fuzz target
/// (`fuzz/fuzz_targets/cosim_*.rs`): the script is clipped to [`MAX_STALL_SCRIPT`] bytes and the
/// operations to [`FUZZ_MAX_OPS`], then `check` ([`check_rx`], [`check_tx`], [`check_sel`] or
/// [`check_core`]) runs them. `Err` says how `block` differs from the model, with the replay
/// file, or why the co-simulation could not run; the target panics with it.
pub fn fuzz_equivalence<T>(
    block: &str,
    check: impl FnOnce(u64, &[u8], &[T]) -> Result<Option<ReplayFile>, CosimError>,
    input: &(u64, Vec<u8>, Vec<T>),
) -> Result<(), String> {
    let (stall_seed, script, ops) = input;
    let script = &script[..script.len().min(MAX_STALL_SCRIPT)];
    let ops = &ops[..ops.len().min(FUZZ_MAX_OPS)];
    match check(*stall_seed, script, ops) {
        Ok(None) => Ok(()),
        Ok(Some(replay)) => Err(format!(
            "{block} differs from the model: {}\nreplay file (save as JSON, run `mroce cosim replay FILE`):\n{}",
            replay.mismatch.as_ref().map_or(String::new(), |m| m.to_string()),
            serde_json::to_string(&replay).unwrap_or_default()
        )),
        Err(e) => Err(format!("{block} co-simulation could not run: {e}")),
    }
}

type AfterPreamble = (Verilated<TransportCorePins>, ModelState, CoreStart);

thread_local! {
    /// [`check_core`]'s model, its state after the preamble, and the reference's.
    static CORE_AFTER_PREAMBLE: std::cell::RefCell<Option<AfterPreamble>> = const { std::cell::RefCell::new(None) };
}
