//! Wire-format basics: round trip of a WRITE with ICRC and ECN masking, and every
//! truncation of an ACK frame is an error.
// The wire format of SPEC.md is the default hardware configuration's (SPEC.md §7.1.1).
#![cfg(not(any(feature = "config-reduced", feature = "config-small")))]

use mroce_model::wire::*;

fn addrs() -> FrameAddrs {
    FrameAddrs {
        dst_mac: [2, 0, 0, 0, 0, 2],
        src_mac: [2, 0, 0, 0, 0, 1],
        src_ip: [10, 0, 0, 1],
        dst_ip: [10, 0, 0, 2],
        src_port: 0xC123,
        dscp: 26,
        ecn: ecn::ECT0,
        ttl: 64,
    }
}

#[test]
fn write_roundtrip_and_icrc() {
    let payload: [u8; 37] = core::array::from_fn(|i| i as u8);
    let pkt = MrPacket::Write {
        mrh: Mrh {
            flags: MRH_FLAG_RETX,
            path: 3,
            plane: 1,
            psn: 0xFFFF_FFFE,
            floor: 0xFFFF_FFE0,
            ts: 1234,
        },
        sdh: Sdh {
            stream: 7,
            msg_seq: 9,
            offset: 4096,
            msg_len: 8192,
        },
        rph: Rph {
            va: 0x1000_0000_2000,
            rkey: 0xABCD_0102,
        },
        payload: &payload,
    };
    let mut buf = [0u8; 256];
    let bth = Bth::new(0, 0x12_3456, 0xFFFF_FFFE);
    let n = encode_mroce(&mut buf, &addrs(), &bth, &pkt).unwrap();
    assert_eq!(n % 4, 2); // 14-byte Ethernet + 4-byte aligned rest
    let (f, p) = decode_mroce_frame(&buf[..n]).unwrap();
    assert_eq!(p, pkt);
    assert_eq!(f.bth.dest_qp, 0x12_3456);
    assert_eq!(f.bth.pad, 3);
    assert_eq!(f.addrs, addrs());
    // ECN is masked from the ICRC: a switch may mark CE without breaking it.
    set_ecn(&mut buf[..n], ecn::CE).unwrap();
    let (f2, _) = decode_mroce_frame(&buf[..n]).unwrap();
    assert_eq!(f2.addrs.ecn, ecn::CE);
    // Any other bit flip in the transport part is caught.
    buf[BTH_OFFSET + 20] ^= 1;
    assert!(matches!(decode_frame(&buf[..n]), Err(WireError::BadIcrc { .. })));
    // Resealed, the changed frame decodes, with the change (the top byte of the MRH's floor).
    reseal(&mut buf[..n]).unwrap();
    let (_, p3) = decode_mroce_frame(&buf[..n]).unwrap();
    assert!(matches!(p3, MrPacket::Write { mrh, .. } if mrh.floor == 0xFEFF_FFE0));
    // So does a change of an IPv4 header field that the checksum covers (here the TTL).
    buf[ETH_LEN + 8] = 3;
    assert!(decode_frame(&buf[..n]).is_err());
    reseal(&mut buf[..n]).unwrap();
    assert_eq!(decode_frame(&buf[..n]).unwrap().addrs.ttl, 3);
    // Too short to hold the envelope: an error, not a panic.
    assert!(reseal(&mut buf[..FRAME_OVERHEAD - 1]).is_err());
}

#[test]
fn every_truncation_is_an_error() {
    let pkt = MrPacket::Ack(Akh {
        path: 1,
        base: 32,
        cum: 40,
        sack: [0xFF; 8],
        ..Default::default()
    });
    let mut buf = [0u8; 256];
    let n = encode_mroce(&mut buf, &addrs(), &Bth::new(0, 1, 0), &pkt).unwrap();
    for cut in 0..n {
        assert!(decode_mroce_frame(&buf[..cut]).is_err(), "cut at {cut}");
    }
}
