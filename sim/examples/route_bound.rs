//! The routing bound of the `planes` experiment: on a random permutation of the default fabric
//! (64 hosts, 8 leaves, 8 spines per plane, 1:1), with each of a connection's `PATHS` paths
//! hashed to a uniformly random spine of its plane, the largest rate every flow could reach at
//! once with any split of its traffic over its paths (`route_bound::max_concurrent_flow`).
//!
//! ```sh
//! cargo run --release -p mroce-sim --example route_bound -- 16 1,2,4,8 1-8   # paths, planes, seeds
//! ```
//!
//! It prints one JSON object per (paths, planes) with the bracket for each seed and the median
//! of the upper bounds; `mroce sim planes` measures the same shapes with real transports.
use mroce_sim::route_bound::{max_concurrent_flow, random_ecmp_permutation};
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
    for &n in &paths {
        for &p in &planes {
            if p == 0 || n < p {
                return Err(format!("{n} paths cannot cover {p} planes"));
            }
            let mut rows = Vec::new();
            let mut uppers = Vec::new();
            for &s in &seeds {
                let (cap, flows) = random_ecmp_permutation(64, 8, 8, p, n / p, s as u64);
                let b = max_concurrent_flow(&cap, &flows, 0.02, 0.005, 200_000).map_err(|e| e.to_string())?;
                uppers.push(b.upper);
                rows.push(json!({"seed": s, "lower": b.lower, "upper": b.upper, "phases": b.phases}));
            }
            uppers.sort_by(f64::total_cmp);
            let median = uppers.get(uppers.len() / 2).copied();
            println!(
                "{}",
                json!({"paths": n, "planes": p, "paths_per_plane": n / p, "median_upper": median, "seeds": rows})
            );
        }
    }
    Ok(())
}
