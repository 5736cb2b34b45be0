//! Adapter for the reference model (`mroce_model::endpoint::Endpoint`) on a virtual clock.
//!
//! Frames the endpoint wants to send are pulled as soon as it has them (an ideal link), at the
//! current virtual time; `advance` runs every timer at its exact deadline. The IUT has the
//! addresses of NIC B of the SPEC.md §5.11 scenario and the tester those of NIC A, so golden
//! frames go in and come out byte for byte.

use mroce_model::component_trace::ComponentCalls;
use mroce_model::endpoint::{Endpoint, EndpointConfig};
use mroce_model::memory::{Access, MrKey};
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, Transport, VerbError};

use crate::adapter::{Adapter, Env, Need, OutFrame, Setup};

/// The scenario addresses of SPEC.md §5.11 (NIC `n` = 1 for A, 2 for B): MAC 02:00:00:00:00:0n,
/// plane-k address 10.0.k.n.
pub fn scenario_addr(n: u8, planes: u8) -> NicAddr {
    NicAddr::with_planes([2, 0, 0, 0, 0, n], [10, 0, 0, n], planes)
}

/// Virtual time at which every run starts (not 0: the model treats 0 as "never").
pub const T0: u64 = 1_000_000;

/// The model under test.
#[derive(Default)]
pub struct ModelAdapter {
    ep: Option<Endpoint>,
    now: u64,
    out: Vec<OutFrame>,
    events: Vec<Event>,
    seed: u64,
    /// Record component operations (`EndpointConfig::trace_components`) for the HDL target.
    trace: bool,
    calls: Vec<(ConnId, ComponentCalls)>,
}

impl ModelAdapter {
    /// A model adapter; `seed` drives the endpoint's random choices.
    pub fn new(seed: u64) -> Self {
        ModelAdapter {
            seed,
            ..Default::default()
        }
    }

    /// A model adapter that records every component operation ([`Self::take_component_calls`]).
    pub fn traced(seed: u64) -> Self {
        ModelAdapter {
            seed,
            trace: true,
            ..Default::default()
        }
    }

    /// The component operations recorded since the last call (traced adapters only).
    pub fn take_component_calls(&mut self) -> Vec<(ConnId, ComponentCalls)> {
        if let Some(ep) = self.ep.as_mut() {
            self.calls.extend(ep.take_component_calls());
        }
        std::mem::take(&mut self.calls)
    }

    fn ep(&mut self) -> &mut Endpoint {
        self.ep.as_mut().expect("start() first")
    }

    /// Pull every frame the endpoint has to send now, and its events.
    fn pump(&mut self) {
        let now = self.now;
        let Some(ep) = self.ep.as_mut() else { return };
        let mut buf = vec![0u8; 70_000];
        // Bounded: a conforming endpoint always runs out of sendable frames.
        for _ in 0..100_000 {
            match ep.poll_transmit(now, &mut buf) {
                Some(t) => self.out.push(OutFrame {
                    at: now,
                    plane: t.plane,
                    bytes: buf[..t.len].to_vec(),
                }),
                None => break,
            }
        }
        while let Some(e) = ep.poll_event() {
            self.events.push(e);
        }
    }
}

impl Adapter for ModelAdapter {
    fn target(&self) -> &'static str {
        "model"
    }

    fn lacks(&self, _need: Need) -> Option<String> {
        None
    }

    fn start(&mut self, setup: &Setup) -> Result<Env, String> {
        let env = Env {
            iut: scenario_addr(2, setup.planes),
            tester: scenario_addr(1, setup.planes),
            stranger: scenario_addr(3, setup.planes),
        };
        let cfg = EndpointConfig {
            addr: env.iut,
            trace_components: self.trace,
            ..setup.cfg
        };
        let mut ep = Endpoint::new(cfg, self.seed);
        if setup.tester_known {
            ep.add_peer(env.tester);
        }
        self.ep = Some(ep);
        self.calls.clear();
        self.now = T0;
        self.out.clear();
        self.events.clear();
        Ok(env)
    }

    fn now(&self) -> u64 {
        self.now
    }

    fn advance(&mut self, ns: u64) {
        let target = self.now + ns;
        self.pump();
        let mut stuck = 0;
        for _ in 0..10_000_000 {
            let Some(t) = self.ep().poll_timeout() else { break };
            if t > target {
                break;
            }
            if t <= self.now {
                // A timer already handled at this instant is due again: the endpoint has a
                // deadline in the past it does not clear (see the suite's report). A real
                // driver would keep calling it as its clock moves on; move on by 1 us.
                stuck += 1;
                if stuck > 2 {
                    if self.now >= target {
                        break;
                    }
                    self.now = (self.now + 1_000).min(target);
                    stuck = 0;
                }
            } else {
                stuck = 0;
                self.now = t;
            }
            let now = self.now;
            self.ep().handle_timeout(now);
            self.pump();
        }
        self.now = target;
        self.pump();
    }

    fn frame_in(&mut self, plane: u8, frame: &[u8]) {
        let now = self.now;
        self.ep().handle_frame(now, plane, frame);
        self.pump();
    }

    fn frames_out(&mut self) -> Vec<OutFrame> {
        self.pump();
        std::mem::take(&mut self.out)
    }

    fn events(&mut self) -> Vec<Event> {
        self.pump();
        std::mem::take(&mut self.events)
    }

    fn counters(&mut self) -> Vec<(&'static str, u64)> {
        self.ep().counters()
    }

    fn debug_state(&mut self) -> String {
        let Some(ep) = self.ep.as_ref() else {
            return String::new();
        };
        let mut out = String::new();
        for id in 1..=ep.connection_count() as u32 + 4 {
            if let Some(c) = ep.connection(id) {
                let sel = c.selector();
                out += &format!(
                    "conn {id}: planes_up {:#b} total_inflight {}\n",
                    sel.planes_up(),
                    sel.total_inflight()
                );
                for p in 0..16u8 {
                    let s = sel.path(p);
                    let b = c.scoreboard().path(p);
                    out += &format!("  path {p}: {s:?} una {:#x} next {:#x}\n", b.una, b.next);
                }
            }
        }
        out
    }

    fn register(&mut self, len: usize, remote_write: bool) -> MrKey {
        self.ep().memory_mut().register(len, Access { remote_write })
    }

    fn deregister(&mut self, key: MrKey) -> Result<(), String> {
        self.ep().memory_mut().deregister(key).map_err(|e| e.to_string())
    }

    fn write_mem(&mut self, key: MrKey, offset: u64, data: &[u8]) -> Result<(), String> {
        let m = self
            .ep()
            .memory_mut()
            .local_mut(key, offset, data.len() as u64)
            .map_err(|e| e.to_string())?;
        m.copy_from_slice(data);
        Ok(())
    }

    fn read_mem(&mut self, key: MrKey, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        self.ep()
            .memory()
            .local(key, offset, len)
            .map(<[u8]>::to_vec)
            .map_err(|e| e.to_string())
    }

    fn add_peer(&mut self, peer: NicAddr) {
        self.ep().add_peer(peer);
    }

    fn connect(&mut self, peer: NicAddr) -> Result<ConnId, VerbError> {
        let now = self.now;
        let r = self.ep().connect(now, peer);
        self.pump();
        r
    }

    fn disconnect(&mut self, conn: ConnId) -> Result<(), VerbError> {
        let now = self.now;
        let r = self.ep().disconnect(now, conn);
        self.pump();
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
        let r = self.ep().post_write(conn, stream, local, remote, wr_id);
        self.pump();
        r
    }

    fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        let r = self.ep().post_send(conn, stream, local, wr_id);
        self.pump();
        r
    }

    fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        let r = self.ep().post_recv(conn, stream, local, wr_id);
        self.pump();
        r
    }
}
