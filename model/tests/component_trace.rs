//! The component trace is complete: replaying a connection's recorded operations on fresh
//! components reproduces every recorded result (the property the hardware replay relies on).
mod common;
use common::*;
use mroce_model::component_trace::{ComponentCalls, ComponentReplay, RxCall, SelCall, SoftwareReplay, TxCall};
use mroce_model::endpoint::EndpointConfig;

/// Replay `calls` on fresh software components; the number of operations checked.
fn replay(calls: &ComponentCalls) -> usize {
    match SoftwareReplay::default().replay(calls) {
        Ok(n) => n,
        Err(m) => panic!("{m}"),
    }
}

#[test]
fn lossy_transfer_trace_replays_exactly() {
    let cfg = EndpointConfig {
        trace_components: true,
        ..EndpointConfig::default()
    };
    let mut l = Link::new(21, cfg, cfg, random_loss(0.05));
    write_transfer(&mut l, 1 << 20, 21);
    let a = l.a.connection_mut(1).expect("connection 1 on A").take_component_calls();
    let b = l.b.connection_mut(1).expect("connection 1 on B").take_component_calls();
    // A sends and consumes ACKs; B tracks: both sides exercise all three blocks.
    assert!(a.tx.iter().any(|c| matches!(c, TxCall::AckWord { .. })));
    assert!(a.sel.iter().any(|c| matches!(c, SelCall::Credit { .. })));
    assert!(b.rx.iter().any(|c| matches!(c, RxCall::Packet { .. })));
    let (na, nb) = (replay(&a), replay(&b));
    assert!(na > 256 && nb > 256, "{na} {nb} operations");
    // The log was drained.
    assert_eq!(
        l.a.connection_mut(1).expect("conn").take_component_calls(),
        ComponentCalls::default()
    );
}

#[test]
fn untraced_connections_record_nothing() {
    let mut l = Link::simple(22, 0.0);
    write_transfer(&mut l, 256 << 10, 22);
    assert_eq!(
        l.a.connection_mut(1).expect("conn").take_component_calls(),
        ComponentCalls::default()
    );
}

#[test]
fn a_wrong_result_is_reported_with_its_index() {
    let cfg = EndpointConfig {
        trace_components: true,
        ..EndpointConfig::default()
    };
    let mut l = Link::new(23, cfg, cfg, random_loss(0.0));
    write_transfer(&mut l, 64 << 10, 23);
    let mut calls = l.a.connection_mut(1).expect("conn").take_component_calls();
    let i = calls
        .tx
        .iter()
        .position(|c| matches!(c, TxCall::Send { .. }))
        .expect("a send");
    if let TxCall::Send { psn, .. } = &mut calls.tx[i] {
        *psn = psn.map(|p| p + 1);
    }
    let m = SoftwareReplay::default().replay(&calls).expect_err("mismatch");
    assert_eq!((m.block, m.index), ("tx_scoreboard", i));
}
