//! Phase 2, brains: NPCs without a goal choose one (wander, patrol, gather) and ask the
//! path queue for the way there.

use navmesh::IslandId;

use super::{DT_SECS, World, to_point, to_vec};
use crate::types::{Brain, Kind, Vec2};

/// How many uniformly random points a wanderer that gave up its goal draws, at most, for a
/// next goal that turns away from it and lies in sight (see
/// `World::goal_after_giving_up`).
const REDRAWS: usize = 32;
/// The least distance of the goal a wanderer that gave up prefers, metres: without it,
/// preferring goals whose way is clear of jams would favour near ones (a short line
/// crosses fewer jams), and the walks after giving up would grow short.
const LEAVING_LEAST_M: f32 = 10.0;
/// How far round a wanderer that gave up it counts the crowd it leaves, metres (see
/// `World::leaving_side`): about a body's walk of four seconds, the size of the packs that
/// hold bodies fast on den520d's spine.
const LEAVING_CROWD_M: f32 = 6.5;
/// The least number of bodies within [`LEAVING_CROWD_M`] that make a crowd to leave.
const LEAVING_CROWD_LEAST: usize = 3;
/// How far off a body the crowd's middle must lie for its side to tell a way out,
/// metres: a crowd all round (a body penned in a ring) does not.
const LEAVING_OFF_MIDDLE_M: f32 = 0.1;

impl World {
    /// Phase 2: NPC brains choose goals.
    pub fn run_brains(&mut self) {
        for i in 0..self.bodies.slot_count() {
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            if b.kind != Kind::Npc || b.path_pending {
                continue;
            }
            let goal = match &b.brain {
                Brain::Idle => None,
                Brain::Wander => {
                    // A wanderer that has made no progress for half the stuck time (two
                    // streams meeting head-on in a corridor one body wide, which circling
                    // cannot solve) gives up its goal and picks another.
                    let give_up = (self.config.stuck_after_secs / 2.0 / DT_SECS) as u64;
                    let pos = b.pos;
                    let mut blocked_dir = None;
                    if b.goal.is_some() {
                        if self.tick.0.saturating_sub(b.progress_tick) <= give_up {
                            continue;
                        }
                        self.out.gave_up += 1;
                        blocked_dir = b.goal.map(|g| g - pos);
                    }
                    // After giving up, head away from the jam, for a place in sight: a goal
                    // whose straight direction turns away from the goal given up can still
                    // lie round a wall, and its path then lead back through the jam (as on
                    // den520d's S-shaped spine); one in sight is walked to straight (see
                    // docs/benchmarks.md). Away from the goal given up, unless the body
                    // stands at one side of a crowd: then away from the crowd's middle,
                    // the nearer way out.
                    match blocked_dir {
                        Some(dir) => {
                            let back = self.leaving_side(i, pos).unwrap_or(dir);
                            self.goal_after_giving_up(pos, back)
                        }
                        None => self.random_point_near(pos),
                    }
                }
                Brain::Patrol(points) => {
                    if b.goal.is_some() || points.is_empty() {
                        continue;
                    }
                    let p = points[b.patrol_next % points.len()];
                    if let Some(b) = self.bodies.at_mut(i) {
                        b.patrol_next = (b.patrol_next + 1) % points_len(&b.brain);
                    }
                    Some(p)
                }
                Brain::Gather(target) => {
                    let Some(t) = self.bodies.get(*target) else {
                        continue;
                    };
                    let reach = b.ball.radius + t.ball.radius + self.config.gather_distance_m;
                    if (t.pos - b.pos).length() <= reach {
                        // Close enough: stand here (others press around, the figure 13 case).
                        if let Some(b) = self.bodies.at_mut(i) {
                            b.goal = None;
                            b.clear_path();
                        }
                        continue;
                    }
                    match b.goal {
                        Some(g) if (g - t.pos).length() < 1.0 => continue,
                        _ => Some(t.pos),
                    }
                }
            };
            let Some(goal) = goal else { continue };
            let id = self.bodies.id_at(i);
            let tick = self.tick.0;
            if let Some(b) = self.bodies.at_mut(i) {
                b.set_goal(goal, tick);
                b.path_pending = true;
                self.paths.push(id, tick);
            }
        }
    }

    /// The next goal of a wanderer at `pos` that gave up its goal, to be left on the side
    /// away from `blocked` (the direction of the goal given up, or of the middle of the
    /// crowd the body stands at the side of, `World::leaving_side`): the first of up to
    /// [`REDRAWS`] uniformly random walkable points that turns away from `blocked`, is in
    /// sight (no wall between), at least [`LEAVING_LEAST_M`] away,
    /// and whose straight way there meets no jam within 40 m (`World::line_meets_jam`: the
    /// congestion costs a detour would go round); failing that, the first that turns away
    /// and is in sight; failing that, the first that turns away; failing that, the last
    /// draw. Which of the draws is taken is all that the rule decides: every draw is a
    /// uniformly random point, as every wanderer's goal is.
    fn goal_after_giving_up(&mut self, pos: Vec2, blocked: Vec2) -> Option<Vec2> {
        // The island is the same for every draw: looked up once.
        let island = self.island_under(pos)?;
        let (mut away, mut in_sight, mut pick) = (None, None, None);
        for _ in 0..REDRAWS {
            pick = self.random_point_on(island);
            let p = pick?;
            if (p - pos).dot(blocked) >= 0.0 {
                continue;
            }
            away = away.or(pick);
            if !matches!(
                self.mesh.raycast(to_point(pos), to_point(p)),
                Ok(navmesh::Raycast::Clear)
            ) {
                continue;
            }
            in_sight = in_sight.or(pick);
            if (p - pos).length() >= LEAVING_LEAST_M && !self.line_meets_jam(pos, p) {
                return pick;
            }
        }
        in_sight.or(away).or(pick)
    }

    /// Where the crowd round body `i` at `pos` stands, for a wanderer that gave up to turn
    /// away from: the direction from `pos` to the middle (the mean position) of the other
    /// bodies within [`LEAVING_CROWD_M`], when there are at least [`LEAVING_CROWD_LEAST`]
    /// of them and their middle lies at least [`LEAVING_OFF_MIDDLE_M`] off `pos`. A body
    /// that gave up is usually held in a pack whose bodies walk every way (streams
    /// crossing); turning away from its own goal can send it across the pack's middle,
    /// where it is held again, while the side away from the middle is the pack's nearest
    /// edge (see docs/benchmarks.md).
    fn leaving_side(&self, i: usize, pos: Vec2) -> Option<Vec2> {
        let (mut sum, mut count) = (Vec2::ZERO, 0usize);
        self.grid.for_each_near(pos, LEAVING_CROWD_M, |j| {
            if j == i {
                return;
            }
            if let Some(o) = self.bodies.at(j) {
                let off = o.pos - pos;
                if off.length_squared() < LEAVING_CROWD_M * LEAVING_CROWD_M {
                    sum += off;
                    count += 1;
                }
            }
        });
        if count < LEAVING_CROWD_LEAST {
            return None;
        }
        let middle = sum / count as f32;
        (middle.length() >= LEAVING_OFF_MIDDLE_M).then_some(middle)
    }

    /// A uniformly random walkable point on the island under `near`.
    fn random_point_near(&mut self, near: Vec2) -> Option<Vec2> {
        let island = self.island_under(near)?;
        self.random_point_on(island)
    }

    /// The island of the mesh triangle nearest `p`.
    fn island_under(&self, p: Vec2) -> Option<IslandId> {
        let tri = self.mesh.nearest_point(to_point(p), 1e3)?.1;
        Some(self.mesh.island(tri))
    }

    /// A uniformly random walkable point on `island`.
    fn random_point_on(&mut self, island: IslandId) -> Option<Vec2> {
        let (point, _) = self.mesh.random_point_on_island(island, &mut self.rng)?;
        Some(to_vec(point))
    }
}

/// The number of patrol points (at least 1, so that it can divide).
fn points_len(brain: &Brain) -> usize {
    match brain {
        Brain::Patrol(p) => p.len().max(1),
        _ => 1,
    }
}
