//! ECN re-route policies (SPEC.md §8.5) on a two-NIC link where a quarter of the sender's paths
//! are always marked CE, so their ECN estimates stay far above the other paths'.

mod common;
use common::*;
use mroce_model::endpoint::{EcnReroute, EndpointConfig};
use mroce_model::params::PATHS;
use mroce_model::transport::Transport;
use mroce_model::wire::{self, MrPacket};

/// Paths whose data is always marked: a quarter (one in the small configuration's four).
const HOT: u8 = (PATHS / 4) as u8;

/// The MRH path of a data frame.
fn data_path(f: &[u8]) -> Option<u8> {
    match wire::decode_mroce_frame(f).ok()?.1 {
        MrPacket::Write { mrh, .. } | MrPacket::Send { mrh, .. } => Some(mrh.path),
        _ => None,
    }
}

/// Move `bytes` from A to B under `policy`: the path moves for ECN and the most paths of A's
/// connection that drained for a move at once.
fn run(policy: EcnReroute, bytes: usize) -> (u64, usize) {
    let mark: Injector = Box::new(|to_b, f, _| {
        if to_b && data_path(f).is_some_and(|p| p < HOT) {
            Fate::DeliverCe
        } else {
            Fate::Deliver
        }
    });
    let cfg = EndpointConfig {
        ecn_reroute: policy,
        ..Default::default()
    };
    let mut l = Link::new(9, cfg, EndpointConfig::default(), mark);
    let c = l.connect();
    let (src, dst) = regions(&mut l, bytes, 9);
    let n = post_writes(&mut l, c, src, dst, bytes, 64 << 10, 1);
    let mut most = 0;
    while l.now < 200_000_000 && l.completions_a().len() < n {
        l.step();
        let conn = l.a.connection(c).expect("connection");
        let sel = conn.selector();
        let draining = (0..conn.paths()).filter(|&p| sel.path(p).reroll_pending).count();
        most = most.max(draining);
    }
    assert_eq!(l.completions_a().len(), n, "{policy:?}: transfer incomplete");
    let reroutes =
        l.a.counters()
            .into_iter()
            .find(|(k, _)| *k == "ecn_reroutes")
            .map_or(0, |(_, v)| v);
    (reroutes, most)
}

#[test]
fn one_moves_a_single_path_at_a_time_and_every_moves_several() {
    let (every, every_most) = run(EcnReroute::Every, 4 << 20);
    let (one, one_most) = run(EcnReroute::One, 4 << 20);
    let (off, off_most) = run(EcnReroute::Off, 4 << 20);
    // with one hot path (the small configuration) only one can drain at a time
    assert!(
        every_most >= 2.min(usize::from(HOT)),
        "every: at most {every_most} paths drained at once"
    );
    assert!(one > 0, "one: no path moved");
    assert_eq!(one_most, 1, "one: {one_most} paths drained at once");
    if HOT >= 2 {
        assert!(every > one, "every {every} moves, one {one}");
    } else {
        // a single hot path never waits for another: the two policies are the same
        assert_eq!(every, one);
    }
    assert_eq!((off, off_most), (0, 0));
}
