//! Where a border bot walks: walkable points of the cluster's map that lie past a zone
//! border by more than the handoff margin, and the one to walk to next.
//!
//! A target computed from the zones' rectangles alone (a few metres straight across the
//! nearest border) often lies in a wall; the server snaps it to the nearest walkable
//! point, which may be back on the bot's own side, and the character never crosses. So
//! the border behaviour builds the cluster's map (the `map` key of the cluster file, or
//! the servers' embedded default) and keeps, for every zone, walkable points clear of
//! walls by a body's radius that lie inside the zone between
//! `handoff_margin_m + `[`SLACK_M`] and that plus [`BAND_M`] from its borders: a character
//! that reaches one has left its old zone by more than the margin, and its old zone
//! hands it over.
//!
//! A bot heads for one zone at a time ([`BorderTargets::next`]): it keeps ordering its
//! character to points of that zone until the character stands in it past the margin,
//! then turns for the zone across its nearest border (until then, it orders the same
//! point again), or a fresh point of the same zone when its character is held up (the
//! bot's own rule, `bot/mod.rs`). It turns on arriving at its point or on reaching the depth
//! where the targets begin ([`BorderTargets::crossed`]), whichever comes first. Of the
//! zone's points on the
//! character's island (reachable at all), the [`NEAREST`] closest and [`SPREAD_PICKS`]
//! drawn within [`SPREAD_M`] are measured by path on the mesh, and one whose path is no
//! more than [`DETOUR_M`] longer than the straight line is taken at random (the shortest
//! when none is): bots near each other spread along the border instead of jamming one
//! strip of it, and no bot is sent round a wall when a crossing lies straight ahead.

use std::path::Path;
use std::sync::Mutex;

use anyhow::Context as _;
use navmesh::{IslandId, NavMesh, NavMeshQuery, Point, Rng};
use navmesh_builder::load::{build_source, load_map};
use navmesh_builder::pipeline::SourceKind;
use serde::Deserialize;

use crate::borders::Borders;

/// Targets lie at least this far past the handoff margin, metres.
pub const SLACK_M: f32 = 1.0;
/// And at most this much farther, metres.
pub const BAND_M: f32 = 4.0;
/// A character's radius (the server's), metres: targets are this far clear of walls.
pub const BODY_RADIUS_M: f64 = 0.4;
/// The closest targets measured by path per choice.
pub const NEAREST: usize = 4;
/// And this many drawn at random within [`SPREAD_M`].
pub const SPREAD_PICKS: usize = 10;
/// How far from the character the random ones may be, metres: near enough that a bot
/// crosses rather than walks along the border (30 m let some bots walk 40 m in 30 s
/// without crossing once).
pub const SPREAD_M: f32 = 10.0;
/// A target whose path is at most this much longer than the straight line is direct,
/// metres; one of the direct ones is taken at random (the shortest when none is).
pub const DETOUR_M: f64 = 3.0;
/// Random points of the map drawn to find each zone's targets.
const SAMPLES: usize = 200_000;
/// Targets kept per zone.
const KEPT_PER_ZONE: usize = 4_000;
/// The servers' handoff margin when the cluster file gives none (as `server::cluster`).
const DEFAULT_HANDOFF_MARGIN_M: f32 = 2.0;
/// The servers' embedded default map, used when the cluster file names none.
const DEFAULT_MAP: &str = include_str!("../../maps/movingai/den520d.map");

#[derive(Clone, Copy, Debug)]
struct Target {
    pos: (f32, f32),
    island: IslandId,
}

/// Walkable targets past the borders of each zone, on the cluster's map.
pub struct BorderTargets {
    mesh: NavMesh,
    margin_m: f32,
    /// Per zone (an index into [`Borders::zones`]).
    zones: Vec<Vec<Target>>,
    query: Mutex<NavMeshQuery>,
}

impl std::fmt::Debug for BorderTargets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BorderTargets")
            .field("margin_m", &self.margin_m)
            .field(
                "per_zone",
                &self.zones.iter().map(Vec::len).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// The part of a cluster file the targets need; other keys are ignored.
#[derive(Deserialize)]
struct ClusterMap {
    map: Option<std::path::PathBuf>,
    handoff_margin_m: Option<f32>,
}

impl BorderTargets {
    /// Builds the map of the cluster file at `path` (relative map paths resolve from the
    /// file's directory, as on the servers) and finds targets past `borders`.
    pub fn from_file(path: &Path, borders: &Borders) -> anyhow::Result<BorderTargets> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read cluster file {}", path.display()))?;
        let file: ClusterMap = toml::from_str(&text)
            .with_context(|| format!("cluster file {}: map or handoff_margin_m", path.display()))?;
        let loaded = match &file.map {
            Some(map) => {
                let map = path.parent().unwrap_or(Path::new(".")).join(map);
                load_map(&map).with_context(|| format!("cluster file {}", path.display()))?
            }
            None => build_source("den520d.map", DEFAULT_MAP, SourceKind::Grid)
                .context("the embedded default map")?,
        };
        let margin_m = file.handoff_margin_m.unwrap_or(DEFAULT_HANDOFF_MARGIN_M);
        if !(margin_m.is_finite() && margin_m >= 0.0) {
            anyhow::bail!(
                "cluster file {}: handoff_margin_m {margin_m} must be at least 0",
                path.display()
            );
        }
        Ok(BorderTargets::new(loaded.mesh, borders, margin_m, 1))
    }

    /// Targets on `mesh` past `borders` by more than `margin_m`, drawn with `seed`.
    pub fn new(mesh: NavMesh, borders: &Borders, margin_m: f32, seed: u64) -> BorderTargets {
        let mut zones = vec![Vec::new(); borders.zones().len()];
        let (near, far) = (margin_m + SLACK_M, margin_m + SLACK_M + BAND_M);
        let mut rng = Rng::new(seed);
        for _ in 0..SAMPLES {
            let Some((p, tri)) = mesh.random_point(&mut rng) else {
                break;
            };
            let pos = (p.x as f32, p.y as f32);
            let Some(zone) = borders.zone_of(pos) else {
                continue;
            };
            let Some(depth) = borders.depth_in(zone, pos) else {
                continue;
            };
            if !(near..=far).contains(&depth)
                || zones[zone].len() >= KEPT_PER_ZONE
                || mesh.nearest_wall(p, BODY_RADIUS_M).is_some()
            {
                continue;
            }
            zones[zone].push(Target {
                pos,
                island: mesh.island(tri),
            });
        }
        BorderTargets {
            mesh,
            margin_m,
            zones,
            query: Mutex::new(NavMeshQuery::new()),
        }
    }

    /// Targets found in zone `zone`.
    pub fn count(&self, zone: usize) -> usize {
        self.zones.get(zone).map_or(0, Vec::len)
    }

    /// The handoff margin the targets are past, metres.
    pub fn margin_m(&self) -> f32 {
        self.margin_m
    }

    /// The map the targets are on.
    pub fn mesh(&self) -> &NavMesh {
        &self.mesh
    }

    /// Whether a character at `here`, heading for zone `heading`, stands in it at least
    /// as deep as its targets begin (the handoff margin and [`SLACK_M`]): it has crossed,
    /// and may turn.
    pub fn crossed(&self, borders: &Borders, heading: Option<usize>, here: (f32, f32)) -> bool {
        heading.is_some_and(|zone| {
            borders.zone_of(here) == Some(zone)
                && borders
                    .depth_in(zone, here)
                    .is_some_and(|depth| depth >= self.margin_m + SLACK_M)
        })
    }

    /// The next point for a character at `here` to walk to. `heading` is the zone it is
    /// walking into (`None` at first): kept until the character stands in it by more than
    /// the handoff margin, then turned to the zone across the nearest border. While the
    /// heading holds, the `last` point ordered is ordered again if it lies in that zone.
    /// `None` when `here` is off the mesh and the zones, or no target of the zone is
    /// reachable.
    pub fn next(
        &self,
        borders: &Borders,
        heading: &mut Option<usize>,
        here: (f32, f32),
        last: Option<(f32, f32)>,
        rng: &mut Rng,
    ) -> Option<(f32, f32)> {
        let zone_here = borders.zone_of(here)?;
        let arrived = heading.is_none_or(|zone| {
            zone == zone_here
                && borders
                    .depth_in(zone, here)
                    .is_some_and(|depth| depth > self.margin_m)
        });
        if arrived {
            *heading = Some(borders.across(here)?);
        } else if let Some(last) = last
            && borders.zone_of(last) == *heading
        {
            return Some(last);
        }
        let zone = (*heading)?;
        let start = Point::new(f64::from(here.0), f64::from(here.1));
        let (start, tri) = self.mesh.nearest_point(start, 2.0)?;
        let island = self.mesh.island(tri);
        let near: Vec<(f32, Target)> = self
            .zones
            .get(zone)?
            .iter()
            .filter(|t| t.island == island)
            .map(|t| ((t.pos.0 - here.0).hypot(t.pos.1 - here.1), *t))
            .collect();
        // A few at random within reach, and the closest few (the way out of a dead end).
        let within: Vec<&(f32, Target)> = near.iter().filter(|n| n.0 <= SPREAD_M).collect();
        let mut picked: Vec<(f32, Target)> = (0..SPREAD_PICKS.min(within.len()))
            .map(|_| *within[rng.range(0, within.len() as u64 - 1) as usize])
            .collect();
        let mut closest = near;
        if closest.len() > NEAREST {
            closest.select_nth_unstable_by(NEAREST, |a, b| a.0.total_cmp(&b.0));
            closest.truncate(NEAREST);
        }
        picked.extend(closest);
        let mut query = self
            .query
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // (path length, straight distance, the point)
        let measured: Vec<(f64, f64, (f32, f32))> = picked
            .iter()
            .filter_map(|(straight, t)| {
                let goal = Point::new(f64::from(t.pos.0), f64::from(t.pos.1));
                let path = query
                    .find_path(&self.mesh, start, goal, BODY_RADIUS_M)
                    .ok()?;
                Some((path.length, f64::from(*straight), t.pos))
            })
            .collect();
        drop(query);
        let direct: Vec<(f32, f32)> = measured
            .iter()
            .filter(|m| m.0 <= m.1 + DETOUR_M)
            .map(|m| m.2)
            .collect();
        if direct.is_empty() {
            return measured
                .iter()
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|m| m.2);
        }
        let k = rng.range(0, direct.len() as u64 - 1) as usize;
        direct.get(k).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::borders::Zone;

    /// 40 m by 20 m; a wall column at x = 20..22 (the border is x = 20) open only at
    /// y = 8..12 (the middle rows, whichever way the grid's rows run).
    fn walled() -> NavMesh {
        let mut rows = Vec::new();
        for y in 0..20 {
            let row: String = (0..40)
                .map(|x| {
                    let wall = (20..22).contains(&x) && !(8..12).contains(&y);
                    if wall { '@' } else { '.' }
                })
                .collect();
            rows.push(row);
        }
        let text = format!(
            "type octile\nheight 20\nwidth 40\nmap\n{}\n",
            rows.join("\n")
        );
        build_source("walled", &text, SourceKind::Grid)
            .unwrap()
            .mesh
    }

    fn halves() -> Borders {
        let zone = |name: &str, x0: f32, x1: f32| Zone {
            name: name.to_owned(),
            min: (x0, 0.0),
            max: (x1, 20.0),
        };
        Borders::from_zones(vec![zone("west", 0.0, 20.0), zone("east", 20.0, 40.0)]).unwrap()
    }

    #[test]
    fn targets_are_walkable_clear_of_walls_and_past_the_margin() {
        let borders = halves();
        let targets = BorderTargets::new(walled(), &borders, 2.0, 7);
        assert!(
            targets.count(0) > 100 && targets.count(1) > 100,
            "{targets:?}"
        );
        for (zone, list) in targets.zones.iter().enumerate() {
            for t in list {
                let p = Point::new(f64::from(t.pos.0), f64::from(t.pos.1));
                assert!(targets.mesh.locate(p).is_some(), "{t:?}");
                assert!(targets.mesh.nearest_wall(p, BODY_RADIUS_M).is_none());
                assert_eq!(borders.zone_of(t.pos), Some(zone));
                let depth = borders.depth_in(zone, t.pos).unwrap();
                assert!((3.0..=7.0).contains(&depth), "{t:?} {depth}");
            }
        }
    }

    #[test]
    fn a_bot_walks_through_the_gap_and_turns_only_once_handed_over() {
        let borders = halves();
        let targets = BorderTargets::new(walled(), &borders, 2.0, 7);
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let mut heading = None;
            // Far from the gap, beside the wall: straight across is wall.
            let here = (17.0, 18.0);
            let target = targets
                .next(&borders, &mut heading, here, None, &mut rng)
                .unwrap();
            assert_eq!(heading, Some(1));
            assert!(target.0 >= 23.0, "{target:?}");
            let p = Point::new(f64::from(target.0), f64::from(target.1));
            let start = Point::new(17.0, 18.0);
            let path = NavMeshQuery::new()
                .find_path(&targets.mesh, start, p, BODY_RADIUS_M)
                .unwrap();
            // Reachable only through the gap: the path turns there.
            let through_gap = |p: &Point| (19.0..23.0).contains(&p.x) && (7.5..12.5).contains(&p.y);
            assert!(path.points.iter().any(through_gap), "{path:?}");
            // Across the line but within the margin: still heading east.
            let again = targets.next(&borders, &mut heading, (21.0, 10.0), Some(target), &mut rng);
            assert_eq!((heading, again), (Some(1), Some(target)));
            let fresh = targets.next(&borders, &mut heading, (21.0, 10.0), None, &mut rng);
            assert!(fresh.is_some_and(|t| t.0 >= 23.0), "{fresh:?}");
            assert!(!targets.crossed(&borders, heading, (21.0, 10.0)));
            assert!(!targets.crossed(&borders, heading, (22.9, 10.0)));
            assert!(targets.crossed(&borders, heading, (23.1, 10.0)));
            assert!(!targets.crossed(&borders, Some(0), (23.1, 10.0)));
            // Handed over (past the margin): back west, through the gap.
            let back = targets.next(&borders, &mut heading, (24.5, 10.0), Some(target), &mut rng);
            assert_eq!(heading, Some(0));
            assert!(back.is_some_and(|t| t.0 <= 17.0), "{back:?}");
        }
    }

    #[test]
    fn the_embedded_map_has_targets_on_both_sides_of_the_middle() {
        let dir = std::env::temp_dir().join(format!("loadtest-targets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cluster.toml");
        std::fs::write(
            &file,
            "nats = \"nats://127.0.0.1:4222\"\nhandoff_margin_m = 3.0\n\
             [[zones]]\nname = \"west\"\nregion = [0.0, 0.0, 128.0, 257.0]\n\
             [[zones]]\nname = \"east\"\nregion = [128.0, 0.0, 256.0, 257.0]\n",
        )
        .unwrap();
        let borders = Borders::from_file(&file).unwrap();
        let targets = BorderTargets::from_file(&file, &borders).unwrap();
        assert_eq!(targets.margin_m(), 3.0);
        assert!(
            targets.count(0) > 500 && targets.count(1) > 500,
            "{targets:?}"
        );
        std::fs::write(&file, "map = \"nowhere.map\"\n").unwrap();
        let err = format!(
            "{:#}",
            BorderTargets::from_file(&file, &borders).unwrap_err()
        );
        assert!(err.contains("nowhere.map"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
