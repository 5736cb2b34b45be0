//! The planes experiment with the model's NICs only, for sweeping a hardware width that the
//! HDL does not build with (it is laid out for `PATHS` = 16). Example: set `PATHS = 32` and
//! `PATH_BITS = 5` in `model/src/params.rs`, then
//!
//! ```sh
//! cargo run --release -p mroce-sim --example planes_model -- 32 1 1,4,8   # paths, seed, plane counts
//! ```
//!
//! It prints the experiment's JSON summary, like `mroce sim planes --transports mroce --json`.
use mroce_sim::experiments::{self, Common, NoHooks, Planes};
use mroce_sim::Kind;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let paths: u16 = arg(1).map_or(Ok(16), str::parse).map_err(|e| format!("paths: {e}"))?;
    let seed: u64 = arg(2).map_or(Ok(1), str::parse).map_err(|e| format!("seed: {e}"))?;
    let planes = match arg(3) {
        Some(s) => s
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|e| format!("plane counts: {e}"))?,
        None => Planes::default().planes,
    };
    let common = Common {
        seed,
        paths,
        transports: vec![Kind::Mroce],
        ..Default::default()
    };
    let p = Planes {
        planes,
        ..Default::default()
    };
    let s = experiments::planes(&common, &p, &mut mroce_sim::model_factory, &mut NoHooks)?;
    println!("{}", serde_json::to_string(&s).map_err(|e| e.to_string())?);
    Ok(())
}
