//! Phase 4, steering's last step: anticipation before contact. Each body walking to a goal
//! looks at the bodies ahead of it, predicts from their last moves when it would touch each
//! one if both kept their velocities (the time to collision), and bends its wanted velocity
//! away from the collisions that come soonest. The paper's circling (PAPER §2.2) and
//! repulsion (PAPER §3.2) stay the response to contact; this rule makes contact rarer.
//!
//! The push follows the time-to-collision power law that Karamouzas, Skinner and Guy
//! measured in human crowds ("Universal power law governing pedestrian interactions",
//! 2014): away from where the other will be at contact, with a strength of
//! `k e^(-τ/τ0) / τ² (2/τ + 1/τ0)` for a time `τ` left before contact, so that bodies far
//! off in time hardly count and imminent collisions dominate. The world has no inertia
//! (each tick's wanted velocity comes fresh from the path), so the push enters as the
//! steady state of their relaxation toward the wanted velocity, an offset `ξ F`. Project
//! decisions, each measured on den520d (see `docs/benchmarks.md`): only bodies ahead
//! count (those behind are theirs to avoid); the offset only turns the wanted heading, at
//! most [`MAX_TURN_DEG`], and keeps its speed (a crowd pushed around freely keeps moving
//! but stops getting anywhere, and one slowed down by everything ahead arrives later);
//! each body looks every other tick and keeps its offset in between; a player's
//! character anticipates only other players (and their ghosts), not NPCs: it walks where
//! its client sends it, and the NPCs, which anticipate it as they anticipate everyone,
//! make way. Turned away by every NPC of a dense crowd, a character crossing it with its
//! client's orders stalled there (`sim/examples/border_jam.rs`).

use super::{World, rotate_by};
use crate::types::{Kind, Vec2};

/// How far ahead a body looks, beyond both radii, metres.
const RANGE_M: f32 = 2.5;
/// Collisions further off in time than this are ignored, seconds.
const HORIZON_SECS: f32 = 1.5;
/// The power law's scale `k`.
const STRENGTH: f32 = 0.75;
/// The power law's cut-off time `τ0`, seconds (Karamouzas et al. 2014: 3).
const CUTOFF_SECS: f32 = 3.0;
/// The relaxation time `ξ` that turns the push into a velocity offset, seconds.
const RELAX_SECS: f32 = 0.5;
/// The largest push from one neighbour, m/s² (keeps near-contact times finite).
const MAX_PUSH: f32 = 20.0;
/// A small gap kept on top of the radii in the prediction, metres.
const GAP_M: f32 = 0.05;
/// The largest turn off the wanted heading, degrees.
const MAX_TURN_DEG: f32 = 60.0;
/// A body looks once every this many ticks (staggered by slot).
const LOOK_EVERY: u64 = 2;

/// The anticipation phase's scratch.
#[derive(Default)]
pub(super) struct AnticipationScratch {
    /// Each slot's velocity over the last tick (zero for empty slots).
    vels: Vec<Vec2>,
}

/// The time until two discs touch, `w` being the other's position relative to this one's,
/// `v` this one's velocity relative to the other's and `r` the sum of the radii; `None`
/// when they do not meet, are moving apart, or already touch.
#[inline]
fn time_to_collision(w: Vec2, v: Vec2, r: f32) -> Option<f32> {
    let a = v.dot(v);
    let b = w.dot(v);
    if a < 1e-8 || b <= 0.0 {
        return None;
    }
    let c = w.dot(w) - r * r;
    if c <= 0.0 {
        return None;
    }
    let disc = b * b - a * c;
    if disc <= 0.0 {
        return None;
    }
    // The smaller root of `a t² - 2 b t + c = 0`, in the form that does not cancel.
    Some(c / (b + disc.sqrt()))
}

/// The power law's push magnitude for a collision `tau` seconds away, capped.
#[inline]
fn push_magnitude(tau: f32) -> f32 {
    let tau = tau.max(1e-3);
    (STRENGTH * (-tau / CUTOFF_SECS).exp() / (tau * tau) * (2.0 / tau + 1.0 / CUTOFF_SECS))
        .min(MAX_PUSH)
}

/// The heading of `want` plus `offset`, turned back to at most [`MAX_TURN_DEG`] off
/// `want`, at the speed of `want`.
/// `turn` is the sine and cosine of [`MAX_TURN_DEG`].
fn bend(want: Vec2, offset: Vec2, turn: (f32, f32)) -> Vec2 {
    let speed = want.length();
    let d0 = want / speed;
    let mut v = want + offset;
    let len = v.length();
    let (s, c) = turn;
    if v.dot(d0) < len * c {
        // Same side, largest turn allowed.
        let s = if d0.perp_dot(v) >= 0.0 { s } else { -s };
        v = rotate_by(d0, s, c) * len;
    }
    if len < 1e-6 {
        return want;
    }
    v * (speed / len)
}

impl World {
    /// Anticipation (see the module docs): bends each goal-walking body's wanted velocity
    /// away from the collisions the last moves of the bodies ahead predict.
    pub(super) fn anticipate(&mut self) {
        if !self.config.anticipation {
            return;
        }
        let vels = &mut self.anticipation.vels;
        vels.clear();
        vels.extend(self.bodies.slots().map(|b| b.map_or(Vec2::ZERO, |b| b.vel)));
        let max_r = self.bodies.max_radius();
        let tick = self.tick.0;
        let turn = MAX_TURN_DEG.to_radians().sin_cos();
        for i in 0..self.bodies.slot_count() {
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            let speed = b.want.length();
            if b.direction.is_some() || speed == 0.0 || b.goal.is_none() {
                if let Some(b) = self.bodies.at_mut(i) {
                    b.avoid = Vec2::ZERO;
                }
                continue;
            }
            let (pos, r, want) = (b.pos, b.ball.radius, b.want);
            let player = b.kind == Kind::Player;
            if (i as u64 + tick).is_multiple_of(LOOK_EVERY) {
                let d0 = want / speed;
                // The cells of the box round the stretch ahead: from the body to `RANGE_M`
                // (plus both radii) along its heading, widened by both radii. Heading
                // along an axis, that is a strip about as wide as two bodies, so a body
                // crossing from the side counts once it is about to enter the strip;
                // heading diagonally, the box is wider. A box as wide as the range on
                // both sides cost twice the time for the same flow (docs/benchmarks.md).
                let pad = r + max_r;
                let end = pos + d0 * (RANGE_M + pad);
                let cells = self.grid.cells_between(
                    pos.min(end) - Vec2::new(pad, pad),
                    pos.max(end) + Vec2::new(pad, pad),
                );
                let vels = &self.anticipation.vels;
                let bodies = &self.bodies;
                let mut push = Vec2::ZERO;
                // Only the bodies ahead within the range count (dropped by the grid's
                // straight-line filter, see `BodyGrid::for_each_disc_in`).
                let ahead = |[x, y, rj]: [f32; 3]| {
                    let w = Vec2::new(x, y) - pos;
                    let range = r + rj + RANGE_M;
                    !((w.dot(want) <= 0.0) | (w.length_squared() > range * range))
                };
                self.grid.for_each_disc_in(cells, ahead, |j, [x, y, rj]| {
                    if j == i || rj < 0.0 {
                        return;
                    }
                    if player && bodies.at(j).is_some_and(|o| o.kind != Kind::Player) {
                        return;
                    }
                    let w = Vec2::new(x, y) - pos;
                    let v = want - vels[j];
                    let Some(tau) = time_to_collision(w, v, r + rj + GAP_M) else {
                        return;
                    };
                    if tau > HORIZON_SECS {
                        return;
                    }
                    // Where the other will be, relative to this body, at contact: push
                    // straight away from there.
                    let at = w - v * tau;
                    let len = at.length();
                    if len > 1e-6 {
                        push -= at * (push_magnitude(tau) / len);
                    }
                });
                if let Some(b) = self.bodies.at_mut(i) {
                    b.avoid = push * RELAX_SECS;
                }
            }
            if let Some(b) = self.bodies.at_mut(i)
                && b.avoid != Vec2::ZERO
            {
                b.want = bend(want, b.avoid, turn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_to_collision_of_discs_walking_at_each_other() {
        // 5 m apart centre to centre, closing at 2 m/s, radii summing to 1 m: 2 s.
        let t = time_to_collision(Vec2::new(5.0, 0.0), Vec2::new(2.0, 0.0), 1.0).unwrap();
        assert!((t - 2.0).abs() < 1e-6, "{t}");
        // Moving apart, passing wide, or already touching: no collision.
        assert!(time_to_collision(Vec2::new(5.0, 0.0), Vec2::new(-2.0, 0.0), 1.0).is_none());
        assert!(time_to_collision(Vec2::new(5.0, 3.0), Vec2::new(2.0, 0.0), 1.0).is_none());
        assert!(time_to_collision(Vec2::new(0.5, 0.0), Vec2::new(2.0, 0.0), 1.0).is_none());
    }

    #[test]
    fn the_push_falls_with_the_time_left() {
        let near = push_magnitude(0.5);
        let far = push_magnitude(1.5);
        assert!(near > far && far > 0.0, "{near} {far}");
        assert_eq!(push_magnitude(0.0), MAX_PUSH);
    }

    #[test]
    fn bending_keeps_within_the_turn_and_the_speed() {
        let want = Vec2::new(1.5, 0.0);
        // Pushed straight back and to the left: turned 60° left at most, at the same speed.
        let v = bend(
            want,
            Vec2::new(-3.0, 0.5),
            MAX_TURN_DEG.to_radians().sin_cos(),
        );
        assert!((v.length() - 1.5).abs() < 1e-5);
        let angle = want.perp_dot(v).atan2(want.dot(v)).to_degrees();
        assert!((angle - MAX_TURN_DEG).abs() < 1e-3, "{angle}");
        // A small push sideways bends a little to that side.
        let v = bend(
            want,
            Vec2::new(0.0, -0.3),
            MAX_TURN_DEG.to_radians().sin_cos(),
        );
        let angle = want.perp_dot(v).atan2(want.dot(v)).to_degrees();
        assert!(angle < -5.0 && angle > -15.0, "{angle}");
        assert!((v.length() - 1.5).abs() < 1e-5);
    }
}
