//! `mroce` command line: one clap subcommand per driver.
//!
//! Exit codes: 0 when a run produced its report (even an incomplete transfer, unless
//! `--strict`), 1 for `--strict` runs whose integrity is not "ok", 2 for usage errors and
//! for runs that could not be carried out (bad parameter, transport unavailable, I/O).

use std::path::PathBuf;
use std::process::ExitCode;

mod cli_cosim;

use clap::{Args, Parser, Subcommand};
use mroce::cli_value::{nonneg_arg, pos_arg, prob_arg, size_arg};
use mroce::pipe::{self, EcmpMode, PipeConfig, StreamMapping};
use mroce::transports::TransportKind;
use mroce_model::endpoint::EcnReroute;

#[derive(Parser, Debug)]
#[command(
    name = "mroce",
    version,
    about = "mroce: a MetaRoCE-style RDMA transport for lossy multi-plane Ethernet"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Later drivers slot in here as further variants: Sim, Hdl, Cosim, Udp, Conformance, Synth.
#[derive(Subcommand, Debug)]
enum Command {
    /// In-memory lossy multipath link harness: two NICs, parallel lanes, impairments.
    Pipe(PipeArgs),
    /// The pipe over several losses, transports and seeds: medians and ratios to loss 0.
    PipeSweep(SweepArgs),
    /// Over real UDP sockets between processes: listen, send, blast (raw-UDP baseline).
    Udp(mroce::cli_udp::UdpArgs),
    /// Packet-level fabric simulator: multi-plane leaf-spine experiments, mroce vs RoCEv2.
    Sim(mroce::cli_sim::SimArgs),
    /// RustHDL blocks: Verilog generation, lint, ECP5 resource/timing estimate.
    Hdl(mroce::cli_hdl::HdlArgs),
    /// Conformance suite: numbered SPEC.md cases against the model, the UDP runtime or the HDL.
    Conformance(mroce::cli_conformance::ConformanceArgs),
    /// Co-simulation: the Verilated HDL blocks in lockstep with the model, bit for bit.
    Cosim(cli_cosim::CosimArgs),
    /// FPGA boards: bitstream with the open toolchain (yosys, nextpnr, pack) and its figures.
    Synth(mroce::cli_synth::SynthArgs),
}

#[derive(Args, Debug)]
struct PipeArgs {
    /// Transport under test.
    #[arg(long, value_enum, default_value_t = TransportKind::Mroce)]
    transport: TransportKind,
    /// Paths per connection (also the default lane count).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    paths: u16,
    /// Parallel links per plane [default: ceil(paths / planes)].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    lanes: Option<u16>,
    /// NIC ports / network planes.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=8))]
    planes: u8,
    /// Random loss probability per frame (both directions).
    #[arg(long, default_value_t = 0.0, value_parser = prob_arg)]
    loss: f64,
    /// Probability that a frame gets extra delay in [0, --reorder-delay-us].
    #[arg(long, default_value_t = 0.0, value_parser = prob_arg)]
    reorder: f64,
    /// Maximum extra delay of a reordered frame, µs.
    #[arg(long, default_value_t = 4.0, value_parser = nonneg_arg)]
    reorder_delay_us: f64,
    /// Duplication probability per frame.
    #[arg(long, default_value_t = 0.0, value_parser = prob_arg)]
    dup: f64,
    /// Probability that one byte of a frame is corrupted.
    #[arg(long, default_value_t = 0.0, value_parser = prob_arg)]
    corrupt: f64,
    /// Payload to move (e.g. 4096, 64MiB, 1GiB, 1.5MB).
    #[arg(long, default_value = "64MiB", value_parser = size_arg)]
    bytes: u64,
    /// Bytes per WRITE message.
    #[arg(long, default_value = "1MiB", value_parser = size_arg)]
    msg_size: u64,
    /// Streams the messages are spread over (connections for transports without streams).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    streams: u16,
    /// One-way propagation delay per lane, µs.
    #[arg(long, default_value_t = 2.0, value_parser = nonneg_arg)]
    delay_us: f64,
    /// Total NIC bandwidth, Gb/s (split across planes and lanes).
    #[arg(long, default_value_t = 400.0, value_parser = pos_arg)]
    gbps: f64,
    /// Drop-tail limit of each lane queue.
    #[arg(long, default_value = "256KiB", value_parser = size_arg)]
    queue: u64,
    /// ECN marking threshold of each lane queue.
    #[arg(long, default_value = "64KiB", value_parser = size_arg)]
    ecn_threshold: u64,
    /// Simulated-time limit, seconds.
    #[arg(long, default_value_t = 10.0, value_parser = pos_arg)]
    time_limit_s: f64,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Write every transmitted frame to this pcap file (ns timestamps).
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Exit with status 1 when integrity is not "ok".
    #[arg(long)]
    strict: bool,
    /// Lane choice: UDP source port modulo lanes, or a CRC-32 5-tuple hash like a switch.
    #[arg(long, value_enum, default_value_t = EcmpMode::PortMod)]
    ecmp: EcmpMode,
    /// What mroce does with its path selector's ECN re-route verdicts: every, one (only while
    /// no other path of the connection drains for a move) or off.
    #[arg(long, default_value = "every", value_parser = mroce::cli_value::ecn_reroute_arg)]
    ecn_reroute: EcnReroute,
    /// Packets an mroce connection may have in flight before its first rate hint (65535: the
    /// paths' initial windows).
    #[arg(long, default_value_t = mroce_model::params::CONN_LIMIT_INIT_PKTS, value_parser = clap::value_parser!(u16).range(1..))]
    initial_limit: u16,
    /// mroce's tail hedge (SPEC.md §8.3): while nothing else waits to be sent, keep a second
    /// copy of a doubtful chunk in flight on another path; on or off.
    #[arg(long, default_value_t = mroce_model::endpoint::EndpointConfig::default().tail_hedge, value_parser = mroce::cli_value::on_off_arg, action = clap::ArgAction::Set)]
    tail_hedge: bool,
    /// mroce's first flight (its data before the first ACK) asks for an immediate ACK of
    /// every packet (SPEC.md §8.3 step 7): on or off.
    #[arg(long, default_value_t = mroce_model::endpoint::EndpointConfig::default().first_flight_ack_req, value_parser = mroce::cli_value::on_off_arg, action = clap::ArgAction::Set)]
    first_flight_ack_req: bool,
}

impl PipeArgs {
    fn config(&self) -> PipeConfig {
        PipeConfig {
            transport: self.transport,
            paths: self.paths,
            lanes: self.lanes,
            planes: self.planes,
            gbps: self.gbps,
            delay_ns: (self.delay_us * 1000.0).round() as u64,
            queue_limit: self.queue,
            ecn_threshold: self.ecn_threshold,
            loss: self.loss,
            reorder: self.reorder,
            reorder_delay_ns: (self.reorder_delay_us * 1000.0).round() as u64,
            dup: self.dup,
            corrupt: self.corrupt,
            bytes: self.bytes,
            msg_size: self.msg_size,
            streams: self.streams,
            stream_mapping: StreamMapping::Auto,
            seed: self.seed,
            time_limit_ns: (self.time_limit_s * 1e9).round() as u64,
            pcap: self.pcap.clone(),
            ecmp: self.ecmp,
            ecn_reroute: self.ecn_reroute,
            initial_conn_limit: self.initial_limit,
            tail_hedge: self.tail_hedge,
            first_flight_ack_req: self.first_flight_ack_req,
        }
    }
}

#[derive(Args, Debug)]
struct SweepArgs {
    /// Link and workload settings (as for `mroce pipe`; --loss and --transport are replaced
    /// by --losses and --transports).
    #[command(flatten)]
    pipe: PipeArgs,
    /// Loss probabilities to run (0 is always added: it is the reference).
    #[arg(long, value_delimiter = ',', default_value = "0,0.001,0.01,0.05,0.1", value_parser = prob_arg)]
    losses: Vec<f64>,
    /// Transports to run.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "mroce,rocev2")]
    transports: Vec<TransportKind>,
    /// Number of seeds per cell (seed, seed+1, ...); medians are reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
}

fn cmd_pipe_sweep(args: &SweepArgs) -> ExitCode {
    let base = args.pipe.config();
    let seeds: Vec<u64> = (0..args.seeds).map(|i| base.seed + i).collect();
    let report = match mroce::pipe_sweep::run(&base, &args.transports, &args.losses, &seeds, !args.pipe.json) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mroce pipe-sweep: {e}");
            return ExitCode::from(2);
        }
    };
    if args.pipe.json {
        match serde_json::to_string(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("mroce pipe-sweep: cannot serialise the report: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", report.table());
    }
    let ok = report.results.iter().all(|r| r.integrity == "ok");
    if args.pipe.strict && !ok {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn cmd_pipe(args: &PipeArgs) -> ExitCode {
    let report = match pipe::run(&args.config()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mroce pipe: {e}");
            return ExitCode::from(2);
        }
    };
    if args.json {
        match serde_json::to_string(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("mroce pipe: cannot serialise the report: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", report.summary());
    }
    if args.strict && report.integrity != "ok" {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help / --version print to stdout and succeed; real usage errors exit 2.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match &cli.command {
        Command::Pipe(a) => cmd_pipe(a),
        Command::PipeSweep(a) => cmd_pipe_sweep(a),
        Command::Udp(a) => mroce::cli_udp::run(a),
        Command::Sim(a) => mroce::cli_sim::run(a),
        Command::Hdl(a) => mroce::cli_hdl::run(a),
        Command::Synth(a) => mroce::cli_synth::run(a),
        Command::Conformance(a) => mroce::cli_conformance::run(a),
        Command::Cosim(a) => cli_cosim::run(a),
    }
}
