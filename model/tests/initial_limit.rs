//! The connection limit before the first rate hint (SPEC.md §8.5): a new connection's first
//! flight is at most `EndpointConfig::initial_conn_limit` packets, not every path's initial
//! window, and the first hint replaces the limit.

mod common;
use std::cell::Cell;
use std::rc::Rc;

use common::*;
use mroce_model::endpoint::EndpointConfig;
use mroce_model::params::{CONN_LIMIT_INIT_PKTS, CWND_INIT_PKTS, PATHS};
use mroce_model::wire::{self, MrPacket};

/// Data frames A sent before B sent its first ACK, and whether the transfer completed.
fn first_flight(initial: u16) -> (u32, u16, bool) {
    let before_ack = Rc::new(Cell::new(0u32));
    let acked = Rc::new(Cell::new(false));
    let (n, a) = (before_ack.clone(), acked.clone());
    let watch: Injector = Box::new(move |to_b, f, _| {
        match wire::decode_mroce_frame(f).map(|x| x.1) {
            Ok(MrPacket::Write { .. } | MrPacket::Send { .. }) if to_b && !a.get() => n.set(n.get() + 1),
            Ok(MrPacket::Ack(_)) if !to_b => a.set(true),
            _ => {}
        }
        Fate::Deliver
    });
    let cfg = EndpointConfig {
        initial_conn_limit: initial,
        ..Default::default()
    };
    let mut l = Link::new(3, cfg, EndpointConfig::default(), watch);
    // a long wire, so that the whole first flight leaves before any ACK can come back
    l.delay = 50_000;
    let c = l.connect();
    let limit = l.a.connection(c).expect("connection").selector().conn_limit();
    let bytes = 4 << 20;
    let (src, dst) = regions(&mut l, bytes, 3);
    let msgs = post_writes(&mut l, c, src, dst, bytes, 64 << 10, 1);
    let done = l.run_until(500_000_000, |l| l.completions_a().len() == msgs);
    (before_ack.get(), limit, done)
}

#[test]
fn first_flight_is_capped_by_the_initial_limit() {
    let windows = PATHS as u32 * CWND_INIT_PKTS;
    let (sent, limit, done) = first_flight(CONN_LIMIT_INIT_PKTS);
    assert!(done, "transfer incomplete");
    assert_eq!(limit, CONN_LIMIT_INIT_PKTS);
    assert_eq!(sent, windows.min(u32::from(CONN_LIMIT_INIT_PKTS)), "first flight");

    // 65535: the paths' initial windows decide, as before the limit existed
    let (sent, limit, done) = first_flight(u16::MAX);
    assert!(done, "transfer incomplete without a limit");
    assert_eq!(limit, u16::MAX);
    assert_eq!(sent, windows, "first flight without a limit");

    // a small limit holds, and the first hint lifts it (the transfer still completes)
    let (sent, limit, done) = first_flight(5);
    assert!(done, "transfer incomplete under a limit of 5");
    assert_eq!((sent, limit), (5, 5));
}
