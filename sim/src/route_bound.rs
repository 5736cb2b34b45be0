//! Route bound: the largest rate that every flow of a workload could get at the same time on
//! fixed routes (the maximum concurrent flow), whatever the transport does.
//!
//! A transport that sprays over a connection's paths can only choose how much to send on
//! each path; the switches' hashes chose the routes. The bound separates what the routes
//! allow from what the congestion control reaches. It is bracketed from both sides:
//! - `lower`: a feasible split of every flow over its paths (Garg–Könemann / Fleischer
//!   multiplicative weights, then scaled to fit every link);
//! - `upper`: an LP-duality certificate. For any link lengths `l ≥ 0`, the concurrent rate
//!   is at most `Σ c_e l_e / Σ_f d_f · dist_f(l)`; the smallest such ratio seen is kept.

use crate::rng::Rng;

/// One flow: its demand and the links of each of its paths.
#[derive(Debug, Clone, PartialEq)]
pub struct Commodity {
    /// Demand in link-capacity units (the rate that counts as 1.0 of its share).
    pub demand: f64,
    /// Each path as a list of link indices.
    pub paths: Vec<Vec<usize>>,
}

/// Bracket of the maximum concurrent flow λ*: `lower ≤ λ* ≤ upper`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bound {
    /// λ of a feasible routing.
    pub lower: f64,
    /// λ of the best dual certificate.
    pub upper: f64,
    /// Phases of the multiplicative-weights loop run.
    pub phases: usize,
}

/// Why an instance cannot be bounded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteBoundError {
    /// A link capacity is not a positive finite number.
    #[error("link {0} has capacity {1}, not a positive number")]
    BadCapacity(usize, f64),
    /// A demand is not a positive finite number.
    #[error("flow {0} has demand {1}, not a positive number")]
    BadDemand(usize, f64),
    /// A flow has no path, or a path has no link.
    #[error("flow {0} has an empty path list or an empty path")]
    EmptyPath(usize),
    /// A path names a link that does not exist.
    #[error("flow {0} uses link {1}, but there are {2} links")]
    NoSuchLink(usize, usize, usize),
    /// `eps` is outside (0, 0.5].
    #[error("eps {0} is outside (0, 0.5]")]
    BadEps(f64),
}

/// Bracket the maximum concurrent flow of `flows` on links of capacity `cap`. `eps` is the
/// step of the multiplicative weights (smaller: tighter and slower); the loop stops once
/// `upper - lower ≤ gap · upper`, after `max_phases`, or when the lengths reach the
/// algorithm's end (Σ c·l ≥ 1).
pub fn max_concurrent_flow(
    cap: &[f64],
    flows: &[Commodity],
    eps: f64,
    gap: f64,
    max_phases: usize,
) -> Result<Bound, RouteBoundError> {
    if !(eps > 0.0 && eps <= 0.5) {
        return Err(RouteBoundError::BadEps(eps));
    }
    check_instance(cap, flows)?;
    let m = cap.len() as f64;
    // Fleischer's starting length: small enough that the scaled flow is near optimal.
    let delta = (m / (1.0 - eps)).powf(-1.0 / eps).max(f64::MIN_POSITIVE * 1e10);
    let mut len: Vec<f64> = cap.iter().map(|c| delta / c).collect();
    let mut load = vec![0.0; cap.len()];
    let path_len = |len: &[f64], p: &[usize]| p.iter().map(|&e| len[e]).sum::<f64>();
    let mut b = Bound {
        lower: 0.0,
        upper: f64::INFINITY,
        phases: 0,
    };
    while b.phases < max_phases {
        let d: f64 = cap.iter().zip(&len).map(|(c, l)| c * l).sum();
        let alpha: f64 = flows
            .iter()
            .map(|f| f.demand * f.paths.iter().map(|p| path_len(&len, p)).fold(f64::INFINITY, f64::min))
            .sum();
        b.upper = b.upper.min(d / alpha);
        if d >= 1.0 || b.upper - b.lower <= gap * b.upper {
            break;
        }
        for (i, f) in flows.iter().enumerate() {
            let mut left = f.demand;
            while left > 1e-12 * f.demand {
                // Each path's length once, not once per comparison: this is the inner loop.
                let (p, _) = f
                    .paths
                    .iter()
                    .map(|p| (p, path_len(&len, p)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .ok_or(RouteBoundError::EmptyPath(i))?;
                let u = p.iter().map(|&e| cap[e]).fold(left, f64::min);
                for &e in p {
                    load[e] += u;
                    len[e] *= 1.0 + eps * u / cap[e];
                }
                left -= u;
            }
        }
        b.phases += 1;
        // Every flow has routed `phases` times its demand: scaled to fit the most loaded link.
        let congestion = load.iter().zip(cap).map(|(x, c)| x / c).fold(0.0, f64::max);
        if congestion > 0.0 {
            b.lower = b.lower.max(b.phases as f64 / congestion);
        }
    }
    Ok(b)
}

/// Capacities positive and finite; every flow with a positive demand, paths, and links that exist.
fn check_instance(cap: &[f64], flows: &[Commodity]) -> Result<(), RouteBoundError> {
    for (e, &c) in cap.iter().enumerate() {
        if !(c.is_finite() && c > 0.0) {
            return Err(RouteBoundError::BadCapacity(e, c));
        }
    }
    for (f, c) in flows.iter().enumerate() {
        if !(c.demand.is_finite() && c.demand > 0.0) {
            return Err(RouteBoundError::BadDemand(f, c.demand));
        }
        if c.paths.is_empty() || c.paths.iter().any(Vec::is_empty) {
            return Err(RouteBoundError::EmptyPath(f));
        }
        if let Some(&e) = c.paths.iter().flatten().find(|&&e| e >= cap.len()) {
            return Err(RouteBoundError::NoSuchLink(f, e, cap.len()));
        }
    }
    Ok(())
}

/// The concurrent rate of the even split: every flow sends the same share on each of its
/// paths, whatever the load (spraying with no congestion feedback), and all flows reach λ when
/// the most loaded link is full. It is a feasible split, so it never exceeds the maximum
/// concurrent flow; the distance between the two is what a transport's path weighting can win.
pub fn even_split_rate(cap: &[f64], flows: &[Commodity]) -> Result<f64, RouteBoundError> {
    check_instance(cap, flows)?;
    let mut load = vec![0.0; cap.len()];
    for f in flows {
        let share = f.demand / f.paths.len() as f64;
        for &e in f.paths.iter().flatten() {
            load[e] += share;
        }
    }
    let congestion = load.iter().zip(cap).map(|(x, c)| x / c).fold(0.0, f64::max);
    Ok(if congestion > 0.0 {
        1.0 / congestion
    } else {
        f64::INFINITY
    })
}

/// The shape of a multi-plane two-tier leaf-spine fabric and of the flows' paths on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteShape {
    /// Leaves per plane (hosts are spread over them in order).
    pub leaves: usize,
    /// Spines per plane.
    pub spines: usize,
    /// Planes.
    pub planes: usize,
    /// Paths of each flow on every plane.
    pub paths_per_plane: usize,
    /// Capacity of a leaf-spine link in host ports (hosts per leaf / spines at 1:1).
    pub fabric_cap: f64,
    /// Each plane carries a fixed 1/`planes` of every flow (one single-plane NIC per plane, as
    /// RoCEv2 multi-rail) instead of any split the NIC chooses (one NIC over all planes).
    pub fixed_plane_share: bool,
}

impl RouteShape {
    /// A 1:1 fabric for `hosts` hosts, flows free to split over the planes.
    pub fn one_to_one(hosts: usize, leaves: usize, spines: usize, planes: usize, paths_per_plane: usize) -> Self {
        let l = leaves.clamp(1, hosts.max(1));
        RouteShape {
            leaves: l,
            spines: spines.max(1),
            planes,
            paths_per_plane,
            fabric_cap: hosts.max(1).div_ceil(l) as f64 / spines.max(1) as f64,
            fixed_plane_share: false,
        }
    }
}

/// A permutation on a [`RouteShape`], each path on a uniformly drawn spine of its plane (a
/// stand-in for the switches' hash of random entropies). Links: each host's transmit and
/// receive port per plane (capacity 1), each leaf's uplink to each spine and each spine's
/// downlink to each leaf per plane (capacity `fabric_cap`). A flow's demand is `planes` (or 1
/// per plane with a fixed share): λ is then the fraction of a host's total port capacity every
/// flow can get at once.
#[derive(Debug, Clone)]
pub struct PermutationRoutes {
    hosts: usize,
    shape: RouteShape,
    /// Destination of each host's flow.
    dst: Vec<usize>,
    /// Spine of path `j` of flow `f` on plane `p`: `spine[(f * planes + p) * paths_per_plane + j]`.
    spine: Vec<usize>,
    rng: Rng,
}

impl PermutationRoutes {
    /// A random permutation (a derangement drawn from `seed`) on a 1:1 fabric, and every
    /// path's spine, also from `seed`.
    pub fn new(hosts: usize, leaves: usize, spines: usize, planes: usize, paths_per_plane: usize, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let dst = rng.derangement(hosts.max(2));
        let shape = RouteShape::one_to_one(hosts.max(2), leaves, spines, planes, paths_per_plane);
        Self::with_rng(dst, shape, rng)
    }

    /// The permutation `dst` (host `i` sends to `dst[i]`; an entry out of range or equal to
    /// its index sends nothing across the fabric) on `shape`, every path's spine drawn from
    /// `seed`.
    pub fn with_destinations(dst: Vec<usize>, shape: RouteShape, seed: u64) -> Self {
        Self::with_rng(dst, shape, Rng::new(seed))
    }

    fn with_rng(dst: Vec<usize>, shape: RouteShape, mut rng: Rng) -> Self {
        let h = dst.len().max(1);
        let shape = RouteShape {
            leaves: shape.leaves.clamp(1, h),
            spines: shape.spines.max(1),
            planes: shape.planes.max(1),
            paths_per_plane: shape.paths_per_plane.max(1),
            ..shape
        };
        // A flow to itself or nowhere stays inside its leaf: it uses no spine.
        let dst = dst
            .iter()
            .enumerate()
            .map(|(i, &d)| if d < h { d } else { i })
            .collect();
        let n = h * shape.planes * shape.paths_per_plane;
        let spine = (0..n).map(|_| rng.below(shape.spines as u64) as usize).collect();
        PermutationRoutes {
            hosts: h,
            shape,
            dst,
            spine,
            rng,
        }
    }

    /// The shape, with its counts raised to at least 1.
    pub fn shape(&self) -> &RouteShape {
        &self.shape
    }

    /// Links: ports (transmit, receive) per host and plane, then uplinks, then downlinks.
    fn link_count(&self) -> usize {
        let (h, np) = (self.hosts, self.shape.planes);
        2 * h * np + 2 * np * self.shape.leaves * self.shape.spines
    }

    fn leaf(&self, host: usize) -> usize {
        host / self.hosts.div_ceil(self.shape.leaves)
    }

    /// Uplink and downlink of path `j` of flow `f` on plane `p`; `None` within a leaf.
    fn fabric_links(&self, f: usize, p: usize, j: usize) -> Option<(usize, usize)> {
        let (h, l, s, np) = (self.hosts, self.shape.leaves, self.shape.spines, self.shape.planes);
        let (sl, dl) = (self.leaf(f), self.leaf(self.dst[f]));
        if sl == dl {
            return None;
        }
        let sp = self.spine[(f * np + p) * self.shape.paths_per_plane + j];
        let up = 2 * h * np + (p * l + sl) * s + sp;
        let down = 2 * h * np + np * l * s + (p * s + sp) * l + dl;
        Some((up, down))
    }

    /// Link capacities and flows for [`max_concurrent_flow`].
    pub fn instance(&self) -> (Vec<f64>, Vec<Commodity>) {
        let (h, np, k) = (self.hosts, self.shape.planes, self.shape.paths_per_plane);
        let mut cap = vec![1.0; 2 * h * np];
        cap.resize(self.link_count(), self.shape.fabric_cap);
        let mut flows = Vec::with_capacity(h * np);
        for f in 0..h {
            let mut paths = Vec::with_capacity(np * k);
            for p in 0..np {
                let (tx, rx) = (f * np + p, h * np + self.dst[f] * np + p);
                for j in 0..k {
                    paths.push(match self.fabric_links(f, p, j) {
                        Some((up, down)) => vec![tx, up, down, rx],
                        None => vec![tx, rx],
                    });
                }
                if self.shape.fixed_plane_share {
                    // One commodity per plane: its share cannot move to another plane.
                    flows.push(Commodity {
                        demand: 1.0,
                        paths: std::mem::take(&mut paths),
                    });
                }
            }
            if !self.shape.fixed_plane_share {
                flows.push(Commodity {
                    demand: np as f64,
                    paths,
                });
            }
        }
        (cap, flows)
    }

    /// One round of re-routing: with every flow split evenly over its paths (spraying without
    /// windows), move one path (drawn at random) off every fabric link loaded above its
    /// capacity to a random spine. With `tries > 0` the new spine is the first of up to
    /// `tries` random draws whose two links are below capacity (a re-route that knows which
    /// routes are free); without such a draw the path stays. Returns the paths moved.
    pub fn reroute_overfull(&mut self, tries: usize) -> usize {
        let (h, np, k) = (self.hosts, self.shape.planes, self.shape.paths_per_plane);
        let n_links = self.link_count();
        let cap = self.shape.fabric_cap;
        let share = 1.0 / k as f64;
        let mut load = vec![0.0; n_links];
        let mut on: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); n_links];
        for f in 0..h {
            for p in 0..np {
                for j in 0..k {
                    if let Some((up, down)) = self.fabric_links(f, p, j) {
                        for e in [up, down] {
                            load[e] += share;
                            on[e].push((f, p, j));
                        }
                    }
                }
            }
        }
        let mut moved = 0;
        for e in 0..n_links {
            if load[e] <= cap + 1e-9 || on[e].is_empty() {
                continue;
            }
            let (f, p, j) = on[e][self.rng.below(on[e].len() as u64) as usize];
            let Some((old_up, old_down)) = self.fabric_links(f, p, j) else {
                continue;
            };
            let i = (f * np + p) * k + j;
            let old = self.spine[i];
            let mut pick = None;
            for _ in 0..tries.max(1) {
                self.spine[i] = self.rng.below(self.shape.spines as u64) as usize;
                let Some((up, down)) = self.fabric_links(f, p, j) else {
                    break;
                };
                let fits = |x: usize, was: usize| x == was || load[x] + share <= cap + 1e-9;
                if tries == 0 || (fits(up, old_up) && fits(down, old_down)) {
                    pick = Some((up, down));
                    break;
                }
            }
            match pick {
                Some((up, down)) if self.spine[i] != old => {
                    load[old_up] -= share;
                    load[old_down] -= share;
                    load[up] += share;
                    load[down] += share;
                    moved += 1;
                }
                _ => self.spine[i] = old,
            }
        }
        moved
    }
}

/// The routing bound over `draws` independent draws of the spines: medians of the brackets.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DrawnBound {
    /// Median of the feasible λ.
    pub lower: f64,
    /// Median of the certified upper bound on λ.
    pub upper: f64,
    /// Median of the even split's λ (`even_split_rate`): spraying without path weighting.
    pub even: f64,
    /// Spine draws.
    pub draws: usize,
    /// Paths per flow and plane.
    pub paths_per_plane: usize,
}

/// Bound the permutation `dst` on `shape` over `draws` draws of the spines from `seed` (fast
/// settings: brackets within a few per cent).
pub fn permutation_bound(
    dst: &[usize],
    shape: RouteShape,
    draws: usize,
    seed: u64,
) -> Result<DrawnBound, RouteBoundError> {
    let mut lo = Vec::new();
    let mut up = Vec::new();
    let mut even = Vec::new();
    for d in 0..draws.max(1) {
        let r = PermutationRoutes::with_destinations(dst.to_vec(), shape, crate::rng::derive_seed(seed, d as u64));
        let (cap, flows) = r.instance();
        let b = max_concurrent_flow(&cap, &flows, 0.05, 0.01, 50_000)?;
        lo.push(b.lower);
        up.push(b.upper);
        even.push(even_split_rate(&cap, &flows)?);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok(DrawnBound {
        lower: median(&mut lo),
        upper: median(&mut up),
        even: median(&mut even),
        draws: draws.max(1),
        paths_per_plane: shape.paths_per_plane.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(paths: Vec<Vec<usize>>) -> Commodity {
        Commodity { demand: 1.0, paths }
    }

    #[test]
    fn two_flows_on_one_link_get_half_each() {
        let b = max_concurrent_flow(&[1.0], &[one(vec![vec![0]]), one(vec![vec![0]])], 0.02, 0.005, 100_000).unwrap();
        assert!(b.lower <= 0.5 + 1e-9 && b.upper >= 0.5 - 1e-9, "{b:?}");
        assert!(b.upper - b.lower < 0.01, "{b:?}");
    }

    #[test]
    fn a_split_flow_uses_both_of_its_paths() {
        // Flow A may use link 0 or 1; flow B only link 1. The optimum gives A all of link 0
        // and lets both reach 1.0 when link 1 has capacity 1: λ* = 1.
        let flows = [one(vec![vec![0], vec![1]]), one(vec![vec![1]])];
        let b = max_concurrent_flow(&[1.0, 1.0], &flows, 0.02, 0.005, 100_000).unwrap();
        assert!(b.lower <= 1.0 + 1e-9 && b.upper >= 1.0 - 1e-9, "{b:?}");
        assert!(b.lower > 0.98, "{b:?}");
        // Three flows on two links, one of them able to use both: λ* = 2/3.
        let flows = [one(vec![vec![0], vec![1]]), one(vec![vec![0]]), one(vec![vec![1]])];
        let b = max_concurrent_flow(&[1.0, 1.0], &flows, 0.02, 0.005, 100_000).unwrap();
        assert!(b.lower <= 2.0 / 3.0 + 1e-9 && b.upper >= 2.0 / 3.0 - 1e-9, "{b:?}");
        assert!(b.upper - b.lower < 0.02, "{b:?}");
    }

    #[test]
    fn bad_instances_are_errors() {
        assert_eq!(
            max_concurrent_flow(&[0.0], &[one(vec![vec![0]])], 0.1, 0.01, 10),
            Err(RouteBoundError::BadCapacity(0, 0.0))
        );
        assert_eq!(
            max_concurrent_flow(&[1.0], &[one(vec![vec![3]])], 0.1, 0.01, 10),
            Err(RouteBoundError::NoSuchLink(0, 3, 1))
        );
        assert_eq!(
            max_concurrent_flow(&[1.0], &[one(vec![])], 0.1, 0.01, 10),
            Err(RouteBoundError::EmptyPath(0))
        );
        assert_eq!(
            max_concurrent_flow(&[1.0], &[one(vec![vec![0]])], 0.0, 0.01, 10),
            Err(RouteBoundError::BadEps(0.0))
        );
        let bad = Commodity {
            demand: f64::NAN,
            paths: vec![vec![0]],
        };
        assert!(matches!(
            max_concurrent_flow(&[1.0], &[bad], 0.1, 0.01, 10),
            Err(RouteBoundError::BadDemand(0, _))
        ));
    }

    #[test]
    fn the_even_split_ignores_load_and_never_beats_the_optimum() {
        // Flow A may use link 0 or 1, flow B only link 1: evenly, link 1 carries 1/2 + 1, so
        // λ = 2/3, where moving A onto link 0 gives 1.
        let flows = [one(vec![vec![0], vec![1]]), one(vec![vec![1]])];
        let even = even_split_rate(&[1.0, 1.0], &flows).unwrap();
        assert!((even - 2.0 / 3.0).abs() < 1e-12, "{even}");
        // A path that crosses two links loads both; capacities scale the rate.
        let flows = [one(vec![vec![0, 1], vec![1]])];
        let even = even_split_rate(&[1.0, 2.0], &flows).unwrap();
        assert!((even - 2.0).abs() < 1e-12, "{even}");
        assert_eq!(
            even_split_rate(&[1.0], &[one(vec![vec![3]])]),
            Err(RouteBoundError::NoSuchLink(0, 3, 1))
        );
        // On the planes experiment's shapes it sits below the feasible split of the bound.
        for (planes, per_plane) in [(1, 16), (8, 2)] {
            let (cap, flows) = PermutationRoutes::new(64, 8, 8, planes, per_plane, 3).instance();
            let b = max_concurrent_flow(&cap, &flows, 0.05, 0.01, 20_000).unwrap();
            let even = even_split_rate(&cap, &flows).unwrap();
            assert!(even > 0.0 && even <= b.upper + 1e-9, "{planes} planes: {even} vs {b:?}");
            assert!(
                even < b.lower,
                "{planes} planes: weighting wins nothing? {even} vs {b:?}"
            );
        }
    }

    #[test]
    fn many_paths_per_plane_leave_no_routing_bound() {
        // 16 paths on one plane of the default fabric: every flow can reach its full rate.
        let (cap, flows) = PermutationRoutes::new(64, 8, 8, 1, 16, 1).instance();
        let b = max_concurrent_flow(&cap, &flows, 0.05, 0.01, 20_000).unwrap();
        assert!(b.upper >= 0.999 && b.lower > 0.95, "{b:?}");
        // One path per flow: the hash collisions cap it well below.
        let (cap, flows) = PermutationRoutes::new(64, 8, 8, 1, 1, 1).instance();
        let b = max_concurrent_flow(&cap, &flows, 0.05, 0.01, 20_000).unwrap();
        assert!(b.upper <= 0.5 + 1e-9, "{b:?}");
    }

    #[test]
    fn a_fixed_plane_share_bounds_no_higher_than_a_free_split() {
        // The same routes: a flow that may move data between planes does at least as well.
        let r = PermutationRoutes::new(64, 8, 8, 4, 1, 3);
        let free = r.instance();
        let mut same_routes = r.clone();
        same_routes.shape.fixed_plane_share = true;
        let fixed = same_routes.instance();
        assert_eq!(fixed.1.len(), 4 * free.1.len());
        let b_free = max_concurrent_flow(&free.0, &free.1, 0.05, 0.01, 20_000).unwrap();
        let b_fixed = max_concurrent_flow(&fixed.0, &fixed.1, 0.05, 0.01, 20_000).unwrap();
        assert!(b_fixed.lower <= b_free.upper, "{b_fixed:?} vs {b_free:?}");
        // One path per plane, hashed: some plane has a collision, and a fixed share cannot
        // avoid it.
        assert!(
            b_fixed.upper <= 0.5 + 1e-9 && b_free.lower > 0.5,
            "{b_fixed:?} vs {b_free:?}"
        );
    }

    #[test]
    fn rerouting_overfull_links_moves_paths_and_raises_the_bound() {
        let mut r = PermutationRoutes::new(64, 8, 8, 8, 2, 1);
        let bound = |r: &PermutationRoutes| {
            let (cap, flows) = r.instance();
            max_concurrent_flow(&cap, &flows, 0.05, 0.01, 20_000).unwrap()
        };
        let before = bound(&r);
        let spines = r.spine.clone();
        let moved: usize = (0..3).map(|_| r.reroute_overfull(8)).sum();
        assert!(moved > 0);
        let changed = spines.iter().zip(&r.spine).filter(|(a, b)| a != b).count();
        assert!(changed > 0 && changed <= moved, "{changed} of {moved}");
        // Moves only onto links with room: the lower bound of the new routes beats the
        // upper bound of the old ones.
        let after = bound(&r);
        assert!(after.lower > before.upper, "{before:?} -> {after:?}");
    }
}
