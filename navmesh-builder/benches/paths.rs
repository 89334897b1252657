//! Path query speed on real maps: `find_path/brc202d` and `find_path/AcrosstheCape`.
//!
//! Each map is built in memory (no refinement) and its Moving AI scenarios are taken at
//! cell centres with a zero radius. One iteration is one `find_path_into` call on the next
//! scenario, round-robin over the whole file, with one reused query object and output
//! vector, so the figure is the mean time per query once the scratch is warm.
//!
//! `cargo bench -p navmesh-builder --bench paths` runs it (about a minute, mostly map
//! building); add `-- --test` to run every benchmark once as a smoke test.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use navmesh::{NavMesh, NavMeshQuery, Point};
use navmesh_builder::pipeline::{SourceKind, build};
use navmesh_builder::scen;
use navmesh_builder::triangulate::RefineParams;

/// The maps benchmarked, by file stem in `maps/movingai`.
const MAPS: [&str; 2] = ["brc202d", "AcrosstheCape"];

/// A built map and its queries as (start, goal) points.
struct Case {
    mesh: NavMesh,
    queries: Vec<(Point, Point)>,
}

/// Builds `maps/movingai/<name>.map` and reads its `.map.scen`. Panics with the file's
/// name when either is missing or invalid: a benchmark has no one to report errors to.
fn load(name: &str) -> Case {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../maps/movingai");
    let map_path = dir.join(format!("{name}.map"));
    let scen_path = dir.join(format!("{name}.map.scen"));
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
    };
    let built = build(
        &format!("{name}.map"),
        &read(&map_path),
        SourceKind::Grid,
        &RefineParams::default(),
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{}: {e}", map_path.display()));
    let queries: Vec<(Point, Point)> = scen::parse(&read(&scen_path))
        .unwrap_or_else(|e| panic!("{}: {e}", scen_path.display()))
        .iter()
        .map(scen::Scenario::cell_centres)
        .collect();
    assert!(!queries.is_empty(), "{}: no scenarios", scen_path.display());
    // The corner graph is built on the first point query; build it here, outside the timing.
    built.mesh.prepare_point_queries();
    Case {
        mesh: built.mesh,
        queries,
    }
}

fn find_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("find_path");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for name in MAPS {
        let case = load(name);
        let mut query = NavMeshQuery::new();
        let mut out: Vec<Point> = Vec::new();
        let mut next = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                let (start, goal) = case.queries[next];
                next = (next + 1) % case.queries.len();
                let result = query.find_path_into(
                    black_box(&case.mesh),
                    black_box(start),
                    black_box(goal),
                    black_box(0.0),
                    &mut out,
                );
                black_box(&out);
                result
            });
        });
    }
    group.finish();
}

criterion_group!(benches, find_path);
criterion_main!(benches);
