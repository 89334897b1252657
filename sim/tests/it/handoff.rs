//! Handing a body to another world: carried out of one and adopted by another, it walks on
//! as if it had stayed.

use sim::{Brain, Carried, Input, Vec2, World, WorldConfig};

use crate::{grid_mesh, npc};

/// A lone walker crossing den520d, carried to a second world halfway: it takes the same
/// steps there as its twin that stayed, and both arrive.
#[test]
fn a_carried_body_walks_on_as_if_it_had_stayed() {
    let mesh = grid_mesh("den520d.map");
    let mut stay = World::new(WorldConfig::default(), mesh.clone(), 1);
    let mut other = World::new(WorldConfig::default(), mesh, 2);
    let id = stay.step(&[npc(72.0, 96.0, 0.4, Brain::Idle)]).spawned[0];
    stay.step(&[Input::MoveTo(id, Vec2::new(200.0, 200.0))]);
    for _ in 0..100 {
        stay.step(&[]);
    }
    let carried = stay.carry(id).expect("a real body");
    assert!(
        carried.path.len() >= 2,
        "a path across the map: {carried:?}"
    );
    assert!(
        (carried.vel.length() - 1.5).abs() < 0.01,
        "walking: {carried:?}"
    );
    let adopted = other.step(&[Input::Adopt(Box::new(carried))]).spawned[0];
    // The adopting tick moved it already; bring the twin to the same tick.
    stay.step(&[]);
    let mut arrived = false;
    for tick in 0..4_000 {
        let (a, b) = (stay.body(id).unwrap().pos, other.body(adopted).unwrap().pos);
        assert!(
            (a - b).length() < 1e-3,
            "tick {tick}: the twin is at {a:?}, the carried body at {b:?}"
        );
        if other.inspect(adopted).unwrap().goal.is_none() {
            arrived = true;
            break;
        }
        stay.step(&[]);
        other.step(&[]);
    }
    assert!(arrived, "the carried body never arrived");
    assert!((other.body(adopted).unwrap().pos - Vec2::new(200.0, 200.0)).length() < 1.0);
}

/// A body carried while its path was still being searched gets it searched again in its
/// new world, and arrives.
#[test]
fn a_body_carried_before_its_path_came_searches_again() {
    let mesh = grid_mesh("den520d.map");
    let mut from = World::new(WorldConfig::default(), mesh.clone(), 1);
    let mut to = World::new(WorldConfig::default(), mesh, 2);
    let id = from.step(&[npc(72.0, 96.0, 0.4, Brain::Idle)]).spawned[0];
    // The order is taken in this tick's inputs; the search is served after the carry.
    from.apply_inputs(&[Input::MoveTo(id, Vec2::new(74.0, 96.5))]);
    let carried = from.carry(id).unwrap();
    assert!(carried.path.is_empty() && carried.goal.is_some());
    let adopted = to.step(&[Input::Adopt(Box::new(carried))]).spawned[0];
    for _ in 0..400 {
        to.step(&[]);
    }
    assert!((to.body(adopted).unwrap().pos - Vec2::new(74.0, 96.5)).length() < 0.5);
}

/// Unusable numbers in a carried body are refused and counted; nothing is added.
#[test]
fn a_carried_body_with_bad_numbers_is_refused() {
    let mesh = grid_mesh("den520d.map");
    let mut world = World::new(WorldConfig::default(), mesh, 1);
    let id = world.step(&[npc(60.0, 100.0, 0.4, Brain::Wander)]).spawned[0];
    let good = world.carry(id).unwrap();
    let bad: Vec<Carried> = vec![
        Carried {
            pos: Vec2::new(f32::NAN, 1.0),
            ..good.clone()
        },
        Carried {
            radius_m: 0.0,
            ..good.clone()
        },
        Carried {
            radius_m: 1e30,
            ..good.clone()
        },
        Carried {
            path: vec![Vec2::new(1.0, f32::INFINITY)],
            ..good.clone()
        },
        Carried {
            brain: Brain::Patrol(vec![Vec2::new(70.0, 100.0), Vec2::new(f32::NAN, 1.0)]),
            ..good.clone()
        },
    ];
    let inputs: Vec<Input> = bad.into_iter().map(|c| Input::Adopt(Box::new(c))).collect();
    let out = world.step(&inputs);
    assert_eq!(out.invalid_inputs, 5);
    assert!(out.spawned.is_empty());
    assert_eq!(world.bodies().count(), 1);
}
