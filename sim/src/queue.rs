//! The event queue: a radix heap (a monotone priority queue).
//!
//! The event loop pops once per event, and the queue holds an event for every frame in flight:
//! tens of thousands on the default fabric, where `std`'s binary heap spent 10-20% of the loop
//! in `pop` (a sift through ~15 levels of a heap far larger than the L1 cache). A
//! discrete-event simulator never schedules into the past, so a radix heap applies: an event
//! waits in the bucket of the highest bit in which its time differs from the time of the last
//! event popped, and moves to a lower bucket only when every bucket below it is empty, each
//! move part of a sequential pass over one bucket. The events of one instant are popped from a
//! deque in key order.
//!
//! Events pop in exact `(t, key)` order, the order of the binary heap this replaced, so runs are
//! unchanged (the unit test checks the order against `BinaryHeap`).

use std::collections::VecDeque;

/// An event: time, and a key that orders the events of one time (the simulator's keys are
/// unique and increase with insertion).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ev {
    /// Time.
    pub t: u64,
    /// Tie-breaker and payload.
    pub key: u64,
}

/// A monotone min-queue of [`Ev`]: an event pushed must not be earlier than the last one
/// popped (one pushed back right after being popped is allowed, and comes out first).
#[derive(Debug, Clone)]
pub struct EventQueue {
    /// Time of the last event popped (0 before the first).
    last: u64,
    /// Events at `last`, in key order.
    now: VecDeque<Ev>,
    /// `later[b]`: events after `last` whose time differs from it first in bit `b`.
    later: [Vec<Ev>; 64],
    /// Bit `b` set: `later[b]` is not empty.
    nonempty: u64,
    len: usize,
}

impl EventQueue {
    /// An empty queue with room for `cap` events, spread over its buckets, before one grows.
    pub fn with_capacity(cap: usize) -> Self {
        let per = cap / 65;
        EventQueue {
            last: 0,
            now: VecDeque::with_capacity(per),
            later: std::array::from_fn(|_| Vec::with_capacity(per)),
            nonempty: 0,
            len: 0,
        }
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Add an event. One earlier than the last event popped breaks the contract; it is queued
    /// at that time.
    #[inline]
    pub fn push(&mut self, ev: Ev) {
        debug_assert!(ev.t >= self.last, "event at {} before {}", ev.t, self.last);
        self.len += 1;
        if ev.t <= self.last {
            let ev = Ev {
                t: self.last,
                key: ev.key,
            };
            // Usually the newest key of this instant: it goes last. An event pushed back after
            // being popped (the loop's time limit) goes first.
            if self.now.back().is_none_or(|b| b.key < ev.key) {
                self.now.push_back(ev);
            } else {
                let i = self.now.partition_point(|e| e.key < ev.key);
                self.now.insert(i, ev);
            }
        } else {
            let b = 63 - (ev.t ^ self.last).leading_zeros();
            self.later[b as usize].push(ev);
            self.nonempty |= 1 << b;
        }
    }

    /// Remove and return the earliest event (the smallest key among the earliest).
    #[inline]
    pub fn pop(&mut self) -> Option<Ev> {
        if self.now.is_empty() {
            self.advance();
        }
        let ev = self.now.pop_front()?;
        self.len -= 1;
        Some(ev)
    }

    /// Move the clock to the earliest time queued: the lowest non-empty bucket holds it; the
    /// bucket's events at that time go to `now`, the others to buckets below.
    fn advance(&mut self) {
        if self.nonempty == 0 {
            return;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        self.nonempty &= !(1 << b);
        let mut bucket = std::mem::take(&mut self.later[b]);
        self.last = bucket.iter().map(|e| e.t).min().unwrap_or(self.last);
        for ev in bucket.drain(..) {
            if ev.t == self.last {
                self.now.push_back(ev);
            } else {
                // Every event of bucket b agrees with the new time above bit b: it moves down.
                let nb = 63 - (ev.t ^ self.last).leading_zeros();
                self.later[nb as usize].push(ev);
                self.nonempty |= 1 << nb;
            }
        }
        // The bucket keeps its allocation for the events to come.
        self.later[b] = bucket;
        self.now.make_contiguous().sort_unstable_by_key(|e| e.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Random monotone schedule (delays from 0 to ~2^40, many equal times), checked pop by pop
    /// against a binary heap ordered by (t, key), with an event pushed back now and then.
    #[test]
    fn pops_in_the_order_of_a_binary_heap() {
        let mut rng = Rng::new(7);
        let mut q = EventQueue::with_capacity(0);
        let mut reference = BinaryHeap::new();
        let (mut now, mut key, mut popped) = (0u64, 0u64, 0usize);
        for round in 0..30_000u64 {
            let pushes = if round < 15_000 { 3 } else { 1 };
            for _ in 0..pushes {
                let r = rng.next_u64();
                let delay = match r % 4 {
                    0 => 0,
                    1 => r >> 56,
                    2 => r >> 44,
                    _ => r >> 24,
                };
                key += 1;
                let ev = Ev { t: now + delay, key };
                q.push(ev);
                reference.push(Reverse(ev));
            }
            for _ in 0..2 {
                let want = reference.pop().map(|Reverse(e)| e);
                let got = q.pop();
                assert_eq!(got, want);
                if let Some(e) = got {
                    now = e.t;
                    popped += 1;
                    if round % 1000 == 0 {
                        q.push(e);
                        assert_eq!(q.pop(), Some(e));
                    }
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(Reverse(want)) = reference.pop() {
            assert_eq!(q.pop(), Some(want));
            popped += 1;
        }
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
        assert_eq!(popped, 15_000 * 3 + 15_000);
    }
}
