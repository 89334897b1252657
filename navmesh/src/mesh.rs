//! The immutable navigation mesh: vertices, counter-clockwise triangles, the neighbour across
//! every triangle edge, an island id per triangle and the wall edges.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use crate::bridges::Bridges;
use crate::corners::Corners;
use crate::geom::{Aabb, Point, orient};
use crate::landmarks::{LANDMARK_COUNT, Landmarks};
use crate::locate::TriangleLocator;
use crate::random::LazyAreas;
use crate::walls::WallGrid;
use crate::width::traversal_widths;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as an index into the mesh's arrays.
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// Index of a vertex in [`NavMesh::vertices`].
    VertId
);
id_type!(
    /// Index of a triangle in [`NavMesh::triangles`].
    TriId
);
id_type!(
    /// A connected component of triangles (connected through shared edges). Two points on
    /// different islands have no path between them.
    IslandId
);

/// Edge `e` of a triangle runs from corner `e` to corner `(e + 1) % 3`.
pub const fn edge_corners(edge: usize) -> (usize, usize) {
    (edge, (edge + 1) % 3)
}

/// A wall: a triangle edge with no triangle on its other side. It runs from `from` to `to`
/// with the walkable triangle on its left (the triangle's counter-clockwise order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallEdge {
    /// The walkable triangle this wall bounds.
    pub tri: TriId,
    /// Which edge of `tri` (0..3).
    pub edge: u8,
    /// Start vertex.
    pub from: VertId,
    /// End vertex.
    pub to: VertId,
}

/// How a mesh was built: recorded in the file so a mesh can say where it came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BuildInfo {
    /// The source map's name (usually its file name).
    pub source_name: String,
    /// Minimum triangle angle requested from Delaunay refinement, in degrees.
    pub min_angle_deg: Option<f64>,
    /// Maximum triangle area requested from Delaunay refinement, in square map units.
    pub max_area: Option<f64>,
}

/// Why a set of triangles is not a valid navmesh. Every variant names the element at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// The mesh has no triangles.
    #[error("mesh has no triangles")]
    Empty,
    /// More vertices or triangles than the 32-bit ids can address.
    #[error("too many {what}: {count} (at most {max})")]
    TooMany {
        /// "vertices" or "triangles".
        what: &'static str,
        /// How many were given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A vertex coordinate is NaN or infinite.
    #[error("vertex {vertex}: coordinate is not finite")]
    NonFiniteVertex {
        /// The vertex.
        vertex: u32,
    },
    /// A triangle refers to a vertex that does not exist.
    #[error("triangle {tri}, corner {corner}: vertex {vertex} out of range (mesh has {count})")]
    VertexOutOfRange {
        /// The triangle.
        tri: u32,
        /// Which corner (0..3).
        corner: usize,
        /// The bad index.
        vertex: u32,
        /// Number of vertices.
        count: usize,
    },
    /// A triangle uses the same vertex twice, or its corners are collinear.
    #[error("triangle {tri} is degenerate (zero area)")]
    Degenerate {
        /// The triangle.
        tri: u32,
    },
    /// A triangle's corners run clockwise.
    #[error("triangle {tri} is not counter-clockwise")]
    Clockwise {
        /// The triangle.
        tri: u32,
    },
    /// The same directed edge belongs to two triangles: they overlap or disagree on
    /// orientation, so the mesh is not a proper surface.
    #[error("edge {from}->{to} is used in the same direction by triangles {first} and {second}")]
    DuplicateEdge {
        /// Edge start vertex.
        from: u32,
        /// Edge end vertex.
        to: u32,
        /// First triangle using it.
        first: u32,
        /// Second triangle using it.
        second: u32,
    },
    /// A stored neighbour does not match the triangle actually across that edge (this covers
    /// asymmetric and out-of-range neighbours).
    #[error(
        "triangle {tri}, edge {edge}: stored neighbour {stored} but the triangle across is {actual}"
    )]
    NeighbourMismatch {
        /// The triangle.
        tri: u32,
        /// Which edge (0..3).
        edge: usize,
        /// What the data says ("wall" or an id).
        stored: String,
        /// What the triangles say.
        actual: String,
    },
    /// A stored island id does not match the connected components of the triangles.
    #[error("triangle {tri}: stored island {stored} but its component is island {actual}")]
    IslandMismatch {
        /// The triangle.
        tri: u32,
        /// Stored id.
        stored: u32,
        /// Id given by a breadth-first labelling in triangle order.
        actual: u32,
    },
    /// A per-triangle array has the wrong length.
    #[error("{what} has {count} entries, expected one per triangle ({expected})")]
    PartLength {
        /// "neighbours" or "islands".
        what: &'static str,
        /// Entries given.
        count: usize,
        /// Number of triangles.
        expected: usize,
    },
    /// The stored island count is wrong.
    #[error("stored island count {stored} but the triangles form {actual} islands")]
    IslandCount {
        /// Stored count.
        stored: u32,
        /// Actual count.
        actual: u32,
    },
}

/// The runtime navigation mesh. Immutable once built; share it freely across threads.
///
/// Invariants (checked by [`NavMesh::new`] and [`NavMesh::from_parts`]): every triangle is
/// counter-clockwise with positive area; `neighbours[t][e]` is the triangle across edge `e`
/// of `t` (see [`edge_corners`]) or `None` for a wall, and the relation is symmetric; islands
/// are the connected components through shared edges, numbered in order of their first
/// triangle.
#[derive(Clone, Debug, PartialEq)]
pub struct NavMesh {
    info: BuildInfo,
    vertices: Vec<Point>,
    triangles: Vec<[VertId; 3]>,
    neighbours: Vec<[Option<TriId>; 3]>,
    islands: Vec<IslandId>,
    island_count: u32,
    walls: Vec<WallEdge>,
    bounds: Aabb,
    /// Derived at construction (never stored in files): point location.
    locator: TriangleLocator,
    /// Derived: true for vertices on a wall (obstacle corners paths may turn around).
    on_wall: Vec<bool>,
    /// Derived: `widths[t][k]`, the widest disc that can cross triangle `t` between the two
    /// edges meeting at corner `k` (see [`crate::width`]).
    widths: Vec<[f64; 3]>,
    /// Derived: `fan_walls[t][c]` = the far vertex of the first wall met rotating
    /// counter-clockwise (`[0]`) and clockwise (`[1]`) around corner `c`, starting in `t`
    /// (see [`crate::width::fan_walls`]).
    fan_walls: Vec<[[VertId; 2]; 3]>,
    /// Derived: landmark distances for the search heuristic (see [`crate::landmarks`]).
    landmarks: Landmarks,
    /// Derived: the bridge tree, to skip cul-de-sacs (see [`crate::bridges`]).
    bridges: Bridges,
    /// Derived on first use: the corner graph and its distance tables (see
    /// [`crate::corners`]).
    corners: LazyCorners,
    /// Derived on first use: cumulative triangle areas for random points (see
    /// [`crate::random`]).
    areas: LazyAreas,
    /// Derived: half the largest width anywhere, the largest radius any corridor admits.
    max_radius: f64,
    /// Derived: the walls in a uniform grid, for nearest-wall and box queries.
    wall_grid: WallGrid,
}

impl NavMesh {
    /// Builds a mesh from vertices and counter-clockwise triangles, deriving neighbours,
    /// islands and walls.
    pub fn new(
        info: BuildInfo,
        vertices: Vec<Point>,
        triangles: Vec<[VertId; 3]>,
    ) -> Result<NavMesh, MeshError> {
        check_geometry(&vertices, &triangles)?;
        let neighbours = derive_neighbours(&triangles)?;
        let (islands, island_count) = label_islands(&neighbours);
        Ok(Self::assemble(
            info,
            vertices,
            triangles,
            neighbours,
            islands,
            island_count,
        ))
    }

    /// Rebuilds a mesh from stored parts (a file), checking that the stored neighbours and
    /// islands are exactly what the triangles imply.
    pub fn from_parts(
        info: BuildInfo,
        vertices: Vec<Point>,
        triangles: Vec<[VertId; 3]>,
        neighbours: Vec<[Option<TriId>; 3]>,
        islands: Vec<IslandId>,
        island_count: u32,
    ) -> Result<NavMesh, MeshError> {
        check_geometry(&vertices, &triangles)?;
        for (what, count) in [("neighbours", neighbours.len()), ("islands", islands.len())] {
            if count != triangles.len() {
                return Err(MeshError::PartLength {
                    what,
                    count,
                    expected: triangles.len(),
                });
            }
        }
        let actual = derive_neighbours(&triangles)?;
        for (t, (stored, actual)) in neighbours.iter().zip(&actual).enumerate() {
            for e in 0..3 {
                if stored[e] != actual[e] {
                    return Err(MeshError::NeighbourMismatch {
                        tri: t as u32,
                        edge: e,
                        stored: describe_neighbour(stored[e]),
                        actual: describe_neighbour(actual[e]),
                    });
                }
            }
        }
        let (actual_islands, actual_count) = label_islands(&actual);
        for (t, (stored, actual)) in islands.iter().zip(&actual_islands).enumerate() {
            if stored != actual {
                return Err(MeshError::IslandMismatch {
                    tri: t as u32,
                    stored: stored.0,
                    actual: actual.0,
                });
            }
        }
        if island_count != actual_count {
            return Err(MeshError::IslandCount {
                stored: island_count,
                actual: actual_count,
            });
        }
        Ok(Self::assemble(
            info,
            vertices,
            triangles,
            actual,
            actual_islands,
            actual_count,
        ))
    }

    fn assemble(
        info: BuildInfo,
        vertices: Vec<Point>,
        triangles: Vec<[VertId; 3]>,
        neighbours: Vec<[Option<TriId>; 3]>,
        islands: Vec<IslandId>,
        island_count: u32,
    ) -> NavMesh {
        let mut walls = Vec::new();
        for (t, (tri, across)) in triangles.iter().zip(&neighbours).enumerate() {
            for (e, n) in across.iter().enumerate() {
                if n.is_none() {
                    let (a, b) = edge_corners(e);
                    walls.push(WallEdge {
                        tri: TriId(t as u32),
                        edge: e as u8,
                        from: tri[a],
                        to: tri[b],
                    });
                }
            }
        }
        // Bounds of the vertices triangles use: every vertex is used once the mesh is valid,
        // but a stray unused vertex must not widen the map.
        let bounds = Aabb::of_points(triangles.iter().flatten().map(|v| vertices[v.index()]))
            .unwrap_or(Aabb {
                min: Point::default(),
                max: Point::default(),
            });
        let mut on_wall = vec![false; vertices.len()];
        for w in &walls {
            on_wall[w.from.index()] = true;
            on_wall[w.to.index()] = true;
        }
        let wall_grid = WallGrid::build(&vertices, &walls, bounds);
        let mut mesh = NavMesh {
            info,
            vertices,
            triangles,
            neighbours,
            islands,
            island_count,
            walls,
            bounds,
            locator: TriangleLocator::default(),
            on_wall,
            widths: Vec::new(),
            fan_walls: Vec::new(),
            landmarks: Landmarks::default(),
            bridges: Bridges::default(),
            corners: LazyCorners::default(),
            areas: LazyAreas::default(),
            max_radius: 0.0,
            wall_grid,
        };
        mesh.locator = TriangleLocator::new(&mesh);
        mesh.widths = traversal_widths(&mesh);
        mesh.fan_walls = crate::width::fan_walls(&mesh);
        mesh.landmarks = Landmarks::compute(&mesh, LANDMARK_COUNT);
        mesh.bridges = Bridges::compute(&mesh);
        mesh.max_radius = mesh.widths.iter().flatten().fold(0.0f64, |m, &w| m.max(w)) / 2.0;
        mesh
    }

    /// The triangle containing `p` (boundary included), or `None` off the mesh. A point on
    /// a shared edge or vertex resolves to the lowest triangle id that contains it.
    pub fn locate(&self, p: Point) -> Option<TriId> {
        self.locator.locate(self, p)
    }

    /// [`NavMesh::locate`], trying `hint` first: a point strictly inside it lies in no other
    /// triangle, so the grid is searched only when it is not (points sampled along a path
    /// mostly fall in the triangle of the sample before).
    pub fn locate_near(&self, hint: Option<TriId>, p: Point) -> Option<TriId> {
        if let Some(t) = hint.filter(|t| t.index() < self.triangle_count()) {
            let [a, b, c] = self.triangle_points(t);
            if orient(a, b, p) > 0.0 && orient(b, c, p) > 0.0 && orient(c, a, p) > 0.0 {
                return Some(t);
            }
        }
        self.locate(p)
    }

    /// True when the vertex lies on a wall: an obstacle corner a path may turn around.
    pub fn is_wall_vertex(&self, v: VertId) -> bool {
        self.on_wall[v.index()]
    }

    /// The widest disc (diameter) that can cross triangle `tri` from one of the edges at
    /// `corner` to the other. Edges at corner `k` are edge `k` and edge `(k + 2) % 3`.
    pub fn traversal_width(&self, tri: TriId, corner: usize) -> f64 {
        self.widths[tri.index()][corner]
    }

    /// Rotating around corner `corner` of `tri`, counter-clockwise (`ccw`) or clockwise,
    /// through neighbouring triangles: the far vertex of the first wall edge met there.
    /// `None` for a vertex with no wall (an interior vertex).
    pub fn fan_wall(&self, tri: TriId, corner: usize, ccw: bool) -> Option<VertId> {
        let v = self.fan_walls[tri.index()][corner][usize::from(!ccw)];
        (v.0 != u32::MAX).then_some(v)
    }

    /// The bridge tree the path search prunes cul-de-sacs with.
    pub(crate) fn bridges(&self) -> &Bridges {
        &self.bridges
    }

    /// The corner graph point-agent queries use (see [`crate::corners`]), built on first
    /// use.
    pub(crate) fn corners(&self) -> &Corners {
        self.corners.0.get_or_init(|| Corners::compute(self))
    }

    /// Builds the corner graph that path queries use (for every radius, see
    /// [`crate::path`]), if it is not built yet. Queries build it on first use; call this
    /// at load time to keep that cost (one Dijkstra run per corner of each tabled island;
    /// `docs/benchmarks.md` has the times) out of the first query.
    pub fn prepare_point_queries(&self) {
        self.corners();
    }

    /// The corner graph's size (building it if needed): corners, taut visibility edges
    /// (each direction counted) and bytes of distance tables.
    pub fn corner_graph_size(&self) -> (usize, usize, usize) {
        let corners = self.corners();
        (corners.count(), corners.edge_count(), corners.table_bytes())
    }

    /// The area tables random points are drawn with, built on first use by
    /// [`crate::random`].
    pub(crate) fn lazy_areas(&self) -> &LazyAreas {
        &self.areas
    }

    /// The landmark distances the path search's heuristic uses.
    pub(crate) fn landmarks(&self) -> &Landmarks {
        &self.landmarks
    }

    /// True when the triangle has exactly one neighbour: a path can enter it but not
    /// leave through another edge.
    pub fn is_dead_end(&self, tri: TriId) -> bool {
        self.neighbours[tri.index()].iter().flatten().count() == 1
    }

    /// The largest radius any traversal of the mesh admits.
    pub fn max_radius(&self) -> f64 {
        self.max_radius
    }

    /// The wall index behind [`NavMesh::nearest_wall`] and [`NavMesh::walls_near`].
    pub fn wall_grid(&self) -> &WallGrid {
        &self.wall_grid
    }

    /// How the mesh was built.
    pub fn info(&self) -> &BuildInfo {
        &self.info
    }
    /// All vertices.
    pub fn vertices(&self) -> &[Point] {
        &self.vertices
    }
    /// All triangles, as counter-clockwise vertex ids.
    pub fn triangles(&self) -> &[[VertId; 3]] {
        &self.triangles
    }
    /// The neighbour across each edge of each triangle (`None`: a wall).
    pub fn neighbours(&self) -> &[[Option<TriId>; 3]] {
        &self.neighbours
    }
    /// The island of each triangle.
    pub fn islands(&self) -> &[IslandId] {
        &self.islands
    }
    /// Number of islands.
    pub fn island_count(&self) -> u32 {
        self.island_count
    }
    /// All wall edges, walkable side on the left.
    pub fn walls(&self) -> &[WallEdge] {
        &self.walls
    }
    /// The axis-aligned bounds of the mesh.
    pub fn bounds(&self) -> Aabb {
        self.bounds
    }
    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }
    /// The corner points of a triangle.
    pub fn triangle_points(&self, tri: TriId) -> [Point; 3] {
        self.triangles[tri.index()].map(|v| self.vertices[v.index()])
    }
    /// The island a triangle belongs to.
    pub fn island(&self, tri: TriId) -> IslandId {
        self.islands[tri.index()]
    }
    /// Area of one triangle.
    pub fn triangle_area(&self, tri: TriId) -> f64 {
        let [a, b, c] = self.triangle_points(tri);
        orient(a, b, c) / 2.0
    }
    /// Total walkable area (sum of triangle areas).
    pub fn walkable_area(&self) -> f64 {
        (0..self.triangles.len())
            .map(|t| self.triangle_area(TriId(t as u32)))
            .sum()
    }
    /// The centroid of a triangle.
    pub fn centroid(&self, tri: TriId) -> Point {
        let [a, b, c] = self.triangle_points(tri);
        Point::new((a.x + b.x + c.x) / 3.0, (a.y + b.y + c.y) / 3.0)
    }
}

/// The lazily built corner graph. Derived data: two meshes with the same parts are equal
/// whether or not either has built it.
#[derive(Clone, Debug, Default)]
struct LazyCorners(OnceLock<Corners>);

impl PartialEq for LazyCorners {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

fn describe_neighbour(n: Option<TriId>) -> String {
    match n {
        Some(t) => format!("triangle {t}"),
        None => "wall".to_owned(),
    }
}

fn check_geometry(vertices: &[Point], triangles: &[[VertId; 3]]) -> Result<(), MeshError> {
    // u32::MAX is the "no neighbour" marker in files, so ids stay below it.
    const MAX: usize = u32::MAX as usize - 1;
    if triangles.is_empty() {
        return Err(MeshError::Empty);
    }
    if vertices.len() > MAX {
        return Err(MeshError::TooMany {
            what: "vertices",
            count: vertices.len(),
            max: MAX,
        });
    }
    if triangles.len() > MAX {
        return Err(MeshError::TooMany {
            what: "triangles",
            count: triangles.len(),
            max: MAX,
        });
    }
    if let Some(v) = vertices.iter().position(|p| !p.is_finite()) {
        return Err(MeshError::NonFiniteVertex { vertex: v as u32 });
    }
    for (t, tri) in triangles.iter().enumerate() {
        for (corner, v) in tri.iter().enumerate() {
            if v.index() >= vertices.len() {
                return Err(MeshError::VertexOutOfRange {
                    tri: t as u32,
                    corner,
                    vertex: v.0,
                    count: vertices.len(),
                });
            }
        }
        let [a, b, c] = tri.map(|v| vertices[v.index()]);
        let twice_area = orient(a, b, c);
        if tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2] || twice_area == 0.0 {
            return Err(MeshError::Degenerate { tri: t as u32 });
        }
        if twice_area < 0.0 {
            return Err(MeshError::Clockwise { tri: t as u32 });
        }
    }
    Ok(())
}

/// The triangle across each edge, found by matching each directed edge with its reverse.
fn derive_neighbours(triangles: &[[VertId; 3]]) -> Result<Vec<[Option<TriId>; 3]>, MeshError> {
    let mut by_edge: HashMap<(u32, u32), u32> = HashMap::with_capacity(triangles.len() * 3);
    for (t, tri) in triangles.iter().enumerate() {
        for e in 0..3 {
            let (a, b) = edge_corners(e);
            let key = (tri[a].0, tri[b].0);
            if let Some(first) = by_edge.insert(key, t as u32) {
                return Err(MeshError::DuplicateEdge {
                    from: key.0,
                    to: key.1,
                    first,
                    second: t as u32,
                });
            }
        }
    }
    let neighbours = triangles
        .iter()
        .map(|tri| {
            std::array::from_fn(|e| {
                let (a, b) = edge_corners(e);
                by_edge.get(&(tri[b].0, tri[a].0)).map(|&n| TriId(n))
            })
        })
        .collect();
    Ok(neighbours)
}

/// Connected components through shared edges, numbered in order of their lowest triangle.
fn label_islands(neighbours: &[[Option<TriId>; 3]]) -> (Vec<IslandId>, u32) {
    const UNSET: u32 = u32::MAX;
    let mut islands = vec![IslandId(UNSET); neighbours.len()];
    let mut stack = Vec::new();
    let mut next = 0u32;
    for seed in 0..neighbours.len() {
        if islands[seed].0 != UNSET {
            continue;
        }
        islands[seed] = IslandId(next);
        stack.push(seed);
        while let Some(t) = stack.pop() {
            for n in neighbours[t].iter().flatten() {
                if islands[n.index()].0 == UNSET {
                    islands[n.index()] = IslandId(next);
                    stack.push(n.index());
                }
            }
        }
        next += 1;
    }
    (islands, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> (Vec<Point>, Vec<[VertId; 3]>) {
        let v = vec![
            Point::new(0.0, 0.0),
            Point::new(1.0, 0.0),
            Point::new(1.0, 1.0),
            Point::new(0.0, 1.0),
        ];
        let t = vec![
            [VertId(0), VertId(1), VertId(2)],
            [VertId(0), VertId(2), VertId(3)],
        ];
        (v, t)
    }

    #[test]
    fn square_has_symmetric_neighbours_and_four_walls() {
        let (v, t) = square();
        let mesh = NavMesh::new(BuildInfo::default(), v, t).unwrap();
        assert_eq!(mesh.neighbours()[0][2], Some(TriId(1)));
        assert_eq!(mesh.neighbours()[1][0], Some(TriId(0)));
        assert_eq!(mesh.walls().len(), 4);
        assert_eq!(mesh.island_count(), 1);
        assert_eq!(mesh.walkable_area(), 1.0);
    }

    #[test]
    fn rejects_clockwise_degenerate_and_out_of_range() {
        let (v, mut t) = square();
        t[1] = [VertId(0), VertId(3), VertId(2)];
        assert_eq!(
            NavMesh::new(BuildInfo::default(), v.clone(), t),
            Err(MeshError::Clockwise { tri: 1 })
        );
        let t = vec![[VertId(0), VertId(1), VertId(1)]];
        assert_eq!(
            NavMesh::new(BuildInfo::default(), v.clone(), t),
            Err(MeshError::Degenerate { tri: 0 })
        );
        let t = vec![[VertId(0), VertId(1), VertId(9)]];
        assert!(matches!(
            NavMesh::new(BuildInfo::default(), v, t),
            Err(MeshError::VertexOutOfRange {
                tri: 0,
                corner: 2,
                vertex: 9,
                ..
            })
        ));
    }

    #[test]
    fn overlapping_triangles_are_a_duplicate_edge() {
        let (v, mut t) = square();
        t.push(t[0]);
        assert!(matches!(
            NavMesh::new(BuildInfo::default(), v, t),
            Err(MeshError::DuplicateEdge {
                first: 0,
                second: 2,
                ..
            })
        ));
    }

    #[test]
    fn separate_triangles_are_separate_islands() {
        let mut v = square().0;
        v.extend([
            Point::new(5.0, 0.0),
            Point::new(6.0, 0.0),
            Point::new(5.0, 1.0),
        ]);
        let t = vec![
            [VertId(0), VertId(1), VertId(2)],
            [VertId(4), VertId(5), VertId(6)],
        ];
        let mesh = NavMesh::new(BuildInfo::default(), v, t).unwrap();
        assert_eq!(mesh.island_count(), 2);
        assert_eq!(mesh.island(TriId(1)), IslandId(1));
    }

    #[test]
    fn from_parts_rejects_asymmetric_neighbours_and_wrong_islands() {
        let (v, t) = square();
        let good = NavMesh::new(BuildInfo::default(), v.clone(), t.clone()).unwrap();
        let mut n = good.neighbours().to_vec();
        n[0][2] = None;
        let err = NavMesh::from_parts(
            BuildInfo::default(),
            v.clone(),
            t.clone(),
            n,
            good.islands().to_vec(),
            1,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                MeshError::NeighbourMismatch {
                    tri: 0,
                    edge: 2,
                    ..
                }
            ),
            "{err}"
        );
        let err = NavMesh::from_parts(
            BuildInfo::default(),
            v,
            t,
            good.neighbours().to_vec(),
            vec![IslandId(0), IslandId(1)],
            2,
        )
        .unwrap_err();
        assert!(
            matches!(err, MeshError::IslandMismatch { tri: 1, .. }),
            "{err}"
        );
    }
}
