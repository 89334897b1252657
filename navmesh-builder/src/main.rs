//! `navmesh-builder`: build navmesh files from maps, inspect them, draw them, benchmark.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use navmesh::NavMesh;
use navmesh_builder::pipeline::{Built, SourceKind, StageTime, build};
use navmesh_builder::render::render_svg;
use navmesh_builder::triangulate::RefineParams;

mod bench;

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
    /// Draw an existing navmesh file as SVG.
    Render {
        /// The navmesh file.
        file: PathBuf,
        /// Where to write the SVG.
        #[arg(short, long)]
        output: PathBuf,
        /// Picture width in pixels.
        #[arg(long, default_value_t = 1200.0)]
        width: f64,
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
            let mesh = load_mesh(&file)?;
            print_summary(&mesh);
            Ok(())
        }
        Command::Render {
            file,
            output,
            width,
        } => {
            if !(width.is_finite() && (16.0..=100_000.0).contains(&width)) {
                bail!("--width must be between 16 and 100000 pixels, got {width}");
            }
            let mesh = load_mesh(&file)?;
            write_svg(&mesh, &output, width)?;
            println!("wrote {}", output.display());
            Ok(())
        }
        Command::Bench { maps, runs } => bench::run(maps, runs.max(1)),
    }
}

/// Reads and builds one map file, naming the file in every error.
pub(crate) fn build_file(
    input: &Path,
    params: &RefineParams,
    observe: &mut dyn FnMut(&StageTime),
) -> Result<Built> {
    let Some(kind) = SourceKind::from_path(input) else {
        bail!(
            "{}: unknown map format (expected .json for polygon maps or .map for Moving AI grid maps)",
            input.display()
        );
    };
    let text = std::fs::read_to_string(input)
        .with_context(|| format!("cannot read {}", input.display()))?;
    let name = input.file_name().map_or_else(
        || input.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    build(&name, &text, kind, params, observe).with_context(|| format!("{}", input.display()))
}

fn load_mesh(path: &Path) -> Result<NavMesh> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    navmesh::decode(&bytes)
        .with_context(|| format!("{} is not a valid navmesh file", path.display()))
}

fn write_svg(mesh: &NavMesh, path: &Path, width: f64) -> Result<()> {
    std::fs::write(path, render_svg(mesh, width))
        .with_context(|| format!("cannot write {}", path.display()))
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
