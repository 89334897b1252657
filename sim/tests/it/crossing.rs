//! Streams crossing in the open and meeting in a corridor: the anticipation scenarios of
//! the crowd issue. Each runs with `WorldConfig::anticipation` on (the default) and is
//! checked against the same run with it off, which must do worse.

use sim::{BodyView, Brain, EntityId, Input, Vec2, World, WorldConfig};

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

/// The checks every crossing run must pass whatever the rules: no overlap, no wall.
fn assert_clean(run: &Run, what: &str) {
    assert!(
        run.max_overlap <= 0.01 && run.overlapping_pairs == 0,
        "{what}: overlap {} of the radius, {} pairs",
        run.max_overlap,
        run.overlapping_pairs
    );
    assert_eq!(run.in_walls, 0, "{what}: a body in a wall");
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
    assert_clean(&on, "perpendicular");
    assert_eq!(on.through, 200, "{on:?}");
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
    assert_clean(&on, "four-way");
    assert_eq!(on.through, 200);
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
    for (name, r) in [("on", &on), ("off", &off)] {
        let (own, all) = lane_share(r, 40);
        eprintln!(
            "corridor, anticipation {name}: {own} of {all} crossings of x = 20 on their right, \
             {:.2} lanes in the middle on average",
            mean_lanes(r, 40)
        );
    }
    assert_clean(&on, "corridor");
    assert_eq!(on.through, 80);
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

/// The mean number of lanes in the corridor's middle (1.5 m either side of x = 20) over
/// the ticks where at least three bodies of each stream are there: the bodies there
/// sorted across the corridor, a lane is a run of neighbours walking the same way.
fn mean_lanes(run: &Run, east: usize) -> f32 {
    let (mut sum, mut ticks) = (0usize, 0usize);
    let longest = run.tracks.iter().map(Vec::len).max().unwrap_or(0);
    let mut there: Vec<(f32, bool)> = Vec::new();
    for t in 0..longest {
        there.clear();
        for (k, track) in run.tracks.iter().enumerate() {
            if let Some(p) = track.get(t)
                && (p.x - 20.0).abs() <= 1.5
            {
                there.push((p.y, k < east));
            }
        }
        let eastbound = there.iter().filter(|b| b.1).count();
        if eastbound < 3 || there.len() - eastbound < 3 {
            continue;
        }
        there.sort_by(|a, b| a.0.total_cmp(&b.0));
        sum += 1 + there.windows(2).filter(|w| w[0].1 != w[1].1).count();
        ticks += 1;
    }
    sum as f32 / ticks.max(1) as f32
}
