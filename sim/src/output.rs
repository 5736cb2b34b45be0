//! Files under `--out DIR`: `summary.json`, `results.jsonl` (one row per line), `results.csv`,
//! `runs.jsonl` (per run: network and NIC counters), `flows.csv` (per-flow completion times), `timeline.csv` (runs with a
//! timeline) and SVG plots drawn with plotters.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

use crate::experiments::Summary;

fn io<E: std::fmt::Display>(what: &Path) -> impl Fn(E) -> String + '_ {
    move |e| format!("{}: {e}", what.display())
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.clone()
            }
        }
        other => other.to_string(),
    }
}

/// Write the files every experiment has.
fn write_common(dir: &Path, s: &Summary) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let p = dir.join("summary.json");
    fs::write(&p, serde_json::to_string_pretty(s).map_err(|e| e.to_string())? + "\n").map_err(io(&p))?;
    let mut jl = String::new();
    for r in &s.results {
        let mut r = r.clone();
        if let Some(o) = r.as_object_mut() {
            o.insert("experiment".into(), Value::String(s.experiment.clone()));
            o.insert("seed".into(), s.seed.into());
        }
        jl += &serde_json::to_string(&r).map_err(|e| e.to_string())?;
        jl.push('\n');
    }
    let p = dir.join("results.jsonl");
    fs::write(&p, jl).map_err(io(&p))?;
    // CSV: the union of scalar keys, in first-seen order.
    let mut keys: Vec<String> = Vec::new();
    for r in &s.results {
        if let Some(o) = r.as_object() {
            for (k, v) in o {
                if !v.is_object() && !v.is_array() && !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
    }
    let mut csv = keys.join(",") + "\n";
    for r in &s.results {
        let line: Vec<String> = keys.iter().map(|k| scalar(r.get(k).unwrap_or(&Value::Null))).collect();
        csv += &line.join(",");
        csv.push('\n');
    }
    let p = dir.join("results.csv");
    fs::write(&p, csv).map_err(io(&p))?;
    let mut runs = String::new();
    for (label, r) in &s.runs {
        let v = serde_json::json!({
            "run": label,
            "complete": r.complete,
            "integrity": r.integrity,
            "failure": r.failure,
            "setup_ns": r.setup_ns,
            "last_recv_ns": r.last_recv_ns,
            "end_ns": r.end_ns,
            "events": r.events,
            "events_per_s": r.events_per_s,
            "loop_wall_s": r.loop_wall_s,
            "events_per_cpu_s": r.events_per_cpu_s,
            "loop_cpu_s": r.loop_cpu_s,
            "net": r.net,
            "counters": r.counters,
        });
        runs += &serde_json::to_string(&v).map_err(|e| e.to_string())?;
        runs.push('\n');
    }
    let p = dir.join("runs.jsonl");
    fs::write(&p, runs).map_err(io(&p))?;
    let mut fl = String::from("run,flow,group,bytes,src_host,dst_host,posted_ns,sent_ns,recv_ns,fct_ns\n");
    for (label, r) in &s.runs {
        for (i, f) in r.flows.iter().enumerate() {
            let o = |x: Option<u64>| x.map_or(String::new(), |v| v.to_string());
            let fct = f.posted_ns.zip(f.recv_ns).map(|(p, r)| r.saturating_sub(p));
            let _ = writeln!(
                fl,
                "{label},{i},{},{},{},{},{},{},{},{}",
                f.group,
                f.bytes,
                f.src_host,
                f.dst_host,
                o(f.posted_ns),
                o(f.sent_ns),
                o(f.recv_ns),
                o(fct)
            );
        }
    }
    let p = dir.join("flows.csv");
    fs::write(&p, fl).map_err(io(&p))?;
    let mut tl = String::new();
    for (label, r) in &s.runs {
        let t = &r.timeline;
        if t.placed.is_empty() {
            continue;
        }
        if tl.is_empty() {
            tl += "run,t_us,goodput_gbps,plane_rx_gbps,observed_queue_bytes,observed_rx_bytes_by_source\n";
        }
        for (i, b) in t.placed.iter().enumerate() {
            let g = *b as f64 * 8.0 / t.bin_ns as f64;
            let planes: Vec<String> = t
                .plane_rx
                .get(i)
                .map(|v| {
                    v.iter()
                        .map(|x| format!("{:.3}", *x as f64 * 8.0 / t.bin_ns as f64))
                        .collect()
                })
                .unwrap_or_default();
            let q = t.observed_queue.get(i).map_or(String::new(), |x| x.to_string());
            let src: Vec<String> = t
                .observed_rx
                .get(i)
                .map(|v| v.iter().map(|x| x.to_string()).collect())
                .unwrap_or_default();
            let _ = writeln!(
                tl,
                "{label},{:.3},{g:.3},{},{q},{}",
                (i + 1) as f64 * t.bin_ns as f64 / 1000.0,
                planes.join(";"),
                src.join(";")
            );
        }
    }
    if !tl.is_empty() {
        let p = dir.join("timeline.csv");
        fs::write(&p, tl).map_err(io(&p))?;
    }
    Ok(())
}

type Series = Vec<(String, Vec<(f64, f64)>)>;

struct Plot<'a> {
    title: &'a str,
    x: &'a str,
    y: &'a str,
    /// Label the x axis ticks with these names at 0, 1, 2, ...
    categories: Option<&'a [String]>,
    vlines: Vec<(f64, String)>,
}

fn bounds(series: &Series) -> (f64, f64, f64, f64) {
    let mut b = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64, f64::NEG_INFINITY);
    for (_, pts) in series {
        for &(x, y) in pts {
            if x.is_finite() && y.is_finite() {
                b.0 = b.0.min(x);
                b.1 = b.1.max(x);
                b.2 = b.2.min(y);
                b.3 = b.3.max(y);
            }
        }
    }
    if !b.0.is_finite() {
        return (0.0, 1.0, 0.0, 1.0);
    }
    if b.1 <= b.0 {
        b.1 = b.0 + 1.0;
    }
    if b.3 <= b.2 {
        b.3 = b.2 + 1.0;
    }
    (b.0, b.1, b.2, b.3 * 1.08)
}

fn line_plot(path: &Path, p: &Plot<'_>, series: &Series) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| format!("{}: {e:?}", path.display());
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let (x0, x1, y0, y1) = bounds(series);
    let (x0, x1) = if p.categories.is_some() {
        (x0 - 0.3, x1 + 0.3)
    } else {
        (x0, x1)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(p.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    let cats = p.categories.map(|c| c.to_vec());
    let fmt = move |x: &f64| match &cats {
        Some(c) => {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < c.len() {
                c[i as usize].clone()
            } else {
                String::new()
            }
        }
        None => format!("{x}"),
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(p.x).y_desc(p.y).x_label_formatter(&fmt);
    if let Some(c) = p.categories {
        mesh.x_labels(c.len() * 4 + 1);
    }
    mesh.draw().map_err(e)?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let style = ShapeStyle {
            color,
            filled: false,
            stroke_width: 2,
        };
        chart
            .draw_series(LineSeries::new(
                pts.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()),
                style,
            ))
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        if pts.len() <= 16 {
            chart
                .draw_series(
                    pts.iter()
                        .filter(|(x, y)| x.is_finite() && y.is_finite())
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(e)?;
        }
    }
    for (x, label) in &p.vlines {
        chart
            .draw_series(LineSeries::new(
                vec![(*x, y0), (*x, y1)],
                ShapeStyle {
                    color: BLACK.mix(0.6),
                    filled: false,
                    stroke_width: 1,
                },
            ))
            .map_err(e)?
            .label(label.as_str())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.6)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

fn bar_plot(
    path: &Path,
    title: &str,
    y: &str,
    cats: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| format!("{}: {e:?}", path.display());
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().flatten())
        .cloned()
        .fold(1.0, f64::max)
        * 1.12;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..cats.len() as f64 - 0.5, 0.0..ymax)
        .map_err(e)?;
    let c2 = cats.to_vec();
    let fmt = move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < c2.len() {
            c2[i as usize].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_desc("")
        .y_desc(y)
        .x_labels(cats.len() * 4 + 1)
        .x_label_formatter(&fmt)
        .draw()
        .map_err(e)?;
    let k = series.len().max(1) as f64;
    let w = 0.8 / k;
    for (i, (name, vals)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let bars = vals.iter().enumerate().filter_map(|(c, v)| {
            v.map(|v| {
                let x0 = c as f64 - 0.4 + i as f64 * w;
                Rectangle::new([(x0, 0.0), (x0 + w * 0.92, v)], color.filled())
            })
        });
        chart
            .draw_series(bars)
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

fn transports(s: &Summary) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in &s.results {
        if let Some(t) = r["transport"].as_str() {
            if !v.iter().any(|x| x == t) {
                v.push(t.to_string());
            }
        }
    }
    v
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// `loss-sweep` files; plot: relative goodput vs loss.
pub fn write_loss_sweep(dir: Option<&Path>, s: &Summary) -> Result<(), String> {
    let Some(dir) = dir else { return Ok(()) };
    write_common(dir, s)?;
    let mut losses: Vec<f64> = s.results.iter().map(|r| f(&r["loss"])).collect();
    losses.sort_by(|a, b| a.total_cmp(b));
    losses.dedup();
    let cats: Vec<String> = losses.iter().map(|l| format!("{}%", l * 100.0)).collect();
    let idx = |l: f64| losses.iter().position(|x| *x == l).unwrap_or(0) as f64;
    let mut series: Series = Vec::new();
    for t in transports(s) {
        for (key, what) in [
            ("relative_goodput", "all flows done"),
            ("relative_mean_flow_goodput", "mean per flow"),
        ] {
            let pts = s
                .results
                .iter()
                .filter(|r| r["transport"] == t.as_str())
                .map(|r| (idx(f(&r["loss"])), f(&r[key])));
            series.push((format!("{t} ({what})"), pts.collect()));
        }
    }
    series.push((
        "ideal selective repeat (1 - p)".into(),
        losses.iter().map(|l| (idx(*l), 1.0 - l)).collect(),
    ));
    line_plot(
        &dir.join("goodput_vs_loss.svg"),
        &Plot {
            title: "Goodput vs random loss (permutation), relative to 0% loss",
            x: "loss probability per frame",
            y: "goodput / goodput at 0% loss",
            categories: Some(&cats),
            vlines: Vec::new(),
        },
        &series,
    )
}

/// `collectives` files; plot: CCT bars with the ideal.
pub fn write_collectives(dir: Option<&Path>, s: &Summary) -> Result<(), String> {
    let Some(dir) = dir else { return Ok(()) };
    write_common(dir, s)?;
    let mut cats: Vec<String> = Vec::new();
    for r in &s.results {
        let c = format!(
            "{} ({})",
            r["collective"].as_str().unwrap_or(""),
            r["algorithm"].as_str().unwrap_or("")
        );
        if !cats.contains(&c) {
            cats.push(c);
        }
    }
    let cat_of = |r: &Value| {
        let c = format!(
            "{} ({})",
            r["collective"].as_str().unwrap_or(""),
            r["algorithm"].as_str().unwrap_or("")
        );
        cats.iter().position(|x| *x == c).unwrap_or(0)
    };
    let mut series: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    let mut ideal = vec![None; cats.len()];
    for t in transports(s) {
        let mut v = vec![None; cats.len()];
        for r in s.results.iter().filter(|r| r["transport"] == t.as_str()) {
            v[cat_of(r)] = r["cct_us"].as_f64();
            ideal[cat_of(r)] = r["ideal_us"].as_f64();
        }
        series.push((t, v));
    }
    series.push(("ideal (bytes / host link)".into(), ideal));
    bar_plot(
        &dir.join("cct.svg"),
        "Collective completion time",
        "CCT (us)",
        &cats,
        &series,
    )
}

/// `planes` files; plot: goodput vs planes with linear scaling.
pub fn write_planes(dir: Option<&Path>, s: &Summary) -> Result<(), String> {
    let Some(dir) = dir else { return Ok(()) };
    write_common(dir, s)?;
    let mut series: Series = Vec::new();
    for t in transports(s) {
        let rows: Vec<&Value> = s.results.iter().filter(|r| r["transport"] == t.as_str()).collect();
        series.push((
            t.clone(),
            rows.iter().map(|r| (f(&r["planes"]), f(&r["goodput_gbps"]))).collect(),
        ));
        if let Some(one) = rows.iter().find(|r| r["planes"] == 1) {
            let g1 = f(&one["goodput_gbps"]);
            series.push((
                format!("{t} x planes (linear)"),
                rows.iter().map(|r| (f(&r["planes"]), g1 * f(&r["planes"]))).collect(),
            ));
        }
    }
    line_plot(
        &dir.join("planes.svg"),
        &Plot {
            title: "Aggregate goodput vs planes",
            x: "planes",
            y: "aggregate goodput (Gb/s)",
            categories: None,
            vlines: Vec::new(),
        },
        &series,
    )
}

/// `plane-failure` files; plots: goodput timeline per transport, per-plane arrivals.
pub fn write_plane_failure(dir: Option<&Path>, s: &Summary) -> Result<(), String> {
    let Some(dir) = dir else { return Ok(()) };
    write_common(dir, s)?;
    let fail_us = s.params["fail_at_ns"].as_f64().unwrap_or(0.0) / 1000.0;
    let mut series: Series = Vec::new();
    for (label, r) in &s.runs {
        let t = &r.timeline;
        if t.placed.is_empty() {
            continue;
        }
        let pts = t
            .placed
            .iter()
            .enumerate()
            .map(|(i, b)| {
                (
                    (i + 1) as f64 * t.bin_ns as f64 / 1000.0,
                    *b as f64 * 8.0 / t.bin_ns as f64,
                )
            })
            .collect();
        series.push((label.clone(), pts));
        let planes = t.plane_rx.first().map_or(0, |v| v.len());
        let per_plane: Series = (0..planes)
            .map(|p| {
                (
                    format!("plane {p}"),
                    t.plane_rx
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            (
                                (i + 1) as f64 * t.bin_ns as f64 / 1000.0,
                                v[p] as f64 * 8.0 / t.bin_ns as f64,
                            )
                        })
                        .collect(),
                )
            })
            .collect();
        let name = format!("planes_{}.svg", label.replace([' ', '/', '='], "_"));
        line_plot(
            &dir.join(name),
            &Plot {
                title: &format!("{label}: data arriving at hosts per plane"),
                x: "time (us)",
                y: "Gb/s",
                categories: None,
                vlines: vec![(fail_us, "failure".into())],
            },
            &per_plane,
        )?;
    }
    line_plot(
        &dir.join("goodput_timeline.svg"),
        &Plot {
            title: "Goodput (bytes placed) around a plane failure",
            x: "time (us)",
            y: "goodput (Gb/s)",
            categories: None,
            vlines: vec![(fail_us, "plane fails".into())],
        },
        &series,
    )
}

/// `incast` files; plots per run: per-sender throughput at the receiver and its queue.
pub fn write_incast(dir: Option<&Path>, s: &Summary) -> Result<(), String> {
    let Some(dir) = dir else { return Ok(()) };
    write_common(dir, s)?;
    for (label, r) in &s.runs {
        let t = &r.timeline;
        if t.observed_rx.is_empty() {
            continue;
        }
        let bin = t.bin_ns as f64;
        let x = |i: usize| (i + 1) as f64 * bin / 1000.0;
        let hosts = t.observed_rx[0].len();
        let active: Vec<usize> = (0..hosts).filter(|&h| t.observed_rx.iter().any(|b| b[h] > 0)).collect();
        let mut series: Series = Vec::new();
        let rate = |b: u64| b as f64 * 8.0 / bin;
        series.push((
            "aggregate".into(),
            t.observed_rx
                .iter()
                .enumerate()
                .map(|(i, b)| (x(i), rate(b.iter().sum())))
                .collect(),
        ));
        series.push((
            "slowest sender".into(),
            t.observed_rx
                .iter()
                .enumerate()
                .map(|(i, b)| (x(i), rate(active.iter().map(|&h| b[h]).min().unwrap_or(0))))
                .collect(),
        ));
        series.push((
            "fastest sender".into(),
            t.observed_rx
                .iter()
                .enumerate()
                .map(|(i, b)| (x(i), rate(active.iter().map(|&h| b[h]).max().unwrap_or(0))))
                .collect(),
        ));
        let fair = r.timeline.observed_rx.first().map_or(0.0, |_| 0.0);
        let _ = fair;
        let name = label.replace([' ', '/', '='], "_");
        line_plot(
            &dir.join(format!("incast_{name}.svg")),
            &Plot {
                title: &format!("{label}: arrivals at the receiver"),
                x: "time (us)",
                y: "Gb/s",
                categories: None,
                vlines: Vec::new(),
            },
            &series,
        )?;
        let q: Series = vec![(
            "queues feeding the receiver (sum over planes)".into(),
            t.observed_queue
                .iter()
                .enumerate()
                .map(|(i, b)| (x(i), *b as f64 / 1024.0))
                .collect(),
        )];
        line_plot(
            &dir.join(format!("queue_{name}.svg")),
            &Plot {
                title: &format!("{label}: receiver queue"),
                x: "time (us)",
                y: "KiB",
                categories: None,
                vlines: Vec::new(),
            },
            &q,
        )?;
    }
    Ok(())
}

/// `connections` files; plot: CDF of per-connection goodput.
pub fn write_connections(dir: Option<&Path>, s: &Summary) -> Result<(), String> {
    let Some(dir) = dir else { return Ok(()) };
    write_common(dir, s)?;
    let mut series: Series = Vec::new();
    for (label, r) in &s.runs {
        let mut rates: Vec<f64> = r
            .flows
            .iter()
            .map(|f| match (f.posted_ns, f.recv_ns) {
                (Some(p), Some(rv)) => f.bytes as f64 * 8.0 / (rv.saturating_sub(p).max(1)) as f64,
                _ => 0.0,
            })
            .collect();
        rates.sort_by(|a, b| a.total_cmp(b));
        let n = rates.len().max(1) as f64;
        series.push((
            label.clone(),
            rates
                .iter()
                .enumerate()
                .map(|(i, g)| (*g, (i + 1) as f64 / n))
                .collect(),
        ));
    }
    line_plot(
        &dir.join("connection_goodput_cdf.svg"),
        &Plot {
            title: "Per-connection goodput (CDF)",
            x: "goodput (Gb/s)",
            y: "fraction of connections",
            categories: None,
            vlines: Vec::new(),
        },
        &series,
    )
}
