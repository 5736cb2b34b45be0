//! The NIC's transmit order across connections (SPEC.md §8.3, "Endpoint transmit order"):
//! under `oldest` the connection whose oldest unsent message was posted first is served first,
//! and a later one only fills the gaps; under `rr` the two take turns. Either way every byte
//! arrives intact.

mod common;
use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use mroce_model::endpoint::EndpointConfig;
use mroce_model::params::{CWND_INIT_PKTS, PATHS};
use mroce_model::transport::{ConnId, Event, LocalBuf, RemoteBuf, Status, Transport};
use mroce_model::tx_order::TxOrder;
use mroce_model::wire::{self, MrPacket};

const LEN: usize = 256 << 10;
/// Frames after the second post that the tests inspect: a quarter of a connection's first
/// flight (32 in the default configuration, 16 in the reduced one, 8 in the small one).
const HEAD: usize = PATHS * CWND_INIT_PKTS as usize / 4;

struct Outcome {
    /// B's connection id of every data frame A sent after the second post, in order.
    after_second_post: Vec<u32>,
    /// B's ids of the two connections, in posting order.
    b_ids: [u32; 2],
    /// Where each message's successful completion falls among A's events.
    done: [Option<usize>; 2],
    intact: bool,
}

fn post(l: &mut Link, c: ConnId, src: mroce_model::memory::MrKey, dst: mroce_model::memory::MrKey, wr_id: u64) {
    l.a.post_write(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: LEN as u32,
        },
        RemoteBuf {
            va: dst.va,
            rkey: dst.rkey,
        },
        wr_id,
    )
    .unwrap();
}

/// Two connections from A to B; the first posts 256 KiB, and once it has sent a few packets
/// the second posts 256 KiB too.
fn run(order: TxOrder) -> Outcome {
    let sent: Rc<RefCell<Vec<u32>>> = Rc::default();
    let log = sent.clone();
    let inject: Injector = Box::new(move |to_b, f, _| {
        if to_b {
            if let Ok((fr, MrPacket::Write { .. })) = wire::decode_mroce_frame(f) {
                log.borrow_mut().push(fr.bth.dest_qp);
            }
        }
        Fate::Deliver
    });
    let cfg = EndpointConfig {
        tx_order: order,
        ..Default::default()
    };
    let mut l = Link::new(5, cfg, EndpointConfig::default(), inject);
    let c1 = l.connect();
    let c2 = l.connect();
    let (src1, dst1) = regions(&mut l, LEN, 1);
    let (src2, dst2) = regions(&mut l, LEN, 2);
    let start = l.now;
    post(&mut l, c1, src1, dst1, 1);
    l.run_until(start + 1_000_000, |_| sent.borrow().len() >= 4);
    let b1 = sent.borrow()[0];
    let before = sent.borrow().len();
    post(&mut l, c2, src2, dst2, 2);
    l.run_until(start + 100_000_000, |l| {
        l.completions_a().iter().filter(|c| c.status == Status::Ok).count() == 2
    });
    // the position of each message's completion among A's events
    let done_at = |wr: u64| {
        l.events_a
            .iter()
            .position(|e| matches!(e, Event::Completion(c) if c.wr_id == wr && c.status == Status::Ok))
    };
    let done = [done_at(1), done_at(2)];
    let after: Vec<u32> = sent.borrow()[before..].to_vec();
    let b2 = after.iter().copied().find(|&q| q != b1).unwrap_or(0);
    let intact = l.a.memory().region(src1) == l.b.memory().region(dst1)
        && l.a.memory().region(src2) == l.b.memory().region(dst2);
    Outcome {
        after_second_post: after,
        b_ids: [b1, b2],
        done,
        intact,
    }
}

#[test]
fn oldest_first_serves_the_oldest_message_first() {
    assert_eq!(EndpointConfig::default().tx_order, TxOrder::OldestFirst);
    let o = run(TxOrder::OldestFirst);
    assert!(o.intact, "data intact");
    let [b1, b2] = o.b_ids;
    assert_ne!(b1, b2, "both connections sent");
    // the first connection keeps the port while it has window: well within its first flight
    // (PATHS x CWND_INIT_PKTS), its next packets come first
    let head = &o.after_second_post[..HEAD];
    assert!(
        head.iter().all(|&q| q == b1),
        "first {HEAD} frames after the second post: {head:?}"
    );
    let (Some(d1), Some(d2)) = (o.done[0], o.done[1]) else {
        panic!("incomplete: {:?}", o.done)
    };
    assert!(d1 < d2, "the older message completes first");
}

#[test]
fn round_robin_alternates_between_busy_connections() {
    let o = run(TxOrder::RoundRobin);
    assert!(o.intact, "data intact");
    let [b1, b2] = o.b_ids;
    let head = &o.after_second_post[..HEAD];
    let second = head.iter().filter(|&&q| q == b2).count();
    assert!(
        (HEAD * 3 / 8..=HEAD * 5 / 8).contains(&second),
        "round robin shares the first {HEAD} frames: {head:?} ({b1}, {b2})"
    );
    assert!(o.done.iter().all(Option::is_some), "both complete: {:?}", o.done);
}

/// The order is over messages, not connections: a connection that keeps posting does not
/// starve one that posted in between. A posts m1; once m1 is under way B posts m2; then A
/// posts m3. Oldest-first serves m1, m2, m3 in that order, so m2 completes before m3.
#[test]
fn a_connection_that_keeps_posting_does_not_starve_a_later_one() {
    let mut l = Link::new(
        9,
        EndpointConfig::default(),
        EndpointConfig::default(),
        Box::new(|_, _, _| Fate::Deliver),
    );
    let a = l.connect();
    let b = l.connect();
    let regions: Vec<_> = (1..=3).map(|i| regions(&mut l, LEN, i)).collect();
    let start = l.now;
    post(&mut l, a, regions[0].0, regions[0].1, 1);
    for _ in 0..4 {
        l.step();
    }
    post(&mut l, b, regions[1].0, regions[1].1, 2);
    for _ in 0..4 {
        l.step();
    }
    post(&mut l, a, regions[2].0, regions[2].1, 3);
    assert!(
        l.run_until(start + 100_000_000, |l| {
            l.completions_a().iter().filter(|c| c.status == Status::Ok).count() == 3
        }),
        "incomplete"
    );
    let done_at = |wr: u64| {
        l.events_a
            .iter()
            .position(|e| matches!(e, Event::Completion(c) if c.wr_id == wr && c.status == Status::Ok))
            .unwrap()
    };
    assert!(
        done_at(2) < done_at(3),
        "m2 (B) completes before m3 (A, posted after it)"
    );
    for (src, dst) in regions {
        assert_eq!(l.a.memory().region(src), l.b.memory().region(dst), "data intact");
    }
}
