//! Tail hedge (SPEC.md §8.3): a retransmission sent with nothing else queued is followed by
//! a second copy on another path, so that losing the retransmission too does not leave the
//! message waiting for a probe's answer or an RTO.

mod common;
use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use mroce_model::endpoint::EndpointConfig;
use mroce_model::transport::{Status, Transport};
use mroce_model::wire::{self, MrPacket};

const LEN: usize = 256 << 10;
const MTU: usize = 4096;

/// One transmission of the message's last chunk: (retransmission, path).
type Copy = (bool, u8);

struct Outcome {
    copies: Vec<Copy>,
    done_at: Option<u64>,
    tail_hedges: u64,
    retransmits: u64,
    intact: bool,
}

/// One 256 KiB WRITE whose last chunk loses its first transmission and its first
/// retransmission on the wire.
fn run(hedge: bool) -> Outcome {
    let copies: Rc<RefCell<Vec<Copy>>> = Rc::default();
    let log = copies.clone();
    let inject: Injector = Box::new(move |to_b, f, _| {
        if !to_b {
            return Fate::Deliver;
        }
        let Ok((_, MrPacket::Write { mrh, sdh, .. })) = wire::decode_mroce_frame(f) else {
            return Fate::Deliver;
        };
        if sdh.offset as usize != LEN - MTU {
            return Fate::Deliver;
        }
        let retx = mrh.flags & wire::MRH_FLAG_RETX != 0;
        let mut v = log.borrow_mut();
        v.push((retx, mrh.path));
        // the first copy and the first retransmission are lost
        if v.len() <= 2 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    let cfg = EndpointConfig {
        tail_hedge: hedge,
        ..Default::default()
    };
    let mut l = Link::new(11, cfg, EndpointConfig::default(), inject);
    let c = l.connect();
    let (src, dst) = regions(&mut l, LEN, 11);
    let n = post_writes(&mut l, c, src, dst, LEN, LEN, 1);
    let start = l.now;
    let done = l.run_until(start + 100_000_000, |l| l.completions_a().len() == n);
    let ok = l.completions_a().iter().all(|c| c.status == Status::Ok);
    let intact = ok && l.a.memory().region(src) == l.b.memory().region(dst);
    let s = l.a.stats();
    let copies = copies.borrow().clone();
    Outcome {
        copies,
        done_at: done.then(|| l.now - start),
        tail_hedges: s.tail_hedges,
        retransmits: s.retransmits,
        intact,
    }
}

#[test]
fn a_lost_tail_retransmission_is_covered_by_its_copy() {
    let on = run(true);
    let off = run(false);
    assert!(on.intact && off.intact, "data intact both ways");
    let (Some(t_on), Some(t_off)) = (on.done_at, off.done_at) else {
        panic!(
            "transfer incomplete: hedged {:?}, unhedged {:?}",
            on.done_at, off.done_at
        );
    };

    // with the hedge: first copy, retransmission, and its copy on another path, which arrives
    assert_eq!(
        on.copies.len(),
        3,
        "hedged transmissions of the last chunk: {:?}",
        on.copies
    );
    let (first, retx, copy) = (on.copies[0], on.copies[1], on.copies[2]);
    assert!(!first.0 && retx.0 && copy.0, "retransmission flags: {:?}", on.copies);
    assert_ne!(retx.1, copy.1, "the copy goes on another path");
    assert!(on.tail_hedges >= 1, "tail_hedges counted");

    // without it: no copies, and the lost retransmission needs another one
    assert_eq!(off.tail_hedges, 0);
    assert!(off.copies.len() >= 3, "unhedged transmissions: {:?}", off.copies);
    assert!(off.retransmits >= 2, "unhedged retransmissions: {}", off.retransmits);

    // the copy spares the wait for the lost retransmission to be found
    assert!(t_on < t_off, "hedged done at {t_on} ns, unhedged at {t_off} ns");
}

#[test]
fn hedging_never_loses_or_corrupts_data_under_random_loss() {
    for seed in 1..=6 {
        let cfg = EndpointConfig::default();
        assert!(cfg.tail_hedge, "on by default");
        let mut l = Link::new(seed, cfg, EndpointConfig::default(), random_loss(0.15));
        write_transfer(&mut l, 1 << 20, seed);
        let s = l.a.stats();
        assert!(s.retransmits > 0, "seed {seed}: the loss caused retransmissions");
        assert_eq!(s.local_access_errors, 0);
    }
}
