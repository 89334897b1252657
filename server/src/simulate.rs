//! `server simulate`: the world run headless, as fast as possible, with a real clock.
//!
//! The first tick's inputs spawn every body: NPCs (`Brain::Wander`) and player characters
//! (`Brain::Idle`) at uniformly random walkable points kept clear of walls and of each
//! other where there is room. Every few simulated seconds each player gets a `MoveTo` to a
//! random point of its own island, as a client would send. Each tick is timed around
//! [`World::step_timed`], and the world's phases with a [`PhaseClock`] on
//! [`Instant`].

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use navmesh::{IslandId, Point, Rng};
use sim::{Brain, EntityId, Input, Kind, PhaseClock, Vec2, World, WorldConfig};

use crate::figures::{Setup, Tally, ticks_per_second};
use crate::progress::Progress;
use crate::sample::SpawnPlacer;
use crate::svg::{JamMap, render_frame, render_jams};
use gate::Gate;
use navmesh_builder::load::load_map;

mod gate;

/// Most NPCs, and most players, one run accepts.
const MAX_BODIES: u64 = 1_000_000;
/// Largest `--path-budget` accepted, node expansions per tick.
const MAX_PATH_BUDGET: u64 = 100_000_000;
/// Longest run accepted, simulated seconds (one day).
const MAX_SECONDS: f64 = 86_400.0;
/// NPC and player body radius, metres.
const RADIUS_M: f32 = 0.4;
/// NPC walking speed, metres per second.
const NPC_SPEED_MPS: f32 = 1.5;
/// Player walking speed, metres per second.
const PLAYER_SPEED_MPS: f32 = 1.5;
/// A player's next walk order comes this many ticks after the last (2 to 5 s).
const PLAYER_ORDER_TICKS: (u64, u64) = (40, 100);

/// The command's arguments.
pub struct SimulateArgs {
    /// Navmesh file or map.
    pub map: PathBuf,
    /// NPCs to spawn.
    pub npcs: u64,
    /// Simulated seconds.
    pub seconds: f64,
    /// Seed of this program's generator and of the world's.
    pub seed: u64,
    /// Player characters to spawn.
    pub players: u64,
    /// Path search budget per tick (node expansions); `None` keeps the world's default.
    pub path_budget: Option<u64>,
    /// Path budget per body per tick; `None` keeps the world's default.
    pub path_budget_per_body: Option<f32>,
    /// Answer path requests through the mesh's corner graph.
    pub corner_graph: bool,
    /// JSON report path.
    pub report: Option<PathBuf>,
    /// SVG picture path.
    pub svg: Option<PathBuf>,
    /// Jam picture path (where NPCs crawled, over the run).
    pub jam_svg: Option<PathBuf>,
    /// Per-tick CSV path (tick and phase times, paths served and waiting, circling).
    pub ticks_csv: Option<PathBuf>,
    /// A segment `X0,Y0,X1,Y1` whose crossings are counted each way (see `gate`).
    pub gate: Option<String>,
    /// Whether the world anticipates before contact (`WorldConfig::anticipation`).
    pub anticipation: bool,
    /// Whether paths avoid congestion (`WorldConfig::congestion_routing`).
    pub congestion_routing: bool,
    /// Seconds between one body's detours (`WorldConfig::detour_every_secs`); `None`
    /// keeps the world's default.
    pub detour_every_secs: Option<f32>,
}

/// The phase clock: time since the run started, from [`Instant`].
struct WallClock(Instant);

impl PhaseClock for WallClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A player character and when it gets its next order.
struct Player {
    id: EntityId,
    island: IslandId,
    next_order: u64,
}

/// Checks the numbers and returns the number of ticks to run.
fn check_args(args: &SimulateArgs) -> Result<u64> {
    ensure!(
        args.npcs <= MAX_BODIES,
        "--npcs must be at most {MAX_BODIES}, got {}",
        args.npcs
    );
    ensure!(
        args.players <= MAX_BODIES,
        "--players must be at most {MAX_BODIES}, got {}",
        args.players
    );
    if let Some(budget) = args.path_budget {
        ensure!(
            (1..=MAX_PATH_BUDGET).contains(&budget),
            "--path-budget must be between 1 and {MAX_PATH_BUDGET}, got {budget}"
        );
    }
    if let Some(per_body) = args.path_budget_per_body {
        ensure!(
            (0.0..=1000.0).contains(&per_body),
            "--path-budget-per-body must be between 0 and 1000, got {per_body}"
        );
    }
    if let Some(every) = args.detour_every_secs {
        ensure!(
            every.is_finite() && (0.0..=MAX_SECONDS as f32).contains(&every),
            "--detour-every-secs must be a finite number from 0 to {MAX_SECONDS}, got {every}"
        );
    }
    let s = args.seconds;
    ensure!(
        s.is_finite() && s > 0.0 && s <= MAX_SECONDS,
        "--seconds must be a finite number above 0 and at most {MAX_SECONDS}, got {s}"
    );
    Ok(((s * ticks_per_second()).round() as u64).max(1))
}

/// Creates an output file now, so a bad path fails before the run rather than after it.
fn create(path: &Option<PathBuf>) -> Result<Option<(File, &Path)>> {
    path.as_deref()
        .map(|p| {
            File::create(p)
                .with_context(|| format!("cannot write {}", p.display()))
                .map(|f| (f, p))
        })
        .transpose()
}

fn write_out(out: Option<(File, &Path)>, text: &str) -> Result<()> {
    if let Some((mut file, path)) = out {
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Runs the command: loads the map, runs the world, prints the table, writes the files.
pub fn run(args: &SimulateArgs) -> Result<()> {
    let ticks = check_args(args)?;
    let mut gate = match &args.gate {
        Some(text) => Some(Gate::parse(text).context("--gate")?),
        None => None,
    };
    let loaded = load_map(&args.map)?;
    let map_origin = loaded.to_string();
    let report_file = create(&args.report)?;
    let svg_file = create(&args.svg)?;
    let jam_file = create(&args.jam_svg)?;
    let mut ticks_file = create(&args.ticks_csv)?.map(|(f, p)| (std::io::BufWriter::new(f), p));
    if let Some((f, p)) = &mut ticks_file {
        let names: Vec<&str> = sim::PhaseTimes::default()
            .named()
            .iter()
            .map(|&(n, _)| n)
            .collect();
        writeln!(
            f,
            "tick,tick_ms,{},paths_served,paths_waiting,circling_bodies,path_nodes",
            names.join(",")
        )
        .with_context(|| format!("cannot write {}", p.display()))?;
    }
    let mesh = Arc::new(loaded.mesh);
    let walkable_area = mesh.walkable_area();
    if walkable_area.is_nan() || walkable_area <= 0.0 {
        bail!("{}: the mesh has no walkable area", args.map.display());
    }

    // Spawns, all in the first tick.
    let mut rng = Rng::new(args.seed);
    let mut placer = SpawnPlacer::new(&mesh, f64::from(RADIUS_M));
    let total = args.npcs + args.players;
    let mut spawns = Vec::with_capacity(total as usize);
    let mut player_islands = Vec::with_capacity(args.players as usize);
    for i in 0..total {
        let Some((p, island)) = placer.place(&mut rng) else {
            bail!("{}: the mesh has no walkable area", args.map.display());
        };
        let npc = i < args.npcs;
        if !npc {
            player_islands.push(island);
        }
        spawns.push(Input::Spawn {
            kind: if npc { Kind::Npc } else { Kind::Player },
            pos: to_vec(p),
            radius_m: RADIUS_M,
            speed_mps: if npc { NPC_SPEED_MPS } else { PLAYER_SPEED_MPS },
            brain: if npc { Brain::Wander } else { Brain::Idle },
        });
    }

    let mut config = WorldConfig::default();
    if let Some(budget) = args.path_budget {
        config.path_budget_per_tick = budget as usize;
    }
    if let Some(per_body) = args.path_budget_per_body {
        config.path_budget_per_body = per_body;
    }
    config.path_corner_graph = args.corner_graph;
    config.anticipation = args.anticipation;
    config.congestion_routing = args.congestion_routing;
    if let Some(every) = args.detour_every_secs {
        config.detour_every_secs = every;
    }
    let path_budget = config.path_budget_per_tick;
    let path_budget_per_body = config.path_budget_per_body;
    let mut world = World::new(config, Arc::clone(&mesh), args.seed);
    let clock = WallClock(Instant::now());
    let mut tally = Tally::with_capacity(ticks as usize);
    let mut progress = Progress::new(ticks);
    let mut players: Vec<Player> = Vec::new();
    let mut inputs: Vec<Input> = Vec::new();
    let mut jams = jam_file.is_some().then(|| JamMap::new(&mesh));
    for k in 0..ticks {
        inputs.clear();
        if k == 0 {
            inputs.append(&mut spawns);
        }
        for player in &mut players {
            if player.next_order <= k {
                if let Some((goal, _)) = mesh.random_point_on_island(player.island, &mut rng) {
                    inputs.push(Input::MoveTo(player.id, to_vec(goal)));
                }
                player.next_order = k + rng.range(PLAYER_ORDER_TICKS.0, PLAYER_ORDER_TICKS.1);
            }
        }
        let start = Instant::now();
        let out = world.step_timed(&inputs, &clock);
        let elapsed = start.elapsed();
        if k == 0 {
            ensure!(
                out.spawned.len() as u64 == total,
                "the world spawned {} of {total} bodies",
                out.spawned.len()
            );
            players = out.spawned[args.npcs as usize..]
                .iter()
                .zip(&player_islands)
                .map(|(&id, &island)| Player {
                    id,
                    island,
                    next_order: 1,
                })
                .collect();
        }
        if let Some((f, p)) = &mut ticks_file {
            let mut line = format!("{},{:.4}", k + 1, elapsed.as_secs_f64() * 1e3);
            for (_, t) in out.phase_times.named() {
                line += &format!(",{:.4}", t.as_secs_f64() * 1e3);
            }
            writeln!(
                f,
                "{line},{},{},{},{}",
                out.paths_served, out.paths_waiting, out.circling, out.path_nodes
            )
            .with_context(|| format!("cannot write {}", p.display()))?;
        }
        tally.add(elapsed, out);
        if let Some(gate) = &mut gate {
            gate.tick(&world);
        }
        if let Some(jams) = &mut jams {
            jams.add(world.crawling());
        }
        progress.update(k + 1);
    }
    progress.finish();

    let report = tally.report(Setup {
        map: args.map.display().to_string(),
        map_origin,
        triangles: mesh.triangle_count(),
        islands: mesh.island_count(),
        walkable_area_m2: walkable_area,
        seed: args.seed,
        path_budget,
        path_budget_per_body,
        npcs: args.npcs,
        players: args.players,
        spawn_blocked: placer.blocked,
        bodies_end: world.bodies().count(),
        state_hash_end: format!("{:016x}", world.state_hash()),
    });
    print!("{}", report.table());
    let gate = gate.map(|g| g.report());
    if let Some(gate) = &gate {
        print!("{}", gate.table());
    }
    if report_file.is_some() {
        let mut json = serde_json::to_value(&report).context("cannot encode the report")?;
        if let (Some(gate), Some(fields)) = (&gate, json.as_object_mut()) {
            let gate = serde_json::to_value(gate).context("cannot encode the gate's counts")?;
            fields.insert("gate".to_owned(), gate);
        }
        let json = serde_json::to_string_pretty(&json).context("cannot encode the report")?;
        write_out(report_file, &(json + "\n"))?;
    }
    if svg_file.is_some() {
        write_out(svg_file, &render_frame(&mesh, &world))?;
    }
    if let Some(jams) = &jams {
        write_out(jam_file, &render_jams(&mesh, jams, ticks))?;
    }
    if let Some((f, p)) = &mut ticks_file {
        f.flush()
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

fn to_vec(p: Point) -> Vec2 {
    Vec2::new(p.x as f32, p.y as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(npcs: u64, players: u64, seconds: f64) -> SimulateArgs {
        SimulateArgs {
            map: PathBuf::from("x.json"),
            npcs,
            seconds,
            seed: 1,
            players,
            path_budget: None,
            path_budget_per_body: None,
            corner_graph: false,
            report: None,
            svg: None,
            jam_svg: None,
            ticks_csv: None,
            gate: None,
            anticipation: true,
            congestion_routing: true,
            detour_every_secs: None,
        }
    }

    #[test]
    fn ticks_from_seconds() {
        assert_eq!(check_args(&args(1, 0, 2.0)).unwrap(), 40);
        assert_eq!(check_args(&args(1, 0, 0.001)).unwrap(), 1);
        assert_eq!(check_args(&args(0, 0, 20.0)).unwrap(), 400);
    }

    #[test]
    fn bad_numbers_are_refused() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e9] {
            let err = check_args(&args(1, 0, bad)).unwrap_err().to_string();
            assert!(err.contains("--seconds"), "{err}");
        }
        let err = check_args(&args(1_000_001, 0, 1.0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--npcs"), "{err}");
        let err = check_args(&args(1, 1_000_001, 1.0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--players"), "{err}");
        for bad in [-1.0, f32::NAN, f32::INFINITY, 1e9] {
            let mut a = args(1, 0, 1.0);
            a.detour_every_secs = Some(bad);
            let err = check_args(&a).unwrap_err().to_string();
            assert!(err.contains("--detour-every-secs"), "{err}");
        }
        let mut a = args(1, 0, 1.0);
        a.detour_every_secs = Some(2.0);
        assert!(check_args(&a).is_ok());
    }
}
