//! The corner graph: exact shortest distances between the convex wall corners of an island,
//! so that a point-agent path query needs two visibility sweeps and a table lookup instead
//! of a search.
//!
//! A shortest path among polygonal walls is a polyline that only bends at *corners*: wall
//! vertices where the walkable area spans more than a half turn (the walkable side is
//! reflex, the obstacle convex), and each of its segments touches the obstacle at both of
//! its bends from one side only (it is *taut*: both walls at the corner lie on the same
//! side of the segment's line). So the shortest distance between two points without a
//! direct line of sight is the smallest `|s a| + D(a, b) + |b g|` over corners `a` seen
//! from `s` and `b` seen from `g`, where `D` is the shortest distance between corners over
//! the graph of taut segments between corners that see each other. This is the classical
//! visibility-graph argument (Lozano-Pérez & Wesley 1979; the tangent, or "reduced",
//! visibility graph), and the query scheme is the one of Shen, Harabor, Stuckey et al.'s
//! End Point Search: precomputed corner-to-corner distances, then only the two ends are
//! searched.
//!
//! # What is derived per mesh
//! - The corners, and for every triangle corner the corner id when that vertex is a corner
//!   *and* the triangle lies in its reflex fan (a pinch vertex joins two fans that a path
//!   cannot cross between; only the reflex one bends paths).
//! - For each island with at most [`MAX_TABLE_CORNERS`] corners (while all tables together
//!   stay within [`MAX_TABLE_ENTRIES`] entries): its taut visibility edges
//!   (by a visibility sweep from every corner) and the full table of shortest distances
//!   between its corners (Dijkstra from every corner). Larger islands get no table; queries
//!   there use the search in [`crate::path`].
//!
//! # Visibility sweeps
//! What a point `r` sees is found by expanding *cones* through the triangle graph: a cone is
//! a triangle entered through one of its edges and the two rays from `r`, through mesh
//! vertices, that bound the part of that edge in view. Crossing the triangle, the cone is
//! intersected with the angular span of each far edge; a non-wall edge with a part of
//! positive angle in view gives a cone in the next triangle. Each far vertex inside the
//! closed cone is seen. Every decision is an exact orientation test
//! (`orient_sign` in [`crate::geom`]) on `r` and mesh vertices, so a corner exactly on a
//! bounding ray (grid maps are full of collinear corners) is seen, consistently. Cones of
//! zero angle (a ray grazing a vertex) are not followed: what only they would reach is
//! reached by bending at that vertex, a corner on the same line, at the same length.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::geom::{Point, orient_sign};
use crate::mesh::{NavMesh, TriId};

/// Marks "no corner" in per-triangle-corner and per-corner tables.
pub(crate) const NO_CORNER: u32 = u32::MAX;

/// The largest island, in corners, that gets a distance table: the table takes
/// `8 n²` bytes (at most 48 MiB) and `n` Dijkstra runs to fill.
pub(crate) const MAX_TABLE_CORNERS: usize = 2500;

/// The most distance-table entries a mesh gets over all its islands (the same 48 MiB as
/// one largest island): islands are tabled in island order while they fit, so a map of
/// many large islands cannot make the first point query allocate without bound. Islands
/// left out use the search.
pub(crate) const MAX_TABLE_ENTRIES: usize = MAX_TABLE_CORNERS * MAX_TABLE_CORNERS;

/// One island's distance table: rows of `n` distances from `base` in [`Corners::dist`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Table {
    base: usize,
    n: usize,
}

/// The corner graph of a mesh, see the module docs.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Corners {
    /// `at[t][c]`: the corner at corner `c` of triangle `t`, if that vertex is a corner and
    /// `t` is in its reflex fan; `NO_CORNER` otherwise.
    at: Vec<[u32; 3]>,
    /// Per corner: its position.
    point: Vec<Point>,
    /// Per corner: the far ends of the two walls meeting there.
    walls: Vec<[Point; 2]>,
    /// Per corner: its row and column in its island's table (`NO_CORNER`: no table).
    local: Vec<u32>,
    /// Per corner: its island's table, an index into `tables` (`NO_CORNER`: none).
    table: Vec<u32>,
    /// Per island: its table (`NO_CORNER`: none).
    island_table: Vec<u32>,
    tables: Vec<Table>,
    /// Shortest distances between the corners of each tabled island, row-major.
    dist: Vec<f64>,
    /// Taut visibility edges, compressed rows: the neighbours of corner `c` are
    /// `edges[edge_start[c]..edge_start[c + 1]]` (only corners of tabled islands have any).
    edge_start: Vec<u32>,
    edges: Vec<(u32, f64)>,
}

impl Corners {
    /// Finds the corners, and for islands small enough their edges and distance tables.
    pub(crate) fn compute(mesh: &NavMesh) -> Corners {
        let mut corners = Corners {
            at: vec![[NO_CORNER; 3]; mesh.triangle_count()],
            ..Corners::default()
        };
        let mut by_vertex = vec![NO_CORNER; mesh.vertices().len()];
        let mut island_of = Vec::new();
        for t in 0..mesh.triangle_count() {
            let tri = TriId(t as u32);
            for c in 0..3 {
                let (Some(ccw), Some(cw)) =
                    (mesh.fan_wall(tri, c, true), mesh.fan_wall(tri, c, false))
                else {
                    continue;
                };
                let v = mesh.triangles()[t][c];
                let p = mesh.vertices()[v.index()];
                let (q_cw, q_ccw) = (mesh.vertices()[cw.index()], mesh.vertices()[ccw.index()]);
                // The walkable wedge runs counter-clockwise from the clockwise wall to the
                // counter-clockwise one; it is reflex when that turn is clockwise.
                if orient_sign(p, q_cw, q_ccw) >= 0 {
                    continue;
                }
                if by_vertex[v.index()] == NO_CORNER {
                    by_vertex[v.index()] = corners.point.len() as u32;
                    corners.point.push(p);
                    corners.walls.push([q_cw, q_ccw]);
                    island_of.push(mesh.island(tri).0);
                }
                corners.at[t][c] = by_vertex[v.index()];
            }
        }
        let count = corners.point.len();
        // Islands small enough for a table, each corner numbered within its island.
        let mut island_count = vec![0usize; mesh.island_count() as usize];
        for &i in &island_of {
            island_count[i as usize] += 1;
        }
        corners.island_table = vec![NO_CORNER; island_count.len()];
        let mut base = 0;
        for (i, &n) in island_count.iter().enumerate() {
            if n > 0 && n <= MAX_TABLE_CORNERS && base + n * n <= MAX_TABLE_ENTRIES {
                corners.island_table[i] = corners.tables.len() as u32;
                corners.tables.push(Table { base, n });
                base += n * n;
            }
        }
        corners.local = vec![NO_CORNER; count];
        corners.table = vec![NO_CORNER; count];
        let mut next_local = vec![0u32; corners.tables.len()];
        for (c, &i) in island_of.iter().enumerate() {
            let table = corners.island_table[i as usize];
            if table != NO_CORNER {
                corners.table[c] = table;
                corners.local[c] = next_local[table as usize];
                next_local[table as usize] += 1;
            }
        }
        // Edges: a sweep from every tabled corner through its reflex fan.
        let mut fans: Vec<Vec<TriId>> = vec![Vec::new(); count];
        for (t, at) in corners.at.iter().enumerate() {
            for &c in at {
                if c != NO_CORNER {
                    fans[c as usize].push(TriId(t as u32));
                }
            }
        }
        let mut sweep = Sweep::default();
        let mut seen = Vec::new();
        corners.edge_start.push(0);
        for (c, fan) in fans.iter().enumerate() {
            if corners.table[c] != NO_CORNER {
                let p = corners.point[c];
                // The sweep keeps segments taut at the far corner; keep those taut here too.
                sweep.run(mesh, &corners, p, fan, None, &mut seen);
                for &(d, len) in &seen {
                    if d as usize != c && corners.taut(c as u32, corners.point[d as usize]) {
                        corners.edges.push((d, len));
                    }
                }
            }
            corners.edge_start.push(corners.edges.len() as u32);
        }
        // Distances: Dijkstra from every corner of every tabled island.
        corners.dist = vec![f64::INFINITY; base];
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); corners.tables.len()];
        for c in 0..count {
            if corners.table[c] != NO_CORNER {
                members[corners.table[c] as usize].push(c as u32);
            }
        }
        let mut heap = BinaryHeap::new();
        for (table, members) in corners.tables.clone().iter().zip(&members) {
            let mut pred = vec![NO_CORNER; table.n];
            for &source in members {
                let row = table.base + corners.local[source as usize] as usize * table.n;
                corners.dijkstra(source, row, &mut heap, &mut pred);
            }
        }
        corners
    }

    /// Fills the table row at `row` with distances from corner `source`. `pred` is scratch
    /// (one entry per corner of the island): the corner each one was reached from.
    ///
    /// A corner is left only along edges that make a taut turn there (the path wraps the
    /// corner's walls on the inside of the bend). That loses nothing: if a shortest path
    /// to `c` arrives from `p` and `p c d` is not taut, the bend at `c` can be cut, so
    /// `d` is strictly closer than through `c`, whichever shortest path to `c` is taken.
    fn dijkstra(
        &mut self,
        source: u32,
        row: usize,
        heap: &mut BinaryHeap<Entry>,
        pred: &mut [u32],
    ) {
        heap.clear();
        self.dist[row + self.local[source as usize] as usize] = 0.0;
        pred[self.local[source as usize] as usize] = NO_CORNER;
        heap.push(Entry {
            d: 0.0,
            corner: source,
        });
        while let Some(Entry { d, corner }) = heap.pop() {
            let here = self.local[corner as usize] as usize;
            if d > self.dist[row + here] {
                continue;
            }
            let c = corner as usize;
            let (from, to) = (self.edge_start[c] as usize, self.edge_start[c + 1] as usize);
            let at = self.point[c];
            let [wa, wb] = self.walls[c];
            // The side of the incoming segment's line the walls are on (0: no incoming
            // segment yet, every edge is allowed).
            let side = match pred[here] {
                NO_CORNER => 0,
                p => {
                    let p = self.point[p as usize];
                    let s = orient_sign(p, at, wa);
                    if s != 0 { s } else { orient_sign(p, at, wb) }
                }
            };
            for &(next, len) in &self.edges[from..to] {
                let there = self.local[next as usize] as usize;
                let nd = d + len;
                if nd >= self.dist[row + there] {
                    continue;
                }
                if side != 0 {
                    // Taut: the walls stay on the incoming side of the outgoing line too,
                    // and the path turns towards them (or goes straight on).
                    let q = self.point[next as usize];
                    let turn = {
                        let p = self.point[pred[here] as usize];
                        orient_sign(p, at, q)
                    };
                    if turn == -side {
                        continue;
                    }
                }
                self.dist[row + there] = nd;
                pred[there] = corner;
                heap.push(Entry {
                    d: nd,
                    corner: next,
                });
            }
        }
    }

    /// The taut visibility edges of corner `c`: neighbour and length.
    fn neighbours(&self, c: u32) -> &[(u32, f64)] {
        let c = c as usize;
        &self.edges[self.edge_start[c] as usize..self.edge_start[c + 1] as usize]
    }

    /// Number of corners.
    pub(crate) fn count(&self) -> usize {
        self.point.len()
    }

    /// Number of taut visibility edges (each direction counted).
    pub(crate) fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// Bytes held by the distance tables.
    pub(crate) fn table_bytes(&self) -> usize {
        self.dist.len() * std::mem::size_of::<f64>()
    }

    /// True when the island has a distance table (queries there can use the corner graph).
    pub(crate) fn has_table(&self, island: u32) -> bool {
        self.island_table
            .get(island as usize)
            .is_some_and(|&t| t != NO_CORNER)
    }

    /// The corner's position.
    pub(crate) fn point(&self, c: u32) -> Point {
        self.point[c as usize]
    }

    /// A segment from `from` to corner `c` is taut there: both walls at `c` lie on one side
    /// of its line (or on it), so a shortest path may bend at `c` after it.
    pub(crate) fn taut(&self, c: u32, from: Point) -> bool {
        let p = self.point[c as usize];
        let [a, b] = self.walls[c as usize];
        orient_sign(from, p, a) * orient_sign(from, p, b) >= 0
    }

    /// The table distance between two corners of one tabled island.
    #[inline]
    pub(crate) fn distance(&self, a: u32, b: u32) -> f64 {
        let t = self.tables[self.table[a as usize] as usize];
        self.dist[t.base + self.local[a as usize] as usize * t.n + self.local[b as usize] as usize]
    }

    /// The row of distances from corner `a` to every corner of its island, indexed by
    /// [`Corners::local`].
    #[inline]
    pub(crate) fn row(&self, a: u32) -> &[f64] {
        let t = self.tables[self.table[a as usize] as usize];
        let start = t.base + self.local[a as usize] as usize * t.n;
        &self.dist[start..start + t.n]
    }

    /// The corner's column in its island's table.
    #[inline]
    pub(crate) fn local(&self, c: u32) -> usize {
        self.local[c as usize] as usize
    }

    /// The next corner after `a` on a shortest path from `a` to `b` (`a != b`), found as
    /// the neighbour that keeps the table distance; `None` if the table has no path.
    pub(crate) fn next_hop(&self, a: u32, b: u32) -> Option<u32> {
        let row_b = self.row(b);
        let here = self.distance(a, b);
        let mut best: Option<(u32, f64)> = None;
        for &(n, len) in self.neighbours(a) {
            if n == b {
                return Some(b);
            }
            // Distances are symmetric up to rounding: read them from b's row, which stays
            // in cache along the whole path.
            let rest = row_b[self.local(n)];
            if rest < here && best.is_none_or(|(_, d)| len + rest < d) {
                best = Some((n, len + rest));
            }
        }
        best.map(|(n, _)| n)
    }
}

/// A Dijkstra queue entry, smallest distance first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Entry {
    d: f64,
    corner: u32,
}

impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .d
            .total_cmp(&self.d)
            .then(other.corner.cmp(&self.corner))
    }
}

/// A cone of a visibility sweep: triangle `tri` entered through its edge `edge`, the part in
/// view bounded by the rays from the root through `left` and `right` (as seen from it).
#[derive(Clone, Copy, Debug)]
struct Cone {
    tri: TriId,
    edge: u8,
    left: Point,
    right: Point,
}

/// Scratch of a visibility sweep (see the module docs), reusable without allocating.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sweep {
    stack: Vec<Cone>,
    /// Per corner: the stamp of the last sweep that saw it.
    seen: Vec<u32>,
    stamp: u32,
    /// Cones expanded by the last sweep.
    pub(crate) expanded: usize,
}

impl Sweep {
    /// Every corner seen from `r` along a segment taut at the corner, with its distance,
    /// into `out` (cleared first). `seeds` are the triangles containing `r` (for a corner:
    /// its reflex fan). With `target` (a point and the triangles containing it), returns
    /// whether `r` sees it.
    pub(crate) fn run(
        &mut self,
        mesh: &NavMesh,
        corners: &Corners,
        r: Point,
        seeds: &[TriId],
        target: Option<(Point, &[TriId])>,
        out: &mut Vec<(u32, f64)>,
    ) -> bool {
        out.clear();
        self.stack.clear();
        self.expanded = 0;
        if self.seen.len() != corners.count() {
            self.seen = vec![0; corners.count()];
            self.stamp = 0;
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.fill(0);
            self.stamp = 1;
        }
        let mut visible = false;
        for &t in seeds {
            if let Some((_, tris)) = target
                && tris.contains(&t)
            {
                visible = true;
            }
            let pts = mesh.triangle_points(t);
            for (c, &p) in pts.iter().enumerate() {
                self.see(corners, corners.at[t.index()][c], r, p, out);
            }
            for e in 0..3 {
                let (p, q) = (pts[e], pts[(e + 1) % 3]);
                if orient_sign(p, q, r) == 0 {
                    // `r` is on this edge: the triangle across is a seed too.
                    continue;
                }
                if let Some(next) = mesh.neighbours()[t.index()][e] {
                    self.stack.push(Cone {
                        tri: next,
                        edge: edge_towards(mesh, next, t) as u8,
                        left: q,
                        right: p,
                    });
                }
            }
        }
        // A planar mesh is crossed by each ray once per triangle; the bound only guards
        // against a mesh that is not.
        let limit = 8 * mesh.triangle_count() + 64;
        while let Some(cone) = self.stack.pop() {
            self.expanded += 1;
            if self.expanded > limit {
                break;
            }
            let tri = cone.tri;
            let e = usize::from(cone.edge);
            let pts = mesh.triangle_points(tri);
            let w = pts[(e + 2) % 3];
            let (a, b) = (cone.left, cone.right);
            let w_left = orient_sign(r, a, w);
            let w_right = orient_sign(r, b, w);
            if w_left <= 0 && w_right >= 0 {
                self.see(corners, corners.at[tri.index()][(e + 2) % 3], r, w, out);
            }
            if let Some((g, tris)) = target
                && !visible
                && tris.contains(&tri)
                && orient_sign(r, a, g) <= 0
                && orient_sign(r, b, g) >= 0
            {
                visible = true;
            }
            // Far edge L-W (edge e + 2 of the triangle): its span runs from L to W unless W
            // is left of L. Cut the cone to it.
            if w_left < 0 {
                // W is right of the left ray: the edge L-W has a part in view.
                let right = if w_right >= 0 { w } else { b };
                if let Some(next) = mesh.neighbours()[tri.index()][(e + 2) % 3]
                    && orient_sign(r, a, right) < 0
                {
                    self.stack.push(Cone {
                        tri: next,
                        edge: edge_towards(mesh, next, tri) as u8,
                        left: a,
                        right,
                    });
                }
            }
            if w_right > 0 {
                // W is left of the right ray: the edge W-R has a part in view.
                let left = if w_left <= 0 { w } else { a };
                if let Some(next) = mesh.neighbours()[tri.index()][(e + 1) % 3]
                    && orient_sign(r, left, b) < 0
                {
                    self.stack.push(Cone {
                        tri: next,
                        edge: edge_towards(mesh, next, tri) as u8,
                        left,
                        right: b,
                    });
                }
            }
        }
        visible
    }

    /// Records corner `c` (at `p`) as seen from `r`, once, if the segment is taut there.
    #[inline]
    fn see(&mut self, corners: &Corners, c: u32, r: Point, p: Point, out: &mut Vec<(u32, f64)>) {
        if c == NO_CORNER || self.seen[c as usize] == self.stamp {
            return;
        }
        self.seen[c as usize] = self.stamp;
        if p != r && corners.taut(c, r) {
            out.push((c, r.distance(p)));
        }
    }
}

/// The index of the edge of `tri` whose neighbour is `from`.
fn edge_towards(mesh: &NavMesh, tri: TriId, from: TriId) -> usize {
    let n = mesh.neighbours()[tri.index()];
    if n[0] == Some(from) {
        0
    } else if n[1] == Some(from) {
        1
    } else {
        2
    }
}
