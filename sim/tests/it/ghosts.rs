//! Ghosts: bodies placed from outside every tick (a neighbouring zone's bodies near the
//! border), which the world never moves and every other body avoids.

use std::collections::HashMap;

use sim::{Brain, EntityId, Input, Kind, Vec2, World, WorldConfig};

use crate::{npc, polygon_mesh};

const ROOM: &str = r#"{"regions": [{"outer": [[0, 0], [30, 0], [30, 30], [0, 30]]}]}"#;
const RADIUS: f32 = 0.4;

/// One zone of the test: its world, its real bodies, and the ghosts of the other zone's
/// real bodies (other's id → ghost id here).
struct Zone {
    world: World,
    real: Vec<EntityId>,
    ghosts: HashMap<EntityId, EntityId>,
}

impl Zone {
    /// Real walkers from `from(k)` to `to(k)`.
    fn new(
        seed: u64,
        walkers: usize,
        from: impl Fn(usize) -> Vec2,
        to: impl Fn(usize) -> Vec2,
    ) -> Zone {
        let mut world = World::new(WorldConfig::default(), polygon_mesh(ROOM), seed);
        let spawns: Vec<Input> = (0..walkers)
            .map(|k| npc(from(k).x, from(k).y, RADIUS, Brain::Idle))
            .collect();
        let real = world.step(&spawns).spawned;
        let orders: Vec<Input> = real
            .iter()
            .enumerate()
            .map(|(k, &id)| Input::MoveTo(id, to(k)))
            .collect();
        world.step(&orders);
        Zone {
            world,
            real,
            ghosts: HashMap::new(),
        }
    }

    /// Where the real bodies are.
    fn positions(&self) -> Vec<(EntityId, Vec2)> {
        self.real
            .iter()
            .map(|&id| (id, self.world.body(id).unwrap().pos))
            .collect()
    }

    /// Mirrors `other`'s real bodies as ghosts and steps: the inputs a zone builds from its
    /// neighbour's frame every tick.
    fn step_with(&mut self, other: &[(EntityId, Vec2)]) {
        let mut inputs = Vec::new();
        let mut fresh = Vec::new();
        for &(id, pos) in other {
            match self.ghosts.get(&id) {
                Some(&ghost) => inputs.push(Input::PlaceGhost(ghost, pos)),
                None => {
                    fresh.push(id);
                    inputs.push(Input::SpawnGhost {
                        kind: Kind::Npc,
                        pos,
                        radius_m: RADIUS,
                        speed_mps: 1.5,
                    });
                }
            }
        }
        let out = self.world.step(&inputs);
        assert_eq!(out.invalid_inputs, 0);
        for (id, ghost) in fresh.into_iter().zip(out.spawned) {
            assert!(self.world.is_ghost(ghost));
            self.ghosts.insert(id, ghost);
        }
        for (id, pos) in other {
            assert_eq!(
                self.world.body(self.ghosts[id]).unwrap().pos,
                *pos,
                "placed exactly"
            );
        }
    }
}

/// Two zones' streams crossing in one room, each zone seeing the other's bodies only as
/// ghosts placed from its last tick (as zones on a bus do): no body of one zone ends a
/// tick inside a body of the other, and both streams get through.
#[test]
fn two_zones_crossing_streams_never_overlap_through_ghosts() {
    let mut north = Zone::new(
        3,
        12,
        |k| Vec2::new(4.0 + 2.0 * k as f32, 2.0),
        |k| Vec2::new(4.0 + 2.0 * k as f32, 28.0),
    );
    let mut west = Zone::new(
        4,
        12,
        |k| Vec2::new(2.0, 5.0 + 2.0 * k as f32),
        |k| Vec2::new(28.0, 5.0 + 2.0 * k as f32),
    );
    let mut deepest = 0.0f32;
    let mut closest = f32::MAX;
    let mut through = 0;
    for _tick in 0..1_200 {
        let (n, w) = (north.positions(), west.positions());
        north.step_with(&w);
        west.step_with(&n);
        let (n, w) = (north.positions(), west.positions());
        for &(_, a) in &n {
            for &(_, b) in &w {
                let gap = (a - b).length() - 2.0 * RADIUS;
                closest = closest.min(gap);
                deepest = deepest.max(-gap / RADIUS);
            }
        }
        through = n.iter().filter(|(_, p)| p.y > 27.5).count()
            + w.iter().filter(|(_, p)| p.x > 27.5).count();
        if through == 24 {
            break;
        }
    }
    assert!(closest < 0.3, "the streams never met ({closest} m)");
    assert!(
        deepest <= 0.01,
        "bodies of the two zones overlapped by {:.1}% of the radius",
        deepest * 100.0
    );
    assert_eq!(through, 24, "both streams through within 60 s");
}

#[test]
fn ghosts_take_no_orders_and_only_ghosts_are_placed() {
    let mut world = World::new(WorldConfig::default(), polygon_mesh(ROOM), 9);
    let spawned = world
        .step(&[
            Input::SpawnGhost {
                kind: Kind::Npc,
                pos: Vec2::new(5.0, 5.0),
                radius_m: RADIUS,
                speed_mps: 1.5,
            },
            npc(10.0, 10.0, RADIUS, Brain::Idle),
            Input::SpawnGhost {
                kind: Kind::Npc,
                pos: Vec2::new(f32::NAN, 5.0),
                radius_m: RADIUS,
                speed_mps: 1.5,
            },
        ])
        .spawned;
    assert_eq!(spawned.len(), 2, "the ghost at NaN is refused");
    let (ghost, body) = (spawned[0], spawned[1]);
    let out = world.step(&[
        Input::MoveTo(ghost, Vec2::new(6.0, 6.0)),
        Input::MoveInDirection(ghost, Vec2::new(1.0, 0.0)),
        Input::Stop(ghost),
        Input::PlaceGhost(body, Vec2::new(5.0, 5.0)),
        Input::PlaceGhost(ghost, Vec2::new(f32::INFINITY, 1.0)),
    ]);
    assert_eq!(out.invalid_inputs, 5);
    // A body placed on the ghost is pushed out; the ghost stays where it was put.
    world.step(&[Input::PlaceGhost(ghost, Vec2::new(10.2, 10.0))]);
    for _ in 0..40 {
        world.step(&[Input::PlaceGhost(ghost, Vec2::new(10.2, 10.0))]);
    }
    assert_eq!(world.body(ghost).unwrap().pos, Vec2::new(10.2, 10.0));
    let gap = (world.body(body).unwrap().pos - Vec2::new(10.2, 10.0)).length() - 2.0 * RADIUS;
    assert!(
        gap > -0.01 * RADIUS,
        "the body was pushed out of the ghost ({gap} m)"
    );
}
