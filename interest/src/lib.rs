//! The interest and delta engine: which entities each viewer sees, and the delta snapshot
//! that tells it. A library with no sockets, no clock and no world: its inputs are a frame
//! of every body's wire state, each viewer's position and acknowledgements; its output is
//! each viewer's datagram bytes. The game server's snapshot workers call it for the one
//! world a process runs; a gateway in front of many zones can build the frame from their
//! bodies just the same ([`Frame::from_states`]).
//!
//! Once per tick the caller builds a [`Frame`] of every body's wire state, bucketed in a
//! uniform grid (positions stored cell by cell, so a query reads memory in
//! order and visits only the columns its circle reaches in each row). Per client,
//! [`ClientView::snapshot`] gathers the entities within the view radius of its character
//! (those already in view stay until they are `hysteresis` further away, so entities on the
//! border do not flicker), then builds a delta against the newest view the client
//! acknowledged ([`protocol::build_snapshot`]), nearest entities first when the datagram
//! cannot hold every change.
//!
//! Its cost is measured by `cargo bench -p server --bench snapshots` (on the game server's
//! real frames); the figures are in `docs/benchmarks.md`.

use std::collections::VecDeque;

use protocol::{
    BuildError, Candidate, EntityState, NetId, ServerDatagram, SnapshotBuilder, SnapshotHeader,
    View,
};

/// Snapshot views kept per client for delta baselines: 16 ticks (0.8 s) of
/// acknowledgement delay before a client falls back to a full snapshot. A client that
/// acknowledges every snapshot keeps only one or two (older views are dropped as soon as a
/// newer one is acknowledged).
pub const HISTORY: usize = 16;

/// Every body's wire state at one tick, bucketed in a grid.
pub struct Frame {
    range: ViewRange,
    states: Vec<EntityState>,
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
        Frame {
            range,
            states,
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
    fn near(&self, at: (f32, f32), radius: f32, mut visit: impl FnMut(u32, f32)) {
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

/// Send order when a datagram cannot hold every change (lower first): the client's own
/// character, then entities by how wrong the client's picture of them is relative to how
/// near they are: error² / (distance² + 1 m²), which orders like error / distance without a
/// square root. A new entity counts as 10 m wrong, a changed motion as 10 cm. So near
/// entities update often, far ones less often but never starve: their error grows until
/// they win.
fn priority(is_me: bool, distance2_m2: f32, known: Option<&EntityState>, now: &EntityState) -> f32 {
    if is_me {
        return f32::NEG_INFINITY;
    }
    let error2_m2 = match known {
        None => 100.0,
        Some(old) => {
            let dx = (now.pos.x_cm as f32 - old.pos.x_cm as f32) / 100.0;
            let dy = (now.pos.y_cm as f32 - old.pos.y_cm as f32) / 100.0;
            let motion = if now.motion == old.motion { 0.0 } else { 0.01 };
            dx * dx + dy * dy + motion
        }
    };
    -error2_m2 / (distance2_m2 + 1.0)
}

/// How far a client sees.
#[derive(Clone, Copy, Debug)]
pub struct ViewRange {
    /// Entities this close enter the view, metres.
    pub radius_m: f32,
    /// Entities in view leave beyond `radius_m + hysteresis_m`.
    pub hysteresis_m: f32,
}

/// One client's side of the snapshot stream: the views of the snapshots sent recently
/// (the possible baselines) and the newest tick it acknowledged.
#[derive(Debug, Default)]
pub struct ClientView {
    history: VecDeque<(u64, View)>,
    acked: Option<u64>,
    candidates: Vec<Candidate>,
    /// Memory of a dropped view, for the next one.
    spare: Vec<EntityState>,
}

/// Working memory shared by every client's snapshot in a tick (one per thread): a mark per
/// body of the frame and its squared distance from the current viewer, and the snapshot
/// builder's buffers.
#[derive(Debug, Default)]
pub struct Scratch {
    marks: Vec<u64>,
    distance2: Vec<f32>,
    builder: SnapshotBuilder,
}

impl Scratch {
    /// Sizes the scratch for a frame of `bodies` (marks start and end all clear).
    fn prepare(&mut self, bodies: usize) {
        self.marks.resize(bodies.div_ceil(64), 0);
        self.distance2.resize(bodies, 0.0);
    }
}

impl ClientView {
    /// A client that has seen nothing.
    pub fn new() -> ClientView {
        ClientView::default()
    }

    /// The client received the snapshot of `tick`. Acknowledgements only move forward;
    /// views older than the acknowledged one can no longer be baselines and are dropped.
    pub fn acknowledge(&mut self, tick: u64) {
        if self.acked.is_some_and(|acked| acked >= tick) {
            return;
        }
        self.acked = Some(tick);
        while self.history.front().is_some_and(|(t, _)| *t < tick) {
            self.recycle_oldest();
        }
    }

    /// Drops the oldest view, keeping its memory for the next one.
    fn recycle_oldest(&mut self) {
        if let Some((_, view)) = self.history.pop_front() {
            self.spare = view.into_entities();
        }
    }

    /// The view the client holds after the newest snapshot sent (empty before any).
    pub fn latest(&self) -> Option<&View> {
        self.history.back().map(|(_, view)| view)
    }

    /// Builds this tick's snapshot datagram for the client whose character is `me` at
    /// `at`, within `budget_bytes`, and records the view it leads to.
    pub fn snapshot(
        &mut self,
        frame: &Frame,
        scratch: &mut Scratch,
        me: NetId,
        at: (f32, f32),
        header: (u64, u32),
        budget_bytes: usize,
    ) -> Result<Vec<u8>, BuildError> {
        let (tick, last_input_seq) = header;
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        let range = frame.range;
        let outer = range.radius_m + range.hysteresis_m.max(0.0);
        let radius2 = range.radius_m * range.radius_m;
        scratch.prepare(frame.len());
        let Scratch {
            marks,
            distance2,
            builder,
        } = scratch;
        frame.near(at, outer, |i, d2| {
            marks[(i / 64) as usize] |= 1 << (i % 64);
            distance2[i as usize] = d2;
        });
        // Frame indices follow entity ids (the world lists bodies by slot), so walking the
        // marks in index order visits the candidates in id order, and one merge with the
        // newest view finds what the client already knows. Marks are cleared on the way.
        let latest = self
            .history
            .back()
            .map_or(&[][..], |(_, view)| view.entities());
        let mut at_latest = 0;
        for (w, word) in marks.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (state, d2) = (frame.states[i], distance2[i]);
                while latest.get(at_latest).is_some_and(|e| e.id < state.id) {
                    at_latest += 1;
                }
                let known = latest.get(at_latest).filter(|e| e.id == state.id);
                if state.id != me && d2 > radius2 && known.is_none() {
                    continue;
                }
                candidates.push(Candidate {
                    state,
                    priority: priority(state.id == me, d2, known, &state),
                });
            }
        }
        let empty = View::new();
        let (baseline_tick, baseline) = match self.acked.and_then(|acked| {
            self.history
                .iter()
                .find(|(t, _)| *t == acked)
                .map(|(t, view)| (*t, view))
        }) {
            Some((t, view)) => (Some(t), view),
            None => (None, &empty),
        };
        let header = SnapshotHeader {
            tick,
            baseline_tick,
            last_input_seq,
        };
        let recycled = std::mem::take(&mut self.spare);
        let built = builder.build(header, baseline, &candidates, budget_bytes, recycled);
        self.candidates = candidates;
        let (snapshot, view) = built?;
        let datagram = ServerDatagram::Snapshot(snapshot);
        let encoded = protocol::codec::encode_datagram(&datagram);
        // The snapshot's lists serve the next build.
        let ServerDatagram::Snapshot(snapshot) = datagram;
        builder.recycle(snapshot);
        let bytes = encoded
            // build_snapshot keeps within the budget, which is at most the datagram limit;
            // should that ever fail, the snapshot is dropped like one over budget.
            .map_err(|_| BuildError::BudgetTooSmall {
                budget: budget_bytes,
                needed: budget_bytes + 1,
            })?;
        self.history.push_back((tick, view));
        if self.history.len() > HISTORY {
            self.recycle_oldest();
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use protocol::{EntityKind, Motion, QPos};

    use super::*;

    fn npc(index: u32, x: f32, y: f32) -> (EntityState, (f32, f32)) {
        (
            EntityState {
                id: NetId {
                    index,
                    generation: 0,
                },
                kind: EntityKind::Npc,
                radius_cm: 40,
                pos: QPos::from_metres(x, y),
                motion: Motion::Idle,
            },
            (x, y),
        )
    }

    const RANGE: ViewRange = ViewRange {
        radius_m: 10.0,
        hysteresis_m: 2.0,
    };

    fn frame(bodies: &[(EntityState, (f32, f32))]) -> Frame {
        Frame::from_states(
            bodies.iter().map(|b| b.0).collect(),
            bodies.iter().map(|b| b.1).collect(),
            (0.0, 0.0),
            (100.0, 100.0),
            RANGE,
        )
    }

    fn ids(view: &View) -> Vec<u32> {
        view.entities().iter().map(|e| e.id.index).collect()
    }

    #[test]
    fn view_radius_with_hysteresis() {
        let mut scratch = Scratch::default();
        let me = npc(0, 50.0, 50.0);
        let mut client = ClientView::new();
        // Entity 1 at 9 m enters; entity 2 at 11 m does not.
        let f = frame(&[me, npc(1, 59.0, 50.0), npc(2, 50.0, 61.0)]);
        client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (1, 0), 1100)
            .unwrap();
        assert_eq!(ids(client.latest().unwrap()), vec![0, 1]);
        // Entity 1 moves to 11 m: it stays (within the hysteresis); entity 2 still out.
        let f = frame(&[me, npc(1, 61.0, 50.0), npc(2, 50.0, 61.0)]);
        client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (2, 0), 1100)
            .unwrap();
        assert_eq!(ids(client.latest().unwrap()), vec![0, 1]);
        // Beyond 12 m it leaves.
        let f = frame(&[me, npc(1, 62.5, 50.0), npc(2, 50.0, 61.0)]);
        client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (3, 0), 1100)
            .unwrap();
        assert_eq!(ids(client.latest().unwrap()), vec![0]);
    }

    #[test]
    fn deltas_follow_acknowledgements() {
        let mut scratch = Scratch::default();
        let me = npc(0, 50.0, 50.0);
        let mut client = ClientView::new();
        let f = frame(&[me, npc(1, 55.0, 50.0)]);
        let first = client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (1, 0), 1100)
            .unwrap();
        // Not acknowledged: the next snapshot is again against the empty view.
        let again = client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (2, 0), 1100)
            .unwrap();
        let decode = |bytes: &[u8]| match protocol::codec::decode_datagram(bytes).unwrap() {
            ServerDatagram::Snapshot(s) => s,
        };
        assert_eq!(decode(&first).baseline_tick, None);
        assert_eq!(decode(&again).baseline_tick, None);
        assert_eq!(decode(&again).entered.len(), 2);
        client.acknowledge(2);
        let delta = client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (3, 0), 1100)
            .unwrap();
        let delta = decode(&delta);
        assert_eq!(delta.baseline_tick, Some(2));
        assert!(delta.entered.is_empty() && delta.changed.is_empty() && delta.left.is_empty());
    }

    /// Once warm, a snapshot allocates its output, the datagram, and next to nothing else:
    /// the candidates, marks, the builder's slots and lists and the views are reused (a
    /// reused buffer still grows now and then when a crowd grows).
    #[test]
    fn a_warm_snapshot_allocates_only_its_output() {
        let mut scratch = Scratch::default();
        let mut client = ClientView::new();
        let bodies = |t: u64| -> Vec<(EntityState, (f32, f32))> {
            (0..300u32)
                .map(|i| {
                    let phase = (i as f32) * 0.37 + t as f32 * 0.05;
                    let x = 50.0 + 8.0 * phase.sin() + (i % 10) as f32 - 5.0;
                    let y = 50.0 + 8.0 * phase.cos() + (i / 30) as f32 - 5.0;
                    npc(i, x, y)
                })
                .collect()
        };
        let frames: Vec<Frame> = (0..40).map(|t| frame(&bodies(t))).collect();
        let me = NetId {
            index: 0,
            generation: 0,
        };
        let mut tick = 0u64;
        let mut step = |client: &mut ClientView, scratch: &mut Scratch| {
            tick += 1;
            let f = &frames[tick as usize % frames.len()];
            let bytes = client
                .snapshot(f, scratch, me, (50.0, 50.0), (tick, 0), 800)
                .unwrap();
            client.acknowledge(tick);
            bytes.len()
        };
        for _ in 0..20 {
            step(&mut client, &mut scratch);
        }
        let snapshots = 20;
        let info = allocation_counter::measure(|| {
            for _ in 0..snapshots {
                std::hint::black_box(step(&mut client, &mut scratch));
            }
        });
        let per_snapshot = info.count_total as f64 / f64::from(snapshots);
        assert!(
            per_snapshot <= 1.5,
            "{per_snapshot} allocations per warm snapshot ({info:?})"
        );
    }
}
