//! Simulator speed (`cargo bench -p mroce-sim --bench sim`): events per second of the event
//! loop on one core, for a 64-host, 4-plane permutation.
//!
//! Three endpoints are measured: the two model transports (mroce, RoCEv2), and a *null*
//! transport that does no protocol work (no ACKs, no ICRC, no payload copies: it emits
//! header-only-sized frames of MTU length and counts them), which gives the simulator's own
//! ceiling, the figure comparable with simulators whose endpoints are abstract (uet-htsim).
//! The fabric has one (fat) spine per plane so that the null transport, which has no loss
//! recovery, meets no ECMP collision.
//! The time reported to criterion is the event loop's wall time and the throughput unit is
//! simulator events.

use std::collections::VecDeque;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mroce_model::memory::Memory;
use mroce_model::transport::{
    Completion, ConnId, Event, LocalBuf, Nanos, NicAddr, RemoteBuf, Status, Transmit, Transport, VerbError, WorkKind,
};
use mroce_model::wire;
use mroce_sim::engine::{self, RunConfig};
use mroce_sim::fabric::FabricConfig;
use mroce_sim::rng::{derive_seed, Rng};
use mroce_sim::workload::Workload;
use mroce_sim::{Kind, TransportParams};

const OP_CONNECT: u8 = 0xC8;
const OP_CONNECT_ACK: u8 = 0xC9;

/// Lossless, ACK-free blaster: enough of a transport for the simulator to route its frames.
struct Null {
    addr: NicAddr,
    mem: Memory,
    mtu: usize,
    peers: Vec<NicAddr>,
    /// Per local connection: peer and the peer's id for it.
    conns: Vec<(NicAddr, u32)>,
    ctrl: VecDeque<(u8, NicAddr, u32, u32)>,
    /// (conn, wr_id, len, sent)
    msgs: VecDeque<(u32, u64, u32, u32)>,
    /// Receive side: per local connection, (bytes so far, message length).
    rx: Vec<(u32, u32)>,
    events: VecDeque<Event>,
    planes: u8,
    next_plane: u8,
}

impl Null {
    fn new(addr: NicAddr, mtu: u16) -> Self {
        Null {
            addr,
            mem: Memory::new(1),
            mtu: usize::from(mtu),
            peers: Vec::new(),
            conns: Vec::new(),
            ctrl: VecDeque::new(),
            msgs: VecDeque::new(),
            rx: Vec::new(),
            events: VecDeque::new(),
            planes: addr.planes,
            next_plane: 0,
        }
    }

    // the frame's header fields, one argument each
    #[allow(clippy::too_many_arguments)]
    fn frame(&self, buf: &mut [u8], peer: &NicAddr, plane: u8, op: u8, conn: u32, a: u32, b: u32, len: usize) -> usize {
        let p = plane as usize;
        buf[..len].fill(0);
        buf[0..6].copy_from_slice(&peer.mac);
        buf[6..12].copy_from_slice(&self.addr.mac);
        buf[12] = 0x08;
        buf[14] = 0x45;
        buf[15] = wire::ecn::ECT0;
        buf[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        buf[22] = 64;
        buf[23] = 17;
        buf[26..30].copy_from_slice(&self.addr.ips[p]);
        buf[30..34].copy_from_slice(&peer.ips[p]);
        buf[34..36].copy_from_slice(&(0xC000u16 | (conn as u16 & 0xFFF)).to_be_bytes());
        buf[36..38].copy_from_slice(&4791u16.to_be_bytes());
        buf[42] = op;
        buf[46..50].copy_from_slice(&conn.to_be_bytes());
        buf[50..54].copy_from_slice(&a.to_be_bytes());
        buf[54..58].copy_from_slice(&b.to_be_bytes());
        len
    }
}

impl Transport for Null {
    fn name(&self) -> &'static str {
        "null"
    }
    fn addr(&self) -> &NicAddr {
        &self.addr
    }
    fn memory(&self) -> &Memory {
        &self.mem
    }
    fn memory_mut(&mut self) -> &mut Memory {
        &mut self.mem
    }
    fn add_peer(&mut self, peer: NicAddr) {
        self.peers.push(peer);
    }
    fn connect(&mut self, _now: Nanos, peer: NicAddr) -> Result<ConnId, VerbError> {
        self.conns.push((peer, 0));
        self.rx.push((0, 0));
        let id = self.conns.len() as u32;
        self.ctrl.push_back((OP_CONNECT, peer, 0, id));
        Ok(id)
    }
    fn disconnect(&mut self, _now: Nanos, _conn: ConnId) -> Result<(), VerbError> {
        Err(VerbError::Unsupported("disconnect"))
    }
    fn post_write(
        &mut self,
        conn: ConnId,
        _s: u16,
        local: LocalBuf,
        _r: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        self.msgs.push_back((conn, wr_id, local.len, 0));
        Ok(())
    }
    fn post_send(&mut self, _c: ConnId, _s: u16, _l: LocalBuf, _w: u64) -> Result<(), VerbError> {
        Err(VerbError::Unsupported("send"))
    }
    fn post_recv(&mut self, _c: ConnId, _s: u16, _l: LocalBuf, _w: u64) -> Result<(), VerbError> {
        Err(VerbError::Unsupported("recv"))
    }
    fn handle_frame(&mut self, _now: Nanos, _plane: u8, f: &[u8]) {
        let be = |o: usize| u32::from_be_bytes(f[o..o + 4].try_into().unwrap());
        let (op, conn, a, b) = (f[42], be(46), be(50), be(54));
        match op {
            OP_CONNECT => {
                let src = [f[26], f[27], f[28], f[29]];
                let Some(peer) = self.peers.iter().find(|p| p.plane_of(src).is_some()).copied() else {
                    return;
                };
                self.conns.push((peer, b));
                self.rx.push((0, 0));
                let id = self.conns.len() as u32;
                self.events.push_back(Event::Accepted(id));
                self.ctrl.push_back((OP_CONNECT_ACK, peer, b, id));
            }
            OP_CONNECT_ACK => {
                if let Some(c) = self.conns.get_mut(conn as usize - 1) {
                    c.1 = b;
                    self.events.push_back(Event::Connected(conn));
                }
            }
            _ => {
                let Some(r) = self.rx.get_mut(conn as usize - 1) else {
                    return;
                };
                r.0 += a;
                r.1 = b;
                if r.0 >= r.1 {
                    let bytes = r.1;
                    *r = (0, 0);
                    self.events.push_back(Event::Completion(Completion {
                        conn,
                        stream: 0,
                        msg_seq: 0,
                        wr_id: 0,
                        kind: WorkKind::WriteReceived,
                        status: Status::Ok,
                        bytes,
                    }));
                }
            }
        }
    }
    fn poll_transmit(&mut self, _now: Nanos, buf: &mut [u8]) -> Option<Transmit> {
        if let Some((op, peer, dest, id)) = self.ctrl.pop_front() {
            let len = self.frame(buf, &peer, 0, op, dest, 0, id, 64);
            return Some(Transmit { len, plane: 0 });
        }
        let &mut (conn, wr_id, len, ref mut sent) = self.msgs.front_mut()?;
        let chunk = (len - *sent).min(self.mtu as u32);
        *sent += chunk;
        let done = *sent >= len;
        let (peer, dest) = self.conns[conn as usize - 1];
        let plane = self.next_plane;
        self.next_plane = (self.next_plane + 1) % self.planes;
        let n = self.frame(
            buf,
            &peer,
            plane,
            wire::opcode::MR_WRITE,
            dest,
            chunk,
            len,
            chunk as usize + wire::WRITE_HEADERS,
        );
        if done {
            self.msgs.pop_front();
            self.events.push_back(Event::Completion(Completion {
                conn,
                stream: 0,
                msg_seq: 0,
                wr_id,
                kind: WorkKind::Write,
                status: Status::Ok,
                bytes: len,
            }));
        }
        Some(Transmit { len: n, plane })
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    fn handle_timeout(&mut self, _now: Nanos) {}
    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

fn bench(c: &mut Criterion) {
    // One (fat) spine per plane: no ECMP collisions, so the lossless null transport, which
    // never retransmits, completes; the same fabric for all three cases.
    let fabric = FabricConfig {
        spines: 1,
        ..FabricConfig::default()
    };
    let mut g = c.benchmark_group("sim");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(8));
    for (name, kind, null) in [
        ("null", Kind::Mroce, true),
        ("mroce", Kind::Mroce, false),
        ("rocev2", Kind::Rocev2, false),
    ] {
        let mut cfg = RunConfig::new(fabric.clone(), kind, 7);
        cfg.time_limit_ns = 100_000_000;
        let perm = Rng::new(derive_seed(7, 1)).derangement(fabric.hosts);
        let w = Workload::permutation(cfg.layout(), &perm, 4 << 20, 7).unwrap();
        let mut factory = |k: Kind, a: NicAddr, s: u64, p: &TransportParams| -> Result<Box<dyn Transport>, String> {
            if null {
                Ok(Box::new(Null::new(a, p.mtu)))
            } else {
                mroce_sim::model_factory(k, a, s, p)
            }
        };
        let probe = engine::run(&cfg, &w, &mut factory, None).unwrap();
        assert!(
            probe.complete,
            "{name}: {:?} {:?} flows done {}",
            probe.failure,
            probe.net,
            probe.flows.iter().filter(|f| f.recv_ns.is_some()).count()
        );
        eprintln!(
            "{name}: {} events, {:.2} M events/s, {:.2} M hops/s, {:.0} k data frames/s",
            probe.events,
            probe.events_per_s / 1e6,
            probe.net.hops as f64 / probe.loop_wall_s / 1e6,
            (w.bytes / 4096) as f64 / probe.loop_wall_s / 1e3
        );
        g.throughput(Throughput::Elements(probe.events));
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    let r = engine::run(&cfg, &w, &mut factory, None).unwrap();
                    t += Duration::from_secs_f64(r.loop_wall_s);
                }
                t
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
