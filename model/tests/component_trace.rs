//! The component trace is complete: replaying a connection's recorded operations on fresh
//! components reproduces every recorded result (the property the hardware replay relies on).
mod common;
use common::*;
use mroce_model::component_trace::{ComponentCalls, RxCall, SelCall, TxCall};
use mroce_model::endpoint::EndpointConfig;
use mroce_model::path_selector::PathSelector;
use mroce_model::rx_tracker::RxTracker;
use mroce_model::tx_scoreboard::TxScoreboard;

/// Replay `calls` on fresh components; return the number of operations checked.
fn replay(calls: &ComponentCalls) -> usize {
    let mut rt = RxTracker::default();
    for c in &calls.rx {
        match *c {
            RxCall::Init { isn } => rt = RxTracker::new(isn),
            RxCall::Packet { req, resp } => assert_eq!(rt.packet(&req), resp),
            RxCall::Flush { path, snap } => assert_eq!(rt.flush(path), snap),
        }
    }
    let mut sb = TxScoreboard::default();
    for c in &calls.tx {
        match *c {
            TxCall::Init { isn } => sb = TxScoreboard::new(isn),
            TxCall::Send { path, now, rto_ns, psn } => assert_eq!(sb.send(path, now, rto_ns), psn),
            TxCall::AckWord {
                path,
                word_psn,
                mask,
                lost_below,
                now,
                rto_ns,
                result,
            } => assert_eq!(sb.ack_word(path, word_psn, mask, lost_below, now, rto_ns), result),
            TxCall::ExpireHead { path, result } => assert_eq!(sb.expire_head(path), result),
            TxCall::Timer {
                path,
                now,
                rto_ns,
                result,
            } => assert_eq!(sb.timer(path, now, rto_ns), result),
            TxCall::ClearBackoff { path } => sb.clear_backoff(path),
        }
    }
    let mut sel = PathSelector::default();
    for c in &calls.sel {
        match *c {
            SelCall::Init { paths, planes } => sel = PathSelector::new(paths, planes),
            SelCall::Select { room_mask, path } => assert_eq!(sel.select(room_mask), path),
            SelCall::ChargeProbe { path } => sel.charge_probe(path),
            SelCall::Credit { credit, reroute } => assert_eq!(sel.credit(&credit), reroute),
            SelCall::SetHealth { path, health } => sel.set_health(path, health),
            SelCall::ClearInflight { path } => sel.clear_inflight(path),
            SelCall::RequestReroll { path, random } => sel.request_reroll(path, random),
            SelCall::Reroll { path, random } => sel.reroll(path, random),
            SelCall::SetPlaneUp { plane, up } => sel.set_plane_up(plane, up),
            SelCall::SetConnLimit { pkts } => sel.set_conn_limit(pkts),
        }
    }
    calls.rx.len() + calls.tx.len() + calls.sel.len()
}

#[test]
fn lossy_transfer_trace_replays_exactly() {
    let cfg = EndpointConfig {
        trace_components: true,
        ..EndpointConfig::default()
    };
    let mut l = Link::new(21, cfg.clone(), cfg, random_loss(0.05));
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
