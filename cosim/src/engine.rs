//! The lockstep engine: drives a block (any [`Backend`]) and its reference with one transaction
//! stream under random valid/ready stalls, compares every record bit for bit, stops at the
//! first mismatch; shrinking and replay files.
use crate::bench::{InOf, OutOf, Rng, StreamBench};
use crate::{Backend, CosimError};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Cycles without any output record (while the engine waits for one) before the block is
/// declared stuck. Longer than any back-pressure stretch of [`Stalls`].
pub const MAX_IDLE_CYCLES: u64 = 20_000;

/// Valid/ready stall pattern: phases of full speed, random bubbles, long back-pressure
/// stretches (ready low for up to 400 cycles, so the output FIFO fills and `in_ready` drops),
/// and input starvation.
#[derive(Clone, Debug)]
pub struct Stalls {
    rng: Rng,
    left: u32,
    p_valid: u32,
    p_ready: u32,
    /// Longest phase, in clocks.
    max_phase: u32,
    /// Phases written out, one byte each (empty: drawn from `rng`).
    script: Vec<u8>,
    /// Next byte of `script`.
    pos: usize,
    /// Clocks of this round of `script` in phases that stall.
    stalled: u32,
}

/// Longest stall script a fuzz input carries, in phases (it repeats when it runs out).
pub const MAX_STALL_SCRIPT: usize = 32;

/// Fewest clocks at full speed after each round of a stall script.
const SCRIPT_ROUND_CLOCKS: u32 = 16;

/// (valid %, ready %) of a script byte's top four bits: full speed, back-pressure, starvation,
/// both, and bubbles of either kind.
const SCRIPT_MODES: [(u32, u32); 16] = [
    (100, 100),
    (100, 100),
    (100, 0),
    (100, 0),
    (0, 100),
    (0, 100),
    (0, 0),
    (50, 50),
    (100, 50),
    (50, 100),
    (100, 20),
    (20, 100),
    (80, 80),
    (100, 90),
    (90, 100),
    (0, 50),
];

impl Stalls {
    pub fn new(seed: u64) -> Self {
        Self::capped(seed, None)
    }

    /// The pattern of `seed` with every phase cut to at most `max_phase` clocks (`None`: as
    /// drawn, up to 2,000).
    pub fn capped(seed: u64, max_phase: Option<u32>) -> Self {
        Self::scripted(seed, max_phase, &[], 0)
    }

    /// Phases taken from `script`, from byte `start` on, instead of drawn: a byte's low four
    /// bits give the length (1 + 2n clocks, 1..=31), its top four the valid and ready rates
    /// ([`SCRIPT_MODES`]); `seed` still draws the bubbles inside a phase. So the fuzzer places
    /// back-pressure where it wants it. Each round of the script ends with a phase at full
    /// speed twice as long as the round's stalling phases (at least 16 clocks), and it starts
    /// again: a script of nothing but stalls cannot hold the block up, and at most a third of
    /// an input's clocks stall (what a fuzz input costs is its clocks). An empty script:
    /// [`Stalls::capped`].
    pub fn scripted(seed: u64, max_phase: Option<u32>, script: &[u8], start: usize) -> Self {
        Self {
            rng: Rng::new(seed ^ 0x5741_4C4C),
            left: 0,
            p_valid: 100,
            p_ready: 100,
            max_phase: max_phase.unwrap_or(u32::MAX).max(1),
            script: script.to_vec(),
            pos: start,
            stalled: 0,
        }
    }

    /// Never stalls: valid and ready on every cycle.
    pub fn none() -> Self {
        Self {
            left: u32::MAX,
            ..Self::capped(0, None)
        }
    }

    /// (offer valid, out_ready) for the next cycle.
    #[inline]
    #[allow(clippy::should_implement_trait)] // endless: never None, so not an Iterator
    pub fn next(&mut self) -> (bool, bool) {
        if self.left == 0 {
            let (len, pv, pr) = if self.script.is_empty() {
                let r = &mut self.rng;
                match r.below(100) {
                    0..=29 => (r.range(50, 2000), 100, 100),
                    30..=59 => (r.range(50, 1000), r.range(20, 100), r.range(20, 100)),
                    60..=74 => (r.range(20, 400), 100, 0),
                    75..=84 => (r.range(5, 100), 0, r.range(0, 100)),
                    _ => (r.range(50, 1000), r.range(50, 100), 100),
                }
            } else {
                // the script and then one full-speed phase, round again: that phase keeps a
                // script of nothing but stalls from holding the block up for ever
                let k = self.pos % (self.script.len() + 1);
                self.pos = self.pos.wrapping_add(1);
                match self.script.get(k) {
                    Some(&b) => {
                        let (pv, pr) = SCRIPT_MODES[usize::from(b >> 4)];
                        let len = 1 + 2 * u32::from(b & 0x0F);
                        if pv < 100 || pr < 100 {
                            self.stalled = self.stalled.saturating_add(len);
                        }
                        (len, pv, pr)
                    }
                    None => (
                        core::mem::take(&mut self.stalled)
                            .saturating_mul(2)
                            .max(SCRIPT_ROUND_CLOCKS),
                        100,
                        100,
                    ),
                }
            };
            self.left = len.min(self.max_phase);
            self.p_valid = pv;
            self.p_ready = pr;
        }
        self.left -= 1;
        let v = self.p_valid >= 100 || (self.p_valid > 0 && self.rng.below(100) < self.p_valid);
        let rd = self.p_ready >= 100 || (self.p_ready > 0 && self.rng.below(100) < self.p_ready);
        (v, rd)
    }
}

/// The first difference between hardware and reference.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Mismatch {
    /// Index of the transaction whose record differs (in the stream, preamble excluded; for
    /// `transport_core` the index in the mixed stream).
    pub index: usize,
    /// Stream (`rx`, `tx`, `sel`, `csr`; the block name for single-stream blocks).
    pub stream: String,
    /// Clock cycle at which the record was seen.
    pub cycle: u64,
    /// The reference's record (null: the hardware produced a record nobody expected).
    pub want: serde_json::Value,
    /// The hardware's record (null: none within the idle limit).
    pub got: serde_json::Value,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mismatch at transaction {} ({} stream, cycle {}):\n  want {}\n  got  {}",
            self.index, self.stream, self.cycle, self.want, self.got
        )
    }
}

/// Options of one run.
#[derive(Default)]
pub struct RunOpts<'a> {
    /// Seed of the stall pattern.
    pub stall_seed: u64,
    /// Cut every stall phase to this many clocks (the fuzzer's transport_core inputs).
    pub max_stall_phase: Option<u32>,
    /// Stall phases written out (fuzz inputs; see [`Stalls::scripted`]); empty: drawn from
    /// the seed.
    pub stall_script: &'a [u8],
    /// Write a VCD from this cycle on (Verilator backend).
    pub trace: Option<(PathBuf, u64)>,
    /// Called every 4096 records with the number of transactions done.
    pub progress: Option<&'a dyn Fn(u64)>,
}

/// CPU time of the calling thread in seconds (Linux `/proc/thread-self/schedstat`), so speed
/// figures can be stated per CPU second on a shared, loaded machine.
pub fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 * 1e-9)
}

/// Elapsed wall and CPU time since a start point.
pub struct Timer {
    wall: Instant,
    cpu: Option<f64>,
}

impl Timer {
    pub fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: thread_cpu_s(),
        }
    }
    pub fn wall_s(&self) -> f64 {
        self.wall.elapsed().as_secs_f64()
    }
    pub fn cpu_s(&self) -> Option<f64> {
        Some(thread_cpu_s()? - self.cpu?)
    }
}

/// Result of one run.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub transactions: usize,
    pub cycles: u64,
    pub wall_s: f64,
    /// CPU time of the run's thread.
    pub cpu_s: Option<f64>,
    pub mismatch: Option<Mismatch>,
}

fn to_json<T: Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

/// Run `txns` (after the bench's preamble) through `dut` and the reference in lockstep.
pub fn run_stream<B, D>(dut: &mut D, txns: &[B::Txn], opts: &RunOpts) -> Result<RunResult, CosimError>
where
    B: StreamBench,
    D: Backend<In = InOf<B>, Out = OutOf<B>>,
{
    let t0 = Timer::start();
    let pre = B::preamble();
    let npre = pre.len();
    let all: Vec<&B::Txn> = pre.iter().chain(txns.iter()).collect();
    let mut reference = B::reference();
    let mut expected: VecDeque<(usize, B::Rec)> = VecDeque::new();
    let mut stalls = Stalls::scripted(opts.stall_seed, opts.max_stall_phase, opts.stall_script, 0);
    let (mut i, mut done, mut cycle, mut idle) = (0usize, 0usize, 0u64, 0u64);
    let index = |k: usize| k.saturating_sub(npre);
    let mut mismatch = None;
    while done < all.len() {
        if let Some((path, from)) = &opts.trace {
            if cycle == *from {
                dut.trace(path)?;
            }
        }
        let (v, ready) = stalls.next();
        let offer = v && i < all.len();
        dut.set(&B::drive(offer.then(|| all[i]), ready));
        let o = dut.eval();
        let (in_ready, out_valid) = B::handshake(&o);
        if let Some((want, got)) = B::check_cycle(&mut reference, cycle, &o) {
            mismatch = Some(Mismatch {
                index: index(i.saturating_sub(1)),
                stream: format!("{} (per cycle)", B::NAME),
                cycle,
                want,
                got,
            });
            break;
        }
        if offer && in_ready {
            let pins = B::drive(Some(all[i]), ready);
            expected.push_back((i, B::expect(&mut reference, &pins, cycle)));
            i += 1;
        }
        if out_valid && ready {
            let got = B::record(&o);
            match expected.pop_front() {
                Some((_, want)) if want == got => {}
                w => {
                    mismatch = Some(Mismatch {
                        index: index(w.as_ref().map_or(done, |x| x.0)),
                        stream: B::NAME.into(),
                        cycle,
                        want: w.map_or(serde_json::Value::Null, |x| to_json(&x.1)),
                        got: to_json(&got),
                    });
                    break;
                }
            }
            done += 1;
            idle = 0;
            if done % 4096 == 0 {
                if let Some(p) = opts.progress {
                    p(index(done) as u64);
                }
            }
        } else {
            idle += 1;
            if idle > MAX_IDLE_CYCLES {
                let w = expected.pop_front();
                mismatch = Some(Mismatch {
                    index: index(w.as_ref().map_or(i, |x| x.0)),
                    stream: B::NAME.into(),
                    cycle,
                    want: w.map_or(serde_json::Value::Null, |x| to_json(&x.1)),
                    got: serde_json::Value::Null,
                });
                break;
            }
        }
        dut.tick();
        cycle += 1;
    }
    Ok(RunResult {
        transactions: txns.len(),
        cycles: cycle,
        wall_s: t0.wall_s(),
        cpu_s: t0.cpu_s(),
        mismatch,
    })
}

/// Shrink a failing stream by removing chunks (halving their size down to one transaction)
/// while `fails` still reports a mismatch. Bounded by `budget` calls of `fails`.
pub fn shrink<T: Clone>(mut txns: Vec<T>, budget: usize, mut fails: impl FnMut(&[T]) -> bool) -> Vec<T> {
    let mut calls = 0;
    let mut chunk = (txns.len() / 2).max(1);
    loop {
        let mut start = 0;
        while start < txns.len() && calls < budget {
            let end = (start + chunk).min(txns.len());
            let mut cand = txns[..start].to_vec();
            cand.extend_from_slice(&txns[end..]);
            calls += 1;
            if !cand.is_empty() && fails(&cand) {
                txns = cand;
            } else {
                start = end;
            }
        }
        if chunk == 1 || calls >= budget {
            return txns;
        }
        chunk = (chunk / 2).max(1);
    }
}

/// A replay file: the (shrunk) transactions up to a mismatch and the stall seed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplayFile {
    /// Block name.
    pub block: String,
    /// The HDL carried the test-only mutation (rx_tracker only).
    #[serde(default)]
    pub mutant: bool,
    /// Seed of the valid/ready stall pattern.
    pub stall_seed: u64,
    /// Stall phases cut to this many clocks ([`RunOpts::max_stall_phase`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stall_phase: Option<u32>,
    /// Stall phases written out ([`RunOpts::stall_script`]); empty: drawn from the seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stall_script: Vec<u8>,
    /// The transactions (a JSON array of the block's operations).
    pub transactions: serde_json::Value,
    /// The mismatch they produced when the file was written.
    pub mismatch: Option<Mismatch>,
}

impl ReplayFile {
    pub fn write(&self, path: &Path) -> Result<(), CosimError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| CosimError::Replay {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        std::fs::write(path, text).map_err(|err| CosimError::Io {
            path: path.to_path_buf(),
            err,
        })
    }

    pub fn read(path: &Path) -> Result<Self, CosimError> {
        let text = std::fs::read_to_string(path).map_err(|err| CosimError::Io {
            path: path.to_path_buf(),
            err,
        })?;
        serde_json::from_str(&text).map_err(|e| CosimError::Replay {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capped pattern has no phase longer than the cap, reaches it and still stalls, where
    /// the uncapped one runs past it; the replay file keeps the cap.
    #[test]
    fn capped_stall_phases() {
        let (mut a, mut b) = (Stalls::new(9), Stalls::capped(9, Some(64)));
        let (mut longest, mut stalled) = (0, 0);
        for _ in 0..200_000 {
            b.next();
            longest = longest.max(b.left + 1);
            stalled += u32::from(b.p_ready == 0 || b.p_valid == 0);
            assert!(b.left < 64);
        }
        assert_eq!(longest, 64, "phases reach the cap");
        assert!(stalled > 10_000, "stalls remain: {stalled}");
        // uncapped phases run past it
        assert!((0..200_000).map(|_| (a.next(), a.left).1).max() > Some(64));
        let f = ReplayFile {
            block: "transport_core".into(),
            mutant: false,
            stall_seed: 3,
            max_stall_phase: Some(64),
            stall_script: vec![0x2F, 0x03],
            transactions: serde_json::json!([]),
            mismatch: None,
        };
        let back: ReplayFile = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back.max_stall_phase, Some(64));
        assert_eq!(back.stall_script, [0x2F, 0x03]);
        let old: ReplayFile =
            serde_json::from_str(r#"{"block":"rx_tracker","stall_seed":1,"transactions":[],"mismatch":null}"#).unwrap();
        assert_eq!(old.max_stall_phase, None);
        assert!(old.stall_script.is_empty());
    }

    /// A script's phases come in its order with its lengths and rates, round again when it
    /// runs out, and under the cap.
    #[test]
    fn scripted_stall_phases() {
        // 0x2B: 23 clocks of back-pressure; 0x40: 1 clock of starvation; 0x0F: 31 at full
        // speed; the round's end: 48 at full speed (twice the stalled clocks)
        let mut s = Stalls::scripted(5, None, &[0x2B, 0x40, 0x0F], 0);
        let mut want = Vec::new();
        for _ in 0..2 {
            want.extend([(true, false); 23]);
            want.push((false, true));
            want.extend([(true, true); 31 + 48]);
        }
        let got: Vec<_> = (0..want.len()).map(|_| s.next()).collect();
        assert_eq!(got, want);
        // a cap of 8 cuts the long phases; a start of 1 begins with starvation, and the first
        // round's end is the 16-clock minimum (one stalled clock)
        let mut c = Stalls::scripted(5, Some(8), &[0x2B, 0x40, 0x0F], 1);
        let got: Vec<_> = (0..25).map(|_| c.next()).collect();
        let mut want = vec![(false, true)];
        want.extend([(true, true); 16]);
        want.extend([(true, false); 8]);
        assert_eq!(got, want);
        // nothing but back-pressure: two thirds of the clocks still take records
        let mut b = Stalls::scripted(5, None, &[0x2F, 0x6F], 0);
        assert_eq!((0..186).filter(|_| b.next().1).count(), 124);
    }
}
