//! `mroce udp listen|send|blast`: the transport between processes over real UDP sockets
//! (runtime in the `mroce-udp` crate, transports from [`crate::transports::make_transport`]).
//!
//! # The transfer protocol (application level, over the verbs API)
//!
//! 1. The sender connects and SENDs a 64-byte HELLO on stream 0: magic `MRUDPHEL`, total
//!    bytes, pattern seed, message size, streams.
//! 2. The listener registers a destination region of that size and SENDs READY: magic
//!    `MRUDPRDY`, the region's VA and R_Key (status 1 = refused, e.g. too large).
//! 3. The sender posts every message as an RDMA WRITE (message `i`: bytes
//!    `i * msg_size ..`, stream `i % streams`) and times first post → last WRITE completion.
//! 4. When every message has landed (`WriteReceived`), the listener checks the whole region
//!    against the seeded pattern ([`mroce_udp::pattern`]; content, not counts) and SENDs the
//!    VERDICT: magic `MRUDPVER`, ok flag, bytes checked, first bad offset, its goodput.
//! 5. The sender disconnects.
//!
//! A peer that stays silent for `--peer-timeout-s` while a transfer is in progress ends it
//! with an error (the transport's own peer timeout may end it first); a CONNECT that gets no
//! answer is retried until `--connect-timeout-s`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use mroce_model::endpoint::EcnReroute;
use mroce_model::memory::MrKey;
use mroce_model::transport::{ConnId, Event, LocalBuf, RemoteBuf, Status, WorkKind};
use mroce_udp::{frame, pattern, Accept, Dir, Impairment, Nic, NicConfig};
use serde::Serialize;
use serde_json::{json, Value};

use crate::cli_value::{prob_arg, size_arg};
use crate::pcap::{PcapWriter, TsResolution};
use crate::transports::{make_transport, TransportKind, TransportParams};

const HELLO: &[u8; 8] = b"MRUDPHEL";
const READY: &[u8; 8] = b"MRUDPRDY";
const VERDICT: &[u8; 8] = b"MRUDPVER";
const CTL_LEN: u32 = 64;
/// Payload bytes per data packet the blast baseline mimics (the transports' default MTU).
const MTU_PAYLOAD: usize = mroce_model::params::DEFAULT_MTU_PAYLOAD as usize;
/// Bytes checked between two turns of the event loop while verifying.
const VERIFY_CHUNK: usize = 1 << 20;

/// `mroce udp ...`
#[derive(Args, Debug)]
pub struct UdpArgs {
    #[command(subcommand)]
    cmd: UdpCmd,
}

#[derive(Subcommand, Debug)]
enum UdpCmd {
    /// Serve transfers: accept connections, receive WRITEs, verify content, report.
    Listen(ListenArgs),
    /// Move a seeded payload to a listener with RDMA WRITEs and report goodput.
    Send(SendArgs),
    /// Raw-UDP baseline: the same runtime sending unacknowledged datagrams of the data
    /// packets' size to a listener, which reports what arrived.
    Blast(BlastArgs),
}

fn secs_arg(s: &str) -> Result<f64, String> {
    let x: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(format!("{x} must be a positive number of seconds"))
    }
}

fn sockaddr_arg(s: &str) -> Result<SocketAddrV4, String> {
    if let Ok(a) = s.parse::<SocketAddrV4>() {
        return Ok(a);
    }
    s.parse::<Ipv4Addr>()
        .map(|ip| SocketAddrV4::new(ip, mroce_udp::nic::DEFAULT_PORT))
        .map_err(|_| format!("{s:?} is not IPv4:PORT or IPv4"))
}

/// Settings shared by every subcommand.
#[derive(Args, Debug, Clone)]
struct Common {
    /// Planes (NIC ports): plane i uses the plane-0 address with i added to its third octet.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=8))]
    planes: u8,
    /// Userspace impairment: probability that a received datagram is dropped.
    #[arg(long, default_value_t = 0.0, value_parser = prob_arg)]
    loss: f64,
    /// Userspace impairment: probability that a received datagram is held back (reordered).
    #[arg(long, default_value_t = 0.0, value_parser = prob_arg)]
    reorder: f64,
    /// Maximum hold-back of a reordered datagram, µs.
    #[arg(long, default_value_t = 100.0)]
    reorder_delay_us: f64,
    /// Userspace impairment: probability that a received datagram is handed in twice.
    #[arg(long, default_value_t = 0.0, value_parser = prob_arg)]
    dup: f64,
    /// Write every frame sent and received (headers rebuilt) to this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Datagrams per sendmmsg/recvmmsg batch.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    batch: u16,
    /// Frames pulled from the transport per loop turn before receiving again.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    tx_budget: u32,
    /// recvmmsg calls per plane socket per loop turn (at most) before timers and transmit run.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    rx_calls: u32,
    /// Keep busy-polling this long after the last activity before sleeping in ppoll, µs
    /// (0 = always sleep when idle: best on a loaded machine).
    #[arg(long, default_value_t = 50)]
    spin_us: u64,
    /// Run under SCHED_FIFO with this priority (1..=99; 0 = normal scheduling). On a busy
    /// host, scheduling delays of milliseconds otherwise look like loss to the transport.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=99))]
    rt_priority: u8,
    /// A transfer whose peer sends nothing for this long fails.
    #[arg(long, default_value_t = 5.0, value_parser = secs_arg)]
    peer_timeout_s: f64,
    /// mroce's RTO before the first RTT sample of a path, µs.
    #[arg(long, default_value_t = 2000)]
    rto_init_us: u64,
    /// What mroce does with its path selector's ECN re-route verdicts: every, one (only while
    /// no other path of the connection drains for a move) or off.
    #[arg(long, default_value = "every", value_parser = crate::cli_value::ecn_reroute_arg)]
    ecn_reroute: EcnReroute,
    /// Packets an mroce connection may have in flight before its first rate hint (65535: the
    /// paths' initial windows).
    #[arg(long, default_value_t = mroce_model::params::CONN_LIMIT_INIT_PKTS, value_parser = clap::value_parser!(u16).range(1..))]
    initial_limit: u16,
    /// mroce's tail hedge (SPEC.md §8.3): while nothing else waits to be sent, keep a second
    /// copy of a doubtful chunk in flight on another path; on or off.
    #[arg(long, default_value_t = mroce_model::endpoint::EndpointConfig::default().tail_hedge, value_parser = crate::cli_value::on_off_arg, action = clap::ArgAction::Set)]
    tail_hedge: bool,
    /// mroce's first flight (its data before the first ACK) asks for an immediate ACK of
    /// every packet (SPEC.md §8.3 step 7): on or off.
    #[arg(long, default_value_t = mroce_model::endpoint::EndpointConfig::default().first_flight_ack_req, value_parser = crate::cli_value::on_off_arg, action = clap::ArgAction::Set)]
    first_flight_ack_req: bool,
    /// The network's unloaded round trip, µs: the most an mroce sender's limit under a shared
    /// rate hint (several senders into one listener) is computed from, since its RTT samples
    /// wait behind the listener's queue (SPEC.md §8.5); 0: measured RTTs only.
    #[arg(long, default_value_t = 0.0, value_parser = crate::cli_value::nonneg_arg)]
    fabric_rtt_us: f64,
    /// Announce this NIC's share per connection (capacity over established connections,
    /// rounded up to a power of two) to its peers, so that senders with --fabric-rtt-us size
    /// their first flight to the fan-in (SPEC.md §8.5): on or off.
    #[arg(long, default_value = "off", value_parser = crate::cli_value::on_off_arg, action = clap::ArgAction::Set)]
    announce_fan_in: bool,
    /// Seed of the transport's random choices and of the impairment.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object per result on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ListenArgs {
    /// Plane-0 address and service port to receive on.
    #[arg(long, default_value = "127.0.0.1:4791", value_parser = sockaddr_arg)]
    bind: SocketAddrV4,
    /// Transport (must match the senders').
    #[arg(long, value_enum, default_value_t = TransportKind::Mroce)]
    transport: TransportKind,
    /// Paths per connection this NIC accepts (mroce).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    paths: u16,
    /// Transfers to serve before exiting (0 = forever). Blasts do not count.
    #[arg(long, default_value_t = 1)]
    transfers: u64,
    /// Accept connections only from these plane-0 addresses (repeatable; default: anyone).
    #[arg(long)]
    allow: Vec<Ipv4Addr>,
    /// Largest transfer accepted.
    #[arg(long, default_value = "8GiB", value_parser = size_arg)]
    max_bytes: u64,
    /// Exit after this long without finishing the requested transfers (0 = never).
    #[arg(long, default_value_t = 0.0)]
    exit_after_s: f64,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct SendArgs {
    /// Listener's plane-0 address and service port.
    #[arg(long, default_value = "127.0.0.1:4791", value_parser = sockaddr_arg)]
    to: SocketAddrV4,
    /// Local plane-0 address [default: for a loopback target 127.0.0.2 (127.0.0.3 if the
    /// target is 127.0.0.2), else the address the route to the target uses].
    #[arg(long)]
    local: Option<Ipv4Addr>,
    /// Payload to move (e.g. 64MiB, 1GiB).
    #[arg(long, default_value = "64MiB", value_parser = size_arg)]
    bytes: u64,
    /// Paths per connection (mroce; RoCEv2 has one path per QP).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    paths: u16,
    /// Transport.
    #[arg(long, value_enum, default_value_t = TransportKind::Mroce)]
    transport: TransportKind,
    /// Bytes per WRITE message.
    #[arg(long, default_value = "1MiB", value_parser = size_arg)]
    msg_size: u64,
    /// Streams the messages are spread over (mroce).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    streams: u16,
    /// Seed of the data pattern.
    #[arg(long, default_value_t = 1)]
    data_seed: u64,
    /// Keep retrying the CONNECT for this long (the listener may start later).
    #[arg(long, default_value_t = 5.0, value_parser = secs_arg)]
    connect_timeout_s: f64,
    /// First blast the same number of data-sized datagrams at the listener (raw-UDP
    /// baseline, same runtime and run) and report the ratio.
    #[arg(long)]
    compare_blast: bool,
    /// Exit with status 1 unless integrity is "ok" (it does anyway on a failed transfer).
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct BlastArgs {
    /// Listener's plane-0 address and service port.
    #[arg(long, default_value = "127.0.0.1:4791", value_parser = sockaddr_arg)]
    to: SocketAddrV4,
    /// Local plane-0 address (default as for `send`).
    #[arg(long)]
    local: Option<Ipv4Addr>,
    /// Payload the same transfer would move; one datagram per data packet of it.
    #[arg(long, default_value = "64MiB", value_parser = size_arg)]
    bytes: u64,
    /// Source ports the datagrams are spread over.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    paths: u16,
    /// Datagram size [default: an mroce WRITE datagram with a 4096-byte payload].
    #[arg(long)]
    datagram: Option<usize>,
    #[command(flatten)]
    common: Common,
}

/// Run `mroce udp ...`.
pub fn run(a: &UdpArgs) -> ExitCode {
    match &a.cmd {
        UdpCmd::Listen(l) => listen(l),
        UdpCmd::Send(s) => send(s),
        UdpCmd::Blast(b) => blast(b),
    }
}

fn nic_config(c: &Common, port: u16, accept: Accept) -> NicConfig {
    NicConfig {
        port,
        batch: usize::from(c.batch),
        tx_budget: c.tx_budget as usize,
        rx_calls: c.rx_calls as usize,
        spin_ns: c.spin_us.saturating_mul(1000),
        impair: Impairment {
            loss: c.loss,
            reorder: c.reorder,
            reorder_delay_ns: (c.reorder_delay_us.max(0.0) * 1000.0) as u64,
            dup: c.dup,
            seed: c.seed ^ 0x1A7E,
        },
        accept,
        ..Default::default()
    }
}

type SharedPcap = Rc<RefCell<PcapWriter<BufWriter<File>>>>;

/// Switch the process to SCHED_FIFO (a warning, not an error, when not permitted).
fn set_realtime(prio: u8) {
    if prio > 0 {
        if let Err(e) = mroce_udp::sys::set_realtime(prio) {
            eprintln!("mroce udp: cannot use SCHED_FIFO {prio}: {e}");
        }
    }
}

fn build_nic(
    kind: TransportKind,
    local: Ipv4Addr,
    port: u16,
    paths: u16,
    streams: u16,
    c: &Common,
    accept: Accept,
) -> Result<(Nic, Option<SharedPcap>), String> {
    set_realtime(c.rt_priority);
    let addr = frame::nic_addr(local, c.planes);
    // Over sockets, scheduling delays reach milliseconds: a 2 ms first RTO avoids spurious
    // timeouts on the first flight, and the transport's own peer timeout follows the CLI's.
    let params = TransportParams {
        paths,
        streams,
        rto_min_ns: None,
        rto_init_ns: Some(c.rto_init_us * 1000),
        peer_timeout_ns: Some((c.peer_timeout_s * 1e9) as u64),
        ecn_reroute: c.ecn_reroute,
        initial_conn_limit: c.initial_limit,
        tail_hedge: c.tail_hedge,
        first_flight_ack_req: c.first_flight_ack_req,
        fabric_rtt_ns: (c.fabric_rtt_us * 1000.0).round() as u64,
        announce_fan_in: c.announce_fan_in,
    };
    let t = make_transport(kind, addr, c.seed, &params).map_err(|e| e.to_string())?;
    let mut nic = Nic::new(t, nic_config(c, port, accept)).map_err(|e| e.to_string())?;
    let pcap = match &c.pcap {
        Some(path) => {
            let f = File::create(path).map_err(|e| format!("pcap {}: {e}", path.display()))?;
            let w = PcapWriter::new(BufWriter::with_capacity(1 << 20, f), TsResolution::Nanos)
                .map_err(|e| format!("pcap {}: {e}", path.display()))?;
            let w = Rc::new(RefCell::new(w));
            let tap = w.clone();
            nic.set_tap(Some(Box::new(move |_: Dir, t: u64, f: &[u8]| {
                let _ = tap.borrow_mut().write_packet(t, f);
            })));
            Some(w)
        }
        None => None,
    };
    Ok((nic, pcap))
}

fn flush_pcap(p: &Option<SharedPcap>) {
    if let Some(p) = p {
        if let Err(e) = p.borrow_mut().flush() {
            eprintln!("mroce udp: pcap: {e}");
        }
    }
}

fn default_local(to: SocketAddrV4) -> Ipv4Addr {
    let ip = *to.ip();
    if ip.is_loopback() {
        let o = ip.octets();
        return Ipv4Addr::new(o[0], o[1], o[2], if o[3] == 2 { 3 } else { 2 });
    }
    // The address the kernel would use to reach the target.
    UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect(to)?;
            s.local_addr()
        })
        .ok()
        .and_then(|a| match a.ip() {
            std::net::IpAddr::V4(v) if !v.is_unspecified() => Some(v),
            _ => None,
        })
        .unwrap_or(Ipv4Addr::new(127, 0, 0, 2))
}

fn counters_map(pairs: Vec<(&'static str, u64)>) -> BTreeMap<String, u64> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn print_json(v: &Value) {
    println!("{}", serde_json::to_string(v).unwrap_or_else(|_| "{}".into()));
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn ctl_buf(key: MrKey, slot: u64) -> LocalBuf {
    LocalBuf {
        key,
        offset: slot * u64::from(CTL_LEN),
        len: CTL_LEN,
    }
}

// ---------------------------------------------------------------------------------------
// listen
// ---------------------------------------------------------------------------------------

#[derive(Debug)]
enum Phase {
    /// Waiting for HELLO.
    Hello,
    /// READY sent; WRITEs landing.
    Data,
    /// Checking the region (resumable, between loop turns).
    Verify { at: usize },
    /// VERDICT posted; waiting for its completion.
    Verdict,
}

struct Session {
    peer: Option<Ipv4Addr>,
    ctl: MrKey,
    dst: Option<MrKey>,
    phase: Phase,
    bytes: u64,
    seed: u64,
    msgs: u64,
    msgs_done: u64,
    rx_bytes: u64,
    started: Instant,
    data_t0: Option<Instant>,
    data_t1: Option<Instant>,
    first_bad: Option<u64>,
    verdict_done: bool,
    disconnected: bool,
    error: Option<String>,
}

/// Report of one transfer at the listener.
#[derive(Debug, Serialize)]
struct ListenReport {
    role: &'static str,
    transport: &'static str,
    peer: String,
    bytes: u64,
    delivered_bytes: u64,
    messages: u64,
    goodput_gbps: f64,
    integrity: String,
    first_bad_offset: Option<u64>,
    wall_s: f64,
    error: Option<String>,
    counters: BTreeMap<String, u64>,
    runtime: BTreeMap<String, u64>,
}

fn listen(a: &ListenArgs) -> ExitCode {
    let accept = if a.allow.is_empty() {
        Accept::Any
    } else {
        Accept::Only(a.allow.clone())
    };
    let (mut nic, pcap) = match build_nic(a.transport, *a.bind.ip(), a.bind.port(), a.paths, 1, &a.common, accept) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("mroce udp listen: {e}");
            return ExitCode::from(2);
        }
    };
    if !a.common.json {
        eprintln!(
            "mroce udp listen: {} on {} ({} plane(s))",
            a.transport, a.bind, a.common.planes
        );
    }
    let peer_timeout = Duration::from_secs_f64(a.common.peer_timeout_s);
    let started = Instant::now();
    let mut sessions: HashMap<ConnId, Session> = HashMap::new();
    let mut served = 0u64;
    let mut failed = 0u64;
    let mut reports = Vec::new();
    while a.transfers == 0 || served + failed < a.transfers {
        if a.exit_after_s > 0.0 && started.elapsed().as_secs_f64() > a.exit_after_s {
            eprintln!(
                "mroce udp listen: exiting after {:.1} s ({served} transfer(s) served)",
                a.exit_after_s
            );
            break;
        }
        // Verification runs between loop turns: do not sleep while one is in progress.
        let verifying = sessions.values().any(|s| matches!(s.phase, Phase::Verify { .. }));
        let wait = if verifying {
            Duration::ZERO
        } else {
            Duration::from_millis(50)
        };
        let ev = match nic.poll(wait) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("mroce udp listen: {e}");
                return ExitCode::from(2);
            }
        };
        while let Some(b) = nic.take_blast_report() {
            let v = json!({
                "role": "listener", "kind": "blast", "from": b.from.to_string(), "sent": b.sent,
                "datagrams": b.datagrams, "bytes": b.bytes, "span_s": b.span_ns as f64 / 1e9,
                "goodput_gbps": b.goodput_gbps(),
            });
            if a.common.json {
                print_json(&v);
            } else {
                eprintln!(
                    "blast from {}: {} of {} datagrams, {:.2} Gb/s",
                    b.from,
                    b.datagrams,
                    b.sent,
                    b.goodput_gbps()
                );
            }
        }
        if let Some(ev) = ev {
            listener_event(a, &mut nic, &mut sessions, ev);
        }
        // Resumable verification, and peers that went silent.
        let ids: Vec<ConnId> = sessions.keys().copied().collect();
        for id in ids {
            let done = listener_step(a, &mut nic, &mut sessions, id, peer_timeout);
            if let Some(r) = done {
                let ok = r.error.is_none() && r.integrity == "ok";
                if ok {
                    served += 1;
                } else {
                    failed += 1;
                }
                emit_listen(a, &r);
                reports.push(r);
                if let Some(s) = sessions.remove(&id) {
                    if let Some(d) = s.dst {
                        let _ = nic.transport_mut().memory_mut().deregister(d);
                    }
                    let _ = nic.transport_mut().memory_mut().deregister(s.ctl);
                }
            }
        }
    }
    // Let the last DISCONNECT be answered.
    let _ = nic.run_for(Duration::from_millis(20));
    flush_pcap(&pcap);
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn emit_listen(a: &ListenArgs, r: &ListenReport) {
    if a.common.json {
        print_json(&serde_json::to_value(r).unwrap_or(Value::Null));
    } else {
        eprintln!(
            "transfer from {}: {} bytes, {:.2} Gb/s, integrity {}{}",
            r.peer,
            r.delivered_bytes,
            r.goodput_gbps,
            r.integrity,
            r.error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
        );
    }
}

fn listener_event(a: &ListenArgs, nic: &mut Nic, sessions: &mut HashMap<ConnId, Session>, ev: Event) {
    match ev {
        Event::Accepted(id) => {
            let ctl = nic.register(3 * CTL_LEN as usize, false);
            let _ = nic.post_recv(id, 0, ctl_buf(ctl, 0), 1);
            sessions.insert(
                id,
                Session {
                    peer: nic.peer_of(id),
                    ctl,
                    dst: None,
                    phase: Phase::Hello,
                    bytes: 0,
                    seed: 0,
                    msgs: 0,
                    msgs_done: 0,
                    rx_bytes: 0,
                    started: Instant::now(),
                    data_t0: None,
                    data_t1: None,
                    first_bad: None,
                    verdict_done: false,
                    disconnected: false,
                    error: None,
                },
            );
        }
        Event::Completion(c) => {
            let Some(s) = sessions.get_mut(&c.conn) else { return };
            match c.kind {
                WorkKind::Recv if c.status == Status::Ok && matches!(s.phase, Phase::Hello) => {
                    let h = nic
                        .region(s.ctl)
                        .map(|r| r[..CTL_LEN as usize].to_vec())
                        .unwrap_or_default();
                    if h.len() < 48 || h[..8] != *HELLO {
                        s.error = Some("the first SEND is not a HELLO".into());
                        s.disconnected = true;
                        let _ = nic.disconnect(c.conn);
                        return;
                    }
                    let (bytes, seed, msg_size) = (u64_at(&h, 16), u64_at(&h, 24), u64_at(&h, 32));
                    let refuse = bytes == 0 || bytes > a.max_bytes || msg_size == 0 || msg_size > u64::from(u32::MAX);
                    let mut ready = [0u8; CTL_LEN as usize];
                    ready[..8].copy_from_slice(READY);
                    if refuse {
                        ready[20..24].copy_from_slice(&1u32.to_be_bytes());
                    } else {
                        let dst = nic.register(bytes as usize, true);
                        ready[8..16].copy_from_slice(&dst.va.to_be_bytes());
                        ready[16..20].copy_from_slice(&dst.rkey.to_be_bytes());
                        s.dst = Some(dst);
                        s.bytes = bytes;
                        s.seed = seed;
                        s.msgs = bytes.div_ceil(msg_size);
                        s.phase = Phase::Data;
                        s.data_t0 = Some(Instant::now());
                    }
                    if let Ok(r) = nic.region_mut(s.ctl) {
                        r[CTL_LEN as usize..2 * CTL_LEN as usize].copy_from_slice(&ready);
                    }
                    let _ = nic.post_send(c.conn, 0, ctl_buf(s.ctl, 1), 2);
                }
                WorkKind::WriteReceived if c.status == Status::Ok => {
                    s.msgs_done += 1;
                    s.rx_bytes += u64::from(c.bytes);
                    if matches!(s.phase, Phase::Data) && s.msgs_done >= s.msgs {
                        s.data_t1 = Some(Instant::now());
                        s.phase = Phase::Verify { at: 0 };
                    }
                }
                WorkKind::Send if c.wr_id == 3 => {
                    // VERDICT delivered, or flushed by the sender's DISCONNECT (which it sends
                    // only after reading the VERDICT): the transfer is over either way, and
                    // the data was checked here.
                    s.verdict_done = true;
                }
                _ => {
                    if c.status != Status::Ok {
                        s.error
                            .get_or_insert_with(|| format!("{:?} completed with {:?}", c.kind, c.status));
                    }
                }
            }
        }
        Event::Disconnected(id) => {
            if let Some(s) = sessions.get_mut(&id) {
                s.disconnected = true;
            }
        }
        _ => {}
    }
}

fn listener_step(
    a: &ListenArgs,
    nic: &mut Nic,
    sessions: &mut HashMap<ConnId, Session>,
    id: ConnId,
    peer_timeout: Duration,
) -> Option<ListenReport> {
    let s = sessions.get_mut(&id)?;
    let report = |s: &Session, nic: &Nic, error: Option<String>| {
        let integrity = if error.is_some() || s.msgs_done < s.msgs {
            "incomplete"
        } else if s.first_bad.is_some() {
            "corrupt"
        } else {
            "ok"
        };
        let span = match (s.data_t0, s.data_t1) {
            (Some(t0), Some(t1)) => t1.duration_since(t0).as_secs_f64(),
            _ => 0.0,
        };
        ListenReport {
            role: "listener",
            transport: nic.name(),
            peer: s.peer.map(|p| p.to_string()).unwrap_or_default(),
            bytes: s.bytes,
            delivered_bytes: s.rx_bytes,
            messages: s.msgs,
            goodput_gbps: if span > 0.0 {
                s.rx_bytes as f64 * 8.0 / span / 1e9
            } else {
                0.0
            },
            integrity: integrity.to_string(),
            first_bad_offset: s.first_bad,
            wall_s: s.started.elapsed().as_secs_f64(),
            error,
            counters: counters_map(nic.counters()),
            runtime: counters_map(nic.stats().pairs()),
        }
    };
    if s.verdict_done {
        let e = s.error.clone();
        return Some(report(s, nic, e));
    }
    if s.disconnected && matches!(s.phase, Phase::Verdict) && s.first_bad.is_none() && s.msgs_done >= s.msgs {
        // Every byte landed and was checked; the sender closed after reading the VERDICT
        // (whose acknowledgement may have been lost on the way).
        return Some(report(s, nic, None));
    }
    if s.disconnected {
        let e = s
            .error
            .clone()
            .unwrap_or_else(|| "the connection ended before the transfer completed".into());
        return Some(report(s, nic, Some(e)));
    }
    if let Phase::Verify { at } = s.phase {
        let dst = s.dst?;
        let region = nic.region(dst).ok()?;
        let end = (at + VERIFY_CHUNK).min(region.len());
        if let Some(k) = pattern::first_mismatch(s.seed, at as u64, &region[at..end]) {
            s.first_bad.get_or_insert((at + k) as u64);
        }
        if end < region.len() && s.first_bad.is_none() {
            s.phase = Phase::Verify { at: end };
            return None;
        }
        let mut v = [0u8; CTL_LEN as usize];
        v[..8].copy_from_slice(VERDICT);
        v[8] = u8::from(s.first_bad.is_none());
        v[16..24].copy_from_slice(&(end as u64).to_be_bytes());
        v[24..32].copy_from_slice(&s.first_bad.unwrap_or(u64::MAX).to_be_bytes());
        let span = match (s.data_t0, s.data_t1) {
            (Some(t0), Some(t1)) => t1.duration_since(t0).as_secs_f64(),
            _ => 0.0,
        };
        let gbps = if span > 0.0 {
            s.rx_bytes as f64 * 8.0 / span / 1e9
        } else {
            0.0
        };
        v[32..40].copy_from_slice(&gbps.to_bits().to_be_bytes());
        v[40..48].copy_from_slice(&s.rx_bytes.to_be_bytes());
        if let Ok(r) = nic.region_mut(s.ctl) {
            r[2 * CTL_LEN as usize..].copy_from_slice(&v);
        }
        let ctl = s.ctl;
        s.phase = Phase::Verdict;
        if let Err(e) = nic.post_send(id, 0, ctl_buf(ctl, 2), 3) {
            return Some(report(s, nic, Some(format!("cannot send the verdict: {e}"))));
        }
        return None;
    }
    let _ = a;
    if let Some(peer) = s.peer {
        if nic.silence_of(peer).is_some_and(|d| d > peer_timeout) {
            let _ = nic.disconnect(id);
            return Some(report(
                s,
                nic,
                Some(format!(
                    "peer {peer} sent nothing for {:.1} s: transfer abandoned",
                    peer_timeout.as_secs_f64()
                )),
            ));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// send
// ---------------------------------------------------------------------------------------

struct SendOutcome {
    integrity: String,
    error: Option<String>,
    data_s: f64,
    wall_s: f64,
    receiver_goodput: Option<f64>,
    checked_bytes: u64,
    writes_ok: u64,
}

fn send(a: &SendArgs) -> ExitCode {
    let c = &a.common;
    if a.msg_size == 0 || a.msg_size > u64::from(u32::MAX) {
        eprintln!("mroce udp send: --msg-size must be 1..={} bytes", u32::MAX);
        return ExitCode::from(2);
    }
    if a.bytes == 0 || usize::try_from(a.bytes).is_err() {
        eprintln!("mroce udp send: --bytes must be positive and fit in memory");
        return ExitCode::from(2);
    }
    let local = a.local.unwrap_or_else(|| default_local(a.to));
    let streams = if a.transport.has_streams() { a.streams } else { 1 };
    let (mut nic, pcap) = match build_nic(a.transport, local, a.to.port(), a.paths, streams, c, Accept::Nobody) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("mroce udp send: {e}");
            return ExitCode::from(2);
        }
    };
    let mut blast_v = Value::Null;
    let mut blast_gbps = None;
    if a.compare_blast {
        let n = a.bytes.div_ceil(MTU_PAYLOAD as u64);
        match nic.blast(
            *a.to.ip(),
            n,
            frame::write_datagram_len(MTU_PAYLOAD),
            a.paths,
            Duration::from_secs(3),
        ) {
            Ok(b) => {
                blast_gbps = b.receiver.map(|r| r.goodput_gbps());
                blast_v = blast_json(&b);
            }
            Err(e) => {
                eprintln!("mroce udp send: blast: {e}");
                return ExitCode::from(2);
            }
        }
        // Let the listener drain before the transfer starts.
        let _ = nic.run_for(Duration::from_millis(100));
    }
    let out = transfer(a, &mut nic, streams);
    flush_pcap(&pcap);
    let ratio = blast_gbps.filter(|b| *b > 0.0).map(|b| out_goodput(a, &out) / b);
    let v = json!({
        "transport": nic.name(),
        "bytes": a.bytes,
        "goodput_gbps": out_goodput(a, &out),
        "retransmits": nic.counter("retransmits"),
        "integrity": out.integrity,
        "wall_s": out.wall_s,
        "role": "sender",
        "local": local.to_string(),
        "peer": a.to.to_string(),
        "paths": a.paths,
        "streams": streams,
        "planes": c.planes,
        "msg_size": a.msg_size,
        "messages": a.bytes.div_ceil(a.msg_size),
        "writes_completed": out.writes_ok,
        "transfer_s": out.data_s,
        "receiver_goodput_gbps": out.receiver_goodput,
        "checked_bytes": out.checked_bytes,
        "loss": c.loss, "reorder": c.reorder, "dup": c.dup,
        "error": out.error,
        "blast": blast_v,
        "blast_gbps": blast_gbps,
        "ratio_to_blast": ratio,
        "counters": counters_map(nic.counters()),
        "runtime": counters_map(nic.stats().pairs()),
    });
    if c.json {
        print_json(&v);
    } else {
        println!(
            "{} {} -> {}: {} bytes in {:.3} s, {:.2} Gb/s goodput, {} retransmits, integrity {}{}",
            nic.name(),
            local,
            a.to,
            a.bytes,
            out.data_s,
            out_goodput(a, &out),
            nic.counter("retransmits"),
            out.integrity,
            out.error.as_ref().map(|e| format!(" (error: {e})")).unwrap_or_default()
        );
        if let (Some(b), Some(r)) = (blast_gbps, ratio) {
            println!("raw UDP blast: {b:.2} Gb/s; goodput / blast = {r:.3}");
        }
    }
    if out.error.is_some() || (a.strict && out.integrity != "ok") || out.integrity == "corrupt" {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn out_goodput(a: &SendArgs, o: &SendOutcome) -> f64 {
    if o.data_s > 0.0 && o.error.is_none() {
        a.bytes as f64 * 8.0 / o.data_s / 1e9
    } else {
        0.0
    }
}

fn blast_json(b: &mroce_udp::BlastReport) -> Value {
    json!({
        "datagrams": b.datagrams,
        "datagram_len": b.datagram_len,
        "paths": b.paths,
        "send_s": b.send_s,
        "send_gbps": b.send_gbps,
        "received": b.receiver.map(|r| r.datagrams),
        "received_bytes": b.receiver.map(|r| r.bytes),
        "rx_span_s": b.receiver.map(|r| r.span_ns as f64 / 1e9),
        "goodput_gbps": b.receiver.map(|r| r.goodput_gbps()),
    })
}

fn transfer(a: &SendArgs, nic: &mut Nic, streams: u16) -> SendOutcome {
    let t_start = Instant::now();
    let mut out = SendOutcome {
        integrity: "incomplete".into(),
        error: None,
        data_s: 0.0,
        wall_s: 0.0,
        receiver_goodput: None,
        checked_bytes: 0,
        writes_ok: 0,
    };
    let fail = |mut out: SendOutcome, e: String| {
        out.error = Some(e);
        out.wall_s = t_start.elapsed().as_secs_f64();
        out
    };
    // Source data and control buffers.
    let src = nic.register(a.bytes as usize, false);
    match nic.region_mut(src) {
        Ok(r) => pattern::fill(a.data_seed, 0, r),
        Err(e) => return fail(out, format!("source region: {e}")),
    }
    let ctl = nic.register(3 * CTL_LEN as usize, false);
    let peer = *a.to.ip();
    let peer_timeout = Duration::from_secs_f64(a.common.peer_timeout_s);
    let connect_deadline = Instant::now() + Duration::from_secs_f64(a.connect_timeout_s);
    // Connect (retried until the deadline: the listener may not be up yet).
    let mut conn = match nic.connect(peer) {
        Ok(c) => c,
        Err(e) => return fail(out, format!("connect: {e}")),
    };
    loop {
        match nic.poll(Duration::from_millis(50)) {
            Ok(Some(Event::Connected(c))) if c == conn => break,
            Ok(Some(Event::ConnectFailed(c))) if c == conn => {
                if Instant::now() >= connect_deadline {
                    return fail(
                        out,
                        format!("no answer from {} within {:.1} s", a.to, a.connect_timeout_s),
                    );
                }
                conn = match nic.connect(peer) {
                    Ok(c) => c,
                    Err(e) => return fail(out, format!("connect: {e}")),
                };
            }
            Ok(_) => {}
            Err(e) => return fail(out, format!("I/O: {e}")),
        }
        if Instant::now() >= connect_deadline + Duration::from_millis(100) {
            return fail(
                out,
                format!("no answer from {} within {:.1} s", a.to, a.connect_timeout_s),
            );
        }
    }
    // HELLO; receives for READY and VERDICT.
    let mut hello = [0u8; CTL_LEN as usize];
    hello[..8].copy_from_slice(HELLO);
    hello[8..12].copy_from_slice(&1u32.to_be_bytes());
    hello[16..24].copy_from_slice(&a.bytes.to_be_bytes());
    hello[24..32].copy_from_slice(&a.data_seed.to_be_bytes());
    hello[32..40].copy_from_slice(&a.msg_size.to_be_bytes());
    hello[40..42].copy_from_slice(&streams.to_be_bytes());
    if let Ok(r) = nic.region_mut(ctl) {
        r[..CTL_LEN as usize].copy_from_slice(&hello);
    }
    let posted = nic
        .post_recv(conn, 0, ctl_buf(ctl, 1), 101)
        .and_then(|_| nic.post_recv(conn, 0, ctl_buf(ctl, 2), 102))
        .and_then(|_| nic.post_send(conn, 0, ctl_buf(ctl, 0), 100));
    if let Err(e) = posted {
        return fail(out, format!("posting HELLO: {e}"));
    }
    let n_msgs = a.bytes.div_ceil(a.msg_size);
    let mut remote: Option<RemoteBuf> = None;
    let mut data_t0 = None;
    let mut verdict = false;
    // The VERDICT can overtake the last WRITE's acknowledgement: wait for both.
    while !(verdict && out.writes_ok == n_msgs) {
        let ev = match nic.poll(Duration::from_millis(50)) {
            Ok(e) => e,
            Err(e) => return fail(out, format!("I/O: {e}")),
        };
        match ev {
            Some(Event::Completion(c)) if c.conn == conn => match (c.kind, c.wr_id) {
                (WorkKind::Recv, 101) if c.status == Status::Ok => {
                    let r = nic
                        .region(ctl)
                        .map(|r| r[CTL_LEN as usize..2 * CTL_LEN as usize].to_vec());
                    let r = r.unwrap_or_default();
                    if r.len() < 24 || r[..8] != *READY {
                        return fail(out, "the listener answered with something other than READY".into());
                    }
                    if r[20..24] != [0, 0, 0, 0] {
                        return fail(out, format!("the listener refused a transfer of {} bytes", a.bytes));
                    }
                    let rb = RemoteBuf {
                        va: u64_at(&r, 8),
                        rkey: u32::from_be_bytes(r[16..20].try_into().unwrap()),
                    };
                    remote = Some(rb);
                    data_t0 = Some(Instant::now());
                    for i in 0..n_msgs {
                        let offset = i * a.msg_size;
                        let len = a.msg_size.min(a.bytes - offset) as u32;
                        let local = LocalBuf { key: src, offset, len };
                        let dst = RemoteBuf {
                            va: rb.va + offset,
                            rkey: rb.rkey,
                        };
                        if let Err(e) = nic.post_write(conn, (i % u64::from(streams)) as u16, local, dst, i) {
                            return fail(out, format!("post_write: {e}"));
                        }
                    }
                }
                (WorkKind::Recv, 102) if c.status == Status::Ok => {
                    let r = nic
                        .region(ctl)
                        .map(|r| r[2 * CTL_LEN as usize..].to_vec())
                        .unwrap_or_default();
                    if r.len() < 48 || r[..8] != *VERDICT {
                        return fail(out, "the listener answered with something other than VERDICT".into());
                    }
                    out.integrity = if r[8] == 1 { "ok".into() } else { "corrupt".into() };
                    out.checked_bytes = u64_at(&r, 16);
                    out.receiver_goodput = Some(f64::from_bits(u64_at(&r, 32)));
                    if r[8] != 1 {
                        eprintln!(
                            "mroce udp send: the listener found a mismatch at offset {}",
                            u64_at(&r, 24)
                        );
                    }
                    verdict = true;
                }
                (WorkKind::Write, _) => {
                    if c.status == Status::Ok {
                        out.writes_ok += 1;
                        if out.writes_ok == n_msgs {
                            out.data_s = data_t0.map_or(0.0, |t| t.elapsed().as_secs_f64());
                        }
                    } else {
                        let why = if c.status == Status::ConnectionFailed {
                            format!(
                                "the connection to {} failed: the peer stopped answering (WRITE {} completed with \
                                 ConnectionFailed after {} of {} WRITEs; peer_timeouts={})",
                                a.to,
                                c.wr_id,
                                out.writes_ok,
                                n_msgs,
                                nic.counter("peer_timeouts")
                            )
                        } else {
                            format!("WRITE {} completed with {:?}", c.wr_id, c.status)
                        };
                        return fail(out, why);
                    }
                }
                (_, _) if c.status != Status::Ok => {
                    return fail(
                        out,
                        format!("{:?} (wr_id {}) completed with {:?}", c.kind, c.wr_id, c.status),
                    );
                }
                _ => {}
            },
            Some(Event::Disconnected(c)) if c == conn => {
                let msg = format!(
                    "the connection to {} failed: the transport closed it (peer_timeouts={}, {} of {} WRITEs done)",
                    a.to,
                    nic.counter("peer_timeouts"),
                    out.writes_ok,
                    n_msgs
                );
                return fail(out, msg);
            }
            _ => {}
        }
        if nic.silence_of(peer).is_some_and(|d| d > peer_timeout) {
            let _ = nic.disconnect(conn);
            let msg = format!(
                "peer {} sent nothing for {:.1} s: transfer abandoned ({} of {} WRITEs done{})",
                a.to,
                peer_timeout.as_secs_f64(),
                out.writes_ok,
                n_msgs,
                if remote.is_none() { ", before READY" } else { "" }
            );
            return fail(out, msg);
        }
    }
    out.wall_s = t_start.elapsed().as_secs_f64();
    // Close politely; do not wait long for the confirmation.
    if nic.disconnect(conn).is_ok() {
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            match nic.poll(Duration::from_millis(10)) {
                Ok(Some(Event::Disconnected(c))) if c == conn => break,
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// blast
// ---------------------------------------------------------------------------------------

fn blast(a: &BlastArgs) -> ExitCode {
    let local = a.local.unwrap_or_else(|| default_local(a.to));
    let (mut nic, _pcap) = match build_nic(
        TransportKind::Mroce,
        local,
        a.to.port(),
        a.paths,
        1,
        &a.common,
        Accept::Nobody,
    ) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("mroce udp blast: {e}");
            return ExitCode::from(2);
        }
    };
    let dlen = a.datagram.unwrap_or_else(|| frame::write_datagram_len(MTU_PAYLOAD));
    let n = a.bytes.div_ceil(MTU_PAYLOAD as u64);
    let t0 = Instant::now();
    match nic.blast(*a.to.ip(), n, dlen, a.paths, Duration::from_secs(3)) {
        Ok(b) => {
            let mut v = blast_json(&b);
            v["transport"] = json!("udp-blast");
            v["bytes"] = json!(n * dlen as u64);
            v["wall_s"] = json!(t0.elapsed().as_secs_f64());
            v["runtime"] = json!(counters_map(nic.stats().pairs()));
            if a.common.json {
                print_json(&v);
            } else {
                match b.receiver {
                    Some(r) => println!(
                        "blast {local} -> {}: sent {} x {} B at {:.2} Gb/s; received {} ({:.2}%) at {:.2} Gb/s",
                        a.to,
                        b.datagrams,
                        b.datagram_len,
                        b.send_gbps,
                        r.datagrams,
                        100.0 * r.datagrams as f64 / b.datagrams.max(1) as f64,
                        r.goodput_gbps()
                    ),
                    None => println!(
                        "blast {local} -> {}: sent {} x {} B at {:.2} Gb/s; the listener did not answer",
                        a.to, b.datagrams, b.datagram_len, b.send_gbps
                    ),
                }
            }
            if b.receiver.is_none() {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mroce udp blast: {e}");
            ExitCode::from(2)
        }
    }
}
