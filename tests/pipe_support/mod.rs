//! Test and benchmark support for the pipe harness.
//!
//! [`NullTransport`] is a driver-cost probe, not a protocol: it emits one 4 KiB-class WRITE
//! frame per MTU of each posted message without copying payload or computing an ICRC, has
//! no acknowledgements and no recovery, and completes a message at the sender once its last
//! frame is emitted and at the receiver once all its frames have arrived. With it, a pipe
//! run measures the driver's own per-frame cost. It only completes at 0% loss, and the
//! destination memory is never written (integrity reports "corrupt").
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};

use mroce_model::memory::Memory;
use mroce_model::transport::{
    Completion, ConnId, Event, LocalBuf, Nanos, NicAddr, RemoteBuf, Status, Transmit, Transport, VerbError, WorkKind,
};
use mroce_model::wire;

/// Payload bytes per frame.
pub const NULL_MTU: u32 = 4096;
const HDR: usize = wire::BTH_OFFSET + wire::BTH_LEN + 12;

struct Msg {
    conn: ConnId,
    wr_id: u64,
    id: u32,
    len: u32,
    sent: u32,
}

/// See the module documentation.
pub struct NullTransport {
    addr: NicAddr,
    peer: NicAddr,
    mem: Memory,
    next_conn: ConnId,
    next_msg: u32,
    queue: VecDeque<Msg>,
    events: VecDeque<Event>,
    rx: HashMap<u32, u32>,
    frames: u64,
}

impl NullTransport {
    /// A NIC with the given addresses.
    pub fn new(addr: NicAddr) -> Self {
        NullTransport {
            addr,
            peer: NicAddr::default(),
            mem: Memory::new(1),
            next_conn: 1,
            next_msg: 0,
            queue: VecDeque::new(),
            events: VecDeque::new(),
            rx: HashMap::new(),
            frames: 0,
        }
    }
}

impl Transport for NullTransport {
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
        self.peer = peer;
    }
    fn connect(&mut self, _now: Nanos, _peer: NicAddr) -> Result<ConnId, VerbError> {
        let id = self.next_conn;
        self.next_conn += 1;
        self.events.push_back(Event::Connected(id));
        Ok(id)
    }
    fn disconnect(&mut self, _now: Nanos, conn: ConnId) -> Result<(), VerbError> {
        self.events.push_back(Event::Disconnected(conn));
        Ok(())
    }
    fn post_write(
        &mut self,
        conn: ConnId,
        _stream: u16,
        local: LocalBuf,
        _remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        let id = self.next_msg;
        self.next_msg += 1;
        self.queue.push_back(Msg {
            conn,
            wr_id,
            id,
            len: local.len,
            sent: 0,
        });
        Ok(())
    }
    fn post_send(&mut self, _: ConnId, _: u16, _: LocalBuf, _: u64) -> Result<(), VerbError> {
        Err(VerbError::Unsupported("send"))
    }
    fn post_recv(&mut self, _: ConnId, _: u16, _: LocalBuf, _: u64) -> Result<(), VerbError> {
        Err(VerbError::Unsupported("recv"))
    }
    fn handle_frame(&mut self, _now: Nanos, _plane: u8, frame: &[u8]) {
        if frame.len() < HDR {
            return;
        }
        let b = &frame[wire::BTH_OFFSET + wire::BTH_LEN..];
        let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let len = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        let n = self.rx.entry(id).or_insert(0);
        *n += 1;
        if *n == len.div_ceil(NULL_MTU).max(1) {
            self.rx.remove(&id);
            let c = Completion {
                conn: 1,
                stream: 0,
                msg_seq: id,
                wr_id: 0,
                kind: WorkKind::WriteReceived,
                status: Status::Ok,
                bytes: len,
            };
            self.events.push_back(Event::Completion(c));
        }
    }
    fn poll_transmit(&mut self, _now: Nanos, buf: &mut [u8]) -> Option<Transmit> {
        let m = self.queue.front_mut()?;
        let chunk = (m.len - m.sent).min(NULL_MTU);
        let len = HDR + chunk as usize + wire::ICRC_LEN;
        let f = &mut buf[..len];
        f[..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x0B, 2, 0, 0, 0, 0, 0x0A]);
        f[12..14].copy_from_slice(&wire::ETHERTYPE_IPV4.to_be_bytes());
        let ip = &mut f[wire::ETH_LEN..wire::ETH_LEN + wire::IPV4_LEN];
        ip[0] = 0x45;
        ip[1] = 0;
        ip[9] = wire::IPPROTO_UDP;
        ip[12..16].copy_from_slice(&self.addr.ips[0]);
        ip[16..20].copy_from_slice(&self.peer.ips[0]);
        let sport = 0xC000u16 | (self.frames % 16) as u16;
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&4791u16.to_be_bytes());
        f[wire::BTH_OFFSET] = wire::opcode::RC_WRITE_ONLY;
        let b = &mut f[wire::BTH_OFFSET + wire::BTH_LEN..];
        b[0..4].copy_from_slice(&m.id.to_be_bytes());
        b[4..8].copy_from_slice(&m.len.to_be_bytes());
        m.sent += chunk;
        self.frames += 1;
        if m.sent >= m.len {
            let c = Completion {
                conn: m.conn,
                stream: 0,
                msg_seq: m.id,
                wr_id: m.wr_id,
                kind: WorkKind::Write,
                status: Status::Ok,
                bytes: m.len,
            };
            self.events.push_back(Event::Completion(c));
            self.queue.pop_front();
        }
        Some(Transmit { len, plane: 0 })
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    fn handle_timeout(&mut self, _now: Nanos) {}
    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("tx_frames", self.frames)]
    }
}
