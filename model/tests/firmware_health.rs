//! `EndpointConfig::firmware_path_health`: the connection leaves path and plane health to the
//! control core (RTOs, retransmission and probes stay), and `Endpoint::apply_control` applies
//! the control core's selector commands without entering the component trace.

mod common;

use common::*;
use mroce_model::component_trace::SelCall;
use mroce_model::connection::{ControlError, ControlOp};
use mroce_model::endpoint::{ControlApplyError, EndpointConfig};
use mroce_model::path_selector::PathHealth;
use mroce_model::transport::*;

fn fw_cfg() -> EndpointConfig {
    EndpointConfig {
        trace_components: true,
        firmware_path_health: true,
        ..EndpointConfig::default()
    }
}

/// Plane 1 drops everything once `dead` is set (shared with the injector).
fn plane_killer(dead: std::rc::Rc<std::cell::Cell<bool>>) -> Injector {
    Box::new(move |_, f, _| {
        // the plane is in the destination IPv4 address's third octet (NicAddr::with_planes)
        let plane = f.get(wire_dst_ip_plane_offset()).copied().unwrap_or(0);
        if dead.get() && plane == 1 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    })
}

fn wire_dst_ip_plane_offset() -> usize {
    // Ethernet (14) + IPv4 destination address at 16, plane octet at +2
    14 + 16 + 2
}

#[test]
fn rtos_do_not_change_health_under_firmware_control() {
    let dead = std::rc::Rc::new(std::cell::Cell::new(false));
    let mut l = Link::new(11, fw_cfg(), EndpointConfig::default(), plane_killer(dead.clone()));
    let c = l.connect();
    l.a.take_component_calls();
    let (src, dst) = regions(&mut l, 2 << 20, 3);
    let n = post_writes(&mut l, c, src, dst, 2 << 20, 256 * 1024, 2);
    dead.set(true);
    let t0 = l.now;
    l.run_until(t0 + 1_000_000, |_| false);
    let conn = l.a.connection(c).expect("connection");
    assert!(l.a.stats().rtos >= 3, "no RTO on the dead plane: {:?}", l.a.stats());
    for p in 0..conn.paths() {
        assert_eq!(
            conn.selector().path(p).health,
            PathHealth::Up,
            "path {p} changed by the connection"
        );
    }
    assert_eq!(conn.selector().planes_up(), 0b11);
    let calls = l.a.take_component_calls();
    let sel: Vec<&SelCall> = calls.iter().flat_map(|(_, k)| k.sel.iter()).collect();
    assert!(sel.iter().all(|s| !matches!(
        s,
        SelCall::SetHealth { .. } | SelCall::Reroll { .. } | SelCall::RequestReroll { .. } | SelCall::SetPlaneUp { .. }
    )));
    assert!(
        sel.iter().any(|s| matches!(s, SelCall::ChargeProbe { .. })),
        "no probe on the dead plane"
    );
    // what the control core would do: plane 1's paths down, the plane down; data flows on plane 0
    let now = l.now;
    for p in (1..l.a.connection(c).map_or(0, |k| k.paths())).step_by(2) {
        let op = ControlOp::SetHealth {
            path: p,
            health: PathHealth::Down,
        };
        l.a.apply_control(now, c, op).expect("apply");
    }
    l.a.apply_control(now, c, ControlOp::SetPlaneUp { plane: 1, up: false })
        .expect("apply");
    assert!(
        l.a.take_component_calls().iter().all(|(_, k)| k.sel.is_empty()),
        "control op traced"
    );
    let done = l.run_until(l.now + 200_000_000, |l| {
        l.completions_a().len() == n && l.completions_b().len() == n
    });
    assert!(done, "transfer incomplete: {:?}", l.a.stats());
    assert_eq!(l.a.memory().region(src).unwrap(), l.b.memory().region(dst).unwrap());
}

#[test]
fn control_ops_are_checked() {
    let mut l = Link::new(12, fw_cfg(), EndpointConfig::default(), random_loss(0.0));
    let c = l.connect();
    let now = l.now;
    let (paths, planes) = {
        let k = l.a.connection(c).expect("connection");
        (k.paths(), k.planes())
    };
    assert_eq!(
        l.a.apply_control(
            now,
            c,
            ControlOp::Init {
                paths: paths + 1,
                planes
            }
        ),
        Err(ControlApplyError::Refused(ControlError::InitMismatch {
            paths: paths + 1,
            planes
        }))
    );
    assert_eq!(
        l.a.apply_control(now, c, ControlOp::Reroll { path: 16, random: 1 }),
        Err(ControlApplyError::Refused(ControlError::BadPath(16)))
    );
    assert_eq!(
        l.a.apply_control(now, c, ControlOp::SetPlane { path: 0, plane: planes }),
        Err(ControlApplyError::Refused(ControlError::BadPlane(planes)))
    );
    assert_eq!(
        l.a.apply_control(now, 99, ControlOp::SetConnLimit { pkts: 4 }),
        Err(ControlApplyError::UnknownConnection(99))
    );
    l.a.take_component_calls();
    l.a.apply_control(now, c, ControlOp::SetPlane { path: 0, plane: 1 })
        .expect("set plane");
    l.a.apply_control(
        now,
        c,
        ControlOp::Reroll {
            path: 0,
            random: 0x1234,
        },
    )
    .expect("reroll");
    let k = l.a.connection(c).expect("connection");
    assert_eq!(k.selector().path(0).plane, 1);
    assert_eq!(
        k.selector().path(0).entropy,
        mroce_model::path_selector::entropy_from(0x1234)
    );
    assert!(l.a.take_component_calls().is_empty());
}
