//! `mroce pipe-sweep`: the pipe harness over several losses, transports and seeds, reporting
//! medians and the goodput ratio to the loss-free run of the same transport (the figures
//! the README quotes). Long sweeps show progress on stderr.

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::pipe::{self, PipeConfig, PipeError, PipeReport};
use crate::transports::TransportKind;

/// One (transport, loss) cell of a sweep, aggregated over seeds.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// Transport.
    pub transport: String,
    /// Random loss probability per frame.
    pub loss: f64,
    /// Seeds run.
    pub runs: usize,
    /// Median goodput, Gb/s.
    pub goodput_gbps_median: f64,
    /// Smallest and largest goodput, Gb/s.
    pub goodput_gbps_min: f64,
    /// Largest goodput, Gb/s.
    pub goodput_gbps_max: f64,
    /// Median of per-seed goodput / goodput of the same seed at loss 0.
    pub ratio_to_lossless_median: f64,
    /// Median retransmitted packets.
    pub retransmits_median: f64,
    /// Median spurious retransmissions.
    pub spurious_retransmits_median: f64,
    /// "ok" when every run delivered every byte intact.
    pub integrity: String,
    /// Median data packets processed per wall second (event loop only).
    pub data_packets_per_s_median: f64,
    /// Median frames (data + control) processed per wall second (event loop only).
    pub packets_per_s_median: f64,
}

/// Whole-sweep summary.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// Always "pipe-sweep".
    pub experiment: &'static str,
    /// Payload per run.
    pub bytes: u64,
    /// Paths per connection.
    pub paths: u16,
    /// Seeds used.
    pub seeds: Vec<u64>,
    /// One row per transport and loss.
    pub results: Vec<SweepRow>,
    /// Wall time of the sweep, seconds.
    pub wall_s: f64,
}

/// Median of a non-empty slice (0 for an empty one).
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Run `base` for every transport, loss and seed. Loss 0 is always run (it is the
/// reference of the ratios).
pub fn run(
    base: &PipeConfig,
    transports: &[TransportKind],
    losses: &[f64],
    seeds: &[u64],
    progress: bool,
) -> Result<SweepReport, PipeError> {
    let t0 = std::time::Instant::now();
    let mut losses: Vec<f64> = losses.to_vec();
    if !losses.contains(&0.0) {
        losses.insert(0, 0.0);
    }
    let total = (transports.len() * losses.len() * seeds.len()) as u64;
    let bar = if progress {
        ProgressBar::new(total)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed}<{eta}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut results = Vec::new();
    for &t in transports {
        let mut reference: Vec<f64> = Vec::new();
        for &loss in &losses {
            let mut reps: Vec<PipeReport> = Vec::new();
            for &seed in seeds {
                bar.set_message(format!("{t} loss {loss} seed {seed}"));
                let cfg = PipeConfig {
                    transport: t,
                    loss,
                    seed,
                    pcap: None,
                    ..base.clone()
                };
                reps.push(pipe::run(&cfg)?);
                bar.inc(1);
            }
            let gp: Vec<f64> = reps.iter().map(|r| r.goodput_gbps).collect();
            if loss == 0.0 {
                reference = gp.clone();
            }
            let ratios: Vec<f64> = gp
                .iter()
                .zip(&reference)
                .map(|(g, r)| if *r > 0.0 { g / r } else { 0.0 })
                .collect();
            let all_ok = reps.iter().all(|r| r.integrity == "ok");
            results.push(SweepRow {
                transport: t.as_str().to_string(),
                loss,
                runs: reps.len(),
                goodput_gbps_median: median(&gp),
                goodput_gbps_min: gp.iter().copied().fold(f64::INFINITY, f64::min),
                goodput_gbps_max: gp.iter().copied().fold(0.0, f64::max),
                ratio_to_lossless_median: median(&ratios),
                retransmits_median: median(&reps.iter().map(|r| r.retransmits as f64).collect::<Vec<_>>()),
                spurious_retransmits_median: median(
                    &reps.iter().map(|r| r.spurious_retransmits as f64).collect::<Vec<_>>(),
                ),
                integrity: if all_ok { "ok".into() } else { "FAILED".into() },
                data_packets_per_s_median: median(&reps.iter().map(|r| r.data_packets_per_s).collect::<Vec<_>>()),
                packets_per_s_median: median(&reps.iter().map(|r| r.packets_per_s).collect::<Vec<_>>()),
            });
        }
    }
    bar.finish_and_clear();
    Ok(SweepReport {
        experiment: "pipe-sweep",
        bytes: base.bytes,
        paths: base.paths,
        seeds: seeds.to_vec(),
        results,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

impl SweepReport {
    /// A fixed-width table for humans.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<8} {:>6} {:>10} {:>8} {:>9} {:>9} {:>6}\n",
            "transport", "loss", "Gb/s med", "ratio", "retx med", "Mpkt/s", "integ"
        );
        for r in &self.results {
            s += &format!(
                "{:<8} {:>6} {:>10.1} {:>8.3} {:>9.0} {:>9.2} {:>6}\n",
                r.transport,
                r.loss,
                r.goodput_gbps_median,
                r.ratio_to_lossless_median,
                r.retransmits_median,
                r.data_packets_per_s_median / 1e6,
                r.integrity
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::median;
    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
