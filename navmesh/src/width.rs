//! Traversal widths: how wide a disc can pass through a triangle between two of its edges.
//!
//! This is the width of Demyen & Buro's Triangulation A\* ("Efficient Triangulation-Based
//! Pathfinding", AAAI 2006), which makes corridor search aware of agent size. A disc that
//! enters triangle `C A B` through edge `CA` and leaves through edge `CB` must pass corner
//! `C`; the passage there is bounded by `C`'s distance to `A`, to `B`, and to the nearest wall
//! on the far side of `AB`. We compute the last term exactly within the disc of radius
//! `min(|CA|, |CB|)` around `C`, by a flood fill across non-wall edges that stops at edges no
//! closer than the best wall found so far.
//!
//! Corners `A` and `B` count as obstacles even when they are interior vertices (Steiner
//! points from refinement), so on refined meshes widths are conservative: a few passages may
//! be judged narrower than they are, never wider. On unrefined meshes every vertex lies on a
//! wall and the width is exact.

use crate::geom::distance_to_segment;
use crate::mesh::{NavMesh, TriId, VertId};

/// `widths[t][k]` for every triangle and corner, see the module docs.
pub(crate) fn traversal_widths(mesh: &NavMesh) -> Vec<[f64; 3]> {
    let mut search = Search {
        stack: Vec::new(),
        seen: vec![0; mesh.triangle_count()],
        stamp: 0,
    };
    (0..mesh.triangle_count())
        .map(|t| {
            let tri = TriId(t as u32);
            std::array::from_fn(|k| corner_width(mesh, tri, k, &mut search))
        })
        .collect()
}

/// Scratch for the flood fills: a stack and a visit stamp per triangle.
struct Search {
    stack: Vec<(TriId, usize)>,
    seen: Vec<u32>,
    stamp: u32,
}

fn corner_width(mesh: &NavMesh, tri: TriId, k: usize, search: &mut Search) -> f64 {
    let pts = mesh.triangle_points(tri);
    let c = pts[k];
    let a = pts[(k + 1) % 3];
    let b = pts[(k + 2) % 3];
    let mut best = c.distance(a).min(c.distance(b));
    // Edge `AB` is edge `k + 1` of this triangle; the search starts there.
    search.stamp += 1;
    let stamp = search.stamp;
    search.seen[tri.index()] = stamp;
    let stack = &mut search.stack;
    stack.clear();
    stack.push((tri, (k + 1) % 3));
    while let Some((t, e)) = stack.pop() {
        let corners = mesh.triangles()[t.index()];
        let p = mesh.vertices()[corners[e].index()];
        let q = mesh.vertices()[corners[(e + 1) % 3].index()];
        let d = distance_to_segment(c, p, q);
        if d >= best {
            continue;
        }
        match mesh.neighbours()[t.index()][e] {
            None => best = d,
            Some(next) if search.seen[next.index()] != stamp => {
                search.seen[next.index()] = stamp;
                // Continue through the two other edges of the triangle across.
                let back = mesh.neighbours()[next.index()]
                    .iter()
                    .position(|&n| n == Some(t))
                    .unwrap_or(0);
                stack.push((next, (back + 1) % 3));
                stack.push((next, (back + 2) % 3));
            }
            Some(_) => {}
        }
    }
    best
}

/// For every triangle corner, the far vertex of the first wall met rotating around that
/// corner counter-clockwise (`[0]`) and clockwise (`[1]`), starting in the triangle itself.
/// The path search uses it to bend only where the bend is taut: a path turning at a wall
/// vertex must have the obstacle on the inside of the turn. `u32::MAX` marks no wall.
pub(crate) fn fan_walls(mesh: &NavMesh) -> Vec<[[VertId; 2]; 3]> {
    (0..mesh.triangle_count())
        .map(|t| {
            std::array::from_fn(|c| {
                [
                    rotate_to_wall(mesh, TriId(t as u32), c, true),
                    rotate_to_wall(mesh, TriId(t as u32), c, false),
                ]
            })
        })
        .collect()
}

fn rotate_to_wall(mesh: &NavMesh, start: TriId, corner: usize, ccw: bool) -> VertId {
    let pivot = mesh.triangles()[start.index()][corner];
    let (mut t, mut c) = (start, corner);
    // A fan around one vertex cannot hold more triangles than the mesh.
    for _ in 0..mesh.triangle_count() {
        let tri = mesh.triangles()[t.index()];
        // Counter-clockwise around corner c leaves through edge c + 2 (from corner c + 2 to
        // c); clockwise through edge c (from c to c + 1).
        let (edge, far) = if ccw {
            ((c + 2) % 3, (c + 2) % 3)
        } else {
            (c, (c + 1) % 3)
        };
        match mesh.neighbours()[t.index()][edge] {
            None => return tri[far],
            Some(next) => {
                t = next;
                let Some(k) = mesh.triangles()[t.index()].iter().position(|&v| v == pivot) else {
                    break;
                };
                c = k;
            }
        }
        if t == start {
            break;
        }
    }
    VertId(u32::MAX)
}
