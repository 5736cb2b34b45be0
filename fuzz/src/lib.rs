//! Frames forged against a live pair of endpoints, shared by the `*_frames` fuzz targets.
//!
//! A [`Pair`] joins two endpoints (mroce's or the RoCEv2 baseline's, through the sans-IO
//! [`Transport`] API) over a perfect link, with WRITEs flowing both ways all the time, and
//! records the first frames they exchange. [`Forged`] frames are handed in between the pair's
//! own: raw bytes, one of the recorded frames with bytes written over it and resealed
//! ([`mroce_model::wire::reseal`]) so that it passes the IPv4 checksum and the ICRC and reaches
//! the protocol, or a live data frame turned against a region without remote write access.
//! The invariants [`Pair::check`] asserts hold whatever the frames.

use arbitrary::Arbitrary;
use mroce_model::memory::{Access, MrKey};
use mroce_model::params::DEFAULT_MTU_PAYLOAD;
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, Status, Transport, WorkKind};
use mroce_model::wire;

/// Bytes of each endpoint's source and destination regions (one WRITE each way at a time).
pub const REGION_BYTES: usize = 8 * 1024;
/// Frames recorded for mutation (the first ones the pair exchanges).
const CAPTURE: usize = 256;
/// Nanoseconds between two exchanges of the pair's own frames.
const STEP_NS: u64 = 1_000;
/// Frames each side may send per step: bounded, so that no input makes a side send forever.
const FRAMES_PER_STEP: usize = 64;

/// One frame handed to an endpoint of the pair.
#[derive(Arbitrary, Debug)]
pub enum Forged {
    /// Bytes as they come, to endpoint a or b on plane 0: most of them end in the envelope
    /// checks.
    Raw { to_a: bool, bytes: Vec<u8> },
    /// One of the pair's recorded frames (`frame` modulo their count) with `bytes` written
    /// over it from `at` (modulo its length), resealed, and handed to the endpoint it was for:
    /// forged ACKs and NAKs, PSNs out of the window, bad keys, offsets and lengths.
    Mutated { frame: u16, at: u16, bytes: Vec<u8> },
    /// The next frame on its way to endpoint a or b, with every big-endian rkey and address
    /// of that endpoint's destination region in it rewritten to its local-only source region,
    /// and resealed: a WRITE with a fresh PSN aimed where the peer may not write, which must
    /// be refused. Byte patterns, not layouts, so it serves both transports.
    Retarget { to_a: bool },
}

/// The byte at offset `i` of a source region (`salt` tells the two ends apart).
fn pattern(i: usize, salt: u8) -> u8 {
    (i as u8).wrapping_mul(31) ^ salt
}

/// Rewrite, in `fr`, every big-endian 4-byte `from.rkey` as `to.rkey` and every big-endian
/// 8-byte address inside `from`'s region as the same offset in `to`'s.
fn retarget(fr: &mut [u8], from: MrKey, to: MrKey) {
    let (rk_from, rk_to) = (from.rkey.to_be_bytes(), to.rkey.to_be_bytes());
    for i in 0..fr.len().saturating_sub(3) {
        if fr[i..i + 4] == rk_from {
            fr[i..i + 4].copy_from_slice(&rk_to);
        }
    }
    for i in 0..fr.len().saturating_sub(7) {
        let mut w = [0u8; 8];
        w.copy_from_slice(&fr[i..i + 8]);
        let va = u64::from_be_bytes(w);
        if va >= from.va && va - from.va < REGION_BYTES as u64 {
            fr[i..i + 8].copy_from_slice(&to.va.wrapping_add(va - from.va).to_be_bytes());
        }
    }
}

/// One endpoint with its regions and its side of the connection.
struct Side<T> {
    ep: T,
    /// Local only: no frame may change it.
    src: MrKey,
    /// The peer WRITEs into it.
    dst: MrKey,
    /// The peer's destination region, where this side WRITEs.
    peer_dst: Option<MrKey>,
    conn: Option<ConnId>,
    /// Frames handed in (the pair's own and forged).
    handed: u64,
    /// WRITEs posted; the next goes out when the last completes.
    posted: u64,
    /// WRITEs completed with success.
    completed: u64,
    /// The next frame to this side is retargeted ([`Forged::Retarget`]).
    intercept: bool,
}

impl<T: Transport> Side<T> {
    fn new(mut ep: T, salt: u8) -> Self {
        let src = ep.memory_mut().register(REGION_BYTES, Access { remote_write: false });
        if let Ok(s) = ep.memory_mut().local_mut(src, 0, REGION_BYTES as u64) {
            for (i, b) in s.iter_mut().enumerate() {
                *b = pattern(i, salt);
            }
        }
        let dst = ep.memory_mut().register(REGION_BYTES, Access { remote_write: true });
        Side {
            ep,
            src,
            dst,
            peer_dst: None,
            conn: None,
            handed: 0,
            posted: 0,
            completed: 0,
            intercept: false,
        }
    }

    /// Post the next WRITE of the source region into the peer's destination region.
    fn post(&mut self) {
        let (Some(c), Some(d)) = (self.conn, self.peer_dst) else {
            return;
        };
        let local = LocalBuf {
            key: self.src,
            offset: 0,
            len: REGION_BYTES as u32,
        };
        let remote = RemoteBuf { va: d.va, rkey: d.rkey };
        self.posted += 1;
        // Refused once a forged frame has broken the connection: then no more WRITEs.
        let _ = self.ep.post_write(c, 0, local, remote, self.posted);
    }
}

/// Two endpoints over a perfect link.
pub struct Pair<T: Transport> {
    a: Side<T>,
    b: Side<T>,
    now: u64,
    /// (to a, plane, frame) of the first [`CAPTURE`] frames exchanged.
    captured: Vec<(bool, u8, Vec<u8>)>,
    buf: Vec<u8>,
    /// Post the next WRITE when one completes (until [`Pair::check`]).
    keep_posting: bool,
    /// Forged frames handed in or armed.
    forged: usize,
}

impl<T: Transport> Pair<T> {
    /// Connect `a` (at `addr_a`) to `b` (at `addr_b`) and start a WRITE each way, of the
    /// source region into the peer's destination region; each side posts the next when one
    /// completes.
    pub fn new(a: T, b: T, addr_a: NicAddr, addr_b: NicAddr) -> Self {
        let mut p = Pair {
            a: Side::new(a, 0xA5),
            b: Side::new(b, 0x5A),
            now: 0,
            captured: Vec::new(),
            buf: vec![0u8; 9000],
            keep_posting: true,
            forged: 0,
        };
        p.a.peer_dst = Some(p.b.dst);
        p.b.peer_dst = Some(p.a.dst);
        p.a.ep.add_peer(addr_b);
        p.b.ep.add_peer(addr_a);
        p.a.conn = p.a.ep.connect(p.now, addr_b).ok();
        for _ in 0..20 {
            if p.b.conn.is_some() {
                break;
            }
            p.step();
        }
        // The set-up takes no input: if it fails, the harness fuzzes less than it claims.
        assert!(
            p.a.conn.is_some() && p.b.conn.is_some(),
            "the pair connects within 20 steps"
        );
        p.a.post();
        p.b.post();
        p.step();
        let data_frames = 2 * REGION_BYTES.div_ceil(usize::from(DEFAULT_MTU_PAYLOAD));
        assert!(p.captured.len() > data_frames, "{} frames recorded", p.captured.len());
        p
    }

    /// Hand in one forged frame (or arm an interception), then let the pair exchange its own
    /// frames for one step.
    pub fn forge(&mut self, f: &Forged) {
        self.now += 100;
        self.forged += 1;
        match f {
            Forged::Raw { to_a, bytes } => self.hand(*to_a, 0, bytes),
            Forged::Mutated { frame, at, bytes } => {
                if !self.captured.is_empty() {
                    let (to_a, plane, mut fr) = self.captured[*frame as usize % self.captured.len()].clone();
                    let at = *at as usize % fr.len();
                    let n = bytes.len().min(fr.len() - at);
                    fr[at..at + n].copy_from_slice(&bytes[..n]);
                    // Too short to reseal: handed in as it is.
                    let _ = wire::reseal(&mut fr);
                    self.hand(to_a, plane, &fr);
                }
            }
            Forged::Retarget { to_a } => {
                if *to_a {
                    self.a.intercept = true;
                } else {
                    self.b.intercept = true;
                }
            }
        }
        self.step();
    }

    fn hand(&mut self, to_a: bool, plane: u8, frame: &[u8]) {
        let s = if to_a { &mut self.a } else { &mut self.b };
        s.ep.handle_frame(self.now, plane, frame);
        s.handed += 1;
    }

    /// Deliver what each side has to send (recording it, retargeting it if armed), advance
    /// the clock, run the timers that are due, drain the events and keep the WRITEs going.
    pub fn step(&mut self) {
        for from_a in [true, false] {
            for _ in 0..FRAMES_PER_STEP {
                let s = if from_a { &mut self.a } else { &mut self.b };
                let Some(t) = s.ep.poll_transmit(self.now, &mut self.buf) else {
                    break;
                };
                let mut fr = self.buf[..t.len].to_vec();
                if self.captured.len() < CAPTURE {
                    self.captured.push((!from_a, t.plane, fr.clone()));
                }
                let to = if from_a { &mut self.b } else { &mut self.a };
                if to.intercept {
                    to.intercept = false;
                    retarget(&mut fr, to.dst, to.src);
                    let _ = wire::reseal(&mut fr);
                }
                self.hand(!from_a, t.plane, &fr);
            }
        }
        self.now += STEP_NS;
        for s in [&mut self.a, &mut self.b] {
            if s.ep.poll_timeout().is_some_and(|t| t <= self.now) {
                s.ep.handle_timeout(self.now);
                assert!(
                    s.ep.poll_timeout().is_none_or(|t| t > self.now),
                    "handle_timeout left a timer due"
                );
            }
            let mut done = false;
            while let Some(e) = s.ep.poll_event() {
                match e {
                    Event::Connected(c) | Event::Accepted(c) => {
                        s.conn.get_or_insert(c);
                    }
                    Event::Completion(c) if c.kind == WorkKind::Write && c.wr_id == s.posted => {
                        done = true;
                        if c.status == Status::Ok {
                            s.completed += 1;
                        }
                    }
                    _ => {}
                }
            }
            if done && self.keep_posting {
                s.post();
            }
        }
    }

    /// Run `steps` more exchanges with no new WRITE (the timers fire and the losses are
    /// recovered), then assert what holds whatever was forged: every frame handed in is
    /// counted, and no frame changed a region the peer may not write.
    pub fn check(&mut self, steps: usize) {
        self.keep_posting = false;
        for _ in 0..steps {
            self.step();
        }
        for (s, salt) in [(&self.a, 0xA5), (&self.b, 0x5A)] {
            let rx = s.ep.counters().iter().find(|(n, _)| *n == "rx_frames").map(|&(_, v)| v);
            assert_eq!(rx, Some(s.handed), "every frame handed in is counted");
            let src = s.ep.memory().region(s.src).expect("the source region stays registered");
            assert!(
                src.iter().enumerate().all(|(i, &b)| b == pattern(i, salt)),
                "a frame changed a region without remote write access"
            );
            // With nothing forged, the perfect link must carry the WRITEs through.
            assert!(
                self.forged > 0 || s.completed > 0,
                "no WRITE completed on a perfect link"
            );
        }
    }
}
