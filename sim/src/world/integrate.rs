//! Phase 8, integration: walls win, positions move, and the tick's figures are taken.

use super::{DT_SECS, World};
use crate::types::{CRAWL_RATIO, Kind, Motion, Vec2};

impl World {
    /// Phase 8: walls win (no body ends deeper in a wall than it started), positions move,
    /// and the figures are taken.
    pub fn integrate(&mut self) {
        let stuck_ticks = (self.config.stuck_after_secs / DT_SECS) as u64;
        let (mut npcs, mut ratio_sum) = (0usize, 0.0f64);
        for i in 0..self.bodies.slot_count() {
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            // A ghost moved when it was placed, and is not this world's to count.
            if b.ghost {
                continue;
            }
            let (pos, next, r) = (b.pos, b.next_pos, b.ball.radius);
            let keep = next == pos || {
                let after = if self.known_wall_free(i, next, r) {
                    0.0
                } else {
                    self.obstacles.depth(i, &self.mesh, next, r)
                };
                after <= 0.0 || after <= self.obstacles.depth(i, &self.mesh, pos, r) - 1e-6
            };
            let tick = self.tick.0;
            let Some(b) = self.bodies.at_mut(i) else {
                continue;
            };
            b.moved = 0.0;
            b.vel = Vec2::ZERO;
            if keep {
                b.moved = (next - b.pos).length();
                b.vel = (next - b.pos) / DT_SECS;
                b.pos = next;
            }
            if b.kind == Kind::Npc {
                let ratio = if b.speed > 0.0 {
                    (b.moved / (b.speed * DT_SECS)).min(1.0)
                } else {
                    0.0
                };
                npcs += 1;
                ratio_sum += f64::from(ratio);
                if ratio < CRAWL_RATIO {
                    self.out.crawling += 1;
                }
            }
            if let Some(goal) = b.goal {
                // Progress is measured along the path (a path may lead away from the goal
                // around an obstacle); before the path arrives, in a straight line.
                let dist = if b.path.is_empty() || (b.path_pending && !b.rerouting) {
                    (goal - b.pos).length()
                } else {
                    b.remaining_length()
                };
                if dist < b.best_goal_dist - 0.05 {
                    b.best_goal_dist = dist;
                    b.progress_tick = tick;
                } else if tick.saturating_sub(b.progress_tick) > stuck_ticks {
                    self.out.stuck += 1;
                }
            }
            match b.motion {
                Motion::Circling => self.out.circling += 1,
                Motion::Repulsed => self.out.repulsed += 1,
                _ => {}
            }
        }
        if npcs > 0 {
            self.out.mean_speed_ratio = (ratio_sum / npcs as f64) as f32;
        }
        self.take_figures();
    }

    /// Overlap and wall figures at the tick's end.
    fn take_figures(&mut self) {
        let in_walls = self.survey(true);
        let mut per_body = std::mem::take(&mut self.contacts.overlap);
        // The values a full sort would put last and at the 99th percentile.
        self.out.max_overlap = per_body
            .iter()
            .copied()
            .max_by(f32::total_cmp)
            .unwrap_or(0.0);
        self.out.p99_overlap = if per_body.is_empty() {
            0.0
        } else {
            let k = ((per_body.len() - 1) as f32 * 0.99).round() as usize;
            *per_body.select_nth_unstable_by(k, f32::total_cmp).1
        };
        self.out.bodies_in_walls = in_walls;
        self.out.overlapping_pairs = self.contacts.overlapping_pairs;
        self.contacts.overlap = per_body;
    }
}
