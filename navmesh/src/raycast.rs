//! Raycasts: does the straight segment `from -> to` stay on the walkable area, and if not,
//! where does it first leave it?
//!
//! # Semantics
//!
//! The walkable area is the union of the closed triangles. A segment that stays in it is
//! [`Raycast::Clear`], even when it touches a wall, runs exactly along one, or passes through
//! a wall vertex (including a "pinch" vertex where two parts of the mesh meet at a single
//! point). Otherwise the result is [`Raycast::Hit`] at the first point where the segment
//! leaves the area: on a wall's interior, or at a wall vertex when the segment slips out
//! between two walls meeting there.
//!
//! # Algorithm
//!
//! A straight walk through the triangles (Devillers, Pion & Teillaud, "Walking in a
//! triangulation", 2002). The start triangle is [`NavMesh::locate`]`(from)`; in each
//! triangle, if `to` lies in the closed triangle the ray is clear; otherwise the walk leaves
//! through the edge or vertex where the line `from -> to` exits the triangle, forward. An
//! exit edge that is a wall is a hit; any other edge leads to the neighbour across it. At a
//! vertex, the walk turns around the vertex's fan of triangles (through the neighbours, and
//! through the walls at the vertex to reach the other fans of a pinch vertex) and continues in
//! the triangle whose corner contains the segment's direction; if none does, the segment
//! leaves the area there.
//!
//! # Robustness
//!
//! Every decision of the walk (which vertices lie left of, right of or exactly on the line
//! `from -> to`, and whether `to` lies in a triangle) is taken with an *exact* orientation
//! predicate (`orient_sign` in [`crate::geom`]): a floating-point filter, then, for the
//! rare near-degenerate case, an exact sum of the six products (Shewchuk's error-free
//! transformations). Each vertex is therefore
//! classified once and consistently by every triangle that shares it, so a segment through a
//! vertex, along an interior edge or along a wall, or starting on an edge or a vertex, is
//! walked exactly as the real geometry says: no loop, no false hit, no missed wall. Points of
//! the line are ordered along its dominant axis, which is exact for points exactly on it.
//! "Exactly" means for the binary coordinates as stored: a straight wall split at a vertex
//! that rounding moved a hair off the line is not straight, and a segment along it leaves the
//! area by that hair if the vertex moved inward (a hit at the vertex).
//! Floating point only enters the *reported* hit: the crossing of the segment `from + t·(to −
//! from)` with the wall `p + s·(q − p)` is solved by Cramer's rule,
//! `t = ((p − from) × (q − p)) / (d × (q − p))` and `s = ((p − from) × d) / (d × (q − p))`
//! with `d = to − from`, and both parameters are clamped to `[0, 1]`; the reported point is
//! `p + s·(q − p)`, on the wall. A hit at a vertex reports the vertex itself.
//!
//! The start triangle comes from [`NavMesh::locate`]'s floating-point test; if the exact
//! test disagrees (the start lies within rounding of the triangle's boundary), the
//! triangles around the start triangle's corners are searched for one that contains it
//! exactly, and the start counts as off the mesh if there is none.
//!
//! A far end more than the mesh's own size beyond its bounds is first pulled in along the
//! segment to that distance (the segment must cross a wall before it anyway), which keeps
//! the arithmetic far from overflow; the reported `t` is still a fraction of `from -> to`.
//!
//! The walk is bounded: a valid planar mesh needs at most one step per triangle and per
//! vertex on the line, so after `4 × triangle_count + 8` steps it stops with
//! [`RaycastError::WalkFailed`]. That can only happen on a mesh whose triangles overlap
//! geometrically (which [`NavMesh::new`] does not check); the error is never returned for a
//! planar mesh. Raycasts never panic and never loop.

use crate::geom::{Point, orient_sign};
use crate::mesh::{NavMesh, TriId, VertId};

/// The outcome of a raycast, see the module docs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Raycast {
    /// The whole segment lies on the walkable area.
    Clear,
    /// The segment leaves the walkable area.
    Hit {
        /// Where it first leaves: on the wall, up to rounding (exactly the vertex when it
        /// leaves at one).
        point: Point,
        /// `point`'s position along the segment, as a fraction of `from -> to` in `[0, 1]`.
        t: f64,
        /// The wall it leaves through, an index into [`NavMesh::walls`]. When it leaves at a
        /// vertex between two walls, the lower index of the two.
        wall: usize,
    },
}

/// Why a raycast has no answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RaycastError {
    /// An endpoint has a NaN or infinite coordinate.
    #[error("ray endpoint ({x}, {y}) is not finite")]
    NonFinite {
        /// The endpoint's x.
        x: f64,
        /// The endpoint's y.
        y: f64,
    },
    /// The start is not on the mesh.
    #[error("ray start ({x}, {y}) is off the mesh")]
    StartOffMesh {
        /// Start x.
        x: f64,
        /// Start y.
        y: f64,
    },
    /// The walk did not finish: the mesh's triangles overlap near the segment. Never
    /// returned for a planar mesh (see the module docs).
    #[error("triangle walk gave up after {steps} steps: the mesh overlaps itself")]
    WalkFailed {
        /// Steps taken.
        steps: usize,
    },
}

impl NavMesh {
    /// Casts the segment `from -> to` against the walls; see [`raycast`].
    pub fn raycast(&self, from: Point, to: Point) -> Result<Raycast, RaycastError> {
        raycast(self, from, to)
    }

    /// [`NavMesh::raycast`] for the rays of a polyline, one after the other: `from_tri`, a
    /// triangle that holds `from` (the [`RayEnd::tri`] of the ray that ended there), saves
    /// locating it, and the answer says which triangle holds `to` when the ray is clear.
    /// Whether a ray is clear, and where it leaves the area, do not depend on the triangle
    /// it starts from; only a ray that leaves at its own start, a pinch vertex, may name
    /// another of the walls that meet there. A `from_tri` that does not hold `from` is
    /// ignored (the start is located as by `raycast`).
    pub fn raycast_from(
        &self,
        from_tri: Option<TriId>,
        from: Point,
        to: Point,
    ) -> Result<RayEnd, RaycastError> {
        cast(self, from_tri, from, to)
    }
}

/// A ray's outcome with, when it is clear, the triangle that holds its end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayEnd {
    /// The outcome, as [`NavMesh::raycast`] gives it.
    pub ray: Raycast,
    /// A triangle that holds the ray's end (in its closed interior, exactly) when the ray
    /// is clear; `None` otherwise.
    pub tri: Option<TriId>,
}

/// Whether the segment `from -> to` stays on the walkable area of `mesh`, and if not, where
/// it first leaves it. See the module docs for the exact semantics and the algorithm.
pub fn raycast(mesh: &NavMesh, from: Point, to: Point) -> Result<Raycast, RaycastError> {
    cast(mesh, None, from, to).map(|end| end.ray)
}

/// [`raycast`], starting from `hint` when it holds `from` exactly.
fn cast(
    mesh: &NavMesh,
    hint: Option<TriId>,
    from: Point,
    to: Point,
) -> Result<RayEnd, RaycastError> {
    for p in [from, to] {
        if !p.is_finite() {
            return Err(RaycastError::NonFinite { x: p.x, y: p.y });
        }
    }
    let off_mesh = || RaycastError::StartOffMesh {
        x: from.x,
        y: from.y,
    };
    let (end, scale) = pull_in(mesh, from, to);
    let walk = Walk {
        mesh,
        a: from,
        b: end,
        d: end - from,
    };
    let hinted = hint
        .filter(|t| t.index() < mesh.triangle_count())
        .filter(|&t| walk.contains(t, from));
    let start = match hinted {
        Some(t) => t,
        None => {
            let located = mesh.locate(from).ok_or_else(off_mesh)?;
            walk.start_triangle(located).ok_or_else(off_mesh)?
        }
    };
    Ok(match walk.run(start)? {
        (Raycast::Hit { point, t, wall }, _) => RayEnd {
            ray: Raycast::Hit {
                point,
                t: (t * scale).clamp(0.0, 1.0),
                wall,
            },
            tri: None,
        },
        // A clear ray was not pulled in: its end is `to`.
        (Raycast::Clear, tri) => RayEnd {
            ray: Raycast::Clear,
            tri: Some(tri),
        },
    })
}

/// Moves `to` toward `from` so that it lies at most the mesh's size beyond its bounds.
/// Returns the new end and its fraction of `from -> to` (1 when unchanged). `from` is on the
/// mesh. Works on half vectors so that no difference overflows.
fn pull_in(mesh: &NavMesh, from: Point, to: Point) -> (Point, f64) {
    let b = mesh.bounds();
    let size = b.size();
    let margin = size.x.max(size.y) + 1.0;
    let lo = Point::new(b.min.x - margin, b.min.y - margin);
    let hi = Point::new(b.max.x + margin, b.max.y + margin);
    if to.x >= lo.x && to.x <= hi.x && to.y >= lo.y && to.y <= hi.y {
        return (to, 1.0);
    }
    let half = to * 0.5 - from * 0.5;
    let mut t = 1.0f64;
    for (p, q, end, lo, hi) in [
        (from.x, half.x, to.x, lo.x, hi.x),
        (from.y, half.y, to.y, lo.y, hi.y),
    ] {
        // `from` is inside the box, so `q` is nonzero whenever `end` is outside it.
        if end > hi {
            t = t.min((hi - p) * 0.5 / q);
        } else if end < lo {
            t = t.min((lo - p) * 0.5 / q);
        }
    }
    let t = t.clamp(0.0, 1.0);
    (from + half * (2.0 * t), t)
}

/// Where the walk stands: in a triangle, or at a vertex reached from a triangle around it.
#[derive(Clone, Copy, Debug)]
enum At {
    Tri(TriId),
    Vertex(VertId, TriId),
}

/// Where the line leaves a triangle, forward.
#[derive(Clone, Copy, Debug)]
enum Exit {
    /// Through the interior of this edge.
    Edge(usize),
    /// Through this corner.
    Corner(usize),
    /// The line misses the triangle (only on an overlapping mesh).
    Missed,
}

/// What turning around a vertex's fan found.
struct Fan {
    /// A triangle whose corner at the vertex contains the ray's direction.
    found: Option<TriId>,
    /// The walls that end the fan on either side (none for a closed fan).
    ends: [Option<usize>; 2],
}

struct Walk<'m> {
    mesh: &'m NavMesh,
    a: Point,
    b: Point,
    d: Point,
}

impl Walk<'_> {
    fn point(&self, v: VertId) -> Point {
        self.mesh.vertices()[v.index()]
    }

    /// Which side of the line `a -> b` the vertex is on: 1 left, -1 right, 0 on it (exact).
    fn side(&self, v: VertId) -> i8 {
        orient_sign(self.a, self.b, self.point(v))
    }

    /// Whether `p` lies in the closed triangle (exact).
    fn contains(&self, tri: TriId, p: Point) -> bool {
        let [a, b, c] = self.mesh.triangle_points(tri);
        orient_sign(a, b, p) >= 0 && orient_sign(b, c, p) >= 0 && orient_sign(c, a, p) >= 0
    }

    /// For two points exactly on the line: is `p` strictly ahead of `q`? Exact, as it
    /// compares coordinates along the line's dominant axis.
    fn ahead(&self, p: Point, q: Point) -> bool {
        if self.d.x.abs() >= self.d.y.abs() {
            if self.d.x > 0.0 { p.x > q.x } else { p.x < q.x }
        } else if self.d.y > 0.0 {
            p.y > q.y
        } else {
            p.y < q.y
        }
    }

    /// The triangle to start in: `located` if it contains `a` exactly, else a triangle
    /// around its corners that does.
    fn start_triangle(&self, located: TriId) -> Option<TriId> {
        if self.contains(located, self.a) {
            return Some(located);
        }
        self.mesh.triangles()[located.index()]
            .iter()
            .find_map(|&v| {
                self.turn_around(v, located, |t, _| self.contains(t, self.a))
                    .found
            })
    }

    /// The outcome, and the triangle the walk ended in (it holds `b` when clear).
    fn run(&self, start: TriId) -> Result<(Raycast, TriId), RaycastError> {
        let limit = 4 * self.mesh.triangle_count() + 8;
        let mut at = At::Tri(start);
        // The sides of the last triangle's corners: the next triangle shares two of them.
        let mut known = [(None, 0i8); 3];
        for step in 0..limit {
            at = match at {
                At::Tri(tri) => {
                    let corners = self.mesh.triangles()[tri.index()];
                    let s = corners.map(|v| {
                        known
                            .iter()
                            .find(|(k, _)| *k == Some(v))
                            .map_or_else(|| self.side(v), |&(_, side)| side)
                    });
                    known = [0, 1, 2].map(|i| (Some(corners[i]), s[i]));
                    let exit = self.exit(corners, s);
                    if self.holds_end(tri, corners, exit) {
                        return Ok((Raycast::Clear, tri));
                    }
                    match exit {
                        Exit::Edge(e) => match self.mesh.neighbours()[tri.index()][e] {
                            Some(next) => At::Tri(next),
                            None => return self.edge_hit(tri, e, step).map(|hit| (hit, tri)),
                        },
                        Exit::Corner(k) => At::Vertex(corners[k], tri),
                        Exit::Missed => return Err(RaycastError::WalkFailed { steps: step }),
                    }
                }
                At::Vertex(v, from) => match self.through_vertex(v, from) {
                    Ok(next) => At::Tri(next),
                    Err(hit) => {
                        return hit
                            .map(|hit| (hit, from))
                            .ok_or(RaycastError::WalkFailed { steps: step });
                    }
                },
            };
        }
        Err(RaycastError::WalkFailed { steps: limit })
    }

    /// Whether the end `b` lies in the closed triangle `tri`, the line leaving it at
    /// `exit`. The walk only enters a triangle with `b` ahead of where the line enters it
    /// (or starts in it, `b` ahead of `a`), so `b` is in it exactly when it is not past
    /// the exit: one exact test instead of three.
    fn holds_end(&self, tri: TriId, corners: [VertId; 3], exit: Exit) -> bool {
        match exit {
            Exit::Edge(e) => {
                let (p, q) = (self.point(corners[e]), self.point(corners[(e + 1) % 3]));
                orient_sign(p, q, self.b) >= 0
            }
            Exit::Corner(k) => !self.ahead(self.b, self.point(corners[k])),
            Exit::Missed => self.contains(tri, self.b),
        }
    }

    /// Where the line leaves the triangle with these corners going forward, from their
    /// sides of the line. Edge `i` runs from corner `i` to corner `i + 1`
    /// counter-clockwise, so the line leaves through it when corner `i` is right of the
    /// line and corner `i + 1` left of it.
    fn exit(&self, corners: [VertId; 3], s: [i8; 3]) -> Exit {
        if let Some(e) = (0..3).find(|&i| s[i] < 0 && s[(i + 1) % 3] > 0) {
            return Exit::Edge(e);
        }
        // The corners exactly on the line, in order.
        let mut on = [0usize; 3];
        let mut count = 0;
        for i in (0..3).filter(|&i| s[i] == 0) {
            on[count] = i;
            count += 1;
        }
        match on[..count] {
            // Through one corner: either the line enters through the opposite edge and leaves
            // at the corner, or it only touches the triangle there (the walk starts at it).
            [k] => Exit::Corner(k),
            // Along an edge: leave at its forward end.
            [j, k] => {
                let (pj, pk) = (self.point(corners[j]), self.point(corners[k]));
                Exit::Corner(if self.ahead(pk, pj) { k } else { j })
            }
            _ => Exit::Missed,
        }
    }

    /// Does the corner of `tri` at `k` (a vertex exactly on the line) contain the ray's
    /// forward direction, inside or along one of its two edges?
    fn corner_has_ray(&self, tri: TriId, k: usize) -> bool {
        let corners = self.mesh.triangles()[tri.index()];
        let v = self.point(corners[k]);
        let (p, q) = (corners[(k + 1) % 3], corners[(k + 2) % 3]);
        let (sp, sq) = (self.side(p), self.side(q));
        (sp < 0 && sq > 0)
            || (sp == 0 && self.ahead(self.point(p), v))
            || (sq == 0 && self.ahead(self.point(q), v))
    }

    /// Turns around vertex `v` through the neighbours, counter-clockwise from `start` and
    /// then clockwise, until `pred(tri, corner of v)` holds or the fan closes or ends at walls
    /// on both sides.
    fn turn_around(
        &self,
        v: VertId,
        start: TriId,
        mut pred: impl FnMut(TriId, usize) -> bool,
    ) -> Fan {
        let mesh = self.mesh;
        let corner = |t: TriId| mesh.triangles()[t.index()].iter().position(|&c| c == v);
        let mut fan = Fan {
            found: None,
            ends: [None, None],
        };
        let Some(k0) = corner(start) else {
            return fan;
        };
        if pred(start, k0) {
            fan.found = Some(start);
            return fan;
        }
        // Counter-clockwise: across the edge arriving at `v` (edge k + 2); clockwise: across
        // the edge leaving it (edge k). The count bounds a walk on an inconsistent mesh.
        for (side, edge_of) in [(0, 2usize), (1, 0usize)] {
            let (mut t, mut k) = (start, k0);
            for _ in 0..mesh.triangle_count() {
                let e = (k + edge_of) % 3;
                match mesh.neighbours()[t.index()][e] {
                    None => {
                        fan.ends[side] = wall_index(mesh, t, e);
                        break;
                    }
                    Some(next) if next == start => return fan,
                    Some(next) => {
                        let Some(kn) = corner(next) else {
                            return fan;
                        };
                        (t, k) = (next, kn);
                        if pred(t, k) {
                            fan.found = Some(t);
                            return fan;
                        }
                    }
                }
            }
        }
        fan
    }

    /// Continues the walk at vertex `v` (exactly on the line), reached from `from`: the
    /// triangle the ray enters next, or the hit where it leaves the area at `v` (`None`
    /// inside only on an inconsistent mesh).
    fn through_vertex(&self, v: VertId, from: TriId) -> Result<TriId, Option<Raycast>> {
        let fan = self.turn_around(v, from, |t, k| self.corner_has_ray(t, k));
        if let Some(next) = fan.found {
            return Ok(next);
        }
        let Some(wall) = fan.ends.iter().flatten().copied().min() else {
            // A closed fan covers every direction: only an inconsistent mesh gets here.
            return Err(None);
        };
        // A pinch vertex: other fans meet here, each ended by walls at `v`, and every wall
        // at `v` is listed in the wall grid's cell of `v`. (Another fan is turned around
        // twice, once from each of its end walls: rare and harmless.)
        let p = self.point(v);
        for &w in self.mesh.wall_grid().walls_at(p) {
            let other = self.mesh.walls()[w];
            if (other.from != v && other.to != v) || fan.ends.contains(&Some(w)) {
                continue;
            }
            let turned = self.turn_around(v, other.tri, |t, k| self.corner_has_ray(t, k));
            if let Some(next) = turned.found {
                return Ok(next);
            }
        }
        let t = ((p - self.a).dot(self.d) / self.d.dot(self.d)).clamp(0.0, 1.0);
        Err(Some(Raycast::Hit { point: p, t, wall }))
    }

    /// The hit where the segment crosses wall edge `e` of `tri`, by Cramer's rule (module
    /// docs).
    fn edge_hit(&self, tri: TriId, e: usize, step: usize) -> Result<Raycast, RaycastError> {
        let wall = wall_index(self.mesh, tri, e).ok_or(RaycastError::WalkFailed { steps: step })?;
        let corners = self.mesh.triangles()[tri.index()];
        let p = self.point(corners[e]);
        let q = self.point(corners[(e + 1) % 3]);
        let along = q - p;
        let denom = self.d.cross(along);
        let (s, t) = if denom != 0.0 && denom.is_finite() {
            let ap = p - self.a;
            (ap.cross(self.d) / denom, ap.cross(along) / denom)
        } else {
            (0.5, 0.5)
        };
        let s = if s.is_nan() { 0.5 } else { s.clamp(0.0, 1.0) };
        let t = if t.is_nan() { 0.5 } else { t.clamp(0.0, 1.0) };
        Ok(Raycast::Hit {
            point: p + along * s,
            t,
            wall,
        })
    }
}

/// The index in [`NavMesh::walls`] of wall edge `e` of `tri`. Walls are listed by triangle,
/// then edge, so a binary search finds it.
fn wall_index(mesh: &NavMesh, tri: TriId, e: usize) -> Option<usize> {
    let key = (tri, e as u8);
    mesh.walls()
        .binary_search_by_key(&key, |w| (w.tri, w.edge))
        .ok()
        .or_else(|| mesh.walls().iter().position(|w| (w.tri, w.edge) == key))
}

#[cfg(test)]
mod tests;
