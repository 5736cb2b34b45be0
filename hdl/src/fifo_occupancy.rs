//! `fifo_occupancy`: how many operations a block has accepted and not yet delivered, against
//! the depth of its output FIFO; the block's `in_ready` is `room`.
//!
//! `room` is a register of its own (inverted), decided a clock early from the count and that clock's
//! accept and pop, so `in_ready` leaves a flip-flop instead of a compare behind the counter.
//! The compare's carry chain started `transport_core`'s critical path on one placement seed
//! (scoreboard count → `in_ready` → acceptance → a CSR path counter's enable).
use crate::lutram::kc;
use rust_hdl::prelude::*;

/// The count and the room flag of one output FIFO.
#[derive(LogicBlock)]
pub struct FifoOccupancy {
    pub clock: Signal<In, Clock>,
    /// The block accepts an operation at this clock edge.
    pub accept: Signal<In, Bit>,
    /// The block's FIFO delivers a record at this clock edge.
    pub pop: Signal<In, Bit>,
    /// The bound is not reached: the block may accept.
    pub room: Signal<Out, Bit>,
    /// Accepted, undelivered operations.
    occ: DFF<Bits<5>>,
    /// `occ >= depth`, registered.
    fl: DFF<Bit>,
    one5: Constant<Bits<5>>,
    depth5: Constant<Bits<5>>,
    depth_m1: Constant<Bits<5>>,
}

impl FifoOccupancy {
    /// A counter bounded by `depth` operations (1..=31: the count is 5 bits).
    pub fn new(depth: usize) -> Self {
        assert!((1..32).contains(&depth), "fifo_occupancy: depth {depth} is not 1..=31");
        Self {
            clock: Default::default(),
            accept: Default::default(),
            pop: Default::default(),
            room: Default::default(),
            occ: Default::default(),
            fl: Default::default(),
            one5: kc(1),
            depth5: kc(depth as u64),
            depth_m1: kc(depth as u64 - 1),
        }
    }
}

impl Logic for FifoOccupancy {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, occ, fl);
        self.room.next = !self.fl.q.val();
        self.fl.d.next = self.occ.q.val() >= self.depth5.val();
        if self.accept.val() && !self.pop.val() {
            self.occ.d.next = self.occ.q.val() + self.one5.val();
            self.fl.d.next = self.occ.q.val() >= self.depth_m1.val();
        }
        if !self.accept.val() && self.pop.val() {
            self.occ.d.next = self.occ.q.val() - self.one5.val();
            self.fl.d.next = self.occ.q.val() > self.depth5.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(u: &mut FifoOccupancy) {
        assert!(simulate(u, 100));
        u.clock.next = Clock { clk: true };
        assert!(simulate(u, 100));
        u.clock.next = Clock { clk: false };
        assert!(simulate(u, 100));
    }

    /// `room` equals `count < depth` after every clock of a random accept/pop stream that
    /// obeys it (accept only while not full, pop only what is held), through many fills.
    #[test]
    fn room_is_the_registered_bound() {
        let mut u = FifoOccupancy::new(4);
        u.connect_all();
        simulate(&mut u, 100);
        let (mut count, mut seed, mut fills) = (0u32, 0x2545_F491u32, 0);
        for _ in 0..5_000 {
            assert_eq!(u.room.val(), count < 4, "count {count}");
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let accept = seed & 3 != 0 && count < 4;
            let pop = (seed >> 2) & 3 == 0 && count > 0;
            u.accept.next = accept;
            u.pop.next = pop;
            tick(&mut u);
            count = count + u32::from(accept) - u32::from(pop);
            fills += u32::from(count == 4);
        }
        assert!(fills > 100, "the stream filled the counter only {fills} times");
    }
}
