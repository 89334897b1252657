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
//! length plus costs. Paths are searched once, when a body gets a goal (or replans after
//! circling), so bodies already on their way keep theirs.
//!
//! A cost that blocks the straight way makes the exact search expand every node whose
//! length bound is below the way's cost: on den520d at 10,000 NPCs the path queue fell
//! behind by thousands of requests. The search therefore runs weighted
//! ([`HEURISTIC_WEIGHT`]) while costs are in use, greedy toward the goal; it takes a
//! detour only when the jammed way costs several times more. The figures, and the weights
//! tried, are in `docs/benchmarks.md`.

use std::sync::Arc;

use navmesh::TriId;

use super::{DT_SECS, World, to_point};
use crate::types::CRAWL_RATIO;

/// How often the costs are refreshed, ticks (one simulated second).
const REFRESH_TICKS: u64 = 20;
/// Metres a path pays to enter a triangle, per crawling body in it per metre of the
/// triangle's size.
const WEIGHT_M: f64 = 2.0;
/// The path search's heuristic weight while costs are in use (see the module docs).
const HEURISTIC_WEIGHT: f64 = 3.0;

/// The triangle costs and their scratch.
#[derive(Default)]
pub(super) struct Congestion {
    /// Per triangle, one over its size (the square root of its area, at least 1 m).
    inverse_size: Vec<f64>,
    /// Per triangle, the bodies walking a path that crawled in their last tick.
    crawling: Vec<f64>,
}

impl World {
    /// Refreshes the triangle costs of the path search once every [`REFRESH_TICKS`] (the
    /// path phase calls this before serving requests). With no body crawling, searches
    /// run without costs.
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
        let costs: Option<Arc<[f64]>> = any.then(|| {
            c.crawling
                .iter()
                .zip(&c.inverse_size)
                .map(|(&k, &s)| WEIGHT_M * k * s)
                .collect()
        });
        self.paths.set_triangle_costs(costs, HEURISTIC_WEIGHT);
    }
}
