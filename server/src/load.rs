//! Reading the map: a navmesh file is decoded, a map the builder reads is built in memory.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use navmesh::NavMesh;
use navmesh_builder::pipeline::{SourceKind, build};
use navmesh_builder::triangulate::RefineParams;

/// A loaded mesh and a line saying where it came from.
pub(crate) struct Loaded {
    /// The mesh.
    pub(crate) mesh: NavMesh,
    /// For the user: navmesh file or built in memory, and how long it took.
    pub(crate) origin: String,
}

/// Loads `path`: `.navmesh` files are decoded, `.json` (polygon) and `.map` (Moving AI
/// grid) maps are built with the builder's default parameters. Every error names the file.
pub(crate) fn load(path: &Path) -> Result<Loaded> {
    let start = Instant::now();
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if ext.as_deref() == Some("navmesh") {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mesh = navmesh::decode(&bytes)
            .with_context(|| format!("{} is not a valid navmesh file", path.display()))?;
        let origin = format!(
            "navmesh file, loaded in {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        return Ok(Loaded { mesh, origin });
    }
    let Some(kind) = SourceKind::from_path(path) else {
        bail!(
            "{}: unknown map format (expected .navmesh for navmesh files, .json for polygon maps or .map for Moving AI grid maps)",
            path.display()
        );
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let built = build(&name, &text, kind, &RefineParams::default(), &mut |_| {})
        .with_context(|| path.display().to_string())?;
    let origin = format!(
        "map built in memory in {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(Loaded {
        mesh: built.mesh,
        origin,
    })
}
