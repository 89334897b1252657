//! Congestion-aware paths: a coarse map of where bodies are held up, refreshed every
//! simulated second, and the shaping of found paths around it.
//!
//! The path search finds the shortest path for a disc, and the shortest paths of a crowd
//! with goals all over the map share the same lines: they hug the inner side of every
//! bend of the map's main ways, so the crowd walks in a band a few metres wide along the
//! inner walls while the rest of each room stays empty, and where those bands cross they
//! jam. As in density-aware crowd models (Treuille, Cooper and Popović 2006, "Continuum
//! crowds"; Narain et al. 2009), a path here pays for the congestion it crosses: each
//! turning point of a found path may move out from the corner it wraps, across the room,
//! when the longer way round costs less than the held-up bodies it avoids. The search
//! itself stays the mesh's exact one; only where a path turns changes, and only within
//! sight of its neighbours.
//!
//! Off by default ([`WorldConfig::congestion_routing`](crate::WorldConfig::congestion_routing)):
//! on den520d, where one central junction carries most routes and has no way round, it
//! moved few corners, barely eased the jams and cost arrivals (the measurements are in
//! `docs/benchmarks.md`). A cost that the path search itself adds, able to pick another
//! way round, needs the search's help (`navmesh`), which it does not offer yet.

use navmesh::{NavMesh, Point};

use super::{DT_SECS, World};
use crate::types::{CRAWL_RATIO, Vec2};

/// The congestion map's cell side, metres.
const CELL_M: f32 = 2.0;
/// How often the map is refreshed, ticks (one simulated second).
const REFRESH_TICKS: u64 = 20;
/// Spacing of the samples taken along a path segment, metres.
const SAMPLE_M: f32 = 1.0;
/// Metres of walking a path gives to avoid one crawling body per square metre along one
/// metre.
const WEIGHT: f32 = 1.0;
/// A turning point moves only if that saves at least this much, metres.
const LEAST_GAIN_M: f32 = 2.0;
/// How far a turning point may move out from its corner, metres, in the order tried.
const OFFSETS_M: [f64; 6] = [1.5, 3.0, 5.0, 7.5, 10.0, 14.0];

/// Where bodies were held up at the last refresh: per cell, the bodies walking a path
/// that crawled in their last tick (below [`CRAWL_RATIO`] of their speed), per square
/// metre.
#[derive(Default)]
pub(super) struct Congestion {
    origin: Vec2,
    cols: usize,
    rows: usize,
    /// Held-up bodies per square metre, by cell (row-major).
    density: Vec<f32>,
}

impl Congestion {
    /// The density at `p` (0 outside the map).
    fn at(&self, p: Vec2) -> f32 {
        let fx = (p.x - self.origin.x) / CELL_M;
        let fy = (p.y - self.origin.y) / CELL_M;
        if !(fx >= 0.0 && fy >= 0.0) {
            return 0.0;
        }
        let (cx, cy) = (fx as usize, fy as usize);
        if cx >= self.cols || cy >= self.rows {
            return 0.0;
        }
        self.density[cy * self.cols + cx]
    }

    /// The density integrated along the segment from `a` to `b` (held-up bodies per metre
    /// of width, so to speak), sampled every [`SAMPLE_M`].
    fn along(&self, a: Vec2, b: Vec2) -> f32 {
        let len = (b - a).length();
        let n = (len / SAMPLE_M).ceil().max(1.0) as usize;
        let ds = len / n as f32;
        (0..n)
            .map(|k| self.at(a + (b - a) * ((k as f32 + 0.5) / n as f32)))
            .sum::<f32>()
            * ds
    }
}

fn vec(p: Point) -> Vec2 {
    Vec2::new(p.x as f32, p.y as f32)
}

impl World {
    /// Refreshes the congestion map once every [`REFRESH_TICKS`] (the path phase calls
    /// this before serving requests).
    pub(super) fn refresh_congestion(&mut self) {
        if !self.config.congestion_routing || !self.tick.0.is_multiple_of(REFRESH_TICKS) {
            return;
        }
        let c = &mut self.congestion;
        let b = self.mesh.bounds();
        c.origin = Vec2::new(b.min.x as f32, b.min.y as f32);
        let size = b.size();
        c.cols = ((size.x as f32 / CELL_M).ceil() as usize).clamp(1, 4096);
        c.rows = ((size.y as f32 / CELL_M).ceil() as usize).clamp(1, 4096);
        c.density.clear();
        c.density.resize(c.cols * c.rows, 0.0);
        let per_body = 1.0 / (CELL_M * CELL_M);
        for (_, body) in self.bodies.iter() {
            // Bodies waiting for a path (all of them in the first tick) stand still without
            // being held up by anyone.
            if body.goal.is_none() || body.path_pending || body.path.is_empty() || body.speed <= 0.0
            {
                continue;
            }
            if body.moved >= CRAWL_RATIO * body.speed * DT_SECS {
                continue;
            }
            let fx = (body.pos.x - c.origin.x) / CELL_M;
            let fy = (body.pos.y - c.origin.y) / CELL_M;
            if fx >= 0.0 && fy >= 0.0 && (fx as usize) < c.cols && (fy as usize) < c.rows {
                c.density[fy as usize * c.cols + fx as usize] += per_body;
            }
        }
    }
}

impl Congestion {
    /// Moves the turning points of a found path out from the corners they wrap where the
    /// congestion map makes the longer way round cheaper (see the module docs). A point
    /// moves along the bisector of its turn, away from the turn's inside, to the cheapest
    /// of [`OFFSETS_M`] that keeps a disc of `radius` clear of the walls and both
    /// neighbouring segments in sight; a path through empty rooms is left as it is.
    pub(super) fn spread_corners(&self, mesh: &NavMesh, points: &mut [Point], radius: f64) {
        let (weight, least) = (WEIGHT, LEAST_GAIN_M);
        let c = self;
        // Each candidate's cost, then its point; tried cheapest first.
        let mut tried: Vec<(f32, Point)> = Vec::new();
        for k in 1..points.len().saturating_sub(1) {
            let (prev, p, next) = (points[k - 1], points[k], points[k + 1]);
            let (a, q, b) = (vec(prev), vec(p), vec(next));
            let here = c.along(a, q) + c.along(q, b);
            if here * weight < least {
                continue;
            }
            let (u, v) = (q - a, b - q);
            let (lu, lv) = (u.length(), v.length());
            if lu < 1e-3 || lv < 1e-3 {
                continue;
            }
            let out = u / lu - v / lv;
            let lo = out.length();
            if lo < 1e-3 {
                continue;
            }
            let out = out / lo;
            let base = lu + lv + weight * here;
            tried.clear();
            for s in OFFSETS_M {
                let cand = q + out * s as f32;
                let cost = (cand - a).length()
                    + (b - cand).length()
                    + weight * (c.along(a, cand) + c.along(cand, b));
                if cost < base - least {
                    tried.push((cost, Point::new(f64::from(cand.x), f64::from(cand.y))));
                }
            }
            tried.sort_by(|x, y| x.0.total_cmp(&y.0));
            let clear =
                |a: Point, b: Point| matches!(mesh.raycast(a, b), Ok(navmesh::Raycast::Clear));
            if let Some(&(_, cand)) = tried.iter().find(|&&(_, cand)| {
                mesh.locate(cand).is_some()
                    && mesh.clearance(cand, radius) >= radius
                    && clear(prev, cand)
                    && clear(cand, next)
            }) {
                points[k] = cand;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use navmesh::{BuildInfo, VertId};

    use super::*;

    /// A 40 m square room in two triangles.
    fn room() -> NavMesh {
        let v = vec![
            Point::new(0.0, 0.0),
            Point::new(40.0, 0.0),
            Point::new(40.0, 40.0),
            Point::new(0.0, 40.0),
        ];
        let t = |a, b, c| [VertId(a), VertId(b), VertId(c)];
        NavMesh::new(BuildInfo::default(), v, vec![t(0, 1, 2), t(0, 2, 3)]).unwrap()
    }

    /// A congestion map over the room with `density` in the cells within `reach` of `at`.
    fn map(at: Vec2, reach: f32, density: f32) -> Congestion {
        let (cols, rows) = (20, 20);
        let mut c = Congestion {
            origin: Vec2::ZERO,
            cols,
            rows,
            density: vec![0.0; cols * rows],
        };
        for y in 0..rows {
            for x in 0..cols {
                let centre = Vec2::new((x as f32 + 0.5) * CELL_M, (y as f32 + 0.5) * CELL_M);
                if (centre - at).length() <= reach {
                    c.density[y * cols + x] = density;
                }
            }
        }
        c
    }

    #[test]
    fn a_turn_through_a_jam_moves_out_of_it_and_an_empty_room_changes_nothing() {
        let mesh = room();
        // East along y = 10, then north at x = 20.
        let path = [
            Point::new(5.0, 10.0),
            Point::new(20.0, 10.0),
            Point::new(20.0, 35.0),
        ];
        let mut empty = path;
        map(Vec2::new(20.0, 10.0), 4.0, 0.0).spread_corners(&mesh, &mut empty, 0.4);
        assert_eq!(empty, path);

        // Held-up bodies round the turn (the inside of a left turn is to its north-west):
        // the turning point moves out, south-east, and the path still stays in the room.
        let mut jammed = path;
        map(Vec2::new(18.0, 12.0), 4.0, 1.5).spread_corners(&mesh, &mut jammed, 0.4);
        let moved = jammed[1];
        assert!(moved.x > 20.0 && moved.y < 10.0, "{moved:?}");
        assert!(mesh.locate(moved).is_some());
        assert_eq!((jammed[0], jammed[2]), (path[0], path[2]));
    }
}
