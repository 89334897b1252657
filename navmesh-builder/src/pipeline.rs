//! The whole build, stage by stage: parse → outline → validate → triangulate → classify →
//! refine (optional) → bake. Each stage is a public function of its own module; this module
//! runs them in order, times them and reports each one to an observer as it ends.

use std::path::Path;
use std::time::{Duration, Instant};

use navmesh::{BuildInfo, MeshError, NavMesh};

use crate::bake::bake;
use crate::source::{MapInput, grid, polygon};
use crate::triangulate::{
    RefineParams, RefineParamsError, RefineReport, TriangulateError, classify, refine, triangulate,
};
use crate::validate::{ValidationError, validate};

/// The kinds of map the builder reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// Polygon JSON (`.json`), see [`crate::source::polygon`].
    Polygon,
    /// Moving AI grid map (`.map`), see [`crate::source::grid`].
    Grid,
}

impl SourceKind {
    /// The kind a file name's extension implies.
    pub fn from_path(path: &Path) -> Option<SourceKind> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "json" => Some(SourceKind::Polygon),
            "map" => Some(SourceKind::Grid),
            _ => None,
        }
    }
}

/// Why a build failed; each variant is one stage's error. The message names the stage
/// only: the stage's own error is the [`std::error::Error::source`], so a report that
/// prints the chain (`anyhow`'s `{:#}`) shows it once.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The polygon JSON did not parse.
    #[error("parse")]
    Polygon(#[from] polygon::PolygonError),
    /// The grid map did not parse.
    #[error("parse")]
    Grid(#[from] grid::GridError),
    /// The outline is not a valid walkable area.
    #[error("validate")]
    Validation(#[from] ValidationError),
    /// Triangulation or classification failed.
    #[error("triangulate")]
    Triangulate(#[from] TriangulateError),
    /// Bad refinement settings.
    #[error("refine")]
    Refine(#[from] RefineParamsError),
    /// The baked mesh broke an invariant (a builder bug, reported rather than written).
    #[error("bake")]
    Mesh(#[from] MeshError),
}

/// One finished stage and its wall-clock time.
#[derive(Clone, Copy, Debug)]
pub struct StageTime {
    /// Stage name.
    pub stage: &'static str,
    /// Time it took.
    pub elapsed: Duration,
}

/// A finished build.
#[derive(Debug)]
pub struct Built {
    /// The mesh.
    pub mesh: NavMesh,
    /// Walkable area of the validated outline.
    pub outline_area: f64,
    /// Walkable area the source states exactly (grid maps: passable cells).
    pub known_area: Option<f64>,
    /// What refinement did, when it ran.
    pub refine: Option<RefineReport>,
    /// Every stage in order.
    pub stages: Vec<StageTime>,
}

struct Timer<'a> {
    stages: Vec<StageTime>,
    observe: &'a mut dyn FnMut(&StageTime),
}

impl Timer<'_> {
    fn run<T>(&mut self, stage: &'static str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        let time = StageTime {
            stage,
            elapsed: start.elapsed(),
        };
        (self.observe)(&time);
        self.stages.push(time);
        out
    }
}

/// Builds a mesh from map text. `name` is stored in the mesh as its source name;
/// `observe` sees each stage as it ends (the benchmark samples memory there).
pub fn build(
    name: &str,
    text: &str,
    kind: SourceKind,
    params: &RefineParams,
    observe: &mut dyn FnMut(&StageTime),
) -> Result<Built, BuildError> {
    params.check()?;
    let mut timer = Timer {
        stages: Vec::new(),
        observe,
    };
    let input: MapInput = match kind {
        SourceKind::Polygon => timer.run("parse", || polygon::parse(name, text))?,
        SourceKind::Grid => {
            let grid = timer.run("parse", || grid::parse(text))?;
            let regions = timer.run("outline", || grid::trace_regions(&grid));
            MapInput {
                name: name.to_owned(),
                regions,
                known_area: Some(grid.passable_count() as f64),
            }
        }
    };
    let outline = timer.run("validate", || validate(&input))?;
    let mut cdt = timer.run("triangulate", || triangulate(&outline))?;
    let mut classes = timer.run("classify", || classify(&cdt))?;
    let mut refine_report = None;
    if params.is_enabled() {
        refine_report = Some(timer.run("refine", || refine(&mut cdt, params))?);
        classes = timer.run("reclassify", || classify(&cdt))?;
    }
    let info = BuildInfo {
        source_name: name.to_owned(),
        min_angle_deg: params.min_angle_deg,
        max_area: params.max_area,
    };
    let mesh = timer.run("bake", || bake(&cdt, &classes, info))?;
    Ok(Built {
        mesh,
        outline_area: outline.area,
        known_area: input.known_area,
        refine: refine_report,
        stages: timer.stages,
    })
}
