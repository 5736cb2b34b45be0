//! Transaction semantics of each block: operations, the reference (the `mroce-model`
//! component), the output record compared bit for bit, and seeded random streams.
//!
//! The semantics are those of the rust-hdl drivers in hdl/tests: one record per accepted
//! operation, in order; fields that an operation does not define are masked out of the record
//! exactly as those drivers do. The reference is applied to the *pins* an operation drives, so
//! the Verilated block, the rust-hdl block and the model see one encoding.
use crate::pins::{
    PathSelectorPins, Pins, RxIn, RxPinsOut, RxTrackerPins, SelIn, SelPinsOut, TxIn, TxPinsOut, TxScoreboardPins,
};
use mroce_hdl::path_selector::*;
use mroce_hdl::rx_tracker::*;
use mroce_hdl::tx_scoreboard::*;
use mroce_model::params::{PATHS, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
use mroce_model::path_selector::{Credit, PathHealth, PathSelector};
use mroce_model::rx_tracker::{RxPacket, RxTracker, RxVerdict};
use mroce_model::tx_scoreboard::{TimerResult, TxScoreboard};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;

/// Mask of a path index (`in_path` is `PATH_BITS` wide; the model takes paths modulo `PATHS`).
pub const PATH_MASK: u8 = (PATHS - 1) as u8;
/// Packets a scoreboard path can have outstanding (`TxScoreboard::has_room`).
const TX_WINDOW: u32 = (SACK_BITS - SACK_WORD_BITS) as u32;

/// Deterministic generator (64-bit LCG, high bits) shared by streams and stalls.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut r = Rng(seed ^ 0x9E37_79B9_7F4A_7C15);
        r.next();
        r
    }
    // an endless generator, not an Iterator: next() never returns None
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    pub fn below(&mut self, n: u32) -> u32 {
        self.next() % n.max(1)
    }
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below(hi - lo + 1)
    }
}

/// One single-stream block: its operations, reference and record.
pub trait StreamBench {
    /// Block name (as in `mroce cosim --block`).
    const NAME: &'static str;
    /// One operation.
    type Txn: Clone + Debug + PartialEq + Serialize + DeserializeOwned;
    /// One output record.
    type Rec: Clone + Debug + PartialEq + Serialize;
    /// The model component(s).
    type Reference;
    /// Pins of the block.
    type Pins: Pins;
    fn reference() -> Self::Reference;
    /// Operations every run starts with (bringing the block to the reference's initial state).
    fn preamble() -> Vec<Self::Txn>;
    /// Input pins of an operation (`valid` set), or idle pins.
    fn drive(t: Option<&Self::Txn>, out_ready: bool) -> <Self::Pins as Pins>::In;
    /// The expected record of an operation accepted at `cycle` (advances the reference).
    fn expect(r: &mut Self::Reference, i: &<Self::Pins as Pins>::In, cycle: u64) -> Self::Rec;
    /// Per-cycle check of outputs outside the record stream: (want, got) on a difference.
    fn check_cycle(
        _r: &mut Self::Reference,
        _cycle: u64,
        _o: &<Self::Pins as Pins>::Out,
    ) -> Option<(serde_json::Value, serde_json::Value)> {
        None
    }
    /// (in_ready, out_valid).
    fn handshake(o: &<Self::Pins as Pins>::Out) -> (bool, bool);
    /// The record on the output pins.
    fn record(o: &<Self::Pins as Pins>::Out) -> Self::Rec;
    /// A seeded random stream of `n` operations.
    fn random_stream(seed: u64, n: usize) -> Vec<Self::Txn>;
}

// ---------------------------------------------------------------- rx_tracker

/// An `rx_tracker` operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RxTxn {
    Packet {
        path: u8,
        psn: u32,
        floor: u32,
        ce: bool,
        ack_req: bool,
        commit: bool,
    },
    Flush {
        path: u8,
    },
    Reset {
        path: u8,
        isn: u32,
    },
}

impl RxTxn {
    /// Input pins of the operation.
    pub fn pins(&self, out_ready: bool) -> RxIn {
        let mut i = RxIn {
            valid: true,
            out_ready,
            ..Default::default()
        };
        match *self {
            RxTxn::Packet {
                path,
                psn,
                floor,
                ce,
                ack_req,
                commit,
            } => {
                i.op = RX_OP_PACKET as u8;
                i.path = path & PATH_MASK;
                i.psn = psn;
                i.floor = floor;
                i.ce = ce;
                i.ack_req = ack_req;
                i.commit = commit;
            }
            RxTxn::Flush { path } => {
                i.op = RX_OP_FLUSH as u8;
                i.path = path & PATH_MASK;
            }
            RxTxn::Reset { path, isn } => {
                i.op = RX_OP_RESET as u8;
                i.path = path & PATH_MASK;
                i.psn = isn;
            }
        }
        i
    }
}

/// An ACK snapshot in an `rx_tracker` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxAck {
    pub path: u8,
    pub base: u32,
    pub cum: u32,
    pub sack: [u32; SACK_WORDS],
    pub ecn: u16,
    pub pkt: u16,
}

/// An `rx_tracker` record: op, verdict (packets), ACK snapshot when one is emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxRec {
    pub op: u8,
    pub verdict: u8,
    pub ack: Option<RxAck>,
}

impl RxRec {
    pub fn from_pins(o: &RxPinsOut) -> Self {
        let op = o.out.op;
        let ack = (o.out.ack && u64::from(op) != RX_OP_RESET).then_some(RxAck {
            path: o.out.path,
            base: o.out.base,
            cum: o.out.cum,
            sack: o.sack,
            ecn: o.out.ecn,
            pkt: o.out.pkt,
        });
        let verdict = if u64::from(op) == RX_OP_PACKET {
            o.out.verdict
        } else {
            0
        };
        RxRec { op, verdict, ack }
    }
}

/// The receive tracker's reference: `RxTracker` applied to the pins.
pub fn rx_expect(m: &mut RxTracker, i: &RxIn) -> RxRec {
    let snap = |a: mroce_model::rx_tracker::AckSnapshot| RxAck {
        path: a.path,
        base: a.base,
        cum: a.cum,
        sack: a.sack,
        ecn: a.ecn_count,
        pkt: a.pkt_count,
    };
    match u64::from(i.op) {
        RX_OP_PACKET => {
            let r = m.packet(&RxPacket {
                path: i.path,
                psn: i.psn,
                floor: i.floor,
                ce: i.ce,
                ack_req: i.ack_req,
                commit: i.commit,
            });
            let verdict = match r.verdict {
                RxVerdict::New => RX_NEW,
                RxVerdict::Duplicate => RX_DUPLICATE,
                RxVerdict::OutOfWindow => RX_OUT_OF_WINDOW,
                RxVerdict::Refused => RX_REFUSED,
            } as u8;
            RxRec {
                op: i.op,
                verdict,
                ack: r.ack.map(snap),
            }
        }
        RX_OP_FLUSH => RxRec {
            op: i.op,
            verdict: 0,
            ack: Some(snap(m.flush(i.path))),
        },
        _ => {
            m.reset_path(i.path, i.psn);
            RxRec {
                op: RX_OP_RESET as u8,
                verdict: 0,
                ack: None,
            }
        }
    }
}

/// `rx_tracker` against `RxTracker`.
pub struct RxBench;

impl StreamBench for RxBench {
    const NAME: &'static str = "rx_tracker";
    type Txn = RxTxn;
    type Rec = RxRec;
    type Reference = RxTracker;
    type Pins = RxTrackerPins;
    fn reference() -> RxTracker {
        RxTracker::new(0)
    }
    fn preamble() -> Vec<RxTxn> {
        // the block powers up with zeroed rows; ISN 0 everywhere is RxTracker::new(0)
        (0..PATHS as u8).map(|path| RxTxn::Reset { path, isn: 0 }).collect()
    }
    fn drive(t: Option<&RxTxn>, out_ready: bool) -> RxIn {
        t.map_or(
            RxIn {
                out_ready,
                ..Default::default()
            },
            |t| t.pins(out_ready),
        )
    }
    fn expect(r: &mut RxTracker, i: &RxIn, _cycle: u64) -> RxRec {
        rx_expect(r, i)
    }
    fn handshake(o: &RxPinsOut) -> (bool, bool) {
        (o.in_ready, o.out_valid)
    }
    fn record(o: &RxPinsOut) -> RxRec {
        RxRec::from_pins(o)
    }
    fn random_stream(seed: u64, n: usize) -> Vec<RxTxn> {
        rx_stream(seed, n)
    }
}

/// Random receive stream: in-order runs with loss, duplicates, below- and beyond-window PSNs,
/// sender floors (slides over lost words), flushes, path resets at ISNs near 2^32 (wraparound),
/// bursts that fill a whole window out of order, and phases on 1, 2, 4 or `PATHS` paths.
pub fn rx_stream(seed: u64, n: usize) -> Vec<RxTxn> {
    let mut rng = Rng::new(seed);
    let mut next = [0u32; PATHS];
    let mut floor = [0u32; PATHS];
    let mut ops = Vec::with_capacity(n + 300);
    let isn = |rng: &mut Rng| {
        if rng.below(2) == 0 {
            rng.next()
        } else {
            u32::MAX - rng.below(300)
        }
    };
    for p in 0..PATHS as u8 {
        let i = isn(&mut rng);
        ops.push(RxTxn::Reset { path: p, isn: i });
        next[p as usize] = i;
        floor[p as usize] = i;
    }
    let mut paths = 2u32;
    while ops.len() < n {
        if rng.below(3000) == 0 {
            paths = [1, 2, 4, PATHS as u32][rng.below(4) as usize];
        }
        let p = rng.below(paths) as usize;
        let r = rng.below(1000);
        if r < 4 {
            let i = isn(&mut rng);
            ops.push(RxTxn::Reset { path: p as u8, isn: i });
            next[p] = i;
            floor[p] = i;
            continue;
        }
        if r < 6 {
            // fill the window ahead out of order, every word full, then go on from its end
            let base = next[p];
            for k in (0..SACK_BITS as u32).rev() {
                ops.push(RxTxn::Packet {
                    path: p as u8,
                    psn: base.wrapping_add(k),
                    floor: floor[p],
                    ce: rng.below(8) == 0,
                    ack_req: false,
                    commit: true,
                });
            }
            next[p] = base.wrapping_add(SACK_BITS as u32);
            continue;
        }
        if r < 36 {
            ops.push(RxTxn::Flush { path: p as u8 });
            continue;
        }
        let psn = if r < 700 {
            let x = next[p];
            next[p] = next[p].wrapping_add(1 + u32::from(rng.below(10) == 0));
            x
        } else if r < 850 {
            // duplicate or below the window (300 with 256-bit windows)
            next[p].wrapping_sub(rng.below(SACK_BITS as u32 + 44))
        } else {
            // ahead, possibly beyond the window
            next[p].wrapping_add(rng.below(SACK_BITS as u32 + 44))
        };
        if rng.below(20) == 0 {
            floor[p] = floor[p].wrapping_add(SACK_WORD_BITS as u32 * rng.below(3));
        }
        if rng.below(4) == 0 {
            floor[p] = next[p].wrapping_sub(64 + rng.below(64));
        }
        let fl = if rng.below(30) == 0 { rng.next() } else { floor[p] };
        ops.push(RxTxn::Packet {
            // an out-of-range path half the time (the block and the model take it modulo PATHS)
            path: p as u8 + PATHS as u8 * rng.below(2) as u8,
            psn,
            floor: fl,
            ce: rng.below(8) == 0,
            ack_req: rng.below(16) == 0,
            commit: rng.below(20) != 0,
        });
    }
    ops.truncate(n);
    ops
}

// ---------------------------------------------------------------- tx_scoreboard

/// A `tx_scoreboard` operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TxTxn {
    Send {
        path: u8,
        now: u32,
        rto: u32,
    },
    AckWord {
        path: u8,
        word_psn: u32,
        mask: u32,
        lost_below: u32,
        now: u32,
        rto: u32,
    },
    Expire {
        path: u8,
    },
    Timer {
        path: u8,
        now: u32,
        rto: u32,
    },
    ClearBackoff {
        path: u8,
    },
    Reset {
        path: u8,
        isn: u32,
    },
}

impl TxTxn {
    pub fn pins(&self, out_ready: bool) -> TxIn {
        let (op, path, psn, mask, lost_below, now, rto) = match *self {
            TxTxn::Send { path, now, rto } => (TX_OP_SEND, path, 0, 0, 0, now, rto),
            TxTxn::AckWord {
                path,
                word_psn,
                mask,
                lost_below,
                now,
                rto,
            } => (TX_OP_ACK_WORD, path, word_psn, mask, lost_below, now, rto),
            TxTxn::Expire { path } => (TX_OP_EXPIRE, path, 0, 0, 0, 0, 0),
            TxTxn::Timer { path, now, rto } => (TX_OP_TIMER, path, 0, 0, 0, now, rto),
            TxTxn::ClearBackoff { path } => (TX_OP_CLEAR_BACKOFF, path, 0, 0, 0, 0, 0),
            TxTxn::Reset { path, isn } => (TX_OP_RESET, path, isn, 0, 0, 0, 0),
        };
        TxIn {
            valid: true,
            op: op as u8,
            path: path & PATH_MASK,
            psn,
            mask,
            lost_below,
            now,
            rto,
            out_ready,
        }
    }
}

/// A `tx_scoreboard` record (fields an operation does not define are 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxRec {
    pub op: u8,
    pub ok: bool,
    pub psn: u32,
    pub freed: u32,
    pub lost: u32,
    pub forged: bool,
    pub backoff: u8,
    pub armed: bool,
    pub deadline: u32,
    pub empty: bool,
    pub room: bool,
}

impl TxRec {
    pub fn from_pins(o: &TxPinsOut) -> Self {
        let r = &o.out;
        let code = u64::from(r.op);
        let is_word = code == TX_OP_ACK_WORD || code == TX_OP_EXPIRE;
        TxRec {
            op: r.op,
            ok: (code == TX_OP_SEND || code == TX_OP_TIMER) && r.ok,
            psn: if code == TX_OP_SEND || is_word { r.psn } else { 0 },
            freed: if is_word { r.freed } else { 0 },
            lost: if is_word { r.lost } else { 0 },
            forged: is_word && r.forged,
            backoff: if code == TX_OP_TIMER && r.ok { r.backoff } else { 0 },
            armed: r.armed,
            deadline: if r.armed { r.deadline } else { 0 },
            empty: r.empty,
            room: r.room,
        }
    }
}

/// The scoreboard's reference: `TxScoreboard` applied to the pins.
pub fn tx_expect(m: &mut TxScoreboard, i: &TxIn) -> TxRec {
    let p = i.path;
    let (ok, psn, freed, lost, forged, backoff) = match u64::from(i.op) {
        TX_OP_SEND => {
            let r = m.send(p, i.now, i.rto);
            (r.is_some(), r.unwrap_or(m.path(p).next), 0, 0, false, 0)
        }
        TX_OP_ACK_WORD => {
            let r = m.ack_word(p, i.psn, i.mask, i.lost_below, i.now, i.rto);
            (false, r.word_psn, r.freed, r.lost, r.forged, 0)
        }
        TX_OP_EXPIRE => {
            let r = m.expire_head(p);
            (false, r.word_psn, r.freed, r.lost, r.forged, 0)
        }
        TX_OP_TIMER => match m.timer(p, i.now, i.rto) {
            TimerResult::Idle => (false, 0, 0, 0, false, 0),
            TimerResult::Expired { backoff } => (true, 0, 0, 0, false, backoff),
        },
        TX_OP_CLEAR_BACKOFF => {
            m.clear_backoff(p);
            (false, 0, 0, 0, false, 0)
        }
        _ => {
            m.reset_path(p, i.psn);
            (false, 0, 0, 0, false, 0)
        }
    };
    let dl = m.deadline(p);
    TxRec {
        op: i.op,
        ok,
        psn,
        freed,
        lost,
        forged,
        backoff,
        armed: dl.is_some(),
        deadline: dl.unwrap_or(0),
        empty: m.outstanding(p) == 0,
        room: m.has_room(p),
    }
}

/// The scoreboard's `room_mask` register as a function of the cycle: the model's mask after
/// each accepted operation, visible `visible_after` cycles later.
#[derive(Clone, Debug)]
pub struct RoomHistory {
    hist: std::collections::VecDeque<(u64, u16)>,
    base: u16,
    /// Clocks from the cycle an operation is accepted (the clock edge that ends it) to the
    /// first cycle whose `room_mask` reflects it: the block's room lag + 1.
    visible_after: u64,
}

impl RoomHistory {
    /// `room_lag`: the scoreboard's `TX_ROOM_LAG` (or `transport_core`'s `CORE_TX_ROOM_LAG`).
    pub fn new(initial: u16, room_lag: usize) -> Self {
        Self {
            hist: Default::default(),
            base: initial,
            visible_after: room_lag as u64 + 1,
        }
    }
    /// The mask after an operation accepted at `cycle`.
    pub fn push(&mut self, cycle: u64, mask: u16) {
        self.hist.push_back((cycle, mask));
    }
    /// `room_mask` at cycle `k` (queries never go back more than 16 cycles).
    pub fn at(&mut self, k: u64) -> u16 {
        while self.hist.len() > 1 && self.hist[1].0 + self.visible_after + 16 <= k {
            self.base = self.hist[0].1;
            self.hist.pop_front();
        }
        let mut m = self.base;
        for &(c, mask) in &self.hist {
            if c + self.visible_after <= k {
                m = mask;
            } else {
                break;
            }
        }
        m
    }
}

/// The scoreboard reference: the model and its room-mask history.
pub struct TxReference {
    pub m: TxScoreboard,
    pub room: RoomHistory,
}

/// `tx_scoreboard` against `TxScoreboard`; `room_mask` is checked every cycle.
pub struct TxBench;

impl StreamBench for TxBench {
    const NAME: &'static str = "tx_scoreboard";
    type Txn = TxTxn;
    type Rec = TxRec;
    type Reference = TxReference;
    type Pins = TxScoreboardPins;
    fn reference() -> TxReference {
        let m = TxScoreboard::new(0);
        let room = RoomHistory::new(m.room_mask() as u16, TX_ROOM_LAG);
        TxReference { m, room }
    }
    fn preamble() -> Vec<TxTxn> {
        vec![]
    }
    fn drive(t: Option<&TxTxn>, out_ready: bool) -> TxIn {
        t.map_or(
            TxIn {
                out_ready,
                ..Default::default()
            },
            |t| t.pins(out_ready),
        )
    }
    fn expect(r: &mut TxReference, i: &TxIn, cycle: u64) -> TxRec {
        let rec = tx_expect(&mut r.m, i);
        r.room.push(cycle, r.m.room_mask() as u16);
        rec
    }
    fn check_cycle(r: &mut TxReference, cycle: u64, o: &TxPinsOut) -> Option<(serde_json::Value, serde_json::Value)> {
        let want = r.room.at(cycle);
        (want != o.room_mask).then(|| {
            (
                serde_json::json!({ "room_mask": want }),
                serde_json::json!({ "room_mask": o.room_mask }),
            )
        })
    }
    fn handshake(o: &TxPinsOut) -> (bool, bool) {
        (o.in_ready, o.out_valid)
    }
    fn record(o: &TxPinsOut) -> TxRec {
        TxRec::from_pins(o)
    }
    fn random_stream(seed: u64, n: usize) -> Vec<TxTxn> {
        tx_stream(seed, n)
    }
}

/// Random scoreboard stream: sends, SACK words near the window (aligned or not, all masks),
/// timers (expiry, saturating backoff), expiries, resets at ISNs near 2^32, bursts that fill a
/// whole window, phases on 1, 2, 3 or `PATHS` paths.
pub fn tx_stream(seed: u64, n: usize) -> Vec<TxTxn> {
    let mut rng = Rng::new(seed);
    let mut ops = Vec::with_capacity(n + 300);
    let mut una = [0u32; PATHS];
    let isn = |rng: &mut Rng| {
        if rng.below(2) == 0 {
            rng.next()
        } else {
            u32::MAX - rng.below(100)
        }
    };
    for p in 0..PATHS as u8 {
        let i = isn(&mut rng);
        ops.push(TxTxn::Reset { path: p, isn: i });
        una[p as usize] = i;
    }
    let mut now = 0u32;
    let mut paths = 2u32;
    while ops.len() < n {
        if rng.below(3000) == 0 {
            paths = [1, 2, 3, PATHS as u32][rng.below(4) as usize];
        }
        now = now.wrapping_add(rng.below(50));
        let p = rng.below(paths) as u8;
        let pi = p as usize;
        let r = rng.below(1000);
        let rto = 200 + rng.below(2000);
        if r < 3 {
            // fill the window (the last sends find it full), then let the timer fire
            for _ in 0..rng.range(TX_WINDOW - 24, TX_WINDOW + 16) {
                ops.push(TxTxn::Send { path: p, now, rto });
            }
            ops.push(TxTxn::Timer {
                path: p,
                now: now.wrapping_add(rto),
                rto,
            });
            continue;
        }
        if r < 450 {
            ops.push(TxTxn::Send { path: p, now, rto });
        } else if r < 880 {
            // a word of the window or the one past it
            let k = rng.below(SACK_WORDS as u32 + 1);
            let wp = if rng.below(15) == 0 {
                rng.next()
            } else {
                una[pi].wrapping_add(SACK_WORD_BITS as u32 * k)
            };
            let mask = match rng.below(4) {
                0 => u32::MAX,
                1 => rng.next(),
                2 => rng.next() & rng.next(),
                _ => (1u32 << rng.below(32)).wrapping_sub(1),
            };
            let lb = wp.wrapping_add(rng.below(40));
            ops.push(TxTxn::AckWord {
                path: p,
                word_psn: wp,
                mask,
                lost_below: lb,
                now,
                rto,
            });
            if rng.below(4) == 0 {
                una[pi] = una[pi].wrapping_add(SACK_WORD_BITS as u32);
            }
        } else if r < 930 {
            ops.push(TxTxn::Timer {
                path: p,
                now: now.wrapping_add(rng.below(3000)),
                rto,
            });
        } else if r < 970 {
            ops.push(TxTxn::Expire { path: p });
        } else if r < 990 {
            ops.push(TxTxn::ClearBackoff { path: p });
        } else {
            let i = isn(&mut rng);
            ops.push(TxTxn::Reset { path: p, isn: i });
            una[pi] = i;
        }
    }
    ops.truncate(n);
    ops
}

// ---------------------------------------------------------------- path_selector

/// A `path_selector` operation (argument ranges are those of the selector's contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SelTxn {
    Select {
        room: u16,
    },
    Charge {
        path: u8,
    },
    Credit {
        path: u8,
        acked: u16,
        lost: u16,
        probes: u16,
        ce: bool,
    },
    ChargeProbe {
        path: u8,
    },
    SetHealth {
        path: u8,
        health: u8,
    },
    ClearInflight {
        path: u8,
    },
    RequestReroll {
        path: u8,
        random: u16,
    },
    Reroll {
        path: u8,
        random: u16,
    },
    SetPlane {
        path: u8,
        plane: u8,
    },
    SetPlaneUp {
        plane: u8,
        up: bool,
    },
    SetConnLimit {
        pkts: u16,
    },
    Init {
        paths: u8,
        planes: u8,
    },
}

/// A 16-bit count argument of the selector, folded by its two top bits: `00`/`01` give `v %
/// small` (the common case), `10` gives `v % 512` (batches of up to two SACK windows) and `11`
/// keeps `v` (0xC000..=0xFFFF: the saturating and wrapping corners of the 16- and 32-bit
/// arithmetic, which credits from a real connection never reach).
pub fn credit_count(v: u16, small: u16) -> u16 {
    match v >> 14 {
        0 | 1 => v % small,
        2 => v % 512,
        _ => v,
    }
}

impl SelTxn {
    /// The operation with its arguments folded into the ranges the random streams (and the
    /// hdl/tests drivers) use: path < PATHS, health < 4, plane < 16, plane-up index < 8, init
    /// paths < PATHS + 4, planes < 10. Credit counts and the connection limit are mostly small
    /// (acked < 12, lost < 3, probes < 3, limit < 40) so windows fill and drain, but keep the
    /// 16-bit port's whole range reachable (see [`credit_count`]).
    pub fn normalized(self) -> Self {
        match self {
            SelTxn::Select { room } => SelTxn::Select { room },
            SelTxn::Charge { path } => SelTxn::Charge {
                path: path % PATHS as u8,
            },
            SelTxn::Credit {
                path,
                acked,
                lost,
                probes,
                ce,
            } => SelTxn::Credit {
                path: path % PATHS as u8,
                acked: credit_count(acked, 12),
                lost: credit_count(lost, 3),
                probes: credit_count(probes, 3),
                ce,
            },
            SelTxn::ChargeProbe { path } => SelTxn::ChargeProbe {
                path: path % PATHS as u8,
            },
            SelTxn::SetHealth { path, health } => SelTxn::SetHealth {
                path: path % PATHS as u8,
                health: health % 4,
            },
            SelTxn::ClearInflight { path } => SelTxn::ClearInflight {
                path: path % PATHS as u8,
            },
            SelTxn::RequestReroll { path, random } => SelTxn::RequestReroll {
                path: path % PATHS as u8,
                random,
            },
            SelTxn::Reroll { path, random } => SelTxn::Reroll {
                path: path % PATHS as u8,
                random,
            },
            SelTxn::SetPlane { path, plane } => SelTxn::SetPlane {
                path: path % PATHS as u8,
                plane: plane % 16,
            },
            SelTxn::SetPlaneUp { plane, up } => SelTxn::SetPlaneUp { plane: plane % 8, up },
            SelTxn::SetConnLimit { pkts } => SelTxn::SetConnLimit {
                pkts: credit_count(pkts, 40),
            },
            SelTxn::Init { paths, planes } => SelTxn::Init {
                paths: paths % (PATHS as u8 + 4),
                planes: planes % 10,
            },
        }
    }

    pub fn pins(&self, out_ready: bool) -> SelIn {
        let (op, path, room, a, b, c, flag) = match *self {
            SelTxn::Select { room } => (SEL_OP_SELECT, 0, room, 0, 0, 0, false),
            SelTxn::Charge { path } => (SEL_OP_CHARGE, path, 0, 0, 0, 0, false),
            SelTxn::ChargeProbe { path } => (SEL_OP_CHARGE_PROBE, path, 0, 0, 0, 0, false),
            SelTxn::Credit {
                path,
                acked,
                lost,
                probes,
                ce,
            } => (SEL_OP_CREDIT, path, 0, acked, lost, probes, ce),
            SelTxn::SetHealth { path, health } => (SEL_OP_SET_HEALTH, path, 0, u16::from(health), 0, 0, false),
            SelTxn::ClearInflight { path } => (SEL_OP_CLEAR_INFLIGHT, path, 0, 0, 0, 0, false),
            SelTxn::RequestReroll { path, random } => (SEL_OP_REQUEST_REROLL, path, 0, random, 0, 0, false),
            SelTxn::Reroll { path, random } => (SEL_OP_REROLL, path, 0, random, 0, 0, false),
            SelTxn::SetPlane { path, plane } => (SEL_OP_SET_PLANE, path, 0, u16::from(plane), 0, 0, false),
            SelTxn::SetPlaneUp { plane, up } => (SEL_OP_SET_PLANE_UP, 0, 0, u16::from(plane), 0, 0, up),
            SelTxn::SetConnLimit { pkts } => (SEL_OP_SET_CONN_LIMIT, 0, 0, pkts, 0, 0, false),
            SelTxn::Init { paths, planes } => (SEL_OP_INIT, 0, 0, u16::from(paths), u16::from(planes), 0, false),
        };
        SelIn {
            valid: true,
            op: op as u8,
            path: path & PATH_MASK,
            room,
            a,
            b,
            c,
            flag,
            out_ready,
        }
    }
}

/// A `path_selector` record: (op, ok, path, entropy, plane, health); path 255 and zeros for
/// operations without a path (and refused selects).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelRec {
    pub op: u8,
    pub ok: bool,
    pub path: u8,
    pub entropy: u16,
    pub plane: u8,
    pub health: u8,
}

impl SelRec {
    pub fn from_pins(o: &SelPinsOut) -> Self {
        let r = &o.out;
        let code = u64::from(r.op);
        if code == SEL_OP_SET_PLANE_UP
            || code == SEL_OP_SET_CONN_LIMIT
            || code == SEL_OP_INIT
            || (code == SEL_OP_SELECT && !r.ok)
        {
            SelRec {
                op: r.op,
                ok: r.ok,
                path: 255,
                entropy: 0,
                plane: 0,
                health: 0,
            }
        } else {
            SelRec {
                op: r.op,
                ok: r.ok,
                path: r.path,
                entropy: r.entropy,
                plane: r.plane,
                health: r.health,
            }
        }
    }
}

/// The `in_flag`/`health` encoding of a [`PathHealth`] (`HEALTH_*` of the hdl crate).
pub fn health_code(h: PathHealth) -> u8 {
    match h {
        PathHealth::Up => 0,
        PathHealth::Suspect => 1,
        PathHealth::Down => 2,
        PathHealth::Disabled => 3,
    }
}

/// The selector's reference: `PathSelector` applied to the pins (`room`: the room mask the
/// operation sees, which `transport_core` may take from the scoreboard).
pub fn sel_expect(m: &mut PathSelector, i: &SelIn, room: u16) -> SelRec {
    let p = i.path & PATH_MASK;
    let (ok, path) = match u64::from(i.op) {
        SEL_OP_SELECT => match m.select(u32::from(room)) {
            Some(p) => (true, p),
            None => (false, 255),
        },
        SEL_OP_CHARGE => {
            m.charge(p);
            (false, p)
        }
        SEL_OP_CREDIT => (
            m.credit(&Credit {
                path: p,
                acked: i.a,
                lost: i.b,
                probes: i.c,
                ce: i.flag,
            }),
            p,
        ),
        SEL_OP_CHARGE_PROBE => {
            m.charge_probe(p);
            (false, p)
        }
        SEL_OP_SET_HEALTH => {
            let h = [
                PathHealth::Up,
                PathHealth::Suspect,
                PathHealth::Down,
                PathHealth::Disabled,
            ][usize::from(i.a & 3)];
            m.set_health(p, h);
            (false, p)
        }
        SEL_OP_CLEAR_INFLIGHT => {
            m.clear_inflight(p);
            (false, p)
        }
        SEL_OP_REQUEST_REROLL => {
            m.request_reroll(p, i.a);
            (false, p)
        }
        SEL_OP_REROLL => {
            m.reroll(p, i.a);
            (false, p)
        }
        SEL_OP_SET_PLANE => {
            m.set_plane(p, i.a as u8);
            (false, p)
        }
        SEL_OP_SET_PLANE_UP => {
            m.set_plane_up(i.a as u8, i.flag);
            (false, 255)
        }
        SEL_OP_SET_CONN_LIMIT => {
            m.set_conn_limit(i.a);
            (false, 255)
        }
        _ => {
            *m = PathSelector::new(i.a as u8, i.b as u8);
            (false, 255)
        }
    };
    if path == 255 {
        SelRec {
            op: i.op,
            ok,
            path: 255,
            entropy: 0,
            plane: 0,
            health: 0,
        }
    } else {
        let s = m.path(path);
        SelRec {
            op: i.op,
            ok,
            path,
            entropy: s.entropy,
            plane: s.plane,
            health: health_code(s.health),
        }
    }
}

/// `path_selector` against `PathSelector`.
pub struct SelBench;

impl StreamBench for SelBench {
    const NAME: &'static str = "path_selector";
    type Txn = SelTxn;
    type Rec = SelRec;
    type Reference = PathSelector;
    type Pins = PathSelectorPins;
    fn reference() -> PathSelector {
        PathSelector::default()
    }
    fn preamble() -> Vec<SelTxn> {
        vec![SelTxn::Init {
            paths: PATHS as u8,
            planes: 1,
        }] // PathSelector::default()
    }
    fn drive(t: Option<&SelTxn>, out_ready: bool) -> SelIn {
        t.map_or(
            SelIn {
                out_ready,
                ..Default::default()
            },
            |t| t.pins(out_ready),
        )
    }
    fn expect(r: &mut PathSelector, i: &SelIn, _cycle: u64) -> SelRec {
        sel_expect(r, i, i.room)
    }
    fn handshake(o: &SelPinsOut) -> (bool, bool) {
        (o.in_ready, o.out_valid)
    }
    fn record(o: &SelPinsOut) -> SelRec {
        SelRec::from_pins(o)
    }
    fn random_stream(seed: u64, n: usize) -> Vec<SelTxn> {
        sel_stream(seed, n)
    }
}

/// Random selector stream (the mix of hdl/tests/path_selector.rs), starting with an `Init`.
pub fn sel_stream(seed: u64, n: usize) -> Vec<SelTxn> {
    let mut rng = Rng::new(seed);
    // a quarter to all of the paths enabled (4..=16 with 16 paths)
    let mut ops = vec![SelTxn::Init {
        paths: (PATHS / 4) as u8 + rng.below((PATHS - PATHS / 4 + 1) as u32) as u8,
        planes: 1 + rng.below(8) as u8,
    }];
    while ops.len() < n {
        // about one operation in 1,024 starts a burst of ECN pressure on one path (~9% of the
        // stream); the independent mix alone almost never cuts a full window below its flight
        if rng.below(1024) == 0 {
            sel_pressure_burst(&mut rng, &mut ops);
        } else {
            ops.push(sel_random(&mut rng));
        }
    }
    ops.truncate(n);
    ops
}

/// Fill one path's window, then keep it full while mostly marked ACKs of one packet each raise
/// its ECN alpha: the decreases that follow land with the window full, so the cut window is
/// below the packets in flight and the path must close (one operation late: SELECT tests the
/// windows from before the previous operation, SPEC.md §6.3), then reopen as credits drain the
/// flight. Each credit is followed by two SELECTs (the first sees the window before the credit,
/// as the connection layer's retry does), and one in four by a second credit, which defers its
/// sample to the path's next credit.
pub fn sel_pressure_burst(rng: &mut Rng, ops: &mut Vec<SelTxn>) {
    let path = rng.below(PATHS as u32) as u8;
    let room = 1u16 << path;
    for _ in 0..rng.range(8, 24) {
        ops.push(SelTxn::Select { room });
    }
    for _ in 0..rng.range(10, 40) {
        for _ in 0..1 + u32::from(rng.below(4) == 0) {
            ops.push(SelTxn::Credit {
                path,
                acked: 1,
                lost: 0,
                probes: 0,
                ce: rng.below(8) != 0,
            });
        }
        ops.push(SelTxn::Select { room });
        ops.push(SelTxn::Select { room });
    }
}

/// One random selector operation.
pub fn sel_random(rng: &mut Rng) -> SelTxn {
    let p = rng.below(PATHS as u32) as u8;
    match rng.below(100) {
        0..=39 => SelTxn::Select {
            room: if rng.below(4) == 0 { rng.next() as u16 } else { u16::MAX },
        },
        40..=44 => SelTxn::Charge { path: p },
        45..=76 => {
            // one credit in 32 has counts from the whole 16-bit range of the port
            let wide = rng.below(32) == 0;
            let count = |rng: &mut Rng, small: u32| {
                if wide {
                    credit_count(rng.next() as u16, small as u16)
                } else {
                    rng.below(small) as u16
                }
            };
            SelTxn::Credit {
                path: p,
                acked: count(rng, 12),
                lost: count(rng, 3),
                probes: count(rng, 3),
                ce: rng.below(3) == 0,
            }
        }
        77..=79 => SelTxn::ChargeProbe { path: p },
        80..=83 => SelTxn::SetHealth {
            path: p,
            health: rng.below(4) as u8,
        },
        84..=86 => SelTxn::ClearInflight { path: p },
        87..=90 => SelTxn::RequestReroll {
            path: p,
            random: rng.next() as u16,
        },
        91..=92 => SelTxn::Reroll {
            path: p,
            random: rng.next() as u16,
        },
        93..=94 => SelTxn::SetPlane {
            path: p,
            plane: rng.below(16) as u8,
        },
        95..=96 => SelTxn::SetPlaneUp {
            plane: rng.below(8) as u8,
            up: rng.below(3) != 0,
        },
        97..=98 => SelTxn::SetConnLimit {
            pkts: if rng.below(16) == 0 {
                credit_count(rng.next() as u16, 40)
            } else {
                rng.below(40) as u16
            },
        },
        // paths out of range too (clamped)
        _ => SelTxn::Init {
            paths: rng.below(PATHS as u32 + 4) as u8,
            planes: rng.below(10) as u8,
        },
    }
}

/// Pins type of a bench.
pub type InOf<B> = <<B as StreamBench>::Pins as Pins>::In;
/// Output pins type of a bench.
pub type OutOf<B> = <<B as StreamBench>::Pins as Pins>::Out;
