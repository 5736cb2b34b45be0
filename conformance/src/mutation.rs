//! Deliberate faults, injected on the adapter side (the implementation is not touched), to
//! show that the suite notices a broken implementation: [`Mutant`] wraps any adapter and
//! corrupts what crosses the interface the way a faulty implementation would behave.
//! Test-only: `tests/conformance_mutation.rs` requires every mutation to fail some case.

use mroce_model::memory::MrKey;
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, VerbError};
use mroce_model::wire::{self, opcode, BTH_OFFSET, MRH_FLAG_RETX};

use crate::adapter::{Adapter, Env, Need, OutFrame, Setup};

/// A fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Flip a bit of the R_Key of every WRITE before the IUT sees it (as if the IUT looked up
    /// the wrong key): placements fail.
    FlipRkey,
    /// Drop every retransmission the IUT sends (as if it never retransmitted).
    DropRetransmissions,
    /// Repair the ICRC of every frame before the IUT sees it (as if the IUT skipped the ICRC
    /// check): corrupted frames are accepted.
    SkipIcrcCheck,
    /// Add one to the MRH PSN of every retransmission (as if the IUT retransmitted on the
    /// wrong PSN), re-encoding the frame.
    RetransmitWrongPsn,
}

impl Mutation {
    /// Every mutation.
    pub const ALL: [Mutation; 4] = [
        Mutation::FlipRkey,
        Mutation::DropRetransmissions,
        Mutation::SkipIcrcCheck,
        Mutation::RetransmitWrongPsn,
    ];
}

/// An adapter with a fault.
pub struct Mutant<A> {
    inner: A,
    m: Mutation,
}

impl<A: Adapter> Mutant<A> {
    /// Wrap `inner` with fault `m`.
    pub fn new(inner: A, m: Mutation) -> Self {
        Mutant { inner, m }
    }
}

fn refresh_icrc(f: &mut [u8]) {
    let n = f.len();
    if n >= BTH_OFFSET + 16 {
        let c = wire::icrc(&f[..n - 4]);
        f[n - 4..].copy_from_slice(&c.to_le_bytes());
    }
}

fn is_retx(f: &[u8]) -> bool {
    let op = f.get(BTH_OFFSET).copied();
    matches!(op, Some(opcode::MR_WRITE | opcode::MR_SEND))
        && f.get(BTH_OFFSET + 12).is_some_and(|b| b & MRH_FLAG_RETX != 0)
}

impl<A: Adapter> Adapter for Mutant<A> {
    fn target(&self) -> &'static str {
        self.inner.target()
    }
    fn unavailable(&self) -> Option<String> {
        self.inner.unavailable()
    }
    fn lacks(&self, need: Need) -> Option<String> {
        self.inner.lacks(need)
    }
    fn default_retries(&self) -> u32 {
        self.inner.default_retries()
    }
    fn start(&mut self, setup: &Setup) -> Result<Env, String> {
        self.inner.start(setup)
    }
    fn now(&self) -> u64 {
        self.inner.now()
    }
    fn advance(&mut self, ns: u64) {
        self.inner.advance(ns)
    }
    fn frame_in(&mut self, plane: u8, frame: &[u8]) {
        let mut f = frame.to_vec();
        match self.m {
            Mutation::FlipRkey if f.get(BTH_OFFSET) == Some(&opcode::MR_WRITE) && f.len() >= BTH_OFFSET + 12 + 44 => {
                // RPH.R_Key: bytes 40..44 after the BTH (MRH 16 + SDH 16 + VA 8).
                f[BTH_OFFSET + 12 + 42] ^= 0x01;
                refresh_icrc(&mut f);
            }
            Mutation::SkipIcrcCheck => refresh_icrc(&mut f),
            _ => {}
        }
        self.inner.frame_in(plane, &f)
    }
    fn frames_out(&mut self) -> Vec<OutFrame> {
        let mut v = self.inner.frames_out();
        match self.m {
            Mutation::DropRetransmissions => v.retain(|f| !is_retx(&f.bytes)),
            Mutation::RetransmitWrongPsn => {
                for f in v.iter_mut().filter(|f| is_retx(&f.bytes)) {
                    let at = BTH_OFFSET + 12 + 4;
                    let psn = u32::from_be_bytes(f.bytes[at..at + 4].try_into().expect("4 bytes")).wrapping_add(1);
                    f.bytes[at..at + 4].copy_from_slice(&psn.to_be_bytes());
                    f.bytes[BTH_OFFSET + 9..BTH_OFFSET + 12].copy_from_slice(&psn.to_be_bytes()[1..]);
                    refresh_icrc(&mut f.bytes);
                }
            }
            _ => {}
        }
        v
    }
    fn events(&mut self) -> Vec<Event> {
        self.inner.events()
    }
    fn counters(&mut self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }
    fn debug_state(&mut self) -> String {
        self.inner.debug_state()
    }
    fn register(&mut self, len: usize, remote_write: bool) -> MrKey {
        self.inner.register(len, remote_write)
    }
    fn deregister(&mut self, key: MrKey) -> Result<(), String> {
        self.inner.deregister(key)
    }
    fn write_mem(&mut self, key: MrKey, offset: u64, data: &[u8]) -> Result<(), String> {
        self.inner.write_mem(key, offset, data)
    }
    fn read_mem(&mut self, key: MrKey, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        self.inner.read_mem(key, offset, len)
    }
    fn add_peer(&mut self, peer: NicAddr) {
        self.inner.add_peer(peer)
    }
    fn connect(&mut self, peer: NicAddr) -> Result<ConnId, VerbError> {
        self.inner.connect(peer)
    }
    fn disconnect(&mut self, conn: ConnId) -> Result<(), VerbError> {
        self.inner.disconnect(conn)
    }
    fn post_write(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        self.inner.post_write(conn, stream, local, remote, wr_id)
    }
    fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        self.inner.post_send(conn, stream, local, wr_id)
    }
    fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        self.inner.post_recv(conn, stream, local, wr_id)
    }
}
