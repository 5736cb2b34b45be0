//! The order in which a NIC serves its connections at a transmit opportunity (SPEC.md §8.3,
//! "Endpoint transmit order"). It is the NIC's scheduling policy, not part of the wire
//! protocol: both ends interoperate whatever either chooses. Shared by the mroce endpoint and
//! the RoCEv2 baseline so that the two can be compared under the same policy.

use alloc::vec::Vec;

use crate::transport::Nanos;

/// Which connection with something to send the NIC serves next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxOrder {
    /// Round robin over the connections with something to send, one packet each.
    RoundRobin,
    /// Connections with only retransmissions or probes to send first; then the connection
    /// whose oldest message with unsent data was posted first (FIFO over messages, not
    /// connections, so that a connection that keeps posting cannot starve a later one); ties
    /// in round-robin order. A collective's dependent steps each run on their
    /// own connection, and round robin let every later step take a share of the port from the
    /// step that all of them wait for (halving-doubling, nearest partner first, 1.61 → 1.30 ×
    /// ideal in `mroce sim collectives`; sim/README.md, "Transmit order").
    #[default]
    OldestFirst,
}

impl TxOrder {
    /// Name on command lines and in reports: `rr` or `oldest`.
    pub fn as_str(self) -> &'static str {
        match self {
            TxOrder::RoundRobin => "rr",
            TxOrder::OldestFirst => "oldest",
        }
    }

    /// Parse a name of [`TxOrder::as_str`] (also `round-robin` and `oldest-first`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "rr" | "round-robin" => Some(TxOrder::RoundRobin),
            "oldest" | "oldest-first" => Some(TxOrder::OldestFirst),
            _ => None,
        }
    }
}

/// A connection's rank under [`TxOrder::OldestFirst`], lowest first: `(0, 0)` while it has
/// nothing new to send (retransmissions, probes), else `(1, posted_at)` of its oldest message
/// with unsent data.
pub type TxKey = (u8, Nanos);

/// The rank of a connection whose oldest message with unsent data was posted at `posted_at`,
/// or of one without new data (`has_new_data` false).
pub fn tx_key(has_new_data: bool, posted_at: Nanos) -> TxKey {
    if has_new_data {
        (1, posted_at)
    } else {
        (0, 0)
    }
}

/// Fill `visit` with the ready list's positions in the order a poll tries them: by rank,
/// equal ranks in list order (the list is kept in round-robin order). `visit` is the
/// caller's scratch space, reused from poll to poll.
pub fn visit_order(keys: impl Iterator<Item = TxKey>, visit: &mut Vec<(TxKey, u32)>) {
    visit.clear();
    visit.extend(keys.zip(0u32..));
    visit.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for o in [TxOrder::RoundRobin, TxOrder::OldestFirst] {
            assert_eq!(TxOrder::parse(o.as_str()), Some(o));
        }
        assert_eq!(TxOrder::parse("fifo"), None);
        assert_eq!(TxOrder::default(), TxOrder::OldestFirst);
    }

    #[test]
    fn retransmissions_first_then_oldest_then_list_order() {
        let keys = [
            tx_key(true, 30),
            tx_key(true, 10),
            tx_key(false, 99),
            tx_key(true, 10),
            tx_key(true, 20),
        ];
        let mut visit = Vec::new();
        visit_order(keys.into_iter(), &mut visit);
        let order: Vec<u32> = visit.iter().map(|&(_, i)| i).collect();
        assert_eq!(order, [2, 1, 3, 4, 0]);
    }
}
