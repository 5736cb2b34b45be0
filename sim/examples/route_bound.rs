//! The routing bound of the `planes` experiment: on a random permutation of the default fabric
//! (64 hosts, 8 leaves, 8 spines per plane, 1:1), with each of a connection's `PATHS` paths
//! hashed to a uniformly random spine of its plane, the largest rate every flow could reach at
//! once with any split of its traffic over its paths (`route_bound::max_concurrent_flow`).
//!
//! ```sh
//! cargo run --release -p mroce-sim --example route_bound -- 16 1,2,4,8 1-8   # paths, planes, seeds
//! cargo run --release -p mroce-sim --example route_bound -- 16 8 1-4 5 0     # + re-route rounds, tries
//! ```
//!
//! It prints one JSON object per (paths, planes) with the bracket for each seed, the median
//! of the upper bounds and that of the even split (every path the same share, as spraying
//! without congestion feedback would send); `mroce sim planes` measures the same shapes with real transports. With
//! re-route rounds, each round moves one path off every over-full fabric link
//! (`PermutationRoutes::reroute_overfull`: to a random spine with tries 0, else to the first of
//! that many random spines with room) and bounds the routes again: `rounds` lists the median
//! upper bound after each round.
use mroce_sim::route_bound::{even_split_rate, max_concurrent_flow, PermutationRoutes};
use serde_json::json;

fn list(s: &str) -> Result<Vec<usize>, String> {
    let mut v = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (
                    a.parse().map_err(|e| format!("{part}: {e}"))?,
                    b.parse().map_err(|e| format!("{part}: {e}"))?,
                );
                v.extend(a..=b);
            }
            None => v.push(part.parse().map_err(|e| format!("{part}: {e}"))?),
        }
    }
    Ok(v)
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: &'static str| args.get(i).map_or(d, String::as_str).to_string();
    let paths = list(&arg(1, "16"))?;
    let planes = list(&arg(2, "1,2,4,8"))?;
    let seeds = list(&arg(3, "1-8"))?;
    let rounds: usize = arg(4, "0").parse().map_err(|e| format!("rounds: {e}"))?;
    let tries: usize = arg(5, "0").parse().map_err(|e| format!("tries: {e}"))?;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    for &n in &paths {
        for &p in &planes {
            if p == 0 || n < p {
                return Err(format!("{n} paths cannot cover {p} planes"));
            }
            let mut rows = Vec::new();
            let mut uppers = vec![Vec::new(); rounds + 1];
            let mut evens = Vec::new();
            for &s in &seeds {
                let mut routes = PermutationRoutes::new(64, 8, 8, p, n / p, s as u64);
                let mut per_round = Vec::new();
                for (r, up) in uppers.iter_mut().enumerate() {
                    let moved = if r > 0 { routes.reroute_overfull(tries) } else { 0 };
                    let (cap, flows) = routes.instance();
                    let b = max_concurrent_flow(&cap, &flows, 0.02, 0.005, 200_000).map_err(|e| e.to_string())?;
                    up.push(b.upper);
                    let even = even_split_rate(&cap, &flows).map_err(|e| e.to_string())?;
                    if r == 0 {
                        evens.push(even);
                    }
                    per_round.push(
                        json!({"moved": moved, "lower": b.lower, "upper": b.upper, "even": even, "phases": b.phases}),
                    );
                }
                rows.push(json!({"seed": s, "rounds": per_round}));
            }
            let medians: Vec<Option<f64>> = uppers.into_iter().map(median).collect();
            println!(
                "{}",
                json!({"paths": n, "planes": p, "paths_per_plane": n / p, "reroute_tries": tries,
                       "median_upper": medians.first().copied().flatten(), "median_even": median(evens),
                       "rounds": medians, "seeds": rows})
            );
        }
    }
    Ok(())
}
