//! Workloads: registered regions, connections and WRITE flows with dependencies, plus the
//! content checks run after the simulation.
//!
//! A workload is expressed over NICs. A host has one NIC per *rail*: one NIC with a port per
//! plane for transports that spread over planes themselves (mroce), or one single-plane NIC
//! per plane for transports that do not (RoCEv2 RC, one QP = one port), in which case a
//! collective runs as `planes` independent instances, each on `1/planes` of the data, as
//! multi-rail deployments do. NIC `nic(h, r) = h * rails + r`.
//!
//! A flow is one RDMA WRITE on a connection. It is posted when its dependencies are met
//! (a flow *received*: the receiver saw its `WriteReceived`; or *sent*: the sender saw its
//! completion) and its start time has come. Dependencies on events at another host are
//! taken as known instantly (a zero-cost credit), a simplification that only matters for
//! the slot-reuse and buffer-reuse guards of the collectives, which never bind in practice.
//! Collectives are real: ring and halving-doubling all-reduce XOR every host's buffer into
//! every other (reduction done by the application at each `WriteReceived`), and the check
//! compares every final buffer with the XOR of all initial contents.

use serde::Serialize;

/// A region to register on a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionSpec {
    /// Bytes.
    pub len: u64,
    /// Peers may WRITE into it.
    pub remote_write: bool,
    /// Fill with the pattern of this seed (`rng::fill_pattern`); `None`: zeros.
    pub pattern: Option<u64>,
}

/// A connection to open before the workload starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnSpec {
    /// Sending NIC.
    pub src: u32,
    /// Receiving NIC.
    pub dst: u32,
}

/// A dependency of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dep {
    /// The receiver of this flow saw it complete.
    Received(u32),
    /// The sender of this flow saw it acknowledged.
    Sent(u32),
}

/// What the receiving application does when a flow lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRecv {
    /// Nothing.
    None,
    /// XOR the landed bytes (in `staging` at `staging_off`) into `buf` at `buf_off`.
    Xor {
        /// Region the flow landed in.
        staging: u16,
        /// Offset of the landed bytes.
        staging_off: u64,
        /// Region reduced into.
        buf: u16,
        /// Offset reduced into.
        buf_off: u64,
    },
}

/// One WRITE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// Connection (index into [`Workload::conns`]).
    pub conn: u32,
    /// Source region (on the connection's sending NIC) and offset.
    pub src_region: u16,
    /// Offset in the source region.
    pub src_off: u64,
    /// Bytes.
    pub len: u32,
    /// Destination region (on the receiving NIC).
    pub dst_region: u16,
    /// Offset in the destination region.
    pub dst_off: u64,
    /// Dependencies.
    pub deps: Vec<Dep>,
    /// Earliest post time, ns after the workload start.
    pub start_ns: u64,
    /// Receiver action.
    pub on_recv: OnRecv,
    /// Logical flow this is part of (the same flow striped over rails has one group).
    pub group: u32,
}

/// A content check after the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// `len` bytes at `off` of `region` on `nic` equal the pattern of `seed` from `pattern_off`.
    Pattern {
        /// NIC.
        nic: u32,
        /// Region.
        region: u16,
        /// Offset.
        off: u64,
        /// Bytes.
        len: u64,
        /// Pattern seed.
        seed: u64,
        /// Offset in the pattern.
        pattern_off: u64,
    },
    /// `region` (first `len` bytes) on every NIC of `nics` equals the XOR of the patterns of
    /// `seeds` (an all-reduce result).
    Xor {
        /// NICs.
        nics: Vec<u32>,
        /// Region.
        region: u16,
        /// Bytes.
        len: u64,
        /// Seeds XORed together.
        seeds: Vec<u64>,
    },
}

/// A complete workload.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// Name for reports.
    pub name: String,
    /// Regions per NIC, registered in order (region index = position).
    pub regions: Vec<Vec<RegionSpec>>,
    /// Connections.
    pub conns: Vec<ConnSpec>,
    /// Flows.
    pub flows: Vec<Flow>,
    /// Checks.
    pub checks: Vec<Check>,
    /// Logical flows (groups).
    pub groups: u32,
    /// Total payload bytes of all flows.
    pub bytes: u64,
}

/// How hosts map to NICs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Hosts.
    pub hosts: usize,
    /// NICs per host.
    pub rails: usize,
}

impl Layout {
    /// NIC index of rail `r` of host `h`.
    #[inline]
    pub fn nic(&self, h: usize, r: usize) -> u32 {
        (h * self.rails + r) as u32
    }
    /// NICs in total.
    pub fn nics(&self) -> usize {
        self.hosts * self.rails
    }
}

/// Seed of the pattern in region `region` of `nic`.
pub fn region_seed(seed: u64, nic: u32, region: u16) -> u64 {
    crate::rng::derive_seed(seed, 0x5EED_0000_0000 | (u64::from(nic) << 16) | u64::from(region))
}

fn split(bytes: u64, rails: usize) -> Result<u64, String> {
    let r = rails as u64;
    if bytes == 0 || !bytes.is_multiple_of(8 * r) {
        return Err(format!(
            "{bytes} bytes do not split into {rails} rails of whole 8-byte words"
        ));
    }
    let per = bytes / r;
    if per > u64::from(u32::MAX) {
        return Err(format!("{per} bytes per message exceed the 32-bit message length"));
    }
    Ok(per)
}

impl Workload {
    fn empty(name: &str, l: Layout) -> Self {
        Workload {
            name: name.into(),
            regions: vec![Vec::new(); l.nics()],
            ..Default::default()
        }
    }

    fn conn(&mut self, src: u32, dst: u32) -> u32 {
        self.conns.push(ConnSpec { src, dst });
        (self.conns.len() - 1) as u32
    }

    fn region(&mut self, nic: u32, len: u64, remote_write: bool, pattern: Option<u64>) -> u16 {
        let v = &mut self.regions[nic as usize];
        v.push(RegionSpec {
            len,
            remote_write,
            pattern,
        });
        (v.len() - 1) as u16
    }

    fn push(&mut self, f: Flow) -> u32 {
        self.bytes += u64::from(f.len);
        self.flows.push(f);
        (self.flows.len() - 1) as u32
    }

    /// Each host sends `bytes` to `perm[h]` (one logical flow per host).
    // h names a host on both sides of perm[h], so it stays an index
    #[allow(clippy::needless_range_loop)]
    pub fn permutation(l: Layout, perm: &[usize], bytes: u64, seed: u64) -> Result<Self, String> {
        let per = split(bytes, l.rails)?;
        let mut w = Self::empty("permutation", l);
        for h in 0..l.hosts {
            for r in 0..l.rails {
                let (s, d) = (l.nic(h, r), l.nic(perm[h], r));
                let sseed = region_seed(seed, s, 0);
                let src = w.region(s, per, false, Some(sseed));
                let _ = src;
                let c = w.conn(s, d);
                let dst_region = 1;
                let f = Flow {
                    conn: c,
                    src_region: 0,
                    src_off: 0,
                    len: per as u32,
                    dst_region,
                    dst_off: 0,
                    deps: Vec::new(),
                    start_ns: 0,
                    on_recv: OnRecv::None,
                    group: h as u32,
                };
                w.push(f);
                w.checks.push(Check::Pattern {
                    nic: d,
                    region: 1,
                    off: 0,
                    len: per,
                    seed: sseed,
                    pattern_off: 0,
                });
            }
        }
        // Destination regions (index 1 everywhere) after every source region (index 0).
        for nic in 0..l.nics() as u32 {
            w.region(nic, per, true, None);
        }
        w.groups = l.hosts as u32;
        Ok(w)
    }

    /// `senders` each send `bytes` to `receiver` (one logical flow per sender).
    pub fn incast(l: Layout, senders: &[usize], receiver: usize, bytes: u64, seed: u64) -> Result<Self, String> {
        let per = split(bytes, l.rails)?;
        let mut w = Self::empty("incast", l);
        for nic in 0..l.nics() as u32 {
            let s = region_seed(seed, nic, 0);
            w.region(nic, per, false, Some(s));
            let slots = if nic as usize / l.rails == receiver {
                senders.len() as u64
            } else {
                1
            };
            w.region(nic, per * slots, true, None);
        }
        for (k, &h) in senders.iter().enumerate() {
            for r in 0..l.rails {
                let (s, d) = (l.nic(h, r), l.nic(receiver, r));
                let c = w.conn(s, d);
                w.push(Flow {
                    conn: c,
                    src_region: 0,
                    src_off: 0,
                    len: per as u32,
                    dst_region: 1,
                    dst_off: k as u64 * per,
                    deps: Vec::new(),
                    start_ns: 0,
                    on_recv: OnRecv::None,
                    group: k as u32,
                });
                w.checks.push(Check::Pattern {
                    nic: d,
                    region: 1,
                    off: k as u64 * per,
                    len: per,
                    seed: region_seed(seed, s, 0),
                    pattern_off: 0,
                });
            }
        }
        w.groups = senders.len() as u32;
        Ok(w)
    }

    /// All-to-all: every host sends `chunk` bytes to every other host, all posted at once.
    /// A host's source region holds one chunk (sent to every peer); its destination region
    /// has one slot per source host.
    pub fn all_to_all(l: Layout, chunk: u64, seed: u64) -> Result<Self, String> {
        let per = split(chunk, l.rails)?;
        let n = l.hosts;
        let mut w = Self::empty("all-to-all", l);
        for nic in 0..l.nics() as u32 {
            w.region(nic, per, false, Some(region_seed(seed, nic, 0)));
            w.region(nic, per * n as u64, true, None);
        }
        let mut g = 0;
        for k in 1..n {
            for s in 0..n {
                let d = (s + k) % n;
                for r in 0..l.rails {
                    let (sn, dn) = (l.nic(s, r), l.nic(d, r));
                    let c = w.conn(sn, dn);
                    w.push(Flow {
                        conn: c,
                        src_region: 0,
                        src_off: 0,
                        len: per as u32,
                        dst_region: 1,
                        dst_off: s as u64 * per,
                        deps: Vec::new(),
                        start_ns: 0,
                        on_recv: OnRecv::None,
                        group: g,
                    });
                    w.checks.push(Check::Pattern {
                        nic: dn,
                        region: 1,
                        off: s as u64 * per,
                        len: per,
                        seed: region_seed(seed, sn, 0),
                        pattern_off: 0,
                    });
                }
                g += 1;
            }
        }
        w.groups = g;
        Ok(w)
    }

    /// Ring all-reduce of `bytes` per host (reduce-scatter then all-gather, 2(N-1) steps of
    /// `bytes / N`), reducing by XOR. Each step's chunk is sent as `slices` WRITEs, and slice
    /// `k` of a step waits only for slice `k` of the step before it (the data it forwards), so
    /// the steps pipeline as NCCL's ring does: with one slice a host's link idles for a hop's
    /// latency at every step. Each host receives reduce-scatter chunks into `slots` staging
    /// slots (a slice reuses its part of a slot once the slice before it there has landed).
    // i is a ring position: conns[i], its neighbours and its chunk are all computed from it
    #[allow(clippy::needless_range_loop)]
    pub fn ring_allreduce(l: Layout, bytes: u64, seed: u64, slots: usize, slices: usize) -> Result<Self, String> {
        let n = l.hosts;
        let per = split(bytes, l.rails)?;
        let slices = slices.max(1);
        if per % (8 * n as u64 * slices as u64) != 0 {
            return Err(format!(
                "{bytes} bytes per host do not split into {n} chunks per rail of {slices} slices of whole words"
            ));
        }
        let c = per / n as u64;
        let sl = c / slices as u64;
        let slots = slots.max(1);
        let mut w = Self::empty("all-reduce-ring", l);
        for nic in 0..l.nics() as u32 {
            w.region(nic, per, true, Some(region_seed(seed, nic, 0)));
            w.region(nic, c * slots as u64, true, None);
        }
        let steps = 2 * (n - 1);
        for r in 0..l.rails {
            let conns: Vec<u32> = (0..n).map(|i| w.conn(l.nic(i, r), l.nic((i + 1) % n, r))).collect();
            let base = w.flows.len() as u32;
            // Flows in posting order: step by step, slice by slice, host by host.
            let id = |i: usize, s: usize, k: usize| base + ((s * slices + k) * n + i) as u32;
            for s in 0..steps {
                for k in 0..slices {
                    let part = k as u64 * sl;
                    for i in 0..n {
                        let prev = (i + n - 1) % n;
                        let mut deps = Vec::new();
                        if s > 0 {
                            deps.push(Dep::Received(id(prev, s - 1, k)));
                        }
                        let group = ((s * slices + k) * n + i) as u32;
                        let f = if s < n - 1 {
                            let chunk = (i + n - s) % n;
                            if s >= slots {
                                deps.push(Dep::Received(id(i, s - slots, k)));
                            }
                            let slot_off = (s % slots) as u64 * c + part;
                            Flow {
                                conn: conns[i],
                                src_region: 0,
                                src_off: chunk as u64 * c + part,
                                len: sl as u32,
                                dst_region: 1,
                                dst_off: slot_off,
                                deps,
                                start_ns: 0,
                                on_recv: OnRecv::Xor {
                                    staging: 1,
                                    staging_off: slot_off,
                                    buf: 0,
                                    buf_off: chunk as u64 * c + part,
                                },
                                group,
                            }
                        } else {
                            let t = s - (n - 1);
                            let chunk = (i + 1 + n - t) % n;
                            // The receiver sent this slice at reduce-scatter step t: it must be
                            // acknowledged before the slice is overwritten.
                            deps.push(Dep::Sent(id((i + 1) % n, t, k)));
                            Flow {
                                conn: conns[i],
                                src_region: 0,
                                src_off: chunk as u64 * c + part,
                                len: sl as u32,
                                dst_region: 0,
                                dst_off: chunk as u64 * c + part,
                                deps,
                                start_ns: 0,
                                on_recv: OnRecv::None,
                                group,
                            }
                        };
                        let got = w.push(f);
                        debug_assert_eq!(got, id(i, s, k));
                    }
                }
            }
            let nics: Vec<u32> = (0..n).map(|h| l.nic(h, r)).collect();
            let seeds = nics.iter().map(|&x| region_seed(seed, x, 0)).collect();
            w.checks.push(Check::Xor {
                nics,
                region: 0,
                len: per,
                seeds,
            });
        }
        w.groups = (steps * slices * n) as u32;
        Ok(w)
    }

    /// Halving-doubling (Rabenseifner) all-reduce of `bytes` per host: log2(N) steps of
    /// recursive-halving reduce-scatter, then log2(N) of recursive-doubling all-gather.
    /// Needs a power-of-two host count. Each step's range goes as `slices` WRITEs; a slice
    /// waits only for the earlier flows that touched its bytes (received into them at its
    /// sender, or, for an all-gather write, read from them at its receiver), so the steps
    /// pipeline. With one slice this is the step-synchronous schedule.
    ///
    /// `near_first` picks the partners' order. False: distance N/2 first, the textbook
    /// recursive halving, so with hosts numbered leaf by leaf the largest steps cross the
    /// spines. True: distance 1 first (vector halving with distance doubling), so they stay
    /// under one leaf and only the last, smallest steps of the reduce-scatter (and the first of
    /// the all-gather) cross the spines; a topology-aware library would order ranks so.
    pub fn hd_allreduce(l: Layout, bytes: u64, seed: u64, slices: usize, near_first: bool) -> Result<Self, String> {
        let n = l.hosts;
        if !n.is_power_of_two() || n < 2 {
            return Err(format!("halving-doubling needs a power-of-two host count, not {n}"));
        }
        let d = n.trailing_zeros() as usize;
        let per = split(bytes, l.rails)?;
        let slices = slices.max(1);
        if per % (8 * n as u64 * slices as u64) != 0 {
            return Err(format!(
                "{bytes} bytes per host do not split into {n} chunks per rail of {slices} slices of whole words"
            ));
        }
        let k_slices = slices as u64;
        let mut w = Self::empty(
            if near_first {
                "all-reduce-hd-near"
            } else {
                "all-reduce-hd"
            },
            l,
        );
        // The partner of step k is at this distance (an XOR of one host-index bit per step).
        let dist_of = |k: usize| if near_first { 1 << k } else { n >> (k + 1) };
        for nic in 0..l.nics() as u32 {
            w.region(nic, per, true, Some(region_seed(seed, nic, 0)));
            w.region(nic, per, true, None); // staging: step k at offset per - per/2^k
        }
        // Flows whose byte range [lo, hi) of a host's region 0 overlaps [a, b).
        fn overlapping(v: &[(u32, u64, u64)], a: u64, b: u64) -> impl Iterator<Item = u32> + '_ {
            v.iter().filter(move |x| x.1 < b && a < x.2).map(|x| x.0)
        }
        for r in 0..l.rails {
            // One connection per ordered pair that exchanges.
            let mut conn_of = std::collections::BTreeMap::new();
            for k in 0..d {
                let dist = dist_of(k);
                for i in 0..n {
                    let p = i ^ dist;
                    conn_of
                        .entry((i, p))
                        .or_insert_with(|| w.conn(l.nic(i, r), l.nic(p, r)));
                }
            }
            // Per host, the flows that landed in (reduced into or wrote) and that were sent
            // from its region 0, with their byte ranges.
            let mut landed: Vec<Vec<(u32, u64, u64)>> = vec![Vec::new(); n];
            let mut read: Vec<Vec<(u32, u64, u64)>> = vec![Vec::new(); n];
            // Ranges: lo[i], size after step k.
            let mut lo = vec![0u64; n];
            let mut size = per;
            let mut stage_off = 0u64;
            for k in 0..d {
                let dist = dist_of(k);
                let half = size / 2;
                let sl = half / k_slices;
                let mut new_lo = lo.clone();
                let mut step_landed = Vec::new();
                for j in 0..slices {
                    let part = j as u64 * sl;
                    for i in 0..n {
                        let p = i ^ dist;
                        // i keeps the lower half if its bit is clear; sends the other half.
                        let keep_lo = if i & dist == 0 { lo[i] } else { lo[i] + half };
                        let send_lo = if i & dist == 0 { lo[i] + half } else { lo[i] };
                        new_lo[i] = keep_lo;
                        let a = send_lo + part;
                        // Everything i received into these bytes reduces into what it sends:
                        // wait for all of it (receives from different partners complete in any
                        // order).
                        let deps = overlapping(&landed[i], a, a + sl).map(Dep::Received).collect();
                        let id = w.push(Flow {
                            conn: conn_of[&(i, p)],
                            src_region: 0,
                            src_off: a,
                            len: sl as u32,
                            dst_region: 1,
                            dst_off: stage_off + part,
                            deps,
                            start_ns: 0,
                            on_recv: OnRecv::Xor {
                                staging: 1,
                                staging_off: stage_off + part,
                                buf: 0,
                                buf_off: a,
                            },
                            group: ((k * slices + j) * n + i) as u32,
                        });
                        read[i].push((id, a, a + sl));
                        step_landed.push((p, id, a, a + sl));
                    }
                }
                for (p, id, a, b) in step_landed {
                    landed[p].push((id, a, b));
                }
                lo = new_lo;
                size = half;
                stage_off += half;
            }
            // All-gather, k = d-1 down to 0: send own range (size per / 2^(k+1)).
            for k in (0..d).rev() {
                let dist = dist_of(k);
                let sl = size / k_slices;
                let mut new_lo = lo.clone();
                let mut step_landed = Vec::new();
                for j in 0..slices {
                    for i in 0..n {
                        let p = i ^ dist;
                        let a = lo[i] + j as u64 * sl;
                        // The bytes are final at i once every flow that landed in them has;
                        // p sent them at reduce-scatter step k (they are what i kept), and
                        // that send must be acknowledged before they are overwritten.
                        let mut deps: Vec<Dep> = overlapping(&landed[i], a, a + sl).map(Dep::Received).collect();
                        deps.extend(overlapping(&read[p], a, a + sl).map(Dep::Sent));
                        let id = w.push(Flow {
                            conn: conn_of[&(i, p)],
                            src_region: 0,
                            src_off: a,
                            len: sl as u32,
                            dst_region: 0,
                            dst_off: a,
                            deps,
                            start_ns: 0,
                            on_recv: OnRecv::None,
                            group: (((2 * d - 1 - k) * slices + j) * n + i) as u32,
                        });
                        read[i].push((id, a, a + sl));
                        step_landed.push((p, id, a, a + sl));
                        new_lo[i] = lo[i].min(lo[p]);
                    }
                }
                for (p, id, a, b) in step_landed {
                    landed[p].push((id, a, b));
                }
                lo = new_lo;
                size *= 2;
            }
            let nics: Vec<u32> = (0..n).map(|h| l.nic(h, r)).collect();
            let seeds = nics.iter().map(|&x| region_seed(seed, x, 0)).collect();
            w.checks.push(Check::Xor {
                nics,
                region: 0,
                len: per,
                seeds,
            });
        }
        w.groups = (2 * d * n * slices) as u32;
        Ok(w)
    }

    /// `per_host` outgoing connections per host, connection `k` of host `h` to host
    /// `(h + 1 + k mod (N-1)) mod N` on rail `k mod rails`, each carrying one WRITE of
    /// `bytes`, all posted at once.
    pub fn connections(l: Layout, per_host: usize, bytes: u64, seed: u64) -> Result<Self, String> {
        let n = l.hosts;
        if bytes == 0 || !bytes.is_multiple_of(8) || bytes > u64::from(u32::MAX) {
            return Err("connection bytes must be a positive multiple of 8 below 4 GiB".into());
        }
        let mut w = Self::empty("connections", l);
        let mut incoming = vec![0u64; l.nics()];
        let mut plan = Vec::new();
        for h in 0..n {
            for k in 0..per_host {
                let d = (h + 1 + k % (n - 1)) % n;
                let r = k % l.rails;
                let (s, dn) = (l.nic(h, r), l.nic(d, r));
                plan.push((s, dn, incoming[dn as usize]));
                incoming[dn as usize] += 1;
            }
        }
        for nic in 0..l.nics() as u32 {
            w.region(nic, bytes, false, Some(region_seed(seed, nic, 0)));
            w.region(nic, bytes * incoming[nic as usize].max(1), true, None);
        }
        for (g, (s, d, slot)) in plan.into_iter().enumerate() {
            let c = w.conn(s, d);
            w.push(Flow {
                conn: c,
                src_region: 0,
                src_off: 0,
                len: bytes as u32,
                dst_region: 1,
                dst_off: slot * bytes,
                deps: Vec::new(),
                start_ns: 0,
                on_recv: OnRecv::None,
                group: g as u32,
            });
            w.checks.push(Check::Pattern {
                nic: d,
                region: 1,
                off: slot * bytes,
                len: bytes,
                seed: region_seed(seed, s, 0),
                pattern_off: 0,
            });
        }
        w.groups = w.flows.len() as u32;
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Execute a workload's data movement in memory (no network), in dependency order, and
    /// check that the checks hold: validates the collective schedules themselves.
    fn dry_run(w: &Workload, seed: u64) {
        let mut mem: Vec<Vec<Vec<u8>>> = w
            .regions
            .iter()
            .map(|rs| {
                rs.iter()
                    .map(|r| {
                        let mut v = vec![0u8; r.len as usize];
                        if let Some(s) = r.pattern {
                            crate::rng::fill_pattern(s, 0, &mut v);
                        }
                        v
                    })
                    .collect()
            })
            .collect();
        // Post ready flows, land them and acknowledge them in a random order: a schedule must
        // not rely on the order in which independent transfers complete. A flow reads its
        // source from its post until its acknowledgement (retransmissions read it again, even
        // after the receiver has it), so its source must not change in between. Odd seeds
        // post whatever they can before landing or acknowledging anything, which keeps flows
        // in flight as long as possible.
        let mut rng = crate::rng::Rng::new(seed);
        let greedy = seed % 2 == 1;
        // 0 pending, 1 in flight, 2 landed (its receiver saw it), 3 acknowledged
        let mut state = vec![0u8; w.flows.len()];
        let mut snapshot: Vec<Vec<u8>> = vec![Vec::new(); w.flows.len()];
        let src_of = |mem: &Vec<Vec<Vec<u8>>>, f: &Flow| {
            let c = w.conns[f.conn as usize];
            mem[c.src as usize][f.src_region as usize][f.src_off as usize..f.src_off as usize + f.len as usize].to_vec()
        };
        let mut left = w.flows.len();
        while left > 0 {
            let postable: Vec<usize> = (0..w.flows.len())
                .filter(|&i| {
                    state[i] == 0
                        && w.flows[i].deps.iter().all(|d| match d {
                            Dep::Received(x) => state[*x as usize] >= 2,
                            Dep::Sent(x) => state[*x as usize] == 3,
                        })
                })
                .collect();
            let moving: Vec<usize> = (0..w.flows.len()).filter(|&i| state[i] == 1 || state[i] == 2).collect();
            let ready: Vec<usize> = if greedy && !postable.is_empty() {
                postable
            } else {
                postable.into_iter().chain(moving).collect()
            };
            assert!(!ready.is_empty(), "dependency cycle");
            let i = ready[rng.below(ready.len() as u64) as usize];
            let f = &w.flows[i];
            match state[i] {
                0 => snapshot[i] = src_of(&mem, f),
                1 => {
                    let data = src_of(&mem, f);
                    assert!(data == snapshot[i], "flow {i}: its source changed before it landed");
                    let c = w.conns[f.conn as usize];
                    mem[c.dst as usize][f.dst_region as usize][f.dst_off as usize..f.dst_off as usize + f.len as usize]
                        .copy_from_slice(&data);
                    if let OnRecv::Xor {
                        staging,
                        staging_off,
                        buf,
                        buf_off,
                    } = f.on_recv
                    {
                        let st = mem[c.dst as usize][staging as usize]
                            [staging_off as usize..staging_off as usize + f.len as usize]
                            .to_vec();
                        let b =
                            &mut mem[c.dst as usize][buf as usize][buf_off as usize..buf_off as usize + f.len as usize];
                        for (x, y) in b.iter_mut().zip(st) {
                            *x ^= y;
                        }
                    }
                }
                _ => {
                    assert!(
                        src_of(&mem, f) == snapshot[i],
                        "flow {i}: its source changed before it was acknowledged"
                    );
                    left -= 1;
                }
            }
            state[i] += 1;
        }
        for ch in &w.checks {
            match ch {
                Check::Pattern {
                    nic,
                    region,
                    off,
                    len,
                    seed,
                    pattern_off,
                } => {
                    let mut e = vec![0u8; *len as usize];
                    crate::rng::fill_pattern(*seed, *pattern_off, &mut e);
                    assert_eq!(
                        &mem[*nic as usize][*region as usize][*off as usize..(*off + *len) as usize],
                        &e[..]
                    );
                }
                Check::Xor {
                    nics,
                    region,
                    len,
                    seeds,
                } => {
                    let mut e = vec![0u8; *len as usize];
                    for s in seeds {
                        let mut p = vec![0u8; *len as usize];
                        crate::rng::fill_pattern(*s, 0, &mut p);
                        for (x, y) in e.iter_mut().zip(p) {
                            *x ^= y;
                        }
                    }
                    for n in nics {
                        assert_eq!(&mem[*n as usize][*region as usize][..*len as usize], &e[..], "nic {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn collective_schedules_compute_the_right_thing() {
        for rails in [1, 2] {
            for order in 0..8 {
                let l = Layout { hosts: 8, rails };
                dry_run(&Workload::ring_allreduce(l, 8 * 8 * 16 * 2, 1, 3, 1).unwrap(), order);
                dry_run(&Workload::ring_allreduce(l, 8 * 8 * 16 * 2, 1, 3, 4).unwrap(), order);
                dry_run(&Workload::ring_allreduce(l, 8 * 8 * 16 * 2, 1, 1, 2).unwrap(), order);
                for slices in [1, 2, 4] {
                    for near in [false, true] {
                        dry_run(
                            &Workload::hd_allreduce(l, 8 * 8 * 16 * 2, 2, slices, near).unwrap(),
                            order,
                        );
                        dry_run(
                            &Workload::hd_allreduce(Layout { hosts: 16, rails }, 16 * 8 * 4 * 2, 2, slices, near)
                                .unwrap(),
                            order,
                        );
                    }
                }
                dry_run(&Workload::all_to_all(l, 64 * 2, 3).unwrap(), order);
                dry_run(
                    &Workload::permutation(l, &[1, 2, 3, 4, 5, 6, 7, 0], 256, 4).unwrap(),
                    order,
                );
                dry_run(&Workload::incast(l, &[1, 2, 5], 0, 256, 5).unwrap(), order);
                dry_run(&Workload::connections(l, 9, 64, 6).unwrap(), order);
            }
        }
    }
}
