//! Whether a cluster file's zones cover the map's walkable ground: every triangle of the
//! navmesh must lie within the union of the zones' rectangles. Zones do not overlap (the
//! file's own check), so a triangle is covered exactly when the areas of its parts within
//! each rectangle add up to its own. A point test (each triangle's centre in a zone) let
//! a strip between two zones through when no triangle's centre fell in it, and a body
//! walking into that strip was then in no zone: never handed over, never asked for again.

use navmesh::Point;

/// Of a triangle's area, the share that may be missing from its parts' sum (rounding).
const TOLERANCE: f64 = 1e-6;

/// Samples along each side of a triangle when looking for a point of it no zone owns.
const SAMPLES: u32 = 64;

/// The area of `triangle` within the rectangle `[x0, y0, x1, y1]`.
pub(super) fn area_within(triangle: [Point; 3], [x0, y0, x1, y1]: [f64; 4]) -> f64 {
    let mut polygon: Vec<Point> = triangle.to_vec();
    // Sutherland–Hodgman: one half-plane of the rectangle at a time, each given by the
    // signed distance of a point inside it.
    let sides: [&dyn Fn(Point) -> f64; 4] = [
        &|p: Point| p.x - x0,
        &|p: Point| x1 - p.x,
        &|p: Point| p.y - y0,
        &|p: Point| y1 - p.y,
    ];
    for inside in sides {
        let mut clipped = Vec::with_capacity(polygon.len() + 2);
        for (k, &p) in polygon.iter().enumerate() {
            let q = polygon[(k + 1) % polygon.len()];
            let (dp, dq) = (inside(p), inside(q));
            if dp >= 0.0 {
                clipped.push(p);
            }
            if (dp >= 0.0) != (dq >= 0.0) {
                let t = dp / (dp - dq);
                clipped.push(p + (q - p) * t);
            }
        }
        polygon = clipped;
        if polygon.len() < 3 {
            return 0.0;
        }
    }
    shoelace(&polygon).abs()
}

fn shoelace(polygon: &[Point]) -> f64 {
    let n = polygon.len();
    (0..n)
        .map(|k| {
            let (p, q) = (polygon[k], polygon[(k + 1) % n]);
            p.x * q.y - q.x * p.y
        })
        .sum::<f64>()
        / 2.0
}

/// Whether the rectangles `regions` (which do not overlap) cover `triangle`.
pub(super) fn covered(triangle: [Point; 3], regions: &[[f64; 4]]) -> bool {
    let whole = shoelace(&triangle).abs();
    let parts: f64 = regions.iter().map(|r| area_within(triangle, *r)).sum();
    parts >= whole * (1.0 - TOLERANCE)
}

/// A point of `triangle` for which `owned` is false, looked for on a grid of barycentric
/// samples; its centre when none of them is (a sliver thinner than the samples' spacing).
pub(super) fn unowned_point(triangle: [Point; 3], owned: impl Fn(Point) -> bool) -> Point {
    let [a, b, c] = triangle;
    let centre = (a + b + c) * (1.0 / 3.0);
    for i in 0..=SAMPLES {
        for j in 0..=SAMPLES - i {
            let (u, v) = (
                f64::from(i) / f64::from(SAMPLES),
                f64::from(j) / f64::from(SAMPLES),
            );
            let p = a + (b - a) * u + (c - a) * v;
            if !owned(p) {
                return p;
            }
        }
    }
    centre
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tri(a: (f64, f64), b: (f64, f64), c: (f64, f64)) -> [Point; 3] {
        [
            Point::new(a.0, a.1),
            Point::new(b.0, b.1),
            Point::new(c.0, c.1),
        ]
    }

    #[test]
    fn the_parts_of_a_triangle_in_abutting_rectangles_add_up_to_it() {
        let t = tri((0.0, 0.0), (10.0, 0.0), (0.0, 10.0));
        assert!((area_within(t, [-1.0, -1.0, 20.0, 20.0]) - 50.0).abs() < 1e-9);
        assert!((area_within(t, [0.0, 0.0, 5.0, 5.0]) - 25.0).abs() < 1e-9);
        assert_eq!(area_within(t, [20.0, 20.0, 30.0, 30.0]), 0.0);
        let halves = [[-1.0, -1.0, 3.7, 20.0], [3.7, -1.0, 20.0, 20.0]];
        assert!(covered(t, &halves));
        // A strip of a tenth of a metre between them, through the triangle's middle.
        let gap = [[-1.0, -1.0, 3.7, 20.0], [3.8, -1.0, 20.0, 20.0]];
        assert!(!covered(t, &gap));
        let p = unowned_point(t, |p| p.x < 3.7 || p.x >= 3.8);
        assert!((3.7..3.8).contains(&p.x), "{p:?}");
    }
}
