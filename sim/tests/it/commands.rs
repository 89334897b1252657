//! What a player's order or a spawn does near walls, and an order repeated every tick.

use sim::{Input, Vec2, World, WorldConfig};

use crate::{grid_mesh, player, polygon_mesh};

fn arena() -> std::sync::Arc<navmesh::NavMesh> {
    polygon_mesh(include_str!("../../../maps/arena.json"))
}

/// What the server does with a click: the nearest walkable point, in f32.
fn clicked(mesh: &navmesh::NavMesh, x: f32, y: f32) -> Vec2 {
    let wanted = navmesh::Point::new(f64::from(x), f64::from(y));
    let (goal, _) = mesh.nearest_point(wanted, 1_000.0).unwrap();
    Vec2::new(goal.x as f32, goal.y as f32)
}

/// A click just outside the corridor's lower wall (y = 14.4, which f32 does not hold
/// exactly: the snapped point, rounded, is a hair outside the mesh): the character walks
/// to the nearest walkable point it can stand on, the order is not dropped.
#[test]
fn an_order_to_a_point_in_a_wall_walks_to_the_nearest_walkable_point() {
    let mesh = arena();
    let mut world = World::new(WorldConfig::default(), mesh.clone(), 1);
    let me = world.step(&[player(20.0, 15.0, 1.5)]).spawned[0];
    world.step(&[Input::MoveTo(me, clicked(&mesh, 28.0, 14.0))]);
    for _ in 0..200 {
        world.step(&[]);
    }
    let at = world.body(me).unwrap().pos;
    assert!(
        (at - Vec2::new(28.0, 14.8)).length() < 1.0,
        "stands at {at:?}: {:?}",
        world.inspect(me)
    );
}

/// A body asked for off the walkable area (beyond a wall) is placed clear of the wall,
/// not on its line half inside it, where an idle body stayed for good.
#[test]
fn a_body_spawned_off_the_walkable_area_stands_clear_of_the_walls() {
    let mesh = arena();
    let mut world = World::new(WorldConfig::default(), mesh, 1);
    let out = world.step(&[player(28.0, 14.0, 1.5)]);
    assert_eq!(
        out.bodies_in_walls,
        0,
        "{:?}",
        world.body(out.spawned[0]).unwrap().pos
    );
    for _ in 0..40 {
        assert_eq!(world.step(&[]).bodies_in_walls, 0);
    }
}

/// 300 players on den520d, each ordered once to a random point, or sent the same order
/// every tick (a held button): the repeats cost no new searches and the bodies walk as
/// far as with one order.
#[test]
fn the_same_order_every_tick_costs_no_new_search() {
    let mesh = grid_mesh("den520d.map");
    let run = |repeat: bool| {
        let mut rng = navmesh::Rng::new(7);
        let mut world = World::new(WorldConfig::default(), mesh.clone(), 1);
        let (mut spawns, mut goals) = (Vec::new(), Vec::new());
        for _ in 0..300 {
            let (p, _) = mesh.random_point(&mut rng).unwrap();
            spawns.push(player(p.x as f32, p.y as f32, 1.5));
            let (g, _) = mesh.random_point(&mut rng).unwrap();
            goals.push(Vec2::new(g.x as f32, g.y as f32));
        }
        let ids = world.step(&spawns).spawned;
        let start: Vec<Vec2> = ids.iter().map(|&id| world.body(id).unwrap().pos).collect();
        let orders: Vec<Input> = (ids.iter().zip(&goals))
            .map(|(&id, &g)| Input::MoveTo(id, g))
            .collect();
        let mut nodes = 0;
        for t in 0..100 {
            let inputs = if t == 0 || repeat { &orders[..] } else { &[] };
            nodes += world.step(inputs).path_nodes;
        }
        let walked: f32 = (ids.iter().zip(&start))
            .map(|(&id, &s)| (world.body(id).unwrap().pos - s).length())
            .sum();
        (nodes, walked / ids.len() as f32)
    };
    let (once_nodes, once_walked) = run(false);
    let (repeated_nodes, repeated_walked) = run(true);
    assert!(
        repeated_nodes <= once_nodes + once_nodes / 10,
        "{repeated_nodes} search nodes against {once_nodes}"
    );
    assert!(
        repeated_walked > 0.9 * once_walked,
        "{repeated_walked} m against {once_walked} m"
    );
}
