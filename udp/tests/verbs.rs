//! The verbs API over real loopback sockets, in one process (two NICs on two threads):
//! transfers with content checks for both transports, the userspace impairment, pcap taps,
//! and bad input (garbage datagrams, unknown peers, wrong R_Key, a peer that vanishes).
//!
//! Every test uses its own 127.x.y.z addresses, and the tests run one at a time (a lock), so
//! two spinning NICs per test share the machine's CPUs with nothing else from this file.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mroce_model::endpoint::{Endpoint, EndpointConfig};
use mroce_model::memory::MrKey;
use mroce_model::rocev2::{RoceConfig, RoceEndpoint};
use mroce_model::transport::{Event, LocalBuf, RemoteBuf, Status, Transport, WorkKind};
use mroce_model::wire;
use mroce_udp::{frame, pattern, Dir, Impairment, Nic, NicConfig};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Mroce,
    Rocev2,
}

fn transport(kind: Kind, ip: Ipv4Addr, seed: u64) -> Box<dyn Transport> {
    let addr = frame::nic_addr(ip, 1);
    match kind {
        Kind::Mroce => Box::new(Endpoint::new(
            EndpointConfig {
                addr,
                paths: 16,
                ..Default::default()
            },
            seed,
        )),
        Kind::Rocev2 => Box::new(RoceEndpoint::new(
            RoceConfig {
                addr,
                ..Default::default()
            },
            seed,
        )),
    }
}

fn nic(kind: Kind, ip: Ipv4Addr, seed: u64, impair: Impairment) -> Nic {
    let cfg = NicConfig {
        impair,
        spin_ns: 0,
        ..Default::default()
    };
    Nic::new(transport(kind, ip, seed), cfg).expect("bind the plane socket")
}

/// What the receiving thread reports.
struct RxOutcome {
    ok: bool,
    counters: Vec<(&'static str, u64)>,
    stats: mroce_udp::RuntimeStats,
    frames_bad: u64,
    frames_seen: u64,
}

/// A receiving NIC on its own thread: registers `bytes`, hands (va, rkey) over, counts
/// `WriteReceived`, then checks the region against the pattern. Runs until `stop`.
#[allow(clippy::too_many_arguments)]
fn spawn_receiver(
    kind: Kind,
    ip: Ipv4Addr,
    bytes: usize,
    msgs: u64,
    seed: u64,
    impair: Impairment,
    stop: Arc<AtomicBool>,
    tap: bool,
) -> (mpsc::Receiver<(u64, u32)>, thread::JoinHandle<RxOutcome>) {
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let mut n = nic(kind, ip, 0xB0B, impair);
        let seen = Arc::new(Mutex::new((0u64, 0u64)));
        if tap {
            let s = seen.clone();
            n.set_tap(Some(Box::new(move |_d: Dir, _t: u64, f: &[u8]| {
                let mut s = s.lock().unwrap();
                s.0 += 1;
                if wire::decode_frame(f).is_err() {
                    s.1 += 1;
                }
            })));
        }
        let dst = n.register(bytes, true);
        tx.send((dst.va, dst.rkey)).unwrap();
        let mut got = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if let Some(Event::Completion(c)) = n.poll(Duration::from_millis(5)).unwrap() {
                if c.kind == WorkKind::WriteReceived && c.status == Status::Ok {
                    got += 1;
                }
            }
        }
        let ok = got == msgs && pattern::first_mismatch(seed, 0, n.region(dst).unwrap()).is_none();
        let (frames_seen, frames_bad) = *seen.lock().unwrap();
        RxOutcome {
            ok,
            counters: n.counters(),
            stats: n.stats().clone(),
            frames_bad,
            frames_seen,
        }
    });
    (rx, h)
}

fn counter(c: &[(&'static str, u64)], name: &str) -> u64 {
    c.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
}

/// Connect `s` to `peer`, waiting for `Connected`.
fn connect(s: &mut Nic, peer: Ipv4Addr) -> u32 {
    let conn = s.connect(peer).unwrap();
    let t0 = Instant::now();
    loop {
        match s.poll(Duration::from_millis(20)).unwrap() {
            Some(Event::Connected(c)) if c == conn => return conn,
            Some(Event::ConnectFailed(_)) => panic!("connect to {peer} failed"),
            _ => assert!(t0.elapsed() < Duration::from_secs(5), "no CONNECT_ACK from {peer}"),
        }
    }
}

/// Move `bytes` in `msg`-byte WRITEs from `a_ip` to `b_ip`; returns (writes ok, receiver).
fn transfer(kind: Kind, a_ip: Ipv4Addr, b_ip: Ipv4Addr, bytes: usize, msg: usize, impair: Impairment) -> RxOutcome {
    let seed = 0x5EED ^ bytes as u64;
    let msgs = bytes.div_ceil(msg) as u64;
    let stop = Arc::new(AtomicBool::new(false));
    let (keys, h) = spawn_receiver(kind, b_ip, bytes, msgs, seed, impair, stop.clone(), true);
    let (va, rkey) = keys.recv().unwrap();
    let mut s = nic(kind, a_ip, 0xA11CE, impair);
    let src = s.register(bytes, false);
    pattern::fill(seed, 0, s.region_mut(src).unwrap());
    let conn = connect(&mut s, b_ip);
    for i in 0..msgs {
        let off = i as usize * msg;
        let len = msg.min(bytes - off) as u32;
        let local = LocalBuf {
            key: src,
            offset: off as u64,
            len,
        };
        s.post_write(
            conn,
            0,
            local,
            RemoteBuf {
                va: va + off as u64,
                rkey,
            },
            i,
        )
        .unwrap();
    }
    let t0 = Instant::now();
    let mut ok = 0;
    while ok < msgs {
        match s.poll(Duration::from_millis(20)).unwrap() {
            Some(Event::Completion(c)) if c.kind == WorkKind::Write => {
                assert_eq!(c.status, Status::Ok, "{kind:?} WRITE {}", c.wr_id);
                ok += 1;
            }
            Some(Event::Disconnected(_)) => panic!("{kind:?}: connection lost after {ok} WRITEs"),
            _ => {}
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{kind:?}: {ok} of {msgs} WRITEs after 30 s"
        );
    }
    // Let the last ACKs and completions settle on the receiver, then stop it.
    s.run_for(Duration::from_millis(20)).unwrap();
    stop.store(true, Ordering::Relaxed);
    let out = h.join().unwrap();
    let st = s.stats();
    assert!(st.tx_calls < st.tx_datagrams, "sendmmsg batches datagrams: {st:?}");
    out
}

#[test]
fn mroce_transfer_over_loopback_sockets() {
    let _g = serial();
    let r = transfer(
        Kind::Mroce,
        Ipv4Addr::new(127, 61, 0, 2),
        Ipv4Addr::new(127, 61, 0, 1),
        16 << 20,
        1 << 20,
        Impairment::default(),
    );
    assert!(r.ok, "content differs: {:?}", r.counters);
    assert_eq!(r.frames_bad, 0, "every rebuilt frame decodes (ICRC included)");
    assert!(r.frames_seen > 4096);
    assert_eq!(counter(&r.counters, "bad_frames"), 0);
    assert!(
        r.stats.rx_calls < r.stats.rx_datagrams,
        "recvmmsg batches datagrams: {:?}",
        r.stats
    );
}

#[test]
fn rocev2_transfer_over_the_same_runtime() {
    let _g = serial();
    let r = transfer(
        Kind::Rocev2,
        Ipv4Addr::new(127, 62, 0, 2),
        Ipv4Addr::new(127, 62, 0, 1),
        4 << 20,
        256 << 10,
        Impairment::default(),
    );
    assert!(r.ok, "content differs: {:?}", r.counters);
    assert_eq!(r.frames_bad, 0);
}

#[test]
fn mroce_survives_loss_reordering_and_duplication() {
    let _g = serial();
    let imp = Impairment {
        loss: 0.05,
        reorder: 0.05,
        reorder_delay_ns: 100_000,
        dup: 0.05,
        seed: 3,
    };
    let r = transfer(
        Kind::Mroce,
        Ipv4Addr::new(127, 63, 0, 2),
        Ipv4Addr::new(127, 63, 0, 1),
        8 << 20,
        1 << 20,
        imp,
    );
    assert!(r.ok, "content differs: {:?}", r.counters);
    assert!(r.stats.impair_lost > 0 && r.stats.impair_duplicated > 0 && r.stats.impair_reordered > 0);
    assert_eq!(r.frames_bad, 0);
}

#[test]
fn garbage_unknown_peers_and_wrong_rkey_are_counted_and_dropped() {
    let _g = serial();
    let (a_ip, b_ip) = (Ipv4Addr::new(127, 64, 0, 2), Ipv4Addr::new(127, 64, 0, 1));
    let stop = Arc::new(AtomicBool::new(false));
    let (keys, h) = spawn_receiver(
        Kind::Mroce,
        b_ip,
        1 << 20,
        1,
        9,
        Impairment::default(),
        stop.clone(),
        false,
    );
    let (va, rkey) = keys.recv().unwrap();
    // Garbage from a stranger (not a peer, not a CONNECT): short, long, random, and a
    // well-formed-looking BTH with a bad ICRC.
    let stranger = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::new(127, 64, 0, 9), 0)).unwrap();
    let to = SocketAddrV4::new(b_ip, mroce_udp::nic::DEFAULT_PORT);
    let mut junk = vec![0xC0u8; 300];
    junk[1] = 0;
    for d in [&b""[..], &[1, 2, 3][..], &[0xFF; 2000][..], &junk[..]] {
        stranger.send_to(d, to).unwrap();
    }
    // A sender with a wrong R_Key: the WRITE fails with a remote access error.
    let mut s = nic(Kind::Mroce, a_ip, 5, Impairment::default());
    let src = s.register(1 << 20, false);
    let conn = connect(&mut s, b_ip);
    let local = LocalBuf {
        key: src,
        offset: 0,
        len: 64 << 10,
    };
    s.post_write(conn, 0, local, RemoteBuf { va, rkey: rkey ^ 0x100 }, 77)
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(Event::Completion(c)) = s.poll(Duration::from_millis(20)).unwrap() {
            if c.wr_id == 77 {
                break c.status;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no completion for the bad WRITE"
        );
    };
    assert_eq!(status, Status::RemoteAccessError);
    // The connection survives: a good WRITE still lands.
    s.post_write(conn, 0, local, RemoteBuf { va, rkey }, 78).unwrap();
    let t0 = Instant::now();
    loop {
        if let Some(Event::Completion(c)) = s.poll(Duration::from_millis(20)).unwrap() {
            if c.wr_id == 78 {
                assert_eq!(c.status, Status::Ok);
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no completion for the good WRITE"
        );
    }
    s.run_for(Duration::from_millis(10)).unwrap();
    stop.store(true, Ordering::Relaxed);
    let r = h.join().unwrap();
    assert!(counter(&r.counters, "rkey_violations") >= 1, "{:?}", r.counters);
    assert!(counter(&r.counters, "bad_frames") >= 4, "{:?}", r.counters);
    assert_eq!(r.stats.rx_unknown_source, 4, "{:?}", r.stats);
}

#[test]
fn a_vanished_peer_ends_the_transfer_with_an_error() {
    let _g = serial();
    let (a_ip, b_ip) = (Ipv4Addr::new(127, 65, 0, 2), Ipv4Addr::new(127, 65, 0, 1));
    let (tx, rx) = mpsc::channel();
    // The receiver accepts, hands out its key, and disappears (socket closed) at once.
    let h = thread::spawn(move || {
        let mut n = nic(Kind::Mroce, b_ip, 1, Impairment::default());
        let dst: MrKey = n.register(64 << 20, true);
        tx.send((dst.va, dst.rkey)).unwrap();
        let t0 = Instant::now();
        while !matches!(n.poll(Duration::from_millis(10)).unwrap(), Some(Event::Accepted(_))) {
            assert!(t0.elapsed() < Duration::from_secs(5));
        }
        n.run_for(Duration::from_millis(5)).unwrap();
        drop(n);
    });
    let (va, rkey) = rx.recv().unwrap();
    let mut s = nic(Kind::Mroce, a_ip, 2, Impairment::default());
    let src = s.register(64 << 20, false);
    let conn = connect(&mut s, b_ip);
    h.join().unwrap();
    for i in 0..64u64 {
        let local = LocalBuf {
            key: src,
            offset: i << 20,
            len: 1 << 20,
        };
        s.post_write(
            conn,
            0,
            local,
            RemoteBuf {
                va: va + (i << 20),
                rkey,
            },
            i,
        )
        .unwrap();
    }
    let t0 = Instant::now();
    let mut failed = 0;
    let mut disconnected = false;
    while !disconnected {
        match s.poll(Duration::from_millis(20)).unwrap() {
            Some(Event::Completion(c)) => {
                assert_ne!(c.status, Status::Ok, "nobody is there to acknowledge");
                failed += 1;
            }
            Some(Event::Disconnected(c)) if c == conn => disconnected = true,
            _ => {}
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the transport never gave up on the vanished peer"
        );
    }
    assert!(failed > 0 && counter(&s.counters(), "peer_timeouts") == 1);
    assert!(s.silence_of(b_ip).is_some_and(|d| d >= Duration::from_millis(50)));
}

/// Registration pins the region, as `ibv_reg_mr` does: every page is resident before the
/// first packet lands, so placement never takes a first-touch page fault (on a 2-core
/// machine those faults made the receive phase long enough to fire spurious RTOs).
#[test]
fn a_registered_region_is_resident() {
    let _g = serial();
    let mut n = nic(Kind::Mroce, Ipv4Addr::new(127, 66, 0, 1), 1, Impairment::default());
    let len = 8 << 20;
    let key = n.register(len, true);
    let r = n.region(key).expect("the region just registered");
    assert_eq!(r.len(), len);
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("page size");
    // mincore wants a page-aligned start: take the first whole page inside the region.
    let start = (r.as_ptr() as usize).next_multiple_of(page);
    let end = (r.as_ptr() as usize + len) / page * page;
    let pages = (end - start) / page;
    let mut vec = vec![0u8; pages];
    // SAFETY: [start, end) lies inside the live region; `vec` has one byte per page.
    let rc = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    let resident = vec.iter().filter(|b| **b & 1 == 1).count();
    assert_eq!(resident, pages, "{resident} of {pages} pages resident after register");
}
