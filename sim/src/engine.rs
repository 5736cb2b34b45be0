//! The event loop.
//!
//! # Model
//!
//! * **Clock.** Picoseconds internally (serialisation at any rate is exact to 1 ps);
//!   transports see nanoseconds. Events sit in a queue ([`crate::queue`]) ordered by
//!   `(time, seq)` with a global insertion counter, so a run is a pure function of its
//!   configuration and seed.
//! * **NIC ports.** A NIC has one port per plane it serves. The driver pulls a frame from
//!   `poll_transmit` only while some port is idle and no port has [`NIC_PORT_QUEUE`] frames
//!   waiting. The transport, not the driver, picks the plane, among the planes whose port is
//!   idle or has nothing waiting (`Transport::set_ready_planes` before each pull), as a
//!   multi-port NIC does. A port serialises at the host port rate; the frame then propagates
//!   to the leaf.
//! * **Switch output queues** are FIFO, store and forward, computed analytically: a frame
//!   entering a queue at `t` finishes serialising at `max(t, busy_until) + len / rate` and
//!   arrives at the next node one propagation delay later (one event per hop). Occupancy is
//!   the bytes of frames that have not finished serialising; a frame that would push it past
//!   the drop-tail limit is dropped; a frame arriving while occupancy exceeds the ECN threshold
//!   is marked CE (if ECT) with `wire::set_ecn`. Random loss (of the link's scope) is drawn
//!   when the frame leaves the queue: it used the link but never arrives.
//! * **Routing.** The source leaf picks the spine by `ecmp_hash(frame) % spines` (CRC-32 of
//!   the 5-tuple: the UDP source port is the entropy); spines and destination leaves forward
//!   by destination address. Same-leaf traffic turns at the leaf.
//! * **Failures.** A failed link drops every frame queued on it or in flight over it, and
//!   every frame offered to it until repaired (a NIC port on a dead link still serialises, and
//!   the frame is lost). Optionally a leaf removes a dead uplink from its ECMP group after a
//!   local detection delay.
//! * **Applications.** Connections are opened before the workload starts (one at a time per
//!   receiving NIC, so each accepted connection is paired with its initiator). A flow is one
//!   WRITE, posted when its dependencies are met; its receiver completion (`WriteReceived`,
//!   in order per connection) marks it received.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;

use mroce_model::endpoint::EcnReroute;
use mroce_model::memory::{Access, MrKey};
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, Status, Transport, WorkKind};
use mroce_model::wire::{self, ecn, opcode};
use serde::Serialize;

use crate::fabric::{ecmp_hash_with, ecmp_pick, FabricConfig, LinkClass, LossScope};
use crate::pcap::{PcapWriter, TsResolution};
use crate::queue::{Ev, EventQueue};
use crate::rng::{derive_seed, fill_pattern, pattern_word, Chance, Rng};
use crate::workload::{Check, Dep, OnRecv, Workload};
use crate::{Factory, Kind, TransportParams};

/// Frames that may wait behind a busy NIC port.
pub const NIC_PORT_QUEUE: usize = 2;
/// Bytes of headroom in a frame buffer beyond the MTU payload.
const FRAME_HEADROOM: usize = 512;
/// Events processed without simulated time advancing before the run is declared livelocked.
const LIVELOCK_EVENTS: u64 = 5_000_000;
/// Simulated time allowed for opening the connections.
const SETUP_LIMIT_PS: u64 = 200_000_000_000;
/// Events between two progress callbacks.
const PROGRESS_EVERY: u64 = 1 << 16;

/// Everything that defines a run besides the workload.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The fabric.
    pub fabric: FabricConfig,
    /// Transport.
    pub kind: Kind,
    /// Paths per connection (mroce).
    pub paths: u16,
    /// mroce's policy for ECN re-route verdicts (`EndpointConfig::ecn_reroute`).
    pub ecn_reroute: EcnReroute,
    /// mroce's connection limit before the first rate hint (`EndpointConfig::initial_conn_limit`).
    pub initial_conn_limit: u16,
    /// mroce's tail hedge (`EndpointConfig::tail_hedge`).
    pub tail_hedge: bool,
    /// mroce's immediate ACKs for the first flight (`EndpointConfig::first_flight_ack_req`).
    pub first_flight_ack_req: bool,
    /// Configure mroce's NICs with the fabric's unloaded RTT (`EndpointConfig::fabric_rtt_ns`,
    /// [`FabricConfig::unloaded_rtt_ns`]); off: rate hints use measured RTTs only.
    pub fabric_rtt: bool,
    /// mroce's NICs announce their fan-in share to their peers (`EndpointConfig::announce_fan_in`).
    /// Like `fabric_rtt`, off in [`RunConfig::new`] (the NIC's default) and on in the experiments.
    pub announce_fan_in: bool,
    /// RoCEv2's retransmission timeout, ns (`None`: `RoceConfig`'s default, 50 µs).
    pub rocev2_rto_ns: Option<u64>,
    /// mroce's transmit order across connections (`EndpointConfig::tx_order`).
    pub tx_order: mroce_model::tx_order::TxOrder,
    /// RoCEv2's transmit order across QPs (`RoceConfig::tx_order`).
    pub rocev2_tx_order: mroce_model::tx_order::TxOrder,
    /// Payload bytes per packet.
    pub mtu: u16,
    /// Seed of every random choice.
    pub seed: u64,
    /// Simulated-time limit after the workload starts, ns.
    pub time_limit_ns: u64,
    /// Timeline bin, ns (0: no timeline).
    pub sample_ns: u64,
    /// Record per-source arrivals and the queues feeding this host.
    pub observe_host: Option<usize>,
    /// Write every frame sent or received by this host to this pcap file.
    pub pcap: Option<(PathBuf, usize)>,
    /// Record which spine every 5-tuple took (for ECMP determinism checks; <= 64 spines).
    pub trace_ecmp: bool,
    /// Measure the heap bytes the connections allocate.
    pub measure_state: bool,
}

impl RunConfig {
    /// A run of `kind` on `fabric` with default knobs.
    pub fn new(fabric: FabricConfig, kind: Kind, seed: u64) -> Self {
        RunConfig {
            fabric,
            kind,
            paths: mroce_model::params::PATHS as u16,
            ecn_reroute: EcnReroute::default(),
            initial_conn_limit: mroce_model::params::CONN_LIMIT_INIT_PKTS,
            tail_hedge: mroce_model::endpoint::EndpointConfig::default().tail_hedge,
            first_flight_ack_req: mroce_model::endpoint::EndpointConfig::default().first_flight_ack_req,
            fabric_rtt: false,
            announce_fan_in: false,
            rocev2_rto_ns: None,
            tx_order: mroce_model::endpoint::EndpointConfig::default().tx_order,
            rocev2_tx_order: mroce_model::rocev2::RoceConfig::default().tx_order,
            mtu: mroce_model::params::DEFAULT_MTU_PAYLOAD,
            seed,
            time_limit_ns: 1_000_000_000,
            sample_ns: 0,
            observe_host: None,
            pcap: None,
            trace_ecmp: false,
            measure_state: false,
        }
    }

    /// NICs per host.
    pub fn rails(&self) -> usize {
        if self.kind.spans_planes() {
            1
        } else {
            self.fabric.planes as usize
        }
    }

    /// Host/NIC layout.
    pub fn layout(&self) -> crate::workload::Layout {
        crate::workload::Layout {
            hosts: self.fabric.hosts,
            rails: self.rails(),
        }
    }
}

/// Addresses of rail `rail` of `host` (`planes` ports for a plane-spanning NIC, or the single
/// port of plane `rail`). Plane `p`'s address of host `h` is `10.(h+1)>>8.p.(h+1)&255`.
pub fn nic_addr(host: usize, rail: usize, spans: bool, planes: u8) -> NicAddr {
    let id = host + 1;
    let mac = [0x02, 0x00, (id >> 8) as u8, id as u8, rail as u8, 0x01];
    if spans {
        NicAddr::with_planes(mac, [10, (id >> 8) as u8, 0, id as u8], planes)
    } else {
        let mut a = NicAddr::with_planes(mac, [10, (id >> 8) as u8, 0, id as u8], 1);
        a.ips[0] = [10, (id >> 8) as u8, rail as u8, id as u8];
        a
    }
}

/// Host and plane of an address of [`nic_addr`].
#[inline]
pub fn host_of_ip(ip: &[u8]) -> Option<(usize, u8)> {
    if ip[0] != 10 {
        return None;
    }
    let id = (usize::from(ip[1]) << 8) | usize::from(ip[3]);
    id.checked_sub(1).map(|h| (h, ip[2]))
}

/// Per-flow outcome (times relative to the workload start).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlowRecord {
    /// Logical flow.
    pub group: u32,
    /// Bytes.
    pub bytes: u32,
    /// Sending host.
    pub src_host: u32,
    /// Receiving host.
    pub dst_host: u32,
    /// Posted, ns.
    pub posted_ns: Option<u64>,
    /// Sender completion, ns.
    pub sent_ns: Option<u64>,
    /// Receiver completion, ns.
    pub recv_ns: Option<u64>,
}

/// Network counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NetStats {
    /// Frames NICs transmitted.
    pub frames_tx: u64,
    /// Frames delivered to NICs.
    pub frames_delivered: u64,
    /// Frames lost to random loss.
    pub drops_loss: u64,
    /// Frames dropped by full queues.
    pub drops_queue: u64,
    /// Frames lost to failed links or switches.
    pub drops_failure: u64,
    /// Frames addressed to nobody, or sent on a port of the wrong plane.
    pub drops_misroute: u64,
    /// Frames still queued or in flight when the run ended.
    pub in_flight_end: u64,
    /// Frames marked CE.
    pub ecn_marks: u64,
    /// Link traversals (hops).
    pub hops: u64,
    /// Arrivals of frames that a switch's output queue sent over its link (every hop but the
    /// NIC's). One event here covers the queue's service and the link's delay, which
    /// uet-htsim schedules as two (a queue's `completeService`, a pipe's `doNextEvent`), so
    /// `events + switch_arrivals` counts this run's work in htsim's events.
    pub switch_arrivals: u64,
    /// Payload bytes of data frames lost to failures.
    pub data_bytes_lost_failure: u64,
    /// Payload bytes of data frames lost to random loss and queue drops.
    pub data_bytes_lost_other: u64,
    /// Drops in queues towards hosts (leaf -> host).
    pub drops_queue_host_down: u64,
    /// Largest occupancy seen in any queue, bytes.
    pub peak_queue_bytes: u64,
    /// Path-health events reported by the NICs (down, up).
    pub path_down_events: u64,
    /// Path-health events reported by the NICs (up).
    pub path_up_events: u64,
}

/// Time series sampled every `bin_ns` from the workload start.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// Bin width, ns.
    pub bin_ns: u64,
    /// Payload bytes newly placed into memory (all NICs) per bin: goodput.
    pub placed: Vec<u64>,
    /// Data payload bytes arriving at hosts per bin, per plane: `[bin][plane]`.
    pub plane_rx: Vec<Vec<u64>>,
    /// Observed host: data payload bytes arriving per source host, `[bin][host]`.
    pub observed_rx: Vec<Vec<u64>>,
    /// Observed host: peak occupancy of the queues feeding it (summed over planes) per bin.
    pub observed_queue: Vec<u64>,
}

/// Result of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Transport.
    pub transport: String,
    /// Workload name.
    pub workload: String,
    /// Every flow completed on both sides.
    pub complete: bool,
    /// "ok", "incomplete", or "corrupt: ..." (content checks).
    pub integrity: String,
    /// Why the run stopped early.
    pub failure: Option<String>,
    /// Connections opened.
    pub connections: usize,
    /// Simulated time spent opening connections, ns.
    pub setup_ns: u64,
    /// Last receiver completion, ns after the start (the collective completion time).
    pub last_recv_ns: u64,
    /// Simulated time at the end, ns after the start.
    pub end_ns: u64,
    /// Flows.
    pub flows: Vec<FlowRecord>,
    /// Payload bytes posted.
    pub bytes_posted: u64,
    /// Payload bytes reported by receiver completions.
    pub bytes_delivered: u64,
    /// Events processed (setup included).
    pub events: u64,
    /// Wall-clock seconds of the event loop.
    pub loop_wall_s: f64,
    /// Wall-clock seconds of the whole run (setup, fill and checks included).
    pub wall_s: f64,
    /// `events / loop_wall_s`.
    pub events_per_s: f64,
    /// CPU seconds of the event loop's thread (user + system; `None` if the OS has no
    /// per-thread CPU clock): on a shared machine the one-core figure.
    pub loop_cpu_s: Option<f64>,
    /// `events / loop_cpu_s`.
    pub events_per_cpu_s: Option<f64>,
    /// Network counters.
    pub net: NetStats,
    /// Sum of every NIC counter.
    pub counters: BTreeMap<String, u64>,
    /// Timeline (empty without sampling).
    pub timeline: Timeline,
    /// Peak occupancy of the queues feeding the observed host (each plane), bytes.
    pub observed_peak_queue: u64,
    /// Queue drops towards the observed host.
    pub observed_drops: u64,
    /// Queue drops of frames to the observed host, at any hop, by source host (empty without
    /// an observed host): in an incast, how the full queues shared out the losses.
    pub observed_drops_by_source: Vec<u64>,
    /// Heap bytes per connection per NIC end (measured around connection setup).
    pub state_bytes_per_connection: Option<f64>,
    /// ECMP trace: (plane, src ip, dst ip, sport) -> bitmask of spines used.
    #[serde(skip)]
    pub ecmp_trace: BTreeMap<(u8, u32, u32, u16), u64>,
}

impl RunReport {
    /// A counter summed over NICs (0 if absent).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------------------

const EV_ARRIVE: u64 = 0;
const EV_PORT_DONE: u64 = 1;
const EV_TIMER: u64 = 2;
const EV_CTL: u64 = 3;
const ARG_BITS: u32 = 24;
const KIND_SHIFT: u32 = ARG_BITS;
const SEQ_SHIFT: u32 = ARG_BITS + 3;

impl Ev {
    #[inline]
    fn kind(&self) -> u64 {
        (self.key >> KIND_SHIFT) & 7
    }
    #[inline]
    fn arg(&self) -> u32 {
        (self.key & ((1 << ARG_BITS) - 1)) as u32
    }
}

const STAGE_LEAF_IN: u8 = 0;
const STAGE_SPINE: u8 = 1;
const STAGE_LEAF_OUT: u8 = 2;
const STAGE_HOST: u8 = 3;

#[derive(Clone, Copy, Default)]
struct Meta {
    len: u32,
    link: u32,
    epoch: u32,
    dst_nic: u32,
    hash: u32,
    payload: u32,
    src_host: u32,
    dst_host: u32,
    spine: u16,
    plane: u8,
    stage: u8,
}

struct Pool {
    bufs: Vec<Box<[u8]>>,
    meta: Vec<Meta>,
    free: Vec<u32>,
    buf_len: usize,
    live: u64,
}

impl Pool {
    #[inline]
    fn alloc(&mut self) -> u32 {
        self.live += 1;
        if let Some(id) = self.free.pop() {
            return id;
        }
        self.bufs.push(vec![0u8; self.buf_len].into_boxed_slice());
        self.meta.push(Meta::default());
        (self.bufs.len() - 1) as u32
    }
    #[inline]
    fn release(&mut self, id: u32) {
        self.live -= 1;
        self.free.push(id);
    }
    #[inline]
    fn frame(&self, id: u32) -> &[u8] {
        &self.bufs[id as usize][..self.meta[id as usize].len as usize]
    }
}

struct Link {
    ps_per_byte: f64,
    delay_ps: u64,
    busy_until: u64,
    q: VecDeque<(u64, u32)>,
    bytes: u64,
    limit: u64,
    ecn: u64,
    loss: Chance,
    down: u16,
    epoch: u32,
    peak: u64,
    drops_queue: u64,
}

impl Link {
    #[inline]
    fn ser(&self, len: u32) -> u64 {
        (((u64::from(len) + crate::fabric::WIRE_OVERHEAD) as f64 * self.ps_per_byte).round() as u64).max(1)
    }
    #[inline]
    fn drain(&mut self, now: u64) {
        while let Some(&(f, b)) = self.q.front() {
            if f > now {
                break;
            }
            self.bytes -= u64::from(b);
            self.q.pop_front();
        }
    }
}

#[derive(Default)]
struct Port {
    cur: Option<u32>,
    q: VecDeque<u32>,
}

struct Nic {
    t: Box<dyn Transport>,
    host: u32,
    /// Fabric plane of each port.
    port_plane: Vec<u8>,
    ports: Vec<Port>,
    timer_ps: Option<u64>,
    sched_ps: Option<u64>,
    regions: Vec<MrKey>,
    /// Local connection id -> workload connection, for connections this NIC initiated.
    tx_conns: HashMap<ConnId, u32>,
    /// Local connection id -> workload connection, for connections this NIC accepted.
    rx_conns: HashMap<ConnId, u32>,
    /// Workload connection whose CONNECT this NIC is waiting to accept.
    accepting: Option<u32>,
    /// Connections still to open towards this NIC.
    to_accept: VecDeque<u32>,
    placed_last: u64,
    dirty: bool,
}

enum Ctl {
    Fail(usize),
    Repair(usize),
    EcmpRemove(usize),
    Sample,
    Release(u32),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Setup,
    Running,
}

struct ConnRt {
    src_id: ConnId,
    halves: u8,
    fifo: VecDeque<u32>,
}

struct Sim<'a> {
    cfg: &'a RunConfig,
    w: &'a Workload,
    f: &'a FabricConfig,
    nics: Vec<Nic>,
    /// nic_of[host * planes + plane] = (nic, port).
    nic_of: Vec<(u32, u8)>,
    links: Vec<Link>,
    host_port_ps_per_byte: f64,
    pool: Pool,
    heap: EventQueue,
    seq: u64,
    now: u64,
    ctl: Vec<Ctl>,
    rng: Rng,
    phase: Phase,
    t0: u64,
    setup_ns: u64,
    events: u64,
    // Workload runtime.
    conns: Vec<ConnRt>,
    conns_ready: usize,
    deps_left: Vec<u32>,
    dependents_recv: Vec<Vec<u32>>,
    dependents_sent: Vec<Vec<u32>>,
    posted: Vec<Option<u64>>,
    sent: Vec<Option<u64>>,
    recv: Vec<Option<u64>>,
    flows_done: usize,
    to_post: Vec<u32>,
    dirty: Vec<u32>,
    scratch: Vec<u8>,
    bytes_delivered: u64,
    last_recv: u64,
    failure: Option<String>,
    // ECMP groups after local repair: (plane * leaves + leaf) -> live spines.
    ecmp_live: Vec<Option<Vec<u16>>>,
    // Observation.
    net: NetStats,
    timeline: Timeline,
    bin_plane: Vec<u64>,
    bin_src: Vec<u64>,
    drops_src: Vec<u64>,
    bin_queue: u64,
    observed_links: Vec<usize>,
    observed_peak: u64,
    pcap: Option<PcapWriter<BufWriter<File>>>,
    pcap_host: usize,
    trace: BTreeMap<(u8, u32, u32, u16), u64>,
}

/// Keep freed memory in the process instead of returning it to the kernel, for a process that
/// runs many simulations one after the other (the CLI calls it once; process-wide). Each run
/// registers ~1 GiB of regions and frees it at the end: glibc serves such blocks with `mmap` and
/// unmaps them on free, so every run faulted its regions in afresh (kernel time was ~40% of the
/// wall time of `mroce sim loss-sweep`). With blocks up to 32 MiB taken from the heap and no
/// trimming below 2 GiB, the next run reuses pages already mapped.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_freed_memory() {
    // SAFETY: mallopt only changes glibc allocator thresholds; any value is valid.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// Keep freed memory in the process (a no-op off glibc).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_memory() {}

/// Heap bytes in use (glibc `mallinfo2`), for the per-connection state measurement.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_in_use() -> Option<u64> {
    #[repr(C)]
    struct MallInfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> MallInfo2;
    }
    // SAFETY: mallinfo2 takes no arguments and returns a plain struct by value.
    let m = unsafe { mallinfo2() };
    Some((m.uordblks + m.hblkhd) as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_in_use() -> Option<u64> {
    None
}

/// Progress of a run, for progress bars.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Simulated ns since the workload start (0 during setup).
    pub sim_ns: u64,
    /// Flows completed.
    pub flows_done: usize,
    /// Flows in total.
    pub flows: usize,
}

/// Run `w` on the fabric of `cfg` with NICs from `factory`.
pub fn run(
    cfg: &RunConfig,
    w: &Workload,
    factory: &mut Factory<'_>,
    progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<RunReport, String> {
    let wall0 = Instant::now();
    cfg.fabric.validate()?;
    let layout = cfg.layout();
    if w.regions.len() != layout.nics() {
        return Err(format!(
            "workload has {} NICs, the fabric {}",
            w.regions.len(),
            layout.nics()
        ));
    }
    let mut sim = Sim::new(cfg, w, factory)?;
    sim.setup_memory()?;
    let heap0 = if cfg.measure_state { heap_in_use() } else { None };
    sim.start_connections()?;
    let loop0 = Instant::now();
    let cpu0 = thread_cpu_s();
    let mut heap1 = None;
    sim.run_loop(progress, heap0.is_some(), &mut heap1)?;
    // the CPU interval lies inside the wall interval, so CPU time never exceeds wall time
    let loop_cpu = cpu0.and_then(|c0| Some(thread_cpu_s()? - c0));
    let loop_s = loop0.elapsed().as_secs_f64();
    if let Some(p) = sim.pcap.as_mut() {
        p.flush().map_err(|e| format!("pcap: {e}"))?;
    }
    let state = match (heap0, heap1) {
        (Some(a), Some(b)) if !w.conns.is_empty() => Some(b.saturating_sub(a) as f64 / (2 * w.conns.len()) as f64),
        _ => None,
    };
    let integrity = sim.check();
    Ok(sim.report(integrity, wall0.elapsed().as_secs_f64(), (loop_s, loop_cpu), state))
}

/// CPU time of the calling thread, seconds (`CLOCK_THREAD_CPUTIME_ID`: exact, where
/// `/proc/thread-self/schedstat` lags by up to a scheduler tick on short runs).
pub fn thread_cpu_s() -> Option<f64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

impl<'a> Sim<'a> {
    fn new(cfg: &'a RunConfig, w: &'a Workload, factory: &mut Factory<'_>) -> Result<Self, String> {
        let f = &cfg.fabric;
        let planes = f.planes as usize;
        let layout = cfg.layout();
        let spans = cfg.kind.spans_planes();
        let mut nics = Vec::with_capacity(layout.nics());
        let mut nic_of = vec![(0u32, 0u8); f.hosts * planes];
        let mut conns_per_nic = vec![0u32; layout.nics()];
        for c in &w.conns {
            conns_per_nic[c.src as usize] += 1;
            conns_per_nic[c.dst as usize] += 1;
        }
        for h in 0..f.hosts {
            for r in 0..layout.rails {
                let addr = nic_addr(h, r, spans, f.planes);
                let nic = layout.nic(h, r);
                let port_gbps = f.host_port_gbps();
                let nports = if spans { planes } else { 1 };
                let params = TransportParams {
                    paths: cfg.paths,
                    mtu: cfg.mtu,
                    rx_capacity_mbps: (port_gbps * nports as f64 * 1000.0).round() as u32,
                    max_connections: conns_per_nic[nic as usize].max(16) + 16,
                    ecn_reroute: cfg.ecn_reroute,
                    initial_conn_limit: cfg.initial_conn_limit,
                    tail_hedge: cfg.tail_hedge,
                    first_flight_ack_req: cfg.first_flight_ack_req,
                    fabric_rtt_ns: if cfg.fabric_rtt { f.unloaded_rtt_ns(cfg.mtu) } else { 0 },
                    announce_fan_in: cfg.announce_fan_in,
                    rocev2_rto_ns: cfg.rocev2_rto_ns,
                    tx_order: cfg.tx_order,
                    rocev2_tx_order: cfg.rocev2_tx_order,
                };
                let t = factory(cfg.kind, addr, derive_seed(cfg.seed, 0x1C00_0000 | nic as u64), &params)?;
                let port_plane: Vec<u8> = if spans {
                    (0..planes as u8).collect()
                } else {
                    vec![r as u8]
                };
                for (port, &p) in port_plane.iter().enumerate() {
                    nic_of[h * planes + p as usize] = (nic, port as u8);
                }
                nics.push(Nic {
                    t,
                    host: h as u32,
                    ports: port_plane.iter().map(|_| Port::default()).collect(),
                    port_plane,
                    timer_ps: None,
                    sched_ps: None,
                    regions: Vec::new(),
                    tx_conns: HashMap::new(),
                    rx_conns: HashMap::new(),
                    accepting: None,
                    to_accept: VecDeque::new(),
                    placed_last: 0,
                    dirty: false,
                });
            }
        }
        let nlinks = f.links_per_plane() * planes;
        let mut links = Vec::with_capacity(nlinks);
        for li in 0..nlinks {
            let (_, class, gbps) = f.link_info(li);
            let bytes_per_us = gbps * 1000.0 / 8.0;
            let frame = u64::from(cfg.mtu) + 200;
            let lossy = match f.loss_scope {
                LossScope::All => true,
                LossScope::TorToHost => class == LinkClass::HostDown,
                LossScope::Fabric => matches!(class, LinkClass::LeafUp | LinkClass::SpineDown),
            };
            let delay_ns = match class {
                LinkClass::HostUp | LinkClass::HostDown => f.host_link_delay_ns,
                _ => f.fabric_link_delay_ns,
            };
            links.push(Link {
                ps_per_byte: 8_000.0 / gbps,
                delay_ps: delay_ns * 1000,
                busy_until: 0,
                q: VecDeque::new(),
                bytes: 0,
                limit: ((f.buffer_us * bytes_per_us) as u64).max(4 * frame),
                ecn: ((f.ecn_us * bytes_per_us) as u64).max(frame),
                loss: if lossy { Chance::new(f.loss) } else { Chance::new(0.0) },
                down: 0,
                epoch: 0,
                peak: 0,
                drops_queue: 0,
            });
        }
        let pcap = match &cfg.pcap {
            Some((path, host)) => {
                if *host >= f.hosts {
                    return Err(format!("pcap host {host} does not exist"));
                }
                let file = File::create(path).map_err(|e| format!("pcap {}: {e}", path.display()))?;
                Some(
                    PcapWriter::new(BufWriter::with_capacity(1 << 20, file), TsResolution::Nanos)
                        .map_err(|e| format!("pcap {}: {e}", path.display()))?,
                )
            }
            None => None,
        };
        let nflows = w.flows.len();
        let mut deps_left = vec![0u32; nflows];
        let mut dependents_recv = vec![Vec::new(); nflows];
        let mut dependents_sent = vec![Vec::new(); nflows];
        for (i, fl) in w.flows.iter().enumerate() {
            if fl.conn as usize >= w.conns.len() {
                return Err(format!("flow {i} names connection {} of {}", fl.conn, w.conns.len()));
            }
            for d in &fl.deps {
                deps_left[i] += 1;
                match *d {
                    Dep::Received(x) => dependents_recv
                        .get_mut(x as usize)
                        .ok_or("bad dependency")?
                        .push(i as u32),
                    Dep::Sent(x) => dependents_sent
                        .get_mut(x as usize)
                        .ok_or("bad dependency")?
                        .push(i as u32),
                }
            }
        }
        let mut observed_links = Vec::new();
        if let Some(h) = cfg.observe_host {
            if h >= f.hosts {
                return Err(format!("observed host {h} does not exist"));
            }
            for p in 0..planes {
                observed_links.push(f.host_down(p, h));
            }
        }
        let timeline = Timeline {
            bin_ns: cfg.sample_ns,
            ..Default::default()
        };
        Ok(Sim {
            cfg,
            w,
            f,
            nics,
            nic_of,
            links,
            host_port_ps_per_byte: 8_000.0 / f.host_port_gbps(),
            pool: Pool {
                bufs: Vec::new(),
                meta: Vec::new(),
                free: Vec::new(),
                buf_len: usize::from(cfg.mtu) + FRAME_HEADROOM,
                live: 0,
            },
            heap: EventQueue::with_capacity(1 << 16),
            seq: 0,
            now: 0,
            ctl: Vec::new(),
            rng: Rng::new(derive_seed(cfg.seed, 0x10_55)),
            phase: Phase::Setup,
            t0: 0,
            setup_ns: 0,
            events: 0,
            conns: w
                .conns
                .iter()
                .map(|_| ConnRt {
                    src_id: 0,
                    halves: 0,
                    fifo: VecDeque::new(),
                })
                .collect(),
            conns_ready: 0,
            deps_left,
            dependents_recv,
            dependents_sent,
            posted: vec![None; nflows],
            sent: vec![None; nflows],
            recv: vec![None; nflows],
            flows_done: 0,
            to_post: Vec::new(),
            dirty: Vec::new(),
            scratch: Vec::new(),
            bytes_delivered: 0,
            last_recv: 0,
            failure: None,
            ecmp_live: vec![None; planes * f.leaves],
            net: NetStats::default(),
            timeline,
            bin_plane: vec![0; planes],
            bin_src: if cfg.observe_host.is_some() {
                vec![0; f.hosts]
            } else {
                Vec::new()
            },
            drops_src: if cfg.observe_host.is_some() {
                vec![0; f.hosts]
            } else {
                Vec::new()
            },
            bin_queue: 0,
            observed_links,
            observed_peak: 0,
            pcap,
            pcap_host: cfg.pcap.as_ref().map_or(usize::MAX, |p| p.1),
            trace: BTreeMap::new(),
        })
    }

    #[inline]
    fn push(&mut self, t: u64, kind: u64, arg: u32) {
        self.seq += 1;
        debug_assert!(arg < 1 << ARG_BITS);
        self.heap.push(Ev {
            t,
            key: self.seq << SEQ_SHIFT | kind << KIND_SHIFT | u64::from(arg),
        });
    }

    fn push_ctl(&mut self, t: u64, c: Ctl) {
        self.ctl.push(c);
        let i = (self.ctl.len() - 1) as u32;
        self.push(t, EV_CTL, i);
    }

    #[inline]
    fn now_ns(&self) -> u64 {
        self.now / 1000
    }

    // -----------------------------------------------------------------------------------
    // Setup: memory, neighbours, connections
    // -----------------------------------------------------------------------------------

    fn setup_memory(&mut self) -> Result<(), String> {
        for (n, specs) in self.w.regions.iter().enumerate() {
            let nic = &mut self.nics[n];
            for r in specs {
                let len = usize::try_from(r.len).map_err(|_| "region too large")?;
                let key = nic.t.memory_mut().register(
                    len,
                    Access {
                        remote_write: r.remote_write,
                    },
                );
                let buf = nic
                    .t
                    .memory_mut()
                    .local_mut(key, 0, r.len)
                    .map_err(|e| format!("region: {e}"))?;
                match r.pattern {
                    Some(seed) => fill_pattern(seed, 0, buf),
                    None => {
                        // Fault the pages in now, not inside the timed loop.
                        for i in (0..buf.len()).step_by(4096) {
                            buf[i] = 0;
                        }
                    }
                }
                nic.regions.push(key);
            }
        }
        Ok(())
    }

    fn start_connections(&mut self) -> Result<(), String> {
        // Neighbour tables: every NIC knows the NICs it talks to.
        let mut peers: Vec<Vec<u32>> = vec![Vec::new(); self.nics.len()];
        for c in &self.w.conns {
            peers[c.src as usize].push(c.dst);
            peers[c.dst as usize].push(c.src);
        }
        for (n, mut list) in peers.into_iter().enumerate() {
            list.sort_unstable();
            list.dedup();
            for p in list {
                let a = *self.nics[p as usize].t.addr();
                self.nics[n].t.add_peer(a);
            }
        }
        for (i, c) in self.w.conns.iter().enumerate() {
            self.nics[c.dst as usize].to_accept.push_back(i as u32);
        }
        for n in 0..self.nics.len() {
            self.open_next(n)?;
        }
        if self.w.conns.is_empty() {
            self.start_workload();
        }
        self.flush();
        Ok(())
    }

    /// Open the next connection towards NIC `d`, if any and none is in progress.
    fn open_next(&mut self, d: usize) -> Result<(), String> {
        if self.nics[d].accepting.is_some() {
            return Ok(());
        }
        let Some(c) = self.nics[d].to_accept.pop_front() else {
            return Ok(());
        };
        let spec = self.w.conns[c as usize];
        let peer = *self.nics[d].t.addr();
        let now = self.now_ns();
        let s = spec.src as usize;
        let id = self.nics[s].t.connect(now, peer).map_err(|e| format!("connect: {e}"))?;
        self.nics[s].tx_conns.insert(id, c);
        self.conns[c as usize].src_id = id;
        self.nics[d].accepting = Some(c);
        self.mark(s);
        Ok(())
    }

    fn conn_half(&mut self, c: u32) {
        let rt = &mut self.conns[c as usize];
        rt.halves += 1;
        if rt.halves == 2 {
            self.conns_ready += 1;
            let d = self.w.conns[c as usize].dst as usize;
            if let Err(e) = self.open_next(d) {
                self.failure.get_or_insert(e);
            }
            if self.conns_ready == self.w.conns.len() {
                self.start_workload();
            }
        }
    }

    fn start_workload(&mut self) {
        self.phase = Phase::Running;
        self.t0 = self.now;
        self.setup_ns = self.now / 1000;
        if self.cfg.sample_ns > 0 {
            self.placed_snapshot();
            self.push_ctl(self.now + self.cfg.sample_ns * 1000, Ctl::Sample);
        }
        for (i, fl) in self.cfg.fabric.failures.iter().enumerate() {
            self.push_ctl(self.t0 + fl.at_ns * 1000, Ctl::Fail(i));
            if let Some(u) = fl.until_ns {
                self.push_ctl(self.t0 + u * 1000, Ctl::Repair(i));
            }
        }
        for i in 0..self.w.flows.len() {
            if self.deps_left[i] == 0 {
                self.ready(i as u32);
            }
        }
    }

    fn ready(&mut self, f: u32) {
        let at = self.t0 + self.w.flows[f as usize].start_ns * 1000;
        if at <= self.now {
            self.to_post.push(f);
        } else {
            self.push_ctl(at, Ctl::Release(f));
        }
    }

    fn post(&mut self, f: u32) {
        let fl = &self.w.flows[f as usize];
        let spec = self.w.conns[fl.conn as usize];
        let (s, d) = (spec.src as usize, spec.dst as usize);
        let dkey = self.nics[d].regions[fl.dst_region as usize];
        let skey = self.nics[s].regions[fl.src_region as usize];
        let conn = self.conns[fl.conn as usize].src_id;
        let local = LocalBuf {
            key: skey,
            offset: fl.src_off,
            len: fl.len,
        };
        let remote = RemoteBuf {
            va: dkey.va + fl.dst_off,
            rkey: dkey.rkey,
        };
        match self.nics[s].t.post_write(conn, 0, local, remote, u64::from(f)) {
            Ok(()) => {
                self.posted[f as usize] = Some(self.now);
                self.conns[fl.conn as usize].fifo.push_back(f);
                self.mark(s);
            }
            Err(e) => {
                self.failure.get_or_insert(format!("post_write of flow {f}: {e}"));
            }
        }
    }

    #[inline]
    fn mark(&mut self, n: usize) {
        if !self.nics[n].dirty {
            self.nics[n].dirty = true;
            self.dirty.push(n as u32);
        }
    }

    /// Service every NIC marked dirty (and post every ready flow) until quiet.
    fn flush(&mut self) {
        loop {
            if !self.to_post.is_empty() {
                let v = std::mem::take(&mut self.to_post);
                for f in &v {
                    self.post(*f);
                }
                let mut v = v;
                v.clear();
                if self.to_post.is_empty() {
                    self.to_post = v;
                }
                continue;
            }
            let Some(n) = self.dirty.pop() else { break };
            self.nics[n as usize].dirty = false;
            self.service(n as usize);
        }
    }

    /// Drain events, pull frames while a port is free, refresh the timer.
    fn service(&mut self, n: usize) {
        self.drain_events(n);
        self.pump(n);
        self.drain_events(n);
        let nic = &mut self.nics[n];
        nic.timer_ps = nic.t.poll_timeout().map(|ns| ns.saturating_mul(1000));
        if let Some(t) = nic.timer_ps {
            if nic.sched_ps.is_none_or(|s| t < s) {
                nic.sched_ps = Some(t);
                let t = t.max(self.now);
                self.push(t, EV_TIMER, n as u32);
            }
        }
    }

    fn drain_events(&mut self, n: usize) {
        while let Some(ev) = self.nics[n].t.poll_event() {
            self.on_event(n, ev);
        }
    }

    fn on_event(&mut self, n: usize, ev: Event) {
        match ev {
            Event::Connected(id) => match self.nics[n].tx_conns.get(&id) {
                Some(&c) => self.conn_half(c),
                None => {
                    self.failure
                        .get_or_insert(format!("NIC {n}: Connected({id}) for no connection it opened"));
                }
            },
            Event::Accepted(id) => match self.nics[n].accepting.take() {
                Some(c) => {
                    self.nics[n].rx_conns.insert(id, c);
                    self.conn_half(c);
                }
                None => {
                    self.failure
                        .get_or_insert(format!("NIC {n}: unexpected Accepted({id})"));
                }
            },
            Event::ConnectFailed(id) => {
                self.failure
                    .get_or_insert(format!("NIC {n}: connection {id} failed to connect"));
            }
            Event::Disconnected(id) => {
                self.failure
                    .get_or_insert(format!("NIC {n}: connection {id} disconnected"));
            }
            Event::PathHealth { up, .. } => {
                if up {
                    self.net.path_up_events += 1;
                } else {
                    self.net.path_down_events += 1;
                }
            }
            Event::Completion(c) => match c.kind {
                WorkKind::Write => {
                    let f = c.wr_id as u32;
                    if c.status != Status::Ok {
                        self.failure
                            .get_or_insert(format!("flow {f} completed with {:?} at the sender", c.status));
                        return;
                    }
                    if (f as usize) < self.sent.len() && self.sent[f as usize].is_none() {
                        self.sent[f as usize] = Some(self.now);
                        if self.recv[f as usize].is_some() {
                            self.flows_done += 1;
                        }
                        for i in 0..self.dependents_sent[f as usize].len() {
                            let x = self.dependents_sent[f as usize][i];
                            self.dep_met(x);
                        }
                    }
                }
                WorkKind::WriteReceived => {
                    if c.status != Status::Ok {
                        self.failure
                            .get_or_insert(format!("NIC {n}: WriteReceived with {:?}", c.status));
                        return;
                    }
                    let Some(&conn) = self.nics[n].rx_conns.get(&c.conn) else {
                        self.failure
                            .get_or_insert(format!("NIC {n}: WriteReceived on unknown connection {}", c.conn));
                        return;
                    };
                    let Some(f) = self.conns[conn as usize].fifo.pop_front() else {
                        self.failure
                            .get_or_insert(format!("NIC {n}: WriteReceived with nothing posted"));
                        return;
                    };
                    let fl = &self.w.flows[f as usize];
                    if c.bytes != fl.len {
                        self.failure
                            .get_or_insert(format!("flow {f}: {} bytes received, {} posted", c.bytes, fl.len));
                    }
                    self.bytes_delivered += u64::from(c.bytes);
                    self.recv[f as usize] = Some(self.now);
                    self.last_recv = self.now;
                    if self.sent[f as usize].is_some() {
                        self.flows_done += 1;
                    }
                    if let OnRecv::Xor {
                        staging,
                        staging_off,
                        buf,
                        buf_off,
                    } = fl.on_recv
                    {
                        self.reduce(n, fl.len, staging, staging_off, buf, buf_off);
                    }
                    for i in 0..self.dependents_recv[f as usize].len() {
                        let x = self.dependents_recv[f as usize][i];
                        self.dep_met(x);
                    }
                }
                _ => {}
            },
        }
    }

    fn reduce(&mut self, n: usize, len: u32, staging: u16, soff: u64, buf: u16, boff: u64) {
        let nic = &mut self.nics[n];
        let (sk, bk) = (nic.regions[staging as usize], nic.regions[buf as usize]);
        let len = u64::from(len);
        self.scratch.clear();
        match nic.t.memory().local(sk, soff, len) {
            Ok(s) => self.scratch.extend_from_slice(s),
            Err(e) => {
                self.failure.get_or_insert(format!("reduce: staging {e}"));
                return;
            }
        }
        match nic.t.memory_mut().local_mut(bk, boff, len) {
            Ok(b) => {
                let (bw, sw) = (b.chunks_exact_mut(8), self.scratch.chunks_exact(8));
                for (x, y) in bw.zip(sw) {
                    let v = u64::from_ne_bytes(x[..].try_into().unwrap()) ^ u64::from_ne_bytes(y.try_into().unwrap());
                    x.copy_from_slice(&v.to_ne_bytes());
                }
            }
            Err(e) => {
                self.failure.get_or_insert(format!("reduce: buffer {e}"));
            }
        }
    }

    fn dep_met(&mut self, f: u32) {
        let d = &mut self.deps_left[f as usize];
        *d -= 1;
        if *d == 0 {
            self.ready(f);
        }
    }

    // -----------------------------------------------------------------------------------
    // Transmit path
    // -----------------------------------------------------------------------------------

    #[inline]
    fn can_pull(&self, n: usize) -> bool {
        let ports = &self.nics[n].ports;
        ports.iter().any(|p| p.cur.is_none()) && ports.iter().all(|p| p.q.len() < NIC_PORT_QUEUE)
    }

    fn pump(&mut self, n: usize) {
        let now_ns = self.now_ns();
        while self.can_pull(n) {
            let id = self.pool.alloc();
            // Port back-pressure into path choice: data goes to planes whose port is idle or
            // has nothing waiting (a frame for a busy port would hold up the others).
            let nic = &mut self.nics[n];
            let ready = nic
                .ports
                .iter()
                .zip(&nic.port_plane)
                .filter(|(p, _)| p.cur.is_none() || p.q.is_empty())
                .fold(0u8, |m, (_, &plane)| m | 1 << (plane % 8));
            nic.t.set_ready_planes(ready);
            let Some(tx) = self.nics[n].t.poll_transmit(now_ns, &mut self.pool.bufs[id as usize]) else {
                self.pool.release(id);
                break;
            };
            self.net.frames_tx += 1;
            let nic = &self.nics[n];
            let port = tx.plane as usize;
            let buf = &self.pool.bufs[id as usize];
            if port >= nic.ports.len() || tx.len > buf.len() || tx.len < wire::BTH_OFFSET + wire::BTH_LEN {
                self.failure.get_or_insert(format!(
                    "NIC {n}: frame of {} bytes for port {} (it has {})",
                    tx.len,
                    tx.plane,
                    nic.ports.len()
                ));
                self.net.drops_misroute += 1;
                self.pool.release(id);
                continue;
            }
            let frame = &buf[..tx.len];
            let plane = nic.port_plane[port];
            let dst = host_of_ip(&frame[wire::ETH_LEN + 16..wire::ETH_LEN + 20]);
            let host = nic.host;
            if let Some(p) = self.pcap.as_mut() {
                if host as usize == self.pcap_host {
                    let _ = p.write_packet(now_ns, frame);
                }
            }
            let (dst_host, dst_plane) = match dst {
                Some((h, p)) if h < self.f.hosts && p == plane => (h, p),
                _ => {
                    // Not routable in this plane: the leaf has no route for it.
                    self.net.drops_misroute += 1;
                    self.pool.release(id);
                    continue;
                }
            };
            let (dst_nic, _) = self.nic_of[dst_host * self.f.planes as usize + dst_plane as usize];
            let payload = data_payload(frame);
            let hash = ecmp_hash_with(self.f.ecmp_hash, frame);
            self.pool.meta[id as usize] = Meta {
                len: tx.len as u32,
                link: 0,
                epoch: 0,
                dst_nic,
                hash,
                payload,
                src_host: host,
                dst_host: dst_host as u32,
                spine: 0,
                plane,
                stage: STAGE_LEAF_IN,
            };
            let p = &mut self.nics[n].ports[port];
            if p.cur.is_none() {
                self.start_port(n, port, id);
            } else {
                p.q.push_back(id);
            }
        }
    }

    fn start_port(&mut self, n: usize, port: usize, id: u32) {
        self.nics[n].ports[port].cur = Some(id);
        let len = u64::from(self.pool.meta[id as usize].len);
        let ser = (((len + crate::fabric::WIRE_OVERHEAD) as f64 * self.host_port_ps_per_byte).round() as u64).max(1);
        self.push(self.now + ser, EV_PORT_DONE, (n as u32) << 3 | port as u32);
    }

    fn on_port_done(&mut self, n: usize, port: usize) {
        let p = &mut self.nics[n].ports[port];
        let Some(id) = p.cur.take() else { return };
        let next = p.q.pop_front();
        let m = self.pool.meta[id as usize];
        let li = self.f.host_up(m.plane as usize, m.src_host as usize);
        self.net.hops += 1;
        let link = &self.links[li];
        if link.down > 0 {
            self.lost_failure(id);
        } else if link.loss.draw(&mut self.rng) {
            self.lost_other(id);
        } else {
            let t = self.now + link.delay_ps;
            let meta = &mut self.pool.meta[id as usize];
            meta.link = li as u32;
            meta.epoch = link.epoch;
            meta.stage = STAGE_LEAF_IN;
            self.push(t, EV_ARRIVE, id);
        }
        if let Some(nx) = next {
            self.start_port(n, port, nx);
        }
        self.mark(n);
        self.flush();
    }

    fn lost_failure(&mut self, id: u32) {
        self.net.drops_failure += 1;
        self.net.data_bytes_lost_failure += u64::from(self.pool.meta[id as usize].payload);
        self.pool.release(id);
    }

    fn lost_other(&mut self, id: u32) {
        self.net.drops_loss += 1;
        self.net.data_bytes_lost_other += u64::from(self.pool.meta[id as usize].payload);
        self.pool.release(id);
    }

    /// Offer frame `id` to the output queue of link `li`; it arrives at `stage` next.
    fn enqueue(&mut self, id: u32, li: usize, stage: u8) {
        let now = self.now;
        let len = self.pool.meta[id as usize].len;
        let link = &mut self.links[li];
        if link.down > 0 {
            self.lost_failure(id);
            return;
        }
        link.drain(now);
        if link.bytes + u64::from(len) > link.limit {
            link.drops_queue += 1;
            self.net.drops_queue += 1;
            let m = self.pool.meta[id as usize];
            self.net.data_bytes_lost_other += u64::from(m.payload);
            if self.cfg.observe_host == Some(m.dst_host as usize) {
                self.drops_src[m.src_host as usize] += 1;
            }
            self.pool.release(id);
            return;
        }
        if link.bytes > link.ecn {
            let buf = &mut self.pool.bufs[id as usize][..len as usize];
            if matches!(wire::frame_ecn(buf), Some(ecn::ECT0 | ecn::ECT1)) && wire::set_ecn(buf, ecn::CE).is_ok() {
                self.net.ecn_marks += 1;
            }
        }
        let finish = now.max(link.busy_until) + link.ser(len);
        link.busy_until = finish;
        link.q.push_back((finish, len));
        link.bytes += u64::from(len);
        if link.bytes > link.peak {
            link.peak = link.bytes;
        }
        self.net.hops += 1;
        let (delay, epoch, loss) = (link.delay_ps, link.epoch, link.loss);
        if loss.draw(&mut self.rng) {
            self.lost_other(id);
            return;
        }
        let m = &mut self.pool.meta[id as usize];
        m.link = li as u32;
        m.epoch = epoch;
        m.stage = stage;
        self.push(finish + delay, EV_ARRIVE, id);
    }

    fn pick_spine(&self, plane: usize, leaf: usize, hash: u32) -> Option<usize> {
        match &self.ecmp_live[plane * self.f.leaves + leaf] {
            None => Some(ecmp_pick(hash, self.f.spines)),
            Some(live) if live.is_empty() => None,
            Some(live) => Some(live[ecmp_pick(hash, live.len())] as usize),
        }
    }

    fn on_arrive(&mut self, id: u32) {
        let m = self.pool.meta[id as usize];
        if m.stage != STAGE_LEAF_IN {
            self.net.switch_arrivals += 1;
        }
        let link = &self.links[m.link as usize];
        if link.down > 0 || link.epoch != m.epoch {
            self.lost_failure(id);
            return;
        }
        let plane = m.plane as usize;
        match m.stage {
            STAGE_LEAF_IN => {
                let sl = self.f.leaf_of(m.src_host as usize);
                let dl = self.f.leaf_of(m.dst_host as usize);
                if sl == dl {
                    self.enqueue(id, self.f.host_down(plane, m.dst_host as usize), STAGE_HOST);
                } else {
                    let Some(s) = self.pick_spine(plane, sl, m.hash) else {
                        self.lost_failure(id);
                        return;
                    };
                    if self.cfg.trace_ecmp {
                        let fr = self.pool.frame(id);
                        let ip = |o: usize| u32::from_be_bytes(fr[o..o + 4].try_into().unwrap());
                        let sport = u16::from_be_bytes([fr[34], fr[35]]);
                        *self.trace.entry((m.plane, ip(26), ip(30), sport)).or_default() |= 1u64 << (s % 64);
                    }
                    self.pool.meta[id as usize].spine = s as u16;
                    self.enqueue(id, self.f.leaf_up(plane, sl, s), STAGE_SPINE);
                }
            }
            STAGE_SPINE => {
                let dl = self.f.leaf_of(m.dst_host as usize);
                self.enqueue(id, self.f.spine_down(plane, m.spine as usize, dl), STAGE_LEAF_OUT);
            }
            STAGE_LEAF_OUT => {
                self.enqueue(id, self.f.host_down(plane, m.dst_host as usize), STAGE_HOST);
            }
            _ => self.deliver(id),
        }
    }

    fn deliver(&mut self, id: u32) {
        let m = self.pool.meta[id as usize];
        self.net.frames_delivered += 1;
        if self.phase == Phase::Running {
            self.bin_plane[m.plane as usize] += u64::from(m.payload);
            if self.cfg.observe_host == Some(m.dst_host as usize) {
                self.bin_src[m.src_host as usize] += u64::from(m.payload);
            }
        }
        let now_ns = self.now_ns();
        let frame = &self.pool.bufs[id as usize][..m.len as usize];
        if m.dst_host as usize == self.pcap_host {
            if let Some(p) = self.pcap.as_mut() {
                let _ = p.write_packet(now_ns, frame);
            }
        }
        let n = m.dst_nic as usize;
        let port = if self.cfg.kind.spans_planes() { m.plane } else { 0 };
        self.nics[n].t.handle_frame(now_ns, port, frame);
        self.pool.release(id);
        self.mark(n);
        self.flush();
    }

    // -----------------------------------------------------------------------------------
    // Control events
    // -----------------------------------------------------------------------------------

    fn on_ctl(&mut self, i: usize) {
        match std::mem::replace(&mut self.ctl[i], Ctl::Sample) {
            Ctl::Fail(k) => {
                let target = self.f.failures[k].target;
                for li in self.f.failure_links(&target) {
                    let link = &mut self.links[li];
                    link.down += 1;
                    if link.down == 1 {
                        link.epoch = link.epoch.wrapping_add(1);
                        link.q.clear();
                        link.bytes = 0;
                        link.busy_until = self.now;
                        if let (Some(d), LinkClass::LeafUp) = (self.f.ecmp_local_repair_ns, self.f.link_info(li).1) {
                            self.push_ctl(self.now + d * 1000, Ctl::EcmpRemove(li));
                        }
                    }
                }
            }
            Ctl::Repair(k) => {
                let target = self.f.failures[k].target;
                for li in self.f.failure_links(&target) {
                    let link = &mut self.links[li];
                    link.down = link.down.saturating_sub(1);
                    if link.down == 0 {
                        if let (LinkClass::LeafUp, plane) = (self.f.link_info(li).1, self.f.link_info(li).0) {
                            let (leaf, spine) = self.leaf_spine_of(li);
                            if let Some(live) = &mut self.ecmp_live[plane * self.f.leaves + leaf] {
                                if !live.contains(&(spine as u16)) {
                                    live.push(spine as u16);
                                    live.sort_unstable();
                                }
                            }
                        }
                    }
                }
            }
            Ctl::EcmpRemove(li) => {
                if self.links[li].down > 0 {
                    let plane = self.f.link_info(li).0;
                    let (leaf, spine) = self.leaf_spine_of(li);
                    let spines = self.f.spines;
                    let live = self.ecmp_live[plane * self.f.leaves + leaf]
                        .get_or_insert_with(|| (0..spines as u16).collect());
                    live.retain(|&s| s as usize != spine);
                }
            }
            Ctl::Sample => self.sample(),
            Ctl::Release(f) => {
                self.to_post.push(f);
                self.flush();
            }
        }
    }

    fn leaf_spine_of(&self, li: usize) -> (usize, usize) {
        let r = li % self.f.links_per_plane() - self.f.hosts;
        (r / self.f.spines, r % self.f.spines)
    }

    fn placed_snapshot(&mut self) {
        for nic in self.nics.iter_mut() {
            nic.placed_last = placed_of(nic.t.as_ref());
        }
    }

    fn sample(&mut self) {
        let mut placed = 0;
        for nic in self.nics.iter_mut() {
            let p = placed_of(nic.t.as_ref());
            placed += p.saturating_sub(nic.placed_last);
            nic.placed_last = p;
        }
        let tl = &mut self.timeline;
        tl.placed.push(placed);
        tl.plane_rx
            .push(std::mem::replace(&mut self.bin_plane, vec![0; self.f.planes as usize]));
        if self.cfg.observe_host.is_some() {
            tl.observed_rx
                .push(std::mem::replace(&mut self.bin_src, vec![0; self.f.hosts]));
            tl.observed_queue.push(std::mem::take(&mut self.bin_queue));
        }
        if self.flows_done < self.w.flows.len() && self.failure.is_none() {
            self.push_ctl(self.now + self.cfg.sample_ns * 1000, Ctl::Sample);
        }
    }

    // -----------------------------------------------------------------------------------
    // Loop
    // -----------------------------------------------------------------------------------

    fn on_timer(&mut self, n: usize, t: u64) {
        let nic = &mut self.nics[n];
        if nic.sched_ps == Some(t) || nic.sched_ps.is_some_and(|s| s <= self.now) {
            nic.sched_ps = None;
        }
        if nic.timer_ps.is_some_and(|d| d <= self.now) {
            nic.t.handle_timeout(self.now / 1000);
        }
        self.mark(n);
        self.flush();
    }

    fn run_loop(
        &mut self,
        mut progress: Option<&mut dyn FnMut(Progress)>,
        measure: bool,
        heap1: &mut Option<u64>,
    ) -> Result<(), String> {
        let limit = self.cfg.time_limit_ns.saturating_mul(1000);
        let mut stuck = 0u64;
        let mut measured = false;
        while self.failure.is_none() {
            if self.phase == Phase::Running {
                if measure && !measured {
                    measured = true;
                    *heap1 = heap_in_use();
                }
                if self.flows_done == self.w.flows.len() {
                    break;
                }
            }
            let Some(ev) = self.heap.pop() else {
                self.failure = Some(if self.phase == Phase::Setup {
                    "stalled while opening connections".into()
                } else {
                    "stalled: no event pending and no timer armed".into()
                });
                break;
            };
            let deadline = if self.phase == Phase::Setup {
                SETUP_LIMIT_PS
            } else {
                self.t0.saturating_add(limit)
            };
            if ev.t > deadline {
                self.heap.push(ev);
                if self.phase == Phase::Setup {
                    self.failure = Some("connections not established within the setup limit".into());
                } else {
                    self.now = deadline;
                }
                break;
            }
            if ev.t != self.now {
                stuck = 0;
                if !self.observed_links.is_empty() {
                    self.observe_queues();
                }
            } else {
                stuck += 1;
                if stuck > LIVELOCK_EVENTS {
                    return Err(format!("livelock: {stuck} events at t = {} ns", self.now / 1000));
                }
            }
            self.now = ev.t;
            self.events += 1;
            match ev.kind() {
                EV_ARRIVE => self.on_arrive(ev.arg()),
                EV_PORT_DONE => self.on_port_done((ev.arg() >> 3) as usize, (ev.arg() & 7) as usize),
                EV_TIMER => self.on_timer(ev.arg() as usize, ev.t),
                _ => self.on_ctl(ev.arg() as usize),
            }
            if self.events.is_multiple_of(PROGRESS_EVERY) {
                if let Some(p) = progress.as_mut() {
                    p(Progress {
                        sim_ns: if self.phase == Phase::Running {
                            (self.now - self.t0) / 1000
                        } else {
                            0
                        },
                        flows_done: self.flows_done,
                        flows: self.w.flows.len(),
                    });
                }
            }
        }
        Ok(())
    }

    fn observe_queues(&mut self) {
        let now = self.now;
        let mut sum = 0;
        for &li in &self.observed_links {
            let l = &mut self.links[li];
            l.drain(now);
            sum += l.bytes;
        }
        if sum > self.bin_queue {
            self.bin_queue = sum;
        }
        if sum > self.observed_peak {
            self.observed_peak = sum;
        }
    }

    // -----------------------------------------------------------------------------------
    // Checks and report
    // -----------------------------------------------------------------------------------

    fn region(&self, nic: u32, region: u16) -> Result<&[u8], String> {
        let n = self.nics.get(nic as usize).ok_or("no such NIC")?;
        let key = *n.regions.get(region as usize).ok_or("no such region")?;
        n.t.memory().region(key).map_err(|e| e.to_string())
    }

    fn check(&self) -> String {
        if self.flows_done < self.w.flows.len() || self.failure.is_some() {
            return "incomplete".into();
        }
        const CH: usize = 1 << 20;
        let mut expect = vec![0u8; CH];
        for c in &self.w.checks {
            match c {
                Check::Pattern {
                    nic,
                    region,
                    off,
                    len,
                    seed,
                    pattern_off,
                } => {
                    let r = match self.region(*nic, *region) {
                        Ok(r) => r,
                        Err(e) => return format!("corrupt: NIC {nic} region {region}: {e}"),
                    };
                    let (off, len) = (*off as usize, *len as usize);
                    let Some(got) = r.get(off..off + len) else {
                        return format!("corrupt: NIC {nic} region {region} too short");
                    };
                    for (i, g) in got.chunks(CH).enumerate() {
                        let e = &mut expect[..g.len()];
                        fill_pattern(*seed, pattern_off + (i * CH) as u64, e);
                        if g != &*e {
                            return format!(
                                "corrupt: NIC {nic} region {region} differs near offset {}",
                                off + i * CH
                            );
                        }
                    }
                }
                Check::Xor {
                    nics,
                    region,
                    len,
                    seeds,
                } => {
                    let len = *len as usize;
                    let bufs: Result<Vec<&[u8]>, String> = nics.iter().map(|&n| self.region(n, *region)).collect();
                    let bufs = match bufs {
                        Ok(b) => b,
                        Err(e) => return format!("corrupt: {e}"),
                    };
                    let mut pos = 0;
                    while pos < len {
                        let m = CH.min(len - pos);
                        let e = &mut expect[..m];
                        e.fill(0);
                        for s in seeds {
                            // Word-wise XOR of the pattern (offsets are word aligned).
                            for (k, w) in e.chunks_exact_mut(8).enumerate() {
                                let v = u64::from_le_bytes(w[..].try_into().unwrap())
                                    ^ pattern_word(*s, (pos / 8 + k) as u64);
                                w.copy_from_slice(&v.to_le_bytes());
                            }
                        }
                        for (b, n) in bufs.iter().zip(nics) {
                            if b.get(pos..pos + m) != Some(&*e) {
                                return format!("corrupt: NIC {n} all-reduce result differs near offset {pos}");
                            }
                        }
                        pos += m;
                    }
                }
            }
        }
        "ok".into()
    }

    fn report(
        &self,
        integrity: String,
        wall_s: f64,
        (loop_s, loop_cpu): (f64, Option<f64>),
        state: Option<f64>,
    ) -> RunReport {
        let mut counters = BTreeMap::new();
        for n in &self.nics {
            for (k, v) in n.t.counters() {
                *counters.entry(k.to_string()).or_insert(0u64) += v;
            }
        }
        let rel = |t: Option<u64>| t.map(|t| t.saturating_sub(self.t0) / 1000);
        let flows = self
            .w
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let c = self.w.conns[f.conn as usize];
                FlowRecord {
                    group: f.group,
                    bytes: f.len,
                    src_host: self.nics[c.src as usize].host,
                    dst_host: self.nics[c.dst as usize].host,
                    posted_ns: rel(self.posted[i]),
                    sent_ns: rel(self.sent[i]),
                    recv_ns: rel(self.recv[i]),
                }
            })
            .collect();
        let mut net = self.net.clone();
        net.in_flight_end = self.pool.live;
        net.peak_queue_bytes = self.links.iter().map(|l| l.peak).max().unwrap_or(0);
        net.drops_queue_host_down = self
            .links
            .iter()
            .enumerate()
            .filter(|(i, _)| self.f.link_info(*i).1 == LinkClass::HostDown)
            .map(|(_, l)| l.drops_queue)
            .sum();
        let observed_drops = self.observed_links.iter().map(|&l| self.links[l].drops_queue).sum();
        let observed_peak_queue = self
            .observed_links
            .iter()
            .map(|&l| self.links[l].peak)
            .max()
            .unwrap_or(0);
        RunReport {
            transport: self.cfg.kind.as_str().into(),
            workload: self.w.name.clone(),
            complete: self.flows_done == self.w.flows.len() && self.failure.is_none(),
            integrity,
            failure: self.failure.clone(),
            connections: self.w.conns.len(),
            setup_ns: self.setup_ns,
            last_recv_ns: self.last_recv.saturating_sub(self.t0) / 1000,
            end_ns: self.now.saturating_sub(self.t0) / 1000,
            flows,
            bytes_posted: self.w.bytes,
            bytes_delivered: self.bytes_delivered,
            events: self.events,
            loop_wall_s: loop_s,
            wall_s,
            events_per_s: if loop_s > 0.0 { self.events as f64 / loop_s } else { 0.0 },
            loop_cpu_s: loop_cpu,
            events_per_cpu_s: loop_cpu.filter(|c| *c > 0.0).map(|c| self.events as f64 / c),
            net,
            counters,
            timeline: self.timeline.clone(),
            observed_peak_queue,
            observed_drops,
            observed_drops_by_source: self.drops_src.clone(),
            state_bytes_per_connection: state,
            ecmp_trace: self.trace.clone(),
        }
    }
}

/// `bytes_placed` counter of a NIC (both transports name it so).
fn placed_of(t: &dyn Transport) -> u64 {
    t.counters()
        .into_iter()
        .find(|(k, _)| *k == "bytes_placed")
        .map_or(0, |(_, v)| v)
}

/// Payload bytes of a data frame (0 for control frames), from its BTH opcode and pad count.
#[inline]
pub fn data_payload(frame: &[u8]) -> u32 {
    let op = frame[wire::BTH_OFFSET];
    let hdr = match op {
        opcode::MR_WRITE => wire::WRITE_HEADERS,
        opcode::MR_SEND => wire::SEND_HEADERS,
        // RC WRITE FIRST / ONLY carry a RETH (16 bytes).
        opcode::RC_WRITE_FIRST | opcode::RC_WRITE_ONLY => wire::FRAME_OVERHEAD + 16,
        0x00..=0x05 | opcode::RC_WRITE_MIDDLE | opcode::RC_WRITE_LAST => wire::FRAME_OVERHEAD,
        _ => return 0,
    };
    let pad = usize::from((frame[wire::BTH_OFFSET + 1] >> 4) & 3);
    frame.len().saturating_sub(hdr + pad) as u32
}
