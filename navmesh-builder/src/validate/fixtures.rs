//! Builders shared by the unit tests of the validation modules: rings, regions and maps, the
//! rings and grid as [`validate`] prepares them, and a small deterministic random generator.

use navmesh::Point;

use super::segments::SegmentGrid;
use super::{Ring, RingKind, RingRef, ValidationError, validate};
use crate::source::{MapInput, Region};

pub(super) fn pts(coords: &[(f64, f64)]) -> Vec<Point> {
    coords.iter().map(|&(x, y)| Point::new(x, y)).collect()
}

pub(super) fn square(x: f64, y: f64, size: f64) -> Vec<Point> {
    pts(&[(x, y), (x + size, y), (x + size, y + size), (x, y + size)])
}

pub(super) fn map(regions: Vec<Region>) -> MapInput {
    MapInput {
        name: "test".into(),
        regions,
        known_area: None,
    }
}

pub(super) fn region(outer: Vec<Point>, holes: Vec<Vec<Point>>) -> Region {
    Region { outer, holes }
}

pub(super) fn err(input: MapInput) -> ValidationError {
    match validate(&input) {
        Ok(_) => panic!("expected a validation error"),
        Err(e) => e,
    }
}

pub(super) const OUTER: RingKind = RingKind::Outer;

/// Rings and grid as `validate` builds them.
pub(super) fn prepared(input: &MapInput) -> (Vec<Ring>, SegmentGrid) {
    let mut rings = Vec::new();
    for (r, region) in input.regions.iter().enumerate() {
        let at = |ring| RingRef { region: r, ring };
        rings.push(Ring::new(at(OUTER), &region.outer).unwrap());
        for (h, hole) in region.holes.iter().enumerate() {
            rings.push(Ring::new(at(RingKind::Hole(h)), hole).unwrap());
        }
    }
    let grid = SegmentGrid::new(&rings);
    (rings, grid)
}

/// A linear congruential generator: the same pseudo-random sequence on every run.
pub(super) fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}
