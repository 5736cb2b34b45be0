//! Transmit scoreboard (hardware-mapped): per-path outstanding window, SACK processing,
//! loss detection and RTO timers.
//!
//! Outstanding PSNs are a ring of [`SACK_WORDS`] words aligned exactly like the receiver's
//! window (both start at the ISN and slide by whole words), so one ACK word maps to one
//! scoreboard word. A SACK is consumed one word per transaction; each transaction returns
//! the PSNs it frees and the PSNs it declares lost as masks, so a PSN is freed or lost at
//! most once and never silently dropped (SPEC.md §6.2).

use crate::params::{PATHS, RTO_MAX_BACKOFF, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
use crate::seq;

/// Per-path transmit state: fixed width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxPathState {
    /// PSN of bit 0 of the head word; every PSN below it is acked or lost (the "floor").
    pub una: u32,
    /// Ring index of the head word.
    pub head: u8,
    /// Outstanding bits: sent, not yet acked, not yet declared lost.
    pub words: [u32; SACK_WORDS],
    /// Next PSN to assign.
    pub next: u32,
    /// RTO timer armed.
    pub armed: bool,
    /// RTO deadline (ns, low 32 bits, serial compare).
    pub deadline: u32,
    /// Current backoff exponent.
    pub backoff: u8,
}

/// Result of consuming one SACK word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WordResult {
    /// PSN of bit 0 of the masks.
    pub word_psn: u32,
    /// Outstanding PSNs this word acknowledged (now freed).
    pub freed: u32,
    /// Outstanding PSNs declared lost (gap below a later acknowledged PSN).
    pub lost: u32,
    /// Bits acknowledging PSNs that were never sent or not aligned with the window: ignored.
    pub forged: bool,
}

/// Result of an RTO check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerResult {
    /// Timer not armed or not yet due.
    Idle,
    /// Timer expired: the caller expires every word of the window with [`TxScoreboard::expire_head`].
    Expired {
        /// Backoff exponent now in force.
        backoff: u8,
    },
}

/// The transmit scoreboard of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxScoreboard {
    paths: [TxPathState; PATHS],
}

impl Default for TxScoreboard {
    fn default() -> Self {
        Self::new(0)
    }
}

impl TxScoreboard {
    /// All paths start at `isn`.
    pub fn new(isn: u32) -> Self {
        let mut s = TxScoreboard {
            paths: [TxPathState::default(); PATHS],
        };
        for p in 0..PATHS {
            s.reset_path(p as u8, isn);
        }
        s
    }

    /// Re-initialise one path.
    pub fn reset_path(&mut self, path: u8, isn: u32) {
        self.paths[path as usize % PATHS] = TxPathState {
            una: isn,
            next: isn,
            ..Default::default()
        };
    }

    /// Read-only view of a path's state.
    pub fn path(&self, path: u8) -> &TxPathState {
        &self.paths[path as usize % PATHS]
    }

    /// True when `path` can take one more PSN (the window leaves one word of slack so the
    /// receiver, which slides one word per packet, is never overrun).
    pub fn has_room(&self, path: u8) -> bool {
        let st = &self.paths[path as usize % PATHS];
        (st.next.wrapping_sub(st.una) as usize) < SACK_BITS - SACK_WORD_BITS
    }

    /// Bitmask of paths with window room (bit p = path p), as the path selector consumes it.
    pub fn room_mask(&self) -> u32 {
        let mut m = 0;
        for p in 0..PATHS {
            if self.has_room(p as u8) {
                m |= 1 << p;
            }
        }
        m
    }

    /// Number of outstanding PSNs on `path`.
    pub fn outstanding(&self, path: u8) -> u32 {
        self.paths[path as usize % PATHS]
            .words
            .iter()
            .map(|w| w.count_ones())
            .sum()
    }

    /// Assign the next PSN on `path`; arms the RTO timer if idle. `None` when the window is full.
    pub fn send(&mut self, path: u8, now: u32, rto_ns: u32) -> Option<u32> {
        if !self.has_room(path) {
            return None;
        }
        let st = &mut self.paths[path as usize % PATHS];
        let psn = st.next;
        let d = psn.wrapping_sub(st.una) as usize;
        let w = (st.head as usize + d / SACK_WORD_BITS) % SACK_WORDS;
        st.words[w] |= 1 << (d % SACK_WORD_BITS);
        st.next = psn.wrapping_add(1);
        if !st.armed {
            st.armed = true;
            st.deadline = now.wrapping_add(rto_ns << st.backoff);
        }
        Some(psn)
    }

    /// Consume one word of a SACK: `mask` acknowledges PSNs `word_psn .. word_psn + 32`;
    /// outstanding PSNs below `lost_below` that stay unacknowledged are declared lost.
    pub fn ack_word(
        &mut self,
        path: u8,
        word_psn: u32,
        mask: u32,
        lost_below: u32,
        now: u32,
        rto_ns: u32,
    ) -> WordResult {
        let st = &mut self.paths[path as usize % PATHS];
        let mut r = WordResult {
            word_psn,
            ..Default::default()
        };
        let d = word_psn.wrapping_sub(st.una);
        if !(d as usize).is_multiple_of(SACK_WORD_BITS) {
            r.forged = true;
        } else if !seq::is_negative(d) && (d as usize) < SACK_BITS {
            let w = (st.head as usize + d as usize / SACK_WORD_BITS) % SACK_WORDS;
            // Bits for PSNs at or beyond `next` were never sent: an ACK claiming them is forged.
            let sent_span = st.next.wrapping_sub(word_psn);
            let sent_mask = if seq::is_negative(sent_span) {
                0
            } else if sent_span >= SACK_WORD_BITS as u32 {
                u32::MAX
            } else {
                (1u32 << sent_span) - 1
            };
            if mask & !sent_mask != 0 {
                r.forged = true;
            }
            let out = st.words[w];
            r.freed = out & mask & sent_mask;
            let below = lost_below.wrapping_sub(word_psn);
            let below_mask = if seq::is_negative(below) {
                0
            } else if below >= SACK_WORD_BITS as u32 {
                u32::MAX
            } else {
                (1u32 << below) - 1
            };
            r.lost = out & !mask & below_mask;
            st.words[w] = out & !(r.freed | r.lost);
            if r.freed != 0 {
                // Progress: restart the timer from now with the backoff cleared.
                st.backoff = 0;
                st.deadline = now.wrapping_add(rto_ns);
            }
        }
        Self::slide_and_disarm(st);
        r
    }

    /// Declare every outstanding PSN of the head word lost and slide past it, after an RTO.
    /// Called [`SACK_WORDS`] times it empties the whole window.
    pub fn expire_head(&mut self, path: u8) -> WordResult {
        let st = &mut self.paths[path as usize % PATHS];
        let w = st.head as usize;
        let r = WordResult {
            word_psn: st.una,
            freed: 0,
            lost: st.words[w],
            forged: false,
        };
        st.words[w] = 0;
        Self::slide_and_disarm(st);
        r
    }

    /// Check the RTO timer of `path` at `now`. On expiry the backoff grows and the timer
    /// is re-armed for the probe that follows.
    pub fn timer(&mut self, path: u8, now: u32, rto_ns: u32) -> TimerResult {
        let st = &mut self.paths[path as usize % PATHS];
        if !st.armed || seq::lt(now, st.deadline) {
            return TimerResult::Idle;
        }
        st.backoff = (st.backoff + 1).min(RTO_MAX_BACKOFF);
        st.deadline = now.wrapping_add(rto_ns << st.backoff);
        TimerResult::Expired { backoff: st.backoff }
    }

    /// Clear the backoff of a path (a probe was answered).
    pub fn clear_backoff(&mut self, path: u8) {
        self.paths[path as usize % PATHS].backoff = 0;
    }

    /// RTO deadline of `path` if armed.
    pub fn deadline(&self, path: u8) -> Option<u32> {
        let st = &self.paths[path as usize % PATHS];
        st.armed.then_some(st.deadline)
    }

    fn slide_and_disarm(st: &mut TxPathState) {
        let h = st.head as usize;
        let allocated = st.next.wrapping_sub(st.una) as usize;
        if st.words[h] == 0 && allocated >= SACK_WORD_BITS {
            st.head = ((h + 1) % SACK_WORDS) as u8;
            st.una = st.una.wrapping_add(SACK_WORD_BITS as u32);
        }
        if st.words.iter().all(|w| *w == 0) {
            st.armed = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_ack_loss() {
        let mut s = TxScoreboard::new(0);
        for i in 0..10 {
            assert_eq!(s.send(0, 0, 1000), Some(i));
        }
        // PSNs 0..10 sent; ACK says 0,1,3..9 received: 2 is lost.
        let r = s.ack_word(0, 0, 0b11_1111_1011, 10, 5, 1000);
        assert_eq!(r.freed, 0b11_1111_1011);
        assert_eq!(r.lost, 0b100);
        assert!(!r.forged);
        // The same ACK again frees nothing twice.
        let r2 = s.ack_word(0, 0, 0b11_1111_1011, 10, 6, 1000);
        assert_eq!((r2.freed, r2.lost), (0, 0));
        assert_eq!(s.outstanding(0), 0);
        assert_eq!(s.deadline(0), None);
    }

    #[test]
    fn forged_bits_are_ignored() {
        let mut s = TxScoreboard::new(7);
        s.send(1, 0, 1000);
        let r = s.ack_word(1, 7, u32::MAX, 8, 0, 1000);
        assert!(r.forged);
        assert_eq!(r.freed, 1);
        let r = s.ack_word(1, 8, 1, 8, 0, 1000);
        assert!(r.forged, "misaligned word");
    }

    #[test]
    fn window_full_and_rto() {
        let mut s = TxScoreboard::new(u32::MAX - 3);
        let mut n = 0;
        while s.send(2, 0, 100).is_some() {
            n += 1;
        }
        assert_eq!(n, SACK_BITS - SACK_WORD_BITS);
        assert_eq!(s.timer(2, 50, 100), TimerResult::Idle);
        assert_eq!(s.timer(2, 100, 100), TimerResult::Expired { backoff: 1 });
        let mut lost = 0;
        for _ in 0..SACK_WORDS {
            lost += s.expire_head(2).lost.count_ones() as usize;
        }
        assert_eq!(lost, SACK_BITS - SACK_WORD_BITS);
        assert!(s.has_room(2));
    }
}
