//! Receive tracker (hardware-mapped): per-path window base and 256-bit SACK ring.
//!
//! The bitmap is a ring of [`SACK_WORDS`] words of [`SACK_WORD_BITS`] bits with a head
//! pointer. Per packet the tracker touches one word and slides the window by at most one
//! whole word, so the HDL mirror can run one packet per clock (design-notes §5, SPEC.md §6.1).
//!
//! Every transaction is a pure function of (state, request) with fixed-width state; the
//! RustHDL block `rx_tracker` must produce bit-identical responses.

use crate::params::{ACK_COALESCE, PATHS, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
use crate::seq;

/// Verdict for one arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum RxVerdict {
    /// First arrival of this PSN; its bit is now set.
    New,
    /// PSN below the window base, or its bit was already set.
    Duplicate,
    /// PSN at or beyond base + SACK_BITS: dropped, not recorded.
    OutOfWindow,
    /// In window and new, but the placement unit refused it (e.g. no receive buffer
    /// posted): not recorded, so the sender sees a loss and retransmits.
    Refused,
}

/// A data or probe packet as the tracker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RxPacket {
    /// Path index (taken modulo PATHS).
    pub path: u8,
    /// Per-path PSN.
    pub psn: u32,
    /// Sender's floor: every PSN below it is acknowledged or abandoned.
    pub floor: u32,
    /// The IP header arrived with ECN = CE.
    pub ce: bool,
    /// The sender asked for an immediate ACK (BTH AckReq).
    pub ack_req: bool,
    /// The placement unit accepts the packet (record it if new).
    pub commit: bool,
}

/// What the ACK generator needs for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckSnapshot {
    /// Path index.
    pub path: u8,
    /// Window base (bit 0 of word 0 is this PSN).
    pub base: u32,
    /// Cumulative ACK: base + trailing ones of the head word.
    pub cum: u32,
    /// Bitmap rotated so that word 0 starts at `base`.
    pub sack: [u32; SACK_WORDS],
    /// CE-marked packets since the previous ACK on this path.
    pub ecn_count: u16,
    /// Packets since the previous ACK on this path.
    pub pkt_count: u16,
}

/// Response to one packet transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxResponse {
    /// Verdict.
    pub verdict: RxVerdict,
    /// Set when an ACK must be sent now; the per-path counters were cleared.
    pub ack: Option<AckSnapshot>,
}

/// Per-path receive state: fixed width, one RAM row per path in hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxPathState {
    /// PSN of bit 0 of the head word.
    pub base: u32,
    /// Ring index of the head word.
    pub head: u8,
    /// Ring of bitmap words.
    pub words: [u32; SACK_WORDS],
    /// PSN expected next (last recorded + 1), for gap detection.
    pub expected: u32,
    /// CE count since the previous ACK (saturating).
    pub ecn_count: u16,
    /// Packet count since the previous ACK (saturating).
    pub pkt_count: u16,
}

/// The receive tracker of one connection: `PATHS` independent path windows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxTracker {
    paths: [RxPathState; PATHS],
}

impl Default for RxTracker {
    fn default() -> Self {
        Self::new(0)
    }
}

impl RxTracker {
    /// All paths start at `isn` with empty bitmaps.
    pub fn new(isn: u32) -> Self {
        let mut t = RxTracker {
            paths: [RxPathState::default(); PATHS],
        };
        for p in 0..PATHS {
            t.reset_path(p as u8, isn);
        }
        t
    }

    /// Re-initialise one path (connection setup).
    pub fn reset_path(&mut self, path: u8, isn: u32) {
        self.paths[path as usize % PATHS] = RxPathState {
            base: isn,
            head: 0,
            words: [0; SACK_WORDS],
            expected: isn,
            ecn_count: 0,
            pkt_count: 0,
        };
    }

    /// Read-only view of a path's state.
    pub fn path(&self, path: u8) -> &RxPathState {
        &self.paths[path as usize % PATHS]
    }

    /// Process one data or probe packet.
    pub fn packet(&mut self, req: &RxPacket) -> RxResponse {
        let st = &mut self.paths[req.path as usize % PATHS];
        let d = req.psn.wrapping_sub(st.base);
        let verdict = if seq::is_negative(d) {
            RxVerdict::Duplicate
        } else if d as usize >= SACK_BITS {
            RxVerdict::OutOfWindow
        } else {
            let w = (st.head as usize + d as usize / SACK_WORD_BITS) % SACK_WORDS;
            let bit = 1u32 << (d as usize % SACK_WORD_BITS);
            if st.words[w] & bit != 0 {
                RxVerdict::Duplicate
            } else if req.commit {
                st.words[w] |= bit;
                RxVerdict::New
            } else {
                RxVerdict::Refused
            }
        };
        let in_window = matches!(verdict, RxVerdict::New | RxVerdict::Refused);
        let gap = req.psn != st.expected;
        if in_window {
            st.expected = req.psn.wrapping_add(1);
        }
        st.pkt_count = st.pkt_count.saturating_add(1);
        if req.ce {
            st.ecn_count = st.ecn_count.saturating_add(1);
        }
        // Slide by at most one word: when the head word is complete, or when the sender's
        // floor says every PSN of the head word is acknowledged or abandoned.
        let h = st.head as usize;
        let floor_past_head = !seq::is_negative(req.floor.wrapping_sub(st.base.wrapping_add(SACK_WORD_BITS as u32)));
        let floor_sane = !seq::is_negative(req.psn.wrapping_sub(req.floor));
        if st.words[h] == u32::MAX || (floor_sane && floor_past_head) {
            st.words[h] = 0;
            st.head = ((h + 1) % SACK_WORDS) as u8;
            st.base = st.base.wrapping_add(SACK_WORD_BITS as u32);
        }
        let ack_now = req.ack_req || req.ce || gap || verdict != RxVerdict::New || st.pkt_count >= ACK_COALESCE;
        let ack = if ack_now {
            Some(Self::take(st, req.path % PATHS as u8))
        } else {
            None
        };
        RxResponse { verdict, ack }
    }

    /// Snapshot a path for a delayed ACK and clear its counters.
    pub fn flush(&mut self, path: u8) -> AckSnapshot {
        let st = &mut self.paths[path as usize % PATHS];
        Self::take(st, path % PATHS as u8)
    }

    /// Packets received on `path` since its last ACK.
    pub fn pending(&self, path: u8) -> u16 {
        self.paths[path as usize % PATHS].pkt_count
    }

    /// Snapshot a path without clearing its counters (reported as 0): the state a fan-in
    /// announcement carries (SPEC.md §8.5), which acknowledges nothing new.
    pub fn peek(&self, path: u8) -> AckSnapshot {
        let mut st = self.paths[path as usize % PATHS];
        st.ecn_count = 0;
        st.pkt_count = 0;
        Self::take(&mut st, path % PATHS as u8)
    }

    fn take(st: &mut RxPathState, path: u8) -> AckSnapshot {
        let mut sack = [0u32; SACK_WORDS];
        for (k, w) in sack.iter_mut().enumerate() {
            *w = st.words[(st.head as usize + k) % SACK_WORDS];
        }
        let snap = AckSnapshot {
            path,
            base: st.base,
            cum: st.base.wrapping_add(sack[0].trailing_ones()),
            sack,
            ecn_count: st.ecn_count,
            pkt_count: st.pkt_count,
        };
        st.ecn_count = 0;
        st.pkt_count = 0;
        snap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(path: u8, psn: u32, floor: u32) -> RxPacket {
        RxPacket {
            path,
            psn,
            floor,
            ce: false,
            ack_req: false,
            commit: true,
        }
    }

    #[test]
    fn in_order_slides_by_words() {
        let mut t = RxTracker::new(100);
        for i in 0..64u32 {
            let r = t.packet(&pkt(0, 100 + i, 100));
            assert_eq!(r.verdict, RxVerdict::New);
        }
        assert_eq!(t.path(0).base, 164);
        assert_eq!(t.packet(&pkt(0, 150, 100)).verdict, RxVerdict::Duplicate);
    }

    #[test]
    fn gap_acks_immediately_and_floor_abandons() {
        let mut t = RxTracker::new(0);
        assert!(t.packet(&pkt(1, 0, 0)).ack.is_none());
        let r = t.packet(&pkt(1, 2, 0));
        let a = r.ack.expect("gap forces an ACK");
        assert_eq!(a.sack[0], 0b101);
        assert_eq!(a.cum, 1);
        for p in 3..40 {
            t.packet(&pkt(1, p, 0));
        }
        assert_eq!(t.path(1).base, 0, "hole at 1 holds the window");
        // The sender abandons PSN 1 (floor 32): the window slides one word.
        t.packet(&pkt(1, 40, 32));
        assert_eq!(t.path(1).base, 32);
    }

    #[test]
    fn out_of_window_and_wrap() {
        let isn = u32::MAX - 10;
        let mut t = RxTracker::new(isn);
        assert_eq!(
            t.packet(&pkt(2, isn.wrapping_add(SACK_BITS as u32), isn)).verdict,
            RxVerdict::OutOfWindow
        );
        assert_eq!(
            t.packet(&pkt(2, isn.wrapping_add(SACK_BITS as u32 - 1), isn)).verdict,
            RxVerdict::New
        );
        for i in 0..32u32 {
            t.packet(&pkt(2, isn.wrapping_add(i), isn));
        }
        assert_eq!(t.path(2).base, isn.wrapping_add(32));
        assert_eq!(t.packet(&pkt(2, isn, isn)).verdict, RxVerdict::Duplicate);
    }

    #[test]
    fn refused_is_not_recorded() {
        let mut t = RxTracker::new(0);
        let mut p = pkt(0, 0, 0);
        p.commit = false;
        assert_eq!(t.packet(&p).verdict, RxVerdict::Refused);
        p.commit = true;
        assert_eq!(t.packet(&p).verdict, RxVerdict::New);
    }
}
