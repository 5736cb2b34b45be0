//! The control-core view of `transport_core` (CSR map version 2, SPEC.md appendix C): the
//! per-path counters and `P_STATE`, and the sticky event registers, as the hardware moves them
//! (hdl/src/transport_core.rs). One set of rules for every software reference of the core's CSR
//! side: the lockstep harness ([`crate::core`]) and the firmware scenario's `CoreCsrModel`.
//!
//! The rules, per operation of the three blocks:
//! - rx PACKET with CE accepted: `P_RX_CE` + 1;
//! - tx ACK_WORD accepted: `P_LAST_ACK` = its `now`;
//! - selector CREDIT with CE accepted (stream or `SEL_CMD`): `P_ECN` + 1;
//! - scoreboard record TIMER with `ok`: `P_RTOS` + 1 and `EVT_RTO`; EXPIRE: `P_RTO_LOST` +=
//!   popcount(lost); ACK_WORD: `P_SACK_LOST` += popcount(lost), `P_ACKED` += popcount(freed);
//!   EXPIRE or ACK_WORD with lost bits: `EVT_LOSS`;
//! - selector record SELECT with `ok`: `P_SELECTED` + 1; CREDIT with `ok` (a re-route):
//!   `EVT_REROUTE`; every record but a failed SELECT: `P_STATE` of its path.
//!
//! The hardware moves them a few clocks after the operation (counter pipelines); a reference
//! that applies them at once agrees with it whenever the core is quiescent.
use mroce_csr as csr;
use mroce_hdl::path_selector::{SEL_OP_CREDIT, SEL_OP_INIT, SEL_OP_SELECT, SEL_OP_SET_CONN_LIMIT, SEL_OP_SET_PLANE_UP};
use mroce_hdl::rx_tracker::RX_OP_PACKET;
use mroce_hdl::tx_scoreboard::{TX_OP_ACK_WORD, TX_OP_EXPIRE, TX_OP_TIMER};
use mroce_model::params::PATHS;
use mroce_model::path_selector::{PathHealth, SelPathState};

/// Index of an event register in [`CoreCounters`] (`EVT_RTO`, `EVT_LOSS`, `EVT_REROUTE`).
pub const EVENT_REGS: [u16; 3] = [csr::EVT_RTO, csr::EVT_LOSS, csr::EVT_REROUTE];

/// `P_STATE` word of a selector path record.
pub fn state_word(s: &SelPathState) -> u32 {
    let h = match s.health {
        PathHealth::Up => csr::health::UP,
        PathHealth::Suspect => csr::health::SUSPECT,
        PathHealth::Down => csr::health::DOWN,
        PathHealth::Disabled => csr::health::DISABLED,
    };
    u32::from(s.entropy) | (u32::from(s.plane) << 16) | (h << 20) | csr::P_STATE_KNOWN
}

/// The path a selector record of `op` carries, for an operation addressed to `op_path`: the
/// connection-wide operations (INIT, SET_PLANE_UP, SET_CONN_LIMIT) record path 0.
pub fn record_path(op: u64, op_path: u8) -> u8 {
    match op {
        SEL_OP_INIT | SEL_OP_SET_PLANE_UP | SEL_OP_SET_CONN_LIMIT => 0,
        _ => op_path % PATHS as u8,
    }
}

/// Per-path counters, `P_STATE` and sticky events of one core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreCounters {
    /// `[path][window register index]` (the order of [`csr::PATH_WINDOW`]).
    regs: [[u32; csr::PATH_WINDOW.len()]; PATHS],
    /// `EVT_RTO`, `EVT_LOSS`, `EVT_REROUTE`: bit p = path p.
    events: [u16; 3],
}

impl Default for CoreCounters {
    fn default() -> Self {
        Self::new()
    }
}

fn window_index(reg: u16) -> usize {
    csr::PATH_WINDOW.iter().position(|&r| r == reg).unwrap_or(0)
}

fn slot(path: u8) -> usize {
    usize::from(path) % PATHS
}

impl CoreCounters {
    /// At reset: all zero (`P_STATE` without its known bit).
    pub fn new() -> Self {
        CoreCounters {
            regs: [[0; csr::PATH_WINDOW.len()]; PATHS],
            events: [0; 3],
        }
    }

    fn add(&mut self, path: u8, reg: u16, n: u32) {
        let r = &mut self.regs[slot(path)][window_index(reg)];
        *r = r.wrapping_add(n);
    }

    fn event(&mut self, i: usize, path: u8) {
        self.events[i] |= 1 << (slot(path) % 16);
    }

    /// An rx-tracker operation was accepted (`op`: the block's op code).
    pub fn rx_accepted(&mut self, op: u64, path: u8, ce: bool) {
        if op == RX_OP_PACKET && ce {
            self.add(path, csr::P_RX_CE, 1);
        }
    }

    /// A scoreboard operation was accepted.
    pub fn tx_accepted(&mut self, op: u64, path: u8, now: u32) {
        if op == TX_OP_ACK_WORD {
            self.regs[slot(path)][window_index(csr::P_LAST_ACK)] = now;
        }
    }

    /// A selector operation was accepted (from the stream or a `SEL_CMD`; `flag`: CE of a CREDIT).
    pub fn sel_accepted(&mut self, op: u64, path: u8, flag: bool) {
        if op == SEL_OP_CREDIT && flag {
            self.add(path, csr::P_ECN, 1);
        }
    }

    /// A scoreboard record (`ok`, `lost`, `freed` as the block reports them).
    pub fn tx_record(&mut self, op: u64, path: u8, ok: bool, lost: u32, freed: u32) {
        match op {
            TX_OP_TIMER if ok => {
                self.add(path, csr::P_RTOS, 1);
                self.event(0, path);
            }
            TX_OP_EXPIRE => self.add(path, csr::P_RTO_LOST, lost.count_ones()),
            TX_OP_ACK_WORD => {
                self.add(path, csr::P_SACK_LOST, lost.count_ones());
                self.add(path, csr::P_ACKED, freed.count_ones());
            }
            _ => {}
        }
        if (op == TX_OP_EXPIRE || op == TX_OP_ACK_WORD) && lost != 0 {
            self.event(1, path);
        }
    }

    /// A selector record: `path` is the record's path and `state` the selector's state of that
    /// path after the operation ([`state_word`]).
    pub fn sel_record(&mut self, op: u64, ok: bool, path: u8, state: u32) {
        if op == SEL_OP_SELECT && !ok {
            return;
        }
        if op == SEL_OP_SELECT {
            self.add(path, csr::P_SELECTED, 1);
        }
        if op == SEL_OP_CREDIT && ok {
            self.event(2, path);
        }
        self.regs[slot(path)][window_index(csr::P_STATE)] = state;
    }

    /// A CSR write to an event register clears the bits written as 1.
    pub fn write(&mut self, addr: u16, value: u32) {
        if let Some(i) = EVENT_REGS.iter().position(|&r| r == addr) {
            self.events[i] &= !(value as u16);
        }
    }

    /// `EVT_SUMMARY`.
    pub fn summary(&self) -> u32 {
        csr::evt_summary(self.events.map(u32::from))
    }

    /// A counter of path `path`.
    pub fn counter(&self, path: u8, reg: u16) -> u32 {
        self.regs[slot(path)][window_index(reg)]
    }

    /// The registers these rules own (`P_*` of the path in `path_sel`, events and summary);
    /// `None` for any other address.
    pub fn read(&self, addr: u16, path_sel: u32) -> Option<u32> {
        if csr::PATH_WINDOW.contains(&addr) {
            return Some(self.counter((path_sel & (PATHS as u32 - 1)) as u8, addr));
        }
        if let Some(i) = EVENT_REGS.iter().position(|&r| r == addr) {
            return Some(u32::from(self.events[i]));
        }
        (addr == csr::EVT_SUMMARY).then(|| self.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mroce_hdl::path_selector::SEL_OP_SET_HEALTH;
    use mroce_hdl::tx_scoreboard::TX_OP_SEND;

    #[test]
    fn counters_follow_the_hardware_rules() {
        let mut c = CoreCounters::new();
        c.rx_accepted(RX_OP_PACKET, 1, true);
        c.rx_accepted(RX_OP_PACKET, 1, false);
        c.tx_accepted(TX_OP_ACK_WORD, 2, 77);
        c.tx_record(TX_OP_ACK_WORD, 2, false, 0b10, 0b1101);
        c.tx_record(TX_OP_TIMER, 2, true, 0, 0);
        c.tx_record(TX_OP_TIMER, 2, false, 0, 0);
        c.tx_record(TX_OP_EXPIRE, 2, false, 0b111, 0);
        c.tx_record(TX_OP_SEND, 2, true, 0, 0);
        c.sel_accepted(SEL_OP_CREDIT, 3, true);
        c.sel_record(SEL_OP_CREDIT, true, 3, 0x8000_0042);
        c.sel_record(SEL_OP_SELECT, true, 0, 0x8000_0001);
        c.sel_record(SEL_OP_SELECT, false, 0, 0);
        c.sel_record(SEL_OP_SET_HEALTH, true, 1, 0x8020_0005);
        let at = |c: &CoreCounters, reg, path: u32| c.read(reg, path).unwrap();
        assert_eq!(at(&c, csr::P_RX_CE, 1), 1);
        assert_eq!(at(&c, csr::P_LAST_ACK, 2), 77);
        assert_eq!(at(&c, csr::P_SACK_LOST, 2), 1);
        assert_eq!(at(&c, csr::P_ACKED, 2), 3);
        assert_eq!(at(&c, csr::P_RTOS, 2), 1);
        assert_eq!(at(&c, csr::P_RTO_LOST, 2), 3);
        assert_eq!(at(&c, csr::P_ECN, 3), 1);
        assert_eq!(at(&c, csr::P_STATE, 3), 0x8000_0042);
        assert_eq!(at(&c, csr::P_SELECTED, 0), 1, "a failed SELECT counts nothing");
        assert_eq!(at(&c, csr::P_STATE, 0), 0x8000_0001, "nor records a state");
        assert_eq!(at(&c, csr::P_STATE, 1), 0x8020_0005);
        // PATH_SEL's index bits only
        assert_eq!(at(&c, csr::P_STATE, 1 + PATHS as u32), 0x8020_0005);
        assert_eq!(at(&c, csr::EVT_RTO, 0), 1 << 2);
        assert_eq!(at(&c, csr::EVT_LOSS, 0), 1 << 2);
        assert_eq!(at(&c, csr::EVT_REROUTE, 0), 1 << 3);
        assert_eq!(at(&c, csr::EVT_SUMMARY, 0), 7);
        c.write(csr::EVT_LOSS, 1 << 2);
        c.write(csr::EVT_RTO, 1 << 5);
        assert_eq!(at(&c, csr::EVT_LOSS, 0), 0);
        assert_eq!(at(&c, csr::EVT_RTO, 0), 1 << 2);
        assert_eq!(at(&c, csr::EVT_SUMMARY, 0), csr::EVT_BIT_RTO | csr::EVT_BIT_REROUTE);
        assert_eq!(c.read(csr::SCRATCH, 0), None);
    }

    #[test]
    fn counters_wrap() {
        let mut c = CoreCounters::new();
        for _ in 0..3 {
            c.tx_record(TX_OP_ACK_WORD, 0, false, 0, u32::MAX);
        }
        assert_eq!(c.counter(0, csr::P_ACKED), 96);
        c.regs[0][window_index(csr::P_ACKED)] = u32::MAX;
        c.tx_record(TX_OP_ACK_WORD, 0, false, 0, 1);
        assert_eq!(c.counter(0, csr::P_ACKED), 0);
    }
}
