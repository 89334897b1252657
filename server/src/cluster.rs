//! The cluster file: one world split into zones, each a rectangle of the map simulated by
//! its own process, joined by NATS (see `docs/zones.md`; the zone and gateway processes
//! are not built yet). This module reads the file and checks it against the map, naming
//! the zone and what is wrong.
//!
//! ```toml
//! nats = "nats://127.0.0.1:4222"
//! ghost_band_m = 40
//! handoff_margin_m = 2
//!
//! [[zones]]
//! name = "west"
//! min = [0, 0]
//! max = [128, 257]
//! ```

use navmesh::{NavMesh, TriId};
use serde::Deserialize;

/// The least ghost band: the view's leave radius (30 m and 4 m of hysteresis, the
/// server's defaults), so that a body near a border sees everything its clients may see.
pub const MIN_GHOST_BAND_M: f32 = 34.0;

/// A cluster: where the bus is, and the zones.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// The NATS server's URL.
    pub nats: String,
    /// The character store every zone shares (a PostgreSQL URL); `None`: none.
    #[serde(default)]
    pub store: Option<String>,
    /// How far past its border a zone mirrors its neighbours' bodies as ghosts, metres.
    #[serde(default = "default_ghost_band")]
    pub ghost_band_m: f32,
    /// How far a body goes past its zone's border before it is handed over, metres.
    #[serde(default = "default_handoff_margin")]
    pub handoff_margin_m: f32,
    /// The zones, which must cover the map without overlapping.
    pub zones: Vec<ZoneSpec>,
}

fn default_ghost_band() -> f32 {
    40.0
}

fn default_handoff_margin() -> f32 {
    2.0
}

/// One zone: a name and the rectangle of the map it owns (`min` inclusive, `max`
/// exclusive, so neighbours can share an edge).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    /// A unique name: letters, digits, `-` and `_` (it is part of NATS subjects).
    pub name: String,
    /// The rectangle's lower corner, metres.
    pub min: [f32; 2],
    /// The rectangle's upper corner, metres.
    pub max: [f32; 2],
}

impl ZoneSpec {
    /// Whether `(x, y)` is in this zone's rectangle.
    pub fn contains(&self, x: f32, y: f32) -> bool {
        x >= self.min[0] && x < self.max[0] && y >= self.min[1] && y < self.max[1]
    }

    /// The distance from `(x, y)` to the rectangle (0 inside).
    pub fn distance(&self, x: f32, y: f32) -> f32 {
        let dx = (self.min[0] - x).max(x - self.max[0]).max(0.0);
        let dy = (self.min[1] - y).max(y - self.max[1]).max(0.0);
        dx.hypot(dy)
    }

    fn overlaps(&self, other: &ZoneSpec) -> bool {
        self.min[0] < other.max[0]
            && other.min[0] < self.max[0]
            && self.min[1] < other.max[1]
            && other.min[1] < self.max[1]
    }
}

/// What is wrong with a cluster file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClusterError {
    /// Not TOML, or not this schema.
    #[error("the cluster file does not parse: {0}")]
    Parse(String),
    /// No zones.
    #[error("the cluster file names no zones")]
    NoZones,
    /// A name is empty, too long or has characters NATS subjects cannot hold.
    #[error("zone name {0:?} must be 1 to 32 letters, digits, '-' or '_'")]
    BadName(String),
    /// Two zones share a name.
    #[error("two zones are named {0:?}")]
    DuplicateName(String),
    /// A rectangle that is empty, inverted or not finite.
    #[error("zone {zone:?}: min {min:?} must be finite and below max {max:?} on both axes")]
    BadRectangle {
        /// The zone.
        zone: String,
        /// Its min.
        min: [f32; 2],
        /// Its max.
        max: [f32; 2],
    },
    /// Two rectangles overlap.
    #[error("zones {0:?} and {1:?} overlap")]
    Overlap(String, String),
    /// The ghost band is shorter than what a client near a border sees.
    #[error("ghost_band_m {0} is below {MIN_GHOST_BAND_M} m, the view's leave radius")]
    GhostBand(f32),
    /// The handoff margin is negative, not finite, or not inside the ghost band.
    #[error("handoff_margin_m {0} must be at least 0 and below ghost_band_m")]
    HandoffMargin(f32),
    /// Walkable ground no zone owns.
    #[error("no zone owns the walkable point ({x}, {y}) (a triangle's centre)")]
    Uncovered {
        /// x, metres.
        x: f32,
        /// y, metres.
        y: f32,
    },
}

impl ClusterFile {
    /// Reads a cluster file's text and checks what needs no map.
    pub fn from_toml(text: &str) -> Result<ClusterFile, ClusterError> {
        let file: ClusterFile =
            toml::from_str(text).map_err(|err| ClusterError::Parse(err.to_string()))?;
        file.check_alone()?;
        Ok(file)
    }

    fn check_alone(&self) -> Result<(), ClusterError> {
        if self.zones.is_empty() {
            return Err(ClusterError::NoZones);
        }
        let band = self.ghost_band_m;
        if !(band.is_finite() && band >= MIN_GHOST_BAND_M) {
            return Err(ClusterError::GhostBand(band));
        }
        let margin = self.handoff_margin_m;
        if !(margin.is_finite() && margin >= 0.0 && margin < band) {
            return Err(ClusterError::HandoffMargin(margin));
        }
        for (k, zone) in self.zones.iter().enumerate() {
            let name_ok = (1..=32).contains(&zone.name.len())
                && zone
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !name_ok {
                return Err(ClusterError::BadName(zone.name.clone()));
            }
            let finite = zone.min.iter().chain(&zone.max).all(|v| v.is_finite());
            if !finite || zone.min[0] >= zone.max[0] || zone.min[1] >= zone.max[1] {
                return Err(ClusterError::BadRectangle {
                    zone: zone.name.clone(),
                    min: zone.min,
                    max: zone.max,
                });
            }
            for earlier in &self.zones[..k] {
                if earlier.name == zone.name {
                    return Err(ClusterError::DuplicateName(zone.name.clone()));
                }
                if earlier.overlaps(zone) {
                    return Err(ClusterError::Overlap(
                        earlier.name.clone(),
                        zone.name.clone(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks the zones against the map: every triangle's centre is owned by a zone.
    pub fn check_map(&self, mesh: &NavMesh) -> Result<(), ClusterError> {
        for t in 0..mesh.triangle_count() {
            let [a, b, c] = mesh.triangle_points(TriId(t as u32));
            let (x, y) = (
                ((a.x + b.x + c.x) / 3.0) as f32,
                ((a.y + b.y + c.y) / 3.0) as f32,
            );
            if self.zone_of(x, y).is_none() {
                return Err(ClusterError::Uncovered { x, y });
            }
        }
        Ok(())
    }

    /// The zone owning `(x, y)`.
    pub fn zone_of(&self, x: f32, y: f32) -> Option<&ZoneSpec> {
        self.zones.iter().find(|zone| zone.contains(x, y))
    }

    /// The zones whose ghosts `zone` mirrors: the others within the ghost band of it.
    pub fn neighbours(&self, zone: &ZoneSpec) -> Vec<&ZoneSpec> {
        let band = self.ghost_band_m;
        self.zones
            .iter()
            .filter(|other| other.name != zone.name)
            .filter(|other| {
                // Rectangles within `band` of each other: the gap on each axis.
                let gx = (other.min[0] - zone.max[0])
                    .max(zone.min[0] - other.max[0])
                    .max(0.0);
                let gy = (other.min[1] - zone.max[1])
                    .max(zone.min[1] - other.max[1])
                    .max(0.0);
                gx.hypot(gy) <= band
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
nats = "nats://127.0.0.1:4222"

[[zones]]
name = "west"
min = [0, 0]
max = [128, 257]

[[zones]]
name = "east"
min = [128, 0]
max = [256, 257]
"#;

    #[test]
    fn a_two_zone_file_reads_with_defaults_and_finds_owners_and_neighbours() {
        let file = ClusterFile::from_toml(TWO).unwrap();
        assert_eq!((file.ghost_band_m, file.handoff_margin_m), (40.0, 2.0));
        assert_eq!(file.zone_of(127.9, 5.0).unwrap().name, "west");
        assert_eq!(file.zone_of(128.0, 5.0).unwrap().name, "east");
        assert!(file.zone_of(300.0, 5.0).is_none());
        let west = &file.zones[0];
        let names: Vec<&str> = file
            .neighbours(west)
            .iter()
            .map(|z| z.name.as_str())
            .collect();
        assert_eq!(names, vec!["east"]);
        assert_eq!(west.distance(130.0, 5.0), 2.0);
    }

    #[test]
    fn bad_files_name_the_zone_and_the_fault() {
        let with = |extra: &str| ClusterFile::from_toml(&format!("{TWO}{extra}"));
        assert!(matches!(
            with("\n[[zones]]\nname = \"west\"\nmin = [300, 0]\nmax = [301, 1]\n"),
            Err(ClusterError::DuplicateName(name)) if name == "west"
        ));
        assert!(matches!(
            with("\n[[zones]]\nname = \"mid\"\nmin = [100, 0]\nmax = [150, 10]\n"),
            Err(ClusterError::Overlap(a, b)) if a == "west" && b == "mid"
        ));
        assert!(matches!(
            with("\n[[zones]]\nname = \"a.b\"\nmin = [300, 0]\nmax = [301, 1]\n"),
            Err(ClusterError::BadName(_))
        ));
        assert!(matches!(
            with("\n[[zones]]\nname = \"flat\"\nmin = [300, 0]\nmax = [300, 1]\n"),
            Err(ClusterError::BadRectangle { zone, .. }) if zone == "flat"
        ));
        let short_band = TWO.replace(
            "[[zones]]\nname = \"west\"",
            "ghost_band_m = 10\n[[zones]]\nname = \"west\"",
        );
        assert_eq!(
            ClusterFile::from_toml(&short_band),
            Err(ClusterError::GhostBand(10.0))
        );
        assert!(matches!(
            ClusterFile::from_toml("nats = 3"),
            Err(ClusterError::Parse(_))
        ));
        assert_eq!(
            ClusterFile::from_toml("nats = \"x\"\nzones = []"),
            Err(ClusterError::NoZones)
        );
        let unknown = TWO.replace("nats =", "colour = 1\nnats =");
        assert!(
            matches!(ClusterFile::from_toml(&unknown), Err(ClusterError::Parse(e)) if e.contains("colour"))
        );
    }

    #[test]
    fn the_zones_must_cover_the_walkable_map() {
        let config = crate::config::Config::default();
        let (mesh, _) = crate::run::load_map(&config).unwrap();
        let file = ClusterFile::from_toml(TWO).unwrap();
        file.check_map(&mesh).unwrap();
        let half = TWO.replace("max = [256, 257]", "max = [200, 257]");
        let file = ClusterFile::from_toml(&half).unwrap();
        assert!(
            matches!(file.check_map(&mesh), Err(ClusterError::Uncovered { x, .. }) if x >= 200.0)
        );
    }
}
