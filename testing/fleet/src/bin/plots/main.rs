//! `plots`: draws BENCHMARKS.md's pictures from the figures the benchmarks
//! wrote, as SVG (`svg.rs`, no dependency):
//!
//! - `docs/bench/bill.tsv` (`cargo bench -p fleet --bench bill -- --tsv …`):
//!   the server's CPU and the requests per minute against the number of
//!   elections, client-go and kube-elector's two watch modes;
//! - `docs/bench/reference.tsv` (`cargo bench -p fleet --bench reference --
//!   --tsv …`): the handover and failover latencies of both libraries, as
//!   distributions.
//!
//! ```text
//! cargo run -p fleet --bin plots     writes docs/img/*.svg
//! ```
//!
//! Its unit test fails when a committed picture is not the one its figures draw.

mod svg;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use svg::{Axis, Chart, Scale, Series};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rows of a TSV file with a header, each as column → value.
fn read_tsv(path: &Path) -> Result<Vec<BTreeMap<String, String>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| format!("{}: empty", path.display()))?
        .split('\t')
        .collect();
    lines
        .enumerate()
        .map(|(i, line)| {
            let cells: Vec<&str> = line.split('\t').collect();
            if cells.len() != header.len() {
                return Err(format!(
                    "{} line {}: {} cells, the header has {}",
                    path.display(),
                    i + 2,
                    cells.len(),
                    header.len()
                ));
            }
            Ok(header
                .iter()
                .zip(cells)
                .map(|(h, c)| ((*h).to_owned(), c.to_owned()))
                .collect())
        })
        .collect()
}

fn number(row: &BTreeMap<String, String>, column: &str) -> Result<f64, String> {
    let cell = row
        .get(column)
        .ok_or_else(|| format!("no column {column}"))?;
    cell.parse()
        .map_err(|_| format!("column {column}: {cell:?} is not a number"))
}

/// The colour and the name of a series of the bill.
fn style(series: &str) -> (&'static str, &'static str, bool) {
    match series {
        "client-go" => ("#d62728", "client-go (followers poll)", false),
        "per-lease" => ("#1f77b4", "kube-elector, a watch per Lease", true),
        _ => (
            "#2ca02c",
            "kube-elector, one shared watch per process",
            false,
        ),
    }
}

/// What a hollow marker of the bill means.
const NOT_ALL_ELECTED: &str =
    "hollow: not every election had a leader (the 2-core machine saturated)";

/// The bill's two charts: server CPU, and requests, against elections.
fn bill(rows: &[BTreeMap<String, String>]) -> Result<Vec<(&'static str, Chart)>, String> {
    // Series by name, lease and renew interval (client-go's 15 s and 2 s, or
    // others).
    // Each point: elections, server CPU, requests, and whether every
    // election had its leader.
    type Point = (f64, f64, f64, bool);
    let mut by: BTreeMap<(String, u64, u64), Vec<Point>> = BTreeMap::new();
    for row in rows {
        let series = row.get("series").ok_or("no column series")?.clone();
        let lease = number(row, "lease_ms")? as u64;
        let renew = number(row, "renew_ms")? as u64;
        let cpu = number(row, "apiserver_cpu_s_per_min")? + number(row, "etcd_cpu_s_per_min")?;
        let requests: f64 = ["get", "update", "create", "list", "watch"]
            .iter()
            .map(|v| number(row, &format!("{v}_per_min")))
            .sum::<Result<f64, String>>()?;
        by.entry((series, lease, renew)).or_default().push((
            number(row, "elections")?,
            cpu,
            requests,
            row.get("elected_s").is_some_and(|e| e != "-"),
        ));
    }
    // Series at other timings than client-go's: a colour each, in turn.
    let others = ["#9467bd", "#ff7f0e", "#8c564b", "#e377c2"];
    let lines = |pick: fn(&Point) -> f64| -> Vec<Series> {
        let mut other = others.iter().cycle();
        by.iter()
            .map(|((series, lease, renew), points)| {
                let (colour, name, dashed) = style(series);
                let mut points = points.clone();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                let hollow = (0..points.len()).filter(|&i| !points[i].3).collect();
                let points = points.iter().map(|p| (p.0, pick(p))).collect();
                let defaults = (*lease, *renew) == (15_000, 2_000);
                Series {
                    name: if defaults {
                        name.to_owned()
                    } else {
                        format!(
                            "{name}, lease {} s, renewing every {} s",
                            *lease as f64 / 1000.0,
                            *renew as f64 / 1000.0
                        )
                    },
                    colour: if defaults {
                        colour
                    } else {
                        other.next().copied().unwrap_or(colour)
                    },
                    points,
                    hollow,
                    steps: false,
                    dashed,
                }
            })
            .collect()
    };
    let elections = || by.values().flatten().map(|p| p.0);
    let chart = |title: &str, y: &str, scale: Scale, series: Vec<Series>| Chart {
        title: format!("{title}, 3 candidates per election"),
        x: Axis::fit("elections (Leases)", Scale::Log, elections()),
        y: Axis::fit(
            y,
            scale,
            series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        ),
        series,
        note: Some(NOT_ALL_ELECTED.into()),
    };
    Ok(vec![
        (
            "bill-server-cpu.svg",
            chart(
                "kube-apiserver + etcd CPU",
                "CPU seconds per minute (60 = one core)",
                Scale::Linear,
                lines(|p| p.1),
            ),
        ),
        (
            "bill-requests.svg",
            chart(
                "Requests on Leases per minute",
                "requests per minute",
                Scale::Log,
                lines(|p| p.2),
            ),
        ),
    ])
}

/// The latencies' distributions: the share of runs done by each time.
fn latencies(rows: &[BTreeMap<String, String>]) -> Result<Chart, String> {
    let mut by: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for row in rows {
        let key = (
            row.get("kind").ok_or("no column kind")?.clone(),
            row.get("library").ok_or("no column library")?.clone(),
        );
        by.entry(key).or_default().push(number(row, "ms")?);
    }
    let series: Vec<Series> = by
        .into_iter()
        .map(|((kind, library), mut ms)| {
            ms.sort_by(f64::total_cmp);
            let n = ms.len() as f64;
            let mut points = vec![(ms[0], 0.0)];
            points.extend(ms.iter().enumerate().map(|(i, &v)| (v, (i + 1) as f64 / n)));
            Series {
                name: format!("{library}, {kind} (n = {})", ms.len()),
                colour: if library == "client-go" {
                    "#d62728"
                } else {
                    "#2ca02c"
                },
                points,
                hollow: Vec::new(),
                steps: true,
                dashed: kind == "failover",
            }
        })
        .collect();
    Ok(Chart {
        title: "Handover (SIGTERM) and failover (SIGKILL) on kube-apiserver".into(),
        x: Axis::fit(
            "milliseconds from the signal to the next leader (log)",
            Scale::Log,
            series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        ),
        y: Axis {
            title: "share of runs done".into(),
            scale: Scale::Linear,
            min: 0.0,
            max: 1.0,
        },
        series,
        note: None,
    })
}

/// Every picture: its file name under `docs/img` and its SVG text.
fn pictures(root: &Path) -> Result<Vec<(&'static str, String)>, String> {
    let mut out: Vec<(&'static str, String)> = bill(&read_tsv(&root.join("docs/bench/bill.tsv"))?)?
        .into_iter()
        .map(|(name, chart)| (name, chart.svg()))
        .collect();
    let reference = latencies(&read_tsv(&root.join("docs/bench/reference.tsv"))?)?;
    out.push(("handover-failover.svg", reference.svg()));
    Ok(out)
}

fn main() -> ExitCode {
    let root = root();
    let pictures = match pictures(&root) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("plots: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (name, text) in pictures {
        let path = root.join("docs/img").join(name);
        if let Err(e) = std::fs::create_dir_all(path.parent().unwrap_or(&root))
            .and_then(|()| std::fs::write(&path, text))
        {
            eprintln!("plots: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed pictures are the ones their committed figures draw.
    #[test]
    fn the_pictures_are_drawn_from_the_figures() {
        let root = root();
        for (name, text) in pictures(&root).expect("the figures read") {
            let path = root.join("docs/img").join(name);
            let committed = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                committed == text,
                "{} is stale: run cargo run -p fleet --bin plots",
                path.display()
            );
        }
    }

    #[test]
    fn a_malformed_figure_is_an_error_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("plots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let path = dir.join("bad.tsv");
        std::fs::write(&path, "series\telections\nshared\n").expect("written");
        let err = read_tsv(&path).expect_err("a short line");
        assert!(err.contains("1 cells, the header has 2"), "{err}");
        std::fs::write(
            &path,
            "series\telections\tlease_ms\trenew_ms\nshared\tmany\t15000\t2000\n",
        )
        .expect("written");
        let rows = read_tsv(&path).expect("well formed");
        assert!(bill(&rows).is_err(), "a count that is not a number");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
