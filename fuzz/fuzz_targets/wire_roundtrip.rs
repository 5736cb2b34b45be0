//! decode(encode(x)) == x for arbitrary packets.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mroce_model::wire::*;

#[derive(Debug, Arbitrary)]
enum Kind {
    Write(Mrh, Sdh, Rph),
    Send(Mrh, Sdh, u32),
    Probe(Mrh),
    Ack(Akh),
    Nak(Nkh),
    Connect(Cmh),
    ConnectAck(Cmh),
    Disconnect(Cmh),
    DisconnectAck(Cmh),
}

#[derive(Debug, Arbitrary)]
struct Input {
    addrs: FrameAddrs,
    bth: Bth,
    kind: Kind,
    payload: Vec<u8>,
}

fuzz_target!(|inp: Input| {
    let mut a = inp.addrs;
    a.dscp &= 0x3F;
    a.ecn &= 3;
    let mut bth = Bth::new(0, inp.bth.dest_qp, inp.bth.psn);
    bth.ack_req = inp.bth.ack_req;
    bth.se = inp.bth.se;
    let payload: &[u8] = if inp.payload.is_empty() {
        &[0]
    } else {
        &inp.payload[..inp.payload.len().min(4096)]
    };
    let fix = |mut m: Mrh| {
        m.flags &= 0xF;
        m
    };
    let fix_sdh = |mut s: Sdh| {
        s.offset = s.offset.min(u32::MAX - 8192);
        s.msg_len = s.offset + payload.len() as u32 + (s.msg_len % 4096);
        s
    };
    let fix_cmh = |mut c: Cmh| {
        c.src_conn &= 0xFF_FFFF;
        c
    };
    let pkt = match inp.kind {
        Kind::Write(m, s, r) => MrPacket::Write {
            mrh: fix(m),
            sdh: fix_sdh(s),
            rph: r,
            payload,
        },
        Kind::Send(m, s, rsn) => MrPacket::Send {
            mrh: fix(m),
            sdh: fix_sdh(s),
            rsn,
            payload,
        },
        Kind::Probe(m) => MrPacket::Probe { mrh: fix(m) },
        Kind::Ack(k) => MrPacket::Ack(k),
        Kind::Nak(k) => MrPacket::Nak(k),
        Kind::Connect(c) => MrPacket::Connect(fix_cmh(c)),
        Kind::ConnectAck(c) => MrPacket::ConnectAck(fix_cmh(c)),
        Kind::Disconnect(c) => MrPacket::Disconnect(fix_cmh(c)),
        Kind::DisconnectAck(c) => MrPacket::DisconnectAck(fix_cmh(c)),
    };
    let mut buf = vec![0u8; 8192];
    let n = encode_mroce(&mut buf, &a, &bth, &pkt).expect("encodes");
    let (f, p) = decode_mroce_frame(&buf[..n]).expect("decodes");
    assert_eq!(p, pkt);
    assert_eq!(f.addrs, a);
});
