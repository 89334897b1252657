//! Players pacing across a line through a crowd, as the cluster's border bots do: den520d,
//! wandering NPCs, players spawned within `SPREAD` m of (128, 130) who walk to a point
//! 3–7 m on the other side of x = 128 and back, again and again. A player held up (not
//! 1 m closer in 4 s) picks another point on the same side. Prints, per seed, how many
//! players never crossed and where they stand.
//!
//! `cargo run --release -p sim --example border_jam -- [npcs] [players] [seconds] [seeds]`
//!
//! Environment switches: `JAM_TRACE` (the jam box x 118–138, y 150–176 every 5 s),
//! `JAM_MAP` (a character map of the bodies round it at the end), `JAM_BOX` (its bodies by
//! kind and motion at the end), `JAM_DEBUG` (what each player that never crossed is
//! doing), `JAM_WALLS` (ticks with bodies in walls), `JAM_NO_ANTICIPATION` and
//! `JAM_NO_CONGESTION` (the world's rules off, for comparison).
//!
//! The players here stand in for the cluster benchmark's 200 border bots
//! (`loadtest/cluster-bench.sh`), in one world and without the network: the jam it
//! reproduces, north of the pillar at (131–133, 170–172), is the one that leaves a border
//! bot with no crossing in some runs (docs/benchmarks.md).

// An experiment's setup may panic: that is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use navmesh::{IslandId, NavMesh, NavMeshQuery, Point, Rng};
use navmesh_builder::load::load_map;
use sim::{Brain, EntityId, Input, Kind, Vec2, World, WorldConfig};

const BORDER_X: f32 = 128.0;
const CENTRE: (f32, f32) = (128.0, 130.0);
const SPREAD: f32 = 45.0;

struct Pacer {
    id: EntityId,
    /// +1 heading east, -1 heading west.
    heading: f32,
    target: Vec2,
    best: f32,
    since_best: u32,
    crossings: u32,
}

/// A point 3–7 m past the line within 10 m of `from`'s y, on the island and clear of
/// walls, whose path is at most 3 m longer than the straight line if one of 14 tries is
/// (the shortest path of them otherwise), as the loadtest's border bots pick.
fn target_near(
    mesh: &NavMesh,
    query: &mut NavMeshQuery,
    rng: &mut Rng,
    island: IslandId,
    from: Vec2,
    heading: f32,
) -> Vec2 {
    let start = Point::new(from.x as f64, from.y as f64);
    let mut best: Option<(f64, Vec2)> = None;
    let mut tries = 0;
    for attempt in 0..10_000 {
        let depth = 3.0 + 4.0 * rng.next_f64() as f32;
        // Within 10 m first, wider while nothing there is walkable.
        let spread = 10.0 + attempt as f32 / 20.0;
        let y = from.y + (rng.next_f64() as f32 * 2.0 - 1.0) * spread;
        let p = Point::new((BORDER_X + heading * depth) as f64, y as f64);
        let on_island = mesh.locate(p).is_some_and(|t| mesh.island(t) == island);
        if !on_island || mesh.nearest_wall(p, 0.4).is_some() {
            continue;
        }
        let Ok(path) = query.find_path(mesh, start, p, 0.4) else {
            continue;
        };
        let straight = (p - start).length();
        let here = Vec2::new(p.x as f32, p.y as f32);
        if path.length <= straight + 3.0 {
            return here;
        }
        if best.is_none_or(|(len, _)| path.length < len) {
            best = Some((path.length, here));
        }
        tries += 1;
        if tries == 14 {
            break;
        }
    }
    best.map_or(Vec2::new(BORDER_X + heading * 5.0, from.y), |(_, p)| p)
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let npcs = args.first().copied().unwrap_or(2000);
    let players = args.get(1).copied().unwrap_or(200);
    let seconds = args.get(2).copied().unwrap_or(60);
    let seeds = args.get(3).copied().unwrap_or(6);
    let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../maps/movingai/den520d.map");
    let mesh = Arc::new(load_map(&map).unwrap().mesh);
    // The centre itself is a wall; the island is the one of the open border stretch.
    let centre = Point::new(128.0, 100.0);
    let island = mesh.island(mesh.locate(centre).expect("the centre is walkable"));
    let mut query = NavMeshQuery::new();
    let mut stuck_seeds = 0;
    for seed in 1..=seeds {
        let mut rng = Rng::new(seed);
        let config = WorldConfig {
            anticipation: std::env::var_os("JAM_NO_ANTICIPATION").is_none(),
            congestion_routing: std::env::var_os("JAM_NO_CONGESTION").is_none(),
            corner_margin_m: std::env::var("JAM_CORNER_MARGIN")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(WorldConfig::default().corner_margin_m),
            ..WorldConfig::default()
        };
        let mut world = World::new(config, mesh.clone(), seed);
        // A body of radius 0.4 m walking at 1.5 m/s, the server's.
        let body = |kind, p: Point, brain| Input::Spawn {
            kind,
            pos: Vec2::new(p.x as f32, p.y as f32),
            radius_m: 0.4,
            speed_mps: 1.5,
            brain,
        };
        let mut spawns = Vec::new();
        while spawns.len() < npcs as usize {
            let (p, _) = mesh.random_point(&mut rng).unwrap();
            // Clear of walls, as the server's spawns are.
            if mesh.nearest_wall(p, 0.4).is_some() {
                continue;
            }
            spawns.push(body(Kind::Npc, p, Brain::Wander));
        }
        let mut placed = 0;
        while placed < players {
            let a = rng.next_f64() as f32 * std::f32::consts::TAU;
            let r = SPREAD * (rng.next_f64() as f32).sqrt();
            let p = Point::new(
                (CENTRE.0 + r * a.cos()) as f64,
                (CENTRE.1 + r * a.sin()) as f64,
            );
            let on_island = mesh.locate(p).is_some_and(|t| mesh.island(t) == island);
            if !on_island || mesh.nearest_wall(p, 0.4).is_some() {
                continue;
            }
            spawns.push(body(Kind::Player, p, Brain::Idle));
            placed += 1;
        }
        let ids = world.step(&spawns).spawned;
        let mut pacers: Vec<Pacer> = ids[npcs as usize..]
            .iter()
            .map(|&id| Pacer {
                id,
                heading: 0.0,
                target: Vec2::new(0.0, 0.0),
                best: f32::MAX,
                since_best: 0,
                crossings: 0,
            })
            .collect();
        let (mut worst_pairs, mut in_walls) = (0, 0);
        let mut orders = Vec::new();
        for tick in 0..seconds * 20 {
            orders.clear();
            for p in &mut pacers {
                let at = world.body(p.id).unwrap().pos;
                let side = if at.x < BORDER_X { -1.0 } else { 1.0 };
                let crossed_now =
                    p.heading != 0.0 && side == p.heading && (at.x - BORDER_X).abs() >= 3.0;
                if p.heading == 0.0 || crossed_now {
                    if crossed_now {
                        p.crossings += 1;
                    }
                    p.heading = -side;
                    p.target = target_near(&mesh, &mut query, &mut rng, island, at, p.heading);
                    p.best = f32::MAX;
                    p.since_best = 0;
                    orders.push(Input::MoveTo(p.id, p.target));
                    continue;
                }
                let d = (at - p.target).length();
                if d < p.best - 1.0 {
                    p.best = d;
                    p.since_best = 0;
                } else {
                    p.since_best += 1;
                    if p.since_best >= 80 {
                        p.target = target_near(&mesh, &mut query, &mut rng, island, at, p.heading);
                        p.best = f32::MAX;
                        p.since_best = 0;
                        orders.push(Input::MoveTo(p.id, p.target));
                    }
                }
            }
            let out = world.step(&orders);
            if std::env::var_os("JAM_TRACE").is_some() && tick % 100 == 0 {
                let (mut n, mut pl, mut slow) = (0, 0, 0);
                for b in world.bodies() {
                    if (118.0..138.0).contains(&b.pos.x) && (150.0..176.0).contains(&b.pos.y) {
                        n += 1;
                        pl += usize::from(b.kind == Kind::Player);
                        slow += usize::from(b.motion == sim::Motion::Circling);
                    }
                }
                let crossings: u32 = pacers.iter().map(|p| p.crossings).sum();
                println!(
                    "  t={:>3}s box {n} bodies ({pl} players, {slow} circling), {crossings} crossings, mean speed {:.2}",
                    tick / 20,
                    out.mean_speed_ratio
                );
            }
            if std::env::var_os("JAM_WALLS").is_some() && out.bodies_in_walls > 0 && tick % 20 == 0
            {
                println!(
                    "  tick {tick}: {} in walls, {} pairs",
                    out.bodies_in_walls, out.overlapping_pairs
                );
            }
            if tick > 100 {
                worst_pairs = worst_pairs.max(out.overlapping_pairs);
                in_walls = in_walls.max(out.bodies_in_walls);
            }
        }
        let never: Vec<_> = pacers.iter().filter(|p| p.crossings == 0).collect();
        let total: u32 = pacers.iter().map(|p| p.crossings).sum();
        print!(
            "seed {seed}: {total} crossings, {} never crossed, pairs {worst_pairs}, in walls {in_walls}",
            never.len()
        );
        for p in &never {
            let at = world.body(p.id).unwrap().pos;
            print!(" ({:.1},{:.1})", at.x, at.y);
            if std::env::var_os("JAM_DEBUG").is_some() {
                let d = world.inspect(p.id).unwrap();
                println!(
                    "\n  target {:?} goal {:?} pending {} path {:?} motion {:?}",
                    p.target, d.goal, d.path_pending, d.path, d.view.motion
                );
            }
        }
        println!();
        if std::env::var_os("JAM_MAP").is_some() {
            // 0.5 m cells over x 112-146, y 146-178: P/p player circling/moving, N/n NPC
            // circling/moving, o other motion, # wall.
            let mut rows = vec![vec![' '; 68]; 64];
            for (r, row) in rows.iter_mut().enumerate() {
                for (c, cell) in row.iter_mut().enumerate() {
                    let p = Point::new(112.25 + c as f64 * 0.5, 146.25 + r as f64 * 0.5);
                    if mesh.locate(p).is_none() {
                        *cell = '#';
                    }
                }
            }
            for b in world.bodies() {
                let (c, r) = ((b.pos.x - 112.0) * 2.0, (b.pos.y - 146.0) * 2.0);
                if (0.0..68.0).contains(&c) && (0.0..64.0).contains(&r) {
                    rows[r as usize][c as usize] = match (b.kind, b.motion) {
                        (Kind::Player, sim::Motion::Circling) => 'P',
                        (Kind::Player, sim::Motion::Moving) => 'p',
                        (Kind::Npc, sim::Motion::Circling) => 'N',
                        (Kind::Npc, sim::Motion::Moving) => 'n',
                        _ => 'o',
                    };
                }
            }
            for row in rows {
                println!("  |{}|", row.into_iter().collect::<String>());
            }
        }
        if std::env::var_os("JAM_BOX").is_some() {
            let mut counts = std::collections::BTreeMap::new();
            for b in world.bodies() {
                if (118.0..138.0).contains(&b.pos.x) && (150.0..176.0).contains(&b.pos.y) {
                    *counts
                        .entry(format!("{:?} {:?}", b.kind, b.motion))
                        .or_insert(0) += 1;
                }
            }
            println!("  jam box: {counts:?}");
        }
        if !never.is_empty() {
            stuck_seeds += 1;
        }
    }
    println!("{stuck_seeds} of {seeds} seeds left a player that never crossed");
}
