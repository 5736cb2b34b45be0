//! The catalogue. Case ids are `C-<SPEC.md section>-<nn>`; each case names the section it
//! checks and is a function of a [`Tester`] (the scripted peer).
//!
//! Areas: [`decode`] (§3, §4, §9.1: the receive checks and their counters), [`golden`] (§5.11
//! golden frames in and out), [`encode`] (§5: every packet type the IUT emits), [`tracker`]
//! (§6.1: SACK generation, windows, PSN wrap), [`sender`] (§6.2, §8.2–§8.4: PSNs, loss
//! detection, exactly-once retransmission, RTO, backoff, probes, path and plane health, ACK
//! validation), [`cc`] (§8.5: ECN and rate hints), [`placement`] (§8.6, §9.2: placement,
//! stream order, NAKs and every placement error), [`cm`] (§8.1, §8.7: connection management
//! and peer timeout).

use crate::adapter::{Need, Setup};
use crate::harness::{Tester, R};

pub mod cc;
pub mod cm;
pub mod decode;
pub mod encode;
pub mod golden;
pub mod placement;
pub mod sender;
pub mod tracker;

/// One conformance case.
#[derive(Clone, Copy)]
pub struct Case {
    /// Id, `C-<section>-<nn>`.
    pub id: &'static str,
    /// SPEC.md section checked (e.g. "§3.7").
    pub section: &'static str,
    /// What is checked.
    pub title: &'static str,
    /// Capabilities the case needs from the target.
    pub needs: &'static [Need],
    /// IUT configuration.
    pub setup: fn() -> Setup,
    /// The scripted exchange.
    pub run: fn(&mut Tester<'_>) -> R,
}

/// Shorthand for catalogue entries.
pub(crate) const fn case(
    id: &'static str,
    section: &'static str,
    title: &'static str,
    needs: &'static [Need],
    run: fn(&mut Tester<'_>) -> R,
) -> Case {
    Case {
        id,
        section,
        title,
        needs,
        setup: crate::harness::default_setup,
        run,
    }
}

impl Case {
    /// The same case with another IUT configuration.
    pub(crate) const fn with_setup(mut self, setup: fn() -> Setup) -> Case {
        self.setup = setup;
        self
    }
}

/// Every case, in catalogue order (by section).
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(decode::cases());
    v.extend(golden::cases());
    v.extend(encode::cases());
    v.extend(tracker::cases());
    v.extend(sender::cases());
    v.extend(cc::cases());
    v.extend(placement::cases());
    v.extend(cm::cases());
    // Catalogue order: by section, then number.
    v.sort_by_key(|c| key(c.id));
    v
}

/// Sort key of an id "C-5.11-03": ([5, 11], 3).
fn key(id: &str) -> (Vec<u32>, u32) {
    let (sec, n) = id[2..].rsplit_once('-').unwrap_or(("", "0"));
    (
        sec.split('.').filter_map(|x| x.parse().ok()).collect(),
        n.parse().unwrap_or(0),
    )
}

/// Frame surgery for malformed input: recompute the IPv4 header checksum.
pub fn fix_ip_checksum(f: &mut [u8]) {
    f[24] = 0;
    f[25] = 0;
    let c = mroce_model::wire::ipv4_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
}

/// Recompute the ICRC (after editing a covered byte).
pub fn fix_icrc(f: &mut [u8]) {
    let n = f.len();
    let c = mroce_model::wire::icrc(&f[..n - 4]);
    f[n - 4..].copy_from_slice(&c.to_le_bytes());
}

/// Replace the UDP payload of a frame (BTH .. ICRC), fixing the IPv4 and UDP lengths, the
/// IPv4 checksum and (if `icrc`) the ICRC.
pub fn with_udp_payload(f: &[u8], payload: &[u8], icrc: bool) -> Vec<u8> {
    let mut g = f[..42].to_vec();
    g.extend_from_slice(payload);
    let total = (g.len() - 14) as u16;
    g[16..18].copy_from_slice(&total.to_be_bytes());
    g[38..40].copy_from_slice(&(total - 20).to_be_bytes());
    fix_ip_checksum(&mut g);
    if icrc && g.len() >= 58 {
        fix_icrc(&mut g);
    }
    g
}
