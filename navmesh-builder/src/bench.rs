//! `navmesh-builder bench`: build time and peak memory per stage, on real maps.
//!
//! Peak memory is the process's peak resident set (`VmHWM` in `/proc/self/status`), reset
//! before every stage through `/proc/self/clear_refs`, so each figure is the high-water mark
//! of that stage alone (including what earlier stages still hold). Where the kernel does not
//! offer this (not Linux), the memory columns say so.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use navmesh_builder::triangulate::RefineParams;

use navmesh_builder::load::build_file;

use crate::ms;

pub(crate) fn run(mut maps: Vec<PathBuf>, runs: usize) -> Result<()> {
    if maps.is_empty() {
        let dir = PathBuf::from("maps/movingai");
        let entries = std::fs::read_dir(&dir).with_context(|| {
            format!(
                "cannot list {} (run from the repository root, or name maps)",
                dir.display()
            )
        })?;
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "map") {
                maps.push(path);
            }
        }
        maps.sort();
        if maps.is_empty() {
            bail!("no .map files in {}", dir.display());
        }
    }
    let memory = reset_peak().is_ok();
    println!(
        "best of {runs} builds per map; peak memory is the process's peak RSS during the stage"
    );
    println!(
        "{:<22} {:<12} {:>12} {:>12}",
        "map", "stage", "time", "peak MB"
    );
    for map in &maps {
        let mut best: Option<BenchRun> = None;
        for _ in 0..runs {
            let mut rows = Vec::new();
            let _ = reset_peak();
            let built = build_file(map, &RefineParams::default(), &mut |stage| {
                let peak_mb = if memory { peak_rss_mb() } else { None };
                rows.push(StageRow {
                    stage: stage.stage,
                    elapsed: stage.elapsed,
                    peak_mb,
                });
                let _ = reset_peak();
            })?;
            let total: Duration = rows.iter().map(|r| r.elapsed).sum();
            let summary = format!(
                "{} vertices, {} triangles, {} islands",
                built.mesh.vertices().len(),
                built.mesh.triangle_count(),
                built.mesh.island_count()
            );
            if best.as_ref().is_none_or(|b| total < b.total) {
                best = Some(BenchRun {
                    total,
                    rows,
                    summary,
                });
            }
        }
        let Some(BenchRun {
            total,
            rows,
            summary,
        }) = best
        else {
            continue;
        };
        let name = map
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let peak_all = rows.iter().filter_map(|r| r.peak_mb).reduce(f64::max);
        for row in &rows {
            println!(
                "{:<22} {:<12} {:>12} {:>12}",
                name,
                row.stage,
                ms(row.elapsed.as_secs_f64()),
                mb(row.peak_mb)
            );
        }
        println!(
            "{:<22} {:<12} {:>12} {:>12}   {}",
            name,
            "TOTAL",
            ms(total.as_secs_f64()),
            mb(peak_all),
            summary
        );
    }
    if !memory {
        println!("(peak memory unavailable: /proc/self/clear_refs could not be written)");
    }
    Ok(())
}

/// One stage of one build.
struct StageRow {
    stage: &'static str,
    elapsed: Duration,
    peak_mb: Option<f64>,
}

/// The fastest build of a map.
struct BenchRun {
    total: Duration,
    rows: Vec<StageRow>,
    summary: String,
}

fn mb(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

/// Resets the kernel's peak-RSS counter for this process (Linux `clear_refs` value 5).
fn reset_peak() -> std::io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// The process's peak resident set since the last reset, in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
