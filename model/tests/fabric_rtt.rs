//! The fabric's unloaded RTT bounds the RTT a shared rate hint's limit is computed from
//! (SPEC.md §8.5, `EndpointConfig::fabric_rtt_ns`): RTT samples taken behind the queue that the
//! receiver's senders build must not raise the limit that keeps that queue standing.

mod common;

use common::*;
use mroce_model::endpoint::EndpointConfig;
use mroce_model::transport::ConnId;
use mroce_model::wire;

/// The hinted limit of SPEC.md §8.5 for hint `mbps` and RTT `rtt_ns`.
fn hinted_limit(mbps: u64, rtt_ns: u64) -> u16 {
    let frame = u64::from(EndpointConfig::default().mtu) + wire::WRITE_HEADERS as u64;
    ((mbps * rtt_ns / 8000 * 2) / frame + 2) as u16
}

/// Connection limit and smallest RTT sample of `c` at A.
fn limit_and_min_rtt(l: &Link, c: ConnId) -> (u16, u32) {
    let conn = l.a.connection(c).expect("connection");
    let min_rtt = (0..conn.paths())
        .map(|p| conn.rtt(p))
        .filter(|r| r.valid)
        .map(|r| r.min)
        .min()
        .expect("an RTT sample");
    (conn.selector().conn_limit(), min_rtt)
}

/// A sends 1 MiB to B on each of `senders` connections at once, over a wire of 25 µs each way,
/// with `fabric_rtt_ns` configured at A; B counts a connection active for 10 ms, so after the
/// first frames every hint is its capacity / `senders`. The first connection's limit and
/// smallest RTT once all transfers are done.
fn limit_after_transfer(fabric_rtt_ns: u64, senders: usize) -> (u16, u32) {
    let cfg_a = EndpointConfig {
        fabric_rtt_ns,
        ..Default::default()
    };
    let cfg_b = EndpointConfig {
        hint_window_ns: 10_000_000,
        ..Default::default()
    };
    let mut l = Link::new(5, cfg_a, cfg_b, Box::new(|_, _, _| Fate::Deliver));
    l.delay = 25_000;
    let conns: Vec<ConnId> = (0..senders).map(|_| l.connect()).collect();
    let mut msgs = 0;
    for (i, &c) in conns.iter().enumerate() {
        let (src, dst) = regions(&mut l, 1 << 20, 5 + i as u64);
        msgs += post_writes(&mut l, c, src, dst, 1 << 20, 64 << 10, 1);
    }
    assert!(
        l.run_until(100_000_000, |l| l.completions_a().len() == msgs),
        "transfers incomplete"
    );
    limit_and_min_rtt(&l, conns[0])
}

#[test]
fn fabric_rtt_bounds_a_shared_hints_limit() {
    let capacity = u64::from(EndpointConfig::default().rx_capacity_mbps);
    // not configured: the measured minimum RTT (>= the 50 µs wire) sets the limit
    let (limit, min_rtt) = limit_after_transfer(0, 2);
    assert!(min_rtt >= 50_000, "min RTT {min_rtt}");
    assert_eq!(limit, hinted_limit(capacity / 2, u64::from(min_rtt)));
    // configured below the samples: it sets the limit
    let (limit, _) = limit_after_transfer(20_000, 2);
    assert_eq!(limit, hinted_limit(capacity / 2, 20_000));
    // configured above the samples: the samples still decide
    let (limit, min_rtt) = limit_after_transfer(1_000_000, 2);
    assert_eq!(limit, hinted_limit(capacity / 2, u64::from(min_rtt)));
}

#[test]
fn a_sole_sender_keeps_its_samples() {
    let capacity = u64::from(EndpointConfig::default().rx_capacity_mbps);
    let (limit, min_rtt) = limit_after_transfer(20_000, 1);
    assert_eq!(limit, hinted_limit(capacity, u64::from(min_rtt)));
}
