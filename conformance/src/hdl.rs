//! Adapter for the co-simulated hardware blocks. The hardware implements the three
//! hardware-mapped components (receive tracker, transmit scoreboard, path selector), not the
//! connection layer around them (frames, verbs, memory). So the HDL target is the reference
//! connection layer with every component operation it performs recorded and, at the end of
//! the case, executed in order on fresh hardware per connection (the Verilated blocks), whose
//! every result must equal the model's bit for bit. A case passes when its scripted exchange passes *and* the hardware
//! agreed on every operation; a case that never reaches a component (e.g. a frame rejected by
//! the decoder) is not applicable: the blocks do not cover it.

use std::collections::BTreeMap;

use mroce_model::component_trace::{ComponentCalls, ComponentReplay, RxCall, SelCall, TxCall};
use mroce_model::memory::MrKey;
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, VerbError};

use crate::adapter::{Adapter, Env, Need, OutFrame, Setup};
use crate::model::ModelAdapter;

/// Builds one replay (one set of hardware blocks) for a new connection.
pub type ReplayFactory = Box<dyn FnMut() -> Result<Box<dyn ComponentReplay>, String>>;

/// The HDL target: the model's connection layer over replayed hardware components.
pub struct HdlAdapter {
    name: &'static str,
    inner: ModelAdapter,
    factory: ReplayFactory,
    /// Operations recorded in this run, per connection (a reused connection id starts with
    /// the blocks' initialisations, which the replay applies as resets).
    pending: BTreeMap<ConnId, ComponentCalls>,
    unavailable: Option<String>,
}

impl HdlAdapter {
    /// An adapter whose components are replayed on what `factory` builds; `name` is the
    /// target name it reports. `unavailable` (e.g. "verilator missing") makes every case n/a.
    pub fn new(name: &'static str, factory: ReplayFactory, unavailable: Option<String>) -> Self {
        HdlAdapter {
            name,
            inner: ModelAdapter::traced(0x6d72_6f63),
            factory,
            pending: BTreeMap::new(),
            unavailable,
        }
    }

    /// Collect what the model did since the last call, per connection, in order.
    fn sync(&mut self) {
        for (conn, calls) in self.inner.take_component_calls() {
            let all = self.pending.entry(conn).or_default();
            all.rx.extend(calls.rx);
            all.tx.extend(calls.tx);
            all.sel.extend(calls.sel);
        }
    }

    /// Replay each connection's whole record on fresh hardware (one run per connection).
    fn replay_all(&mut self) -> Result<usize, String> {
        self.sync();
        let mut checked = 0;
        for (conn, calls) in std::mem::take(&mut self.pending) {
            let mut replay = (self.factory)().map_err(|e| format!("building the hardware replay failed: {e}"))?;
            replay
                .replay(&calls)
                .map_err(|m| format!("hardware differs from the model on connection {conn}: {m}"))?;
            checked += data_path_ops(&calls);
        }
        Ok(checked)
    }
}

/// Operations other than block initialisation.
fn data_path_ops(c: &ComponentCalls) -> usize {
    c.rx.iter().filter(|x| !matches!(x, RxCall::Init { .. })).count()
        + c.tx.iter().filter(|x| !matches!(x, TxCall::Init { .. })).count()
        + c.sel.iter().filter(|x| !matches!(x, SelCall::Init { .. })).count()
}

impl Adapter for HdlAdapter {
    fn target(&self) -> &'static str {
        self.name
    }
    fn unavailable(&self) -> Option<String> {
        self.unavailable.clone()
    }
    fn lacks(&self, need: Need) -> Option<String> {
        self.inner.lacks(need)
    }
    fn start(&mut self, setup: &Setup) -> Result<Env, String> {
        self.pending.clear();
        self.inner.start(setup)
    }
    fn verify(&mut self) -> Result<Option<usize>, String> {
        self.replay_all().map(Some)
    }
    fn now(&self) -> u64 {
        self.inner.now()
    }
    fn advance(&mut self, ns: u64) {
        self.inner.advance(ns);
        self.sync();
    }
    fn frame_in(&mut self, plane: u8, frame: &[u8]) {
        self.inner.frame_in(plane, frame);
        self.sync();
    }
    fn frames_out(&mut self) -> Vec<OutFrame> {
        let f = self.inner.frames_out();
        self.sync();
        f
    }
    fn events(&mut self) -> Vec<Event> {
        let e = self.inner.events();
        self.sync();
        e
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
        let r = self.inner.connect(peer);
        self.sync();
        r
    }
    fn disconnect(&mut self, conn: ConnId) -> Result<(), VerbError> {
        let r = self.inner.disconnect(conn);
        self.sync();
        r
    }
    fn post_write(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        let r = self.inner.post_write(conn, stream, local, remote, wr_id);
        self.sync();
        r
    }
    fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        let r = self.inner.post_send(conn, stream, local, wr_id);
        self.sync();
        r
    }
    fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        let r = self.inner.post_recv(conn, stream, local, wr_id);
        self.sync();
        r
    }
}
