//! Congestion-aware paths (`WorldConfig::congestion_routing`): a path asked for while a
//! jam blocks the short way goes round it, and the walker gets through sooner than on
//! the short way; a walker already on the short way when the jam forms takes a detour;
//! with the rule off, both walk into the jam. A player walks its shortest path either
//! way.

use sim::{Brain, EntityId, Input, Kind, Vec2, World, WorldConfig};

use crate::{npc, polygon_mesh};

/// A 40 × 24 m room with a wall across its middle (x 18–22) from y 3 to y 21: a 3 m way
/// below it and a 3 m way above it.
const ROOM: &str = r#"{"regions": [{"outer": [[0, 0], [40, 0], [40, 24], [0, 24]],
    "holes": [[[18, 3], [18, 21], [22, 21], [22, 3]]]}]}"#;

/// What the walker did.
#[derive(Debug)]
struct Walk {
    /// The highest y of its path when it got it.
    path_top: f32,
    /// The highest y of any path it had.
    highest_path: f32,
    /// The tick it arrived, if it did.
    arrived: Option<u64>,
    /// The most pairs overlapping beyond 1% of the radius, and bodies in walls, after any
    /// tick.
    overlapping_pairs: usize,
    in_walls: usize,
}

/// Jams the way below the wall with 60 bodies pressing toward one point in it, and sends
/// a walker from (4, 7) to (36, 7), whose short way is below the wall: `after_ticks`
/// later, or (0) together with the jam's bodies, before any of them crawls. The walker is
/// an NPC (or, with [`walk_past_a_jam_as`], a body of another kind).
fn walk_past_a_jam(routing: bool, after_ticks: u64) -> Walk {
    walk_past_a_jam_as(routing, after_ticks, Kind::Npc)
}

fn walk_past_a_jam_as(routing: bool, after_ticks: u64, kind: Kind) -> Walk {
    let config = WorldConfig {
        congestion_routing: routing,
        ..WorldConfig::default()
    };
    let mut world = World::new(config, polygon_mesh(ROOM), 3);
    // The jam: two blocks of 30, one each side of the way below, all ordered to its middle.
    let mut spawns = Vec::new();
    for k in 0..60 {
        let (row, col) = ((k % 30) / 3, k % 3);
        let x = if k < 30 {
            9.5 + row as f32 * 0.9
        } else {
            30.5 - row as f32 * 0.9
        };
        spawns.push(npc(x, 1.0 + col as f32 * 0.9, 0.4, Brain::Idle));
    }
    let mut walker_spawn = npc(4.0, 7.0, 0.4, Brain::Idle);
    if let Input::Spawn { kind: k, .. } = &mut walker_spawn {
        *k = kind;
    }
    spawns.push(walker_spawn);
    let ids: Vec<EntityId> = world.step(&spawns).spawned;
    assert_eq!(ids.len(), 61);
    let orders: Vec<Input> = ids[..60]
        .iter()
        .map(|&id| Input::MoveTo(id, Vec2::new(20.0, 1.5)))
        .collect();
    let walker = ids[60];
    let goal = Vec2::new(36.0, 7.0);
    if after_ticks == 0 {
        let mut orders = orders;
        orders.push(Input::MoveTo(walker, goal));
        world.step(&orders);
    } else {
        world.step(&orders);
        for _ in 0..after_ticks {
            world.step(&[]);
        }
        world.step(&[Input::MoveTo(walker, goal)]);
    }
    let mut path_top = f32::MIN;
    let mut walk = Walk {
        path_top: f32::NAN,
        highest_path: f32::NAN,
        arrived: None,
        overlapping_pairs: 0,
        in_walls: 0,
    };
    for tick in 0..1200 {
        let out = world.step(&[]);
        walk.overlapping_pairs = walk.overlapping_pairs.max(out.overlapping_pairs);
        walk.in_walls = walk.in_walls.max(out.bodies_in_walls);
        let path = world.path_of(walker);
        if walk.path_top.is_nan() && path.len() > 1 {
            walk.path_top = path.iter().map(|p| p.y).fold(f32::MIN, f32::max);
        }
        path_top = path.iter().map(|p| p.y).fold(path_top, f32::max);
        let at = world.body(walker).map(|b| b.pos);
        if at.is_some_and(|p| (p - goal).length() <= 0.5) {
            walk.arrived = Some(tick);
            break;
        }
    }
    walk.highest_path = path_top;
    walk
}

#[test]
fn a_path_asked_for_past_a_jam_goes_round_it() {
    let on = walk_past_a_jam(true, 60);
    let off = walk_past_a_jam(false, 60);
    eprintln!("routing on: {on:?}\nrouting off: {off:?}");
    for walk in [&on, &off] {
        assert_eq!(walk.overlapping_pairs, 0, "{walk:?}");
        assert_eq!(walk.in_walls, 0, "{walk:?}");
    }
    // On: the path goes above the wall, and the walker arrives within the run's 60 s (the
    // way above is 47 m, 31 s alone; it passes the jam's edge).
    assert!(on.path_top > 21.0, "{on:?}");
    let on_arrived = on
        .arrived
        .expect("the walker did not arrive with routing on");
    // Off: the shortest path leads below, into the jam, and the walker is later or not
    // through at all.
    assert!(off.path_top < 21.0, "{off:?}");
    assert!(off.arrived.is_none_or(|t| t > on_arrived), "{off:?}");
}

#[test]
fn a_walker_on_its_way_when_a_jam_forms_ahead_takes_a_detour() {
    let on = walk_past_a_jam(true, 0);
    let off = walk_past_a_jam(false, 0);
    eprintln!("routing on: {on:?}\nrouting off: {off:?}");
    for walk in [&on, &off] {
        assert_eq!(walk.overlapping_pairs, 0, "{walk:?}");
        assert_eq!(walk.in_walls, 0, "{walk:?}");
        // Ordered before anyone crawled, both first get the short way below the wall.
        assert!(walk.path_top < 21.0, "{walk:?}");
    }
    // On: a later path goes above the wall, and the walker arrives.
    assert!(on.highest_path > 21.0, "{on:?}");
    let on_arrived = on
        .arrived
        .expect("the walker did not arrive with routing on");
    // Off: it keeps the way below, into the jam, and is later or not through at all.
    assert!(off.highest_path < 21.0, "{off:?}");
    assert!(off.arrived.is_none_or(|t| t > on_arrived), "{off:?}");
}

#[test]
fn a_player_walks_its_shortest_path_into_a_jam_with_routing_on() {
    for after_ticks in [60, 0] {
        let player = walk_past_a_jam_as(true, after_ticks, Kind::Player);
        eprintln!("player, ordered after {after_ticks} ticks: {player:?}");
        assert_eq!(player.overlapping_pairs, 0, "{player:?}");
        assert_eq!(player.in_walls, 0, "{player:?}");
        // Neither asked for nor given a way round: every path it had stays below the wall.
        assert!(player.highest_path < 21.0, "{player:?}");
    }
}
