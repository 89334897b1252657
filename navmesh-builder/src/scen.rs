//! Moving AI scenario files (`.scen`): batches of start/goal queries with a known optimum.
//!
//! The first non-blank line is `version 1` (`version 1.0` is accepted too). Every further
//! non-blank line is one query of nine fields:
//!
//! ```text
//! bucket  map  width  height  start_x  start_y  goal_x  goal_y  optimal_length
//! ```
//!
//! The files separate fields by tabs; any run of whitespace is accepted here, so a map name
//! cannot contain whitespace. `bucket`, `width` and `height` are non-negative integers;
//! coordinates may be integers or decimals and must be finite; `optimal_length` must be
//! finite and non-negative. Blank lines are skipped.
//!
//! Coordinates are kept as read. In the Moving AI benchmark they are grid cell indices,
//! and the query point is the cell centre: see [`Scenario::cell_centres`]. Their
//! `optimal_length` is the optimum of 8-connected grid moves, which is an upper bound (not
//! the exact value) for an any-angle path of a zero-radius agent.

use navmesh::Point;

/// Field names in the order they appear on a line.
const FIELDS: [&str; 9] = [
    "bucket",
    "map",
    "width",
    "height",
    "start_x",
    "start_y",
    "goal_x",
    "goal_y",
    "optimal_length",
];

/// One query of a scenario file.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Difficulty bucket (Moving AI groups queries by optimal length).
    pub bucket: u32,
    /// Map name as written in the file (usually a path in the benchmark's own tree).
    pub map: String,
    /// Map width in cells.
    pub width: u32,
    /// Map height in cells.
    pub height: u32,
    /// Start, as read.
    pub start: Point,
    /// Goal, as read.
    pub goal: Point,
    /// Length of the optimal path, as stated by the file.
    pub optimal_length: f64,
}

impl Scenario {
    /// Start and goal taken as grid cells: cell `(x, y)` becomes the point
    /// `(x + 0.5, y + 0.5)`, the centre of the unit square `[x, x+1] × [y, y+1]`.
    pub fn cell_centres(&self) -> (Point, Point) {
        let centre = |p: Point| Point::new(p.x + 0.5, p.y + 0.5);
        (centre(self.start), centre(self.goal))
    }
}

/// Why a scenario file could not be parsed. Every message names the 1-based line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScenError {
    /// The text has no non-blank line at all.
    #[error("line 1: empty scenario file (expected `version 1`)")]
    Empty,
    /// The first non-blank line is not a `version` line.
    #[error("line {line}: expected `version 1`, found `{found}`")]
    MissingVersion {
        /// 1-based line number.
        line: usize,
        /// The line as found (trimmed).
        found: String,
    },
    /// A `version` line with a version other than 1.
    #[error("line {line}: unsupported scenario version `{version}` (only version 1 is read)")]
    UnsupportedVersion {
        /// 1-based line number.
        line: usize,
        /// The version as written.
        version: String,
    },
    /// A query line with fewer than nine fields.
    #[error("line {line}: field `{field}` is missing (a query has 9 fields: {})", FIELDS.join(" "))]
    MissingField {
        /// 1-based line number.
        line: usize,
        /// Name of the first missing field.
        field: &'static str,
    },
    /// A query line with more than nine fields.
    #[error("line {line}: unexpected 10th field `{found}` after `optimal_length`")]
    ExtraField {
        /// 1-based line number.
        line: usize,
        /// The first surplus field.
        found: String,
    },
    /// A field that does not hold a valid value.
    #[error("line {line}: field `{field}`: `{value}` is not {expected}")]
    BadField {
        /// 1-based line number.
        line: usize,
        /// Field name.
        field: &'static str,
        /// The text found.
        value: String,
        /// What the field must hold.
        expected: &'static str,
    },
}

/// Parses a whole scenario file. A file with a version line and no query is valid and
/// yields no scenario.
pub fn parse(text: &str) -> Result<Vec<Scenario>, ScenError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let (line, header) = lines.next().ok_or(ScenError::Empty)?;
    let mut words = header.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("version"), Some("1" | "1.0"), None) => {}
        (Some("version"), Some(v), None) => {
            return Err(ScenError::UnsupportedVersion {
                line,
                version: v.to_owned(),
            });
        }
        _ => {
            return Err(ScenError::MissingVersion {
                line,
                found: header.to_owned(),
            });
        }
    }
    lines.map(|(line, l)| parse_line(line, l)).collect()
}

fn parse_line(line: usize, text: &str) -> Result<Scenario, ScenError> {
    let mut words = text.split_whitespace();
    let mut fields = [""; 9];
    for (slot, name) in fields.iter_mut().zip(FIELDS) {
        *slot = words
            .next()
            .ok_or(ScenError::MissingField { line, field: name })?;
    }
    if let Some(extra) = words.next() {
        return Err(ScenError::ExtraField {
            line,
            found: extra.to_owned(),
        });
    }
    let field = |i: usize| Field {
        line,
        name: FIELDS[i],
        text: fields[i],
    };
    Ok(Scenario {
        bucket: field(0).integer()?,
        map: fields[1].to_owned(),
        width: field(2).integer()?,
        height: field(3).integer()?,
        start: Point::new(field(4).coordinate()?, field(5).coordinate()?),
        goal: Point::new(field(6).coordinate()?, field(7).coordinate()?),
        optimal_length: field(8).length()?,
    })
}

/// One field of one line, for parsing with a precise error.
struct Field<'a> {
    line: usize,
    name: &'static str,
    text: &'a str,
}

impl Field<'_> {
    fn error(&self, expected: &'static str) -> ScenError {
        ScenError::BadField {
            line: self.line,
            field: self.name,
            value: self.text.to_owned(),
            expected,
        }
    }

    fn integer(&self) -> Result<u32, ScenError> {
        self.text
            .parse()
            .map_err(|_| self.error("a non-negative integer"))
    }

    fn coordinate(&self) -> Result<f64, ScenError> {
        match self.text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.error("a finite number")),
        }
    }

    fn length(&self) -> Result<f64, ScenError> {
        match self.text.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(self.error("a finite number >= 0")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const LINE: &str = "0\tmaps/dao/arena.map\t49\t49\t1\t11\t1\t12\t1";

    fn one(line: &str) -> Result<Vec<Scenario>, ScenError> {
        parse(&format!("version 1\n{line}\n"))
    }

    #[test]
    fn reads_a_line() {
        let s = one(LINE).unwrap();
        assert_eq!(
            s,
            vec![Scenario {
                bucket: 0,
                map: "maps/dao/arena.map".to_owned(),
                width: 49,
                height: 49,
                start: Point::new(1.0, 11.0),
                goal: Point::new(1.0, 12.0),
                optimal_length: 1.0,
            }]
        );
        assert_eq!(
            s[0].cell_centres(),
            (Point::new(1.5, 11.5), Point::new(1.5, 12.5))
        );
    }

    #[test]
    fn decimal_coordinates_any_whitespace_and_version_1_0() {
        let text = "\n  version 1.0 \r\n\n3  m.map 10\t10   1.25 2.5\t-0.75 3e0  4.5\r\n\n";
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].bucket, 3);
        assert_eq!(s[0].map, "m.map");
        assert_eq!(s[0].start, Point::new(1.25, 2.5));
        assert_eq!(s[0].goal, Point::new(-0.75, 3.0));
        assert_eq!(s[0].optimal_length, 4.5);
    }

    #[test]
    fn version_without_queries_is_empty() {
        assert_eq!(parse("version 1\n").unwrap(), vec![]);
    }

    #[test]
    fn empty_file() {
        assert_eq!(parse(""), Err(ScenError::Empty));
        assert_eq!(parse(" \n\t\n"), Err(ScenError::Empty));
        assert!(parse("").unwrap_err().to_string().contains("line 1"));
    }

    #[test]
    fn missing_version() {
        let err = parse(&format!("{LINE}\n")).unwrap_err();
        assert!(matches!(err, ScenError::MissingVersion { line: 1, .. }));
        assert!(err.to_string().starts_with("line 1: expected `version 1`"));
        // A version line with trailing words is not a version line.
        assert!(matches!(
            parse("\nversion 1 extra\n"),
            Err(ScenError::MissingVersion { line: 2, .. })
        ));
    }

    #[test]
    fn unsupported_version() {
        let err = parse("version 2\n").unwrap_err();
        assert_eq!(
            err,
            ScenError::UnsupportedVersion {
                line: 1,
                version: "2".to_owned()
            }
        );
        assert!(err.to_string().contains("`2`"));
    }

    #[test]
    fn missing_field_names_line_and_field() {
        let err = parse("version 1\n\n0 m.map 10 10 1 2 3 4\n").unwrap_err();
        assert_eq!(
            err,
            ScenError::MissingField {
                line: 3,
                field: "optimal_length"
            }
        );
        assert!(
            err.to_string()
                .starts_with("line 3: field `optimal_length` is missing")
        );
        assert_eq!(
            one("0 m.map").unwrap_err(),
            ScenError::MissingField {
                line: 2,
                field: "width"
            }
        );
    }

    #[test]
    fn extra_field() {
        let err = one(&format!("{LINE}\t7")).unwrap_err();
        assert_eq!(
            err,
            ScenError::ExtraField {
                line: 2,
                found: "7".to_owned()
            }
        );
    }

    #[test]
    fn bad_fields_name_line_and_field() {
        let cases = [
            ("x m 1 1 0 0 0 0 0", "bucket", "x"),
            ("-1 m 1 1 0 0 0 0 0", "bucket", "-1"),
            ("0 m 1.5 1 0 0 0 0 0", "width", "1.5"),
            ("0 m 1 h 0 0 0 0 0", "height", "h"),
            ("0 m 1 1 a 0 0 0 0", "start_x", "a"),
            ("0 m 1 1 0 NaN 0 0 0", "start_y", "NaN"),
            ("0 m 1 1 0 0 inf 0 0", "goal_x", "inf"),
            ("0 m 1 1 0 0 0 1,5 0", "goal_y", "1,5"),
            ("0 m 1 1 0 0 0 0 -2", "optimal_length", "-2"),
        ];
        for (line, field, value) in cases {
            let err = one(line).unwrap_err();
            match &err {
                ScenError::BadField {
                    line: 2,
                    field: f,
                    value: v,
                    ..
                } => {
                    assert_eq!((*f, v.as_str()), (field, value), "{line}");
                }
                other => panic!("{line}: unexpected {other:?}"),
            }
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("line 2: field `{field}`: `{value}`")),
                "{msg}"
            );
        }
    }

    #[test]
    fn error_on_a_later_line_counts_blank_lines() {
        let text = format!("version 1\n{LINE}\n\n{LINE}\n0 m 1 1 0 0 0 0 zz\n");
        assert!(matches!(
            parse(&text),
            Err(ScenError::BadField {
                line: 5,
                field: "optimal_length",
                ..
            })
        ));
    }

    /// Every shipped scenario file parses, and agrees with its map's size.
    #[test]
    fn shipped_scenarios_parse() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../maps/movingai");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".map.scen") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let scenarios = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let queries = text
                .lines()
                .skip(1)
                .filter(|l| !l.trim().is_empty())
                .count();
            assert_eq!(scenarios.len(), queries, "{}", path.display());
            assert!(queries > 100, "{}", path.display());

            // The map file beside it: `foo.map.scen` → `foo.map`, header `height H`, `width W`.
            let map_path = path.with_extension("");
            let map = std::fs::read_to_string(&map_path).unwrap();
            let header = |key: &str| -> u32 {
                map.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap()
            };
            let (width, height) = (header("width "), header("height "));
            let map_name = map_path.file_name().unwrap().to_string_lossy().into_owned();
            for s in &scenarios {
                assert!(s.map.ends_with(&map_name), "{} vs {map_name}", s.map);
                assert_eq!((s.width, s.height), (width, height), "{}", path.display());
                for p in [s.start, s.goal] {
                    assert!(p.x >= 0.0 && p.x < f64::from(width), "{p:?}");
                    assert!(p.y >= 0.0 && p.y < f64::from(height), "{p:?}");
                }
                assert!(s.optimal_length >= 0.0);
            }
        }
        assert_eq!(files, 5, "expected the five shipped scenario files");
    }
}
