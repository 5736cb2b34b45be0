//! Test link: two NICs back to back with a programmable fault injector (smoltcp-style).
#![allow(dead_code)]

use std::collections::VecDeque;

use mroce_model::endpoint::{Endpoint, EndpointConfig};
use mroce_model::memory::{Access, MrKey};
use mroce_model::transport::*;
use mroce_model::wire;
use mroce_model::Rng;

/// What the fault injector does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Deliver,
    Drop,
    /// Deliver twice.
    Duplicate,
    /// Deliver after this many extra nanoseconds.
    Delay(Nanos),
    /// Deliver with the IP ECN field set to CE, as a congested switch would.
    DeliverCe,
}

pub type Injector = Box<dyn FnMut(bool, &[u8], &mut Rng) -> Fate>;

pub struct Link {
    pub a: Endpoint,
    pub b: Endpoint,
    pub now: Nanos,
    pub rng: Rng,
    pub delay: Nanos,
    pub inject: Injector,
    wire: VecDeque<(Nanos, bool, u8, Vec<u8>)>,
    pub events_a: Vec<Event>,
    pub events_b: Vec<Event>,
    pub frames_ab: u64,
    pub frames_ba: u64,
}

pub fn addr_a() -> NicAddr {
    NicAddr::with_planes([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], 2)
}
pub fn addr_b() -> NicAddr {
    NicAddr::with_planes([2, 0, 0, 0, 0, 2], [10, 0, 0, 2], 2)
}

/// Uniform random loss in both directions.
pub fn random_loss(p: f64) -> Injector {
    Box::new(move |_, _, rng| if unit(rng) < p { Fate::Drop } else { Fate::Deliver })
}

pub fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Opcode of a frame (BTH byte 0).
pub fn opcode(f: &[u8]) -> u8 {
    f.get(wire::BTH_OFFSET).copied().unwrap_or(0)
}

impl Link {
    pub fn new(seed: u64, cfg_a: EndpointConfig, cfg_b: EndpointConfig, inject: Injector) -> Self {
        let mut a = Endpoint::new(
            EndpointConfig {
                addr: addr_a(),
                ..cfg_a
            },
            seed,
        );
        let mut b = Endpoint::new(
            EndpointConfig {
                addr: addr_b(),
                ..cfg_b
            },
            seed + 1,
        );
        a.add_peer(addr_b());
        b.add_peer(addr_a());
        Link {
            a,
            b,
            now: 0,
            rng: Rng::new(seed * 7 + 3),
            delay: 2_000,
            inject,
            wire: VecDeque::new(),
            events_a: vec![],
            events_b: vec![],
            frames_ab: 0,
            frames_ba: 0,
        }
    }

    pub fn simple(seed: u64, loss: f64) -> Self {
        Self::new(
            seed,
            EndpointConfig::default(),
            EndpointConfig::default(),
            random_loss(loss),
        )
    }

    /// Put a raw frame on the wire towards B (or A).
    pub fn inject_frame(&mut self, to_b: bool, plane: u8, frame: Vec<u8>) {
        self.wire.push_back((self.now, to_b, plane, frame));
    }

    pub fn step(&mut self) {
        let mut buf = vec![0u8; 9000];
        for to_b in [true, false] {
            let src = if to_b { &mut self.a } else { &mut self.b };
            if let Some(t) = src.poll_transmit(self.now, &mut buf) {
                let f = buf[..t.len].to_vec();
                if to_b {
                    self.frames_ab += 1
                } else {
                    self.frames_ba += 1
                }
                match (self.inject)(to_b, &f, &mut self.rng) {
                    Fate::Deliver => self.wire.push_back((self.now + self.delay, to_b, t.plane, f)),
                    Fate::Drop => {}
                    Fate::Duplicate => {
                        self.wire.push_back((self.now + self.delay, to_b, t.plane, f.clone()));
                        self.wire.push_back((self.now + self.delay, to_b, t.plane, f));
                    }
                    Fate::Delay(d) => self.wire.push_back((self.now + self.delay + d, to_b, t.plane, f)),
                    Fate::DeliverCe => {
                        let mut f = f;
                        // only ECN-capable frames are marked (every mroce frame is ECT(0))
                        if wire::frame_ecn(&f) == Some(wire::ecn::ECT0) {
                            let _ = wire::set_ecn(&mut f, wire::ecn::CE);
                        }
                        self.wire.push_back((self.now + self.delay, to_b, t.plane, f));
                    }
                }
            }
        }
        let now = self.now;
        let mut i = 0;
        while i < self.wire.len() {
            if self.wire[i].0 <= now {
                let (_, to_b, plane, f) = self.wire.remove(i).unwrap();
                if to_b {
                    self.b.handle_frame(now, plane, &f)
                } else {
                    self.a.handle_frame(now, plane, &f)
                }
            } else {
                i += 1;
            }
        }
        for (ep, ev) in [(&mut self.a, &mut self.events_a), (&mut self.b, &mut self.events_b)] {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
            while let Some(e) = ep.poll_event() {
                ev.push(e);
            }
        }
        self.now += 100;
    }

    pub fn run_until(&mut self, limit: Nanos, mut done: impl FnMut(&Link) -> bool) -> bool {
        while self.now < limit {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }

    pub fn connect(&mut self) -> ConnId {
        let c = self.a.connect(self.now, addr_b()).unwrap();
        assert!(
            self.run_until(self.now + 20_000_000, |l| l.events_a.contains(&Event::Connected(c))),
            "connect"
        );
        c
    }

    /// The id B gave the connection (from its Accepted event).
    pub fn b_conn(&self) -> ConnId {
        self.events_b
            .iter()
            .find_map(|e| if let Event::Accepted(c) = e { Some(*c) } else { None })
            .unwrap()
    }

    pub fn completions_a(&self) -> Vec<Completion> {
        comps(&self.events_a)
    }
    pub fn completions_b(&self) -> Vec<Completion> {
        comps(&self.events_b)
    }
}

pub fn comps(ev: &[Event]) -> Vec<Completion> {
    ev.iter()
        .filter_map(|e| if let Event::Completion(c) = e { Some(*c) } else { None })
        .collect()
}

/// Register a source region on A filled with seeded bytes and a destination region on B.
pub fn regions(l: &mut Link, len: usize, seed: u64) -> (MrKey, MrKey) {
    let src = l.a.memory_mut().register(len, Access { remote_write: false });
    let dst = l.b.memory_mut().register(len, Access { remote_write: true });
    let mut r = Rng::new(seed);
    for x in l.a.memory_mut().local_mut(src, 0, len as u64).unwrap() {
        *x = r.next_u32() as u8;
    }
    (src, dst)
}

/// Post `len` bytes as WRITEs of `msg` bytes over `streams` streams; returns the message count.
pub fn post_writes(l: &mut Link, c: ConnId, src: MrKey, dst: MrKey, len: usize, msg: usize, streams: u16) -> usize {
    let mut n = 0;
    for (i, off) in (0..len).step_by(msg).enumerate() {
        let ml = msg.min(len - off) as u32;
        l.a.post_write(
            c,
            (i % streams as usize) as u16,
            LocalBuf {
                key: src,
                offset: off as u64,
                len: ml,
            },
            RemoteBuf {
                va: dst.va + off as u64,
                rkey: dst.rkey,
            },
            i as u64,
        )
        .unwrap();
        n += 1;
    }
    n
}

/// Run a full WRITE transfer and check content, completion counts and per-stream order.
pub fn write_transfer(l: &mut Link, len: usize, seed: u64) {
    let c = l.connect();
    let (src, dst) = regions(l, len, seed);
    let n = post_writes(l, c, src, dst, len, 256 * 1024, 3);
    let done = l.run_until(l.now + 2_000_000_000, |l| {
        l.completions_a().len() == n && l.completions_b().len() == n
    });
    assert!(
        done,
        "transfer incomplete at t={} us: A {:?}",
        l.now / 1000,
        l.a.stats()
    );
    assert!(l.completions_a().iter().all(|c| c.status == Status::Ok));
    assert_eq!(
        l.a.memory().region(src).unwrap(),
        l.b.memory().region(dst).unwrap(),
        "content differs"
    );
    let rx = l.completions_b();
    for s in 0..3u16 {
        let seqs: Vec<u32> = rx.iter().filter(|c| c.stream == s).map(|c| c.msg_seq).collect();
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "stream {s} out of order: {seqs:?}"
        );
    }
}
