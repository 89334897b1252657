//! The broad phase: a uniform grid over the bodies, rebuilt each tick, so neighbour queries
//! cost O(1) amortised instead of O(N).

use crate::types::Vec2;

/// Bodies bucketed by cell (compressed rows: `start[c]..start[c + 1]` indexes `items`).
#[derive(Clone, Debug, Default)]
pub(crate) struct BodyGrid {
    origin: Vec2,
    inv_cell: f32,
    cols: usize,
    rows: usize,
    start: Vec<u32>,
    items: Vec<u32>,
    cell_of: Vec<u32>,
    /// Rebuild scratch: the next free place in each cell.
    fill: Vec<u32>,
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
        let cells = self.cols * self.rows;
        self.start.clear();
        self.start.resize(cells + 1, 0);
        self.cell_of.clear();
        for p in positions {
            let c = p.map_or(u32::MAX, |p| self.cell(p) as u32);
            self.cell_of.push(c);
            if c != u32::MAX {
                self.start[c as usize + 1] += 1;
            }
        }
        for i in 1..self.start.len() {
            self.start[i] += self.start[i - 1];
        }
        self.items.clear();
        self.items.resize(self.start[cells] as usize, 0);
        self.fill.clear();
        self.fill.extend_from_slice(&self.start[..cells]);
        for (i, &c) in self.cell_of.iter().enumerate() {
            if c != u32::MAX {
                self.items[self.fill[c as usize] as usize] = i as u32;
                self.fill[c as usize] += 1;
            }
        }
    }

    fn coords(&self, p: Vec2) -> (usize, usize) {
        // `as usize` truncates, which is the floor for the positive values it is used on;
        // zero, negative and NaN offsets clamp to the first cell, as a floor would. (The
        // libm `floor` call was a measurable share of a crowded tick.)
        let fx = (p.x - self.origin.x) * self.inv_cell;
        let fy = (p.y - self.origin.y) * self.inv_cell;
        let cx = if fx > 0.0 {
            (fx as usize).min(self.cols - 1)
        } else {
            0
        };
        let cy = if fy > 0.0 {
            (fy as usize).min(self.rows - 1)
        } else {
            0
        };
        (cx, cy)
    }

    /// The cells `[x0, y0, x1, y1]` (inclusive) that [`BodyGrid::for_each_near`] visits for
    /// `p` and `reach`.
    pub(crate) fn cell_box(&self, p: Vec2, reach: f32) -> [usize; 4] {
        let (x0, y0) = self.coords(p - Vec2::new(reach, reach));
        let (x1, y1) = self.coords(p + Vec2::new(reach, reach));
        [x0, y0, x1, y1]
    }

    /// Whether body `i`'s cell (from the last rebuild) lies in `cells` (a
    /// [`BodyGrid::cell_box`]).
    pub(crate) fn in_box(&self, i: usize, cells: &[usize; 4]) -> bool {
        let c = self.cell_of[i] as usize;
        let (cx, cy) = (c % self.cols, c / self.cols);
        cx >= cells[0] && cx <= cells[2] && cy >= cells[1] && cy <= cells[3]
    }

    fn cell(&self, p: Vec2) -> usize {
        let (cx, cy) = self.coords(p);
        cy * self.cols + cx
    }

    /// Calls `f` with every body whose cell overlaps the box around `p` of half-size
    /// `reach`, in ascending cell then body order (deterministic).
    pub(crate) fn for_each_near(&self, p: Vec2, reach: f32, mut f: impl FnMut(usize)) {
        let [x0, y0, x1, y1] = self.cell_box(p, reach);
        for cy in y0..=y1 {
            let row = cy * self.cols;
            let (from, to) = (
                self.start[row + x0] as usize,
                self.start[row + x1 + 1] as usize,
            );
            // The cells of one row are consecutive in `items`.
            for &i in &self.items[from..to] {
                f(i as usize);
            }
        }
    }
}
