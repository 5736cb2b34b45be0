//! What the soft-core image publishes about itself while it runs: a heartbeat in `SCRATCH`
//! after setup and after every poll, and a status record in RAM (symbol [`STATUS_SYMBOL`]) that
//! a SoC co-simulation (or a debugger, or a board's UART reporter) reads without disturbing the
//! core.

use crate::control::Stats;

/// Top half of every heartbeat written to `SCRATCH` ("HB"); the low half counts polls
/// (wrapping, 0 = setup finished). Boot's own `SCRATCH` read-back patterns never carry it.
pub const HEARTBEAT_TAG: u32 = 0x4842_0000;
/// Mask of the tag half of a heartbeat.
pub const HEARTBEAT_TAG_MASK: u32 = 0xFFFF_0000;
/// Name of the status record in the image's symbol table.
pub const STATUS_SYMBOL: &[u8] = b"MROCE_STATUS";
/// First word of a valid status record ("STAT").
pub const STATUS_MAGIC: u32 = 0x5354_4154;
/// Words of the record.
pub const STATUS_WORDS: usize = 12;

/// The heartbeat after `polls` polls.
pub const fn heartbeat(polls: u32) -> u32 {
    HEARTBEAT_TAG | (polls & 0xFFFF)
}

/// The published record: how setup went and the firmware's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SocStatus {
    /// `FAULT` word of the failed boot or setup, 0 when both succeeded.
    pub setup_fault: u32,
    /// The firmware's statistics.
    pub stats: Stats,
}

impl SocStatus {
    /// The record as RAM words: magic, setup fault, then every [`Stats`] field in declaration
    /// order, zero padded.
    pub fn to_words(&self) -> [u32; STATUS_WORDS] {
        let s = &self.stats;
        [
            STATUS_MAGIC,
            self.setup_fault,
            s.polls,
            s.rerolls,
            s.suspects,
            s.paths_down,
            s.paths_recovered,
            s.planes_down,
            s.planes_up,
            s.probe_rounds,
            s.faults,
            0,
        ]
    }

    /// Decode RAM words; `None` when the magic is missing (the image has not written it yet).
    pub fn from_words(w: &[u32; STATUS_WORDS]) -> Option<SocStatus> {
        if w[0] != STATUS_MAGIC {
            return None;
        }
        Some(SocStatus {
            setup_fault: w[1],
            stats: Stats {
                polls: w[2],
                rerolls: w[3],
                suspects: w[4],
                paths_down: w[5],
                paths_recovered: w[6],
                planes_down: w[7],
                planes_up: w[8],
                probe_rounds: w[9],
                faults: w[10],
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_magic_is_checked() {
        let st = SocStatus {
            setup_fault: 7,
            stats: Stats {
                polls: 1,
                rerolls: 2,
                suspects: 3,
                paths_down: 4,
                paths_recovered: 5,
                planes_down: 6,
                planes_up: 7,
                probe_rounds: 8,
                faults: 9,
            },
        };
        let w = st.to_words();
        assert_eq!(SocStatus::from_words(&w), Some(st));
        let mut bad = w;
        bad[0] = 0;
        assert_eq!(SocStatus::from_words(&bad), None);
        assert_eq!(heartbeat(0x1_0003), HEARTBEAT_TAG | 3);
    }
}
