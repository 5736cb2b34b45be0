//! Golden frames: the hex dumps of SPEC.md §5.11 are produced by the model's encoder.
//!
//! Three guards keep SPEC.md and the code from drifting apart:
//! - each fixed frame below is encoded with `mroce_model::wire` and must equal its hex
//!   constant (which is pasted verbatim into SPEC.md);
//! - every fenced ```hex block of SPEC.md preceded by `<!-- golden:NAME -->` is parsed and
//!   must equal the encoder output for NAME (and every NAME must appear);
//! - the ICRC of each golden frame is recomputed from the definition of SPEC.md §3.7 with
//!   an independent bitwise CRC-32, and the §7 parameter table and the §9 counter table are
//!   checked against the constants and the `Counters` struct.
// The wire format of SPEC.md is the default hardware configuration's (SPEC.md §7.1.1).
#![cfg(not(any(feature = "config-reduced", feature = "config-small")))]

use mroce_model::wire::{self, ecn, Akh, Bth, Cmh, FrameAddrs, MrPacket, Mrh, Rph, Sdh};

/// SPEC.md §5.11.1: a single-chunk RDMA WRITE of the 6 bytes "mroce!".
const WRITE_HEX: &str = "
0000  02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 6a
0010  00 60 00 00 40 00 40 11 24 21 0a 00 01 01 0a 00
0020  01 02 c1 23 12 b7 00 4c 00 00 c0 a0 ff ff 00 00
0030  04 56 80 ab cd ef 10 03 01 00 89 ab cd ef 89 ab
0040  cd e0 00 01 e2 40 00 07 00 00 00 00 00 05 00 00
0050  00 00 00 00 00 06 00 00 10 00 00 00 00 40 00 00
0060  01 a7 6d 72 6f 63 65 21 00 00 12 bc 6f 55
";

/// SPEC.md §5.11.2: the ACK of path 3 reporting a hole at PSN 0x89ABCDEE.
const ACK_HEX: &str = "
0000  02 00 00 00 00 01 02 00 00 00 00 02 08 00 45 c2
0010  00 64 00 00 40 00 40 11 23 c5 0a 00 01 02 0a 00
0020  01 01 c1 23 12 b7 00 50 00 00 c2 00 ff ff 00 00
0030  01 23 00 00 00 00 03 00 00 01 00 04 00 00 89 ab
0040  cd e0 89 ab cd ee 00 01 e2 40 00 06 1a 80 00 00
0050  bf ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0060  00 00 00 00 00 00 00 00 00 00 00 00 00 00 02 6d
0070  d8 ef
";

/// SPEC.md §5.11.3: the CONNECT that opened the connection.
const CONNECT_HEX: &str = "
0000  02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 c2
0010  00 48 00 00 40 00 40 11 25 e1 0a 00 00 01 0a 00
0020  00 02 c0 00 12 b7 00 34 00 00 c8 00 ff ff 00 00
0030  00 00 00 00 00 00 00 00 01 23 89 ab cd 00 10 02
0040  10 00 04 00 00 00 00 06 1a 80 01 23 45 67 89 ab
0050  cd ef 08 c4 30 1c
";

/// SPEC.md §5.11.4: a single-chunk SEND of "hello", the fourth SEND of its stream (RSN 3).
const SEND_HEX: &str = "
0000  02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 6a
0010  00 58 00 00 40 00 40 11 26 29 0a 00 00 01 0a 00
0020  00 02 c1 24 12 b7 00 44 00 00 c1 b0 ff ff 00 00
0030  04 56 80 ab cd 11 10 04 00 00 89 ab cd 11 89 ab
0040  cd 00 00 01 e2 6c 00 07 00 00 00 00 00 06 00 00
0050  00 00 00 00 00 05 00 00 00 03 68 65 6c 6c 6f 00
0060  00 00 4c 6e 73 28
";

const A_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const B_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// Plane-0 addresses (plane k is 10.0.k.x, as `NicAddr::with_planes` builds them).
const A_IP: [u8; 4] = [10, 0, 0, 1];
const B_IP: [u8; 4] = [10, 0, 0, 2];
/// Plane-1 addresses: path 3 is on plane 1.
const A_IP1: [u8; 4] = [10, 0, 1, 1];
const B_IP1: [u8; 4] = [10, 0, 1, 2];

fn write_packet() -> (FrameAddrs, Bth, MrPacket<'static>) {
    let addrs = FrameAddrs {
        dst_mac: B_MAC,
        src_mac: A_MAC,
        src_ip: A_IP1,
        dst_ip: B_IP1,
        src_port: 0xC123,
        dscp: 26,
        ecn: ecn::ECT0,
        ttl: 64,
    };
    let mrh = Mrh {
        flags: 0,
        path: 3,
        plane: 1,
        psn: 0x89AB_CDEF,
        floor: 0x89AB_CDE0,
        ts: 123_456,
    };
    let sdh = Sdh {
        stream: 7,
        msg_seq: 5,
        offset: 0,
        msg_len: 6,
    };
    let rph = Rph {
        va: 0x0000_1000_0000_0040,
        rkey: 0x0000_01A7,
    };
    let mut bth = Bth::new(0, 0x00_0456, mrh.psn);
    bth.ack_req = true; // last chunk of its message
    bth.se = true; // last chunk of its message
    (
        addrs,
        bth,
        MrPacket::Write {
            mrh,
            sdh,
            rph,
            payload: b"mroce!",
        },
    )
}

fn ack_packet() -> (FrameAddrs, Bth, MrPacket<'static>) {
    let addrs = FrameAddrs {
        dst_mac: A_MAC,
        src_mac: B_MAC,
        src_ip: B_IP1,
        dst_ip: A_IP1,
        src_port: 0xC123,
        dscp: 48,
        ecn: ecn::ECT0,
        ttl: 64,
    };
    let akh = Akh {
        path: 3,
        flags: 0,
        ecn_count: 1,
        pkt_count: 4,
        base: 0x89AB_CDE0,
        cum: 0x89AB_CDEE,
        ts_echo: 123_456,
        rate_hint_mbps: 400_000,
        sack: [0x0000_BFFF, 0, 0, 0, 0, 0, 0, 0],
    };
    (addrs, Bth::new(0, 0x00_0123, 0), MrPacket::Ack(akh))
}

fn connect_packet() -> (FrameAddrs, Bth, MrPacket<'static>) {
    let addrs = FrameAddrs {
        dst_mac: B_MAC,
        src_mac: A_MAC,
        src_ip: A_IP,
        dst_ip: B_IP,
        src_port: 0xC000,
        dscp: 48,
        ecn: ecn::ECT0,
        ttl: 64,
    };
    let cmh = Cmh {
        src_conn: 0x00_0123,
        isn: 0x89AB_CD00,
        paths: 16,
        planes: 2,
        mtu: 4096,
        streams: 1024,
        reason: 0,
        rx_capacity_mbps: 400_000,
        nonce: 0x0123_4567_89AB_CDEF,
    };
    (addrs, Bth::new(0, 0, 0), MrPacket::Connect(cmh))
}

fn send_packet() -> (FrameAddrs, Bth, MrPacket<'static>) {
    let addrs = FrameAddrs {
        dst_mac: B_MAC,
        src_mac: A_MAC,
        src_ip: A_IP,
        dst_ip: B_IP,
        src_port: 0xC124,
        dscp: 26,
        ecn: ecn::ECT0,
        ttl: 64,
    };
    let mrh = Mrh {
        flags: 0,
        path: 4,
        plane: 0,
        psn: 0x89AB_CD11,
        floor: 0x89AB_CD00,
        ts: 123_500,
    };
    let sdh = Sdh {
        stream: 7,
        msg_seq: 6,
        offset: 0,
        msg_len: 5,
    };
    let mut bth = Bth::new(0, 0x00_0456, mrh.psn);
    bth.ack_req = true; // last chunk of its message
    bth.se = true; // last chunk of its message
    (
        addrs,
        bth,
        MrPacket::Send {
            mrh,
            sdh,
            rsn: 3,
            payload: b"hello",
        },
    )
}

/// Every golden frame: (name used in SPEC.md markers, hex constant, packet).
fn goldens() -> Vec<(&'static str, &'static str, (FrameAddrs, Bth, MrPacket<'static>))> {
    vec![
        ("write", WRITE_HEX, write_packet()),
        ("ack", ACK_HEX, ack_packet()),
        ("connect", CONNECT_HEX, connect_packet()),
        ("send", SEND_HEX, send_packet()),
    ]
}

fn encode(p: &(FrameAddrs, Bth, MrPacket<'_>)) -> Vec<u8> {
    let mut buf = [0u8; 512];
    let n = wire::encode_mroce(&mut buf, &p.0, &p.1, &p.2).expect("golden frame encodes");
    buf[..n].to_vec()
}

/// Parse a hex dump: each non-empty line is a 4-digit hex offset followed by byte tokens.
/// The offset must equal the number of bytes read so far.
fn parse_dump(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut tok = line.split_whitespace();
        let Some(off) = tok.next() else { continue };
        assert_eq!(off.len(), 4, "offset column of line {line:?}");
        let off = usize::from_str_radix(off, 16).unwrap_or_else(|_| panic!("bad offset in {line:?}"));
        assert_eq!(off, out.len(), "offset of line {line:?}");
        for t in tok {
            assert_eq!(t.len(), 2, "byte token {t:?} in line {line:?}");
            out.push(u8::from_str_radix(t, 16).unwrap_or_else(|_| panic!("bad byte {t:?} in {line:?}")));
        }
    }
    out
}

/// The dump format used in SPEC.md (16 bytes per line).
fn dump(b: &[u8]) -> String {
    b.chunks(16)
        .enumerate()
        .map(|(i, c)| {
            let h: Vec<String> = c.iter().map(|x| format!("{x:02x}")).collect();
            format!("{:04x}  {}\n", i * 16, h.join(" "))
        })
        .collect()
}

fn spec_text() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../SPEC.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// (name, block text) for every `<!-- golden:NAME -->` marker followed by a ```hex block.
fn spec_golden_blocks(spec: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = spec;
    while let Some(i) = rest.find("<!-- golden:") {
        rest = &rest[i + "<!-- golden:".len()..];
        let end = rest.find("-->").expect("unterminated golden marker");
        let name = rest[..end].trim().to_string();
        rest = &rest[end + 3..];
        let open = rest
            .find("```hex\n")
            .unwrap_or_else(|| panic!("golden:{name} has no ```hex block"));
        assert!(
            rest[..open].trim().is_empty(),
            "golden:{name}: the ```hex block must follow the marker"
        );
        rest = &rest[open + "```hex\n".len()..];
        let close = rest
            .find("```")
            .unwrap_or_else(|| panic!("golden:{name}: unterminated block"));
        out.push((name, rest[..close].to_string()));
        rest = &rest[close + 3..];
    }
    out
}

#[test]
fn encoder_reproduces_golden_constants() {
    for (name, hex, p) in goldens() {
        let f = encode(&p);
        assert_eq!(
            dump(&f),
            dump(&parse_dump(hex)),
            "golden frame {name}: encoder output\n{}",
            dump(&f)
        );
        assert_eq!(parse_dump(hex), f, "golden frame {name}");
    }
}

#[test]
fn golden_constants_decode_to_their_fields() {
    for (name, hex, p) in goldens() {
        let bytes = parse_dump(hex);
        let (f, pkt) = wire::decode_mroce_frame(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(pkt, p.2, "{name}: packet");
        assert_eq!(f.addrs, p.0, "{name}: addresses");
        let mut bth = p.1;
        bth.opcode = wire::packet_opcode(&p.2);
        bth.pad = ((4 - f.body.len() % 4) % 4) as u8;
        assert_eq!(f.bth, bth, "{name}: BTH");
    }
    // Field positions quoted in the §5.11 decoding tables.
    let w = parse_dump(WRITE_HEX);
    assert_eq!(w.len(), 110);
    assert_eq!(w[wire::BTH_OFFSET], 0xC0);
    assert_eq!(w[43], 0xA0, "SE=1, PadCnt=2");
    assert_eq!(&w[98..104], b"mroce!");
    assert_eq!(&w[26..34], &[10, 0, 1, 1, 10, 0, 1, 2], "plane-1 addresses");
    assert_eq!(u32::from_le_bytes([w[106], w[107], w[108], w[109]]), 0x556F_BC12);
    let a = parse_dump(ACK_HEX);
    assert_eq!(a.len(), 114);
    assert_eq!(&a[78..82], &[0x00, 0x00, 0xBF, 0xFF], "SACK word 0");
    let c = parse_dump(CONNECT_HEX);
    assert_eq!(c.len(), 86);
    let s = parse_dump(SEND_HEX);
    assert_eq!(s.len(), 102);
    assert_eq!(wire::SEND_HEADERS + 5 + 3, 102, "SEND_HEADERS + payload + pad");
    assert_eq!(s[wire::BTH_OFFSET], 0xC1);
    assert_eq!(s[43], 0xB0, "SE=1, PadCnt=3");
    assert_eq!(&s[86..90], &3u32.to_be_bytes(), "RQH RSN");
    assert_eq!(&s[90..95], b"hello");
    assert_eq!(&s[95..98], &[0, 0, 0], "pad");
    assert_eq!(u32::from_le_bytes([s[98], s[99], s[100], s[101]]), 0x2873_6E4C);
}

#[test]
fn spec_hex_blocks_match_the_encoder() {
    let spec = spec_text();
    let blocks = spec_golden_blocks(&spec);
    let gold = goldens();
    for (name, _, _) in &gold {
        assert!(
            blocks.iter().any(|(n, _)| n == name),
            "SPEC.md has no <!-- golden:{name} --> block"
        );
    }
    for (name, text) in &blocks {
        let Some((_, hex, p)) = gold.iter().find(|(n, _, _)| n == name) else {
            panic!("SPEC.md golden:{name} has no generator in golden_frames.rs");
        };
        let f = encode(p);
        assert_eq!(
            parse_dump(text),
            f,
            "SPEC.md golden:{name} differs from the encoder:\n{}",
            dump(&f)
        );
        // The constant in this file and the block in SPEC.md are the same text.
        assert_eq!(
            text.trim(),
            hex.trim(),
            "SPEC.md golden:{name} and the constant in golden_frames.rs differ"
        );
    }
}

/// CRC-32 exactly as SPEC.md §3.7 states it: reflected polynomial 0xEDB88320, initial value
/// 0xFFFFFFFF, final XOR 0xFFFFFFFF, one bit at a time.
fn crc32_bitwise(data: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    c ^ 0xFFFF_FFFF
}

/// The ICRC input of SPEC.md §3.7, built independently of `wire::icrc`.
fn icrc_input(frame: &[u8]) -> Vec<u8> {
    let mut v = vec![0xFF; 8];
    let mut ip = frame[14..34].to_vec();
    ip[1] = 0xFF;
    ip[8] = 0xFF;
    ip[10] = 0xFF;
    ip[11] = 0xFF;
    v.extend_from_slice(&ip);
    let mut udp = frame[34..42].to_vec();
    udp[6] = 0xFF;
    udp[7] = 0xFF;
    v.extend_from_slice(&udp);
    let mut bth = frame[42..54].to_vec();
    bth[4] = 0xFF;
    v.extend_from_slice(&bth);
    v.extend_from_slice(&frame[54..frame.len() - 4]);
    v
}

#[test]
fn icrc_and_checksums_follow_section_3() {
    assert_eq!(crc32_bitwise(b"123456789"), 0xCBF4_3926, "CRC-32 check value");
    for (name, hex, _) in goldens() {
        let f = parse_dump(hex);
        let n = f.len();
        let carried = u32::from_le_bytes([f[n - 4], f[n - 3], f[n - 2], f[n - 1]]);
        assert_eq!(
            crc32_bitwise(&icrc_input(&f)),
            carried,
            "{name}: ICRC (least significant byte first)"
        );
        assert_eq!(wire::icrc(&f[..n - 4]), carried, "{name}: wire::icrc");
        assert_eq!(
            wire::ipv4_checksum(&f[14..34]),
            0,
            "{name}: IPv4 header checksum verifies"
        );
        assert_eq!(
            usize::from(u16::from_be_bytes([f[16], f[17]])),
            n - 14,
            "{name}: IPv4 total length"
        );
        assert_eq!(
            usize::from(u16::from_be_bytes([f[38], f[39]])),
            n - 34,
            "{name}: UDP length"
        );
        assert_eq!((n - 14) % 4, 0, "{name}: IPv4 datagram is a multiple of 4 bytes");
    }
    // The masked fields really are outside the ICRC: rewriting them keeps it valid.
    let mut f = parse_dump(WRITE_HEX);
    wire::set_ecn(&mut f, ecn::CE).unwrap();
    f[22] = 7; // TTL (the IPv4 checksum is not fixed: check the ICRC alone)
    f[40] = 0x12; // UDP checksum
    f[46] = 0x5A; // BTH reserved byte
    let n = f.len();
    assert_eq!(
        wire::icrc(&f[..n - 4]),
        u32::from_le_bytes([f[n - 4], f[n - 3], f[n - 2], f[n - 1]])
    );
}

/// The integer at the start of a Markdown table cell ("50_000 ns" -> 50000).
fn cell_int(cell: &str) -> Option<u64> {
    let s: String = cell
        .trim()
        .trim_matches('`')
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '_')
        .filter(|c| *c != '_')
        .collect();
    s.parse().ok()
}

/// Rows of SPEC.md tables whose first cell is a `code` name: name -> second cell.
fn spec_named_rows(spec: &str) -> Vec<(String, String)> {
    spec.lines()
        .filter_map(|l| {
            let l = l.trim();
            let cells: Vec<&str> = l.strip_prefix('|')?.split('|').collect();
            let name = cells.first()?.trim().strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(1)?.to_string()))
        })
        .collect()
}

#[test]
fn spec_parameter_table_matches_the_constants() {
    use mroce_model::connection::{FAILED_MEMORY, MAX_MSGS_AHEAD};
    use mroce_model::endpoint::{EndpointConfig, CM_RETRY_NS, CM_TRIES};
    use mroce_model::params::*;
    let d = EndpointConfig::default();
    let expected: Vec<(&str, u64)> = vec![
        ("ROCEV2_UDP_PORT", ROCEV2_UDP_PORT.into()),
        ("PATHS", PATHS as u64),
        ("PATH_BITS", PATH_BITS.into()),
        ("SACK_BITS", SACK_BITS as u64),
        ("SACK_WORD_BITS", SACK_WORD_BITS as u64),
        ("SACK_WORDS", SACK_WORDS as u64),
        ("SACK_WORD_INDEX_BITS", SACK_WORD_INDEX_BITS.into()),
        ("PSN_BITS", PSN_BITS.into()),
        ("MAX_PLANES", MAX_PLANES as u64),
        ("CWND_FRAC_BITS", CWND_FRAC_BITS.into()),
        ("CWND_ONE", CWND_ONE.into()),
        ("CWND_INIT_PKTS", CWND_INIT_PKTS.into()),
        ("CWND_MIN_PKTS", CWND_MIN_PKTS.into()),
        ("CONN_LIMIT_INIT_PKTS", CONN_LIMIT_INIT_PKTS.into()),
        ("CWND_MAX_PKTS", CWND_MAX_PKTS.into()),
        ("LOSS_THRESHOLD", LOSS_THRESHOLD.into()),
        ("RTO_MIN_NS", RTO_MIN_NS),
        ("RTO_MAX_NS", RTO_MAX_NS),
        ("RTO_INIT_NS", RTO_INIT_NS),
        ("RTO_MAX_BACKOFF", RTO_MAX_BACKOFF.into()),
        ("PATH_DOWN_RTOS", PATH_DOWN_RTOS.into()),
        ("PROBE_INTERVAL_NS", PROBE_INTERVAL_NS),
        ("ACK_COALESCE", ACK_COALESCE.into()),
        ("ACK_DELAY_NS", ACK_DELAY_NS),
        ("DEFAULT_MTU_PAYLOAD", DEFAULT_MTU_PAYLOAD.into()),
        ("MAX_STREAMS", MAX_STREAMS.into()),
        ("ECN_G_SHIFT", ECN_G_SHIFT.into()),
        ("ALPHA_ONE", ALPHA_ONE.into()),
        ("MRH_VERSION", wire::MRH_VERSION.into()),
        ("MRH_LEN", wire::MRH_LEN as u64),
        ("SDH_LEN", wire::SDH_LEN as u64),
        ("RPH_LEN", wire::RPH_LEN as u64),
        ("RQH_LEN", wire::RQH_LEN as u64),
        ("AKH_LEN", wire::AKH_LEN as u64),
        ("NKH_LEN", wire::NKH_LEN as u64),
        ("CMH_LEN", wire::CMH_LEN as u64),
        ("FRAME_OVERHEAD", wire::FRAME_OVERHEAD as u64),
        ("WRITE_HEADERS", wire::WRITE_HEADERS as u64),
        ("SEND_HEADERS", wire::SEND_HEADERS as u64),
        ("MAX_MSGS_AHEAD", MAX_MSGS_AHEAD.into()),
        ("FAILED_MEMORY", FAILED_MEMORY as u64),
        ("CM_RETRY_NS", CM_RETRY_NS),
        ("CM_TRIES", CM_TRIES.into()),
        ("paths", d.paths.into()),
        ("mtu", d.mtu.into()),
        ("rx_capacity_mbps", d.rx_capacity_mbps.into()),
        ("max_connections", d.max_connections.into()),
        ("peer_timeout_ns", d.peer_timeout_ns),
        ("hint_window_ns", d.hint_window_ns),
        ("initial_conn_limit", d.initial_conn_limit.into()),
        ("fabric_rtt_ns", d.fabric_rtt_ns),
    ];
    let rows = spec_named_rows(&spec_text());
    for (name, on) in [
        ("tail_hedge", d.tail_hedge),
        ("first_flight_ack_req", d.first_flight_ack_req),
    ] {
        let cell = rows.iter().find(|(n, _)| n == name).map(|(_, c)| c.trim().to_string());
        let want = if on { "on" } else { "off" };
        assert_eq!(cell.as_deref(), Some(want), "SPEC.md §7.4 value of `{name}`");
    }
    let cell = rows
        .iter()
        .find(|(n, _)| n == "tx_order")
        .map(|(_, c)| c.trim().to_string());
    assert_eq!(
        cell.as_deref(),
        Some(d.tx_order.as_str()),
        "SPEC.md §7.4 value of `tx_order`"
    );
    for (name, value) in expected {
        let Some((_, cell)) = rows.iter().find(|(n, _)| n == name) else {
            panic!("SPEC.md §7 has no row for `{name}`");
        };
        assert_eq!(
            cell_int(cell),
            Some(value),
            "SPEC.md §7 value of `{name}` (cell {cell:?})"
        );
    }
}

#[test]
fn spec_counter_table_lists_every_counter() {
    let spec = spec_text();
    let start = spec.find("### 9.3").expect("SPEC.md has §9.3");
    let end = spec[start..].find("\n## ").map_or(spec.len(), |e| start + e);
    let listed: Vec<String> = spec_named_rows(&spec[start..end]).into_iter().map(|(n, _)| n).collect();
    let actual: Vec<String> = mroce_model::Counters::default()
        .pairs()
        .into_iter()
        .map(|(n, _)| n.to_string())
        .collect();
    assert_eq!(
        listed, actual,
        "SPEC.md §9.3 must list every counter of `Counters`, in declaration order"
    );
}
