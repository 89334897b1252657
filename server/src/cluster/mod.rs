//! One world across many processes: zones (`server zone`) simulate rectangles of the map,
//! gateways (`server gateway`) hold the clients, NATS carries what they say to each other
//! (`docs/zones.md`). This module reads the cluster file they share and checks it against
//! the map, naming the zone and what is wrong; `docs/cluster.example.toml` lists every key.
//!
//! ```toml
//! npcs = 2000
//! nats = "nats://127.0.0.1:4222"
//!
//! [[zones]]
//! name = "west"
//! region = [0.0, 0.0, 128.0, 257.0]
//! metrics_listen = "127.0.0.1:9201"
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use navmesh::{NavMesh, TriId};
use serde::Deserialize;

pub mod bus;
mod carry;
pub mod census;
mod coverage;
pub mod gateway;
pub mod zone;
mod zone_world;

/// The least ghost band: the view's leave radius (30 m and 4 m of hysteresis, the
/// server's defaults), so that a body near a border sees everything its clients may see.
pub const MIN_GHOST_BAND_M: f32 = 34.0;

/// A cluster: the map, the bus, the store, the zones and the gateways.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// The map file (Moving AI grid or polygon JSON), relative to the cluster file's
    /// directory; `None`: the embedded default map (den520d), as `server run`.
    #[serde(default)]
    pub map: Option<PathBuf>,
    /// NPCs in the whole world, spread over the zones by the area of their regions.
    #[serde(default = "default_npcs")]
    pub npcs: u32,
    /// Seed of the zones' worlds and spawns (each zone mixes in its index).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The NATS server's URL (core NATS; JetStream is not needed).
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
    /// The gateways.
    #[serde(default)]
    pub gateways: Vec<GatewaySpec>,
    /// The file it was read from ([`ClusterFile::load`]), which its errors name; `None`
    /// when read from text.
    #[serde(skip)]
    path: Option<PathBuf>,
}

/// The most NPCs a cluster file may ask for (as `server run`'s own limit).
const MAX_NPCS: u64 = 100_000;
/// The most zones: a zone's NPC ids carry its number plus one in bits 24 to 30 (bit 31
/// marks players).
const MAX_ZONES: u64 = 127;
/// The most gateways: a gateway's player ids carry its number in bits 24 to 30.
const MAX_GATEWAYS: u64 = 128;

fn default_npcs() -> u32 {
    2_000
}

fn default_seed() -> u64 {
    1
}

fn default_zone_metrics() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// One gateway: its name (part of the ids it mints), where clients reach it, and its
/// metrics endpoint.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewaySpec {
    /// A unique name: letters, digits, `-` and `_`.
    pub name: String,
    /// The QUIC address clients connect to.
    pub listen: SocketAddr,
    /// The HTTP address of `/metrics`, `/healthz` and the viewer.
    pub metrics_listen: SocketAddr,
}

fn default_ghost_band() -> f32 {
    40.0
}

fn default_handoff_margin() -> f32 {
    2.0
}

/// One zone: a name and the rectangle of the map it owns (`x0, y0` inclusive, `x1, y1`
/// exclusive, so neighbours can share an edge).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    /// A unique name: letters, digits, `-` and `_` (it is part of NATS subjects).
    pub name: String,
    /// `[x0, y0, x1, y1]`, metres.
    pub region: [f32; 4],
    /// The HTTP address of its `/metrics` and `/healthz` (default: loopback, any port).
    #[serde(default = "default_zone_metrics")]
    pub metrics_listen: SocketAddr,
}

impl ZoneSpec {
    /// The region's lower corner.
    pub fn min(&self) -> [f32; 2] {
        [self.region[0], self.region[1]]
    }

    /// The region's upper corner.
    pub fn max(&self) -> [f32; 2] {
        [self.region[2], self.region[3]]
    }

    /// The region's area, square metres.
    pub fn area(&self) -> f32 {
        (self.region[2] - self.region[0]) * (self.region[3] - self.region[1])
    }

    /// Whether `(x, y)` is in this zone's rectangle.
    pub fn contains(&self, x: f32, y: f32) -> bool {
        let [x0, y0, x1, y1] = self.region;
        x >= x0 && x < x1 && y >= y0 && y < y1
    }

    /// The distance from `(x, y)` to the rectangle (0 inside).
    pub fn distance(&self, x: f32, y: f32) -> f32 {
        let [x0, y0, x1, y1] = self.region;
        let dx = (x0 - x).max(x - x1).max(0.0);
        let dy = (y0 - y).max(y - y1).max(0.0);
        dx.hypot(dy)
    }

    fn overlaps(&self, other: &ZoneSpec) -> bool {
        let ([a0, b0, a1, b1], [c0, d0, c1, d1]) = (self.region, other.region);
        a0 < c1 && c0 < a1 && b0 < d1 && d0 < b1
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
    #[error("zone {zone:?}: region {region:?} must be finite with x0 < x1 and y0 < y1")]
    BadRectangle {
        /// The zone.
        zone: String,
        /// Its region.
        region: [f32; 4],
    },
    /// A gateway's name is empty, too long, badly spelled, or used twice.
    #[error("gateway name {0:?} must be unique and 1 to 32 letters, digits, '-' or '_'")]
    BadGatewayName(String),
    /// A process was asked to run a zone or gateway the file does not name.
    #[error("the cluster file names no {kind} {name:?} (it names {known})")]
    Unknown {
        /// "zone" or "gateway".
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// The names it has.
        known: String,
    },
    /// The file cannot be read.
    #[error("cannot read the cluster file {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: String,
    },
    /// What is wrong with the cluster file at `path`: it does not parse, or a check fails.
    #[error("{path}: {error}")]
    InFile {
        /// The file.
        path: String,
        /// What is wrong.
        error: Box<ClusterError>,
    },
    /// More NPCs, zones or gateways than a cluster can hold (ids carry a zone's or a
    /// gateway's number in 7 bits; a zone spawns at most 16,000 NPCs, so that its frame
    /// fits in one bus message, and a cluster at most 100,000).
    #[error("{what} is {got}, more than the {most} a cluster can hold")]
    TooMany {
        /// "npcs", "zones" or "gateways".
        what: &'static str,
        /// How many the file asks for.
        got: u64,
        /// The most there may be.
        most: u64,
    },
    /// The store is not a PostgreSQL URL, or a malformed one.
    #[error("store: {0}")]
    Store(String),
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
    #[error("no zone owns the walkable point ({x}, {y})")]
    Uncovered {
        /// x, metres.
        x: f32,
        /// y, metres.
        y: f32,
    },
}

/// `error`, found in the cluster file at `path`.
fn in_file(path: &Path, error: ClusterError) -> ClusterError {
    ClusterError::InFile {
        path: path.display().to_string(),
        error: Box::new(error),
    }
}

fn good_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl ClusterFile {
    /// Reads and checks the cluster file at `path`; a relative `map` is made relative to
    /// the file's directory. Every error names the file.
    pub fn load(path: &Path) -> Result<ClusterFile, ClusterError> {
        let text = std::fs::read_to_string(path).map_err(|err| ClusterError::Read {
            path: path.display().to_string(),
            error: err.to_string(),
        })?;
        let mut file = ClusterFile::from_toml(&text).map_err(|error| in_file(path, error))?;
        if let Some(map) = &file.map
            && map.is_relative()
        {
            let dir = path.parent().unwrap_or(Path::new("."));
            file.map = Some(dir.join(map));
        }
        file.path = Some(path.to_owned());
        Ok(file)
    }

    /// The zone named `name`.
    pub fn zone(&self, name: &str) -> Result<(usize, &ZoneSpec), ClusterError> {
        self.zones
            .iter()
            .enumerate()
            .find(|(_, zone)| zone.name == name)
            .ok_or_else(|| ClusterError::Unknown {
                kind: "zone",
                name: name.to_owned(),
                known: names(self.zones.iter().map(|z| z.name.as_str())),
            })
    }

    /// The gateway named `name`; `None` picks the only one.
    pub fn gateway(&self, name: Option<&str>) -> Result<(usize, &GatewaySpec), ClusterError> {
        let unknown = || ClusterError::Unknown {
            kind: "gateway",
            name: name.unwrap_or("(none given)").to_owned(),
            known: names(self.gateways.iter().map(|g| g.name.as_str())),
        };
        match name {
            Some(name) => self
                .gateways
                .iter()
                .enumerate()
                .find(|(_, g)| g.name == name)
                .ok_or_else(unknown),
            None if self.gateways.len() == 1 => Ok((0, &self.gateways[0])),
            None => Err(unknown()),
        }
    }

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
        // Each zone spawns at most its room's worth of NPCs (zone_world::NPC_ROOM: a
        // zone's frame must fit in one bus message).
        let room = (zone_world::NPC_ROOM as u64).saturating_mul(self.zones.len() as u64);
        let counts = [
            ("npcs", u64::from(self.npcs), MAX_NPCS.min(room)),
            ("zones", self.zones.len() as u64, MAX_ZONES),
            ("gateways", self.gateways.len() as u64, MAX_GATEWAYS),
        ];
        for (what, got, most) in counts {
            if got > most {
                return Err(ClusterError::TooMany { what, got, most });
            }
        }
        // Checked here, so that a zone's or a gateway's error names the file and the key.
        if let Some(url) = &self.store
            && let Err(err) = url.parse::<store::StoreSpec>()
        {
            return Err(ClusterError::Store(err.to_string()));
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
            if !good_name(&zone.name) {
                return Err(ClusterError::BadName(zone.name.clone()));
            }
            let [x0, y0, x1, y1] = zone.region;
            let finite = zone.region.iter().all(|v| v.is_finite());
            if !finite || x0 >= x1 || y0 >= y1 {
                return Err(ClusterError::BadRectangle {
                    zone: zone.name.clone(),
                    region: zone.region,
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
        for (k, gateway) in self.gateways.iter().enumerate() {
            let twice = self.gateways[..k].iter().any(|g| g.name == gateway.name);
            if twice || !good_name(&gateway.name) {
                return Err(ClusterError::BadGatewayName(gateway.name.clone()));
            }
        }
        Ok(())
    }

    /// Checks the zones against the map: the zones' rectangles cover every triangle of
    /// it (`coverage.rs`), so that no walkable point is in no zone.
    pub fn check_map(&self, mesh: &NavMesh) -> Result<(), ClusterError> {
        let regions: Vec<[f64; 4]> = self.zones.iter().map(|z| z.region.map(f64::from)).collect();
        for t in 0..mesh.triangle_count() {
            let triangle = mesh.triangle_points(TriId(t as u32));
            if !coverage::covered(triangle, &regions) {
                let p = coverage::unowned_point(triangle, |p| {
                    self.zone_of(p.x as f32, p.y as f32).is_some()
                });
                let (x, y) = (p.x as f32, p.y as f32);
                let error = ClusterError::Uncovered { x, y };
                return Err(match &self.path {
                    Some(path) => in_file(path, error),
                    None => error,
                });
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
                let ([a0, b0, a1, b1], [c0, d0, c1, d1]) = (zone.region, other.region);
                let gx = (c0 - a1).max(a0 - c1).max(0.0);
                let gy = (d0 - b1).max(b0 - d1).max(0.0);
                gx.hypot(gy) <= band
            })
            .collect()
    }
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let list: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    if list.is_empty() {
        "none".to_owned()
    } else {
        list.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
nats = "nats://127.0.0.1:4222"

[[zones]]
name = "west"
region = [0, 0, 128, 257]

[[zones]]
name = "east"
region = [128, 0, 256, 257]
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
            with("\n[[zones]]\nname = \"west\"\nregion = [300, 0, 301, 1]\n"),
            Err(ClusterError::DuplicateName(name)) if name == "west"
        ));
        assert!(matches!(
            with("\n[[zones]]\nname = \"mid\"\nregion = [100, 0, 150, 10]\n"),
            Err(ClusterError::Overlap(a, b)) if a == "west" && b == "mid"
        ));
        assert!(matches!(
            with("\n[[zones]]\nname = \"a.b\"\nregion = [300, 0, 301, 1]\n"),
            Err(ClusterError::BadName(_))
        ));
        assert!(matches!(
            with("\n[[zones]]\nname = \"flat\"\nregion = [300, 0, 300, 1]\n"),
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
        let mysql = TWO.replace("nats =", "store = \"mysql://db/game\"\nnats =");
        let err = ClusterFile::from_toml(&mysql).unwrap_err();
        assert!(matches!(err, ClusterError::Store(_)), "{err}");
        assert!(err.to_string().starts_with("store: "), "{err}");
        assert!(err.to_string().contains("mysql://db/game"), "{err}");
        assert!(matches!(
            ClusterFile::from_toml("nats = 3"),
            Err(ClusterError::Parse(_))
        ));
        assert_eq!(
            ClusterFile::from_toml("nats = \"x\"\nzones = []"),
            Err(ClusterError::NoZones)
        );
        let crowd = TWO.replace("nats =", "npcs = 4000000000\nnats =");
        assert_eq!(
            ClusterFile::from_toml(&crowd),
            Err(ClusterError::TooMany {
                what: "npcs",
                got: 4_000_000_000,
                most: 32_000
            })
        );
        // One zone's frame lists at most 16,000 NPCs: 100,000 need seven zones.
        let one = "npcs = 100000\nnats = \"x\"\n[[zones]]\nname = \"all\"\nregion = [0, 0, 9, 9]\n";
        assert_eq!(
            ClusterFile::from_toml(one),
            Err(ClusterError::TooMany {
                what: "npcs",
                got: 100_000,
                most: 16_000
            })
        );
        // Zone 128's NPC ids would carry the players' bit; gateway 129's ids would be
        // gateway 1's.
        let zones: String = (0..128)
            .map(|k| {
                let x = 1_000 + 10 * k;
                format!(
                    "\n[[zones]]\nname = \"z{k}\"\nregion = [{x}, 300, {}, 301]\n",
                    x + 1
                )
            })
            .collect();
        let err = with(&zones).unwrap_err();
        assert_eq!(
            err.to_string(),
            "zones is 130, more than the 127 a cluster can hold"
        );
        let gateways: String = (0..129)
            .map(|k| {
                format!(
                    "\n[[gateways]]\nname = \"g{k}\"\nlisten = \"127.0.0.1:{}\"\n\
                     metrics_listen = \"127.0.0.1:{}\"\n",
                    10_000 + k,
                    20_000 + k
                )
            })
            .collect();
        assert!(matches!(
            with(&gateways),
            Err(ClusterError::TooMany {
                what: "gateways",
                got: 129,
                most: 128
            })
        ));
        let unknown = TWO.replace("nats =", "colour = 1\nnats =");
        assert!(
            matches!(ClusterFile::from_toml(&unknown), Err(ClusterError::Parse(e)) if e.contains("colour"))
        );
    }

    use crate::test_support::ScratchFile as Scratch;

    #[test]
    fn errors_in_a_loaded_file_name_the_file() {
        let bad_toml = Scratch::new("parse", "nats = 3");
        let err = ClusterFile::load(&bad_toml.0).unwrap_err();
        let shown = err.to_string();
        assert!(
            matches!(&err, ClusterError::InFile { path, error }
                if *path == bad_toml.0.display().to_string()
                    && matches!(**error, ClusterError::Parse(_))),
            "{shown}"
        );
        assert!(
            shown.starts_with(&format!("{}: ", bad_toml.0.display())),
            "{shown}"
        );
        assert!(shown.contains("does not parse"), "{shown}");

        let overlap = format!("{TWO}\n[[zones]]\nname = \"mid\"\nregion = [100, 0, 150, 10]\n");
        let overlap = Scratch::new("overlap", &overlap);
        let shown = ClusterFile::load(&overlap.0).unwrap_err().to_string();
        assert_eq!(
            shown,
            format!(
                "{}: zones \"west\" and \"mid\" overlap",
                overlap.0.display()
            )
        );

        let no_zones = Scratch::new("empty", "nats = \"x\"\nzones = []");
        let shown = ClusterFile::load(&no_zones.0).unwrap_err().to_string();
        assert_eq!(
            shown,
            format!("{}: the cluster file names no zones", no_zones.0.display())
        );

        // The map check, later, names the file too.
        let half = TWO.replace("region = [128, 0, 256, 257]", "region = [128, 0, 200, 257]");
        let half = Scratch::new("half", &half);
        let file = ClusterFile::load(&half.0).unwrap();
        let (mesh, _) = crate::run::load_map(&crate::config::Config::default()).unwrap();
        let err = file.check_map(&mesh).unwrap_err();
        assert!(
            matches!(&err, ClusterError::InFile { error, .. }
                if matches!(**error, ClusterError::Uncovered { x, .. } if x >= 200.0)),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("{}: no zone owns", half.0.display()))
        );
    }

    #[test]
    fn the_zones_must_cover_the_walkable_map() {
        let config = crate::config::Config::default();
        let (mesh, _) = crate::run::load_map(&config).unwrap();
        let file = ClusterFile::from_toml(TWO).unwrap();
        file.check_map(&mesh).unwrap();
        let half = TWO.replace("region = [128, 0, 256, 257]", "region = [128, 0, 200, 257]");
        let file = ClusterFile::from_toml(&half).unwrap();
        assert!(
            matches!(file.check_map(&mesh), Err(ClusterError::Uncovered { x, .. }) if x >= 200.0)
        );
        // A strip a metre wide between two zones, through walkable ground, in which no
        // triangle's centre lies (the check once looked at centres only).
        let strip = "nats = \"n\"\n[[zones]]\nname = \"w\"\nregion = [-10, -10, 23, 300]\n\
                     [[zones]]\nname = \"e\"\nregion = [24, -10, 300, 300]\n";
        let file = ClusterFile::from_toml(strip).unwrap();
        let centres_owned = (0..mesh.triangle_count()).all(|t| {
            let [a, b, c] = mesh.triangle_points(TriId(t as u32));
            let centre = (a + b + c) * (1.0 / 3.0);
            file.zone_of(centre.x as f32, centre.y as f32).is_some()
        });
        assert!(
            centres_owned,
            "the strip is not one the old check let through"
        );
        match file.check_map(&mesh) {
            Err(ClusterError::Uncovered { x, .. }) => assert!((23.0..24.0).contains(&x), "{x}"),
            other => panic!("expected the strip to be found, got {other:?}"),
        }
    }

    #[test]
    fn the_example_file_reads_and_names_its_zones_and_gateway() {
        let text = include_str!("../../../docs/cluster.example.toml");
        let file = ClusterFile::from_toml(text).unwrap();
        assert_eq!(file.npcs, 2_000);
        assert_eq!(file.zones.len(), 2);
        assert_eq!(file.zone("east").unwrap().0, 1);
        assert_eq!(file.gateway(None).unwrap().1.name, "gw1");
        let err = file.zone("north").unwrap_err().to_string();
        assert!(
            err.contains("\"north\"") && err.contains("\"west\", \"east\""),
            "{err}"
        );
        assert!(file.gateway(Some("gw2")).is_err());
    }
}
