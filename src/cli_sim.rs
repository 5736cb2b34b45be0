//! `mroce sim ...`: the fabric-simulator experiments (`mroce_sim::experiments`), one
//! subcommand each, both transports in the same run. With `--json` the last stdout line is
//! the experiment's summary object; `--out DIR` writes JSON lines, CSV and SVG plots there.
//! Progress bars go to stderr (hidden when stderr is not a terminal).
//!
//! Exit codes: 0 when the experiment produced its summary, 2 when it could not run (bad
//! parameter, transport unavailable, I/O).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mroce_model::endpoint::EcnReroute;
use mroce_model::tx_order::TxOrder;
use mroce_sim::engine::{Progress, RunReport};
use mroce_sim::experiments::{self, Collective, Common, Hooks, Summary};
use mroce_sim::fabric::{EcmpHash, FabricConfig, Failure, LossScope};
use mroce_sim::Kind;

use crate::cli_value::{ecn_reroute_arg, nonneg_arg, on_off_arg, pos_arg, prob_arg, size_arg, tx_order_arg};

/// `mroce sim` arguments.
#[derive(Args, Debug)]
pub struct SimArgs {
    #[command(subcommand)]
    cmd: SimCmd,
}

#[derive(Subcommand, Debug)]
enum SimCmd {
    /// Goodput vs random loss 0, 0.1%, 1%, 5%, 10% (permutation traffic).
    LossSweep(LossSweepArgs),
    /// All-to-all and all-reduce on 64 hosts at 0.1% loss: CCT vs RoCEv2 vs ideal.
    Collectives(CollectivesArgs),
    /// 1, 2, 4, 8 planes of fixed port rate: aggregate goodput and scaling efficiency.
    Planes(PlanesArgs),
    /// Fail a plane mid-collective: goodput timeline, recovery time, bytes lost.
    PlaneFailure(PlaneFailureArgs),
    /// N -> 1 incast: time to converge to fair share (RTTs), peak queue, drops.
    Incast(IncastArgs),
    /// >= 4096 concurrent connections: goodput, Jain fairness, state per connection.
    Connections(ConnectionsArgs),
}

fn kind_arg(s: &str) -> Result<Kind, String> {
    match s.to_ascii_lowercase().as_str() {
        "mroce" => Ok(Kind::Mroce),
        "rocev2" | "roce" => Ok(Kind::Rocev2),
        _ => Err(format!("unknown transport {s:?} (mroce, rocev2)")),
    }
}

fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

/// Options every experiment takes (the fabric and the run).
#[derive(Args, Debug)]
struct CommonArgs {
    /// Hosts.
    #[arg(long, default_value_t = 64)]
    hosts: usize,
    /// Planes (each host has one NIC port per plane).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=8))]
    planes: u8,
    /// Leaf switches per plane.
    #[arg(long, default_value_t = 8)]
    leaves: usize,
    /// Spine switches per plane.
    #[arg(long, default_value_t = 8)]
    spines: usize,
    /// Leaf oversubscription (host-facing / spine-facing capacity).
    #[arg(long, default_value_t = 1.0, value_parser = pos_arg)]
    oversub: f64,
    /// NIC bandwidth per host, Gb/s, split evenly across the planes.
    #[arg(long, default_value_t = 400.0, value_parser = pos_arg)]
    host_gbps: f64,
    /// Propagation delay of a host <-> leaf link, µs.
    #[arg(long, default_value_t = 1.0, value_parser = nonneg_arg)]
    host_delay_us: f64,
    /// Propagation delay of a leaf <-> spine link, µs.
    #[arg(long, default_value_t = 1.0, value_parser = nonneg_arg)]
    fabric_delay_us: f64,
    /// Drop-tail limit of every switch output queue, in µs of its link rate.
    #[arg(long, default_value_t = 20.0, value_parser = pos_arg)]
    buffer_us: f64,
    /// ECN marking threshold of every switch output queue, in µs of its link rate.
    #[arg(long, default_value_t = 4.0, value_parser = nonneg_arg)]
    ecn_us: f64,
    /// Which links random loss applies to: tor-to-host (end-to-end loss = --loss), all, fabric.
    #[arg(long, default_value = "tor-to-host")]
    loss_scope: LossScope,
    /// Failures: plane:P@T[-T2], spine:P:S@T, leaf:P:L@T, link:P:L:S@T, host:P:H@T (µs after
    /// the workload starts; -T2 repairs). Repeatable.
    #[arg(long = "fail")]
    fail: Vec<Failure>,
    /// A leaf drops a dead uplink from its ECMP group this long after it fails, µs (default:
    /// never; traffic hashed onto it is black-holed).
    #[arg(long, value_parser = nonneg_arg)]
    ecmp_repair_us: Option<f64>,
    /// Leaf ECMP hash: crc32 (switches; the default) or crc32-mixed (diagnostic: CRC-32 through
    /// a non-linear finaliser, which removes CRC's linearity).
    #[arg(long, default_value = "crc32")]
    ecmp_hash: EcmpHash,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Paths per mroce connection.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=16))]
    paths: u16,
    /// What mroce does with its path selector's ECN re-route verdicts: every (move each named
    /// path once drained), one (only while no other path of the connection drains for a move)
    /// or off; true and false mean every and off.
    #[arg(long, default_value = "every", value_parser = ecn_reroute_arg)]
    ecn_reroute: EcnReroute,
    /// Packets an mroce connection may have in flight before its first rate hint (one
    /// bandwidth-delay product of a 400 Gb/s port by default; 65535: the paths' initial windows).
    #[arg(long, default_value_t = mroce_model::params::CONN_LIMIT_INIT_PKTS, value_parser = clap::value_parser!(u16).range(1..))]
    initial_limit: u16,
    /// mroce's tail hedge (SPEC.md §8.3): while nothing else waits to be sent, keep a second
    /// copy of a doubtful chunk in flight on another path; on or off.
    #[arg(long, default_value_t = mroce_model::endpoint::EndpointConfig::default().tail_hedge, value_parser = on_off_arg, action = clap::ArgAction::Set)]
    tail_hedge: bool,
    /// mroce's first flight (its data before the first ACK) asks for an immediate ACK of
    /// every packet (SPEC.md §8.3 step 7); with the fabric RTT configured, only once a fan-in
    /// announcement allows the whole initial limit: on or off.
    #[arg(long, default_value_t = mroce_model::endpoint::EndpointConfig::default().first_flight_ack_req, value_parser = on_off_arg, action = clap::ArgAction::Set)]
    first_flight_ack_req: bool,
    /// Configure mroce's NICs with the fabric's unloaded cross-spine RTT (`fabric_rtt_ns`), the
    /// most a shared rate hint's limit is computed from (SPEC.md §8.5): on or off (measured RTTs
    /// only, which the receiver's standing queue inflates).
    #[arg(long, default_value = "on", value_parser = on_off_arg, action = clap::ArgAction::Set)]
    fabric_rtt: bool,
    /// mroce's NICs announce their share per connection (capacity over established
    /// connections, rounded up to a power of two) to their peers, which size their first
    /// flight from it and --fabric-rtt (SPEC.md §8.5): on or off.
    #[arg(long, default_value = "on", value_parser = on_off_arg, action = clap::ArgAction::Set)]
    announce_fan_in: bool,
    /// RoCEv2's retransmission timeout, µs (default: mroce's RTO floor, 50 µs, so that the
    /// baseline is not a strawman; IB's local ACK timeout is 4.096 µs × 2^timeout, and NCCL
    /// sets timeout = 18 by default (NCCL_IB_TIMEOUT): 1073741.824).
    #[arg(long, value_parser = pos_arg)]
    rocev2_rto_us: Option<f64>,
    /// The order in which an mroce NIC serves its connections (SPEC.md §8.3, "Endpoint
    /// transmit order"): oldest (connections with only retransmissions or probes first, then
    /// the one whose oldest unsent message was posted first) or rr (round robin).
    #[arg(long, default_value = mroce_model::endpoint::EndpointConfig::default().tx_order.as_str(), value_parser = tx_order_arg)]
    tx_order: TxOrder,
    /// The same for RoCEv2's NICs across their QPs: rr (as commodity RNICs arbitrate QPs of
    /// one traffic class) or oldest (mroce's default, to compare both under one policy).
    #[arg(long, default_value = mroce_model::rocev2::RoceConfig::default().tx_order.as_str(), value_parser = tx_order_arg)]
    rocev2_tx_order: TxOrder,
    /// Payload bytes per packet.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u16).range(256..=9000))]
    mtu: u16,
    /// Transports to run (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "mroce,rocev2", value_parser = kind_arg)]
    transports: Vec<Kind>,
    /// Simulated-time limit per run, ms (default: the experiment's).
    #[arg(long, value_parser = pos_arg)]
    time_limit_ms: Option<f64>,
    /// Write summary.json, results.jsonl, results.csv, flows.csv, timeline.csv and SVG plots here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Capture the traffic of --pcap-host into STEM-TRANSPORT-RUN.pcap beside this path.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Host whose traffic --pcap captures.
    #[arg(long, default_value_t = 0)]
    pcap_host: usize,
    /// Print the summary as one JSON object on the last stdout line.
    #[arg(long)]
    json: bool,
}

impl CommonArgs {
    fn common(&self) -> Common {
        Common {
            fabric: FabricConfig {
                hosts: self.hosts,
                planes: self.planes,
                leaves: self.leaves,
                spines: self.spines,
                oversubscription: self.oversub,
                host_gbps: self.host_gbps,
                host_link_delay_ns: us_to_ns(self.host_delay_us),
                fabric_link_delay_ns: us_to_ns(self.fabric_delay_us),
                buffer_us: self.buffer_us,
                ecn_us: self.ecn_us,
                loss: 0.0,
                loss_scope: self.loss_scope,
                failures: self.fail.clone(),
                ecmp_local_repair_ns: self.ecmp_repair_us.map(us_to_ns),
                ecmp_hash: self.ecmp_hash,
            },
            seed: self.seed,
            paths: self.paths,
            ecn_reroute: self.ecn_reroute,
            initial_conn_limit: self.initial_limit,
            tail_hedge: self.tail_hedge,
            first_flight_ack_req: self.first_flight_ack_req,
            fabric_rtt: self.fabric_rtt,
            announce_fan_in: self.announce_fan_in,
            rocev2_rto_ns: self.rocev2_rto_us.map(us_to_ns),
            tx_order: self.tx_order,
            rocev2_tx_order: self.rocev2_tx_order,
            mtu: self.mtu,
            transports: self.transports.clone(),
            time_limit_ns: self.time_limit_ms.map(|ms| (ms * 1e6).round() as u64),
            pcap: self.pcap.clone().map(|p| (p, self.pcap_host)),
            out: self.out.clone(),
        }
    }
}

#[derive(Args, Debug)]
struct LossSweepArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Loss probabilities (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "0,0.001,0.01,0.05,0.1", value_parser = prob_arg)]
    losses: Vec<f64>,
    /// Bytes per flow.
    #[arg(long, default_value = "8MiB", value_parser = size_arg)]
    bytes: u64,
}

#[derive(Args, Debug)]
struct CollectivesArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Collectives (comma separated): all-to-all, ring, hd (halving-doubling, farthest partner
    /// first: the largest steps cross the spines), hd-near (nearest first: they stay under a leaf).
    #[arg(long, value_delimiter = ',', default_value = "all-to-all,ring,hd")]
    collectives: Vec<Collective>,
    /// All-to-all: bytes each host sends to each other host.
    #[arg(long, default_value = "512KiB", value_parser = size_arg)]
    a2a_bytes: u64,
    /// All-reduce: bytes per host.
    #[arg(long, default_value = "32MiB", value_parser = size_arg)]
    allreduce_bytes: u64,
    /// All-reduce (ring and hd): WRITEs per step, each a slice of the step's data that goes
    /// as soon as the bytes it carries are reduced (1: whole steps, each waiting for the last).
    #[arg(long, default_value_t = experiments::ALLREDUCE_SLICES as u16, value_parser = clap::value_parser!(u16).range(1..=64))]
    allreduce_slices: u16,
    /// Random loss probability.
    #[arg(long, default_value_t = 0.001, value_parser = prob_arg)]
    loss: f64,
}

#[derive(Args, Debug)]
struct PlanesArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Plane counts (comma separated).
    #[arg(long = "plane-counts", value_delimiter = ',', default_value = "1,2,4,8")]
    plane_counts: Vec<u8>,
    /// Host port rate per plane, Gb/s (host bandwidth = planes x this).
    #[arg(long, default_value_t = 50.0, value_parser = pos_arg)]
    port_gbps: f64,
    /// Bytes per flow per plane.
    #[arg(long, default_value = "2MiB", value_parser = size_arg)]
    bytes_per_plane: u64,
}

#[derive(Args, Debug)]
struct PlaneFailureArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The collective that runs: all-to-all, ring, hd.
    #[arg(long, default_value = "all-to-all")]
    collective: Collective,
    /// Bytes (per pair for all-to-all, per host for all-reduce).
    #[arg(long, default_value = "512KiB", value_parser = size_arg)]
    bytes: u64,
    /// Plane that fails.
    #[arg(long, default_value_t = 1)]
    fail_plane: u8,
    /// Failure time, µs after the start (default: a third of the ideal CCT).
    #[arg(long, value_parser = nonneg_arg)]
    fail_at_us: Option<f64>,
    /// Repair time, µs after the start (default: never).
    #[arg(long, value_parser = nonneg_arg)]
    repair_at_us: Option<f64>,
    /// Timeline bin, µs.
    #[arg(long, default_value_t = 5.0, value_parser = pos_arg)]
    bin_us: f64,
    /// Skip the run without failure.
    #[arg(long)]
    no_baseline: bool,
}

#[derive(Args, Debug)]
struct IncastArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Sender counts (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "8,32")]
    senders: Vec<usize>,
    /// Bytes per sender.
    #[arg(long, default_value = "2MiB", value_parser = size_arg)]
    bytes: u64,
    /// Receiving host.
    #[arg(long, default_value_t = 0)]
    receiver: usize,
}

#[derive(Args, Debug)]
struct ConnectionsArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Connection counts (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "4096")]
    connections: Vec<usize>,
    /// Bytes per connection.
    #[arg(long, default_value = "128KiB", value_parser = size_arg)]
    bytes: u64,
}

struct Bars {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Hooks for Bars {
    fn start(&mut self, label: &str, flows: usize) {
        if self.quiet {
            return;
        }
        let b = ProgressBar::with_draw_target(Some(flows as u64), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{prefix:>28} [{bar:30}] {pos}/{len} flows {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        b.set_prefix(label.to_string());
        self.bar = Some(b);
    }
    fn progress(&mut self, p: Progress) {
        if let Some(b) = &self.bar {
            b.set_position(p.flows_done as u64);
            b.set_message(format!("{:.1} us sim", p.sim_ns as f64 / 1000.0));
        }
    }
    fn end(&mut self, _label: &str, r: &RunReport) {
        if let Some(b) = self.bar.take() {
            b.set_position(
                r.flows
                    .iter()
                    .filter(|f| f.recv_ns.is_some() && f.sent_ns.is_some())
                    .count() as u64,
            );
            b.finish_with_message(format!(
                "{} in {:.1} us sim, {:.2} M events/s",
                if r.complete { "done" } else { "INCOMPLETE" },
                r.end_ns as f64 / 1000.0,
                r.events_per_s / 1e6
            ));
        }
    }
}

fn print_summary(s: &Summary, json: bool) {
    if json {
        match serde_json::to_string(s) {
            Ok(line) => println!("{line}"),
            Err(e) => eprintln!("mroce sim: cannot serialise the summary: {e}"),
        }
        return;
    }
    println!(
        "{}: seed {}, {:.2} s wall, {:.2} M events/s ({:.2} M per CPU second, {:.2} M counted as uet-htsim counts; {} events)",
        s.experiment,
        s.seed,
        s.wall_s,
        s.events_per_s / 1e6,
        s.events_per_cpu_s.unwrap_or(0.0) / 1e6,
        s.htsim_equivalent_events_per_cpu_s.unwrap_or(0.0) / 1e6,
        s.events
    );
    for r in &s.results {
        let mut line = String::new();
        if let Some(o) = r.as_object() {
            for (k, v) in o {
                if matches!(
                    k.as_str(),
                    "transport"
                        | "loss"
                        | "goodput_gbps"
                        | "relative_goodput"
                        | "relative_mean_flow_goodput"
                        | "retransmits"
                        | "collective"
                        | "algorithm"
                        | "cct_us"
                        | "ideal_us"
                        | "cct_over_ideal"
                        | "speedup_vs_rocev2"
                        | "planes"
                        | "scaling_efficiency"
                        | "recovery_us"
                        | "bytes_lost"
                        | "messages_completed"
                        | "messages_expected"
                        | "senders"
                        | "converge_rtts"
                        | "peak_queue_bytes"
                        | "drops"
                        | "connections"
                        | "jain_fairness"
                        | "state_bytes_per_connection"
                        | "integrity"
                ) {
                    let v = match v {
                        serde_json::Value::Number(n) if n.is_f64() => format!("{:.4}", n.as_f64().unwrap_or(0.0)),
                        other => other.to_string(),
                    };
                    line += &format!("{k}={v} ");
                }
            }
        }
        println!("  {line}");
    }
    println!("  acceptance: {}", s.acceptance);
}

/// Run `mroce sim ...`.
pub fn run(args: &SimArgs) -> ExitCode {
    let c = match &args.cmd {
        SimCmd::LossSweep(a) => &a.common,
        SimCmd::Collectives(a) => &a.common,
        SimCmd::Planes(a) => &a.common,
        SimCmd::PlaneFailure(a) => &a.common,
        SimCmd::Incast(a) => &a.common,
        SimCmd::Connections(a) => &a.common,
    };
    let common = c.common();
    mroce_sim::engine::keep_freed_memory();
    let mut hooks = Bars {
        bar: None,
        quiet: false,
    };
    let mut factory = mroce_sim::model_factory;
    let r = match &args.cmd {
        SimCmd::LossSweep(a) => {
            let p = experiments::LossSweep {
                losses: a.losses.clone(),
                bytes_per_flow: a.bytes,
                ..Default::default()
            };
            experiments::loss_sweep(&common, &p, &mut factory, &mut hooks)
        }
        SimCmd::Collectives(a) => {
            let p = experiments::Collectives {
                collectives: a.collectives.clone(),
                a2a_bytes_per_pair: a.a2a_bytes,
                allreduce_bytes: a.allreduce_bytes,
                allreduce_slices: usize::from(a.allreduce_slices),
                loss: a.loss,
                ..Default::default()
            };
            experiments::collectives(&common, &p, &mut factory, &mut hooks)
        }
        SimCmd::Planes(a) => {
            let p = experiments::Planes {
                planes: a.plane_counts.clone(),
                port_gbps: a.port_gbps,
                bytes_per_plane: a.bytes_per_plane,
                ..Default::default()
            };
            experiments::planes(&common, &p, &mut factory, &mut hooks)
        }
        SimCmd::PlaneFailure(a) => {
            let p = experiments::PlaneFailure {
                collective: a.collective,
                bytes: a.bytes,
                plane: a.fail_plane,
                at_ns: a.fail_at_us.map(us_to_ns),
                repair_ns: a.repair_at_us.map(us_to_ns),
                bin_ns: us_to_ns(a.bin_us),
                baseline: !a.no_baseline,
                ..Default::default()
            };
            experiments::plane_failure(&common, &p, &mut factory, &mut hooks)
        }
        SimCmd::Incast(a) => {
            let p = experiments::Incast {
                senders: a.senders.clone(),
                bytes: a.bytes,
                receiver: a.receiver,
                ..Default::default()
            };
            experiments::incast(&common, &p, &mut factory, &mut hooks)
        }
        SimCmd::Connections(a) => {
            let p = experiments::Connections {
                connections: a.connections.clone(),
                bytes: a.bytes,
                ..Default::default()
            };
            experiments::connections(&common, &p, &mut factory, &mut hooks)
        }
    };
    match r {
        Ok(s) => {
            print_summary(&s, c.json);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mroce sim: {e}");
            ExitCode::from(2)
        }
    }
}
