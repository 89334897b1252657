//! Small 2D geometry: points in map units (metres) and the exact-enough predicates the mesh
//! and its users share.

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
