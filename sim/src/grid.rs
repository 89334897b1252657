//! The broad phase: a uniform grid over the bodies, rebuilt each tick, so neighbour queries
//! cost O(1) amortised instead of O(N).

use crate::types::Vec2;

/// The cell along one axis of an offset of `f` cells from the grid's origin, the last
/// cell being `last` (a whole number): the floor, clamped to the grid.
///
/// Truncation is the floor for the positive values it is used on; zero, negative and NaN
/// offsets clamp to the first cell, as a floor would. (The libm `floor` call was a
/// measurable share of a crowded tick.) Clamping before truncating gives the same cell as
/// after, `last` being whole, and keeps the value within an `i32`, whose conversion is
/// shorter than a `usize` one.
#[inline]
fn axis_cell(f: f32, last: f32) -> usize {
    if f > 0.0 {
        f.min(last) as i32 as usize
    } else {
        0
    }
}

/// Bodies bucketed by cell (compressed rows: `start[c]..start[c + 1]` indexes `items`).
#[derive(Clone, Debug, Default)]
pub(crate) struct BodyGrid {
    origin: Vec2,
    inv_cell: f32,
    cols: usize,
    rows: usize,
    /// `cols - 1` and `rows - 1`, as floats (see [`axis_cell`]).
    last_col: f32,
    last_row: f32,
    start: Vec<u32>,
    items: Vec<u32>,
    cell_of: Vec<u32>,
    /// Each body's place in `items` (`u32::MAX`: empty slot).
    item_of: Vec<u32>,
    /// A disc `[x, y, r]` per place in `items`, kept by the caller (see
    /// [`BodyGrid::set_disc`]): neighbour scans read them in cell order, from memory laid
    /// out in that order, instead of jumping around a per-body array.
    discs: Vec<[f32; 3]>,
}

impl BodyGrid {
    /// Rebuilds the grid for `positions` (entries of `None` are empty slots) over the given
    /// bounds, with cells of `cell` metres.
    pub(crate) fn rebuild(&mut self, min: Vec2, max: Vec2, cell: f32, positions: &[Option<Vec2>]) {
        let cell = cell.max(0.25);
        self.origin = min;
        self.inv_cell = 1.0 / cell;
        self.cols = (((max.x - min.x) * self.inv_cell).ceil() as usize).clamp(1, 4096);
        self.rows = (((max.y - min.y) * self.inv_cell).ceil() as usize).clamp(1, 4096);
        self.last_col = (self.cols - 1) as f32;
        self.last_row = (self.rows - 1) as f32;
        let cells = self.cols * self.rows;
        self.start.clear();
        self.start.resize(cells + 1, 0);
        self.cell_of.clear();
        for p in positions {
            let c = p.map_or(u32::MAX, |p| self.cell(p) as u32);
            self.cell_of.push(c);
            if c != u32::MAX {
                self.start[c as usize] += 1;
            }
        }
        // Running sums: `start[c]` is now where cell `c` ends (and `start[cells]`, which
        // counted nothing, the total).
        let mut sum = 0;
        for s in &mut self.start {
            sum += *s;
            *s = sum;
        }
        self.items.clear();
        self.items.resize(sum as usize, 0);
        self.item_of.clear();
        self.item_of.resize(self.cell_of.len(), u32::MAX);
        // Filled from each cell's end, the last body first, so that each cell lists its
        // bodies in slot order and `start[c]` ends where cell `c` begins.
        for (i, &c) in self.cell_of.iter().enumerate().rev() {
            if c != u32::MAX {
                let k = &mut self.start[c as usize];
                *k -= 1;
                self.items[*k as usize] = i as u32;
                self.item_of[i] = *k;
            }
        }
        self.discs.clear();
        self.discs.resize(self.items.len(), [0.0, 0.0, -1.0]);
    }

    /// Sets body `i`'s disc (ignored for a body not in the grid).
    pub(crate) fn set_disc(&mut self, i: usize, disc: [f32; 3]) {
        if let Some(&k) = self.item_of.get(i)
            && let Some(d) = self.discs.get_mut(k as usize)
        {
            *d = disc;
        }
    }

    /// Calls `f(i, disc)` for every body in the cells `cells` (a [`BodyGrid::cell_box`]:
    /// the same bodies in the same order as [`BodyGrid::for_each_near`] with the same point
    /// and reach) whose disc passes `keep`, with its disc.
    ///
    /// `keep` is asked about every disc of a run before `f` sees the kept ones: written
    /// without short-circuits (`|` rather than `||`), it compiles to straight-line code,
    /// and the scan does not pay a mispredicted branch for each body a crowd's
    /// unpredictable geometry drops. The cells of one row are consecutive in `items`, so
    /// each row is read as one run.
    pub(crate) fn for_each_disc_in(
        &self,
        cells: [usize; 4],
        keep: impl Fn([f32; 3]) -> bool,
        mut f: impl FnMut(usize, [f32; 3]),
    ) {
        /// How many discs are filtered at a time.
        const BATCH: usize = 64;
        let [x0, y0, x1, y1] = cells;
        let mut kept = [0u32; BATCH];
        for cy in y0..=y1 {
            let (from, to) = self.row_run(x0, x1, cy);
            let mut at = from;
            while at < to {
                let end = (at + BATCH).min(to);
                let mut n = 0;
                for (k, &disc) in (at..end).zip(&self.discs[at..end]) {
                    kept[n] = k as u32;
                    n += usize::from(keep(disc));
                }
                for &k in &kept[..n] {
                    let k = k as usize;
                    f(self.items[k] as usize, self.discs[k]);
                }
                at = end;
            }
        }
    }

    /// Calls `f(i, disc, k, cy)` for every body in the cells `cells` (as
    /// [`BodyGrid::for_each_disc_in`], unfiltered), with its disc, its place `k` in the
    /// grid's order and its cell's row, for [`BodyGrid::places_in`].
    ///
    /// The cells of one row are consecutive in `items`, so each row is read as one run.
    pub(crate) fn for_each_placed_disc_in(
        &self,
        cells: [usize; 4],
        mut f: impl FnMut(usize, [f32; 3], usize, usize),
    ) {
        let [x0, y0, x1, y1] = cells;
        for cy in y0..=y1 {
            let (from, to) = self.row_run(x0, x1, cy);
            let places = from..to;
            for ((&i, &disc), k) in self.items[from..to]
                .iter()
                .zip(&self.discs[from..to])
                .zip(places)
            {
                f(i as usize, disc, k, cy);
            }
        }
    }

    /// Whether the body at place `k`, in row `cy` (as [`BodyGrid::for_each_placed_disc_in`]
    /// hands them over), lies in the cells `cells`.
    pub(crate) fn places_in(&self, cells: [usize; 4], k: usize, cy: usize) -> bool {
        let [x0, y0, x1, y1] = cells;
        if !(y0..=y1).contains(&cy) {
            return false;
        }
        let (from, to) = self.row_run(x0, x1, cy);
        (from..to).contains(&k)
    }

    /// The places in the grid's order of the bodies in cells `x0..=x1` of row `cy`: the
    /// cells of one row are consecutive there, so they make one run.
    fn row_run(&self, x0: usize, x1: usize, cy: usize) -> (usize, usize) {
        let row = cy * self.cols;
        (
            self.start[row + x0] as usize,
            self.start[row + x1 + 1] as usize,
        )
    }

    fn coords(&self, p: Vec2) -> (usize, usize) {
        let fx = (p.x - self.origin.x) * self.inv_cell;
        let fy = (p.y - self.origin.y) * self.inv_cell;
        (axis_cell(fx, self.last_col), axis_cell(fy, self.last_row))
    }

    /// The cells `[x0, y0, x1, y1]` (inclusive) that [`BodyGrid::for_each_near`] visits for
    /// `p` and `reach`.
    pub(crate) fn cell_box(&self, p: Vec2, reach: f32) -> [usize; 4] {
        let (x0, y0) = self.coords(p - Vec2::new(reach, reach));
        let (x1, y1) = self.coords(p + Vec2::new(reach, reach));
        [x0, y0, x1, y1]
    }

    fn cell(&self, p: Vec2) -> usize {
        let (cx, cy) = self.coords(p);
        cy * self.cols + cx
    }

    /// The cells `[x0, y0, x1, y1]` (inclusive) that overlap the box from `min` to `max`.
    pub(crate) fn cells_between(&self, min: Vec2, max: Vec2) -> [usize; 4] {
        let (x0, y0) = self.coords(min);
        let (x1, y1) = self.coords(max);
        [x0, y0, x1, y1]
    }

    /// Calls `f` with every body whose cell overlaps the box around `p` of half-size
    /// `reach`, in ascending cell then body order (deterministic).
    pub(crate) fn for_each_near(&self, p: Vec2, reach: f32, f: impl FnMut(usize)) {
        self.for_each_in(self.cell_box(p, reach), f);
    }

    /// Calls `f` with every body in the cells `cells` (inclusive `[x0, y0, x1, y1]`), in
    /// ascending cell then body order (deterministic).
    pub(crate) fn for_each_in(&self, cells: [usize; 4], mut f: impl FnMut(usize)) {
        let [x0, y0, x1, y1] = cells;
        for cy in y0..=y1 {
            let (from, to) = self.row_run(x0, x1, cy);
            // The cells of one row are consecutive in `items`.
            for &i in &self.items[from..to] {
                f(i as usize);
            }
        }
    }

    /// Calls `f(i, disc_i, j, disc_j)` once for every unordered pair of bodies in the same
    /// or in adjacent cells (`i` first by slot order within a cell), with their discs, so
    /// every pair of bodies closer than the cell side is visited, each once. (Clamping at
    /// the grid's edge only brings cells closer, so this holds there too.)
    ///
    /// The bodies are walked in the grid's order, so both discs come from memory laid out
    /// in cell order rather than from anywhere in a per-slot array.
    pub(crate) fn for_each_close_pair(&self, mut f: impl FnMut(usize, [f32; 3], usize, [f32; 3])) {
        let cols = self.cols;
        let places =
            |from: usize, to: usize| self.start[from] as usize..self.start[to + 1] as usize;
        for (k, (&i, &disc)) in self.items.iter().zip(&self.discs).enumerate() {
            let (i, c) = (i as usize, self.cell_of[i as usize] as usize);
            let (cx, cy) = (c % cols, c / cols);
            let mut pair = |others: std::ops::Range<usize>| {
                for (&j, &other) in self.items[others.clone()].iter().zip(&self.discs[others]) {
                    f(i, disc, j as usize, other);
                }
            };
            // The same cell lists bodies in slot order: pair with the later ones.
            pair(k + 1..self.start[c + 1] as usize);
            // Forward neighbours: east, and the west, north and east cells of the next row.
            if cx + 1 < cols {
                pair(places(c + 1, c + 1));
            }
            if cy + 1 < self.rows {
                let row = c + cols;
                let lo = if cx > 0 { row - 1 } else { row };
                let hi = if cx + 1 < cols { row + 1 } else { row };
                pair(places(lo, hi));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_pairs_are_every_pair_closer_than_a_cell_once() {
        let mut k = 7u32;
        let mut next = || {
            k = k.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (k >> 8) as f32 / (1u32 << 24) as f32
        };
        // Some bodies beyond the grid's bounds too (they clamp into the edge cells).
        let positions: Vec<Option<Vec2>> = (0..600)
            .map(|i| (i % 7 != 3).then(|| Vec2::new(next() * 14.0 - 2.0, next() * 9.0 - 1.0)))
            .collect();
        let mut grid = BodyGrid::default();
        let cell = 1.0;
        grid.rebuild(Vec2::ZERO, Vec2::new(10.0, 7.0), cell, &positions);
        let mut seen = std::collections::BTreeMap::new();
        grid.for_each_close_pair(|i, _, j, _| {
            assert_ne!(i, j);
            *seen.entry((i.min(j), i.max(j))).or_insert(0) += 1;
        });
        assert!(seen.values().all(|&n| n == 1), "a pair visited twice");
        let mut close = 0;
        for (i, a) in positions.iter().enumerate() {
            for (j, b) in positions.iter().enumerate().skip(i + 1) {
                if let (Some(a), Some(b)) = (a, b)
                    && (*a - *b).length() < cell
                {
                    close += 1;
                    assert!(seen.contains_key(&(i, j)), "pair {i} {j} missed");
                }
            }
        }
        assert!(close > 100, "only {close} close pairs");
    }
}
