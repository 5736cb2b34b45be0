//! tx_scoreboard and tx_scoreboard_compact: RustHDL simulation against
//! `mroce_model::tx_scoreboard::TxScoreboard`, in the
//! compiled hardware configuration (both crates see the same params).
use mroce_hdl::tx_scoreboard::*;
use mroce_model::params::{CWND_MAX_PKTS, PATHS, SACK_WORDS};
use mroce_model::tx_scoreboard::{TimerResult, TxScoreboard};
use rust_hdl::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Op {
    Send(u8, u32, u32),
    Ack(u8, u32, u32, u32, u32, u32),
    Expire(u8),
    Timer(u8, u32, u32),
    Clear(u8),
    Reset(u8, u32),
}

/// (op, ok, psn, freed, lost, forged, backoff-if-expired, armed, deadline-if-armed, empty, room)
type Rec = (u64, bool, u32, u32, u32, bool, u8, bool, u32, bool, bool);

fn model_run(ops: &[Op]) -> Vec<Rec> {
    let mut m = TxScoreboard::new(0);
    ops.iter()
        .map(|op| {
            let (code, path, ok, psn, freed, lost, forged, bo) = match *op {
                Op::Send(p, now, rto) => {
                    let r = m.send(p, now, rto);
                    (TX_OP_SEND, p, r.is_some(), r.unwrap_or(m.path(p).next), 0, 0, false, 0)
                }
                Op::Ack(p, wp, mask, lb, now, rto) => {
                    let r = m.ack_word(p, wp, mask, lb, now, rto);
                    (TX_OP_ACK_WORD, p, false, r.word_psn, r.freed, r.lost, r.forged, 0)
                }
                Op::Expire(p) => {
                    let r = m.expire_head(p);
                    (TX_OP_EXPIRE, p, false, r.word_psn, r.freed, r.lost, r.forged, 0)
                }
                Op::Timer(p, now, rto) => match m.timer(p, now, rto) {
                    TimerResult::Idle => (TX_OP_TIMER, p, false, 0, 0, 0, false, 0),
                    TimerResult::Expired { backoff } => (TX_OP_TIMER, p, true, 0, 0, 0, false, backoff),
                },
                Op::Clear(p) => {
                    m.clear_backoff(p);
                    (TX_OP_CLEAR_BACKOFF, p, false, 0, 0, 0, false, 0)
                }
                Op::Reset(p, isn) => {
                    m.reset_path(p, isn);
                    (TX_OP_RESET, p, false, 0, 0, 0, false, 0)
                }
            };
            let dl = m.deadline(path);
            (
                code,
                ok,
                psn,
                freed,
                lost,
                forged,
                bo,
                dl.is_some(),
                dl.unwrap_or(0),
                m.outstanding(path) == 0,
                m.has_room(path),
            )
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

fn random_stream(seed: u64, n: usize, paths: u32) -> Vec<Op> {
    let mut rng = Lcg(seed);
    let mut ops = vec![];
    let mut next = [0u32; PATHS];
    let mut una = [0u32; PATHS];
    for p in 0..PATHS as u8 {
        let isn = if rng.below(2) == 0 {
            rng.next()
        } else {
            u32::MAX - rng.below(100)
        };
        ops.push(Op::Reset(p, isn));
        next[p as usize] = isn;
        una[p as usize] = isn;
    }
    let mut now = 0u32;
    for _ in 0..n {
        now = now.wrapping_add(rng.below(50));
        let p = rng.below(paths) as u8;
        let pi = p as usize;
        let r = rng.below(100);
        let rto = 200 + rng.below(2000);
        if r < 45 {
            ops.push(Op::Send(p, now, rto));
            next[pi] = next[pi].wrapping_add(1);
        } else if r < 88 {
            // a SACK word near the window (up to one word past it), mostly aligned with una
            let k = rng.below(SACK_WORDS as u32 + 1);
            let wp = if rng.below(15) == 0 {
                rng.next()
            } else {
                una[pi].wrapping_add(32 * k)
            };
            let mask = match rng.below(4) {
                0 => u32::MAX,
                1 => rng.next(),
                2 => rng.next() & rng.next(),
                _ => (1u32 << rng.below(32)).wrapping_sub(1),
            };
            let lb = wp.wrapping_add(rng.below(40));
            ops.push(Op::Ack(p, wp, mask, lb, now, rto));
            if rng.below(4) == 0 {
                una[pi] = una[pi].wrapping_add(32);
            }
        } else if r < 93 {
            ops.push(Op::Timer(p, now.wrapping_add(rng.below(3000)), rto));
        } else if r < 97 {
            ops.push(Op::Expire(p));
        } else if r < 99 {
            ops.push(Op::Clear(p));
        } else {
            let isn = rng.next();
            ops.push(Op::Reset(p, isn));
            next[pi] = isn;
            una[pi] = isn;
        }
    }
    ops
}

/// The block-level tests, instantiated for each implementation of the transmit scoreboard.
macro_rules! suite {
    ($m:ident, $T:ty, $LAT:expr, $ROOM:expr) => {
        mod $m {
            use super::*;

            fn tick(u: &mut $T) {
                u.clock.next = Clock { clk: true };
                assert!(simulate(u, 200));
                u.clock.next = Clock { clk: false };
                assert!(simulate(u, 200));
            }

            fn hw_run(ops: &[Op], seed: u64, p_valid: u32, p_ready: u32) -> (Vec<Rec>, usize, u32) {
                let mut u = <$T>::default();
                u.connect_all();
                simulate(&mut u, 200);
                let mut rng = Lcg(seed);
                let mut i = 0;
                let mut out = vec![];
                let mut clocks = 0;
                while out.len() < ops.len() {
                    clocks += 1;
                    assert!(clocks < 40 * ops.len() + 1000, "stuck");
                    let offer = i < ops.len() && rng.below(100) < p_valid;
                    u.in_valid.next = offer;
                    if offer {
                        let (code, p, psn, mask, lb, now, rto) = match ops[i] {
                            Op::Send(p, now, rto) => (TX_OP_SEND, p, 0, 0, 0, now, rto),
                            Op::Ack(p, wp, mask, lb, now, rto) => (TX_OP_ACK_WORD, p, wp, mask, lb, now, rto),
                            Op::Expire(p) => (TX_OP_EXPIRE, p, 0, 0, 0, 0, 0),
                            Op::Timer(p, now, rto) => (TX_OP_TIMER, p, 0, 0, 0, now, rto),
                            Op::Clear(p) => (TX_OP_CLEAR_BACKOFF, p, 0, 0, 0, 0, 0),
                            Op::Reset(p, isn) => (TX_OP_RESET, p, isn, 0, 0, 0, 0),
                        };
                        u.in_op.next = code.into();
                        u.in_path.next = u64::from(p % PATHS as u8).into();
                        u.in_psn.next = u64::from(psn).into();
                        u.in_mask.next = u64::from(mask).into();
                        u.in_lost_below.next = u64::from(lb).into();
                        u.in_now.next = u64::from(now).into();
                        u.in_rto.next = u64::from(rto).into();
                    }
                    let ready = rng.below(100) < p_ready;
                    u.out_ready.next = ready;
                    assert!(simulate(&mut u, 200));
                    if offer && u.in_ready.val() {
                        i += 1;
                    }
                    if u.out_valid.val() && ready {
                        let o = u.out.val();
                        let code = o.op.to_u64();
                        let is_word = code == TX_OP_ACK_WORD || code == TX_OP_EXPIRE;
                        let psn = if code == TX_OP_SEND || is_word {
                            o.psn.to_u32()
                        } else {
                            0
                        };
                        let (freed, lost, forged) = if is_word {
                            (o.freed.to_u32(), o.lost.to_u32(), o.forged)
                        } else {
                            (0, 0, false)
                        };
                        let ok = (code == TX_OP_SEND || code == TX_OP_TIMER) && o.ok;
                        let bo = if code == TX_OP_TIMER && o.ok {
                            o.backoff.to_u64() as u8
                        } else {
                            0
                        };
                        let dl = if o.armed { o.deadline.to_u32() } else { 0 };
                        out.push((
                            code, ok, psn, freed, lost, forged, bo, o.armed, dl, o.empty, o.room,
                        ));
                    }
                    tick(&mut u);
                }
                for _ in 0..$ROOM {
                    tick(&mut u);
                }
                (out, clocks, u.room_mask.val().to_u32())
            }

            fn check(ops: &[Op], seed: u64, p_valid: u32, p_ready: u32) -> usize {
                let want = model_run(ops);
                let (got, clocks, room) = hw_run(ops, seed, p_valid, p_ready);
                for (k, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                    assert_eq!(g, w, "record {k}: {:?}", ops[k]);
                }
                let mut m = TxScoreboard::new(0);
                for op in ops {
                    match *op {
                        Op::Send(p, n, r) => drop(m.send(p, n, r)),
                        Op::Ack(p, a, b, c, d, e) => drop(m.ack_word(p, a, b, c, d, e)),
                        Op::Expire(p) => drop(m.expire_head(p)),
                        Op::Timer(p, n, r) => drop(m.timer(p, n, r)),
                        Op::Clear(p) => m.clear_backoff(p),
                        Op::Reset(p, i) => m.reset_path(p, i),
                    }
                }
                assert_eq!(room, m.room_mask(), "room_mask");
                clocks
            }

            #[test]
            fn send_ack_loss_back_to_back_ii1() {
                let mut ops = vec![];
                for _ in 0..10 {
                    ops.push(Op::Send(0, 0, 1000));
                }
                ops.push(Op::Ack(0, 0, 0b11_1111_1011, 10, 5, 1000));
                ops.push(Op::Ack(0, 0, 0b11_1111_1011, 10, 6, 1000)); // duplicate SACK: frees nothing twice
                ops.push(Op::Send(0, 7, 1000));
                ops.push(Op::Ack(0, 8, u32::MAX, 12, 9, 1000)); // misaligned: forged
                ops.push(Op::Ack(0, 0, u32::MAX, 12, 9, 1000)); // acks an unsent PSN: forged bits
                let clocks = check(&ops, 1, 100, 100);
                assert!(clocks <= ops.len() + $LAT + 2, "II=1: {clocks}");
            }

            #[test]
            fn full_window_wraparound_and_rto_all_lost() {
                let isn = u32::MAX - 3;
                let mut ops = vec![Op::Reset(2, isn)];
                for _ in 0..CWND_MAX_PKTS + 6 {
                    ops.push(Op::Send(2, 0, 100)); // the last six find the window full
                }
                ops.push(Op::Timer(2, 50, 100));
                ops.push(Op::Timer(2, 100, 100));
                for _ in 0..SACK_WORDS {
                    ops.push(Op::Expire(2));
                }
                ops.push(Op::Send(2, 200, 100));
                for t in 0..10u32 {
                    ops.push(Op::Timer(2, 300 + t * 100_000, 100)); // backoff saturates
                }
                ops.push(Op::Clear(2));
                ops.push(Op::Timer(2, 2_000_000, 100));
                check(&ops, 2, 100, 100);
            }

            #[test]
            fn back_pressure() {
                let mut ops = vec![];
                let mut rng = Lcg(5);
                for _ in 0..300 {
                    if rng.below(3) == 0 {
                        let wp = 32 * rng.below(3);
                        ops.push(Op::Ack(
                            1,
                            wp,
                            rng.next(),
                            wp + rng.below(40),
                            rng.below(1000),
                            100,
                        ));
                    } else {
                        ops.push(Op::Send(1, rng.below(1000), 100));
                    }
                }
                check(&ops, 3, 50, 25);
            }

            #[test]
            fn random_streams_match_model() {
                for (seed, paths, pv, pr) in [
                    (21u64, 1u32, 100u32, 100u32),
                    (22, 2, 100, 100),
                    (23, 3, 80, 60),
                    (24, PATHS as u32, 100, 100),
                ] {
                    let ops = random_stream(seed, 6000, paths);
                    check(&ops, seed, pv, pr);
                }
            }

            /// SEND, ACK_WORD and EXPIRE on one path, back to back in any order: one per clock.
            #[test]
            fn same_path_mix_is_ii1() {
                const P: u8 = 3; // a path of every configuration
                let mut rng = Lcg(77);
                let mut ops = vec![];
                let mut m = TxScoreboard::new(0);
                for _ in 0..2000 {
                    let r = rng.below(10);
                    let op = if r < 6 {
                        Op::Send(P, rng.below(100), 500)
                    } else if r < 9 {
                        let wp = m.path(P).una.wrapping_add(32 * rng.below(3));
                        Op::Ack(P, wp, rng.next() | 1, wp + rng.below(33), rng.below(100), 500)
                    } else {
                        Op::Expire(P)
                    };
                    match op {
                        Op::Send(p, n, t) => drop(m.send(p, n, t)),
                        Op::Ack(p, a, b, c, d, e) => drop(m.ack_word(p, a, b, c, d, e)),
                        _ => drop(m.expire_head(P)),
                    }
                    ops.push(op);
                }
                let clocks = check(&ops, 8, 100, 100);
                assert!(
                    clocks <= ops.len() + $LAT + 2,
                    "II=1: {clocks} clocks for {} ops",
                    ops.len()
                );
                let want = model_run(&ops);
                let freed = want.iter().filter(|r| r.3 != 0).count();
                let lost = want.iter().filter(|r| r.4 != 0).count();
                assert!(freed > 50 && lost > 50, "{freed} {lost}");
            }

            /// The documented latency: accepted at one clock edge, visible $LAT edges later.
            #[test]
            fn fixed_latency() {
                let mut u = <$T>::default();
                u.connect_all();
                simulate(&mut u, 200);
                u.out_ready.next = true;
                u.in_valid.next = true;
                u.in_op.next = TX_OP_SEND.into();
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

            /// The documented room lag: the SEND that fills path 0's window, accepted at one
            /// clock edge, clears its `room_mask` bit exactly the room lag's edges later.
            #[test]
            fn room_mask_lag() {
                let mut u = <$T>::default();
                u.connect_all();
                simulate(&mut u, 200);
                u.out_ready.next = true;
                u.in_op.next = TX_OP_SEND.into();
                let mut m = TxScoreboard::new(0);
                let mut accepted_edge = None;
                let mut edges = 0usize;
                while accepted_edge.is_none() {
                    u.in_valid.next = true;
                    assert!(simulate(&mut u, 200));
                    assert!(edges < 10_000, "the window never filled");
                    if u.in_ready.val() {
                        m.send(0, 0, 1000);
                        if !m.has_room(0) {
                            accepted_edge = Some(edges + 1);
                        }
                    }
                    tick(&mut u);
                    edges += 1;
                }
                u.in_valid.next = false;
                assert!(simulate(&mut u, 200));
                while u.room_mask.val().get_bit(0) {
                    tick(&mut u);
                    edges += 1;
                    assert!(edges < 10_000, "room_mask never cleared");
                }
                assert_eq!(edges - accepted_edge.unwrap(), $ROOM);
            }
        }
    };
}

suite!(pipelined, TxScoreboardHw, TX_LATENCY, TX_ROOM_LAG);
suite!(
    compact,
    mroce_hdl::tx_scoreboard_compact::TxScoreboardCompact,
    mroce_hdl::tx_scoreboard_compact::TXC_LATENCY,
    mroce_hdl::tx_scoreboard_compact::TXC_ROOM_LAG
);
