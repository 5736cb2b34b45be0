//! The mroce NIC: connection table, connection management, frame dispatch, transmit
//! scheduling, timers and the receiver's fair-share rate hints (SPEC.md §8).

use alloc::collections::{BTreeMap, BinaryHeap, VecDeque};
use alloc::vec::Vec;
use core::cmp::Reverse;

use crate::component_trace::ComponentCalls;
use crate::connection::{ConnState, Connection, ControlError, ControlOp, Ctrl, Ctx};
use crate::memory::Memory;
use crate::params::{DEFAULT_MTU_PAYLOAD, MAX_PLANES, PATHS};
use crate::transport::{ConnId, Event, LocalBuf, Nanos, NicAddr, RemoteBuf, Transmit, Transport, VerbError};
use crate::tx_order::{self, TxKey, TxOrder};
use crate::wire::{self, Cmh, MrPacket, WireError};
use crate::{Counters, Rng};

/// Interval between CONNECT / DISCONNECT retries.
pub const CM_RETRY_NS: Nanos = 1_000_000;
/// CONNECT / DISCONNECT attempts before giving up.
pub const CM_TRIES: u8 = 8;

/// Why [`Endpoint::apply_control`] applied nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlApplyError {
    /// No such connection.
    UnknownConnection(ConnId),
    /// The connection refused the command.
    Refused(ControlError),
}

/// Configuration of one NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Addresses (MAC, one IPv4 per plane).
    pub addr: NicAddr,
    /// Paths per connection this NIC asks for (1..=PATHS).
    pub paths: u8,
    /// Payload bytes per packet.
    pub mtu: u16,
    /// Inbound capacity used for fair-share hints, Mb/s (0 disables hints).
    pub rx_capacity_mbps: u32,
    /// Accept incoming CONNECTs.
    pub accept_incoming: bool,
    /// Size of the connection table.
    pub max_connections: u32,
    /// A connection with pending data and no ACK progress for this long fails.
    pub peer_timeout_ns: Nanos,
    /// Window over which a connection counts as an active sender for the rate hint.
    pub hint_window_ns: Nanos,
    /// Use this initial PSN instead of a random one (tests and conformance cases).
    pub fixed_isn: Option<u32>,
    /// RTO floor, ns (firmware-programmable; software drivers over real sockets need more).
    pub rto_min_ns: Nanos,
    /// RTO before the first RTT sample of a path, ns.
    pub rto_init_ns: Nanos,
    /// Record every hardware-mapped component operation of every connection, for replay on
    /// the co-simulated hardware ([`Connection::take_component_calls`]).
    pub trace_components: bool,
    /// Path and plane health decisions belong to the NIC control core (firmware), which applies
    /// them with [`Endpoint::apply_control`]; connections keep RTOs, retransmission and probes.
    pub firmware_path_health: bool,
    /// What to do with the path selector's ECN re-route verdict (SPEC.md §8.5): move a path
    /// marked far more than its siblings to a new entropy once drained. Under
    /// `firmware_path_health` the control core makes that choice (`EVT_REROUTE`).
    pub ecn_reroute: EcnReroute,
    /// Packets a new connection may have in flight before its first rate hint (SPEC.md §8.5;
    /// default `params::CONN_LIMIT_INIT_PKTS`, 65535 for none).
    pub initial_conn_limit: u16,
    /// Unloaded round trip of the fabric's longest route, ns (0 = not configured). The limit
    /// of a shared rate hint (below the peer's capacity) is computed from the smaller of it and
    /// the measured minimum RTT: samples taken behind the receiver's standing queue would
    /// otherwise raise the limit that keeps the queue standing (SPEC.md §8.5). It must not be
    /// below the true unloaded RTT of any peer. It also sizes a first flight from a fan-in
    /// announcement, and as a receiver this NIC lowers a shared hint by two frames' rate over
    /// it when most arrivals since the last recount were CE-marked (§8.5, "Marked share").
    pub fabric_rtt_ns: Nanos,
    /// While nothing else waits to be sent, keep a second copy of a doubtful chunk (a
    /// retransmission, the newest chunk of a path whose tail-loss probe fired, a chunk that
    /// lost one of two copies) in flight on another path, so that one more loss does not wait
    /// for a probe's answer or an RTO (SPEC.md §8.3).
    pub tail_hedge: bool,
    /// A connection's first flight (its data before the first ACK) asks for an immediate ACK
    /// of every packet, so that the ACK clock starts one round trip after the first packet
    /// rather than one round trip plus the receiver's coalescing delay (SPEC.md §8.3 step 7).
    /// With `fabric_rtt_ns` configured, only once a fan-in announcement allows the whole
    /// `initial_conn_limit`.
    pub first_flight_ack_req: bool,
    /// Announce this NIC's share per connection, `rx_capacity_mbps` over its established
    /// connections rounded up to a power of two, to every established peer whenever that
    /// changes (SPEC.md §8.5): a peer with `fabric_rtt_ns` then sizes its first flight to
    /// the fan-in instead of sending `initial_conn_limit` packets into a shared port.
    pub announce_fan_in: bool,
    /// The order in which this NIC serves its connections at a transmit opportunity
    /// (SPEC.md §8.3, "Endpoint transmit order").
    pub tx_order: TxOrder,
}

/// A connection's policy for the path selector's ECN re-route verdict (SPEC.md §8.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EcnReroute {
    /// Ignore the verdict: paths move only on RTOs and the health rules.
    Off,
    /// Move every path the verdict names (each takes no new packets until it drained).
    #[default]
    Every,
    /// Move a named path only while no other path of the connection drains for a move; a
    /// verdict meanwhile is dropped. Each draining path takes its window out of service for
    /// about an RTT, and the verdicts of a collided fabric came ~17 per flow.
    One,
}

impl EcnReroute {
    /// Name on command lines and in reports: `off`, `every` or `one`.
    pub fn as_str(self) -> &'static str {
        match self {
            EcnReroute::Off => "off",
            EcnReroute::Every => "every",
            EcnReroute::One => "one",
        }
    }

    /// Parse a name of [`EcnReroute::as_str`]; `true` and `false` (the switch this replaced)
    /// mean `every` and `off`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" | "false" => Some(EcnReroute::Off),
            "every" | "true" => Some(EcnReroute::Every),
            "one" => Some(EcnReroute::One),
            _ => None,
        }
    }
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            addr: NicAddr::default(),
            paths: PATHS as u8,
            mtu: DEFAULT_MTU_PAYLOAD,
            rx_capacity_mbps: 400_000,
            accept_incoming: true,
            max_connections: 4096,
            peer_timeout_ns: 100_000_000,
            hint_window_ns: 20_000,
            fixed_isn: None,
            rto_min_ns: crate::params::RTO_MIN_NS,
            rto_init_ns: crate::params::RTO_INIT_NS,
            trace_components: false,
            firmware_path_health: false,
            ecn_reroute: EcnReroute::Every,
            initial_conn_limit: crate::params::CONN_LIMIT_INIT_PKTS,
            fabric_rtt_ns: 0,
            announce_fan_in: false,
            tail_hedge: true,
            first_flight_ack_req: true,
            tx_order: TxOrder::OldestFirst,
        }
    }
}

/// A connection-management frame waiting to be sent.
#[derive(Debug, Clone, Copy)]
struct CmOut {
    opcode: u8,
    peer: NicAddr,
    plane: u8,
    dest_qp: u32,
    cmh: Cmh,
}

/// When a ready connection's last poll came back port-blocked (`Connection::blocked_verdict`):
/// until `until` or a change of `mem_epoch`, polling it again with none of its planes ready
/// would only repeat that.
#[derive(Debug, Clone, Copy, Default)]
struct BlockedUntil {
    until: Nanos,
    mem_epoch: u32,
}

/// An mroce NIC: implements [`Transport`].
pub struct Endpoint {
    cfg: EndpointConfig,
    mem: Memory,
    /// Bumped whenever the application may change memory registrations (`memory_mut`).
    mem_epoch: u32,
    conns: Vec<Option<Connection>>,
    /// Per connection slot: the planes of its last port-blocked verdict (0: none), cleared
    /// whenever the connection is reached through `split` or `connection_mut` (every path that
    /// can change it). One byte a slot, so that the check and the clearing stay in cache.
    blocked_planes: Vec<u8>,
    /// Per connection slot: the rest of that verdict, read only while its planes are set.
    blocked_until: Vec<BlockedUntil>,
    /// Per connection slot: its rank in the oldest-first transmit order (`Connection::tx_key`)
    /// as last computed, `None` once the connection may have changed (cleared with the
    /// verdict above). A poll ranks every ready connection; recomputing each rank walked the
    /// connection's streams, a cache miss per connection (9 % of `mroce sim connections`).
    tx_keys: Vec<Option<TxKey>>,
    free: Vec<u32>,
    peers: Vec<NicAddr>,
    /// (peer plane-0 IP, peer conn, nonce) → local connection, to answer repeated CONNECTs.
    incoming: BTreeMap<([u8; 4], u32, u64), ConnId>,
    ctrl: VecDeque<Ctrl>,
    cm_out: VecDeque<CmOut>,
    ready: VecDeque<ConnId>,
    /// The latest time a driver passed in (`handle_frame`, `poll_transmit`, `handle_timeout`,
    /// `connect`, `disconnect`): the time of a post, which takes none.
    clock: Nanos,
    /// Scratch space of `poll_transmit` under [`TxOrder::OldestFirst`].
    tx_visit: Vec<(TxKey, u32)>,
    timers: BinaryHeap<Reverse<(Nanos, ConnId)>>,
    events: VecDeque<Event>,
    counters: Counters,
    rng: Rng,
    hint_mbps: u32,
    /// Planes whose port can take a data frame (`Transport::set_ready_planes`).
    ready_planes: u8,
    hint_at: Nanos,
    /// Established connections, rounded up to a power of two, at the last fan-in
    /// announcement (0: none yet).
    announced_fan_in: u32,
    /// Data and probe frames received since the last hint recount.
    recount_rx: u32,
    /// Those of them that arrived CE-marked.
    recount_ce: u32,
    /// Component operations of released connections not yet taken (`trace_components`).
    retired_calls: Vec<(ConnId, ComponentCalls)>,
}

/// Give a new connection (opened or accepted) the NIC's per-connection settings.
fn configure(conn: &mut Connection, cfg: &EndpointConfig) {
    conn.set_rto_bounds(cfg.rto_min_ns, cfg.rto_init_ns);
    conn.set_firmware_health(cfg.firmware_path_health);
    conn.set_ecn_reroute(cfg.ecn_reroute);
    conn.set_initial_conn_limit(cfg.initial_conn_limit);
    conn.set_first_flight_ack_req(cfg.first_flight_ack_req);
    conn.set_fabric_rtt(cfg.fabric_rtt_ns);
    conn.set_tail_hedge(cfg.tail_hedge);
}

impl core::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Endpoint")
            .field("cfg", &self.cfg)
            .field("counters", &self.counters)
            .finish()
    }
}

impl Endpoint {
    /// A NIC with no connections; `seed` drives every random choice (ISNs, entropies, keys).
    pub fn new(cfg: EndpointConfig, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let salt = rng.next_u32() as u8;
        Endpoint {
            cfg,
            mem: Memory::new(salt),
            mem_epoch: 0,
            conns: Vec::new(),
            blocked_planes: Vec::new(),
            blocked_until: Vec::new(),
            tx_keys: Vec::new(),
            free: Vec::new(),
            peers: Vec::new(),
            incoming: BTreeMap::new(),
            ctrl: VecDeque::new(),
            cm_out: VecDeque::new(),
            ready: VecDeque::new(),
            clock: 0,
            tx_visit: Vec::new(),
            timers: BinaryHeap::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            rng,
            hint_mbps: cfg.rx_capacity_mbps,
            ready_planes: u8::MAX,
            hint_at: 0,
            announced_fan_in: 0,
            recount_rx: 0,
            recount_ce: 0,
            retired_calls: Vec::new(),
        }
    }

    /// Configuration.
    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> &Counters {
        &self.counters
    }

    /// A connection, for inspection.
    pub fn connection(&self, id: ConnId) -> Option<&Connection> {
        self.conns.get((id as usize).wrapping_sub(1)).and_then(|c| c.as_ref())
    }

    /// A connection, mutable (firmware-style control: plane state).
    pub fn connection_mut(&mut self, id: ConnId) -> Option<&mut Connection> {
        self.unblock(id);
        self.conns
            .get_mut((id as usize).wrapping_sub(1))
            .and_then(|c| c.as_mut())
    }

    /// Number of live connections.
    pub fn connection_count(&self) -> usize {
        self.conns.iter().filter(|c| c.is_some()).count()
    }

    fn alloc_id(&mut self) -> Option<ConnId> {
        if let Some(i) = self.free.pop() {
            return Some(i + 1);
        }
        if self.conns.len() as u32 >= self.cfg.max_connections.min(0xFF_FFFE) {
            return None;
        }
        self.conns.push(None);
        self.blocked_planes.push(0);
        self.blocked_until.push(BlockedUntil::default());
        self.tx_keys.push(None);
        Some(self.conns.len() as u32)
    }

    /// Every component operation recorded since the last call, per connection (released
    /// connections first, in release order), when the configuration has `trace_components`.
    pub fn take_component_calls(&mut self) -> Vec<(ConnId, ComponentCalls)> {
        let mut v = core::mem::take(&mut self.retired_calls);
        for (i, c) in self.conns.iter_mut().enumerate() {
            if let Some(c) = c {
                let calls = c.take_component_calls();
                if calls != ComponentCalls::default() {
                    v.push((i as ConnId + 1, calls));
                }
            }
        }
        v
    }

    fn release(&mut self, id: ConnId) {
        self.unblock(id);
        if let Some(slot) = self.conns.get_mut((id as usize).wrapping_sub(1)) {
            if let Some(mut c) = slot.take() {
                self.free.push(id - 1);
                if self.cfg.trace_components {
                    self.retired_calls.push((id, c.take_component_calls()));
                }
            }
        }
        self.incoming.retain(|_, v| *v != id);
        self.refresh_fan_in(None);
    }

    /// Announce the share per connection to every established peer if the fan-in (established
    /// connections, rounded up to a power of two so that a fan-in of N costs about 2N
    /// announcements in all) changed, else to the newly established connection `new` alone
    /// (`EndpointConfig::announce_fan_in`, SPEC.md §8.5).
    fn refresh_fan_in(&mut self, new: Option<ConnId>) {
        if !self.cfg.announce_fan_in || self.cfg.rx_capacity_mbps == 0 {
            return;
        }
        let n = self
            .conns
            .iter()
            .flatten()
            .filter(|c| c.state == ConnState::Established)
            .count();
        let fan_in = (n as u32).max(1).next_power_of_two();
        if fan_in == self.announced_fan_in {
            if let Some(id) = new {
                self.announce(id);
            }
            return;
        }
        self.announced_fan_in = fan_in;
        let ids: Vec<ConnId> = self
            .conns
            .iter()
            .flatten()
            .filter(|c| c.state == ConnState::Established)
            .map(|c| c.id)
            .collect();
        for id in ids {
            self.announce(id);
        }
    }

    /// Queue a fan-in announcement to connection `id`'s peer, on the plane of its id (spread
    /// over its planes) and the connection-management source port, behind any CONNECT_ACK.
    fn announce(&mut self, id: ConnId) {
        let mbps = self.cfg.rx_capacity_mbps / self.announced_fan_in.max(1);
        if let Some(c) = self.connection(id) {
            let plane = (id % u32::from(c.planes.max(1))) as u8;
            let akh = c.announce_ack(mbps);
            self.ctrl.push_back(Ctrl::Ack {
                conn: id,
                plane,
                sport: 0xC000,
                akh,
            });
        }
    }

    /// Apply one control-core selector command to a connection (see
    /// [`Connection::apply_control`]) and re-arm its timers and transmit work.
    pub fn apply_control(&mut self, now: Nanos, id: ConnId, op: ControlOp) -> Result<(), ControlApplyError> {
        let c = self
            .connection_mut(id)
            .ok_or(ControlApplyError::UnknownConnection(id))?;
        c.apply_control(now, op).map_err(ControlApplyError::Refused)?;
        self.schedule(id, now);
        self.wake(id);
        Ok(())
    }

    /// Forget connection `id`'s port-blocked verdict and transmit rank: it is about to
    /// change, or may.
    fn unblock(&mut self, id: ConnId) {
        let i = (id as usize).wrapping_sub(1);
        if let Some(b) = self.blocked_planes.get_mut(i) {
            if *b != 0 {
                *b = 0;
            }
        }
        if let Some(k) = self.tx_keys.get_mut(i) {
            *k = None;
        }
    }

    /// Connection `id`'s rank in the oldest-first transmit order, from the cache when the
    /// connection is unchanged since it was computed.
    fn cached_tx_key(&mut self, id: ConnId) -> TxKey {
        let i = (id as usize).wrapping_sub(1);
        let k = || self.connection(id).map_or((u8::MAX, 0), Connection::tx_key);
        if let Some(&Some(cached)) = self.tx_keys.get(i) {
            // every path that changes a connection clears its rank: tests check it
            debug_assert_eq!(cached, k(), "stale transmit rank of connection {id}");
            return cached;
        }
        let k = k();
        if let Some(slot) = self.tx_keys.get_mut(i) {
            *slot = Some(k);
        }
        k
    }

    /// Connection `id`'s last poll came back port-blocked, and one now would only repeat that.
    fn still_blocked(&self, id: ConnId, now: Nanos, planes: u8) -> bool {
        let i = (id as usize).wrapping_sub(1);
        match self.blocked_planes.get(i) {
            Some(&p) if p != 0 && p & planes == 0 => self
                .blocked_until
                .get(i)
                .is_some_and(|b| now < b.until && b.mem_epoch == self.mem_epoch),
            _ => false,
        }
    }

    fn split(&mut self, id: ConnId) -> Option<(&mut Connection, Ctx<'_>)> {
        self.unblock(id);
        let c = self.conns.get_mut((id as usize).wrapping_sub(1))?.as_mut()?;
        Some((
            c,
            Ctx {
                mem: &mut self.mem,
                events: &mut self.events,
                ctrl: &mut self.ctrl,
                counters: &mut self.counters,
                rng: &mut self.rng,
            },
        ))
    }

    fn schedule(&mut self, id: ConnId, now: Nanos) {
        let Some(c) = self
            .conns
            .get_mut((id as usize).wrapping_sub(1))
            .and_then(|c| c.as_mut())
        else {
            return;
        };
        // Full scan only when nothing is scheduled; otherwise the timers set since then.
        let d = if c.scheduled.is_none() {
            c.next_deadline(now)
        } else {
            c.take_noted()
        };
        if let Some(d) = d {
            if c.scheduled.is_none_or(|s| d < s) {
                c.scheduled = Some(d);
                self.timers.push(Reverse((d, id)));
            }
        }
    }

    /// Put a connection on the transmit ready list if it has something to send.
    fn wake(&mut self, id: ConnId) {
        let Some(c) = self
            .conns
            .get_mut((id as usize).wrapping_sub(1))
            .and_then(|c| c.as_mut())
        else {
            return;
        };
        if c.has_work() && !c.in_ready {
            c.in_ready = true;
            self.ready.push_back(id);
        }
    }

    fn find_peer(&self, ip: [u8; 4]) -> Option<(NicAddr, u8)> {
        self.peers.iter().find_map(|p| p.plane_of(ip).map(|pl| (*p, pl)))
    }

    fn cm_reply(&self, c: &Connection, opcode: u8, plane: u8, reason: u16) -> CmOut {
        CmOut {
            opcode,
            peer: c.peer,
            plane,
            dest_qp: c.peer_conn,
            cmh: self.cmh(c, reason),
        }
    }

    fn cmh(&self, c: &Connection, reason: u16) -> Cmh {
        Cmh {
            src_conn: c.id,
            isn: c.isn_tx,
            paths: c.paths,
            planes: c.planes,
            mtu: c.mtu,
            streams: c.streams_max,
            reason,
            rx_capacity_mbps: self.cfg.rx_capacity_mbps,
            nonce: c.nonce,
        }
    }

    /// Recount active senders at most once per hint window; hint = capacity / active.
    /// `arriving`: the connection whose data frame is being handled counts as active, and if it
    /// was not, the recount happens now: the others' share falls the moment a new sender
    /// starts, not up to half a window later. A marked shared hint is lowered (SPEC.md §8.5).
    fn refresh_hint(&mut self, now: Nanos, arriving: Option<ConnId>) {
        if self.cfg.rx_capacity_mbps == 0 {
            self.hint_mbps = 0;
            return;
        }
        let since = now.saturating_sub(self.cfg.hint_window_ns);
        let active = |c: &Connection| c.last_rx_data != 0 && c.last_rx_data >= since;
        let newcomer = arriving.and_then(|id| self.connection(id)).is_some_and(|c| !active(c));
        if now < self.hint_at && !newcomer {
            return;
        }
        self.hint_at = now + self.cfg.hint_window_ns / 2;
        let active = self
            .conns
            .iter()
            .flatten()
            .filter(|c| Some(c.id) == arriving || active(c))
            .count() as u32;
        self.hint_mbps = self.cfg.rx_capacity_mbps / active.max(1);
        // A shared port whose arrivals are mostly CE-marked has a standing queue: each sender
        // adds 2 packets to its share's limit (SPEC.md §8.5), and with many senders those alone
        // fill the buffers. Take their rate over the fabric RTT out of the hint.
        if self.cfg.fabric_rtt_ns != 0 && active > 1 && self.recount_ce > self.recount_rx / 2 {
            let frame = u64::from(self.cfg.mtu) + wire::WRITE_HEADERS as u64;
            let two_frames = (8000 * frame / self.cfg.fabric_rtt_ns).min(u64::from(u32::MAX)) as u32;
            self.hint_mbps = self.hint_mbps.saturating_sub(two_frames).max(self.hint_mbps / 4).max(1);
        }
        self.recount_rx = 0;
        self.recount_ce = 0;
    }

    fn on_cm(&mut self, now: Nanos, plane: u8, f: &wire::RoceFrame<'_>, pkt: MrPacket<'_>) {
        match pkt {
            MrPacket::Connect(c) => {
                let Some((peer, _)) = self.find_peer(f.addrs.src_ip) else {
                    self.counters.unknown_peer += 1;
                    return;
                };
                if !self.cfg.accept_incoming {
                    self.counters.refused_connects += 1;
                    return;
                }
                if c.paths == 0 || c.planes == 0 || usize::from(c.planes) > MAX_PLANES || c.mtu < 64 {
                    self.counters.invalid_requests += 1;
                    return;
                }
                let key = (peer.ips[0], c.src_conn, c.nonce);
                if let Some(&id) = self.incoming.get(&key) {
                    // Our CONNECT_ACK was lost: answer again.
                    if let Some(conn) = self.connection(id) {
                        let out = self.cm_reply(conn, wire::opcode::MR_CONNECT_ACK, plane, 0);
                        self.cm_out.push_back(out);
                    }
                    // And the announcement that followed it, which the peer dropped.
                    if self.cfg.announce_fan_in && self.announced_fan_in != 0 {
                        self.announce(id);
                    }
                    return;
                }
                let Some(id) = self.alloc_id() else {
                    self.counters.table_full += 1;
                    return;
                };
                let paths = c.paths.min(self.cfg.paths).clamp(1, PATHS as u8);
                let planes = c.planes.min(self.cfg.addr.planes).min(peer.planes).max(1);
                let mtu = c.mtu.min(self.cfg.mtu);
                let isn = self.cfg.fixed_isn.unwrap_or_else(|| self.rng.next_u32());
                let mut conn = Connection::new(
                    id,
                    peer,
                    paths,
                    planes,
                    mtu,
                    isn,
                    ConnState::Established,
                    c.nonce,
                    &mut self.rng,
                    now,
                    self.cfg.trace_components,
                );
                conn.peer_conn = c.src_conn;
                conn.set_rx_isn(c.isn);
                conn.rx_capacity_mbps = c.rx_capacity_mbps;
                configure(&mut conn, &self.cfg);
                let out = self.cm_reply(&conn, wire::opcode::MR_CONNECT_ACK, plane, 0);
                self.unblock(id);
                self.conns[id as usize - 1] = Some(conn);
                self.incoming.insert(key, id);
                self.cm_out.push_back(out);
                self.events.push_back(Event::Accepted(id));
                self.refresh_fan_in(Some(id));
            }
            MrPacket::ConnectAck(c) => {
                let id = f.bth.dest_qp;
                let Some(conn) = self
                    .conns
                    .get_mut((id as usize).wrapping_sub(1))
                    .and_then(|c| c.as_mut())
                else {
                    self.counters.unknown_connection += 1;
                    return;
                };
                if let ConnState::Connecting { nonce, .. } = conn.state {
                    let from_peer = conn.peer.plane_of(f.addrs.src_ip).is_some();
                    let sane = c.paths >= 1 && c.planes >= 1 && c.mtu >= 64;
                    if nonce != c.nonce || !from_peer || !sane {
                        self.counters.invalid_requests += 1;
                        return;
                    }
                    conn.peer_conn = c.src_conn;
                    let (paths, planes, mtu) =
                        (conn.paths.min(c.paths), conn.planes.min(c.planes), conn.mtu.min(c.mtu));
                    conn.renegotiate(paths, planes, mtu, &mut self.rng);
                    conn.set_rx_isn(c.isn);
                    conn.rx_capacity_mbps = c.rx_capacity_mbps;
                    conn.state = ConnState::Established;
                    self.events.push_back(Event::Connected(id));
                    self.schedule(id, now);
                    self.wake(id);
                    self.refresh_fan_in(Some(id));
                }
            }
            MrPacket::Disconnect(c) => {
                let id = f.bth.dest_qp;
                let Some((peer, _)) = self.find_peer(f.addrs.src_ip) else {
                    self.counters.unknown_peer += 1;
                    return;
                };
                let ok = self
                    .connection(id)
                    .is_some_and(|k| k.peer_conn == c.src_conn && k.peer == peer);
                let mut reply = c;
                reply.src_conn = id;
                if ok {
                    if let Some((conn, mut ctx)) = self.split(id) {
                        conn.fail_all(&mut ctx);
                    }
                    self.release(id);
                    self.events.push_back(Event::Disconnected(id));
                }
                // Always confirm, so a retried DISCONNECT for a freed connection terminates.
                self.cm_out.push_back(CmOut {
                    opcode: wire::opcode::MR_DISCONNECT_ACK,
                    peer,
                    plane,
                    dest_qp: c.src_conn,
                    cmh: reply,
                });
            }
            MrPacket::DisconnectAck(_) => {
                let id = f.bth.dest_qp;
                if matches!(self.connection(id).map(|c| c.state), Some(ConnState::Closing { .. })) {
                    self.release(id);
                    self.events.push_back(Event::Disconnected(id));
                }
            }
            _ => {}
        }
    }
}

impl Endpoint {
    fn cm_addrs(&self, peer: &NicAddr, plane: u8) -> wire::FrameAddrs {
        let p = plane as usize % MAX_PLANES;
        wire::FrameAddrs {
            dst_mac: peer.mac,
            src_mac: self.cfg.addr.mac,
            src_ip: self.cfg.addr.ips[p],
            dst_ip: peer.ips[p],
            // Connection management uses a fixed source port: it needs no spraying.
            src_port: 0xC000,
            dscp: 48,
            ecn: wire::ecn::ECT0,
            ttl: 64,
        }
    }

    fn encode_ctrl(&mut self, ctrl: Ctrl, buf: &mut [u8]) -> Option<Transmit> {
        let (conn, plane, sport, pkt) = match ctrl {
            Ctrl::Ack {
                conn,
                plane,
                sport,
                akh,
            } => (conn, plane, sport, MrPacket::Ack(akh)),
            Ctrl::Nak { conn, plane, nkh } => (conn, plane, 0xC000, MrPacket::Nak(nkh)),
        };
        let c = self.connection(conn)?;
        let addrs = wire::FrameAddrs {
            src_port: sport,
            ..self.cm_addrs(&c.peer, plane)
        };
        let bth = wire::Bth::new(0, c.peer_conn, 0);
        match wire::encode_mroce(buf, &addrs, &bth, &pkt) {
            Ok(len) => {
                match pkt {
                    MrPacket::Ack(a) if a.flags & wire::AKH_FLAG_ANNOUNCE != 0 => self.counters.tx_announces += 1,
                    MrPacket::Ack(_) => self.counters.tx_acks += 1,
                    _ => {}
                }
                Some(Transmit { len, plane })
            }
            Err(_) => {
                self.counters.tx_encode_errors += 1;
                None
            }
        }
    }

    fn decode_error(&mut self, e: WireError) {
        self.counters.bad_frames += 1;
        match e {
            WireError::BadIcrc { .. } => self.counters.bad_icrc += 1,
            WireError::Truncated { .. } => self.counters.truncated += 1,
            WireError::UnknownOpcode(_) => self.counters.unknown_opcode += 1,
            _ => self.counters.malformed += 1,
        }
    }
}

impl Transport for Endpoint {
    fn name(&self) -> &'static str {
        "mroce"
    }

    fn addr(&self) -> &NicAddr {
        &self.cfg.addr
    }

    fn memory(&self) -> &Memory {
        &self.mem
    }

    fn memory_mut(&mut self) -> &mut Memory {
        // a pending chunk's buffer may be deregistered: every blocked verdict is void
        self.mem_epoch = self.mem_epoch.wrapping_add(1);
        &mut self.mem
    }

    fn add_peer(&mut self, peer: NicAddr) {
        if !self.peers.contains(&peer) {
            self.peers.push(peer);
        }
    }

    fn connect(&mut self, now: Nanos, peer: NicAddr) -> Result<ConnId, VerbError> {
        self.clock = self.clock.max(now);
        self.add_peer(peer);
        let id = self.alloc_id().ok_or(VerbError::TableFull)?;
        let nonce = self.rng.next_u64();
        let isn = self.cfg.fixed_isn.unwrap_or_else(|| self.rng.next_u32());
        let planes = self.cfg.addr.planes.min(peer.planes).max(1);
        let state = ConnState::Connecting {
            nonce,
            tries: 1,
            retry_at: now + CM_RETRY_NS,
        };
        let mut conn = Connection::new(
            id,
            peer,
            self.cfg.paths,
            planes,
            self.cfg.mtu,
            isn,
            state,
            nonce,
            &mut self.rng,
            now,
            self.cfg.trace_components,
        );
        configure(&mut conn, &self.cfg);
        let out = CmOut {
            opcode: wire::opcode::MR_CONNECT,
            peer,
            plane: 0,
            dest_qp: 0,
            cmh: self.cmh(&conn, 0),
        };
        self.unblock(id);
        self.conns[id as usize - 1] = Some(conn);
        self.cm_out.push_back(out);
        self.schedule(id, now);
        Ok(id)
    }

    fn disconnect(&mut self, now: Nanos, conn: ConnId) -> Result<(), VerbError> {
        self.clock = self.clock.max(now);
        let Some((c, mut ctx)) = self.split(conn) else {
            return Err(VerbError::UnknownConnection(conn));
        };
        c.fail_all(&mut ctx);
        c.state = ConnState::Closing {
            tries: 1,
            retry_at: now + CM_RETRY_NS,
        };
        c.note(now + CM_RETRY_NS);
        let c = self.connection(conn).ok_or(VerbError::UnknownConnection(conn))?;
        let out = self.cm_reply(c, wire::opcode::MR_DISCONNECT, 0, 0);
        self.cm_out.push_back(out);
        self.schedule(conn, now);
        Ok(())
    }

    fn post_write(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        self.post(conn, stream, local, Some(remote), wr_id)
    }

    fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        self.post(conn, stream, local, None, wr_id)
    }

    fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        self.mem.check_local(local.key, local.offset, u64::from(local.len))?;
        let c = self.connection_mut(conn).ok_or(VerbError::UnknownConnection(conn))?;
        if stream >= c.streams_max {
            return Err(VerbError::BadStream(stream));
        }
        c.post_recv(stream, local, wr_id);
        Ok(())
    }

    fn handle_frame(&mut self, now: Nanos, plane: u8, frame: &[u8]) {
        self.clock = self.clock.max(now);
        self.counters.rx_frames += 1;
        let (f, pkt) = match wire::decode_mroce_frame(frame) {
            Ok(x) => x,
            Err(e) => return self.decode_error(e),
        };
        let id = f.bth.dest_qp;
        match pkt {
            MrPacket::Connect(_) | MrPacket::ConnectAck(_) | MrPacket::Disconnect(_) | MrPacket::DisconnectAck(_) => {
                self.on_cm(now, plane, &f, pkt);
                self.schedule(id, now);
                return;
            }
            _ => {}
        }
        let known = self
            .connection(id)
            .is_some_and(|c| c.state == ConnState::Established && c.peer.plane_of(f.addrs.src_ip).is_some());
        if !known {
            self.counters.unknown_connection += 1;
            return;
        }
        match pkt {
            MrPacket::Ack(a) => {
                if let Some((c, mut ctx)) = self.split(id) {
                    c.on_ack(now, &a, &mut ctx);
                }
                self.counters.rx_acks += 1;
            }
            MrPacket::Nak(k) => {
                self.counters.naks_received += 1;
                if let Some((c, mut ctx)) = self.split(id) {
                    c.on_nak(&k, &mut ctx);
                }
            }
            _ => {
                self.counters.rx_data += 1;
                let ce = f.addrs.ecn == wire::ecn::CE;
                self.recount_rx = self.recount_rx.saturating_add(1);
                self.recount_ce = self.recount_ce.saturating_add(u32::from(ce));
                self.refresh_hint(now, Some(id));
                let hint = self.hint_mbps;
                if let Some((c, mut ctx)) = self.split(id) {
                    c.on_data(now, plane, f.addrs.src_port, ce, f.bth.ack_req, &pkt, hint, &mut ctx);
                }
            }
        }
        self.schedule(id, now);
        self.wake(id);
    }

    fn poll_transmit(&mut self, now: Nanos, buf: &mut [u8]) -> Option<Transmit> {
        self.clock = self.clock.max(now);
        if let Some(cm) = self.cm_out.pop_front() {
            let addrs = self.cm_addrs(&cm.peer, cm.plane);
            let bth = wire::Bth::new(cm.opcode, cm.dest_qp, 0);
            let pkt = match cm.opcode {
                wire::opcode::MR_CONNECT => MrPacket::Connect(cm.cmh),
                wire::opcode::MR_CONNECT_ACK => MrPacket::ConnectAck(cm.cmh),
                wire::opcode::MR_DISCONNECT => MrPacket::Disconnect(cm.cmh),
                _ => MrPacket::DisconnectAck(cm.cmh),
            };
            if let Ok(len) = wire::encode_mroce(buf, &addrs, &bth, &pkt) {
                self.counters.tx_frames += 1;
                return Some(Transmit { len, plane: cm.plane });
            }
            self.counters.tx_encode_errors += 1;
        }
        while let Some(ctrl) = self.ctrl.pop_front() {
            if let Some(t) = self.encode_ctrl(ctrl, buf) {
                self.counters.tx_frames += 1;
                return Some(t);
            }
        }
        let planes = self.ready_planes;
        match self.cfg.tx_order {
            TxOrder::RoundRobin => {
                for _ in 0..self.ready.len() {
                    let Some(id) = self.ready.pop_front() else { break };
                    match self.poll_connection(id, now, planes, buf) {
                        Polled::Sent(t) => {
                            // Round robin: the connection goes to the back of the line.
                            self.ready.push_back(id);
                            return Some(t);
                        }
                        // Sendable, but only on planes whose port is busy: it stays in line.
                        Polled::Blocked => self.ready.push_back(id),
                        Polled::Idle => {}
                    }
                }
            }
            TxOrder::OldestFirst => {
                let mut visit = core::mem::take(&mut self.tx_visit);
                let ready = core::mem::take(&mut self.ready);
                tx_order::visit_order(ready.iter().map(|&id| self.cached_tx_key(id)), &mut visit);
                self.ready = ready;
                let (mut sent, mut went_idle) = (None, false);
                for &(_, pos) in &visit {
                    let Some(&id) = self.ready.get(pos as usize) else {
                        continue;
                    };
                    match self.poll_connection(id, now, planes, buf) {
                        Polled::Sent(t) => {
                            // Equal ranks take turns: the connection goes to the back of the line.
                            // Nothing left the list yet, so `pos` still holds it.
                            self.ready.remove(pos as usize);
                            self.ready.push_back(id);
                            sent = Some(t);
                            break;
                        }
                        Polled::Blocked => {}
                        // Out of the ready list; removed below so that positions hold meanwhile.
                        Polled::Idle => went_idle = true,
                    }
                }
                if went_idle {
                    let conns = &self.conns;
                    self.ready.retain(|&id| {
                        conns
                            .get((id as usize).wrapping_sub(1))
                            .and_then(|c| c.as_ref())
                            .is_some_and(|c| c.in_ready)
                    });
                }
                self.tx_visit = visit;
                return sent;
            }
        }
        None
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.timers.peek().map(|Reverse((t, _))| *t)
    }

    fn set_ready_planes(&mut self, planes: u8) {
        self.ready_planes = planes;
    }

    fn handle_timeout(&mut self, now: Nanos) {
        self.clock = self.clock.max(now);
        // Take every due entry first: running a connection's timers may schedule it again.
        let mut due = Vec::new();
        while let Some(&Reverse((t, id))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            due.push((t, id));
        }
        for (t, id) in due {
            // a stale entry (the connection rescheduled) leaves it untouched, blocked verdict and all
            if self.connection(id).is_none_or(|c| c.scheduled != Some(t)) {
                continue;
            }
            let Some(c) = self.connection_mut(id) else { continue };
            c.scheduled = None;
            self.refresh_hint(now, None);
            let hint = self.hint_mbps;
            self.run_conn_timers(now, id, hint);
            self.schedule(id, now);
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.counters.pairs()
    }
}

/// What one connection's transmit poll gave (`Endpoint::poll_connection`).
enum Polled {
    Sent(Transmit),
    /// Sendable, but only on planes whose port is busy (or such a poll skipped): it keeps
    /// its place in the ready list.
    Blocked,
    /// Nothing sendable now: out of the ready list until an ACK, post or timer.
    Idle,
}

impl Endpoint {
    /// Give connection `id` of the ready list its transmit opportunity (SPEC.md §8.3).
    fn poll_connection(&mut self, id: ConnId, now: Nanos, planes: u8, buf: &mut [u8]) -> Polled {
        // Polls that would come back port-blocked again are skipped (the same outcome and
        // order, without touching the connection's state: with many connections on a busy or
        // dead plane they were most of the simulator's time). Not when recording component calls.
        let skip_blocked = !self.cfg.trace_components;
        if skip_blocked && self.still_blocked(id, now, planes) {
            self.counters.blocked_polls_skipped += 1;
            return Polled::Blocked;
        }
        let local = self.cfg.addr;
        let mem_epoch = self.mem_epoch;
        let Some((c, mut ctx)) = self.split(id) else {
            return Polled::Idle;
        };
        match c.poll_transmit(now, &local, buf, planes, &mut ctx) {
            Some((len, plane)) => {
                self.counters.tx_frames += 1;
                self.schedule(id, now);
                Polled::Sent(Transmit { len, plane })
            }
            None if c.port_blocked => {
                let verdict = c.blocked_verdict();
                if let (true, Some((planes, until))) = (skip_blocked, verdict) {
                    let i = (id as usize).wrapping_sub(1);
                    if let (Some(p), Some(b)) = (self.blocked_planes.get_mut(i), self.blocked_until.get_mut(i)) {
                        *p = planes;
                        *b = BlockedUntil { until, mem_epoch };
                    }
                }
                Polled::Blocked
            }
            None => {
                c.in_ready = false;
                self.schedule(id, now);
                Polled::Idle
            }
        }
    }
}

impl Endpoint {
    fn post(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: Option<RemoteBuf>,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        self.mem.check_local(local.key, local.offset, u64::from(local.len))?;
        let clock = self.clock;
        let c = self.connection_mut(conn).ok_or(VerbError::UnknownConnection(conn))?;
        if c.state != ConnState::Established {
            return Err(VerbError::NotConnected(conn));
        }
        if stream >= c.streams_max {
            return Err(VerbError::BadStream(stream));
        }
        c.post(clock, stream, local, remote, wr_id);
        if !c.in_ready {
            c.in_ready = true;
            self.ready.push_back(conn);
        }
        Ok(())
    }

    fn run_conn_timers(&mut self, now: Nanos, id: ConnId, hint: u32) {
        let Some(c) = self.connection_mut(id) else { return };
        match c.state {
            ConnState::Connecting { nonce, tries, retry_at } if retry_at <= now => {
                if tries >= CM_TRIES {
                    self.release(id);
                    self.events.push_back(Event::ConnectFailed(id));
                    return;
                }
                c.state = ConnState::Connecting {
                    nonce,
                    tries: tries + 1,
                    retry_at: now + CM_RETRY_NS,
                };
                let c = self.connection(id).map(|c| CmOut {
                    opcode: wire::opcode::MR_CONNECT,
                    peer: c.peer,
                    plane: 0,
                    dest_qp: 0,
                    cmh: self.cmh(c, 0),
                });
                self.cm_out.extend(c);
                return;
            }
            ConnState::Closing { tries, retry_at } if retry_at <= now => {
                if tries >= CM_TRIES {
                    self.release(id);
                    self.events.push_back(Event::Disconnected(id));
                    return;
                }
                c.state = ConnState::Closing {
                    tries: tries + 1,
                    retry_at: now + CM_RETRY_NS,
                };
                let out = self
                    .connection(id)
                    .map(|c| self.cm_reply(c, wire::opcode::MR_DISCONNECT, 0, 0));
                self.cm_out.extend(out);
                return;
            }
            ConnState::Established => {}
            _ => return,
        }
        let timeout = self.cfg.peer_timeout_ns;
        let Some((c, mut ctx)) = self.split(id) else { return };
        let wake = c.on_timeout(now, hint, &mut ctx);
        if c.pending_messages() > 0 && !c.is_idle() && now.saturating_sub(c.last_progress()) > timeout {
            // The peer is gone: fail everything and tear the connection down.
            ctx.counters.peer_timeouts += 1;
            c.fail_all(&mut ctx);
            self.release(id);
            self.events.push_back(Event::Disconnected(id));
            return;
        }
        if wake {
            self.wake(id);
        }
    }
}
