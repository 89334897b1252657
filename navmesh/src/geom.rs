//! Small 2D geometry: points in map units (metres), the predicates the mesh and its users
//! share, and distances to segments.
//!
//! # Orientation
//! [`orient`] is the plain float formula, for areas and for tests whose rounding does not
//! matter. Every decision that must be consistent across triangles sharing a vertex
//! (raycasts, the corner graph's visibility sweeps, the radius check of corner-graph paths,
//! collinear corners of a radius path) uses `orient_sign`, the exact sign: a float filter,
//! then an exact fast path for grid coordinates, then an exact sum (Shewchuk).
//!
//! # Segments
//! Two closest-point rules coexist on purpose, because callers depend on their bits (path
//! lengths, traversal widths, the world's state hash):
//! - [`closest_point_on_segment`] snaps to an endpoint: it returns exactly `a` or `b` when the
//!   foot of the perpendicular falls at or beyond that end. The wall queries and the world
//!   use it.
//! - `clamped_projection` (and [`distance_to_segment`], built on it) returns `a + (b - a) * t`
//!   with `t` clamped to `[0, 1]`; at `t = 1` that is `a + (b - a)`, which may differ from
//!   `b` in the last bit. Traversal widths, the path search's bounds and the clearance of
//!   radius paths use it.
//!
//! Merging them would move some results by an ulp and with them, through ties, some paths.

use std::ops::{Add, Mul, Sub};

/// A point (or vector) in map units. `y` grows in the direction of increasing grid rows, so a
/// Moving AI map drawn with `y` downwards looks like its text file.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point {
    /// Horizontal coordinate.
    pub x: f64,
    /// Vertical coordinate.
    pub y: f64,
}

impl Point {
    /// A point from its coordinates.
    pub const fn new(x: f64, y: f64) -> Self {
        Self { x, y }
    }

    /// True when both coordinates are finite (neither NaN nor infinite).
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite()
    }

    /// The 2D cross product (z of the 3D cross product) of `self` and `other`.
    pub fn cross(self, other: Point) -> f64 {
        self.x * other.y - self.y * other.x
    }

    /// The dot product.
    pub fn dot(self, other: Point) -> f64 {
        self.x * other.x + self.y * other.y
    }

    /// Euclidean length of the vector. (Plain `sqrt(x² + y²)`: `hypot` guards against
    /// overflow we cannot have with map coordinates, at several times the cost on the path
    /// search's hot path.)
    pub fn length(self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }

    /// Euclidean distance to `other`.
    pub fn distance(self, other: Point) -> f64 {
        (other - self).length()
    }
}

impl Add for Point {
    type Output = Point;
    fn add(self, rhs: Point) -> Point {
        Point::new(self.x + rhs.x, self.y + rhs.y)
    }
}

impl Sub for Point {
    type Output = Point;
    fn sub(self, rhs: Point) -> Point {
        Point::new(self.x - rhs.x, self.y - rhs.y)
    }
}

impl Mul<f64> for Point {
    type Output = Point;
    fn mul(self, rhs: f64) -> Point {
        Point::new(self.x * rhs, self.y * rhs)
    }
}

/// Twice the signed area of triangle `a b c`: positive when counter-clockwise.
pub fn orient(a: Point, b: Point, c: Point) -> f64 {
    (b - a).cross(c - a)
}

/// The sign of `orient(a, b, c)` (twice the signed area of `a b c`), computed exactly: 1 when
/// counter-clockwise, -1 when clockwise, 0 when collinear. Exact for all finite inputs whose
/// pairwise products neither overflow nor underflow (coordinates between about 1e-140 and
/// 1e150 in magnitude, or zero).
#[inline]
pub(crate) fn orient_sign(a: Point, b: Point, c: Point) -> i8 {
    // Shewchuk's orient2d filter: the float result's sign is right unless it is within this
    // bound of zero.
    const EPS: f64 = f64::EPSILON / 2.0;
    const ERR: f64 = (3.0 + 16.0 * EPS) * EPS;
    let left = (b.x - a.x) * (c.y - a.y);
    let right = (b.y - a.y) * (c.x - a.x);
    let det = left - right;
    let bound = ERR * (left.abs() + right.abs());
    if det > bound {
        return 1;
    }
    if -det > bound {
        return -1;
    }
    orient_sign_near_zero(a, b, c, det)
}

/// [`orient_sign`] when the float determinant `det` is too close to zero for its sign to
/// be trusted: out of line, so that the filter above inlines where it is called.
#[inline(never)]
fn orient_sign_near_zero(a: Point, b: Point, c: Point, det: f64) -> i8 {
    // Exact without expansions when every coordinate is a multiple of 2^-16 below 2^30 in
    // magnitude (grid maps: integers and halves) and the differences are below 1024: the
    // differences are then exact, so are their products (below 2^52 units of 2^-32), and
    // the float difference of two exact values has the exact sign.
    const SCALE: f64 = 65536.0;
    let on_grid = |v: f64| {
        let s = v * SCALE;
        s.abs() < (1u64 << 46) as f64 && (s as i64) as f64 == s
    };
    let small = |v: f64| v.abs() < 1024.0;
    if on_grid(a.x)
        && on_grid(a.y)
        && on_grid(b.x)
        && on_grid(b.y)
        && on_grid(c.x)
        && on_grid(c.y)
        && small(b.x - a.x)
        && small(b.y - a.y)
        && small(c.x - a.x)
        && small(c.y - a.y)
    {
        return if det > 0.0 {
            1
        } else if det < 0.0 {
            -1
        } else {
            0
        };
    }
    // Exact: det = bx·cy − bx·ay − ax·cy − by·cx + by·ax + ay·cx (the ax·ay terms cancel),
    // each product split into an exact pair (high, low) with a fused multiply-add.
    let products = [
        (b.x, c.y),
        (-b.x, a.y),
        (-a.x, c.y),
        (-b.y, c.x),
        (b.y, a.x),
        (a.y, c.x),
    ];
    let mut terms = [0.0f64; 12];
    for (i, (x, y)) in products.into_iter().enumerate() {
        let high = x * y;
        terms[2 * i] = high;
        terms[2 * i + 1] = x.mul_add(y, -high);
    }
    exact_sum_sign(&terms)
}

/// The sign of the exact sum of at most 12 floats, by growing a nonoverlapping expansion
/// (Shewchuk, "Adaptive precision floating-point arithmetic", 1997, Grow-Expansion): the
/// sign of the sum is the sign of the expansion's largest nonzero component.
fn exact_sum_sign(terms: &[f64; 12]) -> i8 {
    let mut expansion = [0.0f64; 12];
    for (len, &term) in terms.iter().enumerate() {
        let mut q = term;
        for e in &mut expansion[..len] {
            let (sum, err) = two_sum(q, *e);
            *e = err;
            q = sum;
        }
        expansion[len] = q;
    }
    match expansion.iter().rev().find(|&&x| x != 0.0) {
        Some(&x) if x > 0.0 => 1,
        Some(&x) if x < 0.0 => -1,
        _ => 0,
    }
}

/// `a + b` as an exact pair (rounded sum, rounding error) (Knuth's Two-Sum).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let sum = a + b;
    let b_virtual = sum - a;
    let a_virtual = sum - b_virtual;
    (sum, (a - a_virtual) + (b - b_virtual))
}

/// The point of segment `a b` closest to `p`, snapped to the ends: exactly `a` or `b` when
/// it is an endpoint (and `a` for a degenerate segment). See the module docs for how it
/// differs from [`distance_to_segment`]'s rule.
pub fn closest_point_on_segment(p: Point, a: Point, b: Point) -> Point {
    let ab = b - a;
    let len2 = ab.dot(ab);
    if len2 <= 0.0 {
        return a;
    }
    let t = (p - a).dot(ab) / len2;
    if t <= 0.0 {
        a
    } else if t >= 1.0 {
        b
    } else {
        a + ab * t
    }
}

/// The point `a + (b - a) * t` of segment `a b` closest to `p`, with `t` clamped to `[0, 1]`
/// (`t = 0` for a degenerate segment). Not snapped to the ends: see the module docs.
pub(crate) fn clamped_projection(p: Point, a: Point, b: Point) -> Point {
    let ab = b - a;
    let len2 = ab.dot(ab);
    let t = if len2 > 0.0 {
        ((p - a).dot(ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    a + ab * t
}

/// Distance from `p` to the segment `a b`, to the point `clamped_projection` gives (see the
/// module docs).
pub fn distance_to_segment(p: Point, a: Point, b: Point) -> f64 {
    p.distance(clamped_projection(p, a, b))
}

/// Signed area of a closed ring (first point not repeated): positive when counter-clockwise.
pub fn ring_signed_area(ring: &[Point]) -> f64 {
    let n = ring.len();
    let mut twice = 0.0;
    for i in 0..n {
        twice += ring[i].cross(ring[(i + 1) % n]);
    }
    twice / 2.0
}

/// An axis-aligned rectangle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Smallest corner.
    pub min: Point,
    /// Largest corner.
    pub max: Point,
}

impl Aabb {
    /// The bounds of a set of points, or `None` when there are none.
    pub fn of_points(points: impl IntoIterator<Item = Point>) -> Option<Aabb> {
        let mut iter = points.into_iter();
        let first = iter.next()?;
        let mut bounds = Aabb {
            min: first,
            max: first,
        };
        for p in iter {
            bounds.min.x = bounds.min.x.min(p.x);
            bounds.min.y = bounds.min.y.min(p.y);
            bounds.max.x = bounds.max.x.max(p.x);
            bounds.max.y = bounds.max.y.max(p.y);
        }
        Some(bounds)
    }

    /// Width and height.
    pub fn size(&self) -> Point {
        self.max - self.min
    }
}

/// The cell an offset of `v` cells from a grid's origin falls in, clamped to `0..=last`:
/// the floor, without a call to libm's `floor` (which the baseline x86-64 target has no
/// instruction for, and which was a twentieth of a path's shaping). Truncation is the
/// floor for the values of at least 1 it is used on; smaller values and NaN give cell 0,
/// as the floor would after clamping, and `as` saturates the infinite and the huge.
#[inline]
pub(crate) fn grid_cell(v: f64, last: usize) -> usize {
    if v >= 1.0 { (v as usize).min(last) } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_cells_are_the_clamped_floor() {
        let floor = |v: f64, last: usize| {
            let c = v.floor();
            if c > 0.0 { (c as usize).min(last) } else { 0 }
        };
        let below_one = 1.0f64.next_down();
        for v in [
            f64::NAN,
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -0.5,
            -0.0,
            0.0,
            1e-300,
            0.5,
            below_one,
            1.0,
            1.5,
            2.0,
            2.0f64.next_down(),
            6.999999,
            7.0,
            7.5,
            8.0,
            1e19,
            1e300,
            f64::INFINITY,
        ] {
            for last in [0, 1, 7, 4095] {
                assert_eq!(grid_cell(v, last), floor(v, last), "v {v}, last {last}");
            }
        }
    }

    #[test]
    fn orientation_is_exact() {
        // Integers below 2^52 are exact, their products are not: compare with i128.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bits: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> (64 - bits)) as i64 - (1i64 << (bits - 1))
        };
        for round in 0..20_000 {
            let bits = [52, 30, 8][round % 3];
            let a = (next(bits), next(bits));
            let b = (next(bits), next(bits));
            // Every third c is (nearly) on the line a b.
            let c = if round % 2 == 0 {
                let k = next(4) as i128;
                let (cx, cy) = (
                    a.0 as i128 + k * (b.0 as i128 - a.0 as i128) / 8,
                    a.1 as i128 + k * (b.1 as i128 - a.1 as i128) / 8,
                );
                let jiggle = next(2);
                (
                    (cx as i64).clamp(-(1 << 51), 1 << 51) + jiggle,
                    (cy as i64).clamp(-(1 << 51), 1 << 51),
                )
            } else {
                (next(bits), next(bits))
            };
            let exact = (b.0 as i128 - a.0 as i128) * (c.1 as i128 - a.1 as i128)
                - (b.1 as i128 - a.1 as i128) * (c.0 as i128 - a.0 as i128);
            let f = |q: (i64, i64)| Point::new(q.0 as f64, q.1 as f64);
            for scale in [1.0, 0.5f64.powi(60), 2.0f64.powi(40)] {
                let s = |q: Point| q * scale;
                assert_eq!(
                    orient_sign(s(f(a)), s(f(b)), s(f(c))),
                    exact.signum() as i8,
                    "{a:?} {b:?} {c:?}"
                );
            }
        }
        // A classic near-collinear case that the plain float formula gets wrong.
        let a = Point::new(0.5, 0.5);
        let b = Point::new(12.0, 12.0);
        let c = Point::new(24.0, 24.0);
        for i in 0..64 {
            let q = Point::new(a.x + i as f64 * f64::EPSILON, a.y);
            let s = orient_sign(q, b, c);
            let expected = if i == 0 { 0 } else { -1 };
            assert_eq!(s, expected, "{i}");
        }
    }

    #[test]
    fn the_two_segment_rules_agree_inside_and_differ_only_in_how_they_reach_the_end() {
        let (a, b) = (Point::new(0.1, 0.7), Point::new(0.3, 0.2));
        // Beyond `b`: the snapped rule gives `b` itself, the clamped one `a + (b - a)`.
        let beyond = Point::new(0.5, -0.3);
        assert_eq!(closest_point_on_segment(beyond, a, b), b);
        let clamped = clamped_projection(beyond, a, b);
        assert_eq!(clamped, a + (b - a));
        assert!(clamped.distance(b) <= 1e-15);
        // Before `a` both give `a`; inside both give the same foot.
        let before = Point::new(-0.5, 2.0);
        assert_eq!(closest_point_on_segment(before, a, b), a);
        assert_eq!(clamped_projection(before, a, b), a);
        let inside = Point::new(0.3, 0.5);
        assert_eq!(
            closest_point_on_segment(inside, a, b),
            clamped_projection(inside, a, b)
        );
        // A degenerate segment is its point.
        assert_eq!(closest_point_on_segment(inside, a, a), a);
        assert_eq!(distance_to_segment(inside, a, a), inside.distance(a));
    }

    #[test]
    fn distance_to_segment_is_perpendicular_inside_and_to_the_end_outside() {
        let (a, b) = (Point::new(0.0, 0.0), Point::new(4.0, 0.0));
        assert_eq!(distance_to_segment(Point::new(1.0, 3.0), a, b), 3.0);
        assert_eq!(distance_to_segment(Point::new(7.0, 4.0), a, b), 5.0);
        assert_eq!(distance_to_segment(Point::new(-3.0, -4.0), a, b), 5.0);
    }
}
