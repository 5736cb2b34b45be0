//! Fabric description: H hosts, P independent planes, each plane a two-tier leaf-spine.
//!
//! Per plane, every host has one NIC port wired to its leaf (host `h` is on leaf
//! `h / hosts_per_leaf`); every leaf has one uplink to every spine. Link rates: a host port
//! runs at `host_gbps / planes`; a leaf-spine link at
//! `hosts_per_leaf * host_port_gbps / (spines * oversubscription)`, so oversubscription 1.0
//! is a non-blocking fabric. All links are full duplex; each direction is an output queue of
//! the node that feeds it (FIFO, drop-tail limit, ECN marking threshold) followed by a
//! propagation delay.
//!
//! Directed links of one plane are numbered
//! `[host up (H)] [leaf->spine (L*S)] [spine->leaf (S*L)] [leaf->host (H)]`, and plane `p`
//! starts at `p * links_per_plane`.

use serde::Serialize;

/// Bytes each frame occupies on the wire beyond its length: preamble + SFD (8), FCS (4),
/// inter-frame gap (12).
pub const WIRE_OVERHEAD: u64 = 24;

/// Which links random loss applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LossScope {
    /// Leaf (ToR) -> host links only: every packet, data or ACK, crosses exactly one lossy
    /// link, so the end-to-end loss rate equals `loss` (the setup of design-notes §5).
    #[default]
    TorToHost,
    /// Every directed link (a cross-spine packet crosses four: end-to-end about 4x `loss`).
    All,
    /// Leaf <-> spine links only.
    Fabric,
}

impl core::str::FromStr for LossScope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tor-to-host" | "tor" | "downlink" => Ok(LossScope::TorToHost),
            "all" => Ok(LossScope::All),
            "fabric" => Ok(LossScope::Fabric),
            _ => Err(format!("unknown loss scope {s:?} (tor-to-host, all, fabric)")),
        }
    }
}

/// How a leaf hashes the 5-tuple onto its uplinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EcmpHash {
    /// CRC-32 of the 5-tuple, modulo the uplinks (what switches do; linear over GF(2)).
    #[default]
    Crc32,
    /// CRC-32 passed through a non-linear 64-bit finaliser first (diagnostic: removes the
    /// linearity that makes entropies differing in the same bits collide for every flow).
    Crc32Mixed,
}

impl core::str::FromStr for EcmpHash {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "crc32" | "crc" => Ok(EcmpHash::Crc32),
            "crc32-mixed" | "mixed" => Ok(EcmpHash::Crc32Mixed),
            _ => Err(format!("unknown ECMP hash {s:?} (crc32, crc32-mixed)")),
        }
    }
}

/// What fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FailTarget {
    /// A whole plane: every link of it, host ports included.
    Plane {
        /// Plane.
        plane: u8,
    },
    /// A spine switch (all its links).
    Spine {
        /// Plane.
        plane: u8,
        /// Spine index.
        spine: u16,
    },
    /// A leaf switch (all its links, host ports included).
    Leaf {
        /// Plane.
        plane: u8,
        /// Leaf index.
        leaf: u16,
    },
    /// The cable between a leaf and a spine (both directions).
    LeafSpine {
        /// Plane.
        plane: u8,
        /// Leaf.
        leaf: u16,
        /// Spine.
        spine: u16,
    },
    /// The cable between a host port and its leaf (both directions).
    HostLink {
        /// Plane.
        plane: u8,
        /// Host.
        host: u16,
    },
}

/// A failure at `at_ns`, optionally repaired at `until_ns` (times from the workload start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// What fails.
    pub target: FailTarget,
    /// When, ns after the workload starts.
    pub at_ns: u64,
    /// Repair time, ns after the workload starts.
    pub until_ns: Option<u64>,
}

impl core::str::FromStr for Failure {
    type Err = String;
    /// `plane:P@T[-T2]`, `spine:P:S@T`, `leaf:P:L@T`, `link:P:L:S@T`, `host:P:H@T`, with
    /// times in µs (`us` suffix optional).
    fn from_str(s: &str) -> Result<Self, String> {
        let (what, when) = s.split_once('@').ok_or_else(|| format!("{s:?}: expected WHAT@TIME"))?;
        let t = |x: &str| -> Result<u64, String> {
            let x = x.trim().trim_end_matches("us");
            let v: f64 = x.parse().map_err(|_| format!("{s:?}: bad time {x:?}"))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{s:?}: bad time {x:?}"));
            }
            Ok((v * 1000.0).round() as u64)
        };
        let (at, until) = match when.split_once('-') {
            Some((a, b)) => (t(a)?, Some(t(b)?)),
            None => (t(when)?, None),
        };
        let parts: Vec<&str> = what.split(':').collect();
        let n = |i: usize| -> Result<u16, String> {
            parts
                .get(i)
                .ok_or_else(|| format!("{s:?}: missing field {i}"))?
                .parse()
                .map_err(|_| format!("{s:?}: bad number in field {i}"))
        };
        let target = match (parts[0], parts.len()) {
            ("plane", 2) => FailTarget::Plane { plane: n(1)? as u8 },
            ("spine", 3) => FailTarget::Spine {
                plane: n(1)? as u8,
                spine: n(2)?,
            },
            ("leaf", 3) => FailTarget::Leaf {
                plane: n(1)? as u8,
                leaf: n(2)?,
            },
            ("link", 4) => FailTarget::LeafSpine {
                plane: n(1)? as u8,
                leaf: n(2)?,
                spine: n(3)?,
            },
            ("host", 3) => FailTarget::HostLink {
                plane: n(1)? as u8,
                host: n(2)?,
            },
            _ => {
                return Err(format!(
                    "{s:?}: expected plane:P, spine:P:S, leaf:P:L, link:P:L:S or host:P:H"
                ))
            }
        };
        if until.is_some_and(|u| u <= at) {
            return Err(format!("{s:?}: repair time must be after the failure"));
        }
        Ok(Failure {
            target,
            at_ns: at,
            until_ns: until,
        })
    }
}

/// Everything physical about a fabric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FabricConfig {
    /// Hosts.
    pub hosts: usize,
    /// Planes (1..=8).
    pub planes: u8,
    /// Leaves per plane.
    pub leaves: usize,
    /// Spines per plane.
    pub spines: usize,
    /// Leaf oversubscription (downlink capacity / uplink capacity).
    pub oversubscription: f64,
    /// Total NIC bandwidth of a host, Gb/s, split evenly across its plane ports.
    pub host_gbps: f64,
    /// Propagation delay of a host <-> leaf link, ns.
    pub host_link_delay_ns: u64,
    /// Propagation delay of a leaf <-> spine link, ns.
    pub fabric_link_delay_ns: u64,
    /// Drop-tail limit of every switch output queue, in µs of its link's rate.
    pub buffer_us: f64,
    /// ECN marking threshold of every switch output queue, in µs of its link's rate.
    pub ecn_us: f64,
    /// Random loss probability per frame on the links of `loss_scope`.
    pub loss: f64,
    /// Which links are lossy.
    pub loss_scope: LossScope,
    /// Failures and repairs.
    pub failures: Vec<Failure>,
    /// After a leaf's uplink dies, the leaf removes it from its ECMP group this much later
    /// (local link-down detection); `None`: never (traffic hashed onto it is black-holed,
    /// as until a routing protocol reconverges).
    pub ecmp_local_repair_ns: Option<u64>,
    /// ECMP hash function of the leaves.
    pub ecmp_hash: EcmpHash,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            hosts: 64,
            planes: 4,
            leaves: 8,
            spines: 8,
            oversubscription: 1.0,
            host_gbps: 400.0,
            host_link_delay_ns: 1000,
            fabric_link_delay_ns: 1000,
            buffer_us: 20.0,
            ecn_us: 4.0,
            loss: 0.0,
            loss_scope: LossScope::TorToHost,
            failures: Vec::new(),
            ecmp_local_repair_ns: None,
            ecmp_hash: EcmpHash::Crc32,
        }
    }
}

/// Class of a directed link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkClass {
    /// Host NIC port -> leaf.
    HostUp,
    /// Leaf -> spine.
    LeafUp,
    /// Spine -> leaf.
    SpineDown,
    /// Leaf -> host.
    HostDown,
}

impl FabricConfig {
    /// Check the parameters; the error names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        if self.hosts < 2 {
            return Err("hosts must be at least 2".into());
        }
        if self.hosts > 60_000 {
            return Err("hosts must be at most 60000".into());
        }
        if self.planes == 0 || self.planes as usize > mroce_model::params::MAX_PLANES {
            return Err(format!("planes must be 1..={}", mroce_model::params::MAX_PLANES));
        }
        if self.leaves == 0 || self.leaves > self.hosts {
            return Err("leaves must be 1..=hosts".into());
        }
        if self.spines == 0 || self.spines > 4096 {
            return Err("spines must be 1..=4096".into());
        }
        if !(self.oversubscription.is_finite() && self.oversubscription > 0.0) {
            return Err("oversubscription must be positive".into());
        }
        if !(self.host_gbps.is_finite() && self.host_gbps > 0.0) {
            return Err("host-gbps must be positive".into());
        }
        if !(0.0..=1.0).contains(&self.loss) {
            return Err("loss must be a probability".into());
        }
        if !(self.buffer_us.is_finite() && self.buffer_us > 0.0 && self.ecn_us.is_finite() && self.ecn_us >= 0.0) {
            return Err("buffer-us must be positive and ecn-us non-negative".into());
        }
        for f in &self.failures {
            let (plane, ok) = match f.target {
                FailTarget::Plane { plane } => (plane, true),
                FailTarget::Spine { plane, spine } => (plane, (spine as usize) < self.spines),
                FailTarget::Leaf { plane, leaf } => (plane, (leaf as usize) < self.leaves),
                FailTarget::LeafSpine { plane, leaf, spine } => {
                    (plane, (leaf as usize) < self.leaves && (spine as usize) < self.spines)
                }
                FailTarget::HostLink { plane, host } => (plane, (host as usize) < self.hosts),
            };
            if plane >= self.planes || !ok {
                return Err(format!("failure {f:?} names something the fabric does not have"));
            }
        }
        Ok(())
    }

    /// Hosts per leaf (the last leaf may have fewer).
    pub fn hosts_per_leaf(&self) -> usize {
        self.hosts.div_ceil(self.leaves)
    }

    /// Leaf of a host.
    #[inline]
    pub fn leaf_of(&self, host: usize) -> usize {
        host / self.hosts_per_leaf()
    }

    /// Rate of one host port, Gb/s.
    pub fn host_port_gbps(&self) -> f64 {
        self.host_gbps / f64::from(self.planes)
    }

    /// Rate of one leaf <-> spine link, Gb/s.
    pub fn fabric_link_gbps(&self) -> f64 {
        self.hosts_per_leaf() as f64 * self.host_port_gbps() / (self.spines as f64 * self.oversubscription)
    }

    /// Directed links per plane.
    pub fn links_per_plane(&self) -> usize {
        2 * self.hosts + 2 * self.leaves * self.spines
    }

    /// Index of the host -> leaf link of `host` on `plane`.
    #[inline]
    pub fn host_up(&self, plane: usize, host: usize) -> usize {
        plane * self.links_per_plane() + host
    }
    /// Index of the leaf -> spine link.
    #[inline]
    pub fn leaf_up(&self, plane: usize, leaf: usize, spine: usize) -> usize {
        plane * self.links_per_plane() + self.hosts + leaf * self.spines + spine
    }
    /// Index of the spine -> leaf link.
    #[inline]
    pub fn spine_down(&self, plane: usize, spine: usize, leaf: usize) -> usize {
        plane * self.links_per_plane() + self.hosts + self.leaves * self.spines + spine * self.leaves + leaf
    }
    /// Index of the leaf -> host link of `host` on `plane`.
    #[inline]
    pub fn host_down(&self, plane: usize, host: usize) -> usize {
        plane * self.links_per_plane() + self.hosts + 2 * self.leaves * self.spines + host
    }

    /// Plane, class and rate (Gb/s) of a link index.
    pub fn link_info(&self, li: usize) -> (usize, LinkClass, f64) {
        let lp = self.links_per_plane();
        let (plane, r) = (li / lp, li % lp);
        let ls = self.leaves * self.spines;
        let class = if r < self.hosts {
            LinkClass::HostUp
        } else if r < self.hosts + ls {
            LinkClass::LeafUp
        } else if r < self.hosts + 2 * ls {
            LinkClass::SpineDown
        } else {
            LinkClass::HostDown
        };
        let rate = match class {
            LinkClass::HostUp | LinkClass::HostDown => self.host_port_gbps(),
            _ => self.fabric_link_gbps(),
        };
        (plane, class, rate)
    }

    /// Every directed link a failure takes down.
    pub fn failure_links(&self, t: &FailTarget) -> Vec<usize> {
        let mut v = Vec::new();
        match *t {
            FailTarget::Plane { plane } => {
                let p = plane as usize;
                v.extend(p * self.links_per_plane()..(p + 1) * self.links_per_plane());
            }
            FailTarget::Spine { plane, spine } => {
                for l in 0..self.leaves {
                    v.push(self.leaf_up(plane as usize, l, spine as usize));
                    v.push(self.spine_down(plane as usize, spine as usize, l));
                }
            }
            FailTarget::Leaf { plane, leaf } => {
                let p = plane as usize;
                for s in 0..self.spines {
                    v.push(self.leaf_up(p, leaf as usize, s));
                    v.push(self.spine_down(p, s, leaf as usize));
                }
                for h in 0..self.hosts {
                    if self.leaf_of(h) == leaf as usize {
                        v.push(self.host_up(p, h));
                        v.push(self.host_down(p, h));
                    }
                }
            }
            FailTarget::LeafSpine { plane, leaf, spine } => {
                v.push(self.leaf_up(plane as usize, leaf as usize, spine as usize));
                v.push(self.spine_down(plane as usize, spine as usize, leaf as usize));
            }
            FailTarget::HostLink { plane, host } => {
                v.push(self.host_up(plane as usize, host as usize));
                v.push(self.host_down(plane as usize, host as usize));
            }
        }
        v
    }

    /// Serialisation time of a `len`-byte frame on a link of `gbps`, ps.
    pub fn ser_ps(len: u64, gbps: f64) -> u64 {
        (((len + WIRE_OVERHEAD) as f64 * 8_000.0 / gbps).round() as u64).max(1)
    }

    /// Unloaded round trip between hosts on different leaves: a `data_len` frame out over
    /// four links and an `ack_len` frame back, store and forward at every hop, ns.
    pub fn base_rtt_ns(&self, data_len: u64, ack_len: u64) -> f64 {
        let h = self.host_port_gbps();
        let f = self.fabric_link_gbps();
        let one_way = |len: u64| {
            2 * Self::ser_ps(len, h)
                + 2 * Self::ser_ps(len, f)
                + 2 * 1000 * self.host_link_delay_ns
                + 2 * 1000 * self.fabric_link_delay_ns
        };
        (one_way(data_len) + one_way(ack_len)) as f64 / 1000.0
    }

    /// [`Self::base_rtt_ns`] of a WRITE of `mtu` payload bytes and its ACK, rounded up: the
    /// fabric's unloaded RTT that a NIC is configured with (`EndpointConfig::fabric_rtt_ns`)
    /// and the unit of the incast's convergence time.
    pub fn unloaded_rtt_ns(&self, mtu: u16) -> u64 {
        use mroce_model::wire;
        let ack = wire::FRAME_OVERHEAD + wire::MRH_LEN + wire::AKH_LEN;
        self.base_rtt_ns(u64::from(mtu) + wire::WRITE_HEADERS as u64, ack as u64)
            .ceil() as u64
    }
}

/// CRC-32 ECMP hash of a frame's 5-tuple: CRC-32 (IEEE) over the 13-byte key
/// `src_ip(4) ‖ dst_ip(4) ‖ src_port(2, BE) ‖ dst_port(2, BE) ‖ proto(1)`; 0 for frames
/// that are not IPv4. The same function as the `pipe` harness's `--ecmp crc`.
#[inline]
pub fn ecmp_hash(frame: &[u8]) -> u32 {
    use mroce_model::wire;
    const E: usize = wire::ETH_LEN;
    if frame.len() < wire::BTH_OFFSET || frame[12] != 0x08 || frame[13] != 0x00 {
        return 0;
    }
    let mut key = [0u8; 13];
    key[0..8].copy_from_slice(&frame[E + 12..E + 20]);
    key[8..12].copy_from_slice(&frame[E + wire::IPV4_LEN..E + wire::IPV4_LEN + 4]);
    key[12] = frame[E + 9];
    crc32fast::hash(&key)
}

/// The hash a leaf uses for `frame` under `h`.
#[inline]
pub fn ecmp_hash_with(h: EcmpHash, frame: &[u8]) -> u32 {
    let c = ecmp_hash(frame);
    match h {
        EcmpHash::Crc32 => c,
        EcmpHash::Crc32Mixed => (crate::rng::splitmix(u64::from(c)) >> 32) as u32,
    }
}

/// The spine a leaf picks for a hash among `spines` equal-cost uplinks.
#[inline]
pub fn ecmp_pick(hash: u32, spines: usize) -> usize {
    (hash % spines as u32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_numbering_is_a_bijection() {
        let f = FabricConfig {
            hosts: 10,
            leaves: 3,
            spines: 2,
            planes: 2,
            ..Default::default()
        };
        let mut seen = vec![false; f.links_per_plane() * 2];
        for p in 0..2 {
            for h in 0..f.hosts {
                for li in [f.host_up(p, h), f.host_down(p, h)] {
                    assert!(!seen[li]);
                    seen[li] = true;
                }
            }
            for l in 0..f.leaves {
                for s in 0..f.spines {
                    for li in [f.leaf_up(p, l, s), f.spine_down(p, s, l)] {
                        assert!(!seen[li]);
                        seen[li] = true;
                    }
                }
            }
        }
        assert!(seen.iter().all(|x| *x));
        assert_eq!(f.link_info(f.leaf_up(1, 2, 1)).1, LinkClass::LeafUp);
        assert_eq!(f.link_info(f.host_down(1, 9)).1, LinkClass::HostDown);
    }

    #[test]
    fn failure_parse() {
        let f: Failure = "plane:1@200-700us".parse().unwrap();
        assert_eq!(f.target, FailTarget::Plane { plane: 1 });
        assert_eq!((f.at_ns, f.until_ns), (200_000, Some(700_000)));
        assert!("link:0:1:2@5".parse::<Failure>().is_ok());
        assert!("plane@5".parse::<Failure>().is_err());
        assert!("plane:0@5-4".parse::<Failure>().is_err());
    }
}
