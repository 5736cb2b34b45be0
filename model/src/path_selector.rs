//! Path selector (hardware-mapped): eligibility, spraying order, per-path entropy and the
//! per-path ECN AIMD window.
//!
//! Spraying is round robin from the path after the last one chosen, over paths that are
//! up, on a plane that is up, below their congestion window and with scoreboard room, while
//! the connection as a whole is below the receiver's fair-share limit. The window update is
//! shifts, adds and compares (the decrease is a shift), so the HDL mirror decides one packet per
//! clock (SPEC.md §6.3, §8).
//!
//! Two rules let the hardware pipeline the window arithmetic without a one-clock loop
//! (SPEC.md §6.3, "Operation lag"; on where `params::SEL_OP_LAG` is, i.e. not in the small
//! configuration), both counted in operations, never in clocks:
//! - SELECT tests the windows as they were before the previous operation (that operation's own
//!   charge excepted, which is seen at once); health, planes, room and the connection limit are
//!   tested as they are now;
//! - an AIMD credit right after an operation that wrote the same path's window state defers its
//!   ECN sample to that path's next AIMD credit (its packets leave the flight at once).

use crate::params::{
    ALPHA_ONE, CWND_FRAC_BITS, CWND_INIT_PKTS, CWND_MAX_PKTS, CWND_MIN_PKTS, CWND_ONE, ECN_G_SHIFT, MAX_PLANES, PATHS,
    SEL_OP_LAG,
};

/// Health of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum PathHealth {
    /// Carries data.
    #[default]
    Up,
    /// Had an RTO: carries data at a window of one packet until an ACK makes progress.
    Suspect,
    /// Failed repeatedly: carries only probes.
    Down,
    /// Not configured for this connection.
    Disabled,
}

/// Per-path selector state: fixed width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SelPathState {
    /// Health.
    pub health: PathHealth,
    /// Plane the path is mapped to.
    pub plane: u8,
    /// UDP source port (ECMP entropy).
    pub entropy: u16,
    /// Congestion window, 1/CWND_ONE packets.
    pub cwnd: u32,
    /// Packets in flight.
    pub inflight: u16,
    /// ECN estimate alpha, 0..=ALPHA_ONE.
    pub alpha: u16,
    /// Additive-increase accumulator (1/CWND_ONE packets).
    pub ai_acc: u32,
    /// Packets that must be credited before the next multiplicative decrease (one per RTT).
    pub cwr_left: u16,
    /// A new entropy waits for the path to drain (so the move cannot reorder the path).
    pub reroll_pending: bool,
    /// The entropy to apply once drained.
    pub pending_entropy: u16,
    /// Slow start: from INIT until the path's first CE mark, every acknowledged packet grows
    /// the window by one packet instead of one per window.
    pub slow_start: bool,
}

/// Credit returned to a path by an ACK or a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Credit {
    /// Path index.
    pub path: u8,
    /// Packets newly acknowledged.
    pub acked: u16,
    /// Packets declared lost (they leave the flight without growing the window).
    pub lost: u16,
    /// How many of `acked + lost` were probes (they never count against the connection limit).
    pub probes: u16,
    /// The ACK reported CE marks.
    pub ce: bool,
}

/// The path selector of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathSelector {
    paths: [SelPathState; PATHS],
    last: u8,
    planes_up: u8,
    conn_limit: u16,
    total_inflight: u16,
    probes_inflight: u16,
    /// The window-open mask the next SELECT tests: recorded at the start of the operation
    /// before it, with that operation's own charge applied.
    lag_open: u32,
    /// The path whose window state the previous operation wrote ([`WROTE_NONE`], or
    /// [`WROTE_ALL`] after INIT).
    wrote: u8,
    /// Deferred AIMD samples per path: acknowledged packets (saturating) and CE.
    def_acked: [u16; PATHS],
    def_ce: u32,
}

/// `wrote`: the previous operation wrote no path's window state.
const WROTE_NONE: u8 = 0xFF;
/// `wrote`: the previous operation was INIT, which wrote every path's.
const WROTE_ALL: u8 = 0xFE;
/// Every path's bit.
const ALL_PATHS: u32 = ((1u64 << PATHS) - 1) as u32;

impl Default for PathSelector {
    fn default() -> Self {
        Self::new(PATHS as u8, 1)
    }
}

/// Right shift that turns a window into its multiplicative decrease for ECN estimate `alpha`:
/// cwnd × 2^floor(log2(max(alpha, 1))) / (2 × ALPHA_ONE), i.e. 1 ..= log2(ALPHA_ONE) + 1.
pub fn decrease_shift(alpha: u16) -> u32 {
    let lg = 31 - u32::from(alpha.max(1)).leading_zeros();
    (ALPHA_ONE.trailing_zeros() + 1).saturating_sub(lg)
}

/// Entropy values live in the dynamic port range so they never collide with 4791.
pub fn entropy_from(random: u16) -> u16 {
    0xC000 | (random & 0x3FFF)
}

impl PathSelector {
    /// `paths` enabled paths, spread round robin over `planes` planes; entropies start at
    /// distinct values and are normally re-rolled by the caller right away.
    pub fn new(paths: u8, planes: u8) -> Self {
        let planes = planes.clamp(1, MAX_PLANES as u8);
        let mut s = PathSelector {
            paths: [SelPathState::default(); PATHS],
            last: PATHS as u8 - 1,
            planes_up: ((1u16 << planes) - 1) as u8,
            conn_limit: u16::MAX,
            total_inflight: 0,
            probes_inflight: 0,
            lag_open: ALL_PATHS,
            wrote: WROTE_ALL,
            def_acked: [0; PATHS],
            def_ce: 0,
        };
        for p in 0..PATHS {
            s.paths[p] = SelPathState {
                health: if p < paths as usize {
                    PathHealth::Up
                } else {
                    PathHealth::Disabled
                },
                plane: (p % planes as usize) as u8,
                entropy: entropy_from(p as u16),
                cwnd: CWND_INIT_PKTS << CWND_FRAC_BITS,
                slow_start: true,
                ..Default::default()
            };
        }
        s
    }

    /// Read-only view of a path.
    pub fn path(&self, path: u8) -> &SelPathState {
        &self.paths[path as usize % PATHS]
    }

    /// The AIMD sample a path has deferred (SPEC.md §6.3): acknowledged packets, and CE.
    pub fn deferred(&self, path: u8) -> (u16, bool) {
        let pi = path as usize % PATHS;
        (self.def_acked[pi], self.def_ce & (1 << pi) != 0)
    }

    /// Planes currently up (bit i = plane i).
    pub fn planes_up(&self) -> u8 {
        self.planes_up
    }

    /// Packets in flight over all paths.
    pub fn total_inflight(&self) -> u16 {
        self.total_inflight
    }

    /// Connection-wide limit on packets in flight (from the receiver's rate hint).
    pub fn conn_limit(&self) -> u16 {
        self.conn_limit
    }

    /// Set the connection-wide limit on packets in flight.
    pub fn set_conn_limit(&mut self, pkts: u16) {
        self.op_begin();
        self.conn_limit = pkts.max(1);
    }

    /// Sum of the windows of eligible paths, in packets.
    pub fn total_cwnd_pkts(&self) -> u32 {
        (0..PATHS)
            .filter(|&p| self.eligible_health(p))
            .map(|p| self.paths[p].cwnd >> CWND_FRAC_BITS)
            .sum()
    }

    fn eligible_health(&self, p: usize) -> bool {
        let s = &self.paths[p];
        matches!(s.health, PathHealth::Up | PathHealth::Suspect)
            && !s.reroll_pending
            && self.planes_up & (1 << s.plane) != 0
    }

    /// The path's congestion window has room for one more packet (one packet when Suspect).
    pub fn window_open(&self, path: u8) -> bool {
        let s = &self.paths[path as usize % PATHS];
        let cwnd = if s.health == PathHealth::Suspect {
            CWND_ONE
        } else {
            s.cwnd
        };
        (u32::from(s.inflight) << CWND_FRAC_BITS) < cwnd
    }

    /// Bitmask of paths that could take a packet now, given scoreboard room `room_mask`, with
    /// every window as it is now. A SELECT may find none of them (the operation lag): the
    /// connection layer then selects again, and that SELECT sees the windows as they are now.
    pub fn eligible_mask(&self, room_mask: u32) -> u32 {
        self.eligible_without_window(room_mask) & self.window_mask()
    }

    /// The paths whose window has room now.
    fn window_mask(&self) -> u32 {
        let mut m = 0;
        for p in 0..PATHS {
            if self.window_open(p as u8) {
                m |= 1 << p;
            }
        }
        m
    }

    /// `eligible_mask` without the window test (the tests SELECT makes on the present state).
    fn eligible_without_window(&self, room_mask: u32) -> u32 {
        if self.total_inflight >= self.conn_limit {
            return 0;
        }
        let mut m = 0;
        for p in 0..PATHS {
            if room_mask & (1 << p) != 0 && self.eligible_health(p) {
                m |= 1 << p;
            }
        }
        m
    }

    /// Every operation begins here: it records the window mask the next SELECT tests (the one
    /// from before this operation) and returns the one recorded by the operation before.
    /// It also forgets which path the previous operation wrote (the caller sets it again).
    fn op_begin(&mut self) -> u32 {
        self.wrote = WROTE_NONE;
        let now = self.window_mask();
        core::mem::replace(&mut self.lag_open, now)
    }

    /// Choose the path for the next packet (round robin after the last choice) and count
    /// it in flight. `None` when no path is eligible, testing the windows as they were before
    /// the previous operation (SPEC.md §6.3).
    pub fn select(&mut self, room_mask: u32) -> Option<u8> {
        let lagged = self.op_begin();
        let m = if SEL_OP_LAG {
            self.eligible_without_window(room_mask) & lagged
        } else {
            self.eligible_mask(room_mask)
        };
        if m == 0 {
            return None;
        }
        // Rotate so the path after `last` is bit 0, then take the lowest set bit.
        let start = (self.last as u32 + 1) % PATHS as u32;
        let full = (1u64 << PATHS) - 1;
        let m64 = u64::from(m);
        let rot = ((m64 >> start) | (m64 << (PATHS as u32 - start))) & full;
        let p = ((rot.trailing_zeros() + start) % PATHS as u32) as u8;
        self.last = p;
        self.charge_path(p);
        self.total_inflight = self.total_inflight.saturating_add(1);
        Some(p)
    }

    /// Count a data packet in flight on `path`.
    pub fn charge(&mut self, path: u8) {
        self.op_begin();
        self.charge_path(path);
        self.total_inflight = self.total_inflight.saturating_add(1);
    }

    /// Count a probe in flight on `path`: it occupies the path's window but not the
    /// connection's fair-share limit, so probing a dead plane never starves the live ones.
    pub fn charge_probe(&mut self, path: u8) {
        self.op_begin();
        self.charge_path(path);
        self.probes_inflight = self.probes_inflight.saturating_add(1);
    }

    /// One more packet in flight on `path`. A charge that closes the path's window is seen by
    /// the next SELECT at once, so back-to-back SELECTs never pass a window.
    fn charge_path(&mut self, path: u8) {
        let pi = path as usize % PATHS;
        let s = &mut self.paths[pi];
        s.inflight = s.inflight.saturating_add(1);
        if !self.window_open(pi as u8) {
            self.lag_open &= !(1 << pi);
        }
    }

    /// Return credit from an ACK or a loss, and run the ECN AIMD of the path. Returns true
    /// when the path should move to another route: it just cut its window while its ECN
    /// estimate is more than twice the connection's mean (an ECMP collision, not a
    /// congested receiver, which would mark every path alike).
    pub fn credit(&mut self, c: &Credit) -> bool {
        let pi = c.path as usize % PATHS;
        // An AIMD credit right after an operation that wrote this path's window state defers its
        // sample: the hardware's window arithmetic takes two stages (SPEC.md §6.3).
        let defer = SEL_OP_LAG && c.acked != 0 && (self.wrote == pi as u8 || self.wrote == WROTE_ALL);
        self.op_begin();
        if c.acked != 0 && !defer {
            self.wrote = pi as u8;
        }
        let mut alpha_sum = 0u32;
        let mut up = 0u32;
        for p in 0..PATHS {
            if self.eligible_health(p) || p == pi {
                alpha_sum += u32::from(self.paths[p].alpha);
                up += 1;
            }
        }
        let s = &mut self.paths[pi];
        let done = c.acked.saturating_add(c.lost);
        let done = done.min(s.inflight);
        s.inflight -= done;
        let probes = c.probes.min(done).min(self.probes_inflight);
        self.probes_inflight -= probes;
        self.total_inflight = self.total_inflight.saturating_sub(done - probes);
        if s.reroll_pending && s.inflight == 0 {
            s.entropy = s.pending_entropy;
            s.reroll_pending = false;
        }
        if c.acked == 0 {
            return false;
        }
        if s.health == PathHealth::Suspect {
            // An ACK made progress: the path is healthy again.
            s.health = PathHealth::Up;
        }
        let bit = 1u32 << pi;
        if defer {
            self.def_acked[pi] = self.def_acked[pi].saturating_add(c.acked);
            if c.ce {
                self.def_ce |= bit;
            }
            return false;
        }
        // A deferred sample joins this one.
        let acked = c.acked.saturating_add(core::mem::take(&mut self.def_acked[pi]));
        let ce = c.ce || self.def_ce & bit != 0;
        self.def_ce &= !bit;
        let s = &mut self.paths[pi];
        // The decrease below uses the estimate from before this ACK, so the hardware computes
        // it from registered state in parallel with the alpha update (SPEC.md §6.3).
        let alpha_before = s.alpha;
        // alpha <- alpha + g * (marked - alpha), one sample per ACK.
        let a = u32::from(s.alpha);
        let target = if ce { ALPHA_ONE } else { 0 };
        let a = a - (a >> ECN_G_SHIFT) + (target >> ECN_G_SHIFT);
        s.alpha = a.min(ALPHA_ONE) as u16;
        s.cwr_left = s.cwr_left.saturating_sub(acked);
        let slow_start = s.slow_start;
        if ce {
            // The first congestion signal ends slow start; the decrease below still applies.
            s.slow_start = false;
            if s.cwr_left == 0 {
                // Multiplicative decrease, at most once per window of packets: cwnd × alpha / 2
                // with alpha rounded down to a power of two, so the cut is a shift. The mark that
                // ends slow start halves the window (alpha is still zero then, and the doubling
                // overshot by up to a window), but not below the initial window, which is where
                // a path would be without slow start.
                let cut = if slow_start {
                    (s.cwnd >> 1).min(s.cwnd.saturating_sub(CWND_INIT_PKTS << CWND_FRAC_BITS))
                } else {
                    s.cwnd >> decrease_shift(alpha_before)
                };
                // cwr_left counts the window before the cut (it does not wait for the cut).
                s.cwr_left = (s.cwnd >> CWND_FRAC_BITS) as u16 + 1;
                s.cwnd = s.cwnd.saturating_sub(cut).max(CWND_MIN_PKTS << CWND_FRAC_BITS);
                s.ai_acc = 0;
                let a = u32::from(s.alpha);
                return up > 1 && a >= ALPHA_ONE / 8 && a * up > 2 * alpha_sum;
            }
        } else if slow_start {
            // Slow start: the window doubles per round trip. A path's share of one flow needs
            // its round trip plus ACK_COALESCE of its own packets of window, more than
            // CWND_INIT_PKTS at 16 paths and 400 Gb/s; the connection limit bounds the overshoot.
            s.cwnd = (s.cwnd + (u32::from(acked) << CWND_FRAC_BITS)).min(CWND_MAX_PKTS << CWND_FRAC_BITS);
        } else {
            // Additive increase: one packet per window of acknowledged packets.
            // A 32-bit register: it wraps, as in the hardware (reachable only with credits far
            // above the window, e.g. late ACKs after CLEAR_INFLIGHT).
            s.ai_acc = s.ai_acc.wrapping_add(u32::from(acked) << CWND_FRAC_BITS);
            if s.ai_acc >= s.cwnd {
                s.ai_acc -= s.cwnd;
                s.cwnd = (s.cwnd + CWND_ONE).min(CWND_MAX_PKTS << CWND_FRAC_BITS);
            }
        }
        false
    }

    /// Set a path's health (RTO, probe answered, configuration).
    pub fn set_health(&mut self, path: u8, health: PathHealth) {
        self.op_begin();
        self.wrote = (path as usize % PATHS) as u8;
        let s = &mut self.paths[path as usize % PATHS];
        if health == PathHealth::Down || health == PathHealth::Suspect {
            s.cwnd = s.cwnd.min(CWND_INIT_PKTS << CWND_FRAC_BITS);
        }
        s.health = health;
    }

    /// Forget the packets in flight on a path (its window was expired wholesale).
    pub fn clear_inflight(&mut self, path: u8) {
        self.op_begin();
        let s = &mut self.paths[path as usize % PATHS];
        self.total_inflight = self.total_inflight.saturating_sub(s.inflight);
        s.inflight = 0;
        if s.reroll_pending {
            s.entropy = s.pending_entropy;
            s.reroll_pending = false;
        }
    }

    /// Move a path to a new route once its packets in flight have drained; until then it
    /// takes no new packets. Its ECN estimate restarts on the new route.
    pub fn request_reroll(&mut self, path: u8, random: u16) {
        self.op_begin();
        let pi = path as usize % PATHS;
        self.wrote = pi as u8;
        // The ECN estimate restarts on the new route: a deferred sample is dropped.
        self.def_acked[pi] = 0;
        self.def_ce &= !(1 << pi);
        let s = &mut self.paths[pi];
        s.pending_entropy = entropy_from(random);
        s.alpha = 0;
        s.cwr_left = 0;
        if s.inflight == 0 {
            s.entropy = s.pending_entropy;
        } else {
            s.reroll_pending = true;
        }
    }

    /// Replace a path's entropy (move it to another ECMP route).
    pub fn reroll(&mut self, path: u8, random: u16) {
        self.op_begin();
        self.paths[path as usize % PATHS].entropy = entropy_from(random);
    }

    /// Map a path to a plane.
    pub fn set_plane(&mut self, path: u8, plane: u8) {
        self.op_begin();
        self.paths[path as usize % PATHS].plane = plane % MAX_PLANES as u8;
    }

    /// Mark a plane up or down.
    pub fn set_plane_up(&mut self, plane: u8, up: bool) {
        self.op_begin();
        let bit = 1u8 << (plane % MAX_PLANES as u8);
        if up {
            self.planes_up |= bit;
        } else {
            self.planes_up &= !bit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operation that changes nothing: it ends the previous one's operation lag.
    fn spacer(s: &mut PathSelector) {
        s.set_conn_limit(s.conn_limit());
    }

    /// An ACK of `acked` packets of `path`, with or without CE.
    fn ack(path: u8, acked: u16, ce: bool) -> Credit {
        Credit {
            path,
            acked,
            lost: 0,
            probes: 0,
            ce,
        }
    }

    #[test]
    fn sprays_round_robin_over_eligible() {
        let mut s = PathSelector::new(4, 2);
        let order: Vec<u8> = (0..8).map(|_| s.select(u32::MAX).unwrap()).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        s.set_plane_up(1, false);
        assert_eq!(s.select(u32::MAX), Some(0));
        assert_eq!(s.select(u32::MAX), Some(2));
        assert_eq!(s.select(0b1011), Some(0));
    }

    #[test]
    fn window_limits_and_aimd() {
        let mut s = PathSelector::new(1, 1);
        for _ in 0..CWND_INIT_PKTS {
            assert_eq!(s.select(u32::MAX), Some(0));
        }
        assert_eq!(s.select(u32::MAX), None);
        // Slow start: a window acknowledged without CE doubles it.
        s.credit(&ack(0, 8, false));
        assert_eq!(s.path(0).cwnd, 16 << CWND_FRAC_BITS);
        // The first CE mark ends slow start and halves the window, not below the initial one
        // (cwr_left starts at zero) ...
        s.charge(0);
        s.credit(&ack(0, 1, true));
        assert!(!s.path(0).slow_start);
        let cut = s.path(0).cwnd;
        assert_eq!(cut, 8 << CWND_FRAC_BITS);
        // ... and from then on a window of unmarked ACKs adds one packet.
        let w = (cut >> CWND_FRAC_BITS) as u16 + 1;
        for _ in 0..w {
            s.charge(0);
        }
        s.credit(&ack(0, w, false));
        assert_eq!(s.path(0).cwnd, cut + CWND_ONE);
        let before = s.path(0).cwnd;
        for _ in 0..20 {
            s.charge(0);
            s.credit(&ack(0, 1, true));
        }
        assert!(s.path(0).cwnd < before);
        assert_eq!(s.path(0).inflight, 0);
    }

    #[test]
    fn slow_start_saturates_and_outlives_losses_and_timeouts() {
        let mut s = PathSelector::new(2, 1);
        // Credits far above the window saturate it at CWND_MAX_PKTS (after a spacer: a credit
        // right after INIT defers its sample).
        spacer(&mut s);
        s.credit(&Credit {
            path: 0,
            acked: u16::MAX,
            ..Default::default()
        });
        assert_eq!(s.path(0).cwnd, CWND_MAX_PKTS << CWND_FRAC_BITS);
        assert!(s.path(0).slow_start);
        // Losses never end it (on a lossy fabric a loss is not congestion), nor does an RTO,
        // which caps the window at the initial one from which it doubles again.
        s.credit(&Credit {
            path: 0,
            acked: 0,
            lost: 3,
            ..Default::default()
        });
        s.set_health(0, PathHealth::Suspect);
        s.set_health(0, PathHealth::Up);
        assert!(s.path(0).slow_start);
        assert_eq!(s.path(0).cwnd, CWND_INIT_PKTS << CWND_FRAC_BITS);
        spacer(&mut s);
        s.credit(&Credit {
            path: 0,
            acked: CWND_INIT_PKTS as u16,
            ..Default::default()
        });
        assert_eq!(s.path(0).cwnd, (2 * CWND_INIT_PKTS) << CWND_FRAC_BITS);
        // A re-route keeps it too.
        s.request_reroll(0, 7);
        assert!(s.path(0).slow_start);
    }

    #[test]
    fn additive_increase_accumulator_wraps_like_its_register() {
        // Credits far above the window (the port takes 16 bits) grow ai_acc by ~2^24 each: it
        // wraps at 2^32 as the hardware's 32-bit register does, in debug builds too.
        let mut s = PathSelector::new(1, 1);
        // Out of slow start (a marked ACK; the window stays at the initial 8 packets, the
        // floor of that halving): the additive increase is under test.
        s.charge(0);
        s.credit(&Credit {
            path: 0,
            acked: 1,
            ce: true,
            ..Default::default()
        });
        let mut acc = 0u32;
        let mut cwnd = s.path(0).cwnd;
        let mut wrapped = false;
        for _ in 0..300 {
            let c = Credit {
                path: 0,
                acked: u16::MAX,
                ..Default::default()
            };
            spacer(&mut s);
            s.credit(&c);
            let before = acc;
            acc = acc.wrapping_add(u32::from(u16::MAX) << CWND_FRAC_BITS);
            wrapped |= acc < before;
            if acc >= cwnd {
                acc -= cwnd;
                cwnd = (cwnd + CWND_ONE).min(CWND_MAX_PKTS << CWND_FRAC_BITS);
            }
            assert_eq!((s.path(0).ai_acc, s.path(0).cwnd), (acc, cwnd));
        }
        assert!(wrapped);
    }

    #[test]
    fn decrease_is_a_power_of_two_fraction_of_the_window() {
        assert_eq!(decrease_shift(0), 11);
        assert_eq!(decrease_shift(1), 11);
        assert_eq!(decrease_shift(64), 5);
        assert_eq!(decrease_shift(1023), 2);
        assert_eq!(decrease_shift(ALPHA_ONE as u16), 1);
        // A fully marked path (alpha = 1) halves its window; cwr_left counts the old window.
        let mut s = PathSelector::new(1, 1);
        for _ in 0..200 {
            s.charge(0);
            s.credit(&Credit {
                path: 0,
                acked: 1,
                lost: 0,
                probes: 0,
                ce: true,
            });
        }
        assert_eq!(s.path(0).alpha, ALPHA_ONE as u16);
        let w = s.path(0).cwnd;
        s.charge(0);
        for _ in 0..s.path(0).cwr_left {
            s.charge(0);
        }
        let left = s.path(0).cwr_left;
        s.credit(&Credit {
            path: 0,
            acked: left,
            lost: 0,
            probes: 0,
            ce: true,
        });
        assert_eq!(s.path(0).cwnd, (w - (w >> 1)).max(CWND_MIN_PKTS << CWND_FRAC_BITS));
        assert_eq!(u32::from(s.path(0).cwr_left), (w >> CWND_FRAC_BITS) + 1);
    }

    #[test]
    fn select_tests_the_windows_from_before_the_previous_operation() {
        if !SEL_OP_LAG {
            return;
        }
        let mut s = PathSelector::new(1, 1);
        for _ in 0..CWND_INIT_PKTS {
            assert_eq!(s.select(u32::MAX), Some(0));
        }
        // The charge that filled the window is seen at once ...
        assert_eq!(s.select(u32::MAX), None);
        // ... but the window a credit opens is not, by the SELECT right after it ...
        s.credit(&ack(0, 2, false));
        assert_eq!(s.eligible_mask(u32::MAX), 1);
        assert_eq!(s.select(u32::MAX), None);
        // ... only by the one after that, which the connection layer makes.
        assert_eq!(s.select(u32::MAX), Some(0));
        // A window a SET_HEALTH closes is still open for the next SELECT (one packet past it).
        s.set_health(0, PathHealth::Suspect);
        assert_eq!(s.eligible_mask(u32::MAX), 0);
        assert_eq!(s.select(u32::MAX), Some(0));
        assert_eq!(s.select(u32::MAX), None);
        // Health is tested as it is now.
        s.credit(&ack(0, 20, false));
        s.set_health(0, PathHealth::Down);
        assert_eq!(s.select(u32::MAX), None);
        // Idle time changes nothing: the lag counts operations.
        let mut t = PathSelector::new(1, 1);
        for _ in 0..CWND_INIT_PKTS {
            t.charge(0);
        }
        t.credit(&ack(0, 1, false));
        assert_eq!(t.select(u32::MAX), None);
        assert_eq!(t.select(u32::MAX), Some(0));
    }

    #[test]
    fn a_credit_right_after_a_window_write_defers_its_sample() {
        if !SEL_OP_LAG {
            return;
        }
        let mut s = PathSelector::new(2, 1);
        spacer(&mut s);
        for _ in 0..8 {
            s.charge(0);
        }
        let w = s.path(0).cwnd;
        s.credit(&ack(0, 2, false));
        assert_eq!(s.path(0).cwnd, w + (2 << CWND_FRAC_BITS));
        // Right after an AIMD credit on the same path: its packets leave the flight, its sample
        // waits ...
        s.credit(&ack(0, 3, true));
        assert_eq!(s.path(0).inflight, 3);
        assert_eq!(s.path(0).cwnd, w + (2 << CWND_FRAC_BITS));
        assert!(s.path(0).slow_start);
        // ... and joins the path's next AIMD credit, even one with no CE of its own.
        s.credit(&ack(1, 0, false));
        s.credit(&ack(0, 1, false));
        assert_eq!(s.path(0).inflight, 2);
        assert!(!s.path(0).slow_start);
        assert_eq!(s.path(0).alpha, (ALPHA_ONE >> ECN_G_SHIFT) as u16);
        // A credit with nothing acknowledged is no AIMD credit: the next one runs its sample.
        let w = s.path(0).cwnd;
        spacer(&mut s);
        s.credit(&ack(0, 0, false));
        s.credit(&Credit {
            path: 0,
            lost: 1,
            ..Default::default()
        });
        s.credit(&ack(0, 1, false));
        assert_ne!((s.path(0).cwnd, s.path(0).ai_acc), (w, 0));
        // Another path's credit is never deferred; a REQUEST_REROLL drops a deferred sample.
        let mut t = PathSelector::new(2, 1);
        spacer(&mut t);
        t.credit(&ack(0, 1, false));
        t.credit(&ack(1, 1, false));
        assert_eq!(t.path(1).cwnd, (CWND_INIT_PKTS + 1) << CWND_FRAC_BITS);
        t.credit(&ack(1, 1, true));
        t.request_reroll(1, 9);
        spacer(&mut t);
        t.credit(&ack(1, 1, false));
        assert!(t.path(1).slow_start);
        assert_eq!(t.path(1).cwnd, (CWND_INIT_PKTS + 2) << CWND_FRAC_BITS);
    }
}
