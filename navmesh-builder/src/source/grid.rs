//! Moving AI grid maps (`.map`).
//!
//! A grid map is a header (`type octile`, `height H`, `width W`, in any order), a `map`
//! line and `H` rows of `W` characters. `.`, `G` and `S` are passable; `@`, `O`, `T` and
//! `W` are blocked. Cell `(x, y)` (column `x` of row `y`, both from 0) is the unit square
//! `[x, x+1] × [y, y+1]` in map units; everything outside the map is blocked.
//!
//! [`trace_regions`] turns the union of passable cells into [`Region`]s: one per
//! 4-connected component of passable cells (cells that touch only at a corner are not
//! connected), with the boundary along cell edges as rings of integer points, collinear
//! runs merged. Outer rings are counter-clockwise (positive [`navmesh::geom::ring_signed_area`])
//! and holes clockwise. Every ring is simple (no vertex twice); rings may touch each other
//! at a single vertex where two blocked cells meet diagonally between two passable ones.

use navmesh::Point;

use super::{MapInput, Region};

/// Largest accepted width or height, in cells.
const MAX_SIDE: usize = 16_384;

/// Direction of a boundary edge on the vertex lattice: `+x`.
const EAST: usize = 0;
/// `+y`.
const NORTH: usize = 1;
/// `-x`.
const WEST: usize = 2;
/// `-y`.
const SOUTH: usize = 3;

/// Label of a blocked cell in the component labelling.
const NO_LABEL: u32 = u32::MAX;

/// A parsed grid map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridMap {
    width: usize,
    height: usize,
    /// Row-major, `width * height` cells.
    passable: Vec<bool>,
}

impl GridMap {
    /// Number of columns.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Number of rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// True when cell `(x, y)` (column `x`, row `y`) is passable; false outside the map.
    pub fn is_passable(&self, x: usize, y: usize) -> bool {
        x < self.width && y < self.height && self.passable[y * self.width + x]
    }

    /// Number of passable cells, which is also the walkable area in square map units.
    pub fn passable_count(&self) -> usize {
        self.passable.iter().filter(|&&p| p).count()
    }

    /// Number of connected components of passable cells, where cells connect only through a
    /// shared edge (4-neighbourhood); cells touching only at a corner are NOT connected.
    pub fn component_count(&self) -> usize {
        label_components(self).1
    }
}

/// Why a grid map could not be parsed. Every message names the 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum GridError {
    /// The input ended before the `map` line.
    #[error("line {line}: input ended before the `map` line")]
    MissingMapLine {
        /// The line after the last one of the input.
        line: usize,
    },
    /// A header line that is not `type`, `height`, `width` or `map`.
    #[error("line {line}: unknown header line `{text}`")]
    UnknownHeader {
        /// The offending line.
        line: usize,
        /// Its text, trimmed.
        text: String,
    },
    /// A header field given twice.
    #[error("line {line}: duplicate `{field}` header")]
    DuplicateHeader {
        /// The second occurrence.
        line: usize,
        /// `type`, `height` or `width`.
        field: &'static str,
    },
    /// A header field missing when the `map` line comes.
    #[error("line {line}: `map` line reached without a `{field}` header")]
    MissingHeader {
        /// The `map` line.
        line: usize,
        /// `type`, `height` or `width`.
        field: &'static str,
    },
    /// A map type other than `octile`.
    #[error("line {line}: map type `{value}` is not supported, expected `octile`")]
    UnsupportedType {
        /// The `type` line.
        line: usize,
        /// The type given.
        value: String,
    },
    /// A height or width that is not a positive integer.
    #[error("line {line}: {field} `{value}` is not a positive integer")]
    BadSize {
        /// The header line.
        line: usize,
        /// `height` or `width`.
        field: &'static str,
        /// The value given.
        value: String,
    },
    /// A height or width above the supported maximum.
    #[error("line {line}: {field} {value} is larger than the maximum of {max}")]
    TooLarge {
        /// The header line.
        line: usize,
        /// `height` or `width`.
        field: &'static str,
        /// The value given.
        value: String,
        /// The largest accepted value.
        max: usize,
    },
    /// A map row whose length differs from the declared width.
    #[error("line {line}: row has {actual} cells, expected {expected}")]
    RowLength {
        /// The row's line.
        line: usize,
        /// The declared width.
        expected: usize,
        /// The number of characters in the row.
        actual: usize,
    },
    /// The input ended before the declared number of rows.
    #[error("line {line}: input ended after {actual} rows, expected {expected}")]
    TooFewRows {
        /// The line after the last one of the input.
        line: usize,
        /// The declared height.
        expected: usize,
        /// The number of rows read.
        actual: usize,
    },
    /// A non-empty line after the declared number of rows.
    #[error("line {line}: extra row after the {expected} rows the header declares")]
    TooManyRows {
        /// The first extra line.
        line: usize,
        /// The declared height.
        expected: usize,
    },
    /// A character in a row that is not a known terrain type.
    #[error("line {line}, column {column}: unknown cell character {ch:?}")]
    UnknownCell {
        /// The row's line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The character.
        ch: char,
    },
}

/// Parses a Moving AI `.map` file.
///
/// Accepts `\r\n` line endings, surrounding whitespace on header lines, blank lines in the
/// header and blank lines after the last row. Width and height are capped at 16384.
pub fn parse(text: &str) -> Result<GridMap, GridError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)));
    let mut last_line = 0;

    let mut seen_type = false;
    let mut height = None;
    let mut width = None;
    let map_line = loop {
        let Some((line, raw)) = lines.next() else {
            return Err(GridError::MissingMapLine {
                line: last_line + 1,
            });
        };
        last_line = line;
        let content = raw.trim();
        if content.is_empty() {
            continue;
        }
        if content == "map" {
            break line;
        }
        let (key, value) = match content.split_once(char::is_whitespace) {
            Some((k, v)) => (k, v.trim()),
            None => (content, ""),
        };
        match key {
            "type" => {
                if seen_type {
                    return Err(GridError::DuplicateHeader {
                        line,
                        field: "type",
                    });
                }
                seen_type = true;
                if value != "octile" {
                    return Err(GridError::UnsupportedType {
                        line,
                        value: value.to_string(),
                    });
                }
            }
            "height" | "width" => {
                let (slot, field) = if key == "height" {
                    (&mut height, "height")
                } else {
                    (&mut width, "width")
                };
                if slot.is_some() {
                    return Err(GridError::DuplicateHeader { line, field });
                }
                *slot = Some(parse_size(line, field, value)?);
            }
            _ => {
                return Err(GridError::UnknownHeader {
                    line,
                    text: content.to_string(),
                });
            }
        }
    };
    let missing = |field| GridError::MissingHeader {
        line: map_line,
        field,
    };
    if !seen_type {
        return Err(missing("type"));
    }
    let height = height.ok_or_else(|| missing("height"))?;
    let width = width.ok_or_else(|| missing("width"))?;

    // Do not trust the header for the allocation: a tiny file may claim a huge map.
    let mut passable = Vec::with_capacity(width.saturating_mul(height).min(text.len()));
    for row in 0..height {
        let Some((line, raw)) = lines.next() else {
            return Err(GridError::TooFewRows {
                line: last_line + 1,
                expected: height,
                actual: row,
            });
        };
        last_line = line;
        parse_row(line, raw, width, &mut passable)?;
    }
    for (line, raw) in lines {
        if !raw.trim().is_empty() {
            return Err(GridError::TooManyRows {
                line,
                expected: height,
            });
        }
    }
    Ok(GridMap {
        width,
        height,
        passable,
    })
}

/// Parses a `height` or `width` value: a positive integer of at most [`MAX_SIDE`].
fn parse_size(line: usize, field: &'static str, value: &str) -> Result<usize, GridError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(GridError::BadSize {
            line,
            field,
            value: value.to_string(),
        });
    }
    let too_large = || GridError::TooLarge {
        line,
        field,
        value: value.to_string(),
        max: MAX_SIDE,
    };
    // All digits, so the only possible failure is overflow.
    let n: usize = value.parse().map_err(|_| too_large())?;
    if n == 0 {
        return Err(GridError::BadSize {
            line,
            field,
            value: value.to_string(),
        });
    }
    if n > MAX_SIDE {
        return Err(too_large());
    }
    Ok(n)
}

/// Appends one row's cells to `passable`.
fn parse_row(
    line: usize,
    raw: &str,
    width: usize,
    passable: &mut Vec<bool>,
) -> Result<(), GridError> {
    let actual = if raw.is_ascii() {
        raw.len()
    } else {
        raw.chars().count()
    };
    if actual != width {
        return Err(GridError::RowLength {
            line,
            expected: width,
            actual,
        });
    }
    for (i, ch) in raw.chars().enumerate() {
        let cell = match ch {
            '.' | 'G' | 'S' => true,
            '@' | 'O' | 'T' | 'W' => false,
            _ => {
                return Err(GridError::UnknownCell {
                    line,
                    column: i + 1,
                    ch,
                });
            }
        };
        passable.push(cell);
    }
    Ok(())
}

/// Labels the 4-connected components of passable cells, numbered in row-major order of
/// their first cell. Returns one label per cell ([`NO_LABEL`] for blocked cells) and the
/// number of components.
fn label_components(grid: &GridMap) -> (Vec<u32>, usize) {
    // Two passes: provisional labels joined by union-find in row-major order (no
    // recursion, cache friendly), then final labels in order of first appearance.
    let (w, h) = (grid.width, grid.height);
    let passable = &grid.passable;
    let mut labels = vec![NO_LABEL; w * h];
    let mut parent: Vec<u32> = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if !passable[i] {
                continue;
            }
            let left = x > 0 && passable[i - 1];
            let up = y > 0 && passable[i - w];
            labels[i] = match (left, up) {
                (false, false) => {
                    let id = parent.len() as u32;
                    parent.push(id);
                    id
                }
                (true, false) => labels[i - 1],
                (false, true) => labels[i - w],
                (true, true) => {
                    // With the up-left cell passable too, left and up are already joined.
                    if !passable[i - w - 1] {
                        union(&mut parent, labels[i - 1], labels[i - w]);
                    }
                    labels[i - 1]
                }
            };
        }
    }
    let mut final_label = vec![NO_LABEL; parent.len()];
    let mut count: u32 = 0;
    for label in &mut labels {
        if *label == NO_LABEL {
            continue;
        }
        let root = find(&mut parent, *label) as usize;
        if final_label[root] == NO_LABEL {
            final_label[root] = count;
            count += 1;
        }
        *label = final_label[root];
    }
    (labels, count as usize)
}

/// Union-find root of `a`, halving the path on the way.
fn find(parent: &mut [u32], mut a: u32) -> u32 {
    while parent[a as usize] != a {
        let grand = parent[parent[a as usize] as usize];
        parent[a as usize] = grand;
        a = grand;
    }
    a
}

/// Joins the sets of `a` and `b`; the smaller root becomes the root.
fn union(parent: &mut [u32], a: u32, b: u32) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra < rb {
        parent[rb as usize] = ra;
    } else {
        parent[ra as usize] = rb;
    }
}

/// The cell on the left of the unit boundary edge leaving lattice vertex `(x, y)` in
/// direction `dir` (math convention: `+y` is a left turn from `+x`), if inside the lattice.
fn left_cell(x: usize, y: usize, dir: usize) -> Option<(usize, usize)> {
    match dir {
        EAST => Some((x, y)),
        NORTH => Some((x.checked_sub(1)?, y)),
        WEST => Some((x.checked_sub(1)?, y.checked_sub(1)?)),
        _ => Some((x, y.checked_sub(1)?)),
    }
}

/// Twice the signed area of a ring of lattice points (positive when counter-clockwise).
fn twice_area(ring: &[(usize, usize)]) -> i64 {
    let n = ring.len();
    let mut sum = 0i64;
    for i in 0..n {
        let (x0, y0) = ring[i];
        let (x1, y1) = ring[(i + 1) % n];
        sum += x0 as i64 * y1 as i64 - x1 as i64 * y0 as i64;
    }
    sum
}

/// Walkable regions: one per 4-connected component of passable cells.
///
/// Regions come in row-major order of their component's first cell; holes in row-major
/// order of their lowest vertex. Rings are along cell edges, with a vertex only where the
/// boundary turns: outer rings counter-clockwise, holes clockwise, every ring simple. At a
/// vertex where exactly two diagonal cells of a 2×2 block are passable, the boundary keeps
/// each passable cell on its own side, so rings may touch there but never cross or share
/// an edge.
pub fn trace_regions(grid: &GridMap) -> Vec<Region> {
    let (labels, count) = label_components(grid);
    if count == 0 {
        return Vec::new();
    }
    let (w, h) = (grid.width, grid.height);
    let vw = w + 1;
    let vertex_count = vw * (h + 1);

    // Unused boundary edges leaving each lattice vertex, one bit per direction. An edge is
    // directed so that its passable cell is on the left.
    let mut remaining = vec![0u8; vertex_count];
    for y in 0..h {
        let row = &grid.passable[y * w..(y + 1) * w];
        for x in 0..w {
            if !row[x] {
                continue;
            }
            if y == 0 || !grid.passable[(y - 1) * w + x] {
                remaining[y * vw + x] |= 1 << EAST;
            }
            if x + 1 == w || !row[x + 1] {
                remaining[y * vw + x + 1] |= 1 << NORTH;
            }
            if y + 1 == h || !grid.passable[(y + 1) * w + x] {
                remaining[(y + 1) * vw + x + 1] |= 1 << WEST;
            }
            if x == 0 || !row[x - 1] {
                remaining[(y + 1) * vw + x] |= 1 << SOUTH;
            }
        }
    }

    let mut outers: Vec<Option<Vec<Point>>> = vec![None; count];
    let mut holes: Vec<Vec<Vec<Point>>> = vec![Vec::new(); count];
    let mut corners: Vec<(usize, usize)> = Vec::new();
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut loops: Vec<Vec<(usize, usize)>> = Vec::new();
    // Position + 1 of a vertex in `stack`, 0 when absent.
    let mut in_stack = vec![0u32; vertex_count];

    for y0 in 0..=h {
        for x0 in 0..=w {
            let v0 = y0 * vw + x0;
            while remaining[v0] != 0 {
                // The first vertex (row-major) with an unused edge is the lowest vertex of
                // that edge's ring, so it is a corner and the edge goes east or north.
                let d0 = remaining[v0].trailing_zeros() as usize;
                let Some((cx, cy)) = left_cell(x0, y0, d0) else {
                    debug_assert!(false, "boundary edge without a cell on its left");
                    remaining[v0] = 0;
                    continue;
                };
                let comp = labels[cy * w + cx] as usize;

                corners.clear();
                corners.push((x0, y0));
                let (mut x, mut y, mut v, mut d) = (x0, y0, v0, d0);
                loop {
                    remaining[v] &= !(1 << d);
                    match d {
                        EAST => {
                            x += 1;
                            v += 1;
                        }
                        NORTH => {
                            y += 1;
                            v += vw;
                        }
                        WEST => {
                            x -= 1;
                            v -= 1;
                        }
                        _ => {
                            y -= 1;
                            v -= vw;
                        }
                    }
                    let mut avail = remaining[v];
                    if v == v0 {
                        avail |= 1 << d0;
                    }
                    // Left turn first: it keeps the same passable cell on the left, so at
                    // a vertex with two diagonal passable cells the ring stays with its own.
                    let next = [(d + 1) & 3, d, (d + 3) & 3]
                        .into_iter()
                        .find(|&c| avail & (1 << c) != 0);
                    let Some(next) = next else {
                        debug_assert!(false, "boundary ring does not close");
                        break;
                    };
                    if v == v0 && next == d0 {
                        break;
                    }
                    if next != d {
                        corners.push((x, y));
                    }
                    d = next;
                }

                // A walk visits a vertex twice only where two passable cells of its own
                // component touch diagonally: split it there into simple rings.
                loops.clear();
                stack.clear();
                for &(px, py) in &corners {
                    let pv = py * vw + px;
                    let pos = in_stack[pv] as usize;
                    if pos == 0 {
                        stack.push((px, py));
                        in_stack[pv] = stack.len() as u32;
                    } else {
                        for &(qx, qy) in &stack[pos..] {
                            in_stack[qy * vw + qx] = 0;
                        }
                        loops.push(stack[pos - 1..].to_vec());
                        stack.truncate(pos);
                    }
                }
                for &(qx, qy) in &stack {
                    in_stack[qy * vw + qx] = 0;
                }
                loops.push(std::mem::take(&mut stack));

                for ring in loops.drain(..) {
                    let area = twice_area(&ring);
                    let points: Vec<Point> = ring
                        .iter()
                        .map(|&(px, py)| Point::new(px as f64, py as f64))
                        .collect();
                    if area > 0 {
                        debug_assert!(outers[comp].is_none(), "two outer rings");
                        outers[comp] = Some(points);
                    } else {
                        holes[comp].push(points);
                    }
                }
            }
        }
    }

    // Holes come out in row-major order of their lowest vertex except for split rings;
    // sort so the order is by lowest vertex throughout.
    for comp_holes in &mut holes {
        comp_holes.sort_by_cached_key(|ring| lowest_vertex(ring));
    }

    outers
        .into_iter()
        .zip(holes)
        .filter_map(|(outer, holes)| outer.map(|outer| Region { outer, holes }))
        .collect()
}

/// The row-major smallest vertex of a lattice ring, as integer `(y, x)`.
fn lowest_vertex(ring: &[Point]) -> (u64, u64) {
    ring.iter()
        .map(|p| (p.y as u64, p.x as u64))
        .min()
        .unwrap_or((0, 0))
}

/// Parses a grid map and traces its walkable regions.
///
/// The result's `known_area` is the number of passable cells.
pub fn load(name: &str, text: &str) -> Result<MapInput, GridError> {
    let grid = parse(text)?;
    Ok(MapInput {
        name: name.to_string(),
        regions: trace_regions(&grid),
        known_area: Some(grid.passable_count() as f64),
    })
}

#[cfg(test)]
mod tests;
