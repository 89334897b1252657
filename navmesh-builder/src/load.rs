//! Getting a mesh for a program that runs one: the one map loader every binary uses.
//!
//! A program is given either a navmesh file (`.navmesh`, decoded and checked), or a map the
//! builder reads (`.json` polygon maps, `.map` Moving AI grid maps), which is built in
//! memory with default parameters, or a map embedded in the program ([`build_source`]).
//! This is why the server depends on the builder: it accepts raw maps, and its default map
//! is a grid map built at start. Every error names the file and keeps the cause as its
//! source, so a caller printing the chain shows each message once.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use navmesh::{DecodeError, NavMesh};

use crate::pipeline::{BuildError, Built, SourceKind, StageTime, build};
use crate::triangulate::RefineParams;

/// A mesh ready to use, with where it came from.
#[derive(Debug)]
pub struct LoadedMap {
    /// The mesh.
    pub mesh: NavMesh,
    /// The map's name: the file name, or the embedded map's name.
    pub name: String,
    /// Whether the mesh was decoded from a file or built from a map.
    pub origin: Origin,
    /// Time taken to read and decode or build it.
    pub elapsed: Duration,
}

/// How a [`LoadedMap`] was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Decoded from a navmesh file.
    NavmeshFile,
    /// Built in memory from a map file or an embedded map.
    Built,
}

impl fmt::Display for LoadedMap {
    /// One line for the user: `navmesh file, loaded in 1.2 ms` or
    /// `map built in memory in 23.0 ms`, with the triangle count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.elapsed.as_secs_f64() * 1e3;
        let how = match self.origin {
            Origin::NavmeshFile => "navmesh file, loaded in",
            Origin::Built => "map built in memory in",
        };
        write!(
            f,
            "{how} {ms:.1} ms: {} triangles",
            self.mesh.triangle_count()
        )
    }
}

/// Why a map could not be loaded. Each variant names the file; the cause is its source.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file name's extension is none of `.navmesh`, `.json`, `.map`.
    #[error(
        "{}: unknown map format (expected .navmesh for navmesh files, .json for polygon maps or .map for Moving AI grid maps)",
        path.display()
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The navmesh file is damaged, truncated, foreign or of an unknown version.
    #[error("{} is not a valid navmesh file", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: DecodeError,
    },
    /// The map could not be built (it does not parse, or its outline is invalid).
    #[error("{name}")]
    Build {
        /// The file as given, or the embedded map's name.
        name: String,
        /// What the builder found.
        #[source]
        source: BuildError,
    },
}

/// Loads `path`: a `.navmesh` file is decoded; a `.json` or `.map` map is built with the
/// builder's default parameters.
pub fn load_map(path: &Path) -> Result<LoadedMap, LoadError> {
    let start = Instant::now();
    let is_navmesh = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("navmesh"));
    if is_navmesh {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mesh = navmesh::decode(&bytes).map_err(|source| LoadError::Decode {
            path: path.to_owned(),
            source,
        })?;
        return Ok(LoadedMap {
            mesh,
            name: file_name(path),
            origin: Origin::NavmeshFile,
            elapsed: start.elapsed(),
        });
    }
    let built = build_file(path, &RefineParams::default(), &mut |_| {})?;
    Ok(LoadedMap {
        mesh: built.mesh,
        name: file_name(path),
        origin: Origin::Built,
        elapsed: start.elapsed(),
    })
}

/// Builds a map held in memory (a program's embedded default map) with the builder's
/// default parameters. `name` names it in errors and in [`LoadedMap::name`].
pub fn build_source(name: &str, text: &str, kind: SourceKind) -> Result<LoadedMap, LoadError> {
    let start = Instant::now();
    let built =
        build(name, text, kind, &RefineParams::default(), &mut |_| {}).map_err(|source| {
            LoadError::Build {
                name: name.to_owned(),
                source,
            }
        })?;
    Ok(LoadedMap {
        mesh: built.mesh,
        name: name.to_owned(),
        origin: Origin::Built,
        elapsed: start.elapsed(),
    })
}

/// Reads and builds a `.json` or `.map` file with `params`, reporting each stage's time to
/// `observe` as it finishes (the builder's `build` command shows them).
pub fn build_file(
    path: &Path,
    params: &RefineParams,
    observe: &mut dyn FnMut(&StageTime),
) -> Result<Built, LoadError> {
    let Some(kind) = SourceKind::from_path(path) else {
        return Err(LoadError::UnknownFormat {
            path: path.to_owned(),
        });
    };
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_owned(),
        source,
    })?;
    build(&file_name(path), &text, kind, params, observe).map_err(|source| LoadError::Build {
        name: path.display().to_string(),
        source,
    })
}

/// The last component of `path`, or the whole path when it has none.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(e: &dyn std::error::Error) -> Vec<String> {
        let mut out = vec![e.to_string()];
        let mut at = e.source();
        while let Some(s) = at {
            out.push(s.to_string());
            at = s.source();
        }
        out
    }

    #[test]
    fn an_unknown_extension_is_named() {
        let e = load_map(Path::new("world.txt")).expect_err("not a map");
        assert!(matches!(e, LoadError::UnknownFormat { .. }));
        assert!(e.to_string().starts_with("world.txt: unknown map format"));
    }

    #[test]
    fn a_missing_file_names_the_file_and_keeps_the_os_error() {
        let e = load_map(Path::new("/nonexistent/x.navmesh")).expect_err("no file");
        let chain = chain(&e);
        assert_eq!(chain[0], "cannot read /nonexistent/x.navmesh");
        assert_eq!(chain.len(), 2);
    }

    #[test]
    fn a_bad_embedded_map_names_it_and_no_message_repeats() {
        let e = build_source("broken.map", "type octile\nheight 2\n", SourceKind::Grid)
            .expect_err("a truncated header");
        let chain = chain(&e);
        assert_eq!(chain[0], "broken.map");
        // Each level adds something: no message contains the next one's text.
        for pair in chain.windows(2) {
            assert!(
                !pair[0].contains(&pair[1]),
                "message repeated in the chain: {chain:?}"
            );
        }
    }

    #[test]
    fn an_embedded_map_builds() {
        let map = "type octile\nheight 3\nwidth 3\nmap\n...\n...\n...\n";
        let loaded = build_source("small.map", map, SourceKind::Grid).expect("a 3x3 open map");
        assert_eq!(loaded.origin, Origin::Built);
        assert_eq!(loaded.name, "small.map");
        assert!(loaded.mesh.triangle_count() >= 2);
        assert!(loaded.to_string().starts_with("map built in memory in "));
    }
}
