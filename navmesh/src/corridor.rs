//! Whether a point path keeps to passages a disc of radius `r` may use, under exactly the
//! rule of the path search ([`crate::path`]): a triangle may be crossed from one of its
//! edges to another only if its traversal width there ([`crate::width`]) is at least `2r`;
//! the triangles the path starts in (entered by no edge) are not checked, nor the one it
//! ends in (left by no edge).
//!
//! When the shortest point path (from the corner graph, [`crate::corners`]) passes this
//! check, it is also the shortest path among the corridors the search admits, so a radius
//! query can use it instead of searching.
//!
//! # Which triangles a path crosses
//! A path bends at wall vertices and may pass exactly through vertices (grid maps are full
//! of collinear corners) or run along triangle edges, so "the triangles it crosses" needs a
//! rule for those contacts. The search's is that of a path pushed an infinitesimal distance
//! off every vertex it touches:
//! - At a bend the search's funnel goes round the vertex on the outside of the turn: the
//!   path crosses every triangle of the vertex's fan between the incoming and the outgoing
//!   direction, counter-clockwise for a left turn and clockwise for a right turn. The first
//!   of them is left, and the last entered, through an edge at the vertex (whose traversal
//!   is checked at that edge's other end); every one between is crossed between its two
//!   edges at the vertex (checked at the vertex).
//! - Through a vertex without bending, the funnel goes round on either side (each a sweep
//!   of a half turn, as for a bend of angle zero); the path is admitted if either side is.
//! - Along an edge, the path lies in the triangle on either side, and crosses the edge
//!   where the side it needs changes.
//!
//! The check follows every such choice at once: it keeps the set of places (triangle and
//! entry edge) the pushed-off path can be in, walking each straight piece with exact
//! orientation tests (`orient_sign` in [`crate::geom`]). The set stays tiny: the two ways
//! round a vertex meet again in the next triangle.
//!
//! Being stricter than the search is safe (the query then runs the search); being looser
//! would not be. Where the search would be looser, the check keeps the stricter answer:
//! it checks a triangle that contains the start when the path enters it through an edge
//! (the search seeds every start triangle without an entry edge), and it does not follow a
//! path through a vertex from one fan of a pinch vertex into the other.

use crate::geom::{Point, orient_sign};
use crate::mesh::{NavMesh, TriId};

/// Marks a place entered by no edge: a start triangle.
const NO_ENTRY: u8 = 3;

/// Where the pushed-off path can be: a triangle, the edge it entered by, and the point the
/// current straight piece starts from (the path's start or end of a previous piece, or a
/// vertex it went round).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Place {
    tri: TriId,
    entry: u8,
    from: Point,
}

/// How a walk along a straight piece ended.
enum Step {
    /// The piece's end is in the place's (closed) triangle.
    End(Place),
    /// The piece meets corner `.1` of the place's triangle before its end.
    Vertex(Place, usize),
    /// A wall, a passage too narrow, or an inconsistency: this place leads nowhere.
    Blocked,
}

/// Scratch of the check, reusable without allocating.
#[derive(Clone, Debug, Default)]
pub(crate) struct Corridor {
    here: Vec<Place>,
    next: Vec<Place>,
    ends: Vec<Place>,
}

impl Corridor {
    /// True when the path `points` (start, bends at wall vertices, goal; at least two
    /// points) is admissible for `radius` under the search's rule (see the module docs).
    /// `start_tris` are the triangles containing the start.
    pub(crate) fn admits(
        &mut self,
        mesh: &NavMesh,
        points: &[Point],
        start_tris: &[TriId],
        radius: f64,
    ) -> bool {
        let need = 2.0 * radius;
        let (Some(&start), Some(&first)) = (points.first(), points.get(1)) else {
            return false;
        };
        self.here.clear();
        for &tri in start_tris {
            if heads_into(mesh, tri, start, first) {
                push_unique(
                    &mut self.here,
                    Place {
                        tri,
                        entry: NO_ENTRY,
                        from: start,
                    },
                );
            }
        }
        for i in 1..points.len() {
            let (u, v) = (points[i - 1], points[i]);
            // Walk every place to the piece's end, going round the vertices met on the way.
            self.ends.clear();
            let mut rounds = 0;
            while !self.here.is_empty() {
                rounds += 1;
                if rounds > mesh.triangle_count() + 2 {
                    return false;
                }
                self.next.clear();
                for k in 0..self.here.len() {
                    match walk(mesh, self.here[k], v, need) {
                        Step::End(place) => push_unique(&mut self.ends, place),
                        Step::Vertex(place, corner) => {
                            for ccw in [true, false] {
                                if let Some(out) =
                                    sweep(mesh, place, corner, place.from, v, ccw, need)
                                {
                                    push_unique(&mut self.next, out);
                                }
                            }
                        }
                        Step::Blocked => {}
                    }
                }
                std::mem::swap(&mut self.here, &mut self.next);
            }
            let Some(&w) = points.get(i + 1) else {
                // `v` is the goal: the triangle holding it is left by no edge.
                return !self.ends.is_empty();
            };
            // A bend at `v`: round it on the outside of the turn.
            let turn = orient_sign(u, v, w);
            let senses: &[bool] = match turn {
                1 => &[true],
                -1 => &[false],
                _ if (v - u).dot(w - v) > 0.0 => &[true, false],
                _ => return false,
            };
            self.here.clear();
            for k in 0..self.ends.len() {
                let place = self.ends[k];
                let Some(corner) = mesh.triangle_points(place.tri).iter().position(|&p| p == v)
                else {
                    continue;
                };
                for &ccw in senses {
                    if let Some(out) = sweep(mesh, place, corner, u, w, ccw, need) {
                        push_unique(&mut self.here, out);
                    }
                }
            }
            if self.here.is_empty() {
                return false;
            }
        }
        false
    }
}

fn push_unique(set: &mut Vec<Place>, place: Place) {
    if !set.contains(&place) {
        set.push(place);
    }
}

/// True when `p` is in the closed triangle `pts` (counter-clockwise).
fn contains(pts: &[Point; 3], p: Point) -> bool {
    (0..3).all(|i| orient_sign(pts[i], pts[(i + 1) % 3], p) >= 0)
}

/// True when the segment from `s` (in the closed triangle `tri`) towards `q` starts inside
/// the closed triangle.
fn heads_into(mesh: &NavMesh, tri: TriId, s: Point, q: Point) -> bool {
    let pts = mesh.triangle_points(tri);
    (0..3).all(|i| {
        let (a, b) = (pts[i], pts[(i + 1) % 3]);
        match orient_sign(a, b, s) {
            0 => orient_sign(a, b, q) >= 0,
            side => side > 0,
        }
    })
}

/// Which corner two edges of a triangle share.
fn shared_corner(a: usize, b: usize) -> usize {
    if b == (a + 1) % 3 { b } else { a }
}

/// The index of the edge of `tri` whose neighbour is `from`.
fn edge_towards(mesh: &NavMesh, tri: TriId, from: TriId) -> u8 {
    let n = mesh.neighbours()[tri.index()];
    if n[0] == Some(from) {
        0
    } else if n[1] == Some(from) {
        1
    } else {
        2
    }
}

/// Leaves the place's triangle through edge `exit`, if the traversal is wide enough (the
/// search's test in `push_successor`) and the edge is not a wall.
fn cross(mesh: &NavMesh, place: Place, exit: usize, need: f64) -> Option<Place> {
    if place.entry != NO_ENTRY
        && mesh.traversal_width(place.tri, shared_corner(usize::from(place.entry), exit)) < need
    {
        return None;
    }
    let next = mesh.neighbours()[place.tri.index()][exit]?;
    Some(Place {
        tri: next,
        entry: edge_towards(mesh, next, place.tri),
        from: place.from,
    })
}

/// Follows the straight piece from `place.from` (in the closed triangle, the piece heading
/// into it) towards `v` until it ends or meets a vertex.
fn walk(mesh: &NavMesh, mut place: Place, v: Point, need: f64) -> Step {
    let from = place.from;
    for _ in 0..mesh.triangle_count() + 1 {
        let pts = mesh.triangle_points(place.tri);
        if contains(&pts, v) {
            return Step::End(place);
        }
        let o = [0, 1, 2].map(|k| orient_sign(from, v, pts[k]));
        let ahead = |k: usize| (pts[k] - from).dot(v - from) > 0.0;
        // The piece leaves through edge i (from corner i to i + 1) when corner i is on its
        // right and corner i + 1 on its left.
        let exit = if let Some(c) = pts.iter().position(|&p| p == from) {
            // From a corner: through the opposite edge, or along one of the corner's edges.
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            if o[a] < 0 && o[b] > 0 {
                a
            } else if o[a] == 0 && ahead(a) {
                return Step::Vertex(place, a);
            } else if o[b] == 0 && ahead(b) {
                return Step::Vertex(place, b);
            } else {
                return Step::Blocked;
            }
        } else if let Some(j) = (0..3).find(|&j| o[j] == 0 && o[(j + 1) % 3] == 0) {
            // Along edge j (the start lies on it): to the end ahead.
            let k = if ahead(j) { j } else { (j + 1) % 3 };
            return if ahead(k) {
                Step::Vertex(place, k)
            } else {
                Step::Blocked
            };
        } else if let Some(k) =
            (0..3).find(|&k| o[k] == 0 && o[(k + 2) % 3] < 0 && o[(k + 1) % 3] > 0)
        {
            return Step::Vertex(place, k);
        } else if let Some(i) = (0..3).find(|&i| o[i] < 0 && o[(i + 1) % 3] > 0) {
            i
        } else {
            return Step::Blocked;
        };
        match cross(mesh, place, exit, need) {
            Some(next) => place = next,
            None => return Step::Blocked,
        }
    }
    Step::Blocked
}

/// Goes round corner `corner` of the place's triangle (a vertex `x` the path arrives at from
/// the direction of `p` and leaves towards `q`), counter-clockwise (`ccw`) or clockwise,
/// crossing every triangle of its fan in between. Returns the place holding the outgoing
/// direction, its piece starting at `x`; `None` if a wall or a narrow traversal is in the
/// way.
fn sweep(
    mesh: &NavMesh,
    mut place: Place,
    corner: usize,
    p: Point,
    q: Point,
    ccw: bool,
    need: f64,
) -> Option<Place> {
    let vertex = mesh.triangles()[place.tri.index()][corner];
    let x = mesh.vertices()[vertex.index()];
    let corner_of = |tri: TriId| {
        mesh.triangles()[tri.index()]
            .iter()
            .position(|&w| w == vertex)
    };
    // The sweep starts in the triangle holding the directions just past the incoming one,
    // in the sweep's sense. Arriving along the edge on the far side of this triangle, that
    // is the triangle across it: the path crosses the edge on its way in.
    let mut c = corner;
    let pts = mesh.triangle_points(place.tri);
    if ccw && orient_sign(x, pts[(c + 2) % 3], p) == 0 {
        place = cross(mesh, place, (c + 2) % 3, need)?;
        c = corner_of(place.tri)?;
    } else if !ccw && orient_sign(x, pts[(c + 1) % 3], p) == 0 {
        place = cross(mesh, place, c, need)?;
        c = corner_of(place.tri)?;
    }
    for _ in 0..mesh.triangle_count() + 1 {
        let pts = mesh.triangle_points(place.tri);
        // The wedge at x runs counter-clockwise from x -> a to x -> b.
        let oa = orient_sign(x, pts[(c + 1) % 3], q);
        let ob = orient_sign(x, pts[(c + 2) % 3], q);
        let reached = if ccw {
            oa > 0 && ob <= 0
        } else {
            oa >= 0 && ob < 0
        };
        if reached {
            place.from = x;
            return Some(place);
        }
        // Counter-clockwise round corner c leaves through edge c + 2, clockwise through c.
        let exit = if ccw { (c + 2) % 3 } else { c };
        place = cross(mesh, place, exit, need)?;
        c = corner_of(place.tri)?;
    }
    None
}
