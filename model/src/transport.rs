//! The sans-IO driver interface shared by every transport in the model (mroce and the
//! RoCEv2 baseline) and by every driver (pipe, fabric simulator, UDP sockets, lockstep).
//!
//! A driver owns the clock and the wire: it hands frames in with [`Transport::handle_frame`],
//! pulls frames out with [`Transport::poll_transmit`], calls [`Transport::handle_timeout`]
//! when [`Transport::poll_timeout`] says so, and drains [`Transport::poll_event`].
//! Time is in nanoseconds from an arbitrary origin.

use crate::memory::{MemError, Memory, MrKey};

/// Nanoseconds.
pub type Nanos = u64;

/// Identifier of a connection inside one endpoint (the BTH DestQP the peer uses).
pub type ConnId = u32;

/// Addresses of a NIC: one MAC and one IPv4 address per plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NicAddr {
    /// MAC address (the same on every plane port).
    pub mac: [u8; 6],
    /// IPv4 address of each plane port (only the first `planes` are used).
    pub ips: [[u8; 4]; crate::params::MAX_PLANES],
    /// Number of planes.
    pub planes: u8,
}

impl NicAddr {
    /// A NIC whose plane `i` address is `base` with the third octet replaced by `i`.
    pub fn with_planes(mac: [u8; 6], base: [u8; 4], planes: u8) -> Self {
        let mut ips = [[0u8; 4]; crate::params::MAX_PLANES];
        for (i, ip) in ips.iter_mut().enumerate() {
            *ip = [base[0], base[1], i as u8, base[3]];
        }
        NicAddr {
            mac,
            ips,
            planes: planes.max(1),
        }
    }

    /// Which plane an address belongs to.
    pub fn plane_of(&self, ip: [u8; 4]) -> Option<u8> {
        self.ips[..self.planes as usize]
            .iter()
            .position(|a| *a == ip)
            .map(|p| p as u8)
    }
}

/// One frame ready for the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Frame length written into the caller's buffer.
    pub len: usize,
    /// NIC port (plane) that must send it.
    pub plane: u8,
}

/// Kind of work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    /// RDMA WRITE (sender side).
    Write,
    /// SEND (sender side).
    Send,
    /// A posted receive consumed by a SEND.
    Recv,
    /// An RDMA WRITE landed in local memory (receiver side, in stream order).
    WriteReceived,
}

/// Completion status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Success.
    Ok,
    /// The peer refused the placement (R_Key, bounds or access).
    RemoteAccessError,
    /// The peer found the request invalid (SEND larger than its buffer).
    RemoteInvalid,
    /// The connection failed (peer unreachable past its timeout, or torn down).
    ConnectionFailed,
}

/// A completion event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Connection.
    pub conn: ConnId,
    /// Stream (0 for transports without streams).
    pub stream: u16,
    /// Message sequence number within the stream.
    pub msg_seq: u32,
    /// Caller's work request id (0 for `WriteReceived`).
    pub wr_id: u64,
    /// Kind.
    pub kind: WorkKind,
    /// Status.
    pub status: Status,
    /// Bytes transferred.
    pub bytes: u32,
}

/// Events a transport reports to its driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// An outgoing connection is established.
    Connected(ConnId),
    /// An incoming connection was accepted.
    Accepted(ConnId),
    /// A connection attempt failed (no answer).
    ConnectFailed(ConnId),
    /// A connection ended (peer request, local request or failure).
    Disconnected(ConnId),
    /// A work request completed.
    Completion(Completion),
    /// A path changed health (for telemetry and tests).
    PathHealth {
        /// Connection.
        conn: ConnId,
        /// Path index.
        path: u8,
        /// True when the path is usable again, false when it went down.
        up: bool,
    },
}

/// Why a verb was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerbError {
    /// No such connection.
    #[error("unknown connection {0}")]
    UnknownConnection(ConnId),
    /// The connection is not established.
    #[error("connection {0} is not established")]
    NotConnected(ConnId),
    /// Stream id out of range.
    #[error("stream {0} out of range")]
    BadStream(u16),
    /// The local buffer is not inside a registered region.
    #[error("local buffer: {0}")]
    Local(#[from] MemError),
    /// Message too large (the SDH length is 32 bits).
    #[error("message of {0} bytes is too large")]
    TooLarge(u64),
    /// The connection table is full.
    #[error("connection table full")]
    TableFull,
    /// The transport does not support this verb.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}

/// A local buffer: a registered region and a range inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalBuf {
    /// Region key.
    pub key: MrKey,
    /// Offset inside the region.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// A remote destination for an RDMA WRITE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteBuf {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
}

/// The interface every transport endpoint (a NIC) offers to drivers and applications.
pub trait Transport {
    /// Short name for reports ("mroce" / "rocev2").
    fn name(&self) -> &'static str;
    /// Local addresses.
    fn addr(&self) -> &NicAddr;
    /// Registered memory of this NIC.
    fn memory(&self) -> &Memory;
    /// Registered memory of this NIC, mutable (applications fill their buffers).
    fn memory_mut(&mut self) -> &mut Memory;

    /// Make a peer's addresses known (the ARP/neighbour table of the NIC).
    fn add_peer(&mut self, peer: NicAddr);
    /// Open a connection to a known peer; `Event::Connected` follows.
    fn connect(&mut self, now: Nanos, peer: NicAddr) -> Result<ConnId, VerbError>;
    /// Close a connection; `Event::Disconnected` follows.
    fn disconnect(&mut self, now: Nanos, conn: ConnId) -> Result<(), VerbError>;

    /// Post an RDMA WRITE of `local` to `remote` on `stream`.
    fn post_write(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError>;
    /// Post a SEND of `local` on `stream`.
    fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError>;
    /// Post a receive buffer on `stream` (the n-th SEND on a stream lands in the n-th receive).
    fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError>;

    /// Hand in a frame received on port `plane`.
    fn handle_frame(&mut self, now: Nanos, plane: u8, frame: &[u8]);
    /// Write the next frame to send into `buf` (which must hold one MTU frame).
    fn poll_transmit(&mut self, now: Nanos, buf: &mut [u8]) -> Option<Transmit>;
    /// Planes whose port can take a data frame now (bit p = plane p), the driver's port
    /// back-pressure: until the next call, [`Transport::poll_transmit`] sends data only on
    /// paths of these planes, as a multi-port NIC's packet engine picks a path whose port has
    /// room (SPEC.md §8.3). Initially every plane. Transports with one path per connection
    /// ignore it.
    fn set_ready_planes(&mut self, _planes: u8) {}
    /// Earliest time at which [`Transport::handle_timeout`] must be called.
    fn poll_timeout(&self) -> Option<Nanos>;
    /// Run timers due at `now`.
    fn handle_timeout(&mut self, now: Nanos);
    /// Next event, if any.
    fn poll_event(&mut self) -> Option<Event>;

    /// Counters as (name, value) pairs, names as in SPEC.md §9.
    fn counters(&self) -> alloc::vec::Vec<(&'static str, u64)>;
}
