//! Phase 4, steering's second half: anticipation before contact. Each body walking to a
//! goal looks at the bodies around it, predicts from their last moves when it would touch
//! each one if both kept their velocities (the time to collision), and bends its wanted
//! velocity away from the collisions that come soonest. The paper's circling (PAPER §2.2)
//! and repulsion (PAPER §3.2) stay the response to contact; this rule is meant to make
//! contact rarer where streams cross.
//!
//! The avoidance follows the time-to-collision power law that Karamouzas, Skinner and Guy
//! measured in human crowds ("Universal power law governing pedestrian interactions",
//! 2014): the push away from a neighbour grows as `e^(-τ/τ0) / τ²` with the time `τ` left
//! before contact, so bodies far in time are ignored and imminent collisions dominate. The
//! world has no inertia (each tick's wanted velocity is recomputed from the path), so the
//! push is applied as the steady-state offset of their relaxation, `ξ F`, smoothed over a
//! few ticks, and the result never exceeds the body's walking speed.

use super::{DT_SECS, World};
use crate::types::Vec2;

/// How far a body looks for neighbours to anticipate, beyond both radii, metres.
const RANGE_M: f32 = 2.5;
/// Collisions further away in time than this are ignored, seconds.
const HORIZON_SECS: f32 = 3.0;
/// The power law's scale `k` (Karamouzas et al. 2014: 1.5).
const STRENGTH: f32 = 1.5;
/// The power law's cut-off time `τ0`, seconds (Karamouzas et al. 2014: 3).
const CUTOFF_SECS: f32 = 3.0;
/// The relaxation time `ξ` that turns the push into a velocity offset, seconds.
const RELAX_SECS: f32 = 0.5;
/// The largest push from one neighbour, m/s² (keeps near-contact times finite).
const MAX_PUSH: f32 = 20.0;
/// How quickly the offset follows the push: the share of the gap closed each tick.
const SMOOTHING: f32 = 0.3;
/// A small gap kept on top of the radii in the prediction, metres.
const GAP_M: f32 = 0.05;

fn knob(name: &str, default: f32) -> f32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[derive(Clone, Copy)]
struct Knobs { range: f32, horizon: f32, strength: f32, cutoff: f32, relax: f32, max_push: f32, smoothing: f32, gap: f32, max_deg: f32, ahead_only: f32, min_speed: f32 }

fn knobs() -> Knobs {
    static K: std::sync::OnceLock<Knobs> = std::sync::OnceLock::new();
    *K.get_or_init(|| Knobs {
        range: knob("A_RANGE", RANGE_M),
        horizon: knob("A_HORIZON", HORIZON_SECS),
        strength: knob("A_K", STRENGTH),
        cutoff: knob("A_T0", CUTOFF_SECS),
        relax: knob("A_XI", RELAX_SECS),
        max_push: knob("A_MAXF", MAX_PUSH),
        smoothing: knob("A_SMOOTH", SMOOTHING),
        gap: knob("A_GAP", GAP_M),
        max_deg: knob("A_MAXDEG", 180.0),
        ahead_only: knob("A_AHEAD", 0.0),
        min_speed: knob("A_MINSPEED", 0.0),
    })
}

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
    Some(c / (b + disc.sqrt()))
}

impl World {
    /// Anticipation (see the module docs): bends each goal-walking body's wanted velocity
    /// away from the collisions its neighbours' last moves predict.
    pub(super) fn anticipate(&mut self) {
        if !self.config.anticipation {
            return;
        }
        let vels = &mut self.anticipation.vels;
        vels.clear();
        vels.extend(self.bodies.slots().map(|b| b.map_or(Vec2::ZERO, |b| b.vel)));
        let max_r = self.bodies.max_radius();
        let kn = knobs();
        let (cos_max, sin_max) = (kn.max_deg.to_radians().cos(), kn.max_deg.to_radians().sin());
        for i in 0..self.bodies.slot_count() {
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            let speed = b.want.length();
            if b.direction.is_some() || speed == 0.0 || b.goal.is_none() {
                continue;
            }
            let (pos, r, want) = (b.pos, b.ball.radius, b.want);
            let reach = r + max_r + kn.range;
            let vels = &self.anticipation.vels;
            let mut push = Vec2::ZERO;
            self.grid
                .for_each_disc_in(self.grid.cell_box(pos, reach), |j, [x, y, rj], _, _| {
                    if j == i || rj < 0.0 {
                        return;
                    }
                    let w = Vec2::new(x, y) - pos;
                    if kn.ahead_only > 0.0 && w.dot(want) <= 0.0 {
                        return;
                    }
                    let range = r + rj + kn.range;
                    if w.length_squared() > range * range {
                        return;
                    }
                    let v = want - vels[j];
                    let sum = r + rj + kn.gap;
                    let Some(tau) = time_to_collision(w, v, sum) else {
                        return;
                    };
                    if tau > kn.horizon {
                        return;
                    }
                    // Where the other will be, relative to this body, at contact: push
                    // straight away from there.
                    let at = w - v * tau;
                    let len = at.length();
                    if len < 1e-6 {
                        return;
                    }
                    let tau = tau.max(DT_SECS);
                    let mag = (kn.strength * (-tau / kn.cutoff).exp() / (tau * tau)
                        * (2.0 / tau + 1.0 / kn.cutoff))
                        .min(kn.max_push);
                    push -= at * (mag / len);
                });
            let Some(b) = self.bodies.at_mut(i) else {
                continue;
            };
            let target = push * kn.relax;
            b.avoid += (target - b.avoid) * kn.smoothing;
            let mut v = want + b.avoid;
            let d0 = want / speed;
            let (along, side) = (v.dot(d0), v.perp_dot(d0));
            let len = v.length();
            if along < len * cos_max {
                // Turn back to the largest angle allowed, same side.
                let s = if side > 0.0 { -sin_max } else { sin_max };
                let dir = Vec2::new(d0.x * cos_max - d0.y * s, d0.x * s + d0.y * cos_max);
                v = dir * len;
            }
            let len = v.length();
            let min = kn.min_speed * speed;
            b.want = if len > speed {
                v * (speed / len)
            } else if len < min && len > 1e-6 {
                v * (min / len)
            } else {
                v
            };
        }
    }
}
