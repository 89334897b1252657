//! Streams crossing in the open and meeting in a corridor: the anticipation scenarios of
//! the crowd issue. Each runs with `WorldConfig::anticipation` on (the default) and is
//! checked against the same run with it off, which must do worse.

use sim::{BodyView, Brain, EntityId, Input, Kind, Vec2, World, WorldConfig};

use crate::{npc, polygon_mesh};

/// One walker: where it starts and where it leaves the world.
struct Walker {
    from: Vec2,
    to: Vec2,
}

/// What a run of streams did.
#[derive(Debug)]
struct Run {
    /// Walkers that reached their exit.
    through: usize,
    /// The tick the last one did (or the tick limit).
    last_tick: u64,
    /// The deepest overlap after any tick, fraction of the radius.
    max_overlap: f32,
    /// Most pairs overlapping beyond 1% of the radius after any tick.
    overlapping_pairs: usize,
    /// Bodies in walls after any tick, at most.
    in_walls: usize,
    /// Mean speed over desired speed, averaged over the ticks until the last exit.
    speed_ratio: f32,
    /// Each walker's positions, every tick it lived.
    tracks: Vec<Vec<Vec2>>,
}

/// Spawns `walkers` in `room` (polygon JSON), orders each to its exit, and steps until
/// all are through (each leaves the world within 0.5 m of its exit) or `max_ticks`.
fn run_streams(room: &str, walkers: &[Walker], anticipation: bool, max_ticks: u64) -> Run {
    let config = WorldConfig {
        anticipation,
        ..WorldConfig::default()
    };
    let mut world = World::new(config, polygon_mesh(room), 5);
    let spawns: Vec<Input> = walkers
        .iter()
        .map(|w| npc(w.from.x, w.from.y, 0.4, Brain::Idle))
        .collect();
    let ids: Vec<EntityId> = world.step(&spawns).spawned;
    assert_eq!(ids.len(), walkers.len());
    let orders: Vec<Input> = ids
        .iter()
        .zip(walkers)
        .map(|(&id, w)| Input::MoveTo(id, w.to))
        .collect();
    world.step(&orders);
    let mut run = Run {
        through: 0,
        last_tick: max_ticks,
        max_overlap: 0.0,
        overlapping_pairs: 0,
        in_walls: 0,
        speed_ratio: 0.0,
        tracks: vec![Vec::new(); walkers.len()],
    };
    let mut ratio_sum = 0.0;
    let mut gone = vec![false; walkers.len()];
    for tick in 0..max_ticks {
        let out = world.step(&[]);
        run.max_overlap = run.max_overlap.max(out.max_overlap);
        run.overlapping_pairs = run.overlapping_pairs.max(out.overlapping_pairs);
        run.in_walls = run.in_walls.max(out.bodies_in_walls);
        ratio_sum += out.mean_speed_ratio;
        let mut exits = Vec::new();
        for (k, &id) in ids.iter().enumerate() {
            let Some(BodyView { pos, .. }) = world.body(id) else {
                continue;
            };
            run.tracks[k].push(pos);
            if (pos - walkers[k].to).length() <= 0.5 && !gone[k] {
                gone[k] = true;
                exits.push(Input::Despawn(id));
            }
        }
        if !exits.is_empty() {
            run.through += exits.len();
            world.step(&exits);
        }
        if run.through == walkers.len() {
            run.last_tick = tick + 1;
            break;
        }
    }
    run.speed_ratio = ratio_sum / run.last_tick as f32;
    run
}

/// An open room, `side` metres square.
fn room(side: u32) -> String {
    format!(r#"{{"regions": [{{"outer": [[0, 0], [{side}, 0], [{side}, {side}], [0, {side}]]}}]}}"#)
}

/// `count` walkers in a block of rows 1 m apart across `width` metres, starting `depth`
/// metres deep behind `start` and walking along `dir` (a unit axis) to as far beyond
/// `start` as `length`.
fn stream(count: usize, start: Vec2, dir: Vec2, width: f32, length: f32) -> Vec<Walker> {
    let across = dir.perp();
    let per_row = (width / 1.0).floor().max(1.0) as usize;
    (0..count)
        .map(|k| {
            let (row, col) = ((k / per_row) as f32, (k % per_row) as f32);
            let side = (col - (per_row as f32 - 1.0) / 2.0) * 1.0;
            let from = start - dir * (row * 1.0) + across * side;
            let to = start + dir * length + across * side;
            Walker { from, to }
        })
        .collect()
}

/// What a crossing run must show: everyone through by `by_tick`, no overlap beyond 1% of
/// the radius and no body in a wall after any tick.
fn check_through(run: &Run, walkers: usize, by_tick: u64) -> Result<(), String> {
    if run.max_overlap > 0.01 || run.overlapping_pairs > 0 {
        return Err(format!(
            "overlap {} of the radius, {} pairs",
            run.max_overlap, run.overlapping_pairs
        ));
    }
    if run.in_walls > 0 {
        return Err(format!("{} bodies in walls", run.in_walls));
    }
    if run.through < walkers || run.last_tick > by_tick {
        return Err(format!(
            "{} of {walkers} through by tick {}, wanted all by tick {by_tick}",
            run.through, run.last_tick
        ));
    }
    Ok(())
}

/// Runs the scenario with anticipation on and off and prints both.
fn both(what: &str, room: &str, walkers: &[Walker], max_ticks: u64) -> (Run, Run) {
    let on = run_streams(room, walkers, true, max_ticks);
    let off = run_streams(room, walkers, false, max_ticks);
    for (name, r) in [("on", &on), ("off", &off)] {
        eprintln!(
            "{what}, anticipation {name}: {} of {} through by tick {}, mean speed {:.3}, \
             overlap {:.4}, pairs {}",
            r.through,
            walkers.len(),
            r.last_tick,
            r.speed_ratio,
            r.max_overlap,
            r.overlapping_pairs
        );
    }
    (on, off)
}

#[test]
fn perpendicular_streams_of_100_cross_in_an_open_room() {
    // Eastbound and northbound, 100 each in blocks 10 m wide and 10 m deep, both fronts
    // 18 m from the middle of a 60 m room, so they meet there head to flank.
    let mut walkers = stream(100, Vec2::new(12.0, 30.0), Vec2::new(1.0, 0.0), 10.0, 40.0);
    walkers.extend(stream(
        100,
        Vec2::new(30.0, 12.0),
        Vec2::new(0.0, 1.0),
        10.0,
        40.0,
    ));
    let (on, off) = both("perpendicular", &room(60), &walkers, 2400);
    // The last walker has 49 m to go, 33 s alone; 75 s for the crowd.
    let by_tick = 1500;
    if let Err(e) = check_through(&on, 200, by_tick) {
        panic!("perpendicular streams: {e}");
    }
    // The rule is what makes the difference: without it the same streams take longer.
    assert!(
        check_through(&off, 200, by_tick).is_err(),
        "passes without anticipation"
    );
}

#[test]
fn four_streams_cross_in_an_open_room() {
    let mut walkers = Vec::new();
    for (start, dir) in [
        (Vec2::new(12.0, 30.0), Vec2::new(1.0, 0.0)),
        (Vec2::new(30.0, 12.0), Vec2::new(0.0, 1.0)),
        (Vec2::new(48.0, 30.0), Vec2::new(-1.0, 0.0)),
        (Vec2::new(30.0, 48.0), Vec2::new(0.0, -1.0)),
    ] {
        walkers.extend(stream(50, start, dir, 10.0, 36.0));
    }
    let (on, off) = both("four-way", &room(60), &walkers, 2400);
    // The last walker has 40 m to go, 27 s alone; 67.5 s for the crowd.
    let by_tick = 1350;
    if let Err(e) = check_through(&on, 200, by_tick) {
        panic!("four streams: {e}");
    }
    assert!(
        check_through(&off, 200, by_tick).is_err(),
        "passes without anticipation"
    );
}

#[test]
fn opposing_streams_in_a_corridor_form_lanes() {
    let corridor = r#"{"regions": [{"outer": [[0, 0], [40, 0], [40, 6], [0, 6]]}]}"#;
    let mut walkers = stream(40, Vec2::new(9.0, 3.0), Vec2::new(1.0, 0.0), 5.0, 29.0);
    walkers.extend(stream(
        40,
        Vec2::new(31.0, 3.0),
        Vec2::new(-1.0, 0.0),
        5.0,
        29.0,
    ));
    let (on, off) = both("corridor", corridor, &walkers, 2400);
    // Lanes: most walkers pass the middle of the corridor on their own right-hand half,
    // and the two streams get through each other, all 80 within 95 s (the last walker has
    // 36 m to go, 24 s alone).
    let lanes = |run: &Run| {
        let (own, all) = lane_share(run, 40);
        eprintln!("corridor: {own} of {all} walkers crossed the middle on their right");
        if own * 10 < all * 7 || all < 80 {
            return Err(format!("{own} of {all} on their right, of 80"));
        }
        check_through(run, 80, 1900)
    };
    if let Err(e) = lanes(&on) {
        panic!("corridor: {e}");
    }
    assert!(lanes(&off).is_err(), "passes without anticipation");
}

/// How many walkers first crossed the corridor's middle (x = 20) on their own right-hand
/// half (eastbound: y < 3; westbound: y > 3), out of those that crossed it. The first
/// `east` walkers walk east.
fn lane_share(run: &Run, east: usize) -> (usize, usize) {
    let (mut own, mut all) = (0, 0);
    for (k, track) in run.tracks.iter().enumerate() {
        if let Some(w) = track
            .windows(2)
            .find(|w| (w[0].x - 20.0) * (w[1].x - 20.0) <= 0.0 && w[0].x != w[1].x)
        {
            all += 1;
            let right = if k < east { w[1].y < 3.0 } else { w[1].y > 3.0 };
            own += usize::from(right);
        }
    }
    (own, all)
}

/// How far, in degrees, each of two bodies walking straight at each other (4 m apart,
/// 0.3 m off a head-on line, in an open room) turned its wanted heading, at most, over
/// the first half second: long before they touch.
fn turns_walking_at_each_other(first: Kind, second: Kind, anticipation: bool) -> [f32; 2] {
    let config = WorldConfig {
        anticipation,
        ..WorldConfig::default()
    };
    let mut world = World::new(config, polygon_mesh(OPEN_ROOM), 5);
    let body = |kind, x: f32, y: f32| Input::Spawn {
        kind,
        pos: Vec2::new(x, y),
        radius_m: 0.4,
        speed_mps: 1.5,
        brain: Brain::Idle,
    };
    let ids = world
        .step(&[body(first, 10.0, 10.0), body(second, 14.0, 10.3)])
        .spawned;
    let goals = [Vec2::new(30.0, 10.0), Vec2::new(1.0, 10.3)];
    world.step(&[
        Input::MoveTo(ids[0], goals[0]),
        Input::MoveTo(ids[1], goals[1]),
    ]);
    let mut turns = [0.0f32; 2];
    for _ in 0..10 {
        world.step(&[]);
        for k in 0..2 {
            let detail = world.inspect(ids[k]).unwrap();
            let (want, straight) = (detail.wanted_vel, goals[k] - detail.view.pos);
            if want.length() > 0.0 {
                let angle = straight
                    .perp_dot(want)
                    .atan2(straight.dot(want))
                    .to_degrees();
                turns[k] = turns[k].max(angle.abs());
            }
        }
    }
    turns
}

/// A 40 × 20 m room with nothing in it.
const OPEN_ROOM: &str = r#"{"regions": [{"outer": [[0, 0], [40, 0], [40, 20], [0, 20]]}]}"#;

/// A player's character anticipates players only: walking at an NPC, it turns no more
/// than with anticipation off (where it only keeps right, as every body does), and the
/// NPC, which anticipates it, turns aside. An NPC in the player's place, and a player
/// walking at a player, turn further with anticipation than without.
#[test]
fn a_player_keeps_the_heading_its_client_asked_for_and_npcs_make_way() {
    use Kind::{Npc, Player};
    let turns = |a, b| {
        (
            turns_walking_at_each_other(a, b, true),
            turns_walking_at_each_other(a, b, false),
        )
    };
    let (player_npc, player_npc_off) = turns(Player, Npc);
    let (npc_npc, npc_npc_off) = turns(Npc, Npc);
    let (player_player, player_player_off) = turns(Player, Player);
    eprintln!(
        "degrees turned, anticipation on / off: player at NPC {player_npc:?} / \
         {player_npc_off:?}, NPC at NPC {npc_npc:?} / {npc_npc_off:?}, player at player \
         {player_player:?} / {player_player_off:?}"
    );
    assert!(
        player_npc[0] <= player_npc_off[0] + 0.5,
        "the player turned for the NPC"
    );
    assert!(
        player_npc[1] > player_npc_off[1] + 5.0,
        "the NPC made no way"
    );
    assert!(
        npc_npc[0] > npc_npc_off[0] + 5.0,
        "an NPC did not anticipate"
    );
    assert!(
        player_player[0] > player_player_off[0] + 5.0,
        "a player did not anticipate a player"
    );
}
