//! The frame: every body's wire state at one tick, bucketed in a uniform grid.

use std::sync::atomic::{AtomicU64, Ordering};

use protocol::EntityState;

use crate::ViewRange;

/// The next roster number a frame is given: every frame built gets one no other frame
/// has, unless [`Frame::follow`] finds it the same roster as the frame before.
static NEXT_ROSTER: AtomicU64 = AtomicU64::new(0);

/// Every body's wire state at one tick, bucketed in a grid.
///
/// The bodies' positions and ranks (places in id order) are stored cell by cell
/// (row-major), so the bodies near one viewer lie in a few runs of memory that its query
/// reads in order; everything else about a body is stored once, by rank, which the merges
/// walk in.
pub struct Frame {
    pub(crate) range: ViewRange,
    /// Each body's rank in id order, cell by cell.
    ranks: Vec<u32>,
    /// Each body's position (metres), cell by cell like `ranks`.
    positions: Vec<(f32, f32)>,
    /// Every body in id order (by rank): what a view that knows its members' ranks reads
    /// instead of merging ids.
    pub(crate) by_rank: Vec<Ranked>,
    /// Names who the bodies are, rank by rank: frames with the same roster number hold the
    /// same ids with the same kinds and radii in the same ranks (numbers are handed out
    /// fresh, and shared only by [`Frame::follow`] after comparing every body).
    pub(crate) roster: u64,
    grid: Grid,
}

/// One body, as looked up by its rank: its wire state and position (metres), with what is
/// the same for every viewer computed once per frame: the bytes its full state and its id
/// take on the wire. Everything a snapshot reads of a body is in its 32 bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ranked {
    pub state: EntityState,
    pub pos: (f32, f32),
    pub enter_cost: u8,
    pub id_cost: u8,
}

const _: () = assert!(std::mem::size_of::<Ranked>() == 32, "a ranked body grew");

struct Grid {
    origin: (f32, f32),
    cell_m: f32,
    cols: usize,
    rows: usize,
    /// `starts[c]..starts[c + 1]` indexes the frame's bodies for cell `c`.
    starts: Vec<u32>,
}

impl Grid {
    fn cell_of(&self, x: f32, y: f32) -> (usize, usize) {
        // Truncation is the floor once negative offsets are clamped to 0 (no libm call);
        // float-to-int `as` saturates (NaN to 0), so any position lands in a border cell.
        let col = (x - self.origin.0) / self.cell_m;
        let row = (y - self.origin.1) / self.cell_m;
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
        };
        // Counting sort of the bodies' ranks (their places in id order) by cell.
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
        let mut ranks = vec![0; states.len()];
        let by_rank: Vec<Ranked> = states
            .iter()
            .zip(&positions)
            .map(|(&state, &pos)| Ranked {
                state,
                pos,
                enter_cost: protocol::codec::entity_len(&state).min(255) as u8,
                id_cost: protocol::codec::net_id_len(&state.id).min(255) as u8,
            })
            .collect();
        for (rank, &cell) in cells.iter().enumerate() {
            ranks[fill[cell] as usize] = rank as u32;
            fill[cell] += 1;
        }
        let positions = ranks.iter().map(|&rank| positions[rank as usize]).collect();
        Frame {
            range,
            ranks,
            positions,
            by_rank,
            roster: NEXT_ROSTER.fetch_add(1, Ordering::Relaxed),
            grid,
        }
    }

    /// Takes `previous`'s roster when this frame holds the same bodies: the same ids, with
    /// the same kinds and radii. A view made from a frame of the same roster then looks its
    /// members up by rank without checking who each one is. Callers that build a frame
    /// every tick call it with the frame before; without it every frame stands alone, and
    /// the views check every member.
    pub fn follow(&mut self, previous: &Frame) {
        let shape = |body: &Ranked| (body.state.id, body.state.kind, body.state.radius_cm);
        let same = self.by_rank.len() == previous.by_rank.len()
            && self
                .by_rank
                .iter()
                .zip(&previous.by_rank)
                .all(|(a, b)| shape(a) == shape(b));
        if same {
            self.roster = previous.roster;
        }
    }

    /// The rank of the body with `id`, if the frame has one.
    pub(crate) fn rank_of(&self, id: protocol::NetId) -> Option<u32> {
        self.by_rank
            .binary_search_by(|body| body.state.id.cmp(&id))
            .ok()
            .map(|rank| rank as u32)
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.by_rank.len()
    }

    /// Whether there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.by_rank.is_empty()
    }

    /// Calls `visit(rank, squared distance)` for every body within `radius` of `at`, and for
    /// some a little further (those in the cells the circle reaches): its rank in id order.
    /// Telling the two apart is the caller's test, which it can make without a branch.
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
            for (&(x, y), &rank) in self.positions[cells.clone()].iter().zip(&self.ranks[cells]) {
                visit(rank, (x - at.0).powi(2) + (y - at.1).powi(2));
            }
        }
    }
}
