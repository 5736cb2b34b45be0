//! Packets per second of the pipe harness (`cargo bench --bench pipe`).
//!
//! Each case moves 16 MiB as 1 MiB WRITEs over 4 streams, 16 paths/lanes, 4 KiB MTU. The
//! time reported to criterion is the event loop's own wall time (`PipeReport::wall_loop_s`),
//! so region setup and the integrity check are excluded and criterion's "elements/s" is
//! frames handed to a NIC per second, the figure the harness is specified against
//! (data frames are about 60% of them for mroce, 75% for RoCEv2 at 0% loss).
//! `null` runs the driver with a transport that does no protocol work: the driver's ceiling.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mroce::pipe::{self, PipeConfig, PipeReport};
use mroce::transports::{is_available, TransportKind};

#[path = "../tests/pipe_support/mod.rs"]
mod pipe_support;

const BYTES: u64 = 16 << 20;

fn cfg(kind: TransportKind, loss: f64) -> PipeConfig {
    PipeConfig {
        transport: kind,
        paths: 16,
        loss,
        bytes: BYTES,
        msg_size: 1 << 20,
        streams: 4,
        seed: 7,
        ..PipeConfig::default()
    }
}

fn bench_case(c: &mut Criterion, name: &str, cfg: PipeConfig, run: &dyn Fn(&PipeConfig) -> PipeReport) {
    let probe = run(&cfg);
    if !probe.complete {
        eprintln!(
            "{name} loss {}: run incomplete ({:?}); benchmarking anyway",
            cfg.loss, probe.failure
        );
    }
    let mut g = c.benchmark_group("pipe");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(probe.packets));
    g.bench_with_input(BenchmarkId::new(name, format!("loss{}", cfg.loss)), &cfg, |b, cfg| {
        b.iter_custom(|iters| {
            let mut t = Duration::ZERO;
            for _ in 0..iters {
                t += Duration::from_secs_f64(run(cfg).wall_loop_s);
            }
            t
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    for kind in TransportKind::ALL {
        if !is_available(kind) {
            eprintln!("transport {kind} is not wired into make_transport: skipped");
            continue;
        }
        for loss in [0.0, 0.01] {
            bench_case(c, kind.as_str(), cfg(kind, loss), &|cfg| {
                pipe::run(cfg).expect("pipe run")
            });
        }
    }
    // The driver alone (one lane per plane: the null transport has no congestion control).
    let null = PipeConfig {
        lanes: Some(1),
        ..cfg(TransportKind::Mroce, 0.0)
    };
    bench_case(c, "null", null, &|cfg| {
        let mut f = |addr, _seed| {
            Ok(Box::new(pipe_support::NullTransport::new(addr)) as Box<dyn mroce_model::transport::Transport>)
        };
        pipe::run_with(cfg, &mut f).expect("pipe run")
    });
}

criterion_group!(pipe_benches, benches);
criterion_main!(pipe_benches);
