//! An exact any-angle shortest-path reference for Moving AI grid maps, written independently
//! of the code under test: A* (Euclidean heuristic, binary heap) over a visibility graph of
//! the convex obstacle corners plus start and goal.
//!
//! The walkable area is the union of the passable closed unit cells, minus the *pinch
//! points*: lattice points where two blocked cells meet diagonally between two passable
//! ones (the navmesh does not connect through them). Shortest paths in such an area are
//! polylines that only turn at convex obstacle corners: lattice points with exactly one
//! blocked cell around them. So a visibility graph over those corners is exact.
//!
//! All geometry here is exact integer arithmetic on *doubled* coordinates: a lattice point
//! `(x, y)` is `(2x, 2y)` and a cell centre `(x + 0.5, y + 0.5)` is `(2x + 1, 2y + 1)`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use navmesh::Point;
use navmesh_builder::source::grid::GridMap;

/// A point in doubled coordinates (see the module docs).
pub(crate) type D = (i64, i64);

/// The point as doubled coordinates when both of its coordinates are (within 1e-9) a
/// multiple of one half; `None` otherwise.
pub(crate) fn doubled(p: Point) -> Option<D> {
    let snap = |v: f64| {
        let d = (v * 2.0).round();
        ((v * 2.0 - d).abs() <= 1e-9 && d.abs() < 1e12).then_some(d as i64)
    };
    Some((snap(p.x)?, snap(p.y)?))
}

/// Euclidean distance in map units between two doubled points.
pub(crate) fn dist(a: D, b: D) -> f64 {
    (((a.0 - b.0) as f64).powi(2) + ((a.1 - b.1) as f64).powi(2)).sqrt() / 2.0
}

/// The grid with the exact segment test.
pub(crate) struct Grid {
    width: i64,
    height: i64,
    passable: Vec<bool>,
    /// Per lattice point (`(width + 1) * (height + 1)`, row-major): is it a pinch point.
    pinch: Vec<bool>,
}

impl Grid {
    /// From a parsed map; everything outside the map is blocked.
    pub(crate) fn new(map: &GridMap) -> Grid {
        let (width, height) = (map.width() as i64, map.height() as i64);
        let mut passable = Vec::with_capacity((width * height) as usize);
        for y in 0..map.height() {
            for x in 0..map.width() {
                passable.push(map.is_passable(x, y));
            }
        }
        let mut grid = Grid {
            width,
            height,
            passable,
            pinch: Vec::new(),
        };
        let mut pinch = Vec::with_capacity(((width + 1) * (height + 1)) as usize);
        for ly in 0..=height {
            for lx in 0..=width {
                let [sw, se, nw, ne] = grid.around(lx, ly);
                pinch.push(sw == ne && se == nw && sw != se);
            }
        }
        grid.pinch = pinch;
        grid
    }

    /// Map width in cells.
    pub(crate) fn width(&self) -> i64 {
        self.width
    }

    /// Map height in cells.
    pub(crate) fn height(&self) -> i64 {
        self.height
    }

    /// Cell `(x, y)` is passable (false outside the map).
    pub(crate) fn passable(&self, x: i64, y: i64) -> bool {
        x >= 0
            && y >= 0
            && x < self.width
            && y < self.height
            && self.passable[(y * self.width + x) as usize]
    }

    /// Passability of the four cells around lattice point `(lx, ly)`: cells
    /// `(lx-1, ly-1)`, `(lx, ly-1)`, `(lx-1, ly)`, `(lx, ly)`.
    fn around(&self, lx: i64, ly: i64) -> [bool; 4] {
        [
            self.passable(lx - 1, ly - 1),
            self.passable(lx, ly - 1),
            self.passable(lx - 1, ly),
            self.passable(lx, ly),
        ]
    }

    /// Lattice point `(lx, ly)` is a pinch point.
    pub(crate) fn is_pinch(&self, lx: i64, ly: i64) -> bool {
        lx >= 0
            && ly >= 0
            && lx <= self.width
            && ly <= self.height
            && self.pinch[(ly * (self.width + 1) + lx) as usize]
    }

    /// When lattice point `(lx, ly)` is a convex obstacle corner (exactly one of its four
    /// cells blocked), the direction of that blocked cell from the point: `(±1, ±1)`.
    pub(crate) fn corner_quadrant(&self, lx: i64, ly: i64) -> Option<(i64, i64)> {
        let cells = self.around(lx, ly);
        if cells.iter().filter(|&&p| !p).count() != 1 {
            return None;
        }
        let k = cells.iter().position(|&p| !p)?;
        Some((if k % 2 == 0 { -1 } else { 1 }, if k < 2 { -1 } else { 1 }))
    }

    /// A doubled point lies in the walkable area (closed passable cells, pinch points
    /// excluded).
    pub(crate) fn point_walkable(&self, p: D) -> bool {
        let xs: &[i64] = if p.0 % 2 == 0 {
            &[p.0 / 2 - 1, p.0 / 2]
        } else {
            &[p.0.div_euclid(2)]
        };
        let ys: &[i64] = if p.1 % 2 == 0 {
            &[p.1 / 2 - 1, p.1 / 2]
        } else {
            &[p.1.div_euclid(2)]
        };
        let pinch = p.0 % 2 == 0 && p.1 % 2 == 0 && self.is_pinch(p.0 / 2, p.1 / 2);
        !pinch && xs.iter().any(|&x| ys.iter().any(|&y| self.passable(x, y)))
    }

    /// The closed segment `p q` (doubled coordinates) lies in the walkable area: it enters
    /// no blocked cell's interior, runs along no cell edge with blocked cells on both
    /// sides, and passes through no pinch point. Touching a blocked cell's boundary
    /// (grazing along its edge, touching its corner) is fine.
    ///
    /// Exact: an integer walk over the cells the segment passes through (every cell whose
    /// interior it meets, and the cell edges it runs along), in order, with simultaneous
    /// crossings of a vertical and a horizontal grid line (lattice points) detected exactly.
    pub(crate) fn visible(&self, p: D, q: D) -> bool {
        let (dx, dy) = (q.0 - p.0, q.1 - p.1);
        if dx == 0 && dy == 0 {
            return self.point_walkable(p);
        }
        if !self.point_walkable(p) || !self.point_walkable(q) {
            return false;
        }
        let (sx, sy) = (dx.signum(), dy.signum());
        let (adx, ady) = (dx.abs(), dy.abs());
        // Running along a vertical (horizontal) grid line: both columns (rows) beside it.
        let on_x_line = dx == 0 && p.0.rem_euclid(2) == 0;
        let on_y_line = dy == 0 && p.1.rem_euclid(2) == 0;
        // The cell the segment is in just after leaving `p`.
        let start_cell = |c: i64, s: i64| {
            if c.rem_euclid(2) == 1 || s >= 0 {
                c.div_euclid(2)
            } else {
                c / 2 - 1
            }
        };
        // The first grid line (an even doubled coordinate) strictly beyond `c` along `s`.
        let next_line = |c: i64, s: i64| {
            if s >= 0 {
                if c.rem_euclid(2) == 0 { c + 2 } else { c + 1 }
            } else if c.rem_euclid(2) == 0 {
                c - 2
            } else {
                c - 1
            }
        };
        let (mut cx, mut cy) = (start_cell(p.0, sx), start_cell(p.1, sy));
        let (mut nx, mut ny) = (next_line(p.0, sx), next_line(p.1, sy));
        loop {
            let open = if on_x_line {
                self.passable(p.0 / 2 - 1, cy) || self.passable(p.0 / 2, cy)
            } else if on_y_line {
                self.passable(cx, p.1 / 2 - 1) || self.passable(cx, p.1 / 2)
            } else {
                self.passable(cx, cy)
            };
            if !open {
                return false;
            }
            // Next grid line crossing strictly before `q`, if any.
            let x_next = sx != 0 && sx * (q.0 - nx) > 0;
            let y_next = sy != 0 && sy * (q.1 - ny) > 0;
            let order = match (x_next, y_next) {
                (false, false) => return true,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                // Crossing parameters |nx - px| / |dx| and |ny - py| / |dy|, cross-multiplied.
                (true, true) => ((nx - p.0).abs() * ady).cmp(&((ny - p.1).abs() * adx)),
            };
            match order {
                Ordering::Less => {
                    if on_y_line && self.is_pinch(nx / 2, p.1 / 2) {
                        return false;
                    }
                    cx += sx;
                    nx += 2 * sx;
                }
                Ordering::Greater => {
                    if on_x_line && self.is_pinch(p.0 / 2, ny / 2) {
                        return false;
                    }
                    cy += sy;
                    ny += 2 * sy;
                }
                Ordering::Equal => {
                    // Through a lattice point.
                    if self.is_pinch(nx / 2, ny / 2) {
                        return false;
                    }
                    cx += sx;
                    cy += sy;
                    nx += 2 * sx;
                    ny += 2 * sy;
                }
            }
        }
    }
}

/// `f(0), ..., f(n - 1)`, computed on all available threads (work handed out one index
/// at a time, so uneven costs balance).
pub(crate) fn par_map<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let next = AtomicUsize::new(0);
    let mut parts: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(n).max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                        if i >= n {
                            return done;
                        }
                        done.push((i, f(i)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    parts.sort_unstable_by_key(|&(i, _)| i);
    parts.into_iter().map(|(_, r)| r).collect()
}

/// A corner: its doubled position and the direction of its blocked cell.
#[derive(Clone, Copy, Debug)]
struct Corner {
    at: D,
    quadrant: (i64, i64),
}

impl Corner {
    /// The line from this corner towards `other` does not cut into the corner's blocked
    /// cell on either side, so a shortest path can use it while turning here (the line is
    /// tangent to the obstacle). Every edge into a corner of a shortest path is taut there.
    fn taut(&self, other: D) -> bool {
        let d = (other.0 - self.at.0, other.1 - self.at.1);
        (d.0 * self.quadrant.0) * (d.1 * self.quadrant.1) <= 0
    }
}

/// The reference for one map: the grid, its corners and their visibility graph.
pub(crate) struct Reference {
    grid: Grid,
    corners: Vec<Corner>,
    /// Taut, visible corner-to-corner edges: `(other corner, length)`.
    adjacency: Vec<Vec<(u32, f64)>>,
}

/// An entry of the open list: a candidate edge `from -> node` and the path length `g` to
/// `node` through it.
#[derive(Clone, Copy, PartialEq)]
struct Open {
    f: f64,
    g: f64,
    node: u32,
    from: u32,
    /// The edge's visibility is known (a graph edge); otherwise it is tested when the entry
    /// comes off the list.
    checked: bool,
}

impl Eq for Open {}

impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        // Min-heap on f; among equal f, prefer larger g (deeper).
        other
            .f
            .total_cmp(&self.f)
            .then(self.g.total_cmp(&other.g))
            .then(other.node.cmp(&self.node))
            .then(other.from.cmp(&self.from))
    }
}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Reference {
    /// Finds the corners and builds the visibility graph between them.
    pub(crate) fn new(map: &GridMap) -> Reference {
        let grid = Grid::new(map);
        let mut corners = Vec::new();
        for ly in 0..=grid.height() {
            for lx in 0..=grid.width() {
                if let Some(quadrant) = grid.corner_quadrant(lx, ly) {
                    corners.push(Corner {
                        at: (2 * lx, 2 * ly),
                        quadrant,
                    });
                }
            }
        }
        let n = corners.len();
        // Taut, visible edges to higher-numbered corners, then mirrored.
        let upper = par_map(n, |i| {
            let a = corners[i];
            (i + 1..n)
                .filter(|&j| {
                    let b = corners[j];
                    a.taut(b.at) && b.taut(a.at) && grid.visible(a.at, b.at)
                })
                .map(|j| (j as u32, dist(a.at, corners[j].at)))
                .collect::<Vec<_>>()
        });
        let mut adjacency = upper.clone();
        for (i, edges) in upper.iter().enumerate() {
            for &(j, w) in edges {
                adjacency[j as usize].push((i as u32, w));
            }
        }
        Reference {
            grid,
            corners,
            adjacency,
        }
    }

    /// Number of corners (graph nodes besides start and goal).
    pub(crate) fn corner_count(&self) -> usize {
        self.corners.len()
    }

    /// Number of undirected corner-to-corner edges.
    pub(crate) fn edge_count(&self) -> usize {
        self.adjacency.iter().map(Vec::len).sum::<usize>() / 2
    }

    /// The exact shortest path from `start` to `goal` (doubled coordinates): its length
    /// and its points, start and goal included; `None` when there is no path.
    pub(crate) fn shortest(&self, start: D, goal: D) -> Option<(f64, Vec<D>)> {
        if !self.grid.point_walkable(start) || !self.grid.point_walkable(goal) {
            return None;
        }
        if self.grid.visible(start, goal) {
            return Some((dist(start, goal), vec![start, goal]));
        }
        const START: u32 = u32::MAX;
        let n = self.corners.len();
        let goal_node = n as u32;
        let at = |node: u32| match node {
            START => start,
            _ if node == goal_node => goal,
            _ => self.corners[node as usize].at,
        };
        let mut best = vec![f64::INFINITY; n + 1];
        let mut parent = vec![START; n + 1];
        let mut closed = vec![false; n + 1];
        let mut open = BinaryHeap::new();
        // Edges from the start and to the goal are not in the graph. They are tested lazily:
        // every taut one goes on the open list as if it were visible, and is tested when it
        // comes off. Its f is still a lower bound of any path through it, so the search
        // settles the same nodes with the same lengths as with all edges tested up front,
        // while most of them are never tested.
        for (i, c) in self.corners.iter().enumerate() {
            if c.taut(start) {
                let g = dist(start, c.at);
                open.push(Open {
                    f: g + dist(c.at, goal),
                    g,
                    node: i as u32,
                    from: START,
                    checked: false,
                });
            }
        }
        while let Some(entry) = open.pop() {
            let Open {
                g,
                node,
                from,
                checked,
                ..
            } = entry;
            if closed[node as usize] {
                continue;
            }
            if checked {
                if g > best[node as usize] {
                    continue;
                }
            } else if !self.grid.visible(at(from), at(node)) {
                continue;
            }
            closed[node as usize] = true;
            parent[node as usize] = from;
            if node == goal_node {
                let mut points = vec![goal];
                let mut p = from;
                while p != START {
                    points.push(at(p));
                    p = parent[p as usize];
                }
                points.push(start);
                points.reverse();
                return Some((g, points));
            }
            let c = self.corners[node as usize];
            if c.taut(goal) {
                open.push(Open {
                    f: g + dist(c.at, goal),
                    g: g + dist(c.at, goal),
                    node: goal_node,
                    from: node,
                    checked: false,
                });
            }
            for &(next, w) in &self.adjacency[node as usize] {
                let ng = g + w;
                if !closed[next as usize] && ng < best[next as usize] {
                    best[next as usize] = ng;
                    open.push(Open {
                        f: ng + dist(self.corners[next as usize].at, goal),
                        g: ng,
                        node: next,
                        from: node,
                        checked: true,
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use navmesh_builder::source::grid;

    use super::*;

    fn grid_map(rows: &[&str]) -> GridMap {
        let text = format!(
            "type octile\nheight {}\nwidth {}\nmap\n{}\n",
            rows.len(),
            rows[0].len(),
            rows.join("\n")
        );
        grid::parse(&text).unwrap()
    }

    /// Lattice point `(x, y)` in doubled coordinates.
    fn lat(x: i64, y: i64) -> D {
        (2 * x, 2 * y)
    }

    /// Centre of cell `(x, y)` in doubled coordinates.
    fn cen(x: i64, y: i64) -> D {
        (2 * x + 1, 2 * y + 1)
    }

    /// Both directions must agree.
    fn vis(g: &Grid, p: D, q: D) -> bool {
        let forward = g.visible(p, q);
        assert_eq!(forward, g.visible(q, p), "{p:?} <-> {q:?} not symmetric");
        forward
    }

    #[test]
    fn visibility_grazing_cutting_and_seams() {
        // One blocked cell at (1, 1); a blocked 1x2 column at x = 4, y = 1..=2.
        let g = Grid::new(&grid_map(&[
            ".......", //
            ".@..@..", //
            "....@..", //
            ".......", //
        ]));
        // Grazing along the top and the left edge of the blocked cell.
        assert!(vis(&g, lat(0, 1), lat(3, 1)));
        assert!(vis(&g, lat(1, 0), lat(1, 4)));
        // Along the column's left edge x = 4, the whole height of the map.
        assert!(vis(&g, lat(4, 0), lat(4, 4)));
        // Along the grid line y = 2 between the two blocked cells of the column: both cells
        // beside that edge are blocked, so it is outside the walkable area.
        assert!(!vis(&g, lat(3, 2), lat(6, 2)));
        assert!(!vis(&g, lat(4, 2), lat(5, 2)));
        // Ending on the column's corner from outside is fine.
        assert!(vis(&g, lat(3, 0), lat(4, 1)));
        // Touching the blocked cell's corner (1, 1) diagonally from the passable side.
        assert!(vis(&g, lat(0, 2), lat(2, 0)));
        assert!(vis(&g, cen(0, 1), cen(1, 0)));
        // Cutting the blocked cell's corner.
        assert!(!vis(&g, cen(0, 0), cen(2, 1)));
        assert!(!vis(&g, lat(0, 0), lat(2, 2)));
        assert!(!vis(&g, (1, 1), (5, 4)));
        // (0.5, 0.5) -> (3, 1) stays below row 1 until x = 3: it passes under the cell.
        assert!(vis(&g, cen(0, 0), lat(3, 1)));
        // Ending on the blocked cell's corner.
        assert!(vis(&g, cen(0, 0), lat(2, 1)));
        assert!(vis(&g, cen(0, 0), lat(1, 1)));
        // (0.5, 0.5) -> (2.5, 1.5) is at y = 1.25 for x = 2: inside the cell.
        assert!(!vis(&g, cen(0, 0), (5, 3)));
        // Straight through a free row; through the blocked cell.
        assert!(vis(&g, cen(0, 3), cen(6, 3)));
        assert!(!vis(&g, cen(0, 1), cen(3, 1)));
        // The outer border of the map is walkable; outside it is not.
        assert!(vis(&g, lat(0, 0), lat(7, 0)));
        assert!(vis(&g, lat(7, 0), lat(7, 4)));
        assert!(!vis(&g, (-1, 0), lat(3, 0)));
        assert!(!vis(&g, lat(0, 0), (-2, 4)));
        // A point on its own.
        assert!(vis(&g, lat(1, 1), lat(1, 1)));
        assert!(!vis(&g, cen(1, 1), cen(1, 1)));
    }

    #[test]
    fn visibility_pinch_points() {
        // Cells (1, 1) and (2, 2) blocked: lattice point (2, 2) is a pinch point.
        let g = Grid::new(&grid_map(&[
            "....", //
            ".@..", //
            "..@.", //
            "....", //
        ]));
        assert!(g.is_pinch(2, 2));
        assert!(!g.is_pinch(1, 1) && !g.is_pinch(3, 3) && !g.is_pinch(2, 1));
        // Through the pinch diagonally, from one passable cell to the other.
        assert!(!vis(&g, cen(2, 1), cen(1, 2)));
        assert!(!vis(&g, lat(3, 1), lat(1, 3)));
        // Along the grid lines through it: each half is along one blocked cell's edge.
        assert!(!vis(&g, lat(0, 2), lat(4, 2)));
        assert!(!vis(&g, lat(2, 0), lat(2, 4)));
        // Ending at the pinch point is not allowed either (it is not walkable).
        assert!(!vis(&g, cen(2, 1), lat(2, 2)));
        // Up to the grid line next to it is fine.
        assert!(vis(&g, lat(2, 0), lat(2, 1)));
        assert!(vis(&g, lat(0, 2), lat(1, 2)));
        // Pinch points are not corners; the convex corners around the blocked cells are.
        assert_eq!(g.corner_quadrant(2, 2), None);
        assert_eq!(g.corner_quadrant(1, 1), Some((1, 1)));
        assert_eq!(g.corner_quadrant(3, 3), Some((-1, -1)));
        assert_eq!(g.corner_quadrant(3, 2), Some((-1, 1)));
    }

    #[test]
    fn visibility_long_shallow_lines() {
        // A long corridor with one blocked cell in the middle of row 1.
        let mut rows = vec![".".repeat(40); 3];
        rows[1].replace_range(20..21, "@");
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let g = Grid::new(&grid_map(&rows));
        // (0, 1) -> (40, 2) passes y = 1.5 at x = 20: inside the blocked cell (20, 1).
        assert!(!vis(&g, lat(0, 1), lat(40, 2)));
        // (0, 0) -> (40, 2) touches the cell's corner (20, 1), then enters it (y = 1.05 at
        // x = 21).
        assert!(!vis(&g, lat(0, 0), lat(40, 2)));
        // (0, 0) -> (40, 1) passes y = 0.5 at x = 20: above the blocked cell.
        assert!(vis(&g, lat(0, 0), lat(40, 1)));
        // (0, 0) -> (21, 1) ends at the cell's far corner, with y < 1 before it.
        assert!(vis(&g, lat(0, 0), lat(21, 1)));
        // Up to the near corner (20, 1) is fine; on from it into the cell is not.
        assert!(vis(&g, lat(0, 0), lat(20, 1)));
        assert!(!vis(&g, lat(20, 1), lat(40, 2)));
    }

    #[test]
    fn shortest_paths_on_small_grids() {
        // Open grid: straight lines.
        let map = grid_map(&["....", "....", "...."]);
        let r = Reference::new(&map);
        assert_eq!(r.corner_count(), 0);
        assert_eq!(
            r.shortest(cen(0, 0), cen(3, 2)),
            Some((dist(cen(0, 0), cen(3, 2)), vec![cen(0, 0), cen(3, 2)]))
        );

        // A wall with a gap at the bottom: around its end.
        let map = grid_map(&[
            ".....", //
            "..@..", //
            "..@..", //
            ".....", //
        ]);
        let r = Reference::new(&map);
        // (0.5, 1.5) -> (4.5, 1.5): via corners (2, 1) and (3, 1) on top of the wall.
        let expected = 2.0 * (1.5f64.powi(2) + 0.5f64.powi(2)).sqrt() + 1.0;
        let (got, points) = r.shortest(cen(0, 1), cen(4, 1)).unwrap();
        assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
        assert_eq!(points, [cen(0, 1), lat(2, 1), lat(3, 1), cen(4, 1)]);

        // A pinch point on the only way: no path.
        let map = grid_map(&[
            ".@", //
            "@.", //
        ]);
        let r = Reference::new(&map);
        assert_eq!(r.shortest(cen(0, 0), cen(1, 1)), None);
        assert_eq!(
            r.shortest(cen(0, 0), cen(0, 0)),
            Some((0.0, vec![cen(0, 0), cen(0, 0)]))
        );

        // A pinch point with a way around: the path must go around, not through it.
        let map = grid_map(&[
            "....", //
            ".@..", //
            "..@.", //
            "....", //
        ]);
        let r = Reference::new(&map);
        // (2.5, 1.5) -> (1.5, 2.5): straight through the pinch (2, 2) would be sqrt(2).
        // Around cell (1, 1) via its corners (2, 1), (1, 1), (1, 2) (or, as long, around
        // cell (2, 2)) it is 2 + sqrt(2).
        let around = dist(cen(2, 1), lat(2, 1)) + 1.0 + 1.0 + dist(lat(1, 2), cen(1, 2));
        let (got, points) = r.shortest(cen(2, 1), cen(1, 2)).unwrap();
        assert!((got - around).abs() < 1e-12, "{got} vs {around}");
        assert_eq!(points.len(), 5, "{points:?}");
    }
}
