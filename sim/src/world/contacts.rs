//! Phase 5, contacts: the broad phase on the current positions, which bodies already
//! overlap a body or a wall (the survey, also taken for the figures at the tick's end), and
//! the tick's picture of next moves that circling and repulsion fill in.

use super::{DT_SECS, OVERLAP_TOLERANCE, World, disc_overlap, to_vec};
use crate::types::Vec2;

/// The contacts of the tick: made by [`World::find_contacts`], moved by the circling and
/// repulsion phases, read by integration; and the survey's scratch.
#[derive(Default)]
pub(super) struct Contacts {
    /// Each slot's decided (or current) next position and radius, densely, for the
    /// neighbour tests of the circling phase (`r < 0`: empty slot).
    pub(super) next_discs: Vec<[f32; 3]>,
    /// Per slot, a disc `(centre, radius)` known to be clear of every wall and closed
    /// door this tick (radius < 0: none known); set by the circling phase.
    pub(super) wall_free: Vec<(Vec2, f32)>,
    /// The grid and the overlap flags describe the current positions (set by a survey,
    /// cleared by anything that moves, adds, removes or re-walls bodies).
    pub(super) fresh: bool,
    /// Survey scratch: each slot's position, for the grid.
    positions: Vec<Option<Vec2>>,
    /// Survey scratch: each slot's disc at the current positions (`r < 0`: empty slot),
    /// and its deepest overlap with another body.
    discs: Vec<[f32; 3]>,
    deep: Vec<f32>,
    /// Deepest overlap per live body from the last survey.
    pub(super) overlap: Vec<f32>,
    /// Pairs overlapping by more than 1% of the smaller radius, from the last survey.
    pub(super) overlapping_pairs: usize,
}

impl World {
    /// Phase 5: broad phase, and which bodies already overlap a body or a wall.
    pub fn find_contacts(&mut self) {
        // The previous tick's figures surveyed these same positions, unless an input added,
        // removed or re-walled something since.
        if !self.contacts.fresh {
            self.survey(false);
        }
        let slots = self.bodies.slot_count();
        self.contacts.wall_free.clear();
        self.contacts.wall_free.resize(slots, (Vec2::ZERO, -1.0));
        self.contacts.fresh = false;
        for b in self.bodies.iter_mut() {
            b.next_pos = b.pos;
        }
        self.contacts.next_discs.clear();
        self.contacts.next_discs.extend(
            self.bodies
                .slots()
                .map(|b| b.map_or([0.0, 0.0, -1.0], |b| [b.pos.x, b.pos.y, b.ball.radius])),
        );
        // The grid's discs are the current positions (set by the survey), which is where
        // the circling phase starts from. A ghost's disc grows by the farthest its owner can
        // move it in a tick: bodies here keep clear of every place it may be next, so the
        // two worlds' bodies cannot meet whatever each decides.
        for i in 0..slots {
            let Some(b) = self.bodies.at(i).filter(|b| b.ghost) else {
                continue;
            };
            let disc = [b.pos.x, b.pos.y, b.ball.radius + b.speed * DT_SECS];
            self.contacts.next_discs[i] = disc;
            self.grid.set_disc(i, disc);
        }
    }

    /// Rebuilds the broad phase on the current positions and classifies every body: its
    /// deepest overlap with another body (fraction of the smaller radius, into
    /// `Contacts::overlap`), whether it counts as overlapping something (the repulsion
    /// phase's input), and how many bodies reach more than 1% of their radius into a wall.
    ///
    /// With `wall_free`, the discs the circling phase found clear of walls this tick spare
    /// the wall queries of bodies still inside them.
    pub(super) fn survey(&mut self, wall_free: bool) -> usize {
        let c = &mut self.contacts;
        c.positions.clear();
        c.positions
            .extend(self.bodies.slots().map(|b| b.map(|b| b.pos)));
        let bounds = self.mesh.bounds();
        let cell = (2.0 * self.bodies.max_radius()).max(1.0);
        self.grid
            .rebuild(to_vec(bounds.min), to_vec(bounds.max), cell, &c.positions);
        c.overlap.clear();
        c.discs.clear();
        c.discs.extend(
            self.bodies
                .slots()
                .map(|b| b.map_or([0.0, 0.0, -1.0], |b| [b.pos.x, b.pos.y, b.ball.radius])),
        );
        for (i, &disc) in c.discs.iter().enumerate() {
            self.grid.set_disc(i, disc);
        }
        // Each body's deepest overlap with another. The cells are at least twice the
        // largest radius wide, so overlapping bodies share a cell or neighbouring ones, and
        // the grid hands each such pair over once; the overlap is symmetric, and a maximum
        // does not depend on the order it is taken in.
        let slots = self.bodies.slot_count();
        let deep = &mut c.deep;
        deep.clear();
        deep.resize(slots, 0.0);
        // The grid's discs were just set to these same discs.
        let mut pairs = 0;
        self.grid
            .for_each_close_pair(|i, [xi, yi, ri], j, [xj, yj, rj]| {
                let d = disc_overlap(Vec2::new(xi, yi), ri, Vec2::new(xj, yj), rj) / ri.min(rj);
                deep[i] = deep[i].max(d);
                deep[j] = deep[j].max(d);
                pairs += usize::from(d > 0.01);
            });
        c.overlapping_pairs = pairs;
        self.obstacles.fit_memo(slots);
        let mut in_walls = 0;
        for i in 0..slots {
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            let (pos, ball) = (b.pos, b.ball);
            let deepest = self.contacts.deep[i];
            let wall = if wall_free && self.known_wall_free(i, pos, ball.radius) {
                0.0
            } else {
                self.obstacles.body_depth(&self.mesh, i, pos, ball.radius)
            };
            if wall > 0.01 * ball.radius {
                in_walls += 1;
            }
            self.contacts.overlap.push(deepest);
            if let Some(b) = self.bodies.at_mut(i) {
                b.overlapping =
                    deepest > OVERLAP_TOLERANCE || wall > OVERLAP_TOLERANCE * ball.radius;
            }
        }
        self.contacts.fresh = true;
        in_walls
    }

    /// Whether a disc of `radius` at `pos` is known clear of every wall and closed door
    /// from body `i`'s `wall_free` disc (so its wall depth is 0 without asking the walls).
    /// The 1 mm margin covers rounding in the distances.
    pub(super) fn known_wall_free(&self, i: usize, pos: Vec2, radius: f32) -> bool {
        let (centre, free) = self.contacts.wall_free[i];
        (pos - centre).length() + radius + 1e-3 < free
    }
}
