use mroce_hdl::proto::Proto;
use rust_hdl::prelude::*;

fn tick(u: &mut Proto) {
    u.clock.next = Clock { clk: true };
    assert!(simulate(u, 100));
    u.clock.next = Clock { clk: false };
    assert!(simulate(u, 100));
}

#[test]
fn proto() {
    let mut u = Proto::default();
    u.connect_all();
    let v = generate_verilog(&u);
    std::fs::write("/tmp/proto/proto.v", &v).unwrap();
    simulate(&mut u, 100);
    for i in 0..5u64 {
        u.addr.next = (i % 2).into();
        u.sel.next = (i % 3).into();
        u.inc.next = true;
        tick(&mut u);
        println!("{} {:?} {:?}", i, u.out.val(), u.flags.val());
    }
}
