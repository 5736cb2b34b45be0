//! A host model of `transport_core`'s CSR side effects, for testing every firmware function
//! without hardware: identity registers, `CTX_SEL`-addressed contexts each with a real
//! `mroce_model` path selector that `SEL_CMD` operations are applied to (so `P_STATE` reads
//! back what the hardware would report), per-path counters the test sets, sticky events with
//! write-1-to-clear, a clock counter, a log of every `SEL_CMD`, and fault injection (a register
//! that reads back wrong, a selector that never takes a command).

use crate::access::Csr;
use mroce_csr as csr;
use mroce_model::params::PATHS;
use mroce_model::path_selector::{Credit, PathHealth, PathSelector};

/// Capacity of the `SEL_CMD` log.
pub const LOG_CAPACITY: usize = 1024;

/// One `SEL_CMD` as the bank received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SelCommand {
    /// `CTX_SEL` at the time.
    pub ctx: u32,
    /// Operation code (`mroce_csr::sel_op`).
    pub op: u32,
    /// Path.
    pub path: u8,
    /// Flag bit.
    pub flag: bool,
    /// Argument a (`SEL_CMD_ARG` [15:0]).
    pub a: u16,
    /// Argument b (`SEL_CMD_ARG` [31:16]).
    pub b: u16,
}

/// Per-path counter registers of the window, in `mroce_csr::PATH_WINDOW` order minus `P_STATE`.
const COUNTERS: usize = 8;

/// One context: a path selector and the per-path counters.
#[derive(Debug, Clone)]
pub struct Context {
    /// The selector that `SEL_CMD` drives.
    pub selector: PathSelector,
    /// Counters `[path][window index]` (window index of `mroce_csr::PATH_WINDOW`).
    pub counters: [[u32; COUNTERS]; PATHS],
    /// Paths with a selector record (bit p): `P_STATE` bit 31.
    pub known: u16,
}

/// The register bank of a core with `CTX` contexts.
#[derive(Debug, Clone)]
pub struct RegBank<const CTX: usize> {
    /// Contexts.
    pub ctx: [Context; CTX],
    control: u32,
    scratch: u32,
    cmd_arg: u32,
    ctx_sel: u32,
    fault: u32,
    irq_enable: u32,
    path_sel: u32,
    /// Sticky events: RTO, loss, re-route (bit p = path p).
    pub events: [u32; 3],
    /// `CYCLES` value.
    pub cycles: u32,
    /// `CYCLES` advance per CSR access (the core's time passing while the firmware runs).
    pub cycles_per_access: u32,
    log: [SelCommand; LOG_CAPACITY],
    log_len: usize,
    /// Commands that did not fit in the log.
    pub log_overflow: usize,
    /// `(offset, xor)`: reads of `offset` return the value XOR `xor` (a faulty register).
    pub corrupt: Option<(u16, u32)>,
    /// The selector never takes a command: `SEL_CMD` stays pending.
    pub stuck_selector: bool,
    pending: bool,
    /// CSR accesses so far.
    pub accesses: u64,
    /// Override of `VERSION` (to model a core of another map version).
    pub version: u32,
}

impl<const CTX: usize> Default for RegBank<CTX> {
    fn default() -> Self {
        Self::new()
    }
}

fn health_code(h: PathHealth) -> u32 {
    match h {
        PathHealth::Up => csr::health::UP,
        PathHealth::Suspect => csr::health::SUSPECT,
        PathHealth::Down => csr::health::DOWN,
        PathHealth::Disabled => csr::health::DISABLED,
    }
}

fn health_of(code: u16) -> PathHealth {
    match u32::from(code) & 3 {
        csr::health::UP => PathHealth::Up,
        csr::health::SUSPECT => PathHealth::Suspect,
        csr::health::DOWN => PathHealth::Down,
        _ => PathHealth::Disabled,
    }
}

fn window_index(offset: u16) -> Option<usize> {
    csr::PATH_WINDOW.iter().position(|&o| o == offset)
}

impl<const CTX: usize> RegBank<CTX> {
    /// A bank at power-up.
    pub fn new() -> Self {
        RegBank {
            ctx: core::array::from_fn(|_| Context {
                selector: PathSelector::default(),
                counters: [[0; COUNTERS]; PATHS],
                known: 0,
            }),
            control: 0,
            scratch: 0,
            cmd_arg: 0,
            ctx_sel: 0,
            fault: 0,
            irq_enable: 0,
            path_sel: 0,
            events: [0; 3],
            cycles: 0,
            cycles_per_access: 1,
            log: [SelCommand::default(); LOG_CAPACITY],
            log_len: 0,
            log_overflow: 0,
            corrupt: None,
            stuck_selector: false,
            pending: false,
            accesses: 0,
            version: csr::MAP_VERSION,
        }
    }

    /// Every `SEL_CMD` taken so far, oldest first.
    pub fn commands(&self) -> &[SelCommand] {
        &self.log[..self.log_len]
    }

    /// Forget the command log.
    pub fn clear_commands(&mut self) {
        self.log_len = 0;
        self.log_overflow = 0;
    }

    /// Set a per-path counter (`reg` one of `mroce_csr::PATH_WINDOW` except `P_STATE`).
    pub fn set_counter(&mut self, ctx: usize, path: u8, reg: u16, value: u32) {
        if let (Some(c), Some(i)) = (self.ctx.get_mut(ctx), window_index(reg)) {
            if i < COUNTERS {
                c.counters[usize::from(path) % PATHS][i] = value;
            }
        }
    }

    /// Add to a per-path counter (wrapping, like the hardware).
    pub fn add_counter(&mut self, ctx: usize, path: u8, reg: u16, n: u32) {
        let v = self.counter(ctx, path, reg);
        self.set_counter(ctx, path, reg, v.wrapping_add(n));
    }

    /// A per-path counter.
    pub fn counter(&self, ctx: usize, path: u8, reg: u16) -> u32 {
        match (self.ctx.get(ctx), window_index(reg)) {
            (Some(c), Some(i)) if i < COUNTERS => c.counters[usize::from(path) % PATHS][i],
            _ => 0,
        }
    }

    /// Raise a sticky event (`reg` = `EVT_RTO`, `EVT_LOSS` or `EVT_REROUTE`) for `path`.
    pub fn raise(&mut self, reg: u16, path: u8) {
        if let Some(i) = Self::event_index(reg) {
            self.events[i] |= 1 << (path % 16);
        }
    }

    /// The `FAULT` register.
    pub fn fault(&self) -> u32 {
        self.fault
    }

    fn event_index(reg: u16) -> Option<usize> {
        match reg {
            csr::EVT_RTO => Some(0),
            csr::EVT_LOSS => Some(1),
            csr::EVT_REROUTE => Some(2),
            _ => None,
        }
    }

    fn summary(&self) -> u32 {
        csr::evt_summary(self.events)
    }

    fn path_state(&self) -> u32 {
        let p = (self.path_sel & 0xF) as u8;
        let c = match self.ctx.get(self.ctx_sel as usize) {
            Some(c) => c,
            None => return 0,
        };
        if c.known & (1 << p) == 0 {
            return 0;
        }
        let s = c.selector.path(p);
        u32::from(s.entropy) | (u32::from(s.plane) << 16) | (health_code(s.health) << 20) | csr::P_STATE_KNOWN
    }

    fn apply(&mut self, cmd: SelCommand) {
        if self.log_len < LOG_CAPACITY {
            self.log[self.log_len] = cmd;
            self.log_len += 1;
        } else {
            self.log_overflow += 1;
        }
        let Some(c) = self.ctx.get_mut(cmd.ctx as usize) else {
            return;
        };
        let s = &mut c.selector;
        let p = cmd.path;
        let mut record_path = Some(p);
        match cmd.op {
            csr::sel_op::SELECT => {
                record_path = s.select(u32::MAX);
                if let Some(q) = record_path {
                    c.counters[usize::from(q)][0] = c.counters[usize::from(q)][0].wrapping_add(1);
                }
            }
            csr::sel_op::CHARGE => s.charge(p),
            csr::sel_op::CHARGE_PROBE => s.charge_probe(p),
            csr::sel_op::CREDIT => {
                let reroute = s.credit(&Credit {
                    path: p,
                    acked: cmd.a,
                    lost: cmd.b,
                    probes: cmd.a,
                    ce: cmd.flag,
                });
                if cmd.flag {
                    let i = window_index(csr::P_ECN).unwrap_or(0);
                    c.counters[usize::from(p)][i] = c.counters[usize::from(p)][i].wrapping_add(1);
                }
                if reroute {
                    self.events[2] |= 1 << p;
                }
            }
            csr::sel_op::SET_HEALTH => s.set_health(p, health_of(cmd.a)),
            csr::sel_op::CLEAR_INFLIGHT => s.clear_inflight(p),
            csr::sel_op::REQUEST_REROLL => s.request_reroll(p, cmd.a),
            csr::sel_op::REROLL => s.reroll(p, cmd.a),
            csr::sel_op::SET_PLANE => s.set_plane(p, cmd.a as u8),
            csr::sel_op::SET_PLANE_UP => s.set_plane_up(cmd.a as u8, cmd.flag),
            csr::sel_op::SET_CONN_LIMIT => s.set_conn_limit(cmd.a),
            csr::sel_op::INIT => *s = PathSelector::new(cmd.a as u8, cmd.b as u8),
            _ => record_path = None,
        }
        if let (Some(q), Some(c)) = (record_path, self.ctx.get_mut(cmd.ctx as usize)) {
            c.known |= 1 << q;
        }
    }

    fn raw_read(&mut self, offset: u16) -> u32 {
        match offset {
            csr::ID => csr::ID_VALUE,
            csr::VERSION => self.version,
            csr::PARAMS => csr::PARAMS_VALUE,
            csr::CONTROL => self.control,
            csr::ROOM_MASK => (1 << PATHS) - 1,
            csr::SEL_CMD_ARG => self.cmd_arg,
            csr::SEL_CMD => {
                if self.pending {
                    csr::SEL_CMD_PENDING
                } else {
                    0
                }
            }
            csr::SCRATCH => self.scratch,
            csr::CAPS => CTX as u32,
            csr::CTX_SEL => self.ctx_sel,
            csr::CYCLES => self.cycles,
            csr::FAULT => self.fault,
            csr::EVT_RTO => self.events[0],
            csr::EVT_LOSS => self.events[1],
            csr::EVT_REROUTE => self.events[2],
            csr::EVT_SUMMARY => self.summary(),
            csr::IRQ_ENABLE => self.irq_enable,
            csr::PATH_SEL => self.path_sel,
            csr::P_STATE => self.path_state(),
            o => match window_index(o) {
                Some(i) => {
                    let p = (self.path_sel & 0xF) as usize;
                    self.ctx.get(self.ctx_sel as usize).map_or(0, |c| c.counters[p][i])
                }
                None => 0,
            },
        }
    }
}

impl<const CTX: usize> Csr for RegBank<CTX> {
    fn read(&mut self, offset: u16) -> u32 {
        self.accesses += 1;
        self.cycles = self.cycles.wrapping_add(self.cycles_per_access);
        let v = self.raw_read(offset);
        match self.corrupt {
            Some((o, x)) if o == offset => v ^ x,
            _ => v,
        }
    }

    fn write(&mut self, offset: u16, value: u32) {
        self.accesses += 1;
        self.cycles = self.cycles.wrapping_add(self.cycles_per_access);
        match offset {
            csr::CONTROL => self.control = value,
            csr::SCRATCH => self.scratch = value,
            csr::SEL_CMD_ARG => self.cmd_arg = value,
            csr::CTX_SEL => self.ctx_sel = value,
            csr::FAULT => self.fault = value,
            csr::IRQ_ENABLE => self.irq_enable = value,
            csr::PATH_SEL => self.path_sel = value,
            csr::EVT_RTO | csr::EVT_LOSS | csr::EVT_REROUTE => {
                if let Some(i) = Self::event_index(offset) {
                    self.events[i] &= !(value & 0xFFFF);
                }
            }
            csr::SEL_CMD => {
                if (self.ctx_sel as usize) >= CTX {
                    return;
                }
                if self.stuck_selector {
                    self.pending = true;
                    return;
                }
                self.apply(SelCommand {
                    ctx: self.ctx_sel,
                    op: value & 0xF,
                    path: ((value >> 4) & 0xF) as u8,
                    flag: value & (1 << 8) != 0,
                    a: self.cmd_arg as u16,
                    b: (self.cmd_arg >> 16) as u16,
                });
            }
            _ => {}
        }
    }
}
