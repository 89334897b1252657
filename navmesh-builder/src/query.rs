//! `navmesh-builder query`: run every query of a Moving AI scenario file on a mesh, then
//! report how many were found, how their lengths compare with the file's optimum and how
//! long each search took.
//!
//! One [`NavMeshQuery`] and one output vector serve every query, as a game would use
//! them. Only the `find_path_into` call is timed (not the bookkeeping around it), so the
//! queries-per-second figure is the number of queries divided by the summed search time.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use navmesh::{NavMeshQuery, PathError, Point};
use navmesh_builder::scen::{self, Scenario};

use navmesh_builder::load::load_map;

/// A ratio above `1 + RATIO_SLACK` counts as longer than the file's optimum. Moving AI
/// files round the optimum to 6 significant digits (a relative error up to 5e-6), so an
/// exact path can be a few millionths longer than the written figure.
const RATIO_SLACK: f64 = 1e-5;

/// What the `query` command was asked to do.
pub(crate) struct QueryArgs {
    pub(crate) mesh: PathBuf,
    pub(crate) scen: PathBuf,
    pub(crate) cell_centres: bool,
    pub(crate) radius: f64,
    pub(crate) csv: Option<PathBuf>,
}

/// The result of one query.
struct Outcome {
    /// Path length, or why there is no path.
    result: Result<f64, PathError>,
    /// The file's optimum.
    optimum: f64,
    /// Time of the `find_path_into` call, in microseconds.
    micros: f64,
}

impl Outcome {
    /// Length over the file's optimum, for found queries with a positive optimum.
    fn ratio(&self) -> Option<f64> {
        match self.result {
            Ok(length) if self.optimum > 0.0 => Some(length / self.optimum),
            _ => None,
        }
    }
}

pub(crate) fn run(args: &QueryArgs) -> Result<()> {
    if !(args.radius.is_finite() && args.radius >= 0.0) {
        bail!("--radius must be a finite number >= 0, got {}", args.radius);
    }
    let text = std::fs::read_to_string(&args.scen)
        .with_context(|| format!("cannot read {}", args.scen.display()))?;
    let scenarios = scen::parse(&text).with_context(|| format!("{}", args.scen.display()))?;
    if scenarios.is_empty() {
        bail!("{}: no queries in the scenario file", args.scen.display());
    }
    // Create the CSV file before the work, so a bad path fails at once.
    let csv_file = match &args.csv {
        Some(path) => Some((
            path,
            std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => None,
    };
    let clock = Instant::now();
    let loaded = load_map(&args.mesh)?;
    let origin = loaded.to_string();
    let mesh = loaded.mesh;
    let load = clock.elapsed();
    // Queries of every radius answer through the corner graph where they can: build it
    // before timing them.
    let clock = Instant::now();
    mesh.prepare_point_queries();
    let prepare = clock.elapsed();
    warn_on_mismatch(&mesh, &scenarios);

    let mut query = NavMeshQuery::new();
    let mut out: Vec<Point> = Vec::new();
    let mut outcomes = Vec::with_capacity(scenarios.len());
    let (mut expanded, mut fallbacks, mut corner_graph) = (0usize, 0usize, 0usize);
    for s in &scenarios {
        let (start, goal) = if args.cell_centres {
            s.cell_centres()
        } else {
            (s.start, s.goal)
        };
        let clock = Instant::now();
        let result = query.find_path_into(&mesh, start, goal, args.radius, &mut out);
        let elapsed = clock.elapsed();
        expanded += query.stats().expanded;
        fallbacks += query.stats().radius_fallbacks;
        corner_graph += usize::from(query.stats().corner_graph);
        outcomes.push(Outcome {
            result,
            optimum: s.optimal_length,
            micros: elapsed.as_secs_f64() * 1e6,
        });
    }

    println!("mesh         {} ({origin})", args.mesh.display());
    println!(
        "scenarios    {} ({}, radius {})",
        args.scen.display(),
        if args.cell_centres {
            "cell centres"
        } else {
            "points as written"
        },
        args.radius
    );
    println!("mesh load    {:.1} ms", load.as_secs_f64() * 1e3);
    let (corners, edges, table_bytes) = mesh.corner_graph_size();
    println!(
        "corners      {corners} corners, {edges} taut edges, {:.1} MiB of distance tables, \
         built in {:.1} ms",
        table_bytes as f64 / (1024.0 * 1024.0),
        prepare.as_secs_f64() * 1e3
    );
    print!("{}", summary(&outcomes));
    println!(
        "search       {corner_graph} of {} queries answered through the corner graph; \
         {:.0} nodes expanded per query{}",
        scenarios.len(),
        expanded as f64 / scenarios.len().max(1) as f64,
        if args.radius > 0.0 {
            format!("; {fallbacks} radius paths fell back to the point path")
        } else {
            String::new()
        }
    );
    if let Some((path, file)) = csv_file {
        write_csv(file, &outcomes).with_context(|| format!("cannot write {}", path.display()))?;
        println!("csv          {}", path.display());
    }
    Ok(())
}

/// The summary lines: counts, failures by kind, length ratios, speed.
fn summary(outcomes: &[Outcome]) -> String {
    let mut text = String::new();
    let found = outcomes.iter().filter(|o| o.result.is_ok()).count();
    let _ = writeln!(text, "queries      {}", outcomes.len());
    let _ = writeln!(text, "found        {found}");
    // Failures grouped by kind, in order of first appearance.
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for err in outcomes.iter().filter_map(|o| o.result.as_ref().err()) {
        let kind = error_kind(err);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let detail: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let _ = writeln!(
        text,
        "not found    {}{}",
        outcomes.len() - found,
        if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join(", "))
        }
    );
    let ratios: Vec<f64> = outcomes.iter().filter_map(Outcome::ratio).collect();
    if ratios.is_empty() {
        let _ = writeln!(text, "ratio        - (no found query with an optimum > 0)");
    } else {
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        let max = ratios.iter().copied().fold(f64::MIN, f64::max);
        let longer = ratios.iter().filter(|&&r| r > 1.0 + RATIO_SLACK).count();
        let _ = writeln!(
            text,
            "ratio        mean {mean:.4}, max {max:.4} over {} queries; {longer} longer than the optimum beyond its rounding",
            ratios.len()
        );
    }
    let mut micros: Vec<f64> = outcomes.iter().map(|o| o.micros).collect();
    micros.sort_by(f64::total_cmp);
    let total_secs = micros.iter().sum::<f64>() / 1e6;
    let per_second = if total_secs > 0.0 {
        format!("{:.0}", outcomes.len() as f64 / total_secs)
    } else {
        "-".to_owned()
    };
    let _ = writeln!(
        text,
        "throughput   {per_second} queries/s (search time only)"
    );
    let _ = writeln!(
        text,
        "time/query   p50 {:.2} µs, p99 {:.2} µs, max {:.2} µs",
        percentile(&micros, 50.0),
        percentile(&micros, 99.0),
        micros.last().copied().unwrap_or(0.0)
    );
    text
}

/// Nearest-rank percentile of sorted values (0 for none): the smallest value with at
/// least `p` percent of the values at or below it.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A short name for the kind of a path error, from its variant name: `StartOffMesh`
/// becomes `start off mesh`. Derived from `Debug` so new variants need no change here.
fn error_kind(err: &PathError) -> String {
    let debug = format!("{err:?}");
    let name = debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default();
    let mut kind = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() && !kind.is_empty() {
            kind.push(' ');
        }
        kind.push(c.to_ascii_lowercase());
    }
    kind
}

/// Writes one row per query: `index,found,length,optimum,ratio,micros`. `index` is the
/// 0-based position of the query in the file; length and ratio are empty when unknown.
fn write_csv(mut file: std::fs::File, outcomes: &[Outcome]) -> std::io::Result<()> {
    let mut text = String::from("index,found,length,optimum,ratio,micros\n");
    for (i, o) in outcomes.iter().enumerate() {
        let length = o.result.as_ref().map_or(String::new(), |l| l.to_string());
        let ratio = o.ratio().map_or(String::new(), |r| r.to_string());
        let _ = writeln!(
            text,
            "{i},{},{length},{},{ratio},{:.3}",
            o.result.is_ok(),
            o.optimum,
            o.micros
        );
    }
    file.write_all(text.as_bytes())?;
    file.flush()
}

/// Warns on stderr when the scenarios look meant for another map: their map's file name
/// is not the mesh's source name, or the mesh reaches beyond the map size they state.
fn warn_on_mismatch(mesh: &navmesh::NavMesh, scenarios: &[Scenario]) {
    let Some(first) = scenarios.first() else {
        return;
    };
    let scen_map = first.map.rsplit(['/', '\\']).next().unwrap_or_default();
    let source = &mesh.info().source_name;
    if !source.is_empty() && scen_map != source {
        eprintln!(
            "warning: the scenarios are for {}, the mesh was built from {source}",
            first.map
        );
    }
    let b = mesh.bounds();
    let (w, h) = (f64::from(first.width), f64::from(first.height));
    if b.min.x < 0.0 || b.min.y < 0.0 || b.max.x > w || b.max.y > h {
        eprintln!(
            "warning: the mesh spans ({}, {}) to ({}, {}), outside the {}x{} map the scenarios name ({}); is this the right mesh?",
            b.min.x, b.min.y, b.max.x, b.max.y, first.width, first.height, first.map
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[7.0], 50.0), 7.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 99.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn error_kinds_are_words() {
        assert_eq!(error_kind(&PathError::Unreachable), "unreachable");
        assert_eq!(
            error_kind(&PathError::StartOffMesh { x: 1.0, y: 2.0 }),
            "start off mesh"
        );
        assert_eq!(
            error_kind(&PathError::RadiusTooLarge {
                radius: 1.0,
                max: 0.5
            }),
            "radius too large"
        );
    }

    #[test]
    fn summary_counts_and_ratios() {
        let o = |result, optimum| Outcome {
            result,
            optimum,
            micros: 2.0,
        };
        let outcomes = [
            o(Ok(2.0), 2.0),
            o(Ok(3.0), 2.0),
            o(Ok(0.0), 0.0),
            o(Err(PathError::Unreachable), 5.0),
            o(Err(PathError::GoalOffMesh { x: 0.0, y: 0.0 }), 5.0),
            o(Err(PathError::Unreachable), 5.0),
        ];
        let text = summary(&outcomes);
        assert!(text.contains("queries      6\n"), "{text}");
        assert!(text.contains("found        3\n"), "{text}");
        assert!(
            text.contains("not found    3 (2 unreachable, 1 goal off mesh)\n"),
            "{text}"
        );
        assert!(
            text.contains("mean 1.2500, max 1.5000 over 2 queries; 1 longer"),
            "{text}"
        );
        assert!(text.contains("500000 queries/s"), "{text}");
        assert!(text.contains("p50 2.00 µs"), "{text}");
    }
}
