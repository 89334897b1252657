//! Clearance for a radius path: straight corners dropped, the rest moved off the wall
//! corners they wrap, segments bent around wall corners they pass too close to, and the
//! exact point path kept when the result would still clip a wall.

use super::NavMeshQuery;
use crate::geom::{Point, clamped_projection, orient, orient_sign};
use crate::mesh::NavMesh;
use crate::raycast::Raycast;

impl NavMeshQuery {
    /// Turns the point path in `out` into the path for a disc of `radius` (see the parent
    /// module's docs, "Agent radius"), keeping the point path in `point_path` for the
    /// fallback.
    pub(super) fn clear_walls(&mut self, mesh: &NavMesh, out: &mut Vec<Point>, radius: f64) {
        drop_straight_corners(out);
        self.point_path.clear();
        self.point_path.extend_from_slice(out);
        offset_corners(mesh, out, radius, &mut self.wall_scratch);
        repair_clearance(mesh, out, radius, &mut self.wall_scratch);
        // Where a passage is about as wide as the agent and staircased (grid
        // maps), the shifted polyline can still clip a wall. Never hand out a
        // path through a wall: fall back to the exact point path, whose corners
        // touch the walls they wrap (the world's collision response keeps the
        // body off them).
        // Segment after segment, each starting in the triangle where the one before ended.
        let mut at = None;
        let clear = out
            .windows(2)
            .all(|w| match mesh.raycast_from(at, w[0], w[1]) {
                Ok(end) if end.ray == Raycast::Clear => {
                    at = end.tri;
                    true
                }
                _ => false,
            });
        if !clear {
            self.stats.radius_fallbacks += 1;
            out.clear();
            out.extend_from_slice(&self.point_path);
        }
    }
}

/// Removes the corners a path goes straight on at (exactly collinear with the corners
/// before and after, the path not turning back). The search bends by a zero angle at wall
/// vertices a segment grazes when it needs them as roots, the corner graph does not: the
/// radius offsetting sees the same polyline either way, and grazed wall corners are handled
/// by [`repair_clearance`].
fn drop_straight_corners(points: &mut Vec<Point>) {
    let mut kept = 1;
    for i in 1..points.len() {
        let (prev, here) = (points[kept - 1], points[i]);
        let straight = points.get(i + 1).is_some_and(|&next| {
            orient_sign(prev, here, next) == 0 && (here - prev).dot(next - here) > 0.0
        });
        if !straight {
            points[kept] = here;
            kept += 1;
        }
    }
    points.truncate(kept.min(points.len()));
}

/// Moves every corner of a path (not its ends) `radius` away from the wall corner it
/// turns around, then out of any other wall still closer than `radius`.
fn offset_corners(mesh: &NavMesh, points: &mut [Point], radius: f64, near: &mut Vec<usize>) {
    let n = points.len();
    for i in 1..n.saturating_sub(1) {
        let v = points[i];
        let bend = unit(unit(v - points[i - 1]) - unit(points[i + 1] - v));
        // Corners are wall vertices. Moving along the bisector of the two walls that meet
        // there (their walkable-side normals) puts the corner exactly `radius` from both;
        // where several walls meet (rings touching at a vertex) the pair facing the bend is
        // the one the path wraps.
        let pad = Point::new(1e-9, 1e-9);
        mesh.walls_near(v - pad, v + pad, near);
        let mut dir = Point::default();
        let mut best = f64::NEG_INFINITY;
        for &wi in near.iter() {
            let w_in = mesh.walls()[wi];
            if mesh.vertices()[w_in.to.index()] != v {
                continue;
            }
            for &wo in near.iter() {
                let w_out = mesh.walls()[wo];
                if mesh.vertices()[w_out.from.index()] != v {
                    continue;
                }
                let u = unit(wall_normal(mesh, wi) + wall_normal(mesh, wo));
                if u.dot(bend) > best {
                    best = u.dot(bend);
                    dir = u;
                }
            }
        }
        if dir == Point::default() {
            dir = bend;
        }
        if dir == Point::default() {
            continue;
        }
        let mut p = v + dir * (radius * (1.0 + 1e-9));
        if mesh.locate(p).is_none() {
            continue;
        }
        // Out of any other wall still closer than the radius. A few steps settle it
        // wherever the passage admits the radius, which the search guaranteed.
        for _ in 0..8 {
            let Some(hit) = mesh.nearest_wall(p, radius) else {
                break;
            };
            if hit.distance >= radius * (1.0 - 1e-9) {
                break;
            }
            let away = if hit.distance > 0.0 {
                unit(p - hit.point)
            } else {
                dir
            };
            let moved = p + away * (radius - hit.distance + radius * 1e-9);
            if mesh.locate(moved).is_none() {
                break;
            }
            p = moved;
        }
        points[i] = p;
    }
}

/// The unit normal of a wall pointing to its walkable side (its left).
fn wall_normal(mesh: &NavMesh, wall: usize) -> Point {
    let w = mesh.walls()[wall];
    let d = mesh.vertices()[w.to.index()] - mesh.vertices()[w.from.index()];
    unit(Point::new(-d.y, d.x))
}

/// Bends a radius path around walls its segments pass closer than `radius`.
///
/// The search keeps the agent out of passages narrower than `2 * radius` and
/// [`offset_corners`] keeps each corner `radius` from the corner it wraps, but a straight
/// segment between two corners may still pass closer than `radius` to a third wall corner
/// that the point path only grazed. Each such segment gets a new corner `radius` away from
/// the nearest offending wall point, pushed out of any other wall, until every segment
/// clears or a bounded number of corners has been added (in a passage of exactly `2 *
/// radius` no placement can do better). Corners keep `radius` from walls; segments keep at
/// least half of it.
fn repair_clearance(mesh: &NavMesh, points: &mut Vec<Point>, radius: f64, near: &mut Vec<usize>) {
    let tolerance = radius * 1e-6;
    // Segments between corners offset around the same wall corner are chords of the
    // agent's true arc and dip slightly inside the radius; only real intrusions (closer
    // than half the radius, or through a wall) are repaired.
    let limit = radius * 0.5;
    let mut budget = 4 * points.len() + 32;
    let mut i = 0;
    while i + 1 < points.len() && budget > 0 {
        let (p, q) = (points[i], points[i + 1]);
        mesh.wall_grid().walls_near_segment(p, q, radius, near);
        // `orient(p, q, x)` is `x`'s distance from the segment's line times the segment's
        // length: a wall wholly on one side beyond `limit` (with room for rounding) is at
        // least `limit` from the segment and cannot be an intrusion.
        let reach = (limit * (1.0 + 1e-6) + 1e-9) * p.distance(q);
        let mut worst: Option<(f64, Point, Point, usize)> = None;
        for &w in near.iter() {
            let wall = mesh.walls()[w];
            let a = mesh.vertices()[wall.from.index()];
            let b = mesh.vertices()[wall.to.index()];
            let (oa, ob) = (orient(p, q, a), orient(p, q, b));
            if (oa > reach && ob > reach) || (oa < -reach && ob < -reach) {
                continue;
            }
            let (d, on_segment, on_wall) = segment_distance(p, q, a, b);
            // Touching a wall at the path's own ends is where the path starts or ends.
            if d < limit
                && on_wall.distance(p) > tolerance
                && on_wall.distance(q) > tolerance
                && worst.is_none_or(|(best, ..)| d < best)
            {
                worst = Some((d, on_segment, on_wall, w));
            }
        }
        let Some((d, on_segment, on_wall, w)) = worst else {
            i += 1;
            continue;
        };
        budget -= 1;
        let wall = mesh.walls()[w];
        let along = mesh.vertices()[wall.to.index()] - mesh.vertices()[wall.from.index()];
        // Away from the wall: towards the segment, or the wall's walkable side (its left)
        // when the segment touches or crosses it.
        let away = if d > tolerance {
            unit(on_segment - on_wall)
        } else {
            unit(Point::new(-along.y, along.x))
        };
        let mut corner = on_wall + away * (radius * (1.0 + 1e-9));
        for _ in 0..8 {
            let Some(hit) = mesh.nearest_wall(corner, radius) else {
                break;
            };
            if hit.distance >= radius - tolerance {
                break;
            }
            let out = if hit.distance > 0.0 {
                unit(corner - hit.point)
            } else {
                away
            };
            corner = corner + out * (radius - hit.distance + radius * 1e-9);
        }
        if mesh.locate(corner).is_none()
            || corner.distance(p) <= tolerance
            || corner.distance(q) <= tolerance
        {
            i += 1;
            continue;
        }
        points.insert(i + 1, corner);
    }
}

/// The distance between segments `p q` and `a b`, with the closest point on each.
fn segment_distance(p: Point, q: Point, a: Point, b: Point) -> (f64, Point, Point) {
    // Proper or touching intersection: distance zero at the crossing.
    let (d1, d2) = (orient(a, b, p), orient(a, b, q));
    let (d3, d4) = (orient(p, q, a), orient(p, q, b));
    if d1 * d2 <= 0.0 && d3 * d4 <= 0.0 && (d1 != d2 || d3 != d4) {
        let denom = d1 - d2;
        if denom != 0.0 {
            let x = p + (q - p) * (d1 / denom);
            return (0.0, x, x);
        }
    }
    let mut best = (f64::INFINITY, p, a);
    for (point, seg_a, seg_b, point_on_pq) in [
        (a, p, q, false),
        (b, p, q, false),
        (p, a, b, true),
        (q, a, b, true),
    ] {
        let closest = clamped_projection(point, seg_a, seg_b);
        let d = point.distance(closest);
        if d < best.0 {
            best = if point_on_pq {
                (d, point, closest)
            } else {
                (d, closest, point)
            };
        }
    }
    best
}

/// The unit vector along `d`, or zero for a zero vector.
fn unit(d: Point) -> Point {
    let len = d.length();
    if len > 0.0 {
        d * (1.0 / len)
    } else {
        Point::default()
    }
}
