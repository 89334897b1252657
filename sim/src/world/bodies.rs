//! The bodies: a set of slots addressed by generational [`EntityId`]s, as rapier keeps its
//! rigid bodies, and the named view of one body the world hands out.
//!
//! A body lives in a slot; removing it bumps the slot's generation and frees the slot for
//! the next insert, so an old id never names the body that later reuses its slot. The
//! phases walk the slots by index (`0..slot_count()`), and their per-body scratch vectors
//! are indexed the same way.

use parry2d::shape::Ball;

use super::{path_length_from, remaining_length};
use crate::types::{Brain, EntityId, Kind, Motion, Vec2};

/// One body: a parry2d ball with a brain and a path.
#[derive(Clone, Debug)]
pub(super) struct Body {
    pub(super) kind: Kind,
    pub(super) brain: Brain,
    pub(super) pos: Vec2,
    pub(super) ball: Ball,
    pub(super) speed: f32,
    pub(super) goal: Option<Vec2>,
    pub(super) direction: Option<Vec2>,
    /// The path's corners (change it through [`Body::clear_path`], or reset `along`).
    pub(super) path: Vec<Vec2>,
    pub(super) corner: usize,
    /// Corner `.0`'s point and the length of the path from it on (`path_length_from`),
    /// remembered: they are the same every tick until the body passes a corner or the path
    /// changes, and the body's own memory is warmer than its path's.
    pub(super) along: Option<(usize, Vec2, f32)>,
    pub(super) path_pending: bool,
    /// The pending request is a detour round a jam for the same goal (see
    /// `World::reroute`): the body walks its current path until the new one comes.
    pub(super) rerouting: bool,
    /// The tick of the body's last detour request.
    pub(super) rerouted_tick: u64,
    /// The circling heading `d` (PAPER §2.2), while circling.
    pub(super) heading: Option<Vec2>,
    /// Consecutive ticks this body has waited for an oncoming body to pass on its right
    /// (keep right, see `World::decide`).
    pub(super) yield_ticks: u32,
    /// Keep-right deflection of the wanted heading, radians (negative: to the right), set
    /// every few ticks by `World::keep_lanes`.
    pub(super) lane: f32,
    pub(super) motion: Motion,
    pub(super) patrol_next: usize,
    pub(super) best_goal_dist: f32,
    pub(super) progress_tick: u64,
    /// How far the body moved in the last tick, metres.
    pub(super) moved: f32,
    /// Its velocity over the last tick, m/s (what others anticipate).
    pub(super) vel: Vec2,
    /// The anticipation offset added to its wanted velocity (see `World::anticipate`).
    pub(super) avoid: Vec2,
    // Per-tick scratch.
    pub(super) want: Vec2,
    pub(super) next_pos: Vec2,
    pub(super) overlapping: bool,
    /// A ghost ([`crate::Input::SpawnGhost`]): placed from outside, never moved here.
    pub(super) ghost: bool,
}

impl Body {
    /// A body standing at `pos` with nothing to do yet, spawned at `tick`.
    pub(super) fn new(
        kind: Kind,
        brain: Brain,
        pos: Vec2,
        radius_m: f32,
        speed_mps: f32,
        tick: u64,
    ) -> Body {
        Body {
            kind,
            brain,
            pos,
            ball: Ball::new(radius_m),
            speed: speed_mps,
            goal: None,
            direction: None,
            path: Vec::new(),
            corner: 0,
            along: None,
            path_pending: false,
            rerouting: false,
            rerouted_tick: tick,
            heading: None,
            yield_ticks: 0,
            lane: 0.0,
            motion: Motion::Idle,
            patrol_next: 0,
            best_goal_dist: f32::INFINITY,
            progress_tick: tick,
            moved: 0.0,
            vel: Vec2::ZERO,
            avoid: Vec2::ZERO,
            want: Vec2::ZERO,
            next_pos: pos,
            overlapping: false,
            ghost: false,
        }
    }

    /// The view of this body under `id`.
    pub(super) fn view(&self, id: EntityId) -> BodyView {
        BodyView {
            id,
            kind: self.kind,
            pos: self.pos,
            radius_m: self.ball.radius,
            motion: self.motion,
        }
    }

    pub(super) fn clear_path(&mut self) {
        self.path.clear();
        self.along = None;
    }

    /// Sets a new goal, and measures progress toward it from here and now.
    pub(super) fn set_goal(&mut self, goal: Vec2, tick: u64) {
        self.goal = Some(goal);
        self.best_goal_dist = (goal - self.pos).length();
        self.progress_tick = tick;
    }

    /// The path's corner `self.corner`, from the body's own memory when it has it.
    pub(super) fn corner_point(&self) -> Option<Vec2> {
        match self.along {
            Some((corner, first, _)) if corner == self.corner => Some(first),
            _ => self.path.get(self.corner).copied(),
        }
    }

    /// [`remaining_length`] of the body's path from its next corner, with the part along
    /// the corners remembered (the same arithmetic, so the same value).
    pub(super) fn remaining_length(&mut self) -> f32 {
        if let Some((corner, first, along)) = self.along
            && corner == self.corner
        {
            return (first - self.pos).length() + along;
        }
        let Some(&first) = self.path.get(self.corner) else {
            return remaining_length(&self.path, self.corner, self.pos);
        };
        let along = path_length_from(&self.path, self.corner);
        self.along = Some((self.corner, first, along));
        (first - self.pos).length() + along
    }
}

/// What the world shows of one live body (see [`World::body`](super::World::body) and
/// [`World::bodies`](super::World::bodies)): a copy, taken when asked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyView {
    /// The body's id.
    pub id: EntityId,
    /// NPC or player character.
    pub kind: Kind,
    /// Where its centre stands, metres.
    pub pos: Vec2,
    /// Its radius, metres.
    pub radius_m: f32,
    /// What it did this tick.
    pub motion: Motion,
}

#[derive(Clone, Debug, Default)]
struct Slot {
    generation: u32,
    body: Option<Body>,
}

/// Bodies in slots addressed by [`EntityId`]: the generation in an id must match its
/// slot's, so ids of removed bodies find nothing.
#[derive(Clone, Debug, Default)]
pub(super) struct BodySet {
    slots: Vec<Slot>,
    /// Empty slots, reused last freed first.
    free: Vec<u32>,
    /// The largest radius ever inserted: the reach of every neighbour query.
    max_radius: f32,
}

impl BodySet {
    /// Adds `body` in a free slot (or a new one) and returns its id.
    pub(super) fn insert(&mut self, body: Body) -> EntityId {
        self.max_radius = self.max_radius.max(body.ball.radius);
        let index = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.slots.push(Slot::default());
                self.slots.len() - 1
            }
        };
        self.slots[index].body = Some(body);
        self.id_at(index)
    }

    /// Removes the body `id` names, if it lives; its slot's generation moves on.
    pub(super) fn remove(&mut self, id: EntityId) -> Option<Body> {
        self.get(id)?;
        let slot = &mut self.slots[id.index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(id.index);
        slot.body.take()
    }

    /// The body `id` names, if it lives.
    pub(super) fn get(&self, id: EntityId) -> Option<&Body> {
        let s = self.slots.get(id.index as usize)?;
        if s.generation == id.generation {
            s.body.as_ref()
        } else {
            None
        }
    }

    /// The body `id` names, if it lives, to change.
    pub(super) fn get_mut(&mut self, id: EntityId) -> Option<&mut Body> {
        let s = self.slots.get_mut(id.index as usize)?;
        if s.generation == id.generation {
            s.body.as_mut()
        } else {
            None
        }
    }

    /// The body in slot `i`, if the slot holds one.
    #[inline]
    pub(super) fn at(&self, i: usize) -> Option<&Body> {
        self.slots.get(i)?.body.as_ref()
    }

    /// The body in slot `i`, if the slot holds one, to change.
    #[inline]
    pub(super) fn at_mut(&mut self, i: usize) -> Option<&mut Body> {
        self.slots.get_mut(i)?.body.as_mut()
    }

    /// The id of whatever lives (or will live next) in slot `i`.
    pub(super) fn id_at(&self, i: usize) -> EntityId {
        EntityId {
            index: i as u32,
            generation: self.slots[i].generation,
        }
    }

    /// The number of slots, live or free: the bound of slot indices.
    #[inline]
    pub(super) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The number of live bodies.
    pub(super) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The largest radius ever inserted.
    #[inline]
    pub(super) fn max_radius(&self) -> f32 {
        self.max_radius
    }

    /// Every slot's body or `None`, in slot order (for scratch indexed by slot).
    pub(super) fn slots(&self) -> impl Iterator<Item = Option<&Body>> + '_ {
        self.slots.iter().map(|s| s.body.as_ref())
    }

    /// Every live body with its id, in slot order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (EntityId, &Body)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.body.as_ref().map(|b| {
                (
                    EntityId {
                        index: i as u32,
                        generation: s.generation,
                    },
                    b,
                )
            })
        })
    }

    /// Every live body, in slot order, to change.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Body> + '_ {
        self.slots.iter_mut().filter_map(|s| s.body.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(radius_m: f32) -> Body {
        Body::new(Kind::Npc, Brain::Idle, Vec2::ZERO, radius_m, 1.0, 0)
    }

    #[test]
    fn removed_ids_find_nothing_and_their_slot_is_reused_under_a_new_generation() {
        let mut set = BodySet::default();
        let a = set.insert(body(0.3));
        let b = set.insert(body(0.5));
        assert_eq!((a.index, b.index), (0, 1));
        assert_eq!(set.len(), 2);
        assert!(set.remove(a).is_some());
        assert!(set.remove(a).is_none(), "removed twice");
        assert!(set.get(a).is_none());
        let c = set.insert(body(0.2));
        assert_eq!(c.index, a.index);
        assert_ne!(c.generation, a.generation);
        assert!(set.get(a).is_none(), "an old id names the new body");
        assert_eq!(set.get(c).map(|b| b.ball.radius), Some(0.2));
        assert_eq!(set.len(), 2);
        assert_eq!(set.slot_count(), 2);
        assert_eq!(set.max_radius(), 0.5);
        let ids: Vec<_> = set.iter().map(|(id, _)| id).collect();
        assert_eq!(ids, vec![c, b]);
    }
}
