//! `navmesh-builder`: build navmesh files from maps, inspect them, draw them, run path
//! queries on them, benchmark.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use navmesh::{NavMesh, NavMeshQuery, Point};
use navmesh_builder::load::{build_file, load_map};
use navmesh_builder::pipeline::Built;
use navmesh_builder::render::{PathOverlay, render_svg_with_paths};
use navmesh_builder::triangulate::RefineParams;

mod bench;
mod query;

#[derive(Parser)]
#[command(
    version,
    about = "Turns maps into Delaunay navmesh files, and inspects and draws them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a navmesh from a polygon JSON (.json) or Moving AI grid map (.map).
    Build {
        /// The map to read.
        input: PathBuf,
        /// Where to write the navmesh file.
        #[arg(short, long)]
        output: PathBuf,
        /// Also draw the mesh as SVG here.
        #[arg(long)]
        svg: Option<PathBuf>,
        /// Refine until no triangle angle is below this many degrees (0 < DEG <= 34).
        #[arg(long, value_name = "DEG")]
        min_angle: Option<f64>,
        /// Refine until no triangle is larger than this many square map units.
        #[arg(long, value_name = "A")]
        max_area: Option<f64>,
    },
    /// Print the summary of an existing navmesh file.
    Info {
        /// The navmesh file.
        file: PathBuf,
    },
    /// Draw a navmesh as SVG, optionally with paths found on it.
    ///
    /// Each `--path` is searched with the path query and drawn over the mesh: a coloured
    /// polyline with a filled disc at the start and a ring at the goal, and with
    /// `--radius` above 0 a translucent band showing the area the agent sweeps. A query
    /// that finds no path is not an error: it prints a `warning:` line on stderr, is drawn
    /// as a dashed line between its markers, and the picture is still written (exit 0).
    Render {
        /// The navmesh file (or a .json/.map map, built in memory first).
        file: PathBuf,
        /// Where to write the SVG.
        #[arg(short, long)]
        output: PathBuf,
        /// Picture width in pixels.
        #[arg(long, default_value_t = 1200.0)]
        width: f64,
        /// A path query to draw, from (X1, Y1) to (X2, Y2) in map units; repeatable.
        #[arg(long = "path", value_name = "X1,Y1,X2,Y2", value_parser = parse_path_arg, allow_hyphen_values = true)]
        paths: Vec<PathArg>,
        /// Agent radius for the `--path` queries, in map units.
        #[arg(
            long,
            value_name = "R",
            default_value_t = 0.0,
            allow_negative_numbers = true,
            requires = "paths"
        )]
        radius: f64,
    },
    /// Run the queries of a Moving AI scenario file and report found paths, length ratios
    /// and time per query.
    ///
    /// Prints: queries, found, not found (by error kind), mean and max ratio of path
    /// length to the file's optimum (over found queries whose optimum is above 0; for Moving
    /// AI files the optimum is an 8-connected grid length, an upper bound for a zero-radius
    /// any-angle path, so ratios at or below 1 are expected), queries per second and the
    /// p50/p99/max time per query. Only the path search itself is timed.
    Query {
        /// The navmesh file (or a .json/.map map, built in memory first).
        mesh: PathBuf,
        /// The scenario file (`version 1`, then one query per line).
        #[arg(long, value_name = "FILE.scen")]
        scen: PathBuf,
        /// Read coordinates as grid cells: cell (x, y) is the point (x + 0.5, y + 0.5).
        /// Without it, coordinates are points as written.
        #[arg(long, visible_alias = "cell-centers")]
        cell_centres: bool,
        /// Agent radius, in map units.
        #[arg(
            long,
            value_name = "R",
            default_value_t = 0.0,
            allow_negative_numbers = true
        )]
        radius: f64,
        /// Also write one row per query: `index,found,length,optimum,ratio,micros`
        /// (index is the query's 0-based position in the file; length and ratio are empty
        /// when unknown).
        #[arg(long, value_name = "OUT.csv")]
        csv: Option<PathBuf>,
    },
    /// Build maps (default: every .map in maps/movingai) and print time and peak memory per stage.
    Bench {
        /// Maps to build; default every `.map` file in `maps/movingai`.
        maps: Vec<PathBuf>,
        /// Builds per map; the table shows the fastest.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Build {
            input,
            output,
            svg,
            min_angle,
            max_area,
        } => {
            let params = RefineParams {
                min_angle_deg: min_angle,
                max_area,
            };
            let built = build_file(&input, &params, &mut |_| {})?;
            let start = Instant::now();
            let bytes = navmesh::encode(&built.mesh);
            std::fs::write(&output, &bytes)
                .with_context(|| format!("cannot write {}", output.display()))?;
            let write_time = start.elapsed();
            if let Some(svg) = &svg {
                write_svg(&built.mesh, svg, 1200.0)?;
            }
            print_summary(&built.mesh);
            print_build(&built);
            println!(
                "write        {:>10}  {} ({} bytes)",
                ms(write_time.as_secs_f64()),
                output.display(),
                bytes.len()
            );
            if let Some(svg) = svg {
                println!("picture      {}", svg.display());
            }
            Ok(())
        }
        Command::Info { file } => {
            let mesh = load_map(&file)?.mesh;
            print_summary(&mesh);
            Ok(())
        }
        Command::Render {
            file,
            output,
            width,
            paths,
            radius,
        } => {
            if !(width.is_finite() && (16.0..=100_000.0).contains(&width)) {
                bail!("--width must be between 16 and 100000 pixels, got {width}");
            }
            if !(radius.is_finite() && radius >= 0.0) {
                bail!("--radius must be a finite number >= 0, got {radius}");
            }
            let mesh = load_map(&file)?.mesh;
            render_with_paths(&mesh, &output, width, &paths, radius)?;
            println!("wrote {}", output.display());
            Ok(())
        }
        Command::Query {
            mesh,
            scen,
            cell_centres,
            radius,
            csv,
        } => query::run(&query::QueryArgs {
            mesh,
            scen,
            cell_centres,
            radius,
            csv,
        }),
        Command::Bench { maps, runs } => bench::run(maps, runs.max(1)),
    }
}

/// Reads and builds one map file, naming the file in every error.
fn write_svg(mesh: &NavMesh, path: &Path, width: f64) -> Result<()> {
    render_with_paths(mesh, path, width, &[], 0.0)
}

/// A `--path X1,Y1,X2,Y2` argument.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PathArg {
    start: Point,
    goal: Point,
}

/// Parses `X1,Y1,X2,Y2`: four finite numbers separated by commas (spaces around them are
/// allowed).
fn parse_path_arg(text: &str) -> std::result::Result<PathArg, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        return Err(format!(
            "expected X1,Y1,X2,Y2 (four numbers separated by commas), got {} value{}",
            parts.len(),
            if parts.len() == 1 { "" } else { "s" }
        ));
    }
    let mut v = [0.0; 4];
    for (slot, (part, name)) in v.iter_mut().zip(parts.iter().zip(["X1", "Y1", "X2", "Y2"])) {
        *slot = match part.parse::<f64>() {
            Ok(x) if x.is_finite() => x,
            _ => return Err(format!("{name} `{part}` is not a finite number")),
        };
    }
    Ok(PathArg {
        start: Point::new(v[0], v[1]),
        goal: Point::new(v[2], v[3]),
    })
}

/// Finds each path, reports it (found: stdout; not found: a warning on stderr) and writes
/// the picture with all of them drawn.
fn render_with_paths(
    mesh: &NavMesh,
    output: &Path,
    width: f64,
    paths: &[PathArg],
    radius: f64,
) -> Result<()> {
    let mut query = NavMeshQuery::new();
    let mut found: Vec<Option<Vec<Point>>> = Vec::with_capacity(paths.len());
    for (i, p) in paths.iter().enumerate() {
        let (s, g) = (p.start, p.goal);
        match query.find_path(mesh, s, g, radius) {
            Ok(path) => {
                println!(
                    "{:<12} ({}, {}) to ({}, {}): length {:.3}, {} corners",
                    format!("path {}", i + 1),
                    s.x,
                    s.y,
                    g.x,
                    g.y,
                    path.length,
                    path.points.len()
                );
                found.push(Some(path.points));
            }
            Err(err) => {
                eprintln!(
                    "warning: path {} ({}, {}) to ({}, {}): {err}",
                    i + 1,
                    s.x,
                    s.y,
                    g.x,
                    g.y
                );
                found.push(None);
            }
        }
    }
    let overlays: Vec<PathOverlay<'_>> = paths
        .iter()
        .zip(&found)
        .map(|(p, points)| PathOverlay {
            start: p.start,
            goal: p.goal,
            points: points.as_deref(),
            radius,
        })
        .collect();
    std::fs::write(output, render_svg_with_paths(mesh, width, &overlays))
        .with_context(|| format!("cannot write {}", output.display()))
}

fn print_summary(mesh: &NavMesh) {
    let info = mesh.info();
    let b = mesh.bounds();
    println!("source       {}", info.source_name);
    println!("vertices     {}", mesh.vertices().len());
    println!("triangles    {}", mesh.triangle_count());
    println!("islands      {}", mesh.island_count());
    println!("walkable     {:.3} m²", mesh.walkable_area());
    println!("walls        {} edges", mesh.walls().len());
    println!(
        "bounds       ({}, {}) to ({}, {})",
        b.min.x, b.min.y, b.max.x, b.max.y
    );
    let refinement = match (info.min_angle_deg, info.max_area) {
        (None, None) => "none".to_owned(),
        (angle, area) => format!(
            "min angle {}, max area {}",
            angle.map_or("-".to_owned(), |a| format!("{a}°")),
            area.map_or("-".to_owned(), |a| format!("{a} m²"))
        ),
    };
    println!("refinement   {refinement}");
}

fn print_build(built: &Built) {
    println!("input area   {:.3} m²", built.outline_area);
    if let Some(report) = built.refine {
        println!(
            "refined      {} vertices added{}",
            report.added_vertices,
            if report.complete {
                ""
            } else {
                " (vertex budget ran out: limits not met everywhere)"
            }
        );
    }
    for stage in &built.stages {
        println!(
            "{:<12} {:>10}",
            stage.stage,
            ms(stage.elapsed.as_secs_f64())
        );
    }
    let total: f64 = built.stages.iter().map(|s| s.elapsed.as_secs_f64()).sum();
    println!("{:<12} {:>10}", "total build", ms(total));
}

pub(crate) fn ms(secs: f64) -> String {
    format!("{:.2} ms", secs * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_arguments() {
        assert_eq!(
            parse_path_arg("1,2.5, -3 ,4e1"),
            Ok(PathArg {
                start: Point::new(1.0, 2.5),
                goal: Point::new(-3.0, 40.0),
            })
        );
        let err = parse_path_arg("1,2,3").unwrap_err();
        assert!(
            err.contains("expected X1,Y1,X2,Y2") && err.contains("got 3 values"),
            "{err}"
        );
        let err = parse_path_arg("1,2,3,4,5").unwrap_err();
        assert!(err.contains("got 5 values"), "{err}");
        assert_eq!(
            parse_path_arg("1,y,3,4").unwrap_err(),
            "Y1 `y` is not a finite number"
        );
        assert_eq!(
            parse_path_arg("1,2,NaN,4").unwrap_err(),
            "X2 `NaN` is not a finite number"
        );
        assert!(parse_path_arg("").is_err());
    }
}
