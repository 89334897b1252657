//! Congestion-aware paths: where bodies are held up, counted per mesh triangle once every
//! simulated second, and priced into the path search, so that new paths go round the
//! jams where the map has another way.
//!
//! The path search finds the shortest path for a disc, and the shortest paths of a crowd
//! with goals all over the map share the same lines: through the few passages that join
//! the map's parts, where opposing streams pack and jam. As in density-aware crowd models
//! (Treuille, Cooper and Popović 2006, "Continuum crowds"; Narain et al. 2009), a path
//! here pays for the congestion it crosses: each triangle costs, for a path entering it,
//! [`WEIGHT_M`] metres per body crawling in it (below [`CRAWL_RATIO`] of its speed) per
//! metre of the triangle's size (the square root of its area, a typical length across
//! it), and the search (`NavMeshQuery::set_triangle_costs`) returns the way of least
//! length plus costs. Paths are searched when a body gets a goal (or replans after
//! circling), and bodies already on their way ask for a detour when their path leads
//! into a jam within [`DETOUR_LOOK_M`] (see `World::reroute`); a wanderer that gave up a
//! goal prefers a next one whose straight way meets no jam (`World::line_meets_jam`, used
//! by `World::goal_after_giving_up`). Players' paths are the
//! shortest ones, without costs or detours: a player chose where to go, and a way round
//! a crowd hundreds of metres long is not what it asked for.
//!
//! The cost is steep (see [`WEIGHT_M`]): measured on den520d, the steeper, the fewer goals
//! given up, up to a plateau (`docs/benchmarks.md`). The search stays exact and cheap
//! because it bounds the costs still to pay (`navmesh/src/path/costs.rs`). While the
//! path queue is behind, searches run without costs and no detour is asked for.

use std::sync::Arc;

use navmesh::TriId;

use super::{DT_SECS, World, to_point};
use crate::types::{CRAWL_RATIO, Kind, Vec2};

/// How often the costs are refreshed, ticks (one simulated second).
const REFRESH_TICKS: u64 = 20;
/// Metres a path pays to enter a triangle, per crawling body in it per metre of the
/// triangle's size: a few crawling bodies make a triangle worth a detour of hundreds of
/// metres, so paths go round any jam the map has a way round.
const WEIGHT_M: f64 = 500.0;
/// Searches run without costs while more requests wait than one per this many bodies
/// (and at least [`BEHIND_LEAST`]).
const BEHIND_PER: usize = 50;
/// See [`BEHIND_PER`].
const BEHIND_LEAST: usize = 64;
/// Detours (see `World::reroute`): how far along its path a body looks, metres.
const DETOUR_LOOK_M: f32 = 20.0;
/// Detours: the spacing of the points sampled along the path, metres.
const DETOUR_SAMPLE_M: f32 = 2.0;
/// Detours: the costs ahead, metres, that make a body ask for a detour (one crawling
/// body in a triangle of 1 m size costs [`WEIGHT_M`]).
const DETOUR_LEAST: f64 = WEIGHT_M;

/// Leaving a jam (see `World::goal_after_giving_up`): how far along the straight line to a
/// candidate goal a body that gave up looks for costs, metres.
const LEAVING_LOOK_M: f32 = 40.0;

/// `WorldConfig::detour_every_secs` in ticks (a bad number: never).
fn detour_every_ticks(secs: f32) -> u64 {
    if secs.is_finite() && secs >= 0.0 {
        (secs / DT_SECS).round() as u64
    } else {
        u64::MAX
    }
}

/// The triangle costs and their scratch.
#[derive(Default)]
pub(super) struct Congestion {
    /// Per triangle, one over its size (the square root of its area, at least 1 m).
    inverse_size: Vec<f64>,
    /// Per triangle, the bodies walking a path that crawled in their last tick.
    crawling: Vec<f64>,
    /// The costs in use (`None`: none), for the detours.
    costs: Option<Arc<[f64]>>,
}

impl World {
    /// Refreshes the triangle costs of the path search once every [`REFRESH_TICKS`] (the
    /// path phase calls this before serving requests). With no body crawling, or with the
    /// path queue behind, searches run without costs.
    pub(super) fn refresh_congestion(&mut self) {
        if !self.config.congestion_routing || !self.tick.0.is_multiple_of(REFRESH_TICKS) {
            return;
        }
        let n = self.mesh.triangle_count();
        let c = &mut self.congestion;
        if c.inverse_size.len() != n {
            c.inverse_size = (0..n)
                .map(|t| 1.0 / self.mesh.triangle_area(TriId(t as u32)).max(1.0).sqrt())
                .collect();
        }
        c.crawling.clear();
        c.crawling.resize(n, 0.0);
        let mut any = false;
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
            if let Some(t) = self.mesh.locate(to_point(body.pos)) {
                c.crawling[t.index()] += 1.0;
                any = true;
            }
        }
        // Searches that pay costs expand more nodes: while the queue is behind (the
        // start-up burst, when every body asks at once), they run without.
        let behind = self.paths.len() > (self.bodies.len() / BEHIND_PER).max(BEHIND_LEAST);
        let costs: Option<Arc<[f64]>> = (any && !behind).then(|| {
            c.crawling
                .iter()
                .zip(&c.inverse_size)
                .map(|(&k, &s)| WEIGHT_M * k * s)
                .collect()
        });
        self.paths.set_triangle_costs(costs.clone());
        self.congestion.costs = costs;
    }

    /// Whether the straight line from `from` toward `to` enters, within [`LEAVING_LOOK_M`],
    /// triangles costing [`DETOUR_LEAST`] or more together (see `World::costs_entered`):
    /// the jam a detour would go round. With no costs in use (no jam, or the path queue
    /// behind), never.
    pub(super) fn line_meets_jam(&self, from: Vec2, to: Vec2) -> bool {
        self.congestion.costs.as_deref().is_some_and(|costs| {
            self.costs_entered(costs, from, [to], LEAVING_LOOK_M) >= DETOUR_LEAST
        })
    }

    /// The `costs` of the triangles a walk from `from` through `points` enters within
    /// `look` metres, sampled every [`DETOUR_SAMPLE_M`] (the triangle under `from` not
    /// counted), summed until they reach [`DETOUR_LEAST`].
    fn costs_entered(
        &self,
        costs: &[f64],
        from: Vec2,
        points: impl IntoIterator<Item = Vec2>,
        look: f32,
    ) -> f64 {
        let mut entered = 0.0f64;
        let mut last = self.mesh.locate(to_point(from));
        let (mut from, mut left) = (from, look);
        let mut along = DETOUR_SAMPLE_M / 2.0;
        for to in points {
            if left <= 0.0 || entered >= DETOUR_LEAST {
                break;
            }
            let seg = (to - from).length();
            while along <= seg && left > 0.0 {
                let p = from + (to - from) * (along / seg);
                if let Some(tri) = self.mesh.locate_near(last, to_point(p))
                    && last != Some(tri)
                {
                    last = Some(tri);
                    entered += costs[tri.index()];
                }
                along += DETOUR_SAMPLE_M;
                left -= DETOUR_SAMPLE_M;
            }
            along -= seg;
            from = to;
        }
        entered
    }

    /// Detours: once a second (staggered over the ticks by slot), each body walking a path
    /// looks [`DETOUR_LOOK_M`] along it; if the triangles it would enter there cost
    /// [`DETOUR_LEAST`] or more, it asks for a new path to the same goal, at most once
    /// every `WorldConfig::detour_every_secs`, and walks its old path until the new one
    /// comes (see `World::finish_request`: a detour does not restart the give-up clock).
    /// None are asked for while the path queue is behind.
    pub(super) fn reroute(&mut self) {
        if !self.config.congestion_routing {
            return;
        }
        let Some(costs) = self.congestion.costs.clone() else {
            return;
        };
        let tick = self.tick.0;
        let room = (self.bodies.len() / BEHIND_PER).max(BEHIND_LEAST);
        let every = detour_every_ticks(self.config.detour_every_secs);
        for i in 0..self.bodies.slot_count() {
            if self.paths.len() > room {
                break;
            }
            if !(i as u64 + tick).is_multiple_of(REFRESH_TICKS) {
                continue;
            }
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            if b.goal.is_none()
                || b.kind == Kind::Player
                || b.path_pending
                || b.path.is_empty()
                || b.direction.is_some()
                || tick.saturating_sub(b.rerouted_tick) < every
            {
                continue;
            }
            // The costs the path enters within the look (the body's own triangle is paid
            // already).
            let ahead = self.costs_entered(
                &costs,
                b.pos,
                b.path.iter().skip(b.corner).copied(),
                DETOUR_LOOK_M,
            );
            if ahead < DETOUR_LEAST {
                continue;
            }
            let id = self.bodies.id_at(i);
            if let Some(b) = self.bodies.at_mut(i) {
                b.path_pending = true;
                b.rerouting = true;
                b.rerouted_tick = tick;
                self.paths.push(id, tick);
            }
        }
    }
}
