//! The zones of a cluster file as the swarm sees them: rectangles that tile the map, and
//! the borders where two of them share an edge. Bots use them to count the zone borders
//! their character crosses and, with the border behaviour, to walk across them.
//!
//! Only the `[[zones]]` of the cluster file are read, each a `name` and a rectangle; every
//! other key (the map, NATS, the store, gateways, a zone's metrics address) is the
//! servers' business and is ignored. A rectangle is written `region = [x0, y0, x1, y1]`
//! (metres) or, as `server::cluster` reads it today, `min = [x0, y0]` and
//! `max = [x1, y1]`. As on the server, a zone owns its rectangle's lower edges and not its
//! upper ones, so neighbours share an edge without sharing a point.
//!
//! Everything here is plain data and arithmetic: no I/O but [`Borders::from_file`].

use std::path::Path;

use anyhow::Context as _;
use navmesh::Point;
use navmesh::geom::distance_to_segment;
use protocol::Bounds;
use serde::Deserialize;

/// Two edges closer than this, metres, are the same line (files write them as equal
/// decimals; this only absorbs float rounding).
const EDGE_TOLERANCE_M: f32 = 1e-3;
/// Shared stretches shorter than this, metres, are corners, not borders.
const MIN_SHARED_M: f32 = 0.01;
/// A target is kept this far inside the ends of its border's stretch, metres (less on a
/// shorter stretch), so it lies beside the shared edge and not at a corner.
const ALONG_INSET_M: f32 = 1.0;
/// A target is kept this far inside the other zone, metres: its upper edges are not its own.
const INSIDE_M: f32 = 0.01;

/// One zone: a name and the rectangle it owns.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    /// The zone's name in the cluster file.
    pub name: String,
    /// The lower corner (x0, y0), metres; owned.
    pub min: (f32, f32),
    /// The upper corner (x1, y1), metres; not owned (it is the neighbour's).
    pub max: (f32, f32),
}

impl Zone {
    /// Whether `(x, y)` is in this zone (lower edges included, upper excluded).
    pub fn contains(&self, (x, y): (f32, f32)) -> bool {
        x >= self.min.0 && x < self.max.0 && y >= self.min.1 && y < self.max.1
    }
}

/// Which way a border runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// The line x = `at`; its stretch runs along y.
    Vertical,
    /// The line y = `at`; its stretch runs along x.
    Horizontal,
}

/// A stretch of border: where two zones' rectangles share an edge segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Border {
    /// Which way it runs.
    pub axis: Axis,
    /// Where the line is: x for a vertical border, y for a horizontal one, metres.
    pub at: f32,
    /// Where the shared stretch starts along the line, metres (below `to`).
    pub from: f32,
    /// Where the shared stretch ends along the line, metres.
    pub to: f32,
    /// The zone below the line (smaller x or y), an index into [`Borders::zones`].
    pub low: usize,
    /// The zone above the line.
    pub high: usize,
}

impl Border {
    /// The stretch's two ends, metres.
    pub fn ends(&self) -> ((f32, f32), (f32, f32)) {
        match self.axis {
            Axis::Vertical => ((self.at, self.from), (self.at, self.to)),
            Axis::Horizontal => ((self.from, self.at), (self.to, self.at)),
        }
    }

    /// The distance from `pos` to the stretch, metres.
    pub fn distance(&self, pos: (f32, f32)) -> f32 {
        let point = |(x, y): (f32, f32)| Point::new(f64::from(x), f64::from(y));
        let (a, b) = self.ends();
        distance_to_segment(point(pos), point(a), point(b)) as f32
    }

    /// `pos` split into (across the line, along it).
    fn split(&self, (x, y): (f32, f32)) -> (f32, f32) {
        match self.axis {
            Axis::Vertical => (x, y),
            Axis::Horizontal => (y, x),
        }
    }

    /// (across, along) joined back into a position.
    fn join(&self, across: f32, along: f32) -> (f32, f32) {
        match self.axis {
            Axis::Vertical => (across, along),
            Axis::Horizontal => (along, across),
        }
    }
}

/// What is wrong with a cluster file's zones.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ZonesError {
    /// Not TOML, or its zones are not tables of the expected keys.
    #[error("does not parse at line {line}, column {column}: {message}")]
    Parse {
        /// Line of the fault, from 1.
        line: usize,
        /// Column of the fault, from 1.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// No `[[zones]]`.
    #[error("names no zones (want [[zones]] tables with name and region)")]
    NoZones,
    /// A zone without a rectangle.
    #[error("zone {0:?} has no region = [x0, y0, x1, y1]")]
    NoRegion(String),
    /// A zone with both forms of rectangle.
    #[error("zone {0:?} gives both region and min/max; give one")]
    RegionTwice(String),
    /// A rectangle that is empty, inverted or not finite.
    #[error("zone {zone:?}: region {region:?} must be finite with x0 below x1 and y0 below y1")]
    BadRegion {
        /// The zone.
        zone: String,
        /// Its rectangle as x0, y0, x1, y1.
        region: [f32; 4],
    },
    /// Two zones share a name.
    #[error("two zones are named {0:?}")]
    DuplicateName(String),
    /// Two rectangles overlap.
    #[error("zones {0:?} and {1:?} overlap")]
    Overlap(String, String),
}

/// The zones and the borders between them.
#[derive(Clone, Debug, PartialEq)]
pub struct Borders {
    zones: Vec<Zone>,
    borders: Vec<Border>,
}

/// The part of a cluster file the swarm reads; other keys are ignored.
#[derive(Deserialize)]
struct ClusterZones {
    #[serde(default)]
    zones: Vec<ZoneEntry>,
}

#[derive(Deserialize)]
struct ZoneEntry {
    name: String,
    region: Option<[f32; 4]>,
    min: Option<[f32; 2]>,
    max: Option<[f32; 2]>,
}

impl Borders {
    /// Reads the zones of the cluster file at `path`; errors name the file.
    pub fn from_file(path: &Path) -> anyhow::Result<Borders> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read cluster file {}", path.display()))?;
        Borders::from_toml(&text).with_context(|| format!("cluster file {}", path.display()))
    }

    /// Reads the zones of a cluster file's text.
    pub fn from_toml(text: &str) -> Result<Borders, ZonesError> {
        let file: ClusterZones = toml::from_str(text).map_err(|err| {
            let (line, column) = line_and_column(text, err.span().map_or(0, |span| span.start));
            ZonesError::Parse {
                line,
                column,
                message: err.message().trim().to_owned(),
            }
        })?;
        let zones = file
            .zones
            .into_iter()
            .map(|entry| {
                let [x0, y0, x1, y1] = match (entry.region, entry.min, entry.max) {
                    (Some(region), None, None) => region,
                    (None, Some([x0, y0]), Some([x1, y1])) => [x0, y0, x1, y1],
                    (Some(_), _, _) => return Err(ZonesError::RegionTwice(entry.name)),
                    (None, _, _) => return Err(ZonesError::NoRegion(entry.name)),
                };
                Ok(Zone {
                    name: entry.name,
                    min: (x0, y0),
                    max: (x1, y1),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Borders::from_zones(zones)
    }

    /// Checks the zones (named, not empty, not overlapping) and finds their borders.
    pub fn from_zones(zones: Vec<Zone>) -> Result<Borders, ZonesError> {
        if zones.is_empty() {
            return Err(ZonesError::NoZones);
        }
        for (k, zone) in zones.iter().enumerate() {
            let region = [zone.min.0, zone.min.1, zone.max.0, zone.max.1];
            if !region.iter().all(|v| v.is_finite())
                || zone.min.0 >= zone.max.0
                || zone.min.1 >= zone.max.1
            {
                return Err(ZonesError::BadRegion {
                    zone: zone.name.clone(),
                    region,
                });
            }
            for earlier in &zones[..k] {
                if earlier.name == zone.name {
                    return Err(ZonesError::DuplicateName(zone.name.clone()));
                }
                if overlaps(earlier, zone) {
                    return Err(ZonesError::Overlap(earlier.name.clone(), zone.name.clone()));
                }
            }
        }
        let mut borders = Vec::new();
        for a in 0..zones.len() {
            for b in 0..zones.len() {
                if let Some(border) = shared_edge(&zones, a, b) {
                    borders.push(border);
                }
            }
        }
        Ok(Borders { zones, borders })
    }

    /// The zones, in the file's order.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// Every stretch of border (none when no two zones touch).
    pub fn borders(&self) -> &[Border] {
        &self.borders
    }

    /// The zone that owns `pos`, as an index into [`Borders::zones`]; `None` outside all.
    pub fn zone_of(&self, pos: (f32, f32)) -> Option<usize> {
        self.zones.iter().position(|zone| zone.contains(pos))
    }

    /// The border nearest to `pos` (the first of equals).
    pub fn nearest(&self, pos: (f32, f32)) -> Option<&Border> {
        self.borders
            .iter()
            .min_by(|a, b| a.distance(pos).total_cmp(&b.distance(pos)))
    }

    /// How far `pos` lies inside zone `zone` from the nearest of that zone's borders,
    /// metres: how far a body standing there has left each neighbour. `None` when the
    /// zone has no borders.
    pub fn depth_in(&self, zone: usize, pos: (f32, f32)) -> Option<f32> {
        self.borders
            .iter()
            .filter(|b| b.low == zone || b.high == zone)
            .map(|b| b.distance(pos))
            .min_by(f32::total_cmp)
    }

    /// The zone across the border nearest to `here`, as an index into [`Borders::zones`].
    pub fn across(&self, here: (f32, f32)) -> Option<usize> {
        let border = self.nearest(here)?;
        let (across_here, _) = border.split(here);
        Some(if across_here < border.at {
            border.high
        } else {
            border.low
        })
    }

    /// A point `depth_m` past the border nearest to `here`, on the side `here` is not on:
    /// `slide_m` along the border from `here`, kept inside the border's stretch (so it lies
    /// beside a real shared edge), inside the zone on that side and inside `bounds`.
    /// `None` when there are no borders.
    pub fn target_across(
        &self,
        here: (f32, f32),
        depth_m: f32,
        slide_m: f32,
        bounds: Bounds,
    ) -> Option<(f32, f32)> {
        let border = self.nearest(here)?;
        let (across_here, along_here) = border.split(here);
        let (across, other) = if across_here < border.at {
            (border.at + depth_m, &self.zones[border.high])
        } else {
            (border.at - depth_m, &self.zones[border.low])
        };
        let (other_lo, other_hi) = match border.axis {
            Axis::Vertical => (other.min.0, other.max.0),
            Axis::Horizontal => (other.min.1, other.max.1),
        };
        let inside = (other_hi - other_lo) / 2.0;
        let across = across.clamp(
            other_lo + INSIDE_M.min(inside),
            other_hi - INSIDE_M.min(inside),
        );
        let inset = ALONG_INSET_M.min((border.to - border.from) / 2.0);
        let along = (along_here + slide_m).clamp(border.from + inset, border.to - inset);
        let (x, y) = border.join(across, along);
        Some((
            x.clamp(bounds.min_x, bounds.max_x),
            y.clamp(bounds.min_y, bounds.max_y),
        ))
    }
}

fn overlaps(a: &Zone, b: &Zone) -> bool {
    a.min.0 < b.max.0 && b.min.0 < a.max.0 && a.min.1 < b.max.1 && b.min.1 < a.max.1
}

/// The border where zone `low`'s upper edge (right or top) meets zone `high`'s lower one.
fn shared_edge(zones: &[Zone], low: usize, high: usize) -> Option<Border> {
    if low == high {
        return None;
    }
    let (a, b) = (&zones[low], &zones[high]);
    let (axis, at, from, to) = if (a.max.0 - b.min.0).abs() <= EDGE_TOLERANCE_M {
        (
            Axis::Vertical,
            b.min.0,
            a.min.1.max(b.min.1),
            a.max.1.min(b.max.1),
        )
    } else if (a.max.1 - b.min.1).abs() <= EDGE_TOLERANCE_M {
        (
            Axis::Horizontal,
            b.min.1,
            a.min.0.max(b.min.0),
            a.max.0.min(b.max.0),
        )
    } else {
        return None;
    };
    (to - from >= MIN_SHARED_M).then_some(Border {
        axis,
        at,
        from,
        to,
        low,
        high,
    })
}

/// The 1-based line and column of byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
map = "maps/movingai/den520d.map"
nats = "nats://127.0.0.1:4222"

[[zones]]
name = "west"
region = [0.0, 0.0, 128.0, 257.0]
metrics_listen = "127.0.0.1:9201"

[[zones]]
name = "east"
region = [128, 0, 256, 257]

[[gateways]]
name = "gw1"
listen = "127.0.0.1:4433"
"#;

    fn zone(name: &str, x0: f32, y0: f32, x1: f32, y1: f32) -> Zone {
        Zone {
            name: name.to_owned(),
            min: (x0, y0),
            max: (x1, y1),
        }
    }

    fn grid() -> Borders {
        Borders::from_zones(vec![
            zone("sw", 0.0, 0.0, 50.0, 50.0),
            zone("se", 50.0, 0.0, 100.0, 50.0),
            zone("nw", 0.0, 50.0, 50.0, 100.0),
            zone("ne", 50.0, 50.0, 100.0, 100.0),
        ])
        .unwrap()
    }

    fn bounds(max_x: f32, max_y: f32) -> Bounds {
        Bounds {
            min_x: 0.0,
            min_y: 0.0,
            max_x,
            max_y,
        }
    }

    #[test]
    fn a_cluster_file_gives_its_zones_and_ignores_the_rest() {
        let borders = Borders::from_toml(TWO).unwrap();
        assert_eq!(
            borders.zones(),
            &[
                zone("west", 0.0, 0.0, 128.0, 257.0),
                zone("east", 128.0, 0.0, 256.0, 257.0)
            ]
        );
        assert_eq!(borders.zone_of((127.9, 10.0)), Some(0));
        assert_eq!(borders.zone_of((128.0, 10.0)), Some(1));
        assert_eq!(borders.zone_of((256.0, 10.0)), None);
        // The server's own form of a rectangle reads the same.
        let min_max = TWO
            .replace(
                "region = [0.0, 0.0, 128.0, 257.0]",
                "min = [0, 0]\nmax = [128, 257]",
            )
            .replace(
                "region = [128, 0, 256, 257]",
                "min = [128, 0]\nmax = [256, 257]",
            );
        assert_eq!(Borders::from_toml(&min_max).unwrap(), borders);
    }

    #[test]
    fn bad_zones_name_the_zone_and_the_fault() {
        let err = |text: &str| Borders::from_toml(text).unwrap_err();
        assert_eq!(err("nats = \"x\"\n"), ZonesError::NoZones);
        assert_eq!(
            err("[[zones]]\nname = \"a\"\n"),
            ZonesError::NoRegion("a".to_owned())
        );
        assert_eq!(
            err("[[zones]]\nname = \"a\"\nregion = [0, 0, 1, 1]\nmin = [0, 0]\n"),
            ZonesError::RegionTwice("a".to_owned())
        );
        assert_eq!(
            err("[[zones]]\nname = \"a\"\nregion = [5, 0, 1, 1]\n"),
            ZonesError::BadRegion {
                zone: "a".to_owned(),
                region: [5.0, 0.0, 1.0, 1.0]
            }
        );
        let two = "[[zones]]\nname = \"a\"\nregion = [0, 0, 10, 10]\n\
                   [[zones]]\nname = \"b\"\nregion = [5, 5, 20, 20]\n";
        assert_eq!(
            err(two),
            ZonesError::Overlap("a".to_owned(), "b".to_owned())
        );
        assert_eq!(
            err(&two.replace("\"b\"", "\"a\"")),
            ZonesError::DuplicateName("a".to_owned())
        );
        let parse = err("[[zones]]\nname = \"a\"\nregion = [0, 0, \"ten\", 1]\n");
        let message = parse.to_string();
        assert!(
            matches!(parse, ZonesError::Parse { line: 3, .. }),
            "{message}"
        );
        assert!(!message.contains('\n'), "{message}");
    }

    #[test]
    fn two_zones_side_by_side_share_one_border() {
        let borders = Borders::from_toml(TWO).unwrap();
        assert_eq!(
            borders.borders(),
            &[Border {
                axis: Axis::Vertical,
                at: 128.0,
                from: 0.0,
                to: 257.0,
                low: 0,
                high: 1
            }]
        );
        let alone = Borders::from_zones(vec![zone("all", 0.0, 0.0, 10.0, 10.0)]).unwrap();
        assert!(alone.borders().is_empty());
    }

    #[test]
    fn a_two_by_two_grid_has_four_borders_and_no_corner_ones() {
        let borders = grid();
        let mut found: Vec<(Axis, f32, f32, f32, &str, &str)> = borders
            .borders()
            .iter()
            .map(|b| {
                let zones = borders.zones();
                let (low, high) = (zones[b.low].name.as_str(), zones[b.high].name.as_str());
                (b.axis, b.at, b.from, b.to, low, high)
            })
            .collect();
        found.sort_by(|a, b| a.4.cmp(b.4).then(a.5.cmp(b.5)));
        assert_eq!(
            found,
            vec![
                (Axis::Vertical, 50.0, 50.0, 100.0, "nw", "ne"),
                (Axis::Horizontal, 50.0, 50.0, 100.0, "se", "ne"),
                (Axis::Horizontal, 50.0, 0.0, 50.0, "sw", "nw"),
                (Axis::Vertical, 50.0, 0.0, 50.0, "sw", "se"),
            ]
        );
    }

    #[test]
    fn a_target_lands_across_the_nearest_border_beside_its_shared_edge() {
        let borders = grid();
        let map = bounds(100.0, 100.0);
        // In sw, nearer the vertical border: to se.
        let target = borders.target_across((45.0, 20.0), 8.0, 2.0, map).unwrap();
        assert_eq!(target, (58.0, 22.0));
        // In se, nearer the horizontal border: to ne, the slide kept on se/ne's stretch.
        let target = borders.target_across((90.0, 47.0), 6.0, 12.0, map).unwrap();
        assert_eq!(target, (99.0, 56.0));
        assert_eq!(borders.zone_of(target), Some(3));
        // Near the end of a stretch: the slide is held beside the shared edge.
        let target = borders.target_across((45.0, 48.0), 10.0, 6.0, map).unwrap();
        assert_eq!(
            borders.nearest((45.0, 48.0)).unwrap().axis,
            Axis::Horizontal
        );
        assert_eq!(target, (49.0, 60.0));
        // Inside the map bounds even when the other zone reaches past them.
        let target = borders.target_across((90.0, 45.0), 12.0, 0.0, bounds(100.0, 55.0));
        assert_eq!(target, Some((90.0, 55.0)));
        // Inside a zone narrower than the step.
        let thin = Borders::from_zones(vec![
            zone("a", 0.0, 0.0, 50.0, 10.0),
            zone("b", 50.0, 0.0, 54.0, 10.0),
        ])
        .unwrap();
        let (x, _) = thin.target_across((48.0, 5.0), 12.0, 0.0, map).unwrap();
        assert!((50.0..54.0).contains(&x), "{x}");
        assert_eq!(
            Borders::from_zones(vec![zone("a", 0.0, 0.0, 1.0, 1.0)])
                .unwrap()
                .target_across((0.5, 0.5), 6.0, 0.0, map),
            None
        );
    }
}
