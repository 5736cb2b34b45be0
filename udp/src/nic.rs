//! [`Nic`]: one transport (mroce or RoCEv2, any [`Transport`]) driven over UDP sockets, with
//! a small verbs-like API on top.
//!
//! # Sockets
//!
//! * **Receive**: one socket per plane, bound to the plane's address and the service port
//!   (4791 by default). Every peer sends to it, whatever path the datagram took.
//! * **Transmit**: one socket per distinct (source address, UDP source port) the transport
//!   emits, bound on demand. The transport chooses source ports in `0xC000..=0xFFFF` (its
//!   ECMP entropy, one per path); an entropy re-roll makes it emit a new port, and the runtime
//!   binds a new socket. Sockets idle for [`NicConfig::idle_socket_ns`] are closed. A port
//!   that cannot be bound (taken by another program) drops the frames that use it, counted in
//!   `tx_bind_failures`: to the transport this is a broken route, which it leaves by
//!   re-rolling the path's entropy.
//! * Planes map to local addresses: plane `i` is the plane-0 address with `i` added to the
//!   third octet ([`crate::frame::plane_ip`]); on loopback any `127.x.y.z` works, in a network
//!   namespace the script adds the addresses.
//!
//! # The loop
//!
//! [`Nic::progress`] runs one iteration: receive (`recvmmsg`, one batch per plane socket
//! until drained), impairment, header rebuild and `handle_frame`; due timers
//! (`handle_timeout`); transmit (`poll_transmit` into a batch, one `sendmmsg` per socket);
//! events. Time is a monotonic clock in nanoseconds since the NIC was created. When nothing
//! happened, [`Nic::poll`] spins (yielding the CPU) for [`NicConfig::spin_ns`] after the last
//! activity and otherwise sleeps in `ppoll` until a socket is readable or the transport's
//! next timer is due. The runtime has no protocol logic: it only moves frames, time and
//! events.
//!
//! # Peers
//!
//! `connect` introduces the peer to the transport. An incoming CONNECT (a well-formed frame,
//! ICRC included) from an unknown address introduces its sender when [`Accept`] allows it;
//! every other datagram from an unknown address is still handed to the transport (which
//! counts and drops it) and counted here as `rx_unknown_source`.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use mroce_model::memory::{Access, MemError, MrKey};
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, Transport, VerbError};
use mroce_model::wire::{self, MrPacket, BTH_OFFSET};

use crate::frame::{self, RxHeader, DEFAULT_TTL};
use crate::impair::{Impairer, Impairment};
use crate::sys::{self, RxBatch, Sock, TxBatch};

/// Largest datagram the runtime receives (a 9 KiB jumbo frame and then some).
pub const MAX_DATAGRAM: usize = 9_600;
/// Bytes of each transmit buffer (one MTU frame of the transport, headers included).
pub const FRAME_BUF_LEN: usize = 10_240;
/// Default service port: the UDP port every NIC receives on.
pub const DEFAULT_PORT: u16 = mroce_model::params::ROCEV2_UDP_PORT;
/// Below this much time to the next deadline, the loop spins instead of sleeping.
const SPIN_FLOOR_NS: u64 = 20_000;
/// Stride of the page touch that pins a registered region (the smallest page size Linux
/// uses on the targets we run on).
const PAGE_BYTES: usize = 4096;
/// A port that failed to bind is not retried for this long.
const BIND_RETRY_NS: u64 = 100_000_000;
/// Blast datagram magic (first 7 bytes); byte 7 is the kind.
const BLAST_MAGIC: &[u8; 7] = b"MRBLAST";
const BLAST_DATA: u8 = 1;
const BLAST_END: u8 = 2;
const BLAST_RESULT: u8 = 3;
const BLAST_HEADER: usize = 40;

/// Who may open connections to this NIC.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Accept {
    /// Any address that sends a well-formed CONNECT.
    #[default]
    Any,
    /// Only these plane-0 addresses.
    Only(Vec<Ipv4Addr>),
    /// Nobody (outgoing connections only).
    Nobody,
}

/// Runtime settings.
#[derive(Debug, Clone)]
pub struct NicConfig {
    /// UDP port every NIC receives on (both ends must agree). The frames say 4791 whatever
    /// this is. Must be below 0xC000 (the entropy range).
    pub port: u16,
    /// Datagrams per `recvmmsg` / frames per `sendmmsg` batch.
    pub batch: usize,
    /// Frames pulled from the transport per loop iteration before receiving again.
    pub tx_budget: usize,
    /// `recvmmsg` calls per plane socket per loop iteration (at most) before timers and
    /// transmit run: bounds how long ACKs wait behind a backlog of received data.
    pub rx_calls: usize,
    /// Receive buffer of each plane socket, bytes.
    pub rcvbuf: usize,
    /// Send buffer of each path socket, bytes.
    pub sndbuf: usize,
    /// Userspace impairment of the receive path.
    pub impair: Impairment,
    /// Incoming connection policy.
    pub accept: Accept,
    /// Keep spinning this long after the last activity before sleeping, ns.
    pub spin_ns: u64,
    /// Close a path socket unused for this long, ns.
    pub idle_socket_ns: u64,
    /// How long a flush waits for a full socket before dropping its datagrams.
    pub full_wait: Duration,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            port: DEFAULT_PORT,
            batch: 64,
            tx_budget: 128,
            rx_calls: 8,
            rcvbuf: 64 << 20,
            sndbuf: 4 << 20,
            impair: Impairment::default(),
            accept: Accept::Any,
            spin_ns: 50_000,
            idle_socket_ns: 10_000_000_000,
            full_wait: Duration::from_millis(2),
        }
    }
}

/// Direction of a tapped frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Emitted by the local transport.
    Tx,
    /// Handed to the local transport (after impairment and header rebuild).
    Rx,
}

/// Frame tap (pcap writers): direction, time in ns since the NIC started, full frame.
pub type Tap = Box<dyn FnMut(Dir, u64, &[u8])>;

/// Why a NIC could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum NicError {
    /// Bad setting.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A receive socket could not be bound.
    #[error("cannot bind {addr}: {err}")]
    Bind {
        /// Address.
        addr: SocketAddrV4,
        /// Error.
        err: io::Error,
    },
}

macro_rules! stats {
    ($($(#[doc = $d:literal])* $name:ident),* $(,)?) => {
        /// Counters of the runtime (the transport keeps its own, see [`Nic::counters`]).
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct RuntimeStats {
            $($(#[doc = $d])* pub $name: u64,)*
        }
        impl RuntimeStats {
            /// Every counter as (name, value).
            pub fn pairs(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name)),*]
            }
        }
    };
}

stats! {
    /// Datagrams received on the plane sockets.
    rx_datagrams,
    /// Bytes of those datagrams.
    rx_bytes,
    /// `recvmmsg` calls.
    rx_calls,
    /// Datagrams larger than a slot (cut by the kernel): dropped.
    rx_truncated,
    /// Receive errors reported by the kernel.
    rx_errors,
    /// Datagrams from an address that is not a known peer (handed to the transport, which
    /// counts and drops them; CONNECTs from accepted addresses are not counted here).
    rx_unknown_source,
    /// CONNECTs from addresses the accept policy refuses (dropped here).
    rx_refused,
    /// Frames handed to the transport.
    rx_frames,
    /// Datagrams dropped by the userspace impairment.
    impair_lost,
    /// Datagrams duplicated by the userspace impairment.
    impair_duplicated,
    /// Datagram copies held back (reordered) by the userspace impairment.
    impair_reordered,
    /// Frames the transport emitted.
    tx_frames,
    /// Datagrams the kernel accepted.
    tx_datagrams,
    /// Bytes of those datagrams.
    tx_bytes,
    /// `sendmmsg` calls.
    tx_calls,
    /// Times a full socket was waited for.
    tx_waits,
    /// Datagrams dropped because a socket stayed full.
    tx_dropped_full,
    /// Datagrams dropped on a send error.
    tx_dropped_error,
    /// Frames dropped because their source port could not be bound.
    tx_bind_failures,
    /// Frames the runtime could not send (not IPv4/UDP, or not from a local address).
    tx_bad_frames,
    /// Path sockets opened.
    sockets_opened,
    /// Path sockets closed after being idle.
    sockets_closed,
    /// Blast datagrams received (counted, never handed to the transport).
    blast_rx_datagrams,
    /// Bytes of those datagrams.
    blast_rx_bytes,
    /// Loop iterations.
    iterations,
    /// Times the loop slept in `ppoll`.
    sleeps,
}

/// Result of a blast as seen by the receiver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlastRxReport {
    /// Run identifier chosen by the sender.
    pub run_id: u64,
    /// Sender's address.
    pub from: SocketAddrV4,
    /// Datagrams the sender says it sent.
    pub sent: u64,
    /// Datagrams received.
    pub datagrams: u64,
    /// Bytes received (UDP payload).
    pub bytes: u64,
    /// First to last datagram received, ns.
    pub span_ns: u64,
}

impl BlastRxReport {
    /// Received bytes × 8 / span, Gb/s.
    pub fn goodput_gbps(&self) -> f64 {
        if self.span_ns == 0 {
            0.0
        } else {
            self.bytes as f64 * 8.0 / self.span_ns as f64
        }
    }
}

/// Result of [`Nic::blast`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlastReport {
    /// Datagrams sent.
    pub datagrams: u64,
    /// Bytes per datagram (UDP payload).
    pub datagram_len: usize,
    /// Paths (source ports) the datagrams were spread over.
    pub paths: u16,
    /// Seconds the sender spent sending.
    pub send_s: f64,
    /// Sender rate, Gb/s of UDP payload.
    pub send_gbps: f64,
    /// What the receiver reported, if it answered.
    pub receiver: Option<BlastRxReport>,
}

#[derive(Debug, Default)]
struct BlastRx {
    run_id: u64,
    datagrams: u64,
    bytes: u64,
    first_ns: u64,
    last_ns: u64,
}

struct TxSock {
    sock: Sock,
    key: (u32, u16),
    last_used_ns: u64,
}

struct Held {
    at: u64,
    seq: u64,
    plane: u8,
    frame: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq)) // min-heap
    }
}

#[derive(Debug, Clone, Copy)]
struct PeerEntry {
    ip: Ipv4Addr,
    base: Ipv4Addr,
    last_rx_ns: Option<u64>,
}

/// A transport over UDP sockets. See the module documentation.
pub struct Nic {
    t: Box<dyn Transport>,
    cfg: NicConfig,
    origin: Instant,
    local: NicAddr,
    rx: Vec<Sock>,
    rx_fds: Vec<RawFd>,
    tx: Vec<Option<TxSock>>,
    tx_free: Vec<u32>,
    tx_map: HashMap<(u32, u16), u32>,
    bind_failed: HashMap<(u32, u16), u64>,
    txb: TxBatch,
    rxb: RxBatch,
    held: BinaryHeap<Held>,
    held_seq: u64,
    imp: Impairer,
    events: VecDeque<Event>,
    stats: RuntimeStats,
    peers: Vec<PeerEntry>,
    peer_hint: usize,
    last_active_ns: u64,
    next_sweep_ns: u64,
    tap: Option<Tap>,
    blast_rx: BlastRx,
    blast_reports: VecDeque<BlastRxReport>,
    last_bind_error: Option<String>,
    conn_peer: HashMap<ConnId, Ipv4Addr>,
}

impl std::fmt::Debug for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nic")
            .field("transport", &self.t.name())
            .field("local", &self.local_ip())
            .finish()
    }
}

fn ip_of(a: [u8; 4]) -> Ipv4Addr {
    Ipv4Addr::from(a)
}

impl Nic {
    /// Bind the plane sockets of `t` (its `addr()` gives the plane addresses) and start the
    /// clock.
    pub fn new(t: Box<dyn Transport>, cfg: NicConfig) -> Result<Nic, NicError> {
        if cfg.port >= 0xC000 || cfg.port == 0 {
            return Err(NicError::Config(format!(
                "service port {} must be in 1..=49151 (0xC000.. are path entropies)",
                cfg.port
            )));
        }
        if cfg.batch == 0 || cfg.batch > 1024 {
            return Err(NicError::Config(format!("batch must be 1..=1024, got {}", cfg.batch)));
        }
        cfg.impair.validate().map_err(NicError::Config)?;
        let local = *t.addr();
        let mut rx = Vec::new();
        for p in 0..local.planes.max(1) as usize {
            let addr = SocketAddrV4::new(ip_of(local.ips[p]), cfg.port);
            let s = Sock::bind(addr, cfg.rcvbuf, 1 << 20, true).map_err(|err| NicError::Bind { addr, err })?;
            rx.push(s);
        }
        sys::tight_timer_slack();
        let rx_fds = rx.iter().map(|s| s.raw()).collect();
        Ok(Nic {
            imp: Impairer::new(&cfg.impair),
            txb: TxBatch::new(cfg.batch, FRAME_BUF_LEN),
            rxb: RxBatch::new(cfg.batch, BTH_OFFSET, MAX_DATAGRAM),
            t,
            cfg,
            origin: Instant::now(),
            local,
            rx,
            rx_fds,
            tx: Vec::new(),
            tx_free: Vec::new(),
            tx_map: HashMap::new(),
            bind_failed: HashMap::new(),
            held: BinaryHeap::new(),
            held_seq: 0,
            events: VecDeque::new(),
            stats: RuntimeStats::default(),
            peers: Vec::new(),
            peer_hint: 0,
            last_active_ns: 0,
            next_sweep_ns: 0,
            tap: None,
            blast_rx: BlastRx::default(),
            blast_reports: VecDeque::new(),
            last_bind_error: None,
            conn_peer: HashMap::new(),
        })
    }

    /// Install a frame tap (e.g. a pcap writer).
    pub fn set_tap(&mut self, tap: Option<Tap>) {
        self.tap = tap;
    }

    /// Nanoseconds since the NIC started (the transport's clock).
    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// The transport.
    pub fn transport(&self) -> &dyn Transport {
        self.t.as_ref()
    }

    /// The transport, mutable (for verbs this API does not wrap).
    pub fn transport_mut(&mut self) -> &mut dyn Transport {
        self.t.as_mut()
    }

    /// Transport name ("mroce" / "rocev2").
    pub fn name(&self) -> &'static str {
        self.t.name()
    }

    /// Plane-0 address.
    pub fn local_ip(&self) -> Ipv4Addr {
        ip_of(self.local.ips[0])
    }

    /// Service port.
    pub fn port(&self) -> u16 {
        self.cfg.port
    }

    /// Runtime counters.
    pub fn stats(&self) -> &RuntimeStats {
        &self.stats
    }

    /// Transport counters.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        self.t.counters()
    }

    /// One transport counter by name (0 if the transport has no such counter).
    pub fn counter(&self, name: &str) -> u64 {
        self.t
            .counters()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| v)
    }

    /// Last error from binding a path socket, if any.
    pub fn last_bind_error(&self) -> Option<&str> {
        self.last_bind_error.as_deref()
    }

    // ------------------------------------------------------------------------------------
    // Verbs
    // ------------------------------------------------------------------------------------

    /// Register a zero-filled memory region of `len` bytes.
    ///
    /// Like `ibv_reg_mr`, registration pins the region: every page is written now, so that
    /// placing a packet never takes the page fault of a first touch on the receive path.
    pub fn register(&mut self, len: usize, remote_write: bool) -> MrKey {
        let key = self.t.memory_mut().register(len, Access { remote_write });
        if let Ok(r) = self.region_mut(key) {
            for b in r.iter_mut().step_by(PAGE_BYTES) {
                // Volatile: the allocator hands out zeroed pages the compiler may assume are
                // already 0, and the point is the write fault itself.
                // SAFETY: `b` is a valid, exclusive reference into the region.
                unsafe { std::ptr::write_volatile(b, 0) };
            }
        }
        key
    }

    /// Contents of a region.
    pub fn region(&self, key: MrKey) -> Result<&[u8], MemError> {
        self.t.memory().region(key)
    }

    /// Contents of a region, writable.
    pub fn region_mut(&mut self, key: MrKey) -> Result<&mut [u8], MemError> {
        let len = self.t.memory().region(key)?.len() as u64;
        self.t.memory_mut().local_mut(key, 0, len)
    }

    /// Introduce a peer by its plane-0 address (same plane count as this NIC).
    pub fn add_peer(&mut self, peer: Ipv4Addr) -> NicAddr {
        let addr = frame::nic_addr(peer, self.local.planes);
        self.learn_peer(peer, addr.planes);
        addr
    }

    fn learn_peer(&mut self, base: Ipv4Addr, planes: u8) {
        let addr = frame::nic_addr(base, planes);
        self.t.add_peer(addr);
        for p in 0..addr.planes {
            let ip = frame::plane_ip(base, p);
            if !self.peers.iter().any(|e| e.ip == ip) {
                self.peers.push(PeerEntry {
                    ip,
                    base,
                    last_rx_ns: None,
                });
            }
        }
    }

    /// Open a connection to the NIC whose plane-0 address is `peer`; `Event::Connected` (or
    /// `Event::ConnectFailed`) follows.
    pub fn connect(&mut self, peer: Ipv4Addr) -> Result<ConnId, VerbError> {
        let addr = self.add_peer(peer);
        let now = self.now_ns();
        let id = self.t.connect(now, addr)?;
        self.conn_peer.insert(id, peer);
        Ok(id)
    }

    /// Plane-0 address of the peer of a connection (opened here or accepted).
    pub fn peer_of(&self, conn: ConnId) -> Option<Ipv4Addr> {
        self.conn_peer.get(&conn).copied()
    }

    /// Close a connection; `Event::Disconnected` follows.
    pub fn disconnect(&mut self, conn: ConnId) -> Result<(), VerbError> {
        let now = self.now_ns();
        self.t.disconnect(now, conn)
    }

    /// Post an RDMA WRITE.
    pub fn post_write(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        self.t.post_write(conn, stream, local, remote, wr_id)
    }

    /// Post a SEND.
    pub fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        self.t.post_send(conn, stream, local, wr_id)
    }

    /// Post a receive buffer.
    pub fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        self.t.post_recv(conn, stream, local, wr_id)
    }

    /// Next queued event (completions, connection events) without doing any I/O.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Run the loop until an event is available or `timeout` passes.
    pub fn poll(&mut self, timeout: Duration) -> io::Result<Option<Event>> {
        let deadline = self.now_ns().saturating_add(timeout.as_nanos() as u64);
        loop {
            if let Some(e) = self.events.pop_front() {
                return Ok(Some(e));
            }
            let active = self.progress()?;
            if let Some(e) = self.events.pop_front() {
                return Ok(Some(e));
            }
            if self.now_ns() >= deadline {
                return Ok(None);
            }
            if !active {
                self.idle_wait(deadline)?;
            }
        }
    }

    /// Run the loop for `d` (queued events stay queued).
    pub fn run_for(&mut self, d: Duration) -> io::Result<()> {
        let deadline = self.now_ns().saturating_add(d.as_nanos() as u64);
        while self.now_ns() < deadline {
            if !self.progress()? {
                self.idle_wait(deadline)?;
            }
        }
        Ok(())
    }

    /// Time since the last datagram from the NIC whose plane-0 address is `peer` (`None` if
    /// nothing ever arrived from it).
    pub fn silence_of(&self, peer: Ipv4Addr) -> Option<Duration> {
        let last = self
            .peers
            .iter()
            .filter(|e| e.base == peer)
            .filter_map(|e| e.last_rx_ns)
            .max()?;
        Some(Duration::from_nanos(self.now_ns().saturating_sub(last)))
    }

    /// Blasts that finished at this NIC (as receiver).
    pub fn take_blast_report(&mut self) -> Option<BlastRxReport> {
        self.blast_reports.pop_front()
    }

    // ------------------------------------------------------------------------------------
    // The loop
    // ------------------------------------------------------------------------------------

    /// One iteration of the loop without sleeping. Returns whether anything moved.
    pub fn progress(&mut self) -> io::Result<bool> {
        self.stats.iterations += 1;
        let now = self.now_ns();
        let mut active = self.receive(now) > 0;
        active |= self.release_held(now) > 0;
        let now = self.now_ns();
        if self.t.poll_timeout().is_some_and(|t| t <= now) {
            self.t.handle_timeout(now);
        }
        self.drain_events();
        active |= self.transmit(now) > 0;
        self.drain_events();
        if active {
            self.last_active_ns = now;
        }
        if now >= self.next_sweep_ns {
            self.sweep(now);
        }
        Ok(active)
    }

    fn drain_events(&mut self) {
        while let Some(e) = self.t.poll_event() {
            self.events.push_back(e);
        }
    }

    fn idle_wait(&mut self, deadline_ns: u64) -> io::Result<()> {
        let now = self.now_ns();
        let mut next = deadline_ns;
        if let Some(t) = self.t.poll_timeout() {
            next = next.min(t);
        }
        if let Some(h) = self.held.peek() {
            next = next.min(h.at);
        }
        if next <= now {
            return Ok(());
        }
        if now.saturating_sub(self.last_active_ns) < self.cfg.spin_ns || next - now < SPIN_FLOOR_NS {
            // Busy-poll. Never `sched_yield`: on a loaded machine it hands the CPU to another
            // task for a whole time slice (milliseconds), far past the transport's RTO.
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            return Ok(());
        }
        self.stats.sleeps += 1;
        sys::wait_fds(&self.rx_fds, libc::POLLIN, Some(Duration::from_nanos(next - now)))?;
        Ok(())
    }

    fn receive(&mut self, now: u64) -> usize {
        // The batch is moved out so the per-datagram code can borrow `self` freely.
        let mut rxb = std::mem::replace(&mut self.rxb, RxBatch::new(0, 0, 0));
        let mut total = 0;
        for plane in 0..self.rx.len() {
            for _ in 0..self.cfg.rx_calls.max(1) {
                self.stats.rx_calls += 1;
                let n = match rxb.recv(self.rx_fds[plane]) {
                    Ok(n) => n,
                    Err(_) => {
                        self.stats.rx_errors += 1;
                        break;
                    }
                };
                total += n;
                for i in 0..n {
                    let meta = rxb.meta(i);
                    self.on_datagram(now, plane, &meta, rxb.slot_mut(i));
                }
                if n < rxb.capacity() {
                    break;
                }
            }
        }
        self.rxb = rxb;
        total
    }

    fn on_datagram(&mut self, now: u64, plane: usize, meta: &sys::RxMeta, slot: &mut [u8]) {
        self.stats.rx_datagrams += 1;
        self.stats.rx_bytes += meta.len as u64;
        if meta.truncated {
            self.stats.rx_truncated += 1;
            return;
        }
        let len = meta.len;
        if len >= BLAST_HEADER && slot[BTH_OFFSET..BTH_OFFSET + 7] == *BLAST_MAGIC {
            let mut h = [0u8; BLAST_HEADER];
            h.copy_from_slice(&slot[BTH_OFFSET..BTH_OFFSET + BLAST_HEADER]);
            self.on_blast(now, plane, meta.from, &h, len);
            return;
        }
        if self.imp.active && self.imp.lose() {
            self.stats.impair_lost += 1;
            return;
        }
        let h = RxHeader {
            src_ip: *meta.from.ip(),
            src_port: meta.from.port(),
            dst_ip: *self.rx[plane].local.ip(),
            tos: meta.tos.unwrap_or(0),
            ttl: meta.ttl.unwrap_or(DEFAULT_TTL),
        };
        let Some(flen) = frame::rebuild(slot, len, &h) else {
            self.stats.rx_truncated += 1;
            return;
        };
        let frame = &slot[..flen];
        if !self.note_peer(now, h.src_ip, frame) {
            return;
        }
        let copies = if self.imp.active && self.imp.duplicate() {
            self.stats.impair_duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            if self.imp.active {
                if let Some(d) = self.imp.reorder_delay() {
                    self.stats.impair_reordered += 1;
                    self.held_seq += 1;
                    self.held.push(Held {
                        at: now + d,
                        seq: self.held_seq,
                        plane: plane as u8,
                        frame: frame.to_vec(),
                    });
                    continue;
                }
            }
            self.deliver(now, plane as u8, frame);
        }
    }

    /// Record traffic from `src`; learn the sender of an acceptable CONNECT. Returns whether
    /// the frame goes on to the transport.
    fn note_peer(&mut self, now: u64, src: Ipv4Addr, frame: &[u8]) -> bool {
        if let Some(e) = self.peers.get_mut(self.peer_hint).filter(|e| e.ip == src) {
            e.last_rx_ns = Some(now);
            return true;
        }
        if let Some(i) = self.peers.iter().position(|e| e.ip == src) {
            self.peer_hint = i;
            self.peers[i].last_rx_ns = Some(now);
            return true;
        }
        if let Ok((_, MrPacket::Connect(c))) = wire::decode_mroce_frame(frame) {
            let ok = match &self.cfg.accept {
                Accept::Any => true,
                Accept::Only(list) => list.contains(&src),
                Accept::Nobody => false,
            };
            if !ok {
                self.stats.rx_refused += 1;
                return false;
            }
            self.learn_peer(src, c.planes.max(1));
            if let Some(e) = self.peers.iter_mut().find(|e| e.ip == src) {
                e.last_rx_ns = Some(now);
            }
            return true;
        }
        self.stats.rx_unknown_source += 1;
        true
    }

    fn deliver(&mut self, now: u64, plane: u8, frame: &[u8]) {
        if let Some(tap) = self.tap.as_mut() {
            tap(Dir::Rx, now, frame);
        }
        self.stats.rx_frames += 1;
        self.t.handle_frame(now, plane, frame);
        while let Some(e) = self.t.poll_event() {
            if let Event::Accepted(c) = e {
                let src = Ipv4Addr::new(frame[26], frame[27], frame[28], frame[29]);
                if let Some(p) = self.peers.iter().find(|p| p.ip == src) {
                    self.conn_peer.insert(c, p.base);
                }
            }
            self.events.push_back(e);
        }
    }

    fn release_held(&mut self, now: u64) -> usize {
        let mut n = 0;
        while self.held.peek().is_some_and(|h| h.at <= now) {
            let h = self.held.pop().expect("peeked");
            self.deliver(now, h.plane, &h.frame);
            n += 1;
        }
        n
    }

    fn is_local(&self, ip: Ipv4Addr) -> bool {
        self.local.ips[..self.local.planes.max(1) as usize].contains(&ip.octets())
    }

    /// Index of the path socket bound to `ip:port`, binding it if needed.
    fn tx_socket(&mut self, now: u64, ip: Ipv4Addr, port: u16) -> Option<u32> {
        let key = (u32::from(ip), port);
        if let Some(&i) = self.tx_map.get(&key) {
            if let Some(s) = self.tx[i as usize].as_mut() {
                s.last_used_ns = now;
            }
            return Some(i);
        }
        if self.bind_failed.get(&key).is_some_and(|&t| now < t) {
            return None;
        }
        match Sock::bind(SocketAddrV4::new(ip, port), 256 << 10, self.cfg.sndbuf, false) {
            Ok(sock) => {
                let ts = TxSock {
                    sock,
                    key,
                    last_used_ns: now,
                };
                let i = match self.tx_free.pop() {
                    Some(i) => {
                        self.tx[i as usize] = Some(ts);
                        i
                    }
                    None => {
                        self.tx.push(Some(ts));
                        (self.tx.len() - 1) as u32
                    }
                };
                self.tx_map.insert(key, i);
                self.stats.sockets_opened += 1;
                Some(i)
            }
            Err(e) => {
                self.last_bind_error = Some(format!("cannot bind {ip}:{port}: {e}"));
                self.bind_failed.insert(key, now + BIND_RETRY_NS);
                None
            }
        }
    }

    fn transmit(&mut self, mut now: u64) -> usize {
        let mut pulled = 0;
        while pulled < self.cfg.tx_budget {
            let Some(tx) = self.t.poll_transmit(now, self.txb.buf_mut()) else {
                break;
            };
            pulled += 1;
            self.stats.tx_frames += 1;
            let len = tx.len.min(FRAME_BUF_LEN);
            let h = match frame::tx_header(&self.txb.buf_mut()[..len]) {
                Some(h) if len > BTH_OFFSET && self.is_local(h.src_ip) => h,
                _ => {
                    self.stats.tx_bad_frames += 1;
                    continue;
                }
            };
            let Some(sock) = self.tx_socket(now, h.src_ip, h.src_port) else {
                self.stats.tx_bind_failures += 1;
                continue;
            };
            if let Some(tap) = self.tap.as_mut() {
                tap(Dir::Tx, now, &self.txb.buf_mut()[..len]);
            }
            let to = SocketAddrV4::new(h.dst_ip, self.cfg.port);
            self.txb.push(sock, BTH_OFFSET, len - BTH_OFFSET, to, h.tos, h.ttl);
            if self.txb.is_full() {
                self.flush();
                now = self.now_ns();
            }
        }
        self.flush();
        pulled
    }

    fn flush(&mut self) {
        if self.txb.is_empty() {
            return;
        }
        let tx = &self.tx;
        let fd_of = |i: u32| tx.get(i as usize).and_then(|s| s.as_ref()).map_or(-1, |s| s.sock.raw());
        let st = self.txb.flush(&fd_of, self.cfg.full_wait);
        self.stats.tx_datagrams += st.sent;
        self.stats.tx_calls += st.calls;
        self.stats.tx_waits += st.waits;
        self.stats.tx_dropped_full += st.dropped_full;
        self.stats.tx_dropped_error += st.dropped_error;
    }

    /// Close idle path sockets; forget old bind failures.
    fn sweep(&mut self, now: u64) {
        self.next_sweep_ns = now + 1_000_000_000;
        let idle = self.cfg.idle_socket_ns;
        for i in 0..self.tx.len() {
            let stale = self.tx[i]
                .as_ref()
                .is_some_and(|s| now.saturating_sub(s.last_used_ns) > idle);
            if stale {
                if let Some(s) = self.tx[i].take() {
                    self.tx_map.remove(&s.key);
                    self.tx_free.push(i as u32);
                    self.stats.sockets_closed += 1;
                }
            }
        }
        self.bind_failed.retain(|_, t| *t > now);
    }

    // ------------------------------------------------------------------------------------
    // Blast: the same sockets and batches, unacknowledged datagrams (the raw-UDP baseline)
    // ------------------------------------------------------------------------------------

    fn on_blast(&mut self, now: u64, plane: usize, from: SocketAddrV4, h: &[u8; BLAST_HEADER], len: usize) {
        let u = |at: usize| u64::from_be_bytes(h[at..at + 8].try_into().expect("8 bytes"));
        let run_id = u(8);
        match h[7] {
            BLAST_DATA => {
                let b = &mut self.blast_rx;
                if b.run_id != run_id || b.datagrams == 0 {
                    *b = BlastRx {
                        run_id,
                        first_ns: now,
                        ..Default::default()
                    };
                }
                b.datagrams += 1;
                b.bytes += len as u64;
                b.last_ns = now;
                self.stats.blast_rx_datagrams += 1;
                self.stats.blast_rx_bytes += len as u64;
            }
            BLAST_END => {
                let b = &self.blast_rx;
                let (n, bytes, span) = if b.run_id == run_id {
                    (b.datagrams, b.bytes, b.last_ns - b.first_ns)
                } else {
                    (0, 0, 0)
                };
                let mut r = [0u8; BLAST_HEADER];
                r[..7].copy_from_slice(BLAST_MAGIC);
                r[7] = BLAST_RESULT;
                r[8..16].copy_from_slice(&run_id.to_be_bytes());
                r[16..24].copy_from_slice(&n.to_be_bytes());
                r[24..32].copy_from_slice(&bytes.to_be_bytes());
                r[32..40].copy_from_slice(&span.to_be_bytes());
                let _ = self.rx[plane].send_to(&r, from);
                let rep = BlastRxReport {
                    run_id,
                    from,
                    sent: u(16),
                    datagrams: n,
                    bytes,
                    span_ns: span,
                };
                if !self.blast_reports.iter().any(|x| x.run_id == run_id) {
                    self.blast_reports.push_back(rep);
                }
            }
            _ => {}
        }
    }

    /// Send `datagrams` unacknowledged datagrams of `datagram_len` bytes to the NIC at
    /// `to` (its service port), spread over `paths` source ports as fast as the sockets take
    /// them, through the same sockets and `sendmmsg` batches as the transport's frames. Then
    /// ask the receiver what arrived (waiting up to `result_timeout`).
    pub fn blast(
        &mut self,
        to: Ipv4Addr,
        datagrams: u64,
        datagram_len: usize,
        paths: u16,
        result_timeout: Duration,
    ) -> io::Result<BlastReport> {
        let len = datagram_len.clamp(BLAST_HEADER, MAX_DATAGRAM);
        let paths = paths.max(1);
        let now = self.now_ns();
        let run_id = now ^ (u64::from(u32::from(self.local_ip())) << 32) ^ 0xB1A5_7000;
        let base = 0xC000 | ((run_id as u16) & 0x3FF0);
        let src = self.local_ip();
        let dst = SocketAddrV4::new(to, self.cfg.port);
        let mut socks = Vec::with_capacity(paths as usize);
        for p in 0..paths {
            let port = 0xC000 | (base.wrapping_add(p) & 0x3FFF);
            let s = self.tx_socket(now, src, port).ok_or_else(|| {
                io::Error::other(self.last_bind_error.clone().unwrap_or_else(|| "cannot bind".into()))
            })?;
            socks.push(s);
        }
        let t0 = Instant::now();
        let mut seq = 0u64;
        while seq < datagrams {
            let buf = self.txb.buf_mut();
            let d = &mut buf[BTH_OFFSET..BTH_OFFSET + len];
            d[..7].copy_from_slice(BLAST_MAGIC);
            d[7] = BLAST_DATA;
            d[8..16].copy_from_slice(&run_id.to_be_bytes());
            d[16..24].copy_from_slice(&seq.to_be_bytes());
            let sock = socks[(seq % u64::from(paths)) as usize];
            self.txb.push(sock, BTH_OFFSET, len, dst, 0, DEFAULT_TTL);
            seq += 1;
            if self.txb.is_full() {
                self.flush();
            }
        }
        self.flush();
        let send_s = t0.elapsed().as_secs_f64();
        // Ask for the result on path 0's socket, retrying the request.
        let mut end = [0u8; BLAST_HEADER];
        end[..7].copy_from_slice(BLAST_MAGIC);
        end[7] = BLAST_END;
        end[8..16].copy_from_slice(&run_id.to_be_bytes());
        end[16..24].copy_from_slice(&datagrams.to_be_bytes());
        let s0 = self.tx[socks[0] as usize].as_ref().map(|s| s.sock.raw()).unwrap_or(-1);
        let deadline = Instant::now() + result_timeout;
        let mut receiver = None;
        let mut buf = [0u8; 256];
        'ask: while Instant::now() < deadline {
            if let Some(s) = self.tx[socks[0] as usize].as_ref() {
                s.sock.send_to(&end, dst)?;
            }
            let wait_until = Instant::now() + Duration::from_millis(20);
            while Instant::now() < wait_until {
                sys::wait_fds(
                    &[s0],
                    libc::POLLIN,
                    Some(wait_until.saturating_duration_since(Instant::now())),
                )?;
                let Some(s) = self.tx[socks[0] as usize].as_ref() else {
                    break 'ask;
                };
                while let Some((n, from)) = s.sock.try_recv(&mut buf)? {
                    let u = |at: usize| u64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
                    if n >= BLAST_HEADER && buf[..7] == *BLAST_MAGIC && buf[7] == BLAST_RESULT && u(8) == run_id {
                        receiver = Some(BlastRxReport {
                            run_id,
                            from,
                            sent: datagrams,
                            datagrams: u(16),
                            bytes: u(24),
                            span_ns: u(32),
                        });
                        break 'ask;
                    }
                }
            }
        }
        let bytes = datagrams * len as u64;
        Ok(BlastReport {
            datagrams,
            datagram_len: len,
            paths,
            send_s,
            send_gbps: if send_s > 0.0 {
                bytes as f64 * 8.0 / send_s / 1e9
            } else {
                0.0
            },
            receiver,
        })
    }
}
