//! Adapter for the co-simulated HDL `transport_core`. `hdl/` exposes the hardware-mapped
//! blocks as per-component operation streams (receive tracker, scoreboard, path selector) with
//! no frame, verb or timer interface around them yet, so no case can drive it: every case is
//! n/a until a frame-level co-simulation (blocks + the connection layer) exists.

use mroce_model::memory::MrKey;
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, VerbError};

use crate::adapter::{Adapter, Env, Need, OutFrame, Setup};

/// The HDL target (not available yet).
#[derive(Debug, Default)]
pub struct HdlAdapter;

const WHY: &str = "co-simulation not built yet (hdl::transport_core has operation streams, no frame/verb interface)";

impl Adapter for HdlAdapter {
    fn target(&self) -> &'static str {
        "hdl"
    }
    fn unavailable(&self) -> Option<String> {
        Some(WHY.into())
    }
    fn lacks(&self, _: Need) -> Option<String> {
        Some(WHY.into())
    }
    fn start(&mut self, _: &Setup) -> Result<Env, String> {
        Err(WHY.into())
    }
    fn now(&self) -> u64 {
        0
    }
    fn advance(&mut self, _: u64) {}
    fn frame_in(&mut self, _: u8, _: &[u8]) {}
    fn frames_out(&mut self) -> Vec<OutFrame> {
        Vec::new()
    }
    fn events(&mut self) -> Vec<Event> {
        Vec::new()
    }
    fn counters(&mut self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    fn register(&mut self, _: usize, _: bool) -> MrKey {
        MrKey {
            lkey: 0,
            rkey: 0,
            va: 0,
        }
    }
    fn deregister(&mut self, _: MrKey) -> Result<(), String> {
        Err(WHY.into())
    }
    fn write_mem(&mut self, _: MrKey, _: u64, _: &[u8]) -> Result<(), String> {
        Err(WHY.into())
    }
    fn read_mem(&mut self, _: MrKey, _: u64, _: u64) -> Result<Vec<u8>, String> {
        Err(WHY.into())
    }
    fn add_peer(&mut self, _: NicAddr) {}
    fn connect(&mut self, _: NicAddr) -> Result<ConnId, VerbError> {
        Err(VerbError::Unsupported(WHY))
    }
    fn disconnect(&mut self, _: ConnId) -> Result<(), VerbError> {
        Err(VerbError::Unsupported(WHY))
    }
    fn post_write(&mut self, _: ConnId, _: u16, _: LocalBuf, _: RemoteBuf, _: u64) -> Result<(), VerbError> {
        Err(VerbError::Unsupported(WHY))
    }
    fn post_send(&mut self, _: ConnId, _: u16, _: LocalBuf, _: u64) -> Result<(), VerbError> {
        Err(VerbError::Unsupported(WHY))
    }
    fn post_recv(&mut self, _: ConnId, _: u16, _: LocalBuf, _: u64) -> Result<(), VerbError> {
        Err(VerbError::Unsupported(WHY))
    }
}
