//! rx_tracker and rx_tracker_compact: RustHDL simulation against `mroce_model::rx_tracker::RxTracker`.
use mroce_hdl::rx_tracker::*;
use mroce_model::params::{PATHS, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
use mroce_model::rx_tracker::{RxPacket, RxTracker, RxVerdict};
use rust_hdl::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Op {
    Pkt(RxPacket),
    Flush(u8),
    Reset(u8, u32),
}

/// Expected record: (op, verdict, ack snapshot fields).
#[derive(Debug, PartialEq, Eq, Clone)]
struct Rec {
    op: u64,
    verdict: u64,
    ack: Option<(u8, u32, u32, [u32; SACK_WORDS], u16, u16)>,
}

fn model_run(ops: &[Op]) -> Vec<Rec> {
    let mut m = RxTracker::new(0);
    ops.iter()
        .map(|op| match *op {
            Op::Pkt(p) => {
                let r = m.packet(&p);
                let verdict = match r.verdict {
                    RxVerdict::New => RX_NEW,
                    RxVerdict::Duplicate => RX_DUPLICATE,
                    RxVerdict::OutOfWindow => RX_OUT_OF_WINDOW,
                    RxVerdict::Refused => RX_REFUSED,
                };
                Rec {
                    op: RX_OP_PACKET,
                    verdict,
                    ack: r.ack.map(|a| (a.path, a.base, a.cum, a.sack, a.ecn_count, a.pkt_count)),
                }
            }
            Op::Flush(p) => {
                let a = m.flush(p);
                Rec {
                    op: RX_OP_FLUSH,
                    verdict: 0,
                    ack: Some((a.path, a.base, a.cum, a.sack, a.ecn_count, a.pkt_count)),
                }
            }
            Op::Reset(p, isn) => {
                m.reset_path(p, isn);
                Rec {
                    op: RX_OP_RESET,
                    verdict: 0,
                    ack: None,
                }
            }
        })
        .collect()
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

fn pkt(path: u8, psn: u32, floor: u32) -> Op {
    Op::Pkt(RxPacket {
        path,
        psn,
        floor,
        ce: false,
        ack_req: false,
        commit: true,
    })
}

fn random_stream(seed: u64, n: usize, paths: u32) -> Vec<Op> {
    let mut rng = Lcg(seed);
    let mut next = [0u32; PATHS];
    let mut floor = [0u32; PATHS];
    let mut ops = vec![];
    for p in 0..PATHS as u8 {
        let isn = if rng.below(2) == 0 {
            rng.next()
        } else {
            u32::MAX - rng.below(300)
        };
        ops.push(Op::Reset(p, isn));
        next[p as usize] = isn;
        floor[p as usize] = isn;
    }
    for _ in 0..n {
        let p = rng.below(paths) as usize;
        let r = rng.below(100);
        if r < 3 {
            ops.push(Op::Flush(p as u8));
            continue;
        }
        let psn = if r < 70 {
            let x = next[p];
            // lose some packets
            next[p] = next[p].wrapping_add(1 + u32::from(rng.below(10) == 0));
            x
        } else if r < 85 {
            next[p].wrapping_sub(rng.below(SACK_BITS as u32 + 44)) // duplicate or below window
        } else {
            next[p].wrapping_add(rng.below(SACK_BITS as u32 + 44)) // ahead, possibly out of window
        };
        if rng.below(20) == 0 {
            floor[p] = floor[p].wrapping_add(SACK_WORD_BITS as u32 * rng.below(3));
        }
        if rng.below(4) == 0 {
            // the sender abandons what is well behind (slides over lost words)
            floor[p] = next[p].wrapping_sub(64 + rng.below(64));
        }
        let fl = if rng.below(30) == 0 { rng.next() } else { floor[p] };
        ops.push(Op::Pkt(RxPacket {
            path: p as u8 + PATHS as u8 * rng.below(2) as u8,
            psn,
            floor: fl,
            ce: rng.below(8) == 0,
            ack_req: rng.below(16) == 0,
            commit: rng.below(20) != 0,
        }));
    }
    ops
}

/// The block-level tests, instantiated for each implementation of the receive tracker.
macro_rules! suite {
    ($m:ident, $T:ty, $LAT:expr) => {
        mod $m {
            use super::*;

            fn tick(u: &mut $T) {
                u.clock.next = Clock { clk: true };
                assert!(simulate(u, 200), "no convergence");
                u.clock.next = Clock { clk: false };
                assert!(simulate(u, 200), "no convergence");
            }

            /// Run `ops` through the block; `p_valid`/`p_ready` in percent drive bubbles and back-pressure.
            /// Returns the records and the clock count.
            fn hw_run(ops: &[Op], seed: u64, p_valid: u32, p_ready: u32) -> (Vec<Rec>, usize) {
                let mut u = <$T>::default();
                u.connect_all();
                simulate(&mut u, 200);
                let mut rng = Lcg(seed);
                // every path starts at ISN 0 like the model's RxTracker::new(0)
                let mut all: Vec<Op> = (0..PATHS as u8).map(|p| Op::Reset(p, 0)).collect();
                all.extend_from_slice(ops);
                let mut i = 0;
                let mut out = vec![];
                let mut clocks = 0;
                while out.len() < all.len() {
                    clocks += 1;
                    assert!(
                        clocks < 40 * all.len() + 1000,
                        "stuck at {} of {}",
                        out.len(),
                        all.len()
                    );
                    let offer = i < all.len() && rng.below(100) < p_valid;
                    u.in_valid.next = offer;
                    if offer {
                        let (op, path, psn, floor, ce, ar, commit) = match all[i] {
                            Op::Pkt(p) => (
                                RX_OP_PACKET,
                                p.path % PATHS as u8,
                                p.psn,
                                p.floor,
                                p.ce,
                                p.ack_req,
                                p.commit,
                            ),
                            Op::Flush(p) => (RX_OP_FLUSH, p % PATHS as u8, 0, 0, false, false, false),
                            Op::Reset(p, isn) => (RX_OP_RESET, p % PATHS as u8, isn, 0, false, false, false),
                        };
                        u.in_op.next = op.into();
                        u.in_path.next = (path as u64).into();
                        u.in_psn.next = (psn as u64).into();
                        u.in_floor.next = (floor as u64).into();
                        u.in_ce.next = ce;
                        u.in_ack_req.next = ar;
                        u.in_commit.next = commit;
                    }
                    let ready = rng.below(100) < p_ready;
                    u.out_ready.next = ready;
                    assert!(simulate(&mut u, 200));
                    if offer && u.in_ready.val() {
                        i += 1;
                    }
                    if u.out_valid.val() && ready {
                        let o = u.out.val();
                        let op = o.op.to_u64();
                        let mut sack = [0u32; SACK_WORDS];
                        for (k, s) in sack.iter_mut().enumerate() {
                            *s = u.out_sack[k].val().to_u32();
                        }
                        let ack = (o.ack && op != RX_OP_RESET).then(|| {
                            (
                                o.path.to_u64() as u8,
                                o.base.to_u32(),
                                o.cum.to_u32(),
                                sack,
                                o.ecn.to_u16(),
                                o.pkt.to_u16(),
                            )
                        });
                        let verdict = if op == RX_OP_PACKET { o.verdict.to_u64() } else { 0 };
                        out.push(Rec { op, verdict, ack });
                    }
                    tick(&mut u);
                }
                (out.split_off(PATHS), clocks)
            }

            fn check(ops: &[Op], seed: u64, p_valid: u32, p_ready: u32) -> usize {
                let want = model_run(ops);
                let (got, clocks) = hw_run(ops, seed, p_valid, p_ready);
                assert_eq!(got.len(), want.len());
                for (k, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                    assert_eq!(g, w, "record {k}: op {:?}", ops[k]);
                }
                clocks
            }

            #[test]
            fn in_order_back_to_back_one_path_ii1() {
                let ops: Vec<Op> = (0..300u32).map(|i| pkt(3, i, 0)).collect();
                let clocks = check(&ops, 1, 100, 100);
                // PATHS resets + 300 packets at one per clock, plus the fixed latency and reset drains
                assert!(
                    clocks <= 300 + PATHS + 5 * PATHS + $LAT + 4,
                    "II=1 not sustained: {clocks} clocks"
                );
            }

            #[test]
            fn wraparound_full_window_and_out_of_window() {
                let isn = u32::MAX - 40;
                let mut ops = vec![Op::Reset(2, isn)];
                // fill the whole window out of order (every word full), then slide across the wrap
                let bits = SACK_BITS as u32;
                for i in (0..bits).rev() {
                    ops.push(pkt(2, isn.wrapping_add(i), isn));
                }
                ops.push(pkt(2, isn.wrapping_add(bits + 40), isn));
                ops.push(pkt(2, isn.wrapping_add(2 * bits - 1), isn));
                for i in 0..64u32 {
                    ops.push(pkt(2, isn.wrapping_add(bits + i), isn));
                }
                ops.push(pkt(2, isn, isn));
                ops.push(Op::Flush(2));
                check(&ops, 2, 100, 100);
            }

            #[test]
            fn duplicates_refused_floor_and_all_lost() {
                let mut ops = vec![];
                for i in 0..40u32 {
                    ops.push(pkt(5, i * 2, 0)); // every other PSN lost
                    ops.push(pkt(5, i * 2, 0)); // duplicate right behind
                }
                ops.push(Op::Pkt(RxPacket {
                    path: 5,
                    psn: 1,
                    floor: 0,
                    ce: true,
                    ack_req: false,
                    commit: false,
                }));
                ops.push(pkt(5, 1, 0));
                // the sender abandons everything below 64 (all-lost words slide on the floor)
                ops.push(pkt(5, 100, 64));
                ops.push(pkt(5, 101, 64));
                ops.push(pkt(5, 101, 96));
                // floor not sane (ahead of the psn): ignored
                ops.push(pkt(5, 102, 1000));
                ops.push(Op::Flush(5));
                ops.push(Op::Flush(5));
                check(&ops, 3, 100, 100);
            }

            #[test]
            fn back_pressure_and_bubbles() {
                let mut rng = Lcg(9);
                let ops: Vec<Op> = (0..400)
                    .map(|_| {
                        let path = rng.below(2) as u8;
                        pkt(path, rng.below(80), 0)
                    })
                    .collect();
                check(&ops, 4, 60, 30);
            }

            #[test]
            fn random_streams_match_model() {
                for (seed, paths, pv, pr) in [
                    (11u64, 1u32, 100u32, 100u32),
                    (12, 2, 100, 100),
                    (13, 4, 90, 70),
                    (14, PATHS as u32, 100, 100),
                ] {
                    let ops = random_stream(seed, 5000, paths);
                    check(&ops, seed, pv, pr);
                }
            }

            /// The random streams reach every verdict, ACKs with and without a trigger, and slides.
            #[test]
            fn random_streams_cover_outcomes() {
                let ops = random_stream(12, 5000, 2);
                let want = model_run(&ops);
                for v in [RX_NEW, RX_DUPLICATE, RX_OUT_OF_WINDOW, RX_REFUSED] {
                    assert!(
                        want.iter()
                            .filter(|r| r.op == RX_OP_PACKET && r.verdict == v)
                            .count()
                            > 20,
                        "verdict {v}"
                    );
                }
                let acks = want
                    .iter()
                    .filter(|r| r.op == RX_OP_PACKET && r.ack.is_some())
                    .count();
                let quiet = want
                    .iter()
                    .filter(|r| r.op == RX_OP_PACKET && r.ack.is_none())
                    .count();
                assert!(acks > 100 && quiet > 100, "{acks} {quiet}");
                let bases: std::collections::BTreeSet<u32> = want.iter().filter_map(|r| r.ack.map(|a| a.1)).collect();
                assert!(bases.len() > 100, "windows slid {} times", bases.len());
            }

            /// The documented latency: accepted at one clock edge, visible $LAT edges later.
            #[test]
            fn fixed_latency() {
                let mut u = <$T>::default();
                u.connect_all();
                simulate(&mut u, 200);
                u.out_ready.next = true;
                for _ in 0..8 {
                    tick(&mut u);
                }
                u.in_valid.next = true;
                u.in_op.next = RX_OP_PACKET.into();
                u.in_path.next = 3u64.into();
                u.in_psn.next = 0u64.into();
                u.in_commit.next = true;
                assert!(simulate(&mut u, 200));
                assert!(u.in_ready.val());
                tick(&mut u);
                u.in_valid.next = false;
                let mut edges = 1;
                assert!(simulate(&mut u, 200));
                while !u.out_valid.val() {
                    tick(&mut u);
                    edges += 1;
                    assert!(edges < 50);
                }
                assert_eq!(edges, $LAT);
            }
        }
    };
}

suite!(pipelined, RxTrackerHw, RX_LATENCY);
suite!(
    compact,
    mroce_hdl::rx_tracker_compact::RxTrackerCompact,
    mroce_hdl::rx_tracker_compact::RXC_LATENCY
);
