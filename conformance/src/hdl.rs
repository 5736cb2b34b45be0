//! Adapter for the co-simulated hardware blocks. The hardware implements the three
//! hardware-mapped components (receive tracker, transmit scoreboard, path selector), not the
//! connection layer around them (frames, verbs, memory). So the HDL target is the reference
//! connection layer with every component operation it performs also executed, in order, on
//! a hardware replay per connection (the Verilated blocks), whose every result must equal
//! the model's bit for bit. A case passes when its scripted exchange passes *and* the hardware
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
    replays: BTreeMap<ConnId, Box<dyn ComponentReplay>>,
    /// Data-path operations (every operation but the block initialisations) checked.
    checked: usize,
    /// First disagreement (or replay failure) of this run.
    first_error: Option<String>,
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
            replays: BTreeMap::new(),
            checked: 0,
            first_error: None,
            unavailable,
        }
    }

    /// Replay everything the model did since the last call.
    fn sync(&mut self) {
        for (conn, calls) in self.inner.take_component_calls() {
            if self.first_error.is_some() {
                return;
            }
            let replay = match self.replays.entry(conn) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => match (self.factory)() {
                    Ok(r) => v.insert(r),
                    Err(e) => {
                        self.first_error = Some(format!("building the hardware replay failed: {e}"));
                        return;
                    }
                },
            };
            match replay.replay(&calls) {
                Ok(_) => self.checked += data_path_ops(&calls),
                Err(m) => self.first_error = Some(format!("hardware differs from the model on connection {conn}: {m}")),
            }
        }
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
        self.replays.clear();
        self.checked = 0;
        self.first_error = None;
        self.inner.start(setup)
    }
    fn verify(&mut self) -> Result<Option<usize>, String> {
        self.sync();
        match self.first_error.take() {
            Some(e) => Err(e),
            None => Ok(Some(self.checked)),
        }
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
