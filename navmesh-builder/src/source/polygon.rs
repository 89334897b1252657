//! Polygon JSON maps: walkable regions drawn as polygons, in metres.
//!
//! A document lists one or more walkable **regions**. Each region is an `outer` ring (its
//! boundary) and any number of `holes` (obstacles cut out of it: walls, pillars, buildings,
//! water). A ring is a list of `[x, y]` points in metres:
//!
//! ```json
//! {
//!   "regions": [
//!     {
//!       "outer": [[0, 0], [20, 0], [20, 12], [0, 12]],
//!       "holes": [
//!         [[4, 4], [6, 4], [6, 6], [4, 6]],
//!         [[12, 3], [15, 3], [15, 9], [14, 9], [14, 4], [12, 4]]
//!       ]
//!     },
//!     {
//!       "outer": [[30, 0], [36, 0], [33, 5]]
//!     }
//!   ]
//! }
//! ```
//!
//! - **Units**: metres, as JSON numbers; any origin; `y` may point up or down.
//! - **Orientation does not matter**: rings may be clockwise or counter-clockwise, the
//!   builder normalises them.
//! - **Closing point optional**: a ring need not repeat its first point; if the last point
//!   equals the first, it is dropped.
//! - **Holes are obstacles**: the walkable area of a region is inside its outer ring and
//!   outside all of its holes. `holes` may be omitted when there are none.
//! - **Separate regions** are separate islands (not reachable from each other). A region may
//!   sit inside another region's hole (a courtyard inside a building), but not on top of
//!   another region's walkable area.
//! - **Touching is allowed** at a shared vertex: two rings (or one ring with itself) may
//!   meet at a point that is a vertex of both, with exactly the same coordinates. Rings must
//!   not cross, overlap along an edge, or touch in the middle of an edge.
//! - Unknown fields are an error, so a misspelt `"hole"` does not silently drop obstacles.
//!
//! Parsing only checks the document's syntax and shape and reports the line and column of
//! the problem; the geometric rules above are checked by [`crate::validate`].
//!
//! ```
//! use navmesh_builder::source::polygon;
//!
//! let text = r#"{"regions": [{"outer": [[0, 0], [4, 0], [4, 3], [0, 3], [0, 0]]}]}"#;
//! let map = polygon::parse("room", text)?;
//! assert_eq!(map.regions[0].outer.len(), 4); // the closing point is dropped
//! # Ok::<(), polygon::PolygonError>(())
//! ```

use navmesh::Point;
use serde::Deserialize;

use super::{MapInput, Region};

/// Why a polygon JSON document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PolygonError {
    /// The text is not a valid document: a JSON syntax error, a missing or unknown field, a
    /// value of the wrong type (a point that is not two numbers, ...).
    #[error("line {line}, column {column}: {message}")]
    Json {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What is wrong, without the position.
        message: String,
    },
    /// The document's `regions` list is empty.
    #[error("the map has no regions")]
    NoRegions,
}

impl From<serde_json::Error> for PolygonError {
    fn from(e: serde_json::Error) -> Self {
        let (line, column) = (e.line(), e.column());
        let full = e.to_string();
        let suffix = format!(" at line {line} column {column}");
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
        PolygonError::Json {
            line,
            column,
            message,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    regions: Vec<RegionDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegionDoc {
    outer: Vec<[f64; 2]>,
    #[serde(default)]
    holes: Vec<Vec<[f64; 2]>>,
}

/// Parses a polygon JSON document. `name` becomes the map's name; `known_area` is `None`.
pub fn parse(name: &str, text: &str) -> Result<MapInput, PolygonError> {
    let doc: Document = serde_json::from_str(text)?;
    if doc.regions.is_empty() {
        return Err(PolygonError::NoRegions);
    }
    let regions = doc
        .regions
        .into_iter()
        .map(|r| Region {
            outer: ring(r.outer),
            holes: r.holes.into_iter().map(ring).collect(),
        })
        .collect();
    Ok(MapInput {
        name: name.to_owned(),
        regions,
        known_area: None,
    })
}

/// Converts a ring, dropping a closing point equal to the first.
fn ring(points: Vec<[f64; 2]>) -> Vec<Point> {
    let mut ring: Vec<Point> = points.into_iter().map(|[x, y]| Point::new(x, y)).collect();
    if ring.len() > 1 && ring.first() == ring.last() {
        ring.pop();
    }
    ring
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_error(text: &str) -> (usize, usize, String) {
        match parse("test", text) {
            Err(PolygonError::Json {
                line,
                column,
                message,
            }) => (line, column, message),
            other => panic!("expected a JSON error, got {other:?}"),
        }
    }

    #[test]
    fn parses_regions_and_holes() {
        let text = r#"{
            "regions": [
                {"outer": [[0, 0], [10, 0], [10, 10], [0, 10]],
                 "holes": [[[2, 2], [3, 2], [3, 3], [2, 2]]]},
                {"outer": [[20, 0], [25.5, 0], [20, 5]], "holes": []}
            ]
        }"#;
        let map = parse("two", text).unwrap();
        assert_eq!(map.name, "two");
        assert_eq!(map.known_area, None);
        assert_eq!(map.regions.len(), 2);
        assert_eq!(map.regions[0].outer.len(), 4);
        assert_eq!(map.regions[0].holes[0].len(), 3, "closing point dropped");
        assert_eq!(map.regions[1].outer[1], Point::new(25.5, 0.0));
        assert!(map.regions[1].holes.is_empty());
    }

    #[test]
    fn holes_may_be_omitted() {
        let map = parse("t", r#"{"regions": [{"outer": [[0, 0], [1, 0], [0, 1]]}]}"#).unwrap();
        assert!(map.regions[0].holes.is_empty());
    }

    #[test]
    fn syntax_error_reports_its_line() {
        let text = "{\n  \"regions\": [\n    {\"outer\": [[0, 0], [1, 0] [0, 1]]}\n  ]\n}";
        let (line, column, message) = json_error(text);
        assert_eq!(line, 3);
        assert_eq!(column, 31);
        assert!(!message.contains("line"), "{message}");
        let e = parse("t", text).unwrap_err();
        assert!(e.to_string().starts_with("line 3, column 31: "), "{e}");
    }

    #[test]
    fn unknown_field_is_an_error() {
        let text = "{\"regions\": [\n  {\"outer\": [[0, 0], [1, 0], [0, 1]],\n   \"hole\": []}\n]}";
        let (line, _, message) = json_error(text);
        assert_eq!(line, 3);
        assert!(message.contains("unknown field `hole`"), "{message}");
        let (line, _, message) = json_error("{\"regions\": [], \"scale\": 2}");
        assert_eq!(line, 1);
        assert!(message.contains("unknown field `scale`"), "{message}");
    }

    #[test]
    fn wrong_shapes_are_errors() {
        let (line, _, message) = json_error("{\"regions\": [{\"outer\": [[0, 0, 1]]}]}");
        assert_eq!(line, 1);
        assert!(!message.is_empty());
        let (_, _, message) = json_error("{\"regions\": [{\"outer\": [[0, \"a\"]]}]}");
        assert!(message.contains("invalid type"), "{message}");
        let (_, _, message) = json_error("{\"regions\": [{\"holes\": []}]}");
        assert!(message.contains("missing field `outer`"), "{message}");
        let (_, _, message) = json_error("{}");
        assert!(message.contains("missing field `regions`"), "{message}");
        let (_, _, message) = json_error("{\"regions\": [{\"outer\": [[1e400, 0]]}]}");
        assert!(message.contains("out of range"), "{message}");
        json_error("");
    }

    #[test]
    fn no_regions() {
        let e = parse("t", r#"{"regions": []}"#).unwrap_err();
        assert!(matches!(e, PolygonError::NoRegions), "{e:?}");
        assert_eq!(e.to_string(), "the map has no regions");
    }

    #[test]
    fn example_maps_parse() {
        for (name, text) in [
            ("arena", include_str!("../../../maps/arena.json")),
            ("town", include_str!("../../../maps/town.json")),
        ] {
            let map = parse(name, text).unwrap();
            assert_eq!(map.name, name);
            let holes: usize = map.regions.iter().map(|r| r.holes.len()).sum();
            println!("{name}: {} regions, {holes} holes", map.regions.len());
        }
    }
}
