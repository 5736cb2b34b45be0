//! The control plane: connection setup and teardown, path and plane health, congestion-control
//! parameters and telemetry, all through [`Csr`] and the `mroce_csr` map.
//!
//! Health policy (SPEC.md §8.4, run from the hardware's counters instead of per packet):
//! - a path whose `P_RTOS` moved had `delta` RTOs: its entropy is re-rolled (the route may be
//!   broken) and it becomes Suspect, or Down after `path_down_rtos` RTOs in a row;
//! - a path whose `P_ACKED` moved made progress: the RTO run restarts and a Down path is Up
//!   again;
//! - a path that lost more than `suspect_loss_permille` of its packets since the last poll
//!   (at least `suspect_min_losses`) is Suspect and moves to a new entropy once drained;
//! - an `EVT_REROUTE` bit (the selector's ECN verdict) moves the path once drained;
//! - a plane whose paths are all Down is declared down; its paths but one (the sentinel,
//!   which stays to be probed) move to the live planes with new entropies, so the traffic
//!   keeps its path count with no application action; every `probe_interval_cycles` the
//!   sentinel gets a new entropy (the data path probes Down paths, SPEC.md §8.4); when the
//!   sentinel makes progress the plane is up and its paths move home.
//!
//! Counter deltas are taken on the low 16 bits of the 32-bit wrapping counters: exact as long
//! as fewer than 65536 events of one counter happen on one path between two polls.

use crate::access::Csr;
use crate::error::Error;
use mroce_csr as csr;
use mroce_csr::{health, sel_op};
use mroce_model::params::{MAX_PLANES, PATHS, PATH_DOWN_RTOS};
use mroce_model::path_selector::entropy_from;

/// Identifies a connection: table slot and the slot's generation (a stale id is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId {
    /// Slot in the table.
    pub slot: u8,
    /// Generation of the slot when allocated.
    pub generation: u8,
}

/// Congestion-control and timer parameters of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CcParams {
    /// Packets in flight allowed for the whole connection (`SET_CONN_LIMIT`); 0 = no limit.
    pub conn_limit: u16,
    /// RTO floor, ns (the data path passes the RTO with each scoreboard operation).
    pub rto_min_ns: u32,
    /// Initial RTO before an RTT sample, ns.
    pub rto_init_ns: u32,
}

/// What `setup` needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnRequest {
    /// Peer identifier (its plane-0 IPv4 address).
    pub peer: u32,
    /// Paths, 1 ..= 16.
    pub paths: u8,
    /// Planes, 1 ..= 8.
    pub planes: u8,
    /// Congestion control and timers.
    pub cc: CcParams,
}

/// Firmware configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Seed of the entropy generator (mixed with `CYCLES` at boot).
    pub seed: u32,
    /// RTOs in a row after which a path is Down.
    pub path_down_rtos: u8,
    /// Loss share (per mille of acked + lost since the last poll) that makes a path Suspect.
    pub suspect_loss_permille: u16,
    /// Fewest losses since the last poll for the loss rule to apply.
    pub suspect_min_losses: u16,
    /// Clock cycles between two probe rounds of a down plane.
    pub probe_interval_cycles: u32,
    /// Reads of `SEL_CMD` to wait for a command to enter the selector.
    pub command_polls: u32,
}

impl Config {
    /// Defaults: SPEC.md's `PATH_DOWN_RTOS`, 5% loss over at least 8 losses, probes every
    /// 100 us at [`crate::memory_map::CYCLES_PER_US`].
    pub const DEFAULT: Config = Config {
        seed: 0x6D72_6365,
        path_down_rtos: PATH_DOWN_RTOS,
        suspect_loss_permille: 50,
        suspect_min_losses: 8,
        probe_interval_cycles: 100 * crate::memory_map::CYCLES_PER_US,
        command_polls: 64,
    };
}

impl Default for Config {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Per-path monitor state (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct PathMon {
    snap_rtos: u16,
    snap_lost: u16,
    snap_acked: u16,
    rtos_in_row: u8,
    /// health [1:0], plane [4:2], sentinel [5]
    st: u8,
}

impl PathMon {
    fn health(&self) -> u32 {
        u32::from(self.st & 3)
    }
    fn plane(&self) -> u8 {
        (self.st >> 2) & 7
    }
    fn sentinel(&self) -> bool {
        self.st & 0x20 != 0
    }
    fn set(&mut self, health: u32, plane: u8, sentinel: bool) {
        self.st = (health & 3) as u8 | ((plane & 7) << 2) | (u8::from(sentinel) << 5);
    }
}

/// What a poll reads of one path (`PathTelemetry` less the counters no rule uses).
#[derive(Debug, Clone, Copy)]
struct HealthCounters {
    acked: u32,
    lost: u32,
    rtos: u32,
    state: u32,
}

/// One connection (all-zero when free, so a table lands in `.bss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Conn {
    used: bool,
    generation: u8,
    ctx: u8,
    paths: u8,
    planes: u8,
    planes_up: u8,
    peer: u32,
    cc: CcParams,
    next_probe: u32,
    rerolls: u16,
    plane_events: u16,
    mon: [PathMon; PATHS],
}

impl Conn {
    const EMPTY: Conn = Conn {
        used: false,
        generation: 0,
        ctx: 0,
        paths: 0,
        planes: 0,
        planes_up: 0,
        peer: 0,
        cc: CcParams {
            conn_limit: 0,
            rto_min_ns: 0,
            rto_init_ns: 0,
        },
        next_probe: 0,
        rerolls: 0,
        plane_events: 0,
        mon: [PathMon {
            snap_rtos: 0,
            snap_lost: 0,
            snap_acked: 0,
            rtos_in_row: 0,
            st: 0,
        }; PATHS],
    };
}

/// The connection table: `N` slots, fixed capacity.
#[derive(Debug, Clone)]
pub struct ConnTable<const N: usize> {
    slots: [Conn; N],
    /// Slots in use: a poll stops scanning after the last of them (a scan of 64 slots for one
    /// connection cost ~7 % of a poll on PicoRV32).
    live: u16,
}

impl<const N: usize> ConnTable<N> {
    /// An empty table (all zero).
    pub const fn new() -> Self {
        ConnTable {
            slots: [Conn::EMPTY; N],
            live: 0,
        }
    }

    /// Connections in use.
    pub fn len(&self) -> usize {
        usize::from(self.live)
    }

    /// True when no connection is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<const N: usize> Default for ConnTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Firmware-wide event counts (telemetry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Stats {
    /// Polls run.
    pub polls: u32,
    /// Entropy re-rolls issued (immediate and on drain).
    pub rerolls: u32,
    /// Paths made Suspect.
    pub suspects: u32,
    /// Paths declared Down.
    pub paths_down: u32,
    /// Down paths that came back.
    pub paths_recovered: u32,
    /// Planes declared down.
    pub planes_down: u32,
    /// Planes brought back.
    pub planes_up: u32,
    /// Probe rounds on down planes.
    pub probe_rounds: u32,
    /// Errors reported (each also written to `FAULT`).
    pub faults: u32,
}

/// What one poll did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PollReport {
    /// Connections examined.
    pub connections: u32,
    /// Paths that had RTOs.
    pub rto_paths: u32,
    /// Paths made Suspect by the loss rule.
    pub lossy_paths: u32,
    /// Paths re-routed on the selector's ECN verdict.
    pub ecn_reroutes: u32,
    /// Paths declared Down.
    pub paths_down: u32,
    /// Down paths that came back.
    pub paths_recovered: u32,
    /// Planes declared down (bit k).
    pub planes_down: u8,
    /// Planes brought back (bit k).
    pub planes_up: u8,
}

/// Telemetry of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathTelemetry {
    /// Packets sprayed on the path (hardware counter).
    pub selected: u32,
    /// PSNs acknowledged.
    pub acked: u32,
    /// PSNs lost (SACK gaps + RTO expiries).
    pub lost: u32,
    /// RTO expiries.
    pub rtos: u32,
    /// ECN-echoing credits.
    pub ecn: u32,
    /// Received CE marks.
    pub rx_ce: u32,
    /// `P_STATE` as read (entropy, plane, health, known).
    pub state: u32,
}

/// Telemetry of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Telemetry {
    /// Peer.
    pub peer: u32,
    /// Paths.
    pub paths: u8,
    /// Planes.
    pub planes: u8,
    /// Planes up (bit k).
    pub planes_up: u8,
    /// Entropy re-rolls of this connection.
    pub rerolls: u16,
    /// Plane down/up transitions of this connection.
    pub plane_events: u16,
    /// CC parameters in force.
    pub cc: CcParams,
    /// Per path (the first `paths` are meaningful).
    pub path: [PathTelemetry; PATHS],
}

/// Words of [`Telemetry::to_words`].
pub const TELEMETRY_WORDS: usize = 5 + 7 * PATHS;

impl Telemetry {
    /// Export as little-endian words (a mailbox or trace buffer): header then 7 words per path.
    pub fn to_words(&self) -> [u32; TELEMETRY_WORDS] {
        let mut w = [0u32; TELEMETRY_WORDS];
        w[0] = self.peer;
        w[1] = u32::from(self.paths) | (u32::from(self.planes) << 8) | (u32::from(self.planes_up) << 16);
        w[2] = u32::from(self.rerolls) | (u32::from(self.plane_events) << 16);
        w[3] = u32::from(self.cc.conn_limit);
        w[4] = self.cc.rto_min_ns;
        for (p, t) in self.path.iter().enumerate() {
            let b = 5 + 7 * p;
            w[b..b + 7].copy_from_slice(&[t.selected, t.acked, t.lost, t.rtos, t.ecn, t.rx_ce, t.state]);
        }
        w
    }
}

/// xorshift32: entropy for UDP source ports (not security relevant).
#[derive(Debug, Clone, Copy)]
struct Rng(u32);

impl Rng {
    fn next16(&mut self) -> u16 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        (x >> 8) as u16
    }
}

/// The firmware: a CSR backend, a configuration and a connection table of `N` slots.
pub struct Firmware<'t, H: Csr, const N: usize> {
    hw: H,
    cfg: Config,
    table: &'t mut ConnTable<N>,
    rng: Rng,
    contexts: u8,
    ctx_used: u8,
    /// Event counts.
    pub stats: Stats,
}

/// Per plane: the paths on it that are not disabled, and those of them that are Down. One
/// pass over the paths (a pass per plane cost ~4x the instructions on the soft core).
fn plane_masks(c: &Conn) -> [(u16, u16); MAX_PLANES] {
    let mut m = [(0u16, 0u16); MAX_PLANES];
    let mut bit = 1u16;
    for s in c.mon.iter().take(usize::from(c.paths)) {
        let h = s.health();
        if h != health::DISABLED {
            let e = &mut m[usize::from(s.plane()) % MAX_PLANES];
            e.0 |= bit;
            if h == health::DOWN {
                e.1 |= bit;
            }
        }
        bit <<= 1;
    }
    m
}

/// What one pass over a connection's paths found.
#[derive(Default)]
struct PassMarks {
    /// Paths whose `P_ACKED` moved.
    progressed: u16,
    /// Paths Down after the pass.
    down: u16,
    /// Paths whose RTO count moved.
    rto: u16,
}

/// Index of path `p` in a per-path array (in range for any `p`, so no bounds check).
fn pidx(p: u8) -> usize {
    usize::from(p) % PATHS
}

fn delta16(now: u32, snap: &mut u16) -> u16 {
    let d = (now as u16).wrapping_sub(*snap);
    *snap = now as u16;
    d
}

impl<'t, H: Csr, const N: usize> Firmware<'t, H, N> {
    /// Check the core is the one this firmware drives (`ID`, `VERSION`, `PARAMS`), test the
    /// bus (`SCRATCH`), configure `CONTROL`, clear events and `FAULT`. Errors are written to
    /// `FAULT` before they are returned.
    pub fn boot(mut hw: H, cfg: Config, table: &'t mut ConnTable<N>) -> Result<Self, Error> {
        let r = Self::check_core(&mut hw);
        let contexts = match r {
            Ok(c) => c,
            Err(e) => {
                hw.write(csr::FAULT, e.fault_word());
                return Err(e);
            }
        };
        let seed = cfg.seed ^ hw.read(csr::CYCLES).rotate_left(16);
        *table = ConnTable::new();
        Ok(Firmware {
            hw,
            cfg,
            table,
            rng: Rng(if seed == 0 { 0x9E37_79B9 } else { seed }),
            contexts,
            ctx_used: 0,
            stats: Stats::default(),
        })
    }

    fn check_core(hw: &mut H) -> Result<u8, Error> {
        for (offset, want) in [
            (csr::ID, csr::ID_VALUE),
            (csr::VERSION, csr::MAP_VERSION),
            (csr::PARAMS, csr::PARAMS_VALUE),
        ] {
            let read = hw.read(offset);
            if read != want {
                return Err(Error::BadIdentity { offset, read });
            }
        }
        for v in [0xA5A5_5A5A, 0x5A5A_A5A5] {
            write_checked(hw, csr::SCRATCH, v)?;
        }
        write_checked(hw, csr::CONTROL, csr::CONTROL_ROOM_FROM_SCOREBOARD)?;
        write_checked(hw, csr::IRQ_ENABLE, 0)?;
        for e in [csr::EVT_RTO, csr::EVT_LOSS, csr::EVT_REROUTE] {
            hw.write(e, 0xFFFF);
        }
        hw.write(csr::FAULT, 0);
        let contexts = (hw.read(csr::CAPS) & 0xFF).min(8) as u8;
        if contexts == 0 {
            return Err(Error::BadIdentity {
                offset: csr::CAPS,
                read: 0,
            });
        }
        Ok(contexts)
    }

    /// The backend (tests inspect the register bank through it).
    pub fn hw(&mut self) -> &mut H {
        &mut self.hw
    }

    /// Hardware contexts the core reported.
    pub fn contexts(&self) -> u8 {
        self.contexts
    }

    /// Connections in use.
    pub fn connections(&self) -> usize {
        self.table.len()
    }

    fn fail<T>(&mut self, e: Error) -> Result<T, Error> {
        self.stats.faults = self.stats.faults.wrapping_add(1);
        self.hw.write(csr::FAULT, e.fault_word());
        Err(e)
    }

    fn conn_slot(&self, id: ConnId) -> Result<usize, Error> {
        let s = usize::from(id.slot);
        match self.table.slots.get(s) {
            // `% N` keeps the index provably in range (no bounds check in the image); s < N here
            Some(c) if c.used && c.generation == id.generation => Ok(s % N),
            _ => Err(Error::UnknownConnection),
        }
    }

    /// The firmware less its connection table (see [`Control`]), and the table beside it.
    fn split(&mut self) -> (Control<'_, H>, &mut ConnTable<N>) {
        let k = Control {
            hw: &mut self.hw,
            cfg: &self.cfg,
            rng: &mut self.rng,
            stats: &mut self.stats,
        };
        (k, &mut *self.table)
    }

    /// The firmware less its connection table (see [`Control`]).
    fn ctl(&mut self) -> Control<'_, H> {
        self.split().0
    }

    fn state_word(entropy: u16, plane: u8, health: u32) -> u32 {
        u32::from(entropy) | (u32::from(plane) << 16) | (health << 20) | csr::P_STATE_KNOWN
    }

    /// Set up a connection: allocate a slot and a hardware context, INIT the selector, put
    /// path p on plane p mod planes with the entropy `0xC000 | ((r[plane] + p / planes) &
    /// 0x3FFF)` (SPEC.md §8.1: consecutive within a plane, independent bases per plane),
    /// disable the paths beyond `paths`, program the CC limit, verify every path's state
    /// through `P_STATE`, and take the counters' baseline.
    pub fn setup(&mut self, req: &ConnRequest) -> Result<ConnId, Error> {
        match self.try_setup(req) {
            Ok(id) => Ok(id),
            Err(e) => self.fail(e),
        }
    }

    fn try_setup(&mut self, req: &ConnRequest) -> Result<ConnId, Error> {
        if req.paths == 0 || usize::from(req.paths) > PATHS || req.planes == 0 || usize::from(req.planes) > MAX_PLANES {
            return Err(Error::BadParameter);
        }
        let slot = self.table.slots.iter().position(|c| !c.used).ok_or(Error::TableFull)? % N;
        let ctx = (0..self.contexts)
            .find(|&k| self.ctx_used & (1 << k) == 0)
            .ok_or(Error::NoContext)?;
        let generation = self.table.slots[slot].generation.wrapping_add(1);
        let mut c = Conn {
            used: true,
            generation,
            ctx,
            paths: req.paths,
            planes: req.planes,
            planes_up: ((1u16 << req.planes) - 1) as u8,
            peer: req.peer,
            cc: req.cc,
            ..Conn::EMPTY
        };
        let mut k = self.ctl();
        k.select_ctx(ctx)?;
        k.sel(sel_op::INIT, 0, u16::from(req.paths), u16::from(req.planes), false)?;
        let mut base = [0u16; MAX_PLANES];
        for b in base.iter_mut() {
            *b = k.rng.next16();
        }
        for p in 0..PATHS as u8 {
            if p < req.paths {
                let plane = p % req.planes;
                let r = base[usize::from(plane) % MAX_PLANES].wrapping_add(u16::from(p / req.planes));
                k.sel(sel_op::SET_PLANE, p, u16::from(plane), 0, false)?;
                k.sel(sel_op::REROLL, p, r, 0, false)?;
                k.expect_state(p, Self::state_word(entropy_from(r), plane, health::UP))?;
                c.mon[pidx(p)].set(health::UP, plane, false);
            } else {
                k.sel(sel_op::SET_HEALTH, p, health::DISABLED as u16, 0, false)?;
                c.mon[pidx(p)].set(health::DISABLED, 0, false);
            }
        }
        k.program_cc(&req.cc)?;
        k.baseline(&mut c)?;
        self.ctx_used |= 1 << ctx;
        self.table.slots[slot] = c;
        self.table.live += 1;
        Ok(ConnId {
            slot: slot as u8,
            generation,
        })
    }

    /// Change a connection's CC parameters (`SET_CONN_LIMIT`; the RTO bounds are kept for the
    /// data path, which passes the RTO with each scoreboard operation).
    pub fn set_cc(&mut self, id: ConnId, cc: CcParams) -> Result<(), Error> {
        let r = self.conn_slot(id).and_then(|s| {
            let ctx = self.table.slots[s].ctx;
            let mut k = self.ctl();
            k.select_ctx(ctx)?;
            k.program_cc(&cc)?;
            self.table.slots[s].cc = cc;
            Ok(())
        });
        r.or_else(|e| self.fail(e))
    }

    /// Tear a connection down: every path Disabled with its flight cleared, then the slot and
    /// the context are free. A stale or unknown id is an error.
    pub fn teardown(&mut self, id: ConnId) -> Result<(), Error> {
        let r = self.conn_slot(id).and_then(|s| {
            let ctx = self.table.slots[s].ctx;
            let mut k = self.ctl();
            k.select_ctx(ctx)?;
            for p in 0..PATHS as u8 {
                k.sel(sel_op::SET_HEALTH, p, health::DISABLED as u16, 0, false)?;
                k.sel(sel_op::CLEAR_INFLIGHT, p, 0, 0, false)?;
            }
            let generation = self.table.slots[s].generation;
            self.table.slots[s] = Conn {
                generation,
                ..Conn::EMPTY
            };
            self.table.live = self.table.live.saturating_sub(1);
            self.ctx_used &= !(1 << ctx);
            Ok(())
        });
        r.or_else(|e| self.fail(e))
    }

    /// Telemetry of a connection: the hardware counters of its paths and the firmware's view.
    pub fn telemetry(&mut self, id: ConnId) -> Result<Telemetry, Error> {
        let r = self.conn_slot(id).and_then(|s| {
            let c = self.table.slots[s];
            let mut k = self.ctl();
            k.select_ctx(c.ctx)?;
            let mut t = Telemetry {
                peer: c.peer,
                paths: c.paths,
                planes: c.planes,
                planes_up: c.planes_up,
                rerolls: c.rerolls,
                plane_events: c.plane_events,
                cc: c.cc,
                path: [PathTelemetry::default(); PATHS],
            };
            for p in 0..c.paths {
                t.path[pidx(p)] = k.read_counters(p)?;
            }
            Ok(t)
        });
        r.or_else(|e| self.fail(e))
    }

    /// Health of a path as the firmware last set it (`mroce_csr::health`).
    pub fn path_health(&self, id: ConnId, path: u8) -> Result<u32, Error> {
        let s = self.conn_slot(id)?;
        let c = &self.table.slots[s];
        if path >= c.paths {
            return Err(Error::BadParameter);
        }
        Ok(c.mon[pidx(path)].health())
    }

    /// Plane of a path as the firmware last set it.
    pub fn path_plane(&self, id: ConnId, path: u8) -> Result<u8, Error> {
        let s = self.conn_slot(id)?;
        let c = &self.table.slots[s];
        if path >= c.paths {
            return Err(Error::BadParameter);
        }
        Ok(c.mon[pidx(path)].plane())
    }

    /// Planes up (bit k) of a connection.
    pub fn planes_up(&self, id: ConnId) -> Result<u8, Error> {
        let s = self.conn_slot(id)?;
        Ok(self.table.slots[s].planes_up)
    }

    /// One health-monitor pass over every connection (see the module documentation).
    pub fn poll(&mut self) -> Result<PollReport, Error> {
        self.stats.polls = self.stats.polls.wrapping_add(1);
        let mut rep = PollReport::default();
        let (mut k, table) = self.split();
        let mut r = Ok(());
        let live = u32::from(table.live);
        for c in table.slots.iter_mut() {
            if rep.connections == live {
                break;
            }
            if !c.used {
                continue;
            }
            rep.connections += 1;
            r = k.poll_conn(c, &mut rep);
            if r.is_err() {
                break;
            }
        }
        match r {
            Ok(()) => Ok(rep),
            Err(e) => self.fail(e),
        }
    }
}

/// The firmware without its connection table: the control operations on one connection
/// borrow it beside that connection's slot, so a poll works on the slot in place (copying
/// the 160-byte slot in and out took ~17 % of a poll's cycles on PicoRV32).
struct Control<'a, H: Csr> {
    hw: &'a mut H,
    cfg: &'a Config,
    rng: &'a mut Rng,
    stats: &'a mut Stats,
}

impl<H: Csr> Control<'_, H> {
    fn select_ctx(&mut self, ctx: u8) -> Result<(), Error> {
        write_checked(&mut self.hw, csr::CTX_SEL, u32::from(ctx))
    }

    /// Queue one selector operation and wait until the selector took it.
    fn sel(&mut self, op: u32, path: u8, a: u16, b: u16, flag: bool) -> Result<(), Error> {
        let arg = u32::from(a) | (u32::from(b) << 16);
        write_checked(&mut self.hw, csr::SEL_CMD_ARG, arg)?;
        self.hw.write(csr::SEL_CMD, csr::sel_cmd_word(op, path, flag));
        for _ in 0..self.cfg.command_polls.max(1) {
            if self.hw.read(csr::SEL_CMD) & csr::SEL_CMD_PENDING == 0 {
                return Ok(());
            }
            self.hw.idle();
        }
        Err(Error::CommandTimeout)
    }

    /// Read a path's `P_STATE` until it shows `want` (entropy/plane/health, known), within
    /// `command_polls` reads: the selector's record reaches the register a few clocks after the
    /// command.
    fn expect_state(&mut self, path: u8, want: u32) -> Result<(), Error> {
        write_checked(&mut self.hw, csr::PATH_SEL, u32::from(path))?;
        let mut read = 0;
        for _ in 0..self.cfg.command_polls.max(1) {
            read = self.hw.read(csr::P_STATE);
            if read == want {
                return Ok(());
            }
            self.hw.idle();
        }
        Err(Error::Readback {
            offset: csr::P_STATE,
            wrote: want,
            read,
        })
    }

    fn program_cc(&mut self, cc: &CcParams) -> Result<(), Error> {
        let limit = if cc.conn_limit == 0 { u16::MAX } else { cc.conn_limit };
        self.sel(sel_op::SET_CONN_LIMIT, 0, limit, 0, false)
    }

    /// Take the current counters as the reference of the next deltas.
    fn baseline(&mut self, c: &mut Conn) -> Result<(), Error> {
        for p in 0..c.paths {
            let k = self.read_health_counters(p)?;
            let m = &mut c.mon[pidx(p)];
            m.snap_rtos = k.rtos as u16;
            m.snap_lost = k.lost as u16;
            m.snap_acked = k.acked as u16;
            m.rtos_in_row = 0;
        }
        Ok(())
    }

    /// The counters the health rules use (5 of `read_counters`' 8 reads: a poll on the soft
    /// core spends most of its cycles per path on CSR reads and their bookkeeping).
    fn read_health_counters(&mut self, p: u8) -> Result<HealthCounters, Error> {
        write_checked(&mut self.hw, csr::PATH_SEL, u32::from(p))?;
        Ok(HealthCounters {
            acked: self.hw.read(csr::P_ACKED),
            lost: self
                .hw
                .read(csr::P_SACK_LOST)
                .wrapping_add(self.hw.read(csr::P_RTO_LOST)),
            rtos: self.hw.read(csr::P_RTOS),
            state: self.hw.read(csr::P_STATE),
        })
    }

    fn read_counters(&mut self, p: u8) -> Result<PathTelemetry, Error> {
        let k = self.read_health_counters(p)?;
        Ok(PathTelemetry {
            selected: self.hw.read(csr::P_SELECTED),
            acked: k.acked,
            lost: k.lost,
            rtos: k.rtos,
            ecn: self.hw.read(csr::P_ECN),
            rx_ce: self.hw.read(csr::P_RX_CE),
            state: k.state,
        })
    }

    fn set_path(&mut self, c: &mut Conn, p: u8, health: u32, plane: u8, sentinel: bool) -> Result<(), Error> {
        let m = c.mon[pidx(p)];
        if m.plane() != plane {
            self.sel(sel_op::SET_PLANE, p, u16::from(plane), 0, false)?;
        }
        if m.health() != health {
            self.sel(sel_op::SET_HEALTH, p, health as u16, 0, false)?;
        }
        c.mon[pidx(p)].set(health, plane, sentinel);
        Ok(())
    }

    fn reroll_now(&mut self, c: &mut Conn, p: u8) -> Result<(), Error> {
        let r = self.rng.next16();
        self.sel(sel_op::REROLL, p, r, 0, false)?;
        c.rerolls = c.rerolls.wrapping_add(1);
        self.stats.rerolls = self.stats.rerolls.wrapping_add(1);
        Ok(())
    }

    fn reroll_drained(&mut self, c: &mut Conn, p: u8) -> Result<(), Error> {
        let r = self.rng.next16();
        self.sel(sel_op::REQUEST_REROLL, p, r, 0, false)?;
        c.rerolls = c.rerolls.wrapping_add(1);
        self.stats.rerolls = self.stats.rerolls.wrapping_add(1);
        Ok(())
    }

    fn poll_conn(&mut self, c: &mut Conn, rep: &mut PollReport) -> Result<(), Error> {
        self.select_ctx(c.ctx)?;
        let ev_rto = self.hw.read(csr::EVT_RTO) & 0xFFFF;
        let ev_reroute = self.hw.read(csr::EVT_REROUTE) & 0xFFFF;
        let ev_loss = self.hw.read(csr::EVT_LOSS) & 0xFFFF;
        // clear what was seen (a bit set after the read stays for the next poll)
        self.hw.write(csr::EVT_REROUTE, ev_reroute);
        self.hw.write(csr::EVT_LOSS, ev_loss);
        let mut marks = PassMarks::default();
        // RTOs first, all together (`late_rtos` clears their events): left to the pass, a
        // plane's RTOs raised just before the poll were handled one per visit, ~2,600 cycles
        // apart on the soft core
        if ev_rto != 0 {
            self.late_rtos(c, ev_rto, &mut marks, rep)?;
        }
        // a running bit: PicoRV32 without its barrel shifter pays per position for `1 << p`
        let mut bit = 1u16;
        for p in 0..c.paths {
            self.poll_path(c, p, bit, ev_reroute, &mut marks, rep)?;
            // An RTO raised since, on any path, is handled now rather than at that path's turn
            // (for a path the pass has gone by, a whole poll later): a plane's paths time out
            // within a few hundred ns of each other and the plane rules need all of them. One
            // CSR read per path when nothing happened; a new Down runs the plane rules at once.
            let late = self.hw.read(csr::EVT_RTO) & 0xFFFF;
            if late != 0 {
                self.late_rtos(c, late, &mut marks, rep)?;
            }
            bit <<= 1;
        }
        // no path Down and every plane up: no plane rule can act
        if marks.down == 0 && c.planes_up == ((1u16 << c.planes) - 1) as u8 {
            return Ok(());
        }
        self.planes(c, marks.progressed, rep)
    }

    /// The health rules, out of turn, for the paths whose RTO event is set, again while new
    /// ones arrive (a plane's RTOs come a few hundred ns apart; bounded, as events could keep
    /// coming), then the plane rules if a path went Down. Out of line: the pass's loop stays
    /// small for the common case, no event.
    #[inline(never)]
    fn late_rtos(
        &mut self,
        c: &mut Conn,
        first: u32,
        marks: &mut PassMarks,
        rep: &mut PollReport,
    ) -> Result<(), Error> {
        let down = marks.down;
        let mut late = first;
        for _ in 0..4 {
            if late == 0 {
                break;
            }
            self.hw.write(csr::EVT_RTO, late);
            let mut bit = 1u16;
            for p in 0..c.paths {
                if late < u32::from(bit) {
                    break;
                }
                if late & u32::from(bit) != 0 {
                    self.poll_path(c, p, bit, 0, marks, rep)?;
                }
                bit <<= 1;
            }
            late = self.hw.read(csr::EVT_RTO) & 0xFFFF;
        }
        if marks.down != down {
            self.planes(c, marks.progressed, rep)?;
        }
        Ok(())
    }

    /// The health rules of one path, from its counters' deltas since the last look. Inlined:
    /// as a call it cost PicoRV32 ~40 % more cycles per poll.
    #[inline(always)]
    fn poll_path(
        &mut self,
        c: &mut Conn,
        p: u8,
        bit: u16,
        ev_reroute: u32,
        marks: &mut PassMarks,
        rep: &mut PollReport,
    ) -> Result<(), Error> {
        let k = self.read_health_counters(p)?;
        let pi = pidx(p);
        let d_rtos = delta16(k.rtos, &mut c.mon[pi].snap_rtos);
        if d_rtos > 0 {
            marks.rto |= bit;
        }
        // an RTO handled out of turn earlier in this pass still excludes the loss and ECN rules
        let rto_in_pass = marks.rto & bit != 0;
        let d_lost = delta16(k.lost, &mut c.mon[pi].snap_lost);
        let d_acked = delta16(k.acked, &mut c.mon[pi].snap_acked);
        // the one transition the selector makes by itself: Suspect -> Up on a progressing
        // CREDIT (SPEC.md §6.3); follow it from the path's last record
        if c.mon[pi].health() == health::SUSPECT
            && k.state & csr::P_STATE_KNOWN != 0
            && (k.state >> 20) & 3 == health::UP
        {
            let (pl, se) = (c.mon[pi].plane(), c.mon[pi].sentinel());
            c.mon[pi].set(health::UP, pl, se);
        }
        let m = c.mon[pi];
        let (plane, sentinel) = (m.plane(), m.sentinel());
        if d_acked > 0 {
            marks.progressed |= bit;
        }
        if d_rtos > 0 {
            rep.rto_paths += 1;
            let run = u16::from(m.rtos_in_row).saturating_add(d_rtos).min(255) as u8;
            c.mon[pi].rtos_in_row = run;
            self.reroll_now(c, p)?;
            if run >= self.cfg.path_down_rtos {
                if m.health() != health::DOWN {
                    self.set_path(c, p, health::DOWN, plane, sentinel)?;
                    self.stats.paths_down = self.stats.paths_down.wrapping_add(1);
                    rep.paths_down += 1;
                }
            } else {
                if m.health() != health::SUSPECT {
                    self.stats.suspects = self.stats.suspects.wrapping_add(1);
                }
                self.set_path(c, p, health::SUSPECT, plane, sentinel)?;
            }
        } else if d_acked > 0 {
            c.mon[pi].rtos_in_row = 0;
            if m.health() == health::DOWN {
                self.sel(sel_op::SET_HEALTH, p, health::UP as u16, 0, false)?;
                c.mon[pi].set(health::UP, plane, sentinel);
                self.stats.paths_recovered = self.stats.paths_recovered.wrapping_add(1);
                rep.paths_recovered += 1;
            }
        }
        let h = c.mon[pi].health();
        if !rto_in_pass && h != health::DOWN && d_lost >= self.cfg.suspect_min_losses {
            let total = u32::from(d_lost) + u32::from(d_acked);
            if u32::from(d_lost) * 1000 >= u32::from(self.cfg.suspect_loss_permille) * total {
                rep.lossy_paths += 1;
                if h != health::SUSPECT {
                    self.stats.suspects = self.stats.suspects.wrapping_add(1);
                }
                self.set_path(c, p, health::SUSPECT, plane, sentinel)?;
                self.reroll_drained(c, p)?;
            }
        } else if ev_reroute & u32::from(bit) != 0 && !rto_in_pass {
            rep.ecn_reroutes += 1;
            self.reroll_drained(c, p)?;
        }
        if c.mon[pi].health() == health::DOWN {
            marks.down |= bit;
        }
        Ok(())
    }

    /// Plane rules: down when every path on it is Down; probe rounds; back up on progress.
    fn planes(&mut self, c: &mut Conn, progressed: u16, rep: &mut PollReport) -> Result<(), Error> {
        let now = self.hw.read(csr::CYCLES);
        let mut masks = plane_masks(c);
        for k in 0..c.planes {
            let bit = 1u8 << k;
            let (on_plane, down) = masks[usize::from(k) % MAX_PLANES];
            if c.planes_up & bit != 0 {
                if on_plane != 0 && down == on_plane && c.planes_up & !bit != 0 {
                    self.plane_down(c, k, on_plane)?;
                    rep.planes_down |= bit;
                    // its paths moved to the other planes
                    masks = plane_masks(c);
                }
            } else if on_plane & progressed != 0 {
                self.plane_up(c, k)?;
                rep.planes_up |= bit;
            } else if now.wrapping_sub(c.next_probe) < 0x8000_0000 {
                // probe round: the sentinels try a new route into the plane
                for p in 0..c.paths {
                    if on_plane & (1 << p) != 0 {
                        self.reroll_now(c, p)?;
                    }
                }
                self.stats.probe_rounds = self.stats.probe_rounds.wrapping_add(1);
                c.next_probe = now.wrapping_add(self.cfg.probe_interval_cycles);
            }
        }
        Ok(())
    }

    fn plane_down(&mut self, c: &mut Conn, k: u8, on_plane: u16) -> Result<(), Error> {
        self.sel(sel_op::SET_PLANE_UP, 0, u16::from(k), 0, false)?;
        c.planes_up &= !(1 << k);
        c.plane_events = c.plane_events.wrapping_add(1);
        self.stats.planes_down = self.stats.planes_down.wrapping_add(1);
        // re-balance: all but the lowest path (the sentinel) move to the live planes
        let live: [u8; MAX_PLANES] = core::array::from_fn(|i| i as u8);
        let live_n = (0..c.planes).filter(|&q| c.planes_up & (1 << q) != 0).count();
        let mut turn = 0usize;
        let mut first = true;
        for p in 0..c.paths {
            if on_plane & (1 << p) == 0 {
                continue;
            }
            if first {
                first = false;
                self.set_path(c, p, health::DOWN, k, true)?;
                continue;
            }
            let target = live
                .iter()
                .copied()
                .take(usize::from(c.planes))
                .filter(|&q| c.planes_up & (1 << q) != 0)
                .nth(turn % live_n.max(1))
                .unwrap_or(k);
            turn += 1;
            self.set_path(c, p, health::SUSPECT, target, false)?;
            c.mon[pidx(p)].rtos_in_row = 0;
            self.reroll_now(c, p)?;
        }
        let now = self.hw.read(csr::CYCLES);
        c.next_probe = now.wrapping_add(self.cfg.probe_interval_cycles);
        Ok(())
    }

    fn plane_up(&mut self, c: &mut Conn, k: u8) -> Result<(), Error> {
        self.sel(sel_op::SET_PLANE_UP, 0, u16::from(k), 0, true)?;
        c.planes_up |= 1 << k;
        c.plane_events = c.plane_events.wrapping_add(1);
        self.stats.planes_up = self.stats.planes_up.wrapping_add(1);
        // paths whose home is plane k come back (moved ones re-route once drained)
        for p in 0..c.paths {
            let m = c.mon[pidx(p)];
            // max(1): setup refuses 0 planes; this keeps a division by zero out of the image
            if p % c.planes.max(1) != k || m.health() == health::DISABLED {
                continue;
            }
            let moved = m.plane() != k;
            if m.health() == health::DOWN {
                self.sel(sel_op::SET_HEALTH, p, health::UP as u16, 0, false)?;
            }
            if moved {
                self.sel(sel_op::SET_PLANE, p, u16::from(k), 0, false)?;
                self.reroll_drained(c, p)?;
            }
            let h = if m.health() == health::DOWN {
                health::UP
            } else {
                m.health()
            };
            c.mon[pidx(p)].set(h, k, false);
            c.mon[pidx(p)].rtos_in_row = 0;
        }
        Ok(())
    }
}

/// Write a register and read it back; a different value is a [`Error::Readback`].
pub fn write_checked<H: Csr>(hw: &mut H, offset: u16, value: u32) -> Result<(), Error> {
    hw.write(offset, value);
    let read = hw.read(offset);
    if read != value {
        return Err(Error::Readback {
            offset,
            wrote: value,
            read,
        });
    }
    Ok(())
}
