//! The firmware plane-failure scenario (issue 6, co-simulation test): the control-core firmware
//! (host build, through [`Csr`]) drives a transport core while a WRITE transfer runs between two
//! model NICs over a 4-plane link; a plane dies, the firmware sees it in the core's per-path
//! counters, declares the plane down and re-balances its paths, and the transfer completes
//! intact.
//!
//! Loop (deterministic, one step = [`ScenarioConfig::step_ns`] of simulated time):
//! 1. the link moves frames; every frame on the failed plane is dropped from `fail_at_ns` on;
//! 2. NIC A (`trace_components`, `firmware_path_health`) records every operation it applies to
//!    its rx tracker / tx scoreboard / path selector; the record goes to the core backend
//!    ([`CoreBackend::apply_calls`]), whose counters and events move as the hardware's do;
//! 3. the backend's clock advances to simulated time ([`CYCLES_PER_US`]);
//! 4. every `poll_interval_ns` the firmware runs `poll()`; each `SEL_CMD` it writes (the
//!    hardware executes it in its own selector) is decoded by [`CommandTap`] and applied to A's
//!    connection without entering A's trace ([`Endpoint::apply_control`]).
//!
//! Backends: [`CoreCsrModel`] (software golden model of `transport_core`'s CSR side) here; the
//! Verilated `transport_core` of `cosim/` plugs in as another [`CoreBackend`].

use mroce_cosim::core_counters::{record_path, state_word, CoreCounters};
use mroce_csr as csr;
use mroce_firmware::bank::RegBank;
use mroce_firmware::control::{CcParams, Config, ConnRequest, ConnTable, Firmware, Stats};
use mroce_firmware::memory_map::CYCLES_PER_US;
use mroce_firmware::Csr;
use mroce_hdl::path_selector::{
    SEL_OP_CHARGE_PROBE, SEL_OP_CLEAR_INFLIGHT, SEL_OP_CREDIT, SEL_OP_INIT, SEL_OP_REQUEST_REROLL, SEL_OP_REROLL,
    SEL_OP_SELECT, SEL_OP_SET_CONN_LIMIT, SEL_OP_SET_HEALTH, SEL_OP_SET_PLANE_UP,
};
use mroce_hdl::rx_tracker::RX_OP_PACKET;
use mroce_hdl::tx_scoreboard::{TX_OP_ACK_WORD, TX_OP_EXPIRE, TX_OP_TIMER};
use mroce_model::component_trace::{
    ComponentCalls, ComponentReplay, ReplayMismatch, RxCall, SelCall, SoftwareReplay, TxCall,
};
use mroce_model::connection::ControlOp;
use mroce_model::endpoint::{ControlApplyError, Endpoint, EndpointConfig};
use mroce_model::memory::Access;
use mroce_model::params::PATHS;
use mroce_model::path_selector::PathHealth;
use mroce_model::transport::{ConnId, Event, LocalBuf, Nanos, NicAddr, RemoteBuf, Status, Transport};
use mroce_model::tx_scoreboard::TimerResult;
use mroce_model::Rng;
use serde::Serialize;
use std::collections::VecDeque;

/// Why a scenario could not run to its verdict.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The backend disagreed with the model on a replayed operation.
    #[error("core backend disagrees with the model: {0}")]
    Replay(String),
    /// A firmware function failed (its fault word is in `FAULT` too).
    #[error("firmware {call} failed: {err:?}")]
    Firmware {
        /// Which call.
        call: &'static str,
        /// The firmware's error.
        err: mroce_firmware::Error,
    },
    /// The firmware wrote a selector command the data path cannot take from it.
    #[error("firmware command op {op} path {path} is not a control-core command")]
    UnsupportedCommand {
        /// Operation code.
        op: u32,
        /// Path field.
        path: u8,
    },
    /// The connection refused a decoded command.
    #[error("connection refused {op:?}: {err:?}")]
    Refused {
        /// The command.
        op: ControlOp,
        /// Why.
        err: ControlApplyError,
    },
    /// The connection was not established in time.
    #[error("connection not established")]
    NoConnection,
    /// A verb was refused by the model.
    #[error("verb refused: {0}")]
    Verb(String),
    /// Bad configuration.
    #[error("bad scenario configuration: {0}")]
    Config(&'static str),
    /// The co-simulation could not be built or driven.
    #[error("co-simulation: {0}")]
    Cosim(#[from] mroce_cosim::CosimError),
    /// The soft core did not do its part (image, boot, trap, bus error).
    #[error("soft core: {0}")]
    SoftCore(String),
}

/// A transport core the firmware drives: its CSR port plus a way to feed it the operations of
/// the connection's data path and to let its clock run.
pub trait CoreBackend: Csr {
    /// Apply one step's component operations (each block's list in order) and check the
    /// results the backend computes against the model's.
    fn apply_calls(&mut self, calls: &ComponentCalls) -> Result<(), ScenarioError>;
    /// Let the clock run until `CYCLES` is at least `cycle` (no-op if already past).
    fn advance_to(&mut self, cycle: u64);
    /// Clock cycles so far (the `CYCLES` register, unwrapped).
    fn cycle(&self) -> u64;
}

/// Software golden model of `transport_core`'s control-core side (hdl/src/transport_core.rs,
/// SPEC.md appendix C), driven by component operation records: the register bank of
/// `mroce-firmware` (identity, `SEL_CMD` into a real `PathSelector`, `CYCLES`) plus the
/// hardware's per-path counters, `P_STATE` and sticky events, moved by the same rules as in the
/// lockstep harness ([`CoreCounters`]; INIT, SET_PLANE_UP and SET_CONN_LIMIT record path 0).
///
/// One CSR access is one clock; a read returns `CYCLES` as of its clock; a `SEL_CMD` read right
/// after the write shows the command pending (the hardware takes it the next clock).
#[derive(Debug, Clone)]
pub struct CoreCsrModel {
    bank: RegBank<1>,
    counters: CoreCounters,
    path_sel: u32,
    check: SoftwareReplay,
    cycle: u64,
    /// A `SEL_CMD` was written by the previous access: its next read shows it pending.
    cmd_waits: bool,
}

impl Default for CoreCsrModel {
    fn default() -> Self {
        Self::new()
    }
}

impl CoreCsrModel {
    /// At power-up.
    pub fn new() -> Self {
        let mut bank = RegBank::new();
        bank.cycles_per_access = 0;
        CoreCsrModel {
            bank,
            counters: CoreCounters::new(),
            path_sel: 0,
            check: SoftwareReplay::default(),
            cycle: 0,
            cmd_waits: false,
        }
    }

    /// The register bank (plain registers and the selector).
    pub fn bank(&self) -> &RegBank<1> {
        &self.bank
    }

    /// Per-path counters, `P_STATE` and events.
    pub fn counters(&self) -> &CoreCounters {
        &self.counters
    }

    /// `P_STATE` of a path as the hardware reports it.
    pub fn path_state(&self, path: u8) -> u32 {
        self.counters.counter(path, csr::P_STATE)
    }

    /// A selector record of `op` (`ok`) for `path`: the path's state after the operation.
    fn record(&mut self, op: u64, ok: bool, path: u8) {
        let p = record_path(op, path);
        let state = state_word(self.bank.ctx[0].selector.path(p));
        self.counters.sel_record(op, ok, p, state);
    }

    /// Apply a record: counters, events and selector state move as the hardware's would.
    /// Every result is checked against the model's (the selector here, the rest through
    /// [`SoftwareReplay`]).
    pub fn apply(&mut self, calls: &ComponentCalls) -> Result<usize, ReplayMismatch> {
        let n = self.check.replay(&ComponentCalls {
            rx: calls.rx.clone(),
            tx: calls.tx.clone(),
            sel: Vec::new(),
        })?;
        for c in &calls.rx {
            if let RxCall::Packet { req, .. } = c {
                self.counters.rx_accepted(RX_OP_PACKET, req.path, req.ce);
            }
        }
        for c in &calls.tx {
            match *c {
                TxCall::Timer {
                    path,
                    result: TimerResult::Expired { .. },
                    ..
                } => self.counters.tx_record(TX_OP_TIMER, path, true, 0, 0),
                TxCall::ExpireHead { path, result } => {
                    self.counters.tx_record(TX_OP_EXPIRE, path, false, result.lost, 0)
                }
                TxCall::AckWord { path, now, result, .. } => {
                    self.counters.tx_accepted(TX_OP_ACK_WORD, path, now);
                    self.counters
                        .tx_record(TX_OP_ACK_WORD, path, false, result.lost, result.freed);
                }
                _ => {}
            }
        }
        for (i, c) in calls.sel.iter().enumerate() {
            let s = &mut self.bank.ctx[0].selector;
            let bad = |got: String| ReplayMismatch {
                block: "path_selector",
                index: i,
                expected: format!("{c:?}"),
                got,
            };
            match *c {
                SelCall::Init { paths, planes } => {
                    *s = mroce_model::path_selector::PathSelector::new(paths, planes);
                    self.record(SEL_OP_INIT, true, 0);
                }
                SelCall::Select { room_mask, path } => {
                    let got = s.select(room_mask);
                    if got != path {
                        return Err(bad(format!("{got:?}")));
                    }
                    if let Some(p) = got {
                        self.record(SEL_OP_SELECT, true, p);
                    }
                }
                SelCall::ChargeProbe { path } => {
                    s.charge_probe(path);
                    self.record(SEL_OP_CHARGE_PROBE, true, path);
                }
                SelCall::Credit { credit, reroute } => {
                    let got = s.credit(&credit);
                    if got != reroute {
                        return Err(bad(format!("{got:?}")));
                    }
                    self.counters.sel_accepted(SEL_OP_CREDIT, credit.path, credit.ce);
                    self.record(SEL_OP_CREDIT, got, credit.path);
                }
                SelCall::SetHealth { path, health } => {
                    s.set_health(path, health);
                    self.record(SEL_OP_SET_HEALTH, true, path);
                }
                SelCall::ClearInflight { path } => {
                    s.clear_inflight(path);
                    self.record(SEL_OP_CLEAR_INFLIGHT, true, path);
                }
                SelCall::RequestReroll { path, random } => {
                    s.request_reroll(path, random);
                    self.record(SEL_OP_REQUEST_REROLL, true, path);
                }
                SelCall::Reroll { path, random } => {
                    s.reroll(path, random);
                    self.record(SEL_OP_REROLL, true, path);
                }
                SelCall::SetPlaneUp { plane, up } => {
                    s.set_plane_up(plane, up);
                    self.record(SEL_OP_SET_PLANE_UP, true, 0);
                }
                SelCall::SetConnLimit { pkts } => {
                    s.set_conn_limit(pkts);
                    self.record(SEL_OP_SET_CONN_LIMIT, true, 0);
                }
            }
        }
        Ok(n + calls.sel.len())
    }
}

impl Csr for CoreCsrModel {
    fn read(&mut self, offset: u16) -> u32 {
        let waits = std::mem::take(&mut self.cmd_waits);
        // the bus returns the register as of the access's clock, which then ends
        self.bank.cycles = self.cycle as u32;
        let v = self.bank.read(offset);
        self.cycle += 1;
        self.bank.cycles = self.cycle as u32;
        match offset {
            // a command waits one clock before the (idle) selector stream takes it
            csr::SEL_CMD if waits => csr::SEL_CMD_PENDING,
            _ => self.counters.read(offset, self.path_sel).unwrap_or(v),
        }
    }

    fn write(&mut self, offset: u16, value: u32) {
        self.bank.cycles = self.cycle as u32;
        self.cycle += 1;
        self.cmd_waits = false;
        if offset == csr::PATH_SEL {
            self.path_sel = value;
        }
        self.counters.write(offset, value);
        self.bank.write(offset, value);
        if offset == csr::SEL_CMD {
            // the bank applied it to its selector; the hardware's record of the path follows
            if let Some(cmd) = self.bank.commands().last().copied() {
                let op = u64::from(cmd.op);
                self.counters.sel_accepted(op, cmd.path, cmd.flag);
                if op == SEL_OP_SELECT {
                    // not a firmware command; the bank counted it but the chosen path is unknown
                } else if op == SEL_OP_CREDIT {
                    // (the firmware sends none) the bank's selector took it: its sticky re-route
                    // bit tells whether the credit asked for one
                    let reroute = self.bank.events[2] & (1 << (cmd.path % 16)) != 0;
                    self.record(op, reroute, cmd.path);
                } else {
                    self.record(op, true, cmd.path);
                }
            }
            self.bank.clear_commands();
            self.cmd_waits = true;
        }
        self.bank.cycles = self.cycle as u32;
    }

    fn idle(&mut self) {
        self.cmd_waits = false;
        self.cycle += 1;
        self.bank.cycles = self.cycle as u32;
    }
}

impl CoreBackend for CoreCsrModel {
    fn apply_calls(&mut self, calls: &ComponentCalls) -> Result<(), ScenarioError> {
        self.apply(calls)
            .map(|_| ())
            .map_err(|m| ScenarioError::Replay(m.to_string()))
    }

    fn advance_to(&mut self, cycle: u64) {
        if cycle > self.cycle {
            self.cycle = cycle;
            self.bank.cycles = cycle as u32;
        }
    }

    fn cycle(&self) -> u64 {
        self.cycle
    }
}

/// One `SEL_CMD` the firmware wrote, with the clock cycle of the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FirmwareCommand {
    /// Backend cycle after the write.
    pub cycle: u64,
    /// Operation (`mroce_csr::sel_op`).
    pub op: u32,
    /// Path field.
    pub path: u8,
    /// Flag bit.
    pub flag: bool,
    /// `SEL_CMD_ARG` [15:0].
    pub a: u16,
    /// `SEL_CMD_ARG` [31:16].
    pub b: u16,
}

impl FirmwareCommand {
    /// The connection-side form of the command.
    pub fn control_op(&self) -> Result<ControlOp, ScenarioError> {
        let path = self.path;
        Ok(match self.op {
            csr::sel_op::SET_HEALTH => ControlOp::SetHealth {
                path,
                health: match u32::from(self.a) & 3 {
                    csr::health::UP => PathHealth::Up,
                    csr::health::SUSPECT => PathHealth::Suspect,
                    csr::health::DOWN => PathHealth::Down,
                    _ => PathHealth::Disabled,
                },
            },
            csr::sel_op::CLEAR_INFLIGHT => ControlOp::ClearInflight { path },
            csr::sel_op::REQUEST_REROLL => ControlOp::RequestReroll { path, random: self.a },
            csr::sel_op::REROLL => ControlOp::Reroll { path, random: self.a },
            csr::sel_op::SET_PLANE => ControlOp::SetPlane {
                path,
                plane: self.a as u8,
            },
            csr::sel_op::SET_PLANE_UP => ControlOp::SetPlaneUp {
                plane: self.a as u8,
                up: self.flag,
            },
            csr::sel_op::SET_CONN_LIMIT => ControlOp::SetConnLimit { pkts: self.a },
            csr::sel_op::INIT => ControlOp::Init {
                paths: self.a as u8,
                planes: self.b as u8,
            },
            op => return Err(ScenarioError::UnsupportedCommand { op, path }),
        })
    }
}

/// A [`CoreBackend`] seen through the firmware's CSR accesses: every `SEL_CMD` write (to
/// context 0) is kept, decoded, for the harness to apply to the model connection.
#[derive(Debug)]
pub struct CommandTap<B> {
    /// The backend.
    pub inner: B,
    arg: u32,
    ctx: u32,
    new: Vec<FirmwareCommand>,
}

impl<B: CoreBackend> CommandTap<B> {
    /// Tap `inner`.
    pub fn new(inner: B) -> Self {
        CommandTap {
            inner,
            arg: 0,
            ctx: 0,
            new: Vec::new(),
        }
    }

    /// Commands written since the last call.
    pub fn take(&mut self) -> Vec<FirmwareCommand> {
        std::mem::take(&mut self.new)
    }
}

impl<B: CoreBackend> Csr for CommandTap<B> {
    fn read(&mut self, offset: u16) -> u32 {
        self.inner.read(offset)
    }

    fn write(&mut self, offset: u16, value: u32) {
        self.inner.write(offset, value);
        match offset {
            csr::SEL_CMD_ARG => self.arg = value,
            csr::CTX_SEL => self.ctx = value,
            csr::SEL_CMD if self.ctx < csr::CONTEXTS => self.new.push(FirmwareCommand {
                cycle: self.inner.cycle(),
                op: value & 0xF,
                path: ((value >> 4) & 0xF) as u8,
                flag: value & (1 << 8) != 0,
                a: self.arg as u16,
                b: (self.arg >> 16) as u16,
            }),
            _ => {}
        }
    }

    fn idle(&mut self) {
        self.inner.idle()
    }
}

/// What the scenario does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ScenarioConfig {
    /// Seed of both NICs and of the data.
    pub seed: u64,
    /// Bytes transferred (WRITEs from A to B).
    pub bytes: usize,
    /// Bytes per WRITE.
    pub msg_bytes: usize,
    /// Streams the WRITEs are spread over.
    pub streams: u16,
    /// Planes of the link (and of both NICs).
    pub planes: u8,
    /// Paths of the connection.
    pub paths: u8,
    /// Plane that dies.
    pub fail_plane: u8,
    /// When it dies (ns after the first WRITE is posted); it stays dead.
    pub fail_after_ns: Nanos,
    /// Firmware poll interval.
    pub poll_interval_ns: Nanos,
    /// Clocks between a poll's simulated time and the poll's first CSR access (the core
    /// drains the data path's operations meanwhile; keep it below the interval).
    pub poll_offset_cycles: u64,
    /// One-way link delay.
    pub link_delay_ns: Nanos,
    /// Simulation step (each NIC sends at most one frame per step).
    pub step_ns: Nanos,
    /// Give up after this much simulated time.
    pub time_limit_ns: Nanos,
    /// Health decisions by the firmware (true) or by the model connection itself (false: the
    /// reference run of the same scenario without a control core).
    pub firmware: bool,
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        ScenarioConfig {
            seed: 6,
            bytes: 32 << 20,
            msg_bytes: 256 << 10,
            streams: 2,
            planes: 4,
            paths: 16,
            fail_plane: 1,
            fail_after_ns: 30_000,
            poll_interval_ns: 10_000,
            poll_offset_cycles: 400,
            link_delay_ns: 2_000,
            step_ns: 100,
            time_limit_ns: 200_000_000,
            firmware: true,
        }
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScenarioReport {
    /// The configuration.
    pub config: ScenarioConfig,
    /// Every WRITE completed OK on both sides.
    pub completed: bool,
    /// Destination region equals the source region.
    pub data_intact: bool,
    /// Simulated time from the first WRITE to the last completion, ns.
    pub transfer_ns: Nanos,
    /// Simulated time the plane died (ns since the start of the run).
    pub fail_at_ns: Nanos,
    /// Core cycle at the failure (`fail_at_ns` in clocks of [`CYCLES_PER_US`]).
    pub fail_cycle: u64,
    /// Frames dropped on the dead plane.
    pub frames_dropped: u64,
    /// First firmware command on a path of the dead plane after the failure (cycle).
    pub detect_cycle: Option<u64>,
    /// End of the poll that declared the plane down and re-balanced its paths (cycle).
    pub repair_cycle: Option<u64>,
    /// Detection delay, cycles after the failure.
    pub detect_cycles: Option<u64>,
    /// Repair delay (plane down + re-balance done), cycles after the failure.
    pub repair_cycles: Option<u64>,
    /// Firmware polls from the failure to the repair.
    pub polls_to_repair: Option<u32>,
    /// Polls that started late because the core was still busy with the data path's
    /// operations at the poll's clock (their `CYCLES` differ between backends).
    pub late_polls: u32,
    /// Firmware statistics at the end.
    pub fw_polls: u32,
    /// Entropy re-rolls the firmware issued.
    pub fw_rerolls: u32,
    /// Paths it declared down.
    pub fw_paths_down: u32,
    /// Planes it declared down.
    pub fw_planes_down: u32,
    /// Firmware faults.
    pub fw_faults: u32,
    /// `FAULT` register at the end.
    pub fault_register: u32,
    /// Planes up in A's selector at the end (bit k).
    pub planes_up: u8,
    /// Paths of A's selector per plane at the end.
    pub paths_per_plane: Vec<u8>,
    /// A's RTOs.
    pub rtos: u64,
    /// Every firmware `SEL_CMD`, in order.
    pub commands: Vec<FirmwareCommand>,
    /// How many of them set the connection up (the rest came from polls).
    pub setup_commands: usize,
    /// Component operations fed to the core.
    pub core_ops: u64,
    /// Core cycles at the end.
    pub cycles: u64,
    /// The firmware's telemetry export at the end (`Telemetry::to_words`: every path's
    /// hardware counters and `P_STATE`), read through the backend.
    pub telemetry: Vec<u32>,
}

impl ScenarioReport {
    /// The outcome two backends must agree on: the firmware's command sequence (operations
    /// and arguments; the cycle stamps differ by the clocks the hardware spends on the data
    /// path's operations, which the software model does not charge), the transfer (completion,
    /// data, time), the firmware's statistics, the final routing and the final counters.
    pub fn same_outcome(&self, other: &ScenarioReport) -> Result<(), String> {
        let key = |r: &ScenarioReport| {
            r.commands
                .iter()
                .map(|c| (c.op, c.path, c.flag, c.a, c.b))
                .collect::<Vec<_>>()
        };
        let (a, b) = (key(self), key(other));
        if a != b {
            let i = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            return Err(format!(
                "firmware commands differ at #{i} of {}/{}: {:?} vs {:?}",
                a.len(),
                b.len(),
                self.commands.get(i),
                other.commands.get(i)
            ));
        }
        let facts = |r: &ScenarioReport| {
            (
                r.completed,
                r.data_intact,
                r.transfer_ns,
                r.frames_dropped,
                r.polls_to_repair,
                (r.fw_polls, r.fw_rerolls, r.fw_paths_down, r.fw_planes_down, r.fw_faults),
                r.fault_register,
                r.planes_up,
                r.paths_per_plane.clone(),
                r.rtos,
                r.core_ops,
            )
        };
        if facts(self) != facts(other) {
            return Err(format!("outcomes differ: {:?} vs {:?}", facts(self), facts(other)));
        }
        if self.telemetry != other.telemetry {
            let i = self
                .telemetry
                .iter()
                .zip(&other.telemetry)
                .take_while(|(x, y)| x == y)
                .count();
            return Err(format!(
                "telemetry word {i} differs: {:?} vs {:?}",
                self.telemetry.get(i),
                other.telemetry.get(i)
            ));
        }
        Ok(())
    }
}

pub(crate) fn nic(mac: u8, planes: u8) -> NicAddr {
    NicAddr::with_planes([2, 0, 0, 0, 0, mac], [10, 0, 0, mac], planes)
}

/// Frames on the wire: (deliver at, towards B, plane, bytes).
type Wire = VecDeque<(Nanos, bool, u8, Vec<u8>)>;

pub(crate) struct Link {
    pub(crate) a: Endpoint,
    pub(crate) b: Endpoint,
    pub(crate) now: Nanos,
    pub(crate) wire: Wire,
    pub(crate) delay: Nanos,
    pub(crate) dead_plane: Option<u8>,
    pub(crate) dropped: u64,
    pub(crate) events_a: Vec<Event>,
    pub(crate) events_b: Vec<Event>,
    pub(crate) buf: Vec<u8>,
}

impl Link {
    pub(crate) fn step(&mut self, dt: Nanos) {
        for to_b in [true, false] {
            let src = if to_b { &mut self.a } else { &mut self.b };
            if let Some(t) = src.poll_transmit(self.now, &mut self.buf) {
                let f = self.buf[..t.len].to_vec();
                self.wire.push_back((self.now + self.delay, to_b, t.plane, f));
            }
        }
        let now = self.now;
        while self.wire.front().is_some_and(|w| w.0 <= now) {
            let Some((_, to_b, plane, f)) = self.wire.pop_front() else {
                break;
            };
            if self.dead_plane == Some(plane) {
                self.dropped += 1;
                continue;
            }
            if to_b {
                self.b.handle_frame(now, plane, &f)
            } else {
                self.a.handle_frame(now, plane, &f)
            }
        }
        for (ep, ev) in [(&mut self.a, &mut self.events_a), (&mut self.b, &mut self.events_b)] {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
            while let Some(e) = ep.poll_event() {
                ev.push(e);
            }
        }
        self.now += dt;
    }

    pub(crate) fn completions(ev: &[Event]) -> impl Iterator<Item = &mroce_model::transport::Completion> {
        ev.iter()
            .filter_map(|e| if let Event::Completion(c) = e { Some(c) } else { None })
    }
}

/// The config checks shared by the scenario runners.
pub(crate) fn check_config(cfg: &ScenarioConfig) -> Result<(), ScenarioError> {
    if cfg.planes == 0
        || usize::from(cfg.planes) > mroce_model::params::MAX_PLANES
        || cfg.fail_plane >= cfg.planes
        || cfg.paths == 0
        || usize::from(cfg.paths) > PATHS
        || cfg.msg_bytes == 0
        || cfg.streams == 0
        || cfg.step_ns == 0
        || cfg.poll_offset_cycles >= cycle_at(cfg.poll_interval_ns)
    {
        return Err(ScenarioError::Config(
            "planes, paths, fail plane, message size, streams, step or poll offset",
        ));
    }
    Ok(())
}

/// Two NICs on a link, A's connection to B established (A traces its component operations and
/// leaves path health to the firmware when `cfg.firmware`); returns the connection's paths and
/// planes too.
pub(crate) fn open_link(cfg: &ScenarioConfig) -> Result<(Link, ConnId, u8, u8), ScenarioError> {
    let base = EndpointConfig {
        paths: cfg.paths,
        ..EndpointConfig::default()
    };
    let mut a = Endpoint::new(
        EndpointConfig {
            addr: nic(1, cfg.planes),
            trace_components: cfg.firmware,
            firmware_path_health: cfg.firmware,
            ..base
        },
        cfg.seed,
    );
    let mut b = Endpoint::new(
        EndpointConfig {
            addr: nic(2, cfg.planes),
            ..base
        },
        cfg.seed + 1,
    );
    a.add_peer(nic(2, cfg.planes));
    b.add_peer(nic(1, cfg.planes));
    let mut l = Link {
        a,
        b,
        now: 0,
        wire: VecDeque::new(),
        delay: cfg.link_delay_ns,
        dead_plane: None,
        dropped: 0,
        events_a: Vec::new(),
        events_b: Vec::new(),
        buf: vec![0u8; 9216],
    };
    let conn =
        l.a.connect(0, nic(2, cfg.planes))
            .map_err(|e| ScenarioError::Verb(format!("{e:?}")))?;
    while !l.events_a.contains(&Event::Connected(conn)) {
        if l.now > 20_000_000 {
            return Err(ScenarioError::NoConnection);
        }
        l.step(cfg.step_ns);
    }
    let c = l.a.connection(conn).ok_or(ScenarioError::NoConnection)?;
    let (paths, planes) = (c.paths(), c.planes());
    Ok((l, conn, paths, planes))
}

/// Fill A's source region with seeded bytes and post the WRITEs of the transfer; returns the
/// source and destination keys and the number of WRITEs.
pub(crate) fn post_transfer(
    l: &mut Link,
    cfg: &ScenarioConfig,
    conn: ConnId,
) -> Result<(mroce_model::memory::MrKey, mroce_model::memory::MrKey, usize), ScenarioError> {
    let src = l.a.memory_mut().register(cfg.bytes, Access { remote_write: false });
    let dst = l.b.memory_mut().register(cfg.bytes, Access { remote_write: true });
    {
        let mut r = Rng::new(cfg.seed ^ 0x5EED);
        let bytes =
            l.a.memory_mut()
                .local_mut(src, 0, cfg.bytes as u64)
                .map_err(|e| ScenarioError::Verb(format!("{e:?}")))?;
        for x in bytes {
            *x = r.next_u32() as u8;
        }
    }
    let mut n = 0usize;
    for (i, off) in (0..cfg.bytes).step_by(cfg.msg_bytes).enumerate() {
        let len = cfg.msg_bytes.min(cfg.bytes - off) as u32;
        l.a.post_write(
            conn,
            (i % usize::from(cfg.streams)) as u16,
            LocalBuf {
                key: src,
                offset: off as u64,
                len,
            },
            RemoteBuf {
                va: dst.va + off as u64,
                rkey: dst.rkey,
            },
            i as u64,
        )
        .map_err(|e| ScenarioError::Verb(format!("{e:?}")))?;
        n += 1;
    }
    Ok((src, dst, n))
}

/// Planes up in A's selector (bit k) and its paths per plane.
pub(crate) fn routing(l: &Link, cfg: &ScenarioConfig, conn: ConnId, paths: u8) -> (u8, Vec<u8>) {
    let mut paths_per_plane = vec![0u8; usize::from(cfg.planes)];
    let mut planes_up = 0;
    if let Some(s) = l.a.connection(conn).map(|c| c.selector()) {
        for p in 0..paths {
            if let Some(x) = paths_per_plane.get_mut(usize::from(s.path(p).plane)) {
                *x += 1;
            }
        }
        planes_up = s.planes_up();
    }
    (planes_up, paths_per_plane)
}

/// Core clock cycle of simulated time `ns`.
pub(crate) fn cycle_at(ns: Nanos) -> u64 {
    ns * u64::from(CYCLES_PER_US) / 1000
}

/// Connection table of the firmware in the scenario.
const FW_CONNECTIONS: usize = 4;

struct Driver<'t, B: CoreBackend> {
    fw: Option<Firmware<'t, CommandTap<B>, FW_CONNECTIONS>>,
    conn: ConnId,
    commands: Vec<FirmwareCommand>,
    core_ops: u64,
}

impl<B: CoreBackend> Driver<'_, B> {
    /// Feed A's operations to the core and let its clock catch up with simulated time.
    fn feed(&mut self, a: &mut Endpoint, now: Nanos) -> Result<(), ScenarioError> {
        let Some(fw) = self.fw.as_mut() else {
            return Ok(());
        };
        for (id, calls) in a.take_component_calls() {
            if id != self.conn {
                continue;
            }
            self.core_ops += (calls.rx.len() + calls.tx.len() + calls.sel.len()) as u64;
            fw.hw().inner.apply_calls(&calls)?;
        }
        fw.hw().inner.advance_to(cycle_at(now));
        Ok(())
    }

    /// Apply the commands the firmware wrote to A's connection.
    fn apply_commands(&mut self, a: &mut Endpoint, now: Nanos) -> Result<usize, ScenarioError> {
        let Some(fw) = self.fw.as_mut() else {
            return Ok(0);
        };
        let cmds = fw.hw().take();
        for c in &cmds {
            let op = c.control_op()?;
            a.apply_control(now, self.conn, op)
                .map_err(|err| ScenarioError::Refused { op, err })?;
        }
        let n = cmds.len();
        self.commands.extend(cmds);
        Ok(n)
    }
}

/// Run the scenario on `backend` (unused when `cfg.firmware` is false).
pub fn run<B: CoreBackend>(cfg: &ScenarioConfig, backend: B) -> Result<ScenarioReport, ScenarioError> {
    check_config(cfg)?;
    let (mut l, conn, paths, planes) = open_link(cfg)?;

    // the control core boots and takes the connection over before any data is sent
    let mut table = ConnTable::<FW_CONNECTIONS>::new();
    let mut drv = Driver::<B> {
        fw: None,
        conn,
        commands: Vec::new(),
        core_ops: 0,
    };
    let mut fw_id = None;
    if cfg.firmware {
        let mut tap = CommandTap::new(backend);
        tap.inner.advance_to(cycle_at(l.now));
        let fw = Firmware::boot(tap, Config::DEFAULT, &mut table)
            .map_err(|err| ScenarioError::Firmware { call: "boot", err })?;
        drv.fw = Some(fw);
        drv.feed(&mut l.a, l.now)?;
        let req = ConnRequest {
            peer: u32::from_be_bytes([10, 0, 0, 2]),
            paths,
            planes,
            cc: CcParams {
                conn_limit: 0,
                rto_min_ns: mroce_model::params::RTO_MIN_NS as u32,
                rto_init_ns: mroce_model::params::RTO_INIT_NS as u32,
            },
        };
        let fw = drv.fw.as_mut().ok_or(ScenarioError::NoConnection)?;
        fw_id = Some(
            fw.setup(&req)
                .map_err(|err| ScenarioError::Firmware { call: "setup", err })?,
        );
        drv.apply_commands(&mut l.a, l.now)?;
    }

    let (src, dst, n) = post_transfer(&mut l, cfg, conn)?;
    let setup_commands = drv.commands.len();
    let start = l.now;
    let fail_at = start + cfg.fail_after_ns;
    let limit = start + cfg.time_limit_ns;
    let mut next_poll = l.now + cfg.poll_interval_ns;
    let fail_cycle = cycle_at(fail_at);
    let mut detect_cycle = None;
    let mut repair_cycle = None;
    let mut polls_at_fail = 0u32;
    let mut polls_to_repair = None;
    let mut late_polls = 0u32;
    let done = |l: &Link| Link::completions(&l.events_a).count() >= n && Link::completions(&l.events_b).count() >= n;
    while !done(&l) && l.now < limit {
        if l.dead_plane.is_none() && l.now >= fail_at {
            l.dead_plane = Some(cfg.fail_plane);
            if let Some(fw) = drv.fw.as_mut() {
                polls_at_fail = fw.stats.polls;
            }
        }
        l.step(cfg.step_ns);
        drv.feed(&mut l.a, l.now)?;
        if drv.fw.is_some() && l.now >= next_poll {
            next_poll += cfg.poll_interval_ns;
            // which paths are on the dead plane before the firmware acts
            let on_dead: Vec<bool> = {
                let c = l.a.connection(conn).ok_or(ScenarioError::NoConnection)?;
                (0..PATHS as u8)
                    .map(|p| c.selector().path(p).plane == cfg.fail_plane)
                    .collect()
            };
            let Some(fw) = drv.fw.as_mut() else { break };
            // the poll timer fires a fixed number of clocks after the step, time enough for
            // the hardware to drain the data path's operations (which the software model does
            // in zero time), so both backends start the poll at the same CYCLES
            let start = cycle_at(l.now) + cfg.poll_offset_cycles;
            fw.hw().inner.advance_to(start);
            if fw.hw().inner.cycle() > start {
                late_polls += 1;
            }
            let rep = fw.poll().map_err(|err| ScenarioError::Firmware { call: "poll", err })?;
            let end = fw.hw().inner.cycle();
            let polls = fw.stats.polls;
            let first_new = drv.commands.len();
            drv.apply_commands(&mut l.a, l.now)?;
            if l.dead_plane.is_some() && detect_cycle.is_none() {
                detect_cycle = drv.commands[first_new..]
                    .iter()
                    .find(|c| on_dead[usize::from(c.path) % PATHS] && c.op != csr::sel_op::SET_PLANE_UP)
                    .map(|c| c.cycle);
            }
            if l.dead_plane.is_some() && repair_cycle.is_none() && rep.planes_down & (1 << cfg.fail_plane) != 0 {
                repair_cycle = Some(end);
                polls_to_repair = Some(polls - polls_at_fail);
            }
        }
    }
    let completed = done(&l)
        && Link::completions(&l.events_a).all(|c| c.status == Status::Ok)
        && Link::completions(&l.events_b).all(|c| c.status == Status::Ok);
    let data_intact = l.a.memory().region(src).ok() == l.b.memory().region(dst).ok();
    let (planes_up, paths_per_plane) = routing(&l, cfg, conn, paths);
    let (stats, fault, cycles, telemetry) = match (drv.fw.as_mut(), fw_id) {
        (Some(fw), Some(id)) => {
            let t = fw
                .telemetry(id)
                .map_err(|err| ScenarioError::Firmware { call: "telemetry", err })?;
            let fault = fw.hw().inner.read(csr::FAULT);
            (fw.stats, fault, fw.hw().inner.cycle(), t.to_words().to_vec())
        }
        _ => (Stats::default(), 0, 0, Vec::new()),
    };
    Ok(ScenarioReport {
        config: *cfg,
        completed,
        data_intact,
        transfer_ns: l.now - start,
        fail_at_ns: fail_at,
        fail_cycle,
        frames_dropped: l.dropped,
        detect_cycle,
        repair_cycle,
        detect_cycles: detect_cycle.map(|c| c.saturating_sub(fail_cycle)),
        repair_cycles: repair_cycle.map(|c| c.saturating_sub(fail_cycle)),
        polls_to_repair,
        late_polls,
        fw_polls: stats.polls,
        fw_rerolls: stats.rerolls,
        fw_paths_down: stats.paths_down,
        fw_planes_down: stats.planes_down,
        fw_faults: stats.faults,
        fault_register: fault,
        planes_up,
        paths_per_plane,
        rtos: l.a.stats().rtos,
        setup_commands,
        commands: drv.commands,
        core_ops: drv.core_ops,
        cycles,
        telemetry,
    })
}

/// Clocks a counter update takes after its operation's record (scoreboard record, popcount,
/// counter read-modify-write, CSR port copy), with margin.
const COUNTER_TAIL: u64 = 8;

/// An operation waiting for its stream, with what its record must show.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Any record (the result is not compared here).
    Any,
    /// The record of a control-core command (`SEL_CMD`).
    Command,
    /// SEND: `ok` and the PSN.
    Send(Option<u32>),
    /// ACK_WORD / EXPIRE: freed and lost masks.
    Word { freed: u32, lost: u32 },
    /// TIMER: expired or not.
    Timer(bool),
    /// SELECT: the chosen path.
    Select(Option<u8>),
    /// CREDIT: re-route asked or not.
    Credit(bool),
}

/// A `transport_core` at pin level for [`PinsCore`]: the core alone (the harness drives its CSR
/// bus for the host-built firmware), or inside the SoC, where PicoRV32 running the firmware
/// drives the bus and the harness only watches it.
pub trait CoreDut: mroce_cosim::Backend<In = mroce_cosim::pins::CoreIn, Out = mroce_cosim::pins::CoreOut> {
    /// A control core on the chip owns the CSR bus.
    fn on_chip_control(&self) -> bool {
        false
    }
    /// Keep the on-chip core's `SEL_CMD` writes from starting (the selector stream is busy with
    /// operations the model applied before any command the core may write now).
    fn hold_commands(&mut self, _hold: bool) {}
    /// The CSR write the on-chip core makes this clock (after `eval`).
    fn bus_write(&self) -> Option<(u16, u32)> {
        None
    }
    /// A `SEL_CMD` write is waiting for the hold to drop.
    fn command_waiting(&self) -> bool {
        false
    }
    /// Instructions the on-chip core has started (low 32 bits).
    fn instructions(&self) -> u32 {
        0
    }
}

impl CoreDut for mroce_cosim::pins::Verilated<mroce_cosim::pins::TransportCorePins> {}
impl CoreDut for mroce_cosim::pins::RustHdl<mroce_cosim::pins::TransportCorePins> {}

impl CoreDut for mroce_cosim::soc::Soc {
    fn on_chip_control(&self) -> bool {
        true
    }
    fn hold_commands(&mut self, hold: bool) {
        self.set_cmd_hold(hold);
    }
    fn bus_write(&self) -> Option<(u16, u32)> {
        self.last().csr_write
    }
    fn command_waiting(&self) -> bool {
        self.last().cmd_waiting
    }
    fn instructions(&self) -> u32 {
        self.last().instret
    }
}

/// CSR writes of an on-chip control core, as the harness sees them on the bus.
#[derive(Debug, Default)]
pub struct BusWatch {
    arg: u32,
    ctx: u32,
    /// `SEL_CMD` writes not yet taken by the harness.
    pub commands: Vec<FirmwareCommand>,
    /// Heartbeats (`SCRATCH` writes tagged [`mroce_firmware::soc_status::HEARTBEAT_TAG`]):
    /// (cycle, polls, instructions started) not yet taken.
    pub heartbeats: Vec<(u64, u32, u32)>,
    /// Last `FAULT` word written (0: none).
    pub fault: u32,
}

/// The `transport_core` hardware (any [`mroce_cosim::Backend`] of it: rust-hdl's simulator or
/// the Verilated model) as a [`CoreBackend`]: component operations go through its three
/// streams (II = 1, in parallel, while the clock runs to the next target), CSR accesses through
/// its bus (one clock each, `csr_rdata` after the edge). Every scoreboard and selector record
/// is checked against the model's result.
///
/// The data path is the model's: each SELECT carries the room mask the model used, so the
/// firmware's `CONTROL` bit 0 (SELECT takes the room from the scoreboard) is kept in a shadow
/// register and not given to the core.
pub struct PinsCore<D> {
    dut: D,
    rxq: VecDeque<mroce_cosim::bench::RxTxn>,
    txq: VecDeque<(mroce_cosim::bench::TxTxn, Expect)>,
    selq: VecDeque<(mroce_cosim::bench::SelTxn, Expect)>,
    rx_out: u64,
    tx_exp: VecDeque<Expect>,
    sel_exp: VecDeque<Expect>,
    /// Selector records owed to stream operations (not to `SEL_CMD`s).
    sel_owed: u64,
    /// Hold an on-chip core's `SEL_CMD` writes this clock whatever the streams (the end of a
    /// step, [`CoreBackend::advance_to`]).
    force_hold: bool,
    cycle: u64,
    last_activity: u64,
    control: u32,
    mismatch: Option<String>,
    /// Operations the streams accepted.
    pub ops: u64,
    /// What an on-chip control core wrote (SoC only).
    pub bus: BusWatch,
}

impl<D: CoreDut> PinsCore<D> {
    /// Wrap a freshly built core; `CYCLES` is calibrated with one read (by the harness; with
    /// an on-chip control core, `cycle` is the cycles the caller has already run).
    pub fn new(dut: D) -> Self {
        Self::at_cycle(dut, 0)
    }

    /// Wrap a core whose clock has run `cycle` edges (an on-chip control core owns the bus, so
    /// the harness cannot read `CYCLES`).
    pub fn at_cycle(dut: D, cycle: u64) -> Self {
        let mut c = PinsCore {
            dut,
            rxq: VecDeque::new(),
            txq: VecDeque::new(),
            selq: VecDeque::new(),
            rx_out: 0,
            tx_exp: VecDeque::new(),
            sel_exp: VecDeque::new(),
            sel_owed: 0,
            force_hold: false,
            cycle: 0,
            last_activity: 0,
            control: 0,
            mismatch: None,
            ops: 0,
            bus: BusWatch::default(),
        };
        if c.dut.on_chip_control() {
            c.cycle = cycle;
        } else {
            let c0 = c.access(csr::CYCLES, 0, false);
            c.cycle = u64::from(c0) + 1;
        }
        c
    }

    /// The wrapped design.
    pub fn dut(&mut self) -> &mut D {
        &mut self.dut
    }

    /// Note a CSR write of the on-chip core (the clock it takes effect).
    fn watch(&mut self, offset: u16, value: u32) {
        match offset {
            csr::SEL_CMD_ARG => self.bus.arg = value,
            csr::CTX_SEL => self.bus.ctx = value,
            csr::SEL_CMD if self.bus.ctx < csr::CONTEXTS => {
                self.sel_exp.push_back(Expect::Command);
                self.bus.commands.push(FirmwareCommand {
                    cycle: self.cycle + 1,
                    op: value & 0xF,
                    path: ((value >> 4) & 0xF) as u8,
                    flag: value & (1 << 8) != 0,
                    a: self.bus.arg as u16,
                    b: (self.bus.arg >> 16) as u16,
                });
            }
            csr::SCRATCH
                if value & mroce_firmware::soc_status::HEARTBEAT_TAG_MASK
                    == mroce_firmware::soc_status::HEARTBEAT_TAG =>
            {
                let instructions = self.dut.instructions();
                self.bus.heartbeats.push((self.cycle + 1, value & 0xFFFF, instructions))
            }
            csr::FAULT => self.bus.fault = value,
            _ => {}
        }
    }

    fn busy(&self) -> bool {
        !self.rxq.is_empty()
            || !self.txq.is_empty()
            || !self.selq.is_empty()
            || self.rx_out > 0
            || !self.tx_exp.is_empty()
            || self.sel_owed > 0
    }

    /// One clock: stream fronts offered, records taken (and checked), optional CSR access.
    fn clock(&mut self, csr_op: Option<(u16, u32, bool)>) -> u32 {
        use mroce_cosim::bench::{SelRec, TxRec};
        let mut inp = mroce_cosim::pins::CoreIn::default();
        let on_chip = self.dut.on_chip_control();
        if on_chip {
            // the model applies a command after the operations queued before it and before
            // those queued after it: hold the write while the selector is busy, and offer
            // nothing to the selector while a command is on its way through
            self.dut
                .hold_commands(self.force_hold || !self.selq.is_empty() || self.sel_owed > 0);
        }
        if let Some(t) = self.rxq.front() {
            inp.rx = t.pins(true);
        }
        inp.rx.out_ready = true;
        if let Some((t, _)) = self.txq.front() {
            inp.tx = t.pins(true);
        }
        inp.tx.out_ready = true;
        let command_in_flight = on_chip && self.sel_exp.iter().any(|e| matches!(e, Expect::Command));
        if let Some((t, _)) = self.selq.front().filter(|_| !command_in_flight) {
            inp.sel = t.pins(true);
        }
        inp.sel.out_ready = true;
        if let Some((addr, data, we)) = csr_op {
            inp.csr_addr = addr;
            inp.csr_wdata = data;
            inp.csr_we = we;
        }
        self.dut.set(&inp);
        let o = self.dut.eval();
        if inp.rx.valid && o.rx.in_ready {
            self.rxq.pop_front();
            self.rx_out += 1;
            self.ops += 1;
        }
        if inp.tx.valid && o.tx.in_ready {
            if let Some((_, e)) = self.txq.pop_front() {
                self.tx_exp.push_back(e);
            }
            self.ops += 1;
        }
        if inp.sel.valid && o.sel.in_ready {
            if let Some((_, e)) = self.selq.pop_front() {
                self.sel_exp.push_back(e);
                self.sel_owed += 1;
            }
            self.ops += 1;
        }
        // an on-chip core's write of this clock: a command becomes pending at this edge, after
        // any stream operation the selector accepts at the same edge
        if let Some((offset, value)) = self.dut.bus_write() {
            self.watch(offset, value);
        }
        if o.rx.out_valid {
            self.rx_out = self.rx_out.saturating_sub(1);
        }
        if o.tx.out_valid {
            let r = TxRec::from_pins(&o.tx);
            let ok = match self.tx_exp.pop_front() {
                Some(Expect::Send(psn)) => r.ok == psn.is_some() && psn.is_none_or(|p| p == r.psn),
                Some(Expect::Word { freed, lost }) => r.freed == freed && r.lost == lost,
                Some(Expect::Timer(expired)) => r.ok == expired,
                Some(_) => true,
                None => false,
            };
            if !ok && self.mismatch.is_none() {
                self.mismatch = Some(format!("tx_scoreboard record {r:?} at cycle {}", self.cycle));
            }
        }
        if o.sel.out_valid {
            let r = SelRec::from_pins(&o.sel);
            let e = self.sel_exp.pop_front();
            if !matches!(e, Some(Expect::Command)) {
                self.sel_owed = self.sel_owed.saturating_sub(1);
            }
            let ok = match e {
                Some(Expect::Select(p)) => r.ok == p.is_some() && p.is_none_or(|p| p == r.path),
                Some(Expect::Credit(reroute)) => r.ok == reroute,
                Some(_) => true,
                None => false,
            };
            if !ok && self.mismatch.is_none() {
                self.mismatch = Some(format!("path_selector record {r:?} at cycle {}", self.cycle));
            }
        }
        if inp.rx.valid || inp.tx.valid || inp.sel.valid || self.busy() {
            self.last_activity = self.cycle;
        }
        self.dut.tick();
        self.cycle += 1;
        if csr_op.is_some() {
            self.dut.eval().csr_rdata
        } else {
            0
        }
    }

    /// Run until every queued stream operation's record came out and its counters were
    /// written (a control-core command needs no wait here: the firmware polls `SEL_CMD`).
    fn settle(&mut self) {
        let mut guard = 0u64;
        while (self.busy() || self.cycle < self.last_activity + COUNTER_TAIL) && guard < 1_000_000 {
            self.clock(None);
            guard += 1;
        }
        if guard >= 1_000_000 && self.mismatch.is_none() {
            self.mismatch = Some(format!(
                "streams stuck at cycle {}: queued rx {} tx {} sel {}, records owed rx {} tx {} sel {}",
                self.cycle,
                self.rxq.len(),
                self.txq.len(),
                self.selq.len(),
                self.rx_out,
                self.tx_exp.len(),
                self.sel_exp.len()
            ));
        }
    }

    fn access(&mut self, offset: u16, value: u32, we: bool) -> u32 {
        self.settle();
        self.clock(Some((offset, value, we)))
    }

    /// The first record that disagreed with the model, if any.
    pub fn mismatch(&self) -> Option<&str> {
        self.mismatch.as_deref()
    }
}

impl<D: CoreDut> Csr for PinsCore<D> {
    fn read(&mut self, offset: u16) -> u32 {
        let v = self.access(offset, 0, false);
        if offset == csr::CONTROL {
            (v & !csr::CONTROL_ROOM_FROM_SCOREBOARD) | (self.control & csr::CONTROL_ROOM_FROM_SCOREBOARD)
        } else {
            v
        }
    }

    fn write(&mut self, offset: u16, value: u32) {
        let v = if offset == csr::CONTROL {
            self.control = value;
            value & !csr::CONTROL_ROOM_FROM_SCOREBOARD
        } else {
            value
        };
        self.access(offset, v, true);
        if offset == csr::SEL_CMD {
            // the command's record comes out of the selector too
            self.sel_exp.push_back(Expect::Command);
        }
    }

    fn idle(&mut self) {
        self.clock(None);
    }
}

impl<D: CoreDut> CoreBackend for PinsCore<D> {
    fn apply_calls(&mut self, calls: &ComponentCalls) -> Result<(), ScenarioError> {
        use mroce_cosim::bench::{RxTxn, SelTxn, TxTxn};
        for c in &calls.rx {
            match *c {
                RxCall::Init { isn } => self.rxq.extend((0..PATHS as u8).map(|path| RxTxn::Reset { path, isn })),
                RxCall::Packet { req, .. } => self.rxq.push_back(RxTxn::Packet {
                    path: req.path,
                    psn: req.psn,
                    floor: req.floor,
                    ce: req.ce,
                    ack_req: req.ack_req,
                    commit: req.commit,
                }),
                RxCall::Flush { path, .. } => self.rxq.push_back(RxTxn::Flush { path }),
            }
        }
        for c in &calls.tx {
            match *c {
                TxCall::Init { isn } => self
                    .txq
                    .extend((0..PATHS as u8).map(|path| (TxTxn::Reset { path, isn }, Expect::Any))),
                TxCall::Send { path, now, rto_ns, psn } => self
                    .txq
                    .push_back((TxTxn::Send { path, now, rto: rto_ns }, Expect::Send(psn))),
                TxCall::AckWord {
                    path,
                    word_psn,
                    mask,
                    lost_below,
                    now,
                    rto_ns,
                    result,
                } => self.txq.push_back((
                    TxTxn::AckWord {
                        path,
                        word_psn,
                        mask,
                        lost_below,
                        now,
                        rto: rto_ns,
                    },
                    Expect::Word {
                        freed: result.freed,
                        lost: result.lost,
                    },
                )),
                TxCall::ExpireHead { path, result } => self.txq.push_back((
                    TxTxn::Expire { path },
                    Expect::Word {
                        freed: result.freed,
                        lost: result.lost,
                    },
                )),
                TxCall::Timer {
                    path,
                    now,
                    rto_ns,
                    result,
                } => self.txq.push_back((
                    TxTxn::Timer { path, now, rto: rto_ns },
                    Expect::Timer(matches!(result, TimerResult::Expired { .. })),
                )),
                TxCall::ClearBackoff { path } => self.txq.push_back((TxTxn::ClearBackoff { path }, Expect::Any)),
            }
        }
        for c in &calls.sel {
            let t = match *c {
                SelCall::Init { paths, planes } => (SelTxn::Init { paths, planes }, Expect::Any),
                SelCall::Select { room_mask, path } => {
                    (SelTxn::Select { room: room_mask as u16 }, Expect::Select(path))
                }
                SelCall::ChargeProbe { path } => (SelTxn::ChargeProbe { path }, Expect::Any),
                SelCall::Credit { credit, reroute } => (
                    SelTxn::Credit {
                        path: credit.path,
                        acked: credit.acked,
                        lost: credit.lost,
                        probes: credit.probes,
                        ce: credit.ce,
                    },
                    Expect::Credit(reroute),
                ),
                SelCall::SetHealth { path, health } => (
                    SelTxn::SetHealth {
                        path,
                        health: match health {
                            PathHealth::Up => csr::health::UP,
                            PathHealth::Suspect => csr::health::SUSPECT,
                            PathHealth::Down => csr::health::DOWN,
                            PathHealth::Disabled => csr::health::DISABLED,
                        } as u8,
                    },
                    Expect::Any,
                ),
                SelCall::ClearInflight { path } => (SelTxn::ClearInflight { path }, Expect::Any),
                SelCall::RequestReroll { path, random } => (SelTxn::RequestReroll { path, random }, Expect::Any),
                SelCall::Reroll { path, random } => (SelTxn::Reroll { path, random }, Expect::Any),
                SelCall::SetPlaneUp { plane, up } => (SelTxn::SetPlaneUp { plane, up }, Expect::Any),
                SelCall::SetConnLimit { pkts } => (SelTxn::SetConnLimit { pkts }, Expect::Any),
            };
            self.selq.push_back(t);
        }
        match &self.mismatch {
            Some(m) => Err(ScenarioError::Replay(m.clone())),
            None => Ok(()),
        }
    }

    fn advance_to(&mut self, cycle: u64) {
        while self.cycle < cycle {
            self.clock(None);
        }
        // an on-chip core's held command goes in once the selector drained, before the model
        // moves on (it applies the command at the end of this step)
        let mut guard = 0u32;
        while self.dut.on_chip_control() && self.dut.command_waiting() && guard < 100_000 {
            self.clock(None);
            guard += 1;
        }
        // The bridge registers a write it lets through, so one it let through at the last edge
        // reaches the core in the next clock: run that clock now, with every new write held,
        // so that the write counts in this step. Else it could reach the selector after the
        // next step's first operations, which the model applies before it.
        if self.dut.on_chip_control() {
            self.force_hold = true;
            self.clock(None);
            self.force_hold = false;
        }
    }

    fn cycle(&self) -> u64 {
        self.cycle
    }
}
