//! The six experiments of `mroce sim`, each running every transport on the same fabric and
//! returning one JSON summary (`experiment`, `seed`, `events_per_s`, `wall_s`, `results`, and
//! the parameters in force under `params`).

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::{self, Progress, RunConfig, RunReport};
use crate::fabric::{FabricConfig, FailTarget, Failure};
use crate::rng::{derive_seed, Rng};
use crate::workload::{Layout, Workload};
use crate::{Factory, Kind};

/// Knobs shared by every experiment.
#[derive(Debug, Clone)]
pub struct Common {
    /// Fabric (experiments override what they sweep).
    pub fabric: FabricConfig,
    /// Seed.
    pub seed: u64,
    /// Paths per connection (mroce).
    pub paths: u16,
    /// mroce's policy for ECN re-route verdicts (`EndpointConfig::ecn_reroute`).
    pub ecn_reroute: mroce_model::endpoint::EcnReroute,
    /// mroce's connection limit before the first rate hint (`EndpointConfig::initial_conn_limit`).
    pub initial_conn_limit: u16,
    /// mroce's tail hedge (`EndpointConfig::tail_hedge`).
    pub tail_hedge: bool,
    /// mroce's immediate ACKs for the first flight (`EndpointConfig::first_flight_ack_req`).
    pub first_flight_ack_req: bool,
    /// Configure mroce's NICs with the fabric's unloaded RTT (`RunConfig::fabric_rtt`); on by
    /// default: the simulator knows its fabric, as an operator does.
    pub fabric_rtt: bool,
    /// mroce's NICs announce their fan-in share (`RunConfig::announce_fan_in`); on by default.
    pub announce_fan_in: bool,
    /// RoCEv2's retransmission timeout, ns (`None`: its default, mroce's 50 µs RTO floor).
    pub rocev2_rto_ns: Option<u64>,
    /// mroce's transmit order across connections (`EndpointConfig::tx_order`).
    pub tx_order: mroce_model::tx_order::TxOrder,
    /// RoCEv2's transmit order across QPs (`RoceConfig::tx_order`).
    pub rocev2_tx_order: mroce_model::tx_order::TxOrder,
    /// Payload bytes per packet.
    pub mtu: u16,
    /// Transports to run, in order.
    pub transports: Vec<Kind>,
    /// Simulated-time limit per run, ns (`None`: the experiment's default).
    pub time_limit_ns: Option<u64>,
    /// Capture one host's traffic: one file per run, named `STEM-TRANSPORT-LABEL.pcap`.
    pub pcap: Option<(PathBuf, usize)>,
    /// Write JSON lines, CSV and SVG plots here.
    pub out: Option<PathBuf>,
}

impl Default for Common {
    fn default() -> Self {
        Common {
            fabric: FabricConfig::default(),
            seed: 1,
            paths: mroce_model::params::PATHS as u16,
            ecn_reroute: mroce_model::endpoint::EcnReroute::default(),
            initial_conn_limit: mroce_model::params::CONN_LIMIT_INIT_PKTS,
            tail_hedge: mroce_model::endpoint::EndpointConfig::default().tail_hedge,
            first_flight_ack_req: mroce_model::endpoint::EndpointConfig::default().first_flight_ack_req,
            fabric_rtt: true,
            announce_fan_in: true,
            rocev2_rto_ns: None,
            tx_order: mroce_model::endpoint::EndpointConfig::default().tx_order,
            rocev2_tx_order: mroce_model::rocev2::RoceConfig::default().tx_order,
            mtu: mroce_model::params::DEFAULT_MTU_PAYLOAD,
            transports: Kind::ALL.to_vec(),
            time_limit_ns: None,
            pcap: None,
            out: None,
        }
    }
}

/// Observer of runs (progress bars live in the CLI).
pub trait Hooks {
    /// A run starts.
    fn start(&mut self, _label: &str, _flows: usize) {}
    /// Progress inside a run.
    fn progress(&mut self, _p: Progress) {}
    /// A run ended.
    fn end(&mut self, _label: &str, _r: &RunReport) {}
}

/// Hooks that do nothing.
pub struct NoHooks;
impl Hooks for NoHooks {}

/// The summary every experiment prints.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Experiment name.
    pub experiment: String,
    /// Seed.
    pub seed: u64,
    /// Simulator events per wall-clock second of event loop, over all runs (one core).
    pub events_per_s: f64,
    /// Simulator events per CPU second of the event loop's thread, over all runs: the same
    /// rate without the time the thread waited for a core on a shared machine.
    pub events_per_cpu_s: Option<f64>,
    /// Wall-clock seconds of the whole experiment.
    pub wall_s: f64,
    /// One row per transport and setting.
    pub results: Vec<Value>,
    /// Events processed over all runs.
    pub events: u64,
    /// Link traversals per wall-clock second of event loop.
    pub hops_per_s: f64,
    /// The same work counted in uet-htsim's events, per CPU second of the event loop: this
    /// simulator's events plus one per switch hop (`NetStats::switch_arrivals`: htsim
    /// schedules a queue's service and a pipe's delay as two events, this simulator as one).
    pub htsim_equivalent_events_per_cpu_s: Option<f64>,
    /// Parameters in force (fabric, sizes, definitions).
    pub params: Value,
    /// Headline figures against the acceptance targets.
    pub acceptance: Value,
    /// Per-run reports (not serialised into the summary line; written under `--out`).
    #[serde(skip)]
    pub runs: Vec<(String, RunReport)>,
}

struct Ctx<'a, 'f> {
    c: &'a Common,
    factory: &'a mut Factory<'f>,
    hooks: &'a mut dyn Hooks,
    events: u64,
    hops: u64,
    switch_arrivals: u64,
    loop_s: f64,
    loop_cpu_s: Option<f64>,
    runs: Vec<(String, RunReport)>,
}

struct Knobs {
    time_limit_ns: u64,
    sample_ns: u64,
    observe_host: Option<usize>,
    measure_state: bool,
}

impl<'a, 'f> Ctx<'a, 'f> {
    /// A context with nothing run yet.
    fn new(c: &'a Common, factory: &'a mut Factory<'f>, hooks: &'a mut dyn Hooks) -> Self {
        Ctx {
            c,
            factory,
            hooks,
            events: 0,
            hops: 0,
            switch_arrivals: 0,
            loop_s: 0.0,
            loop_cpu_s: Some(0.0),
            runs: Vec::new(),
        }
    }

    fn run(
        &mut self,
        kind: Kind,
        label: &str,
        fabric: &FabricConfig,
        w: &Workload,
        k: &Knobs,
    ) -> Result<RunReport, String> {
        let mut cfg = RunConfig::new(fabric.clone(), kind, self.c.seed);
        cfg.paths = self.c.paths;
        cfg.ecn_reroute = self.c.ecn_reroute;
        cfg.initial_conn_limit = self.c.initial_conn_limit;
        cfg.tail_hedge = self.c.tail_hedge;
        cfg.first_flight_ack_req = self.c.first_flight_ack_req;
        cfg.fabric_rtt = self.c.fabric_rtt;
        cfg.announce_fan_in = self.c.announce_fan_in;
        cfg.rocev2_rto_ns = self.c.rocev2_rto_ns;
        cfg.tx_order = self.c.tx_order;
        cfg.rocev2_tx_order = self.c.rocev2_tx_order;
        cfg.mtu = self.c.mtu;
        cfg.time_limit_ns = self.c.time_limit_ns.unwrap_or(k.time_limit_ns);
        cfg.sample_ns = k.sample_ns;
        cfg.observe_host = k.observe_host;
        cfg.measure_state = k.measure_state;
        if let Some((path, host)) = &self.c.pcap {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("sim");
            let name = format!("{stem}-{}-{}.pcap", kind, label.replace([' ', '/', '='], "_"));
            cfg.pcap = Some((path.with_file_name(name), *host));
        }
        let full = format!("{kind} {label}");
        self.hooks.start(&full, w.flows.len());
        let hooks = &mut *self.hooks;
        let mut prog = |p: Progress| hooks.progress(p);
        let r = engine::run(&cfg, w, self.factory, Some(&mut prog))?;
        self.hooks.end(&full, &r);
        self.events += r.events;
        self.hops += r.net.hops;
        self.switch_arrivals += r.net.switch_arrivals;
        self.loop_s += r.loop_wall_s;
        self.loop_cpu_s = match (self.loop_cpu_s, r.loop_cpu_s) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.runs.push((full, r.clone()));
        Ok(r)
    }

    fn summary(self, name: &str, t0: Instant, results: Vec<Value>, mut params: Value, acceptance: Value) -> Summary {
        // every experiment records the transport knobs it ran with
        if let Value::Object(m) = &mut params {
            m.entry("paths").or_insert(json!(self.c.paths));
            m.entry("ecn_reroute").or_insert(json!(self.c.ecn_reroute.as_str()));
            m.entry("initial_conn_limit")
                .or_insert(json!(self.c.initial_conn_limit));
            m.entry("tail_hedge").or_insert(json!(self.c.tail_hedge));
            m.entry("first_flight_ack_req")
                .or_insert(json!(self.c.first_flight_ack_req));
            m.entry("fabric_rtt_ns").or_insert(json!(if self.c.fabric_rtt {
                self.c.fabric.unloaded_rtt_ns(self.c.mtu)
            } else {
                0
            }));
            m.entry("announce_fan_in").or_insert(json!(self.c.announce_fan_in));
            m.entry("tx_order").or_insert(json!(self.c.tx_order.as_str()));
            m.entry("rocev2_tx_order")
                .or_insert(json!(self.c.rocev2_tx_order.as_str()));
            m.entry("rocev2_rto_ns").or_insert(json!(self
                .c
                .rocev2_rto_ns
                .unwrap_or(mroce_model::rocev2::RoceConfig::default().rto_ns)));
        }
        Summary {
            experiment: name.into(),
            seed: self.c.seed,
            events_per_s: if self.loop_s > 0.0 {
                self.events as f64 / self.loop_s
            } else {
                0.0
            },
            events_per_cpu_s: self.loop_cpu_s.filter(|c| *c > 0.0).map(|c| self.events as f64 / c),
            wall_s: t0.elapsed().as_secs_f64(),
            results,
            events: self.events,
            hops_per_s: if self.loop_s > 0.0 {
                self.hops as f64 / self.loop_s
            } else {
                0.0
            },
            htsim_equivalent_events_per_cpu_s: self
                .loop_cpu_s
                .filter(|c| *c > 0.0)
                .map(|c| (self.events + self.switch_arrivals) as f64 / c),
            params,
            acceptance,
            runs: self.runs,
        }
    }
}

fn layout(f: &FabricConfig, kind: Kind) -> Layout {
    Layout {
        hosts: f.hosts,
        rails: if kind.spans_planes() { 1 } else { f.planes as usize },
    }
}

/// Goodput of a run over its whole duration: bytes placed at receivers over the time the
/// last flow completed (all flows done), or over the time limit when incomplete, Gb/s.
fn aggregate_goodput(r: &RunReport) -> f64 {
    let (bytes, ns) = if r.complete {
        (r.bytes_delivered, r.last_recv_ns)
    } else {
        (r.counter("bytes_placed"), r.end_ns)
    };
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / ns as f64
    }
}

/// Per logical flow: (bytes, completion time) from first post to last receive.
fn group_fcts(r: &RunReport) -> Vec<(u64, Option<u64>)> {
    let n = r.flows.iter().map(|f| f.group as usize + 1).max().unwrap_or(0);
    let mut g: Vec<(u64, Option<u64>, Option<u64>, bool)> = vec![(0, None, None, true); n];
    for f in &r.flows {
        let e = &mut g[f.group as usize];
        e.0 += u64::from(f.bytes);
        if let Some(p) = f.posted_ns {
            e.1 = Some(e.1.map_or(p, |x: u64| x.min(p)));
        }
        match f.recv_ns {
            Some(t) => e.2 = Some(e.2.map_or(t, |x: u64| x.max(t))),
            None => e.3 = false,
        }
    }
    g.into_iter()
        .map(|(b, p, rcv, all)| {
            (
                b,
                if all {
                    p.zip(rcv).map(|(p, r)| r.saturating_sub(p).max(1))
                } else {
                    None
                },
            )
        })
        .collect()
}

fn percentile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

/// Jain's fairness index of `x`.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        0.0
    } else {
        s * s / (x.len() as f64 * s2)
    }
}

fn run_fields(r: &RunReport) -> Value {
    json!({
        "complete": r.complete,
        "integrity": r.integrity,
        "failure": r.failure,
        "bytes_posted": r.bytes_posted,
        "bytes_delivered": r.bytes_delivered,
        "bytes_placed": r.counter("bytes_placed"),
        "drops_loss": r.net.drops_loss,
        "drops_queue": r.net.drops_queue,
        "drops_failure": r.net.drops_failure,
        "ecn_marks": r.net.ecn_marks,
        // frames the NICs sent, and their link traversals: two per frame under one leaf, four
        // across the spines
        "frames_tx": r.net.frames_tx,
        "hops": r.net.hops,
        "rtos": r.counter("rtos") + r.counter("timeouts"),
        // protocol overhead: data frames (first copies and retransmissions), ACKs, probes
        "tx_data": r.counter("tx_data"),
        "tx_acks": r.counter("tx_acks"),
        "probes_sent": r.counter("probes_sent"),
        // fan-in announcements sent, and those that sized a first flight (SPEC.md §8.5)
        "tx_announces": r.counter("tx_announces"),
        "announces_applied": r.counter("announces_applied"),
        // second copies of doubtful tail chunks (mroce's tail hedge, SPEC.md §8.3)
        "tail_hedges": r.counter("tail_hedges"),
        // path moves: on an ECN re-route verdict (mroce) and on RTOs or health rules
        "ecn_reroutes": r.counter("ecn_reroutes"),
        "entropy_rerolls": r.counter("entropy_rerolls"),
        // simulator work saved: polls of port-blocked connections that could only repeat
        "blocked_polls_skipped": r.counter("blocked_polls_skipped"),
        "events": r.events,
        "events_per_s": r.events_per_s,
        "sim_end_us": r.end_ns as f64 / 1000.0,
    })
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        for (k, v) in b {
            a.entry(k).or_insert(v);
        }
    }
    a
}

fn fabric_json(f: &FabricConfig) -> Value {
    let mut v = serde_json::to_value(f).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert("host_port_gbps".into(), json!(f.host_port_gbps()));
        o.insert("fabric_link_gbps".into(), json!(f.fabric_link_gbps()));
    }
    v
}

// ---------------------------------------------------------------------------------------
// loss-sweep
// ---------------------------------------------------------------------------------------

/// Parameters of `loss-sweep`.
#[derive(Debug, Clone, Serialize)]
pub struct LossSweep {
    /// Loss probabilities.
    pub losses: Vec<f64>,
    /// Bytes per flow.
    pub bytes_per_flow: u64,
    /// Simulated-time limit per run, ns.
    pub time_limit_ns: u64,
}

impl Default for LossSweep {
    fn default() -> Self {
        LossSweep {
            losses: vec![0.0, 0.001, 0.01, 0.05, 0.1],
            bytes_per_flow: 8 << 20,
            time_limit_ns: 10_000_000,
        }
    }
}

/// Goodput vs random loss on a random permutation (each host sends one flow to another).
pub fn loss_sweep(
    c: &Common,
    p: &LossSweep,
    factory: &mut Factory<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Summary, String> {
    let t0 = Instant::now();
    let mut cx = Ctx::new(c, factory, hooks);
    let perm = Rng::new(derive_seed(c.seed, 0x9E83)).derangement(c.fabric.hosts);
    let mut rows = Vec::new();
    let mut acc = serde_json::Map::new();
    for &kind in &c.transports {
        let mut base: Option<(f64, f64)> = None;
        for &loss in &p.losses {
            let f = FabricConfig {
                loss,
                ..c.fabric.clone()
            };
            let w = Workload::permutation(layout(&f, kind), &perm, p.bytes_per_flow, c.seed)?;
            let k = Knobs {
                time_limit_ns: p.time_limit_ns,
                sample_ns: 0,
                observe_host: None,
                measure_state: false,
            };
            let r = cx.run(kind, &format!("loss={loss}"), &f, &w, &k)?;
            let g = aggregate_goodput(&r);
            let fcts = group_fcts(&r);
            let mut per: Vec<f64> = fcts
                .iter()
                .map(|(b, t)| t.map_or(0.0, |t| *b as f64 * 8.0 / t as f64))
                .collect();
            let mean = per.iter().sum::<f64>() / per.len().max(1) as f64;
            let mut fct_us: Vec<f64> = fcts.iter().filter_map(|(_, t)| t.map(|t| t as f64 / 1000.0)).collect();
            if loss == 0.0 {
                base = Some((g, mean));
            }
            let rel = base.map(|(bg, _)| if bg > 0.0 { g / bg } else { 0.0 });
            let rel_mean = base.map(|(_, bm)| if bm > 0.0 { mean / bm } else { 0.0 });
            let row = json!({
                "transport": kind.as_str(),
                "loss": loss,
                "goodput_gbps": g,
                "retransmits": r.counter("retransmits"),
                "relative_goodput": rel,
                "mean_flow_goodput_gbps": mean,
                "relative_mean_flow_goodput": rel_mean,
                "min_flow_goodput_gbps": percentile(&mut per, 0.0),
                "fct_p50_us": percentile(&mut fct_us, 0.5),
                "fct_p99_us": percentile(&mut fct_us, 0.99),
                "flows_completed": fcts.iter().filter(|x| x.1.is_some()).count(),
                "flows": fcts.len(),
            });
            if loss == 0.01 || loss == 0.1 {
                acc.insert(format!("{kind}_relative_goodput_at_{loss}"), json!(rel));
                acc.insert(format!("{kind}_relative_mean_flow_goodput_at_{loss}"), json!(rel_mean));
            }
            rows.push(merge(row, run_fields(&r)));
        }
    }
    acc.insert(
        "target".into(),
        json!("mroce relative goodput >= 0.95 at 1%, >= 0.80 at 10%"),
    );
    let params = json!({
        "fabric": fabric_json(&c.fabric),
        "workload": "random permutation (derangement), one flow per host, all started at once",
        "bytes_per_flow": p.bytes_per_flow,
        "losses": p.losses,
        "time_limit_ns": c.time_limit_ns.unwrap_or(p.time_limit_ns),
        "paths": c.paths,
        "mtu": c.mtu,
        "goodput_definition": "bytes delivered x 8 / time until the last flow completes (all flows done); \
            over the time limit with bytes placed when incomplete. relative_* divide by the same transport at 0% loss; \
            mean_flow_goodput is the mean over flows of bytes / FCT",
        "loss_definition": "independent random loss per frame (data and control) on the links of loss_scope",
    });
    let s = cx.summary("loss-sweep", t0, rows, params, Value::Object(acc));
    crate::output::write_loss_sweep(c.out.as_deref(), &s)?;
    Ok(s)
}

// ---------------------------------------------------------------------------------------
// collectives
// ---------------------------------------------------------------------------------------

/// A collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Collective {
    /// All-to-all, every pair at once.
    AllToAll,
    /// Ring all-reduce.
    AllReduceRing,
    /// Halving-doubling all-reduce, the largest steps to the farthest partner (distance N/2).
    AllReduceHd,
    /// Halving-doubling all-reduce, the largest steps to the nearest partner (distance 1:
    /// under one leaf).
    AllReduceHdNear,
}

impl Collective {
    /// Report name of the collective family (`all-to-all` / `all-reduce`).
    pub fn family(self) -> &'static str {
        match self {
            Collective::AllToAll => "all-to-all",
            _ => "all-reduce",
        }
    }
    /// Algorithm.
    pub fn algorithm(self) -> &'static str {
        match self {
            Collective::AllToAll => "direct",
            Collective::AllReduceRing => "ring",
            Collective::AllReduceHd => "halving-doubling",
            Collective::AllReduceHdNear => "halving-doubling-near-first",
        }
    }
}

impl core::str::FromStr for Collective {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all-to-all" | "a2a" => Ok(Collective::AllToAll),
            "all-reduce" | "ring" | "all-reduce-ring" => Ok(Collective::AllReduceRing),
            "hd" | "halving-doubling" | "all-reduce-hd" => Ok(Collective::AllReduceHd),
            "hd-near" | "halving-doubling-near-first" | "all-reduce-hd-near" => Ok(Collective::AllReduceHdNear),
            _ => Err(format!("unknown collective {s:?} (all-to-all, ring, hd, hd-near)")),
        }
    }
}

/// Build a collective's workload and its ideal completion time (bytes over the bottleneck,
/// the host link: no latency term), ns.
fn collective(
    f: &FabricConfig,
    kind: Kind,
    coll: Collective,
    bytes: u64,
    seed: u64,
    allreduce_slices: usize,
) -> Result<(Workload, f64), String> {
    let l = layout(f, kind);
    let n = f.hosts as f64;
    let host_bytes_per_ns = f.host_gbps / 8.0;
    match coll {
        Collective::AllToAll => {
            let w = Workload::all_to_all(l, bytes, seed)?;
            Ok((w, (n - 1.0) * bytes as f64 / host_bytes_per_ns))
        }
        Collective::AllReduceRing => {
            let w = Workload::ring_allreduce(l, bytes, seed, RING_SLOTS, allreduce_slices)?;
            Ok((w, 2.0 * (n - 1.0) / n * bytes as f64 / host_bytes_per_ns))
        }
        Collective::AllReduceHd | Collective::AllReduceHdNear => {
            let near = coll == Collective::AllReduceHdNear;
            let w = Workload::hd_allreduce(l, bytes, seed, allreduce_slices, near)?;
            Ok((w, 2.0 * (n - 1.0) / n * bytes as f64 / host_bytes_per_ns))
        }
    }
}

/// Staging slots per host of the ring all-reduce.
pub const RING_SLOTS: usize = 4;
/// WRITEs per step of the all-reduces by default. A slice waits only for the slices of earlier
/// steps that touched its bytes, so a step starts while the rest of the one before is still in
/// flight. 16 keeps both transports within 2% of their best over 1-64 (sim/README.md).
pub const ALLREDUCE_SLICES: usize = 16;

/// Parameters of `collectives`.
#[derive(Debug, Clone, Serialize)]
pub struct Collectives {
    /// Collectives to run.
    pub collectives: Vec<Collective>,
    /// All-to-all: bytes each host sends to each other host.
    pub a2a_bytes_per_pair: u64,
    /// All-reduce: bytes per host.
    pub allreduce_bytes: u64,
    /// All-reduces (ring and hd): WRITEs per step (1: each step waits for the whole step before).
    pub allreduce_slices: usize,
    /// Random loss.
    pub loss: f64,
    /// Simulated-time limit per run, ns.
    pub time_limit_ns: u64,
}

impl Default for Collectives {
    fn default() -> Self {
        Collectives {
            collectives: vec![Collective::AllToAll, Collective::AllReduceRing, Collective::AllReduceHd],
            a2a_bytes_per_pair: 512 << 10,
            allreduce_bytes: 32 << 20,
            allreduce_slices: ALLREDUCE_SLICES,
            loss: 0.001,
            time_limit_ns: 50_000_000,
        }
    }
}

/// Collective completion time of all-to-all and all-reduce vs the ideal and vs RoCEv2.
pub fn collectives(
    c: &Common,
    p: &Collectives,
    factory: &mut Factory<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Summary, String> {
    let t0 = Instant::now();
    let mut cx = Ctx::new(c, factory, hooks);
    let f = FabricConfig {
        loss: p.loss,
        ..c.fabric.clone()
    };
    let mut rows = Vec::new();
    let mut acc = serde_json::Map::new();
    for &coll in &p.collectives {
        let bytes = if coll == Collective::AllToAll {
            p.a2a_bytes_per_pair
        } else {
            p.allreduce_bytes
        };
        let mut ccts = Vec::new();
        for &kind in &c.transports {
            let (w, ideal) = collective(&f, kind, coll, bytes, c.seed, p.allreduce_slices)?;
            let k = Knobs {
                time_limit_ns: p.time_limit_ns,
                sample_ns: 0,
                observe_host: None,
                measure_state: false,
            };
            let r = cx.run(kind, &format!("{}-{}", coll.family(), coll.algorithm()), &f, &w, &k)?;
            let cct = if r.complete { Some(r.last_recv_ns as f64) } else { None };
            ccts.push((kind, cct));
            let row = json!({
                "transport": kind.as_str(),
                "collective": coll.family(),
                "algorithm": coll.algorithm(),
                "cct_us": cct.map(|x| x / 1000.0),
                "ideal_us": ideal / 1000.0,
                "cct_over_ideal": cct.map(|x| x / ideal),
                "bytes_per_host": if coll == Collective::AllToAll { bytes * (f.hosts as u64 - 1) } else { bytes },
                "retransmits": r.counter("retransmits"),
                "loss": p.loss,
            });
            rows.push(merge(row, run_fields(&r)));
        }
        let get = |k: Kind| ccts.iter().find(|x| x.0 == k).and_then(|x| x.1);
        let speed = match (get(Kind::Mroce), get(Kind::Rocev2)) {
            (Some(m), Some(r)) => Some(r / m),
            _ => None,
        };
        for row in rows.iter_mut().rev().take(ccts.len()) {
            if row["transport"] == "mroce" {
                row["speedup_vs_rocev2"] = json!(speed);
                let key = format!("{}_{}", coll.family(), coll.algorithm());
                acc.insert(format!("mroce_cct_over_ideal_{key}"), row["cct_over_ideal"].clone());
                acc.insert(format!("mroce_speedup_vs_rocev2_{key}"), json!(speed));
            }
        }
    }
    acc.insert(
        "target".into(),
        json!("mroce CCT <= 1.25x ideal and >= 2x faster than rocev2"),
    );
    let params = json!({
        "fabric": fabric_json(&f),
        "a2a_bytes_per_pair": p.a2a_bytes_per_pair,
        "allreduce_bytes_per_host": p.allreduce_bytes,
        "allreduce_slices": p.allreduce_slices,
        "loss": p.loss,
        "ideal_definition": "bytes each host must send over its host link capacity (all-to-all: (N-1) x bytes_per_pair; \
            all-reduce: 2 (N-1)/N x bytes), no latency term",
        "rocev2_planes": "rocev2 has one single-plane NIC per plane; each collective runs as one instance per plane on 1/planes of the data",
        "all_reduce": format!("real XOR reduction of every host's buffer; each step's data goes as {} pipelined WRITEs; ring uses {RING_SLOTS} staging slots per host", p.allreduce_slices),
    });
    let s = cx.summary("collectives", t0, rows, params, Value::Object(acc));
    crate::output::write_collectives(c.out.as_deref(), &s)?;
    Ok(s)
}

// ---------------------------------------------------------------------------------------
// planes
// ---------------------------------------------------------------------------------------

/// Parameters of `planes`.
#[derive(Debug, Clone, Serialize)]
pub struct Planes {
    /// Plane counts.
    pub planes: Vec<u8>,
    /// Host port rate per plane, Gb/s (host bandwidth grows with planes).
    pub port_gbps: f64,
    /// Bytes per flow per plane (flows grow with planes so runs last alike).
    pub bytes_per_plane: u64,
    /// Simulated-time limit per run, ns.
    pub time_limit_ns: u64,
}

impl Default for Planes {
    fn default() -> Self {
        Planes {
            planes: vec![1, 2, 4, 8],
            port_gbps: 50.0,
            bytes_per_plane: 2 << 20,
            time_limit_ns: 20_000_000,
        }
    }
}

/// Spine draws behind each row's `route_bound` in `planes`.
pub const ROUTE_BOUND_DRAWS: usize = 5;

/// Aggregate permutation goodput with 1, 2, 4, 8 planes of fixed port rate, and the routing
/// bound of each row's shape (`route_bound`).
pub fn planes(c: &Common, p: &Planes, factory: &mut Factory<'_>, hooks: &mut dyn Hooks) -> Result<Summary, String> {
    let t0 = Instant::now();
    let mut cx = Ctx::new(c, factory, hooks);
    let perm = Rng::new(derive_seed(c.seed, 0x9E83)).derangement(c.fabric.hosts);
    let mut rows = Vec::new();
    let mut acc = serde_json::Map::new();
    for &kind in &c.transports {
        let mut one: Option<f64> = None;
        for &np in &p.planes {
            let f = FabricConfig {
                planes: np,
                host_gbps: p.port_gbps * f64::from(np),
                ..c.fabric.clone()
            };
            // Before the workload: a plane count of 0 would otherwise fail as a byte split.
            f.validate()?;
            let bytes = p.bytes_per_plane * u64::from(np);
            let w = Workload::permutation(layout(&f, kind), &perm, bytes, c.seed)?;
            let k = Knobs {
                time_limit_ns: p.time_limit_ns,
                sample_ns: 0,
                observe_host: None,
                measure_state: false,
            };
            let r = cx.run(kind, &format!("planes={np}"), &f, &w, &k)?;
            let g = aggregate_goodput(&r);
            if np == 1 {
                one = Some(g);
            }
            let eff = one.map(|o| if o > 0.0 { g / (o * f64::from(np)) } else { 0.0 });
            let cap = f.host_gbps * f.hosts as f64;
            // What the routes allow: a RoCEv2 QP has one path, and each plane's NIC carries a
            // fixed share; an mroce connection spreads its paths and its data over the planes.
            let per_plane = match kind {
                Kind::Mroce => (usize::from(c.paths) / usize::from(np)).max(1),
                Kind::Rocev2 => 1,
            };
            let shape = crate::route_bound::RouteShape {
                leaves: f.leaves,
                spines: f.spines,
                planes: usize::from(np),
                paths_per_plane: per_plane,
                fabric_cap: f.fabric_link_gbps() / f.host_port_gbps(),
                fixed_plane_share: !kind.spans_planes(),
            };
            let seed = derive_seed(c.seed, 0xB0B0 + u64::from(np));
            let bound = crate::route_bound::permutation_bound(&perm, shape, ROUTE_BOUND_DRAWS, seed)
                .map_err(|e| format!("route bound: {e}"))?;
            if np == 8 {
                acc.insert(format!("{kind}_scaling_efficiency_at_8"), json!(eff));
            }
            let row = json!({
                "transport": kind.as_str(),
                "planes": np,
                "goodput_gbps": g,
                "scaling_efficiency": eff,
                "fraction_of_capacity": g / cap,
                "route_bound_lower": bound.lower,
                "route_bound_upper": bound.upper,
                "route_even_split": bound.even,
                "route_paths_per_plane": bound.paths_per_plane,
                "share_of_route_bound": g / cap / bound.upper,
                "host_gbps": f.host_gbps,
                "bytes_per_flow": bytes,
                "retransmits": r.counter("retransmits"),
            });
            rows.push(merge(row, run_fields(&r)));
        }
    }
    acc.insert("target".into(), json!("mroce scaling efficiency >= 0.95 at 8 planes"));
    let params = json!({
        "fabric": fabric_json(&c.fabric),
        "port_gbps_per_plane": p.port_gbps,
        "bytes_per_flow_per_plane": p.bytes_per_plane,
        "workload": "random permutation, one flow per host",
        "efficiency_definition": "aggregate goodput (all flows done) at P planes / (P x the same at 1 plane)",
        "route_bound_definition": format!(
            "largest fraction of capacity every flow of this permutation can reach at once with any split over its paths \
             (maximum concurrent flow; rocev2: each plane a fixed share of every flow), each path on a uniformly drawn \
             spine of its plane; medians over {ROUTE_BOUND_DRAWS} \
             draws of a feasible split (lower) and an LP-dual certificate (upper); sim/src/route_bound.rs"),
    });
    let s = cx.summary("planes", t0, rows, params, Value::Object(acc));
    crate::output::write_planes(c.out.as_deref(), &s)?;
    Ok(s)
}

// ---------------------------------------------------------------------------------------
// plane-failure
// ---------------------------------------------------------------------------------------

/// Parameters of `plane-failure`.
#[derive(Debug, Clone, Serialize)]
pub struct PlaneFailure {
    /// The collective that runs.
    pub collective: Collective,
    /// Bytes (per pair for all-to-all, per host for all-reduce).
    pub bytes: u64,
    /// Plane that fails.
    pub plane: u8,
    /// Failure time, ns after the start (`None`: a third of the ideal CCT).
    pub at_ns: Option<u64>,
    /// Repair time, ns after the start.
    pub repair_ns: Option<u64>,
    /// Timeline bin, ns.
    pub bin_ns: u64,
    /// Window over which goodput is judged, ns.
    pub window_ns: u64,
    /// Goodput must hold for this long to count as recovered, ns.
    pub hold_ns: u64,
    /// Also run without the failure (for the CCT cost of the failure).
    pub baseline: bool,
    /// Simulated-time limit per run, ns.
    pub time_limit_ns: u64,
}

impl Default for PlaneFailure {
    fn default() -> Self {
        PlaneFailure {
            collective: Collective::AllToAll,
            bytes: 512 << 10,
            plane: 1,
            at_ns: None,
            repair_ns: None,
            bin_ns: 5_000,
            window_ns: 20_000,
            hold_ns: 100_000,
            baseline: true,
            time_limit_ns: 50_000_000,
        }
    }
}

/// Recovery analysis of a goodput timeline (bytes per bin).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Recovery {
    /// Goodput before the failure, Gb/s.
    pub pre_gbps: f64,
    /// Target: (P-1)/P of it, Gb/s.
    pub target_gbps: f64,
    /// Lowest windowed goodput after the failure, Gb/s.
    pub dip_gbps: f64,
    /// Time from the failure to the start of the first window from which goodput stays at
    /// or above the target for `hold`, µs (`None`: never).
    pub recovery_us: Option<f64>,
}

/// Analyse `placed` (bytes per `bin` ns from the start): pre-failure level over the
/// `pre_ns` before `fail_ns`, windows of `window_ns`, hold `hold_ns` (clipped at `end_ns`).
pub fn recovery(
    placed: &[u64],
    bin: u64,
    fail_ns: u64,
    end_ns: u64,
    planes: u8,
    window_ns: u64,
    hold_ns: u64,
) -> Recovery {
    let gbps = |bytes: u64, ns: u64| if ns == 0 { 0.0 } else { bytes as f64 * 8.0 / ns as f64 };
    let fb = (fail_ns / bin) as usize;
    let pre_bins = (200_000 / bin).max(1) as usize;
    let lo = fb.saturating_sub(pre_bins);
    let pre: u64 = placed[lo.min(placed.len())..fb.min(placed.len())].iter().sum();
    let pre_gbps = gbps(pre, (fb - lo) as u64 * bin);
    let target = pre_gbps * f64::from(planes - 1) / f64::from(planes);
    let wb = (window_ns / bin).max(1) as usize;
    let hb = (hold_ns / bin) as usize;
    let end_b = ((end_ns / bin) as usize).min(placed.len());
    let win = |b: usize| gbps(placed[b..(b + wb).min(placed.len())].iter().sum(), wb as u64 * bin);
    let mut dip = f64::INFINITY;
    let last = end_b.saturating_sub(wb);
    for b in fb..=last.max(fb) {
        if b + wb <= placed.len() {
            dip = dip.min(win(b));
        }
    }
    let mut rec = None;
    let mut b = fb;
    while b <= last {
        let stop = (b + hb).min(last);
        if (b..=stop).all(|x| win(x) >= target) {
            rec = Some((b as u64 * bin).saturating_sub(fail_ns) as f64 / 1000.0);
            break;
        }
        b += 1;
    }
    Recovery {
        pre_gbps,
        target_gbps: target,
        dip_gbps: if dip.is_finite() { dip } else { 0.0 },
        recovery_us: rec,
    }
}

/// Fail a whole plane in the middle of a collective: goodput timeline, recovery time,
/// bytes lost, messages completed.
pub fn plane_failure(
    c: &Common,
    p: &PlaneFailure,
    factory: &mut Factory<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Summary, String> {
    let t0 = Instant::now();
    let mut cx = Ctx::new(c, factory, hooks);
    let planes = c.fabric.planes;
    if planes < 2 {
        return Err("plane-failure needs at least 2 planes".into());
    }
    if p.plane >= planes {
        return Err(format!("plane {} does not exist", p.plane));
    }
    let mut rows = Vec::new();
    let mut acc = serde_json::Map::new();
    let mut at_used = 0;
    for &kind in &c.transports {
        let (w, ideal) = collective(&c.fabric, kind, p.collective, p.bytes, c.seed, ALLREDUCE_SLICES)?;
        let at = p.at_ns.unwrap_or((ideal / 3.0) as u64);
        at_used = at;
        let mut f = c.fabric.clone();
        f.failures.push(Failure {
            target: FailTarget::Plane { plane: p.plane },
            at_ns: at,
            until_ns: p.repair_ns,
        });
        let k = Knobs {
            time_limit_ns: p.time_limit_ns,
            sample_ns: p.bin_ns,
            observe_host: None,
            measure_state: false,
        };
        let base = if p.baseline {
            let k0 = Knobs { sample_ns: 0, ..k };
            Some(cx.run(kind, "no-failure", &c.fabric, &w, &k0)?)
        } else {
            None
        };
        let r = cx.run(kind, &format!("fail-plane-{}", p.plane), &f, &w, &k)?;
        let end = if r.complete { r.last_recv_ns } else { r.end_ns };
        let rec = recovery(&r.timeline.placed, p.bin_ns, at, end, planes, p.window_ns, p.hold_ns);
        let groups = group_fcts(&r);
        let done = groups.iter().filter(|g| g.1.is_some()).count();
        let row = json!({
            "transport": kind.as_str(),
            "planes": planes,
            "failed_plane": p.plane,
            "fail_at_us": at as f64 / 1000.0,
            "recovery_us": rec.recovery_us,
            "bytes_lost": r.net.data_bytes_lost_failure,
            "frames_lost": r.net.drops_failure,
            "messages_completed": done,
            "messages_expected": groups.len(),
            "pre_failure_gbps": rec.pre_gbps,
            "target_gbps": rec.target_gbps,
            "dip_gbps": rec.dip_gbps,
            "cct_us": if r.complete { Some(r.last_recv_ns as f64 / 1000.0) } else { None },
            "cct_no_failure_us": base.as_ref().and_then(|b| b.complete.then_some(b.last_recv_ns as f64 / 1000.0)),
            "ideal_us": ideal / 1000.0,
            "collective": p.collective.family(),
            "algorithm": p.collective.algorithm(),
            "paths_down_events": r.net.path_down_events,
            "retransmits": r.counter("retransmits"),
            "reference_reps_reroute_us": 100,
        });
        if kind == Kind::Mroce {
            acc.insert("mroce_recovery_us".into(), json!(rec.recovery_us));
            acc.insert("mroce_messages_lost".into(), json!(groups.len() - done));
            acc.insert("mroce_integrity".into(), json!(r.integrity));
        }
        rows.push(merge(row, run_fields(&r)));
    }
    acc.insert(
        "target".into(),
        json!(
            "no message lost or corrupted; goodput >= (P-1)/P of pre-failure within 500 us (REPS reroutes in < 100 us)"
        ),
    );
    let params = json!({
        "fabric": fabric_json(&c.fabric),
        "collective": p.collective,
        "bytes": p.bytes,
        "failed_plane": p.plane,
        "fail_at_ns": at_used,
        "repair_ns": p.repair_ns,
        "bin_ns": p.bin_ns,
        "window_ns": p.window_ns,
        "hold_ns": p.hold_ns,
        "recovery_definition": "goodput = payload bytes newly placed at receivers (all NICs); pre-failure level = mean over the 200 us \
            before the failure; recovered at the start of the first window_ns window after the failure from which every \
            window for hold_ns (clipped at the collective's end) carries >= (P-1)/P of that level",
        "bytes_lost_definition": "payload bytes of data frames dropped by the dead plane (queued, in flight or sent into it)",
    });
    let s = cx.summary("plane-failure", t0, rows, params, Value::Object(acc));
    crate::output::write_plane_failure(c.out.as_deref(), &s)?;
    Ok(s)
}

// ---------------------------------------------------------------------------------------
// incast
// ---------------------------------------------------------------------------------------

/// Parameters of `incast`.
#[derive(Debug, Clone, Serialize)]
pub struct Incast {
    /// Sender counts.
    pub senders: Vec<usize>,
    /// Bytes per sender.
    pub bytes: u64,
    /// Receiving host.
    pub receiver: usize,
    /// Jain index of per-sender rates that counts as fair.
    pub jain_threshold: f64,
    /// Fraction of the receiver's capacity that must be used.
    pub utilisation_threshold: f64,
    /// Measurement window, in base RTTs.
    pub window_rtts: f64,
    /// Simulated-time limit per run, ns.
    pub time_limit_ns: u64,
}

impl Default for Incast {
    fn default() -> Self {
        Incast {
            senders: vec![8, 32],
            bytes: 2 << 20,
            receiver: 0,
            jain_threshold: 0.9,
            utilisation_threshold: 0.8,
            window_rtts: 2.0,
            time_limit_ns: 50_000_000,
        }
    }
}

/// Senders for an incast to `receiver`: hosts on other leaves first (spread over leaves),
/// then same-leaf hosts.
pub fn incast_senders(f: &FabricConfig, receiver: usize, n: usize) -> Vec<usize> {
    let hpl = f.hosts_per_leaf();
    let rl = f.leaf_of(receiver);
    let mut v: Vec<usize> = (0..f.hosts).filter(|&h| h != receiver).collect();
    v.sort_by_key(|&h| (f.leaf_of(h) == rl, h % hpl, f.leaf_of(h)));
    v.truncate(n);
    v
}

/// Convergence of per-sender rates at the receiver.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Convergence {
    /// Start of the first window from which every window is fair and utilised, ns.
    pub converge_ns: Option<u64>,
    /// Windows judged.
    pub windows: usize,
    /// Jain index over the whole stable period.
    pub jain_stable: f64,
}

/// Judge fairness from `rx[bin][host]` for `senders`: windows of `wb` bins slide by one bin
/// until `end_ns`; a window is fair when Jain >= `jain` and the senders' bytes reach `util`
/// of `capacity_bytes_per_bin * wb`.
#[allow(clippy::too_many_arguments)]
pub fn convergence(
    rx: &[Vec<u64>],
    senders: &[usize],
    bin: u64,
    wb: usize,
    end_ns: u64,
    capacity_bytes_per_bin: f64,
    jain_min: f64,
    util: f64,
) -> Convergence {
    let end_b = ((end_ns / bin) as usize).min(rx.len());
    let last = end_b.saturating_sub(wb);
    let ok = |b: usize| {
        let x: Vec<f64> = senders
            .iter()
            .map(|&s| rx[b..b + wb].iter().map(|bin| bin[s]).sum::<u64>() as f64)
            .collect();
        let total: f64 = x.iter().sum();
        jain(&x) >= jain_min && total >= util * capacity_bytes_per_bin * wb as f64
    };
    let mut conv = None;
    for b in (0..=last).rev() {
        if end_b < wb || !ok(b) {
            break;
        }
        conv = Some(b);
    }
    let jain_stable = conv.map_or(0.0, |b| {
        let x: Vec<f64> = senders
            .iter()
            .map(|&s| rx[b..end_b].iter().map(|bin| bin[s]).sum::<u64>() as f64)
            .collect();
        jain(&x)
    });
    Convergence {
        converge_ns: conv.map(|b| b as u64 * bin),
        windows: last + 1,
        jain_stable,
    }
}

/// N -> 1 incast: time to converge to fair share (in base RTTs), peak queue, drops.
pub fn incast(c: &Common, p: &Incast, factory: &mut Factory<'_>, hooks: &mut dyn Hooks) -> Result<Summary, String> {
    let t0 = Instant::now();
    let mut cx = Ctx::new(c, factory, hooks);
    let f = &c.fabric;
    let rtt = f.unloaded_rtt_ns(c.mtu) as f64;
    let bin = ((rtt / 4.0).round() as u64).max(100);
    let wb = ((p.window_rtts * rtt / bin as f64).round() as usize).max(1);
    let mut rows = Vec::new();
    let mut acc = serde_json::Map::new();
    for &n in &p.senders {
        if n == 0 || n >= f.hosts {
            return Err(format!("incast of {n} senders on {} hosts", f.hosts));
        }
        let senders = incast_senders(f, p.receiver, n);
        for &kind in &c.transports {
            let w = Workload::incast(layout(f, kind), &senders, p.receiver, p.bytes, c.seed)?;
            let k = Knobs {
                time_limit_ns: p.time_limit_ns,
                sample_ns: bin,
                observe_host: Some(p.receiver),
                measure_state: false,
            };
            let r = cx.run(kind, &format!("senders={n}"), f, &w, &k)?;
            let first_done = r.flows.iter().filter_map(|x| x.recv_ns).min().unwrap_or(if r.complete {
                r.last_recv_ns
            } else {
                r.end_ns
            });
            let cap_per_bin = f.host_gbps / 8.0 * bin as f64;
            let conv = convergence(
                &r.timeline.observed_rx,
                &senders,
                bin,
                wb,
                first_done,
                cap_per_bin,
                p.jain_threshold,
                p.utilisation_threshold,
            );
            let rtts = conv.converge_ns.map(|t| t as f64 / rtt);
            let fcts = group_fcts(&r);
            let mut fct_us: Vec<f64> = fcts.iter().filter_map(|(_, t)| t.map(|t| t as f64 / 1000.0)).collect();
            let ideal_us = n as f64 * p.bytes as f64 * 8.0 / f.host_gbps / 1000.0;
            let drops_by_sender: Vec<u64> = senders
                .iter()
                .map(|&h| r.observed_drops_by_source.get(h).copied().unwrap_or(0))
                .collect();
            let row = json!({
                "transport": kind.as_str(),
                "senders": n,
                "converge_rtts": rtts,
                "converge_us": conv.converge_ns.map(|t| t as f64 / 1000.0),
                "base_rtt_us": rtt / 1000.0,
                "peak_queue_bytes": r.observed_peak_queue,
                "drops": r.observed_drops,
                "sender_hosts": &senders,
                "drops_by_sender": drops_by_sender,
                "drops_total": r.net.drops_queue + r.net.drops_loss,
                "jain_stable": conv.jain_stable,
                "completion_us": if r.complete { Some(r.last_recv_ns as f64 / 1000.0) } else { None },
                "ideal_completion_us": ideal_us,
                "fct_min_us": percentile(&mut fct_us, 0.0),
                "fct_max_us": percentile(&mut fct_us, 1.0),
                "retransmits": r.counter("retransmits"),
            });
            if kind == Kind::Mroce {
                acc.insert(format!("mroce_converge_rtts_{n}"), json!(rtts));
            }
            rows.push(merge(row, run_fields(&r)));
        }
    }
    acc.insert(
        "target".into(),
        json!("mroce converges to fair share within 3 RTTs (MetaRoCE claims 1-2)"),
    );
    let params = json!({
        "fabric": fabric_json(f),
        "receiver": p.receiver,
        "bytes_per_sender": p.bytes,
        "senders": p.senders,
        "base_rtt_ns": rtt,
        "bin_ns": bin,
        "window_bins": wb,
        "convergence_definition": format!(
            "per-sender data bytes arriving at the receiver in sliding windows of {} base RTTs; converged at the start of \
             the first window from which every window until the first sender completes has Jain >= {} and carries >= {} of \
             the receiver's capacity; counted from the moment all senders post at once",
            p.window_rtts, p.jain_threshold, p.utilisation_threshold),
        "base_rtt_definition": "unloaded cross-spine round trip: MTU data frame out, ACK back, store and forward at each hop",
        "peak_queue_definition": "largest occupancy of any one queue feeding the receiver (a leaf -> host port)",
        "drops_by_sender_definition": "queue drops of each sender's frames to the receiver at any hop (leaf uplink, spine downlink or the receiver's port), in the order of the row's `sender_hosts`",
    });
    let s = cx.summary("incast", t0, rows, params, Value::Object(acc));
    crate::output::write_incast(c.out.as_deref(), &s)?;
    Ok(s)
}

// ---------------------------------------------------------------------------------------
// connections
// ---------------------------------------------------------------------------------------

/// Parameters of `connections`.
#[derive(Debug, Clone, Serialize)]
pub struct Connections {
    /// Connection counts (spread evenly over the hosts as initiators).
    pub connections: Vec<usize>,
    /// Bytes per connection.
    pub bytes: u64,
    /// Simulated-time limit per run, ns.
    pub time_limit_ns: u64,
}

impl Default for Connections {
    fn default() -> Self {
        Connections {
            connections: vec![4096],
            bytes: 128 << 10,
            time_limit_ns: 50_000_000,
        }
    }
}

/// Many concurrent connections: goodput, Jain fairness of per-connection goodput, state
/// bytes per connection.
pub fn connections(
    c: &Common,
    p: &Connections,
    factory: &mut Factory<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Summary, String> {
    let t0 = Instant::now();
    let mut cx = Ctx::new(c, factory, hooks);
    let f = &c.fabric;
    let mut rows = Vec::new();
    let mut acc = serde_json::Map::new();
    for &n in &p.connections {
        if n == 0 {
            return Err("connections must be at least 1".into());
        }
        let per_host = n.div_ceil(f.hosts);
        for &kind in &c.transports {
            let w = Workload::connections(layout(f, kind), per_host, p.bytes, c.seed)?;
            let k = Knobs {
                time_limit_ns: p.time_limit_ns,
                sample_ns: 0,
                observe_host: None,
                measure_state: true,
            };
            let r = cx.run(kind, &format!("connections={}", w.conns.len()), f, &w, &k)?;
            let fcts = group_fcts(&r);
            let rates: Vec<f64> = fcts
                .iter()
                .map(|(b, t)| t.map_or(0.0, |t| *b as f64 * 8.0 / t as f64))
                .collect();
            let j = jain(&rates);
            let row = json!({
                "transport": kind.as_str(),
                "connections": w.conns.len(),
                "jain_fairness": j,
                "goodput_gbps": aggregate_goodput(&r),
                "state_bytes_per_connection": r.state_bytes_per_connection,
                "connections_per_host": per_host,
                "bytes_per_connection": p.bytes,
                "min_conn_gbps": rates.iter().cloned().fold(f64::INFINITY, f64::min),
                "max_conn_gbps": rates.iter().cloned().fold(0.0, f64::max),
                "setup_us": r.setup_ns as f64 / 1000.0,
                "retransmits": r.counter("retransmits"),
            });
            if kind == Kind::Mroce {
                acc.insert(format!("mroce_jain_{}", w.conns.len()), json!(j));
            }
            rows.push(merge(row, run_fields(&r)));
        }
    }
    acc.insert(
        "target".into(),
        json!("4096 concurrent connections with Jain fairness >= 0.9"),
    );
    let params = json!({
        "fabric": fabric_json(f),
        "bytes_per_connection": p.bytes,
        "workload": "host h opens connection k to host (h + 1 + k mod (N-1)) mod N (rail k mod rails for rocev2); \
            one WRITE per connection, all posted at once",
        "jain_definition": "Jain index of per-connection goodput (bytes / FCT)",
        "state_definition": "heap bytes (glibc mallinfo2) allocated while opening the connections, over 2 x connections \
            (each connection has state at both NICs); software-model memory, not a hardware figure",
    });
    let s = cx.summary("connections", t0, rows, params, Value::Object(acc));
    crate::output::write_connections(c.out.as_deref(), &s)?;
    Ok(s)
}
