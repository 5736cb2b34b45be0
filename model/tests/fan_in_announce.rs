//! Fan-in announcements (SPEC.md §8.5, `EndpointConfig::announce_fan_in`): a receiver tells its
//! established peers its capacity over its connections, rounded up to a power of two, whenever
//! that changes; a sender with `fabric_rtt_ns` and no rate hint yet sizes its first flight
//! from it.

mod common;

use common::*;
use mroce_model::endpoint::EndpointConfig;
use mroce_model::params::CONN_LIMIT_INIT_PKTS;
use mroce_model::transport::{ConnId, Transport};
use mroce_model::wire;

/// The hinted limit of SPEC.md §8.5 for hint `mbps` and RTT `rtt_ns`.
fn hinted_limit(mbps: u64, rtt_ns: u64) -> u16 {
    let frame = u64::from(EndpointConfig::default().mtu) + wire::WRITE_HEADERS as u64;
    ((mbps * rtt_ns / 8000 * 2) / frame + 2) as u16
}

const FABRIC_RTT_NS: u64 = 10_000;

/// A opens `n` connections to B, B announcing (`announce`) and A configured with the fabric
/// RTT (`fabric_rtt`); the link then runs 50 µs more so that the last announcements land.
fn open(n: usize, announce: bool, fabric_rtt: bool) -> (Link, Vec<ConnId>) {
    let cfg_a = EndpointConfig {
        fabric_rtt_ns: if fabric_rtt { FABRIC_RTT_NS } else { 0 },
        ..Default::default()
    };
    let cfg_b = EndpointConfig {
        announce_fan_in: announce,
        ..Default::default()
    };
    let mut l = Link::new(11, cfg_a, cfg_b, Box::new(|_, _, _| Fate::Deliver));
    let conns: Vec<ConnId> = (0..n).map(|_| l.connect()).collect();
    let t = l.now + 50_000;
    l.run_until(t, |_| false);
    (l, conns)
}

fn counter(ep: &dyn Transport, name: &str) -> u64 {
    ep.counters()
        .into_iter()
        .find(|&(n, _)| n == name)
        .map(|(_, v)| v)
        .expect("counter")
}

fn limit(l: &Link, c: ConnId) -> u16 {
    l.a.connection(c).expect("connection").selector().conn_limit()
}

#[test]
fn announcements_size_the_first_flight_to_the_fan_in() {
    let (l, conns) = open(6, true, true);
    // fan-ins 1, 2, 4 (3rd), 8 (5th) go to every connection, the 4th and 6th get the
    // unchanged one: 1 + 2 + 3 + 1 + 5 + 1 announcements, all applied
    assert_eq!(counter(&l.b, "tx_announces"), 13);
    assert_eq!(counter(&l.a, "announces_applied"), 13);
    assert_eq!(counter(&l.a, "forged_acks"), 0);
    let capacity = u64::from(EndpointConfig::default().rx_capacity_mbps);
    let want = hinted_limit(capacity / 8, FABRIC_RTT_NS);
    assert!(want < CONN_LIMIT_INIT_PKTS, "the test must cut the initial limit");
    for &c in &conns {
        assert_eq!(limit(&l, c), want, "connection {c}");
    }
    // an announcement acknowledges nothing: no ACK counted as sent
    assert_eq!(counter(&l.b, "tx_acks"), 0);
}

#[test]
fn a_fan_in_of_one_keeps_the_initial_limit() {
    let (l, conns) = open(1, true, true);
    assert_eq!(counter(&l.a, "announces_applied"), 1);
    assert_eq!(limit(&l, conns[0]), CONN_LIMIT_INIT_PKTS);
}

#[test]
fn without_a_fabric_rtt_or_announcements_nothing_changes() {
    let (l, conns) = open(4, true, false);
    assert_eq!(counter(&l.b, "tx_announces"), 1 + 2 + 3 + 1);
    assert_eq!(counter(&l.a, "announces_applied"), 0);
    assert!(conns.iter().all(|&c| limit(&l, c) == CONN_LIMIT_INIT_PKTS));
    let (l, conns) = open(4, false, true);
    assert_eq!(counter(&l.b, "tx_announces"), 0);
    assert!(conns.iter().all(|&c| limit(&l, c) == CONN_LIMIT_INIT_PKTS));
}

#[test]
fn rate_hints_take_over_and_later_announcements_are_ignored() {
    let (mut l, conns) = open(4, true, true);
    let mut msgs = 0;
    for (i, &c) in conns.iter().enumerate() {
        let (src, dst) = regions(&mut l, 256 << 10, 20 + i as u64);
        msgs += post_writes(&mut l, c, src, dst, 256 << 10, 64 << 10, 1);
    }
    assert!(
        l.run_until(100_000_000, |l| l.completions_a().len() == msgs),
        "transfers incomplete"
    );
    // let the last ACKs (trailing probes' answers, whose hints may still move a limit) land
    let quiet = l.now + 50_000;
    l.run_until(quiet, |_| false);
    let applied = counter(&l.a, "announces_applied");
    // every connection now has a hint; a fifth connection changes the fan-in to 8, and the
    // four announcements that go to connections with a hint change nothing
    let before: Vec<u16> = conns.iter().map(|&c| limit(&l, c)).collect();
    let fifth = l.connect();
    let t = l.now + 50_000;
    l.run_until(t, |_| false);
    assert_eq!(
        counter(&l.a, "announces_applied"),
        applied + 1,
        "only the new connection applies it"
    );
    assert_eq!(conns.iter().map(|&c| limit(&l, c)).collect::<Vec<_>>(), before);
    let capacity = u64::from(EndpointConfig::default().rx_capacity_mbps);
    assert_eq!(limit(&l, fifth), hinted_limit(capacity / 8, FABRIC_RTT_NS));
    // every byte arrived
    assert_eq!(counter(&l.b, "bytes_placed"), 4 * (256 << 10));
}

#[test]
fn a_forged_announcement_is_dropped() {
    let (mut l, conns) = open(2, true, true);
    let c = conns[0];
    let before = limit(&l, c);
    let forged = counter(&l.a, "forged_acks");
    // an announcement of a tenth of the share, its base misaligned with A's path 0
    let conn = l.a.connection(c).expect("connection");
    let una = conn.scoreboard().path(0).una;
    let akh = wire::Akh {
        path: 0,
        flags: wire::AKH_FLAG_ANNOUNCE,
        base: una.wrapping_add(5),
        cum: una.wrapping_add(5),
        rate_hint_mbps: 1_000,
        ..Default::default()
    };
    let frame = ack_frame(c, &akh);
    l.inject_frame(false, 0, frame);
    let t = l.now + 10_000;
    l.run_until(t, |_| false);
    assert_eq!(counter(&l.a, "forged_acks"), forged + 1);
    assert_eq!(limit(&l, c), before);
}

/// An ACK frame from B to A's connection `c`.
fn ack_frame(c: ConnId, akh: &wire::Akh) -> Vec<u8> {
    let addrs = wire::FrameAddrs {
        dst_mac: addr_a().mac,
        src_mac: addr_b().mac,
        src_ip: addr_b().ips[0],
        dst_ip: addr_a().ips[0],
        src_port: 0xC000,
        dscp: 48,
        ecn: wire::ecn::ECT0,
        ttl: 64,
    };
    let bth = wire::Bth::new(0, c, 0);
    let mut buf = vec![0u8; 256];
    let len = wire::encode_mroce(&mut buf, &addrs, &bth, &wire::MrPacket::Ack(*akh)).expect("encode");
    buf.truncate(len);
    buf
}
