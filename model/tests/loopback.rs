//! Two mroce endpoints wired back to back through an in-test link with seeded loss.

use mroce_model::endpoint::{Endpoint, EndpointConfig};
use mroce_model::memory::Access;
use mroce_model::transport::*;
use mroce_model::Rng;

struct Link {
    a: Endpoint,
    b: Endpoint,
    now: Nanos,
    rng: Rng,
    loss: f64,
    delay: Nanos,
    // (arrival, to_b, plane, frame)
    wire: std::collections::VecDeque<(Nanos, bool, u8, Vec<u8>)>,
    events_a: Vec<Event>,
    events_b: Vec<Event>,
}

impl Link {
    fn new(loss: f64, seed: u64) -> Self {
        let aa = NicAddr::with_planes([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], 2);
        let ba = NicAddr::with_planes([2, 0, 0, 0, 0, 2], [10, 0, 0, 2], 2);
        let mut a = Endpoint::new(EndpointConfig { addr: aa, ..Default::default() }, seed);
        let mut b = Endpoint::new(EndpointConfig { addr: ba, ..Default::default() }, seed + 1);
        a.add_peer(ba);
        b.add_peer(aa);
        Link { a, b, now: 0, rng: Rng::new(seed * 7 + 3), loss, delay: 2_000, wire: Default::default(), events_a: vec![], events_b: vec![] }
    }

    fn step(&mut self) -> bool {
        let mut buf = vec![0u8; 9000];
        let mut moved = false;
        // Each side emits at most one frame per 100 ns tick (a crude serialiser).
        for to_b in [true, false] {
            let src = if to_b { &mut self.a } else { &mut self.b };
            if let Some(t) = src.poll_transmit(self.now, &mut buf) {
                moved = true;
                let r = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                if r >= self.loss {
                    self.wire.push_back((self.now + self.delay, to_b, t.plane, buf[..t.len].to_vec()));
                }
            }
        }
        while self.wire.front().is_some_and(|f| f.0 <= self.now) {
            let (_, to_b, plane, f) = self.wire.pop_front().unwrap();
            if to_b { self.b.handle_frame(self.now, plane, &f) } else { self.a.handle_frame(self.now, plane, &f) }
            moved = true;
        }
        for (ep, ev) in [(&mut self.a, &mut self.events_a), (&mut self.b, &mut self.events_b)] {
            if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                ep.handle_timeout(self.now);
            }
            while let Some(e) = ep.poll_event() {
                ev.push(e);
            }
        }
        self.now += 100;
        moved
    }

    fn run_until(&mut self, limit: Nanos, mut done: impl FnMut(&Link) -> bool) {
        while self.now < limit && !done(self) {
            self.step();
        }
    }
}

fn connect(l: &mut Link) -> ConnId {
    let peer = *l.b.addr();
    let c = l.a.connect(0, peer).unwrap();
    l.run_until(10_000_000, |l| l.events_a.contains(&Event::Connected(c)));
    assert!(l.events_a.contains(&Event::Connected(c)), "connected");
    c
}

fn write_transfer(loss: f64, seed: u64, len: usize) -> Link {
    let mut l = Link::new(loss, seed);
    let c = connect(&mut l);
    let src = l.a.memory_mut().register(len, Access { remote_write: false });
    let dst = l.b.memory_mut().register(len, Access { remote_write: true });
    let mut r = Rng::new(seed);
    for x in l.a.memory_mut().local_mut(src, 0, len as u64).unwrap() {
        *x = r.next_u32() as u8;
    }
    let msg = 256 * 1024;
    let mut n = 0;
    for (i, off) in (0..len).step_by(msg).enumerate() {
        let ml = msg.min(len - off) as u32;
        l.a.post_write(c, (i % 3) as u16, LocalBuf { key: src, offset: off as u64, len: ml }, RemoteBuf { va: dst.va + off as u64, rkey: dst.rkey }, i as u64).unwrap();
        n += 1;
    }
    l.run_until(200_000_000, |l| l.events_a.iter().filter(|e| matches!(e, Event::Completion(_))).count() == n);
    let comps: Vec<_> = l.events_a.iter().filter_map(|e| if let Event::Completion(c) = e { Some(*c) } else { None }).collect();
    assert_eq!(comps.len(), n, "all sender completions (t={} us, stats {:?})", l.now / 1000, l.a.stats());
    assert!(comps.iter().all(|c| c.status == Status::Ok));
    assert_eq!(l.a.memory().region(src).unwrap(), l.b.memory().region(dst).unwrap(), "content");
    let rx: Vec<_> = l.events_b.iter().filter_map(|e| if let Event::Completion(c) = e { Some(*c) } else { None }).collect();
    assert_eq!(rx.len(), n);
    // Completion order per stream is message order.
    for s in 0..3u16 {
        let seqs: Vec<u32> = rx.iter().filter(|c| c.stream == s).map(|c| c.msg_seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "stream {s} order {seqs:?}");
    }
    l
}

#[test]
fn write_lossless() {
    let l = write_transfer(0.0, 1, 2 << 20);
    assert_eq!(l.a.stats().retransmits, 0);
}

#[test]
fn write_with_loss() {
    let l = write_transfer(0.05, 2, 2 << 20);
    assert!(l.a.stats().retransmits > 0);
}
