//! The grid source's unit tests: parsing, tracing and outlines on small maps.

use super::*;
use navmesh::geom::ring_signed_area;
use std::collections::{HashMap, HashSet};

const MAPS: [&str; 5] = [
    concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/movingai/arena.map"),
    concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/movingai/lak303d.map"),
    concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/movingai/den520d.map"),
    concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/movingai/brc202d.map"),
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../maps/movingai/AcrosstheCape.map"
    ),
];

fn map_text(rows: &[&str]) -> String {
    let mut text = format!(
        "type octile\nheight {}\nwidth {}\nmap\n",
        rows.len(),
        rows.first().map_or(0, |r| r.len())
    );
    for row in rows {
        text.push_str(row);
        text.push('\n');
    }
    text
}

fn grid(rows: &[&str]) -> GridMap {
    parse(&map_text(rows)).unwrap()
}

fn p(x: i32, y: i32) -> Point {
    Point::new(f64::from(x), f64::from(y))
}

fn cell(grid: &GridMap, x: i64, y: i64) -> bool {
    x >= 0 && y >= 0 && grid.is_passable(x as usize, y as usize)
}

fn step(d: usize) -> (i64, i64) {
    [(1, 0), (0, 1), (-1, 0), (0, -1)][d]
}

/// Checks every invariant of `trace_regions` and returns (rings, ring vertices).
fn check(grid: &GridMap, regions: &[Region]) -> (usize, usize) {
    let (labels, count) = label_components(grid);
    assert_eq!(regions.len(), count);
    assert_eq!(grid.component_count(), count);
    let label = |x: i64, y: i64| labels[y as usize * grid.width() + x as usize];

    let mut total_area = 0.0;
    let mut edges = HashSet::new();
    let mut passages: HashMap<(i64, i64), Vec<(usize, usize)>> = HashMap::new();
    let (mut rings, mut vertices) = (0, 0);
    let mut last_comp = None;
    for region in regions {
        let mut region_comp = None;
        let all =
            std::iter::once((&region.outer, true)).chain(region.holes.iter().map(|h| (h, false)));
        for (ring, is_outer) in all {
            rings += 1;
            vertices += ring.len();
            let area = ring_signed_area(ring);
            if is_outer {
                assert!(area > 0.0, "outer ring with area {area}");
            } else {
                assert!(area < 0.0, "hole with area {area}");
            }
            total_area += area;
            let n = ring.len();
            assert!(n >= 4, "ring with {n} points");
            let distinct: HashSet<(i64, i64)> =
                ring.iter().map(|q| (q.x as i64, q.y as i64)).collect();
            assert_eq!(distinct.len(), n, "ring visits a vertex twice");

            // Directions of the ring's edges.
            let mut dirs = Vec::with_capacity(n);
            for i in 0..n {
                let (a, b) = (ring[i], ring[(i + 1) % n]);
                for c in [a.x, a.y] {
                    assert_eq!(c, c.round(), "non-integer coordinate");
                }
                let d = match (b.x - a.x, b.y - a.y) {
                    (dx, 0.0) if dx > 0.0 => EAST,
                    (0.0, dy) if dy > 0.0 => NORTH,
                    (dx, 0.0) if dx < 0.0 => WEST,
                    (0.0, dy) if dy < 0.0 => SOUTH,
                    delta => panic!("edge {a:?} -> {b:?} is {delta:?}"),
                };
                dirs.push(d);
            }
            for i in 0..n {
                assert_eq!(
                    (dirs[i] + dirs[(i + 1) % n]) % 2,
                    1,
                    "collinear edges at {:?}",
                    ring[(i + 1) % n]
                );
            }

            // Unit edges: passable cell of this region on the left, blocked on the right.
            let mut units = Vec::new();
            for i in 0..n {
                let (mut x, mut y) = (ring[i].x as i64, ring[i].y as i64);
                let (ex, ey) = (ring[(i + 1) % n].x as i64, ring[(i + 1) % n].y as i64);
                let d = dirs[i];
                while (x, y) != (ex, ey) {
                    units.push((x, y, d));
                    let (lx, ly) = [(x, y), (x - 1, y), (x - 1, y - 1), (x, y - 1)][d];
                    let (rx, ry) = [(x, y - 1), (x, y), (x - 1, y), (x - 1, y - 1)][d];
                    assert!(cell(grid, lx, ly), "blocked cell left of {:?}", (x, y, d));
                    assert!(
                        !cell(grid, rx, ry),
                        "passable cell right of {:?}",
                        (x, y, d)
                    );
                    let comp = label(lx, ly);
                    assert_eq!(*region_comp.get_or_insert(comp), comp);
                    assert!(edges.insert((x, y, d)), "edge {:?} twice", (x, y, d));
                    let (sx, sy) = step(d);
                    (x, y) = (x + sx, y + sy);
                }
            }
            let m = units.len();
            for j in 0..m {
                let (x, y, d) = units[j];
                let (sx, sy) = step(d);
                let next = units[(j + 1) % m];
                assert_eq!((x + sx, y + sy), (next.0, next.1));
                passages
                    .entry((next.0, next.1))
                    .or_default()
                    .push((d, next.2));
            }
        }
        // Regions in increasing component order (row-major first cell).
        let comp = region_comp.unwrap();
        assert!(last_comp.is_none_or(|last| last < comp));
        last_comp = Some(comp);
    }
    assert_eq!(total_area, grid.passable_count() as f64);

    // The rings cover every boundary edge of the grid exactly once.
    let mut boundary = 0;
    for y in 0..grid.height() as i64 {
        for x in 0..grid.width() as i64 {
            if cell(grid, x, y) {
                boundary += [(1, 0), (-1, 0), (0, 1), (0, -1)]
                    .iter()
                    .filter(|(dx, dy)| !cell(grid, x + dx, y + dy))
                    .count();
            }
        }
    }
    assert_eq!(edges.len(), boundary);

    // No crossing: where two passages meet at a vertex, both turn (two straight passages
    // through one vertex would cross).
    for (v, list) in &passages {
        assert!(list.len() <= 2, "{} passages at {v:?}", list.len());
        if list.len() == 2 {
            assert!(list.iter().all(|(a, b)| a != b), "crossing at {v:?}");
        }
    }
    (rings, vertices)
}

fn traced(rows: &[&str]) -> (GridMap, Vec<Region>) {
    let g = grid(rows);
    let regions = trace_regions(&g);
    check(&g, &regions);
    (g, regions)
}

fn err(text: &str) -> GridError {
    parse(text).unwrap_err()
}

fn assert_line(e: &GridError, line: usize) {
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("line {line}:")), "{msg}");
}

#[test]
fn parses_a_small_map() {
    let g = grid(&[".@G", "STW", "O.."]);
    assert_eq!((g.width(), g.height()), (3, 3));
    let expect = [
        [true, false, true],
        [true, false, false],
        [false, true, true],
    ];
    for (y, row) in expect.iter().enumerate() {
        for (x, &cell) in row.iter().enumerate() {
            assert_eq!(g.is_passable(x, y), cell, "cell ({x}, {y})");
        }
    }
    assert!(!g.is_passable(3, 0));
    assert!(!g.is_passable(0, 3));
    assert_eq!(g.passable_count(), 5);
    assert_eq!(g.component_count(), 3);
}

#[test]
fn accepts_crlf_any_header_order_and_trailing_blank_lines() {
    let text = "width 2  \r\ntype octile\t\r\nheight 2 \r\nmap \r\n.@\r\n@.\r\n\r\n";
    let g = parse(text).unwrap();
    assert_eq!(g, grid(&[".@", "@."]));
    let g = parse("type octile\nheight 1\nwidth 1\nmap\n.").unwrap();
    assert_eq!(g.passable_count(), 1);
    let g = parse("\u{feff}type octile\nheight 1\nwidth 1\nmap\n.\n\n  \n").unwrap();
    assert_eq!(g.passable_count(), 1);
}

#[test]
fn missing_map_line() {
    let e = err("type octile\nheight 1\nwidth 1\n");
    assert!(matches!(e, GridError::MissingMapLine { line: 4 }), "{e:?}");
    assert_line(&e, 4);
    assert!(matches!(err(""), GridError::MissingMapLine { line: 1 }));
}

#[test]
fn unknown_header() {
    let e = err("type octile\nsize 3\nheight 1\nwidth 1\nmap\n.\n");
    assert!(
        matches!(e, GridError::UnknownHeader { line: 2, .. }),
        "{e:?}"
    );
    assert_line(&e, 2);
    assert!(e.to_string().contains("size 3"));
}

#[test]
fn duplicate_header() {
    let e = err("type octile\nheight 1\nheight 1\nwidth 1\nmap\n.\n");
    assert!(
        matches!(
            e,
            GridError::DuplicateHeader {
                line: 3,
                field: "height"
            }
        ),
        "{e:?}"
    );
    assert_line(&e, 3);
    let e = err("type octile\ntype octile\nheight 1\nwidth 1\nmap\n.\n");
    assert!(matches!(
        e,
        GridError::DuplicateHeader {
            line: 2,
            field: "type"
        }
    ));
}

#[test]
fn missing_header() {
    let e = err("type octile\nheight 1\nmap\n.\n");
    assert!(
        matches!(
            e,
            GridError::MissingHeader {
                line: 3,
                field: "width"
            }
        ),
        "{e:?}"
    );
    assert_line(&e, 3);
    let e = err("height 1\nwidth 1\nmap\n.\n");
    assert!(matches!(
        e,
        GridError::MissingHeader {
            line: 3,
            field: "type"
        }
    ));
    let e = err("type octile\nwidth 1\n\nmap\n.\n");
    assert!(matches!(
        e,
        GridError::MissingHeader {
            line: 4,
            field: "height"
        }
    ));
}

#[test]
fn unsupported_type() {
    let e = err("type tile\nheight 1\nwidth 1\nmap\n.\n");
    assert!(
        matches!(e, GridError::UnsupportedType { line: 1, .. }),
        "{e:?}"
    );
    assert_line(&e, 1);
    assert!(e.to_string().contains("`tile`"));
    assert!(matches!(
        err("type\nheight 1\nwidth 1\nmap\n.\n"),
        GridError::UnsupportedType { line: 1, .. }
    ));
}

#[test]
fn bad_size() {
    for value in ["abc", "0", "-1", "", "1.5", "+3", "3 4"] {
        let e = err(&format!("type octile\nheight 1\nwidth {value}\nmap\n.\n"));
        assert!(
            matches!(
                e,
                GridError::BadSize {
                    line: 3,
                    field: "width",
                    ..
                }
            ),
            "{value:?}: {e:?}"
        );
        assert_line(&e, 3);
    }
}

#[test]
fn too_large() {
    for value in ["16385", "99999999999999999999999999"] {
        let e = err(&format!("type octile\nheight {value}\nwidth 1\nmap\n.\n"));
        assert!(
            matches!(
                e,
                GridError::TooLarge {
                    line: 2,
                    field: "height",
                    ..
                }
            ),
            "{value}: {e:?}"
        );
        assert_line(&e, 2);
    }
    // The largest accepted size parses the header (and then fails on the rows).
    let e = err("type octile\nheight 16384\nwidth 16384\nmap\n");
    assert!(matches!(
        e,
        GridError::TooFewRows {
            line: 5,
            actual: 0,
            ..
        }
    ));
}

#[test]
fn row_length() {
    let e = err("type octile\nheight 2\nwidth 3\nmap\n...\n..\n");
    assert!(
        matches!(
            e,
            GridError::RowLength {
                line: 6,
                expected: 3,
                actual: 2
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "line 6: row has 2 cells, expected 3");
    let e = err("type octile\nheight 2\nwidth 3\nmap\n...\n....\n");
    assert!(matches!(
        e,
        GridError::RowLength {
            line: 6,
            expected: 3,
            actual: 4
        }
    ));
    // Trailing whitespace is not part of a header line here: rows are exact.
    let e = err("type octile\nheight 1\nwidth 3\nmap\n... \n");
    assert!(matches!(
        e,
        GridError::RowLength {
            line: 5,
            actual: 4,
            ..
        }
    ));
}

#[test]
fn too_few_rows() {
    let e = err("type octile\nheight 3\nwidth 2\nmap\n..\n..\n");
    assert!(
        matches!(
            e,
            GridError::TooFewRows {
                line: 7,
                expected: 3,
                actual: 2
            }
        ),
        "{e:?}"
    );
    assert_line(&e, 7);
}

#[test]
fn too_many_rows() {
    let e = err("type octile\nheight 2\nwidth 2\nmap\n..\n..\n..\n");
    assert!(
        matches!(
            e,
            GridError::TooManyRows {
                line: 7,
                expected: 2
            }
        ),
        "{e:?}"
    );
    assert_line(&e, 7);
    let e = err("type octile\nheight 1\nwidth 2\nmap\n..\n\n..\n");
    assert!(matches!(e, GridError::TooManyRows { line: 7, .. }));
}

#[test]
fn unknown_cell() {
    let e = err("type octile\nheight 2\nwidth 3\nmap\n...\n.x.\n");
    assert!(
        matches!(
            e,
            GridError::UnknownCell {
                line: 6,
                column: 2,
                ch: 'x'
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "line 6, column 2: unknown cell character 'x'"
    );
    let e = err("type octile\nheight 1\nwidth 3\nmap\n.é.\n");
    assert!(matches!(
        e,
        GridError::UnknownCell {
            line: 5,
            column: 2,
            ch: 'é'
        }
    ));
}

#[test]
fn single_cell() {
    let (_, regions) = traced(&["."]);
    assert_eq!(regions.len(), 1);
    assert_eq!(regions[0].outer, vec![p(0, 0), p(1, 0), p(1, 1), p(0, 1)]);
    assert_eq!(ring_signed_area(&regions[0].outer), 1.0);
    assert!(regions[0].holes.is_empty());

    let (_, regions) = traced(&["@@@", "@.@", "@@@"]);
    assert_eq!(regions.len(), 1);
    assert_eq!(regions[0].outer, vec![p(1, 1), p(2, 1), p(2, 2), p(1, 2)]);
}

#[test]
fn empty_and_full() {
    let (_, regions) = traced(&["@@", "TW"]);
    assert!(regions.is_empty());
    let (_, regions) = traced(&["...", "...", "..."]);
    assert_eq!(regions.len(), 1);
    assert_eq!(regions[0].outer, vec![p(0, 0), p(3, 0), p(3, 3), p(0, 3)]);
}

#[test]
fn l_shape() {
    let (_, regions) = traced(&["..", ".@"]);
    assert_eq!(regions.len(), 1);
    let outer = &regions[0].outer;
    assert_eq!(outer.len(), 6);
    assert_eq!(ring_signed_area(outer), 3.0);
    assert!(regions[0].holes.is_empty());
}

#[test]
fn block_with_blocked_centre() {
    let (_, regions) = traced(&["...", ".@.", "..."]);
    assert_eq!(regions.len(), 1);
    assert_eq!(regions[0].outer.len(), 4);
    assert_eq!(ring_signed_area(&regions[0].outer), 9.0);
    assert_eq!(regions[0].holes.len(), 1);
    assert_eq!(regions[0].holes[0].len(), 4);
    assert_eq!(ring_signed_area(&regions[0].holes[0]), -1.0);
}

#[test]
fn diagonal_pair() {
    for rows in [[".@", "@."], ["@.", ".@"]] {
        let (g, regions) = traced(&rows);
        assert_eq!(g.component_count(), 2);
        assert_eq!(regions.len(), 2);
        for r in &regions {
            assert_eq!(r.outer.len(), 4);
            assert_eq!(ring_signed_area(&r.outer), 1.0);
        }
        let shared: Vec<_> = regions[0]
            .outer
            .iter()
            .filter(|q| regions[1].outer.contains(q))
            .collect();
        assert_eq!(shared, vec![&p(1, 1)]);
    }
}

#[test]
fn checkerboard_hole() {
    for rows in [
        ["....", ".@..", "..@.", "...."],
        ["....", "..@.", ".@..", "...."],
    ] {
        let (g, regions) = traced(&rows);
        assert_eq!(g.component_count(), 1);
        assert_eq!(regions.len(), 1);
        let r = &regions[0];
        assert_eq!(r.outer.len(), 4);
        assert_eq!(ring_signed_area(&r.outer), 16.0);
        assert_eq!(r.holes.len(), 2);
        for h in &r.holes {
            assert_eq!(h.len(), 4);
            assert_eq!(ring_signed_area(h), -1.0);
        }
        let shared: Vec<_> = r.holes[0]
            .iter()
            .filter(|q| r.holes[1].contains(q))
            .collect();
        assert_eq!(shared, vec![&p(2, 2)]);
    }
}

#[test]
fn outer_ring_pinched_at_a_corner() {
    // A loop of cells around (1, 1) whose ends meet only at the corner (2, 2): the hole
    // reaches the outside through that corner, so it touches the outer ring there.
    let (g, regions) = traced(&["...", ".@.", "..@"]);
    assert_eq!(g.component_count(), 1);
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!(ring_signed_area(&r.outer), 8.0);
    assert_eq!(r.outer.len(), 6);
    assert_eq!(r.holes.len(), 1);
    assert_eq!(ring_signed_area(&r.holes[0]), -1.0);
    assert!(r.outer.contains(&p(2, 2)) && r.holes[0].contains(&p(2, 2)));
}

#[test]
fn nested_regions() {
    // An island inside a hole of another region is its own region.
    let (_, regions) = traced(&[".....", ".@@@.", ".@.@.", ".@@@.", "....."]);
    assert_eq!(regions.len(), 2);
    assert_eq!(ring_signed_area(&regions[0].outer), 25.0);
    assert_eq!(ring_signed_area(&regions[0].holes[0]), -9.0);
    assert_eq!(ring_signed_area(&regions[1].outer), 1.0);
}

#[test]
fn load_sets_name_and_area() {
    let input = load("tiny.map", &map_text(&["..", ".@"])).unwrap();
    assert_eq!(input.name, "tiny.map");
    assert_eq!(input.known_area, Some(3.0));
    assert_eq!(input.regions.len(), 1);
    assert!(load("bad.map", "type octile\n").is_err());
}

proptest::proptest! {
    #[test]
    fn random_grids_trace_exactly(
        width in 1usize..12,
        height in 1usize..12,
        cells in proptest::collection::vec(proptest::bool::weighted(0.6), 144),
    ) {
        let rows: Vec<String> = (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| if cells[y * 12 + x] { '.' } else { '@' })
                    .collect()
            })
            .collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let g = grid(&rows);
        check(&g, &trace_regions(&g));
    }
}

#[test]
fn shipped_maps() {
    for path in MAPS {
        let text = std::fs::read_to_string(path).unwrap();
        let g = parse(&text).unwrap();
        let regions = trace_regions(&g);
        check(&g, &regions);
        assert_eq!(trace_regions(&g), regions, "{path}: not deterministic");
    }
}

/// Timing and statistics: `cargo test --release -p navmesh-builder --lib
/// source::grid::tests::stats -- --ignored --nocapture`.
#[test]
#[ignore]
fn stats() {
    for path in MAPS {
        let text = std::fs::read_to_string(path).unwrap();
        let mut best = (f64::MAX, f64::MAX);
        let mut result = None;
        for _ in 0..20 {
            let t0 = std::time::Instant::now();
            let g = parse(&text).unwrap();
            let t1 = std::time::Instant::now();
            let regions = trace_regions(&g);
            let t2 = std::time::Instant::now();
            best.0 = best.0.min((t1 - t0).as_secs_f64() * 1e3);
            best.1 = best.1.min((t2 - t1).as_secs_f64() * 1e3);
            result = Some((g, regions));
        }
        let (g, regions) = result.unwrap();
        let holes: usize = regions.iter().map(|r| r.holes.len()).sum();
        let vertices: usize = regions
            .iter()
            .map(|r| r.outer.len() + r.holes.iter().map(Vec::len).sum::<usize>())
            .sum();
        eprintln!(
            "{}: {}x{}, {} passable, {} regions, {} holes, {} rings, {} vertices; \
             parse {:.2} ms, trace {:.2} ms",
            path.rsplit('/').next().unwrap(),
            g.width(),
            g.height(),
            g.passable_count(),
            regions.len(),
            holes,
            regions.len() + holes,
            vertices,
            best.0,
            best.1
        );
    }
}
