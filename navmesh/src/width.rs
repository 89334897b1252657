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
///
/// Every corner of a fan around one vertex, rotating the same way, meets the same wall, so
/// each corner is walked once: a walk stops at a corner already answered and gives its
/// answer to every corner it passed. Linear in the triangles, however many share a vertex
/// (a polygon fanned from one corner would be quadratic walked corner by corner).
pub(crate) fn fan_walls(mesh: &NavMesh) -> Vec<[[VertId; 2]; 3]> {
    const UNKNOWN: VertId = VertId(u32::MAX - 1);
    let n = mesh.triangle_count();
    let mut walls = vec![[[UNKNOWN; 2]; 3]; n];
    let mut passed: Vec<(usize, usize)> = Vec::new();
    for (side, ccw) in [(0, true), (1, false)] {
        for start in 0..n {
            for corner in 0..3 {
                if walls[start][corner][side] != UNKNOWN {
                    continue;
                }
                let pivot = mesh.triangles()[start][corner];
                passed.clear();
                let (mut t, mut c) = (start, corner);
                let wall = loop {
                    passed.push((t, c));
                    let tri = mesh.triangles()[t];
                    // Counter-clockwise around corner c leaves through edge c + 2 (from
                    // corner c + 2 to c); clockwise through edge c (from c to c + 1).
                    let (edge, far) = if ccw {
                        ((c + 2) % 3, (c + 2) % 3)
                    } else {
                        (c, (c + 1) % 3)
                    };
                    let Some(next) = mesh.neighbours()[t][edge] else {
                        break tri[far];
                    };
                    let next = next.index();
                    let Some(k) = mesh.triangles()[next].iter().position(|&v| v == pivot) else {
                        break VertId(u32::MAX);
                    };
                    // Around and back without a wall (an inner vertex), or longer than a
                    // fan can be.
                    if next == start || passed.len() >= n {
                        break VertId(u32::MAX);
                    }
                    let known = walls[next][k][side];
                    if known != UNKNOWN {
                        break known;
                    }
                    (t, c) = (next, k);
                };
                for &(t, c) in &passed {
                    walls[t][c][side] = wall;
                }
            }
        }
    }
    walls
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walls::fixtures::{fan, grid, holed, jittered, l_shape, pinch};

    /// The first wall met rotating from one corner, walked corner by corner: the
    /// definition [`fan_walls`] answers for every corner at once.
    fn rotate_to_wall(mesh: &NavMesh, start: TriId, corner: usize, ccw: bool) -> VertId {
        let pivot = mesh.triangles()[start.index()][corner];
        let (mut t, mut c) = (start, corner);
        for _ in 0..mesh.triangle_count() {
            let tri = mesh.triangles()[t.index()];
            let (edge, far) = if ccw {
                ((c + 2) % 3, (c + 2) % 3)
            } else {
                (c, (c + 1) % 3)
            };
            match mesh.neighbours()[t.index()][edge] {
                None => return tri[far],
                Some(next) => {
                    t = next;
                    let Some(k) = mesh.triangles()[t.index()].iter().position(|&v| v == pivot)
                    else {
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

    #[test]
    fn every_corner_meets_the_wall_its_own_walk_meets() {
        let meshes = [
            holed(),
            l_shape(),
            pinch(),
            jittered(),
            fan(7),
            grid(5, 4, &[], 0.1),
            grid(6, 6, &[(0, 0), (2, 3), (3, 2), (5, 5)], 0.3),
        ];
        for (m, mesh) in meshes.iter().enumerate() {
            let walls = fan_walls(mesh);
            for (t, corners) in walls.iter().enumerate() {
                for (c, sides) in corners.iter().enumerate() {
                    for (side, ccw) in [(0, true), (1, false)] {
                        let walked = rotate_to_wall(mesh, TriId(t as u32), c, ccw);
                        assert_eq!(sides[side], walked, "mesh {m}, triangle {t}, corner {c}");
                    }
                }
            }
        }
    }

    /// A polygon fanned from one of its corners: every triangle shares that corner, and
    /// the two walls either side of it are met from each, in one walk per side.
    #[test]
    fn a_fan_from_a_corner_meets_its_two_walls() {
        let n = 3_000;
        let mut vertices = vec![crate::geom::Point::new(0.0, 0.0)];
        for i in 0..=n {
            let a = std::f64::consts::FRAC_PI_2 * i as f64 / n as f64;
            vertices.push(crate::geom::Point::new(10.0 + a.cos(), 10.0 + a.sin()));
        }
        let triangles: Vec<_> = (0..n)
            .map(|i| [VertId(0), VertId(1 + i as u32), VertId(2 + i as u32)])
            .collect();
        let mesh = NavMesh::new(crate::mesh::BuildInfo::default(), vertices, triangles).unwrap();
        let walls = fan_walls(&mesh);
        for (t, corners) in walls.iter().enumerate() {
            // Corner 0 is the shared one: counter-clockwise the last triangle's wall (to
            // the fan's last vertex), clockwise the first's (to its first).
            assert_eq!(
                corners[0],
                [VertId(n as u32 + 1), VertId(1)],
                "triangle {t}"
            );
        }
    }
}
