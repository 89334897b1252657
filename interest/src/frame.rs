//! The frame: every body's wire state at one tick, bucketed in a uniform grid.

use protocol::EntityState;

use crate::ViewRange;

/// Every body's wire state at one tick, bucketed in a grid.
pub struct Frame {
    pub(crate) range: ViewRange,
    pub(crate) states: Vec<EntityState>,
    /// Each body's id as one ordered integer ([`crate::delta::key`]) and the bytes its full
    /// state takes on the wire: the same for every viewer, so computed once per frame.
    pub(crate) keys: Vec<u64>,
    pub(crate) enter_costs: Vec<u8>,
    pub(crate) id_costs: Vec<u8>,
    grid: Grid,
}

struct Grid {
    origin: (f32, f32),
    cell_m: f32,
    cols: usize,
    rows: usize,
    /// `starts[c]..starts[c + 1]` indexes `entries` for cell `c`.
    starts: Vec<u32>,
    /// Every body's position and frame index, cell by cell (row-major), so that a view's
    /// query reads memory in order.
    entries: Vec<GridEntry>,
}

#[derive(Clone, Copy, Debug, Default)]
struct GridEntry {
    x: f32,
    y: f32,
    index: u32,
}

impl Grid {
    fn cell_of(&self, x: f32, y: f32) -> (usize, usize) {
        let col = ((x - self.origin.0) / self.cell_m).floor();
        let row = ((y - self.origin.1) / self.cell_m).floor();
        // Float-to-int `as` saturates (NaN to 0), so any position lands in a border cell.
        (
            (col.max(0.0) as usize).min(self.cols - 1),
            (row.max(0.0) as usize).min(self.rows - 1),
        )
    }
}

impl Frame {
    /// A frame from states and their positions (metres) within the given bounds, for views
    /// of `range`. Repeated ids keep their first entry.
    pub fn from_states(
        mut states: Vec<EntityState>,
        mut positions: Vec<(f32, f32)>,
        min: (f32, f32),
        max: (f32, f32),
        range: ViewRange,
    ) -> Frame {
        // A third of the view's reach: a view's query then scans about 1.5 times its
        // circle's area, where cells as wide as the view would scan 2.2 times.
        let cell_m = (range.radius_m + range.hysteresis_m.max(0.0)) / 3.0;
        positions.truncate(states.len());
        states.truncate(positions.len());
        // Views merge by id and rely on frame order being id order.
        if !states.windows(2).all(|pair| pair[0].id < pair[1].id) {
            let mut pairs: Vec<_> = states.into_iter().zip(positions).collect();
            pairs.sort_by_key(|(state, _)| state.id);
            pairs.dedup_by_key(|(state, _)| state.id);
            (states, positions) = pairs.into_iter().unzip();
        }
        let cell_m = if cell_m.is_finite() && cell_m > 0.0 {
            cell_m
        } else {
            1.0
        };
        let span = |lo: f32, hi: f32| (((hi - lo) / cell_m).ceil().max(1.0) as usize).min(4096);
        let (cols, rows) = (span(min.0, max.0), span(min.1, max.1));
        let mut grid = Grid {
            origin: min,
            cell_m,
            cols,
            rows,
            starts: vec![0; cols * rows + 1],
            entries: vec![GridEntry::default(); positions.len()],
        };
        // Counting sort of entity indices by cell.
        let cells: Vec<usize> = positions
            .iter()
            .map(|&(x, y)| {
                let (c, r) = grid.cell_of(x, y);
                r * cols + c
            })
            .collect();
        for &cell in &cells {
            grid.starts[cell + 1] += 1;
        }
        for i in 1..grid.starts.len() {
            grid.starts[i] += grid.starts[i - 1];
        }
        let mut fill = grid.starts.clone();
        for (i, (&cell, &(x, y))) in cells.iter().zip(&positions).enumerate() {
            grid.entries[fill[cell] as usize] = GridEntry {
                x,
                y,
                index: i as u32,
            };
            fill[cell] += 1;
        }
        let keys = states
            .iter()
            .map(|state| crate::delta::key(state.id))
            .collect();
        let enter_costs = states
            .iter()
            .map(|state| protocol::codec::entity_len(state).min(255) as u8)
            .collect();
        let id_costs = states
            .iter()
            .map(|state| protocol::codec::net_id_len(&state.id).min(255) as u8)
            .collect();
        Frame {
            range,
            states,
            keys,
            enter_costs,
            id_costs,
            grid,
        }
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Calls `visit(index, squared distance)` for every body within `radius` of `at`.
    pub(crate) fn near(&self, at: (f32, f32), radius: f32, mut visit: impl FnMut(u32, f32)) {
        let grid = &self.grid;
        let radius2 = radius * radius;
        let (_, r0) = grid.cell_of(at.0, at.1 - radius);
        let (_, r1) = grid.cell_of(at.0, at.1 + radius);
        for row in r0..=r1 {
            // Only the columns the circle reaches in this row's band. Border rows also hold
            // whatever lies beyond the bounds, so they are scanned across the whole circle.
            let half = if row == 0 || row + 1 == grid.rows {
                radius
            } else {
                let top = grid.origin.1 + row as f32 * grid.cell_m;
                // A centimetre of slack for rounding at the band's edges.
                let dy = ((top - at.1).max(at.1 - (top + grid.cell_m)) - 0.01).max(0.0);
                (radius2 - dy * dy).max(0.0).sqrt()
            };
            let (c0, _) = grid.cell_of(at.0 - half, at.1);
            let (c1, _) = grid.cell_of(at.0 + half, at.1);
            if c0 > c1 {
                continue;
            }
            let first = row * grid.cols;
            let cells = grid.starts[first + c0] as usize..grid.starts[first + c1 + 1] as usize;
            for entry in &grid.entries[cells] {
                let d2 = (entry.x - at.0).powi(2) + (entry.y - at.1).powi(2);
                if d2 <= radius2 {
                    visit(entry.index, d2);
                }
            }
        }
    }
}
