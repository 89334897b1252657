//! The interest and delta engine: which entities each viewer sees, and the delta snapshot
//! that tells it. A library with no sockets, no clock and no world: its inputs are a frame
//! of every body's wire state, each viewer's position and acknowledgements; its output is
//! each viewer's datagram bytes. The game server's snapshot workers call it for the one
//! world a process runs; a gateway in front of many zones builds the frame from their
//! bodies just the same ([`Frame::from_states`]).
//!
//! Once per tick the caller builds a [`Frame`] of every body's wire state, bucketed in a
//! uniform grid (bodies stored cell by cell, so a query reads memory in order and visits
//! only the columns its circle reaches in each row). Per client,
//! [`ClientView::snapshot`] gathers the entities within the view radius of its character
//! (those already in view stay until they are `hysteresis` further away, so entities on the
//! border do not flicker), then builds a delta against the newest view the client
//! acknowledged (its baseline), nearest and most outdated entities first when the datagram
//! cannot hold every change. The client applies the snapshot to that baseline, so both
//! "in view" and "outdated" are judged against it: what a snapshot leaves out, the client
//! holds as the baseline had it, whatever newer snapshots it has not acknowledged carried.
//! A snapshot does not look at every entity in view: each is looked at on a cadence set by
//! how far away the client holds it (every tick near the viewer, every eighth tick at the
//! edge of the view), and the view's circle is scanned for entities entering it every
//! fourth tick ([`schedule`]): a datagram carries only a fraction of what changes in a
//! crowd, and looking at all of it to leave most out was most of a snapshot's work.
//! Each view keeps each entity's rank in the frame's id order, so that while the world's
//! ids stay the same, a snapshot looks its baseline's members up by rank and scans the
//! grid only for bodies that are not in view yet. A caller that builds a frame every tick
//! lets each follow the one before ([`Frame::follow`]): frames with the same bodies (ids,
//! kinds and radii) then share a roster, and a view made from one of them is used by the
//! next without checking who each member is.
//!
//! The delta is exactly what [`protocol::build_snapshot`] (the specification of how a
//! snapshot spends its byte budget) makes of the same entities (those the schedule does not
//! look at count as unchanged), encoded as
//! [`protocol::codec::encode_datagram`] would: the same bytes. It is built in one pass over
//! the baseline with the bodies near the viewer (looked up by rank, or else merged by id
//! with the baseline), and written straight into the datagram; warm, a snapshot allocates
//! only its datagram. What it sent is kept as a diff against its baseline, and the view it
//! leads to is made only when the client acknowledges it, in the baseline's own memory
//! when no other snapshot still needs that: a client's crowd is not copied every tick.
//!
//! Its cost is measured by `cargo bench -p server --bench snapshots` (on the game server's
//! real frames); the figures are in `docs/benchmarks.md`.

mod delta;
mod frame;
mod history;
pub mod schedule;

use protocol::{BuildError, EntityState, NetId};

pub use frame::Frame;

/// Snapshots per client that can become delta baselines: a view is a baseline only while
/// its snapshot is one of the last 16 built, so 16 ticks (0.8 s) of acknowledgement delay
/// before a client falls back to a full snapshot. A client that acknowledges every
/// snapshot has one view, patched by each acknowledged snapshot (a view is dropped as soon
/// as a newer one is acknowledged, unless a snapshot still waiting was built against it).
pub const HISTORY: usize = 16;

/// How far a client sees.
#[derive(Clone, Copy, Debug)]
pub struct ViewRange {
    /// Entities this close enter the view, metres.
    pub radius_m: f32,
    /// Entities in view leave beyond `radius_m + hysteresis_m`.
    pub hysteresis_m: f32,
}

/// One client's side of the snapshot stream: the snapshots sent and not acknowledged yet,
/// the views they were built against (the possible baselines, each sorted by id) and the
/// newest tick it acknowledged.
#[derive(Debug, Default)]
pub struct ClientView {
    history: history::History,
    /// The members of one view as bits over the frame's ranks (the view of tick
    /// `members_of`): a snapshot whose baseline is that view tests the bodies near the
    /// viewer against them, and the view made of it when acknowledged updates them,
    /// instead of marking every member anew each tick.
    members: Vec<u64>,
    members_of: Option<u64>,
}

/// Working memory shared by every client's snapshot in a tick (one per thread): for a
/// snapshot that merges ids, a mark per body of the frame (in id order) near the viewer
/// and, for each marked one, its squared distance from the viewer; and the delta
/// builder's buffers.
#[derive(Debug, Default)]
pub struct Scratch {
    marks: Vec<u64>,
    near: Vec<f32>,
    plan: delta::Plan,
}

impl Scratch {
    /// Sizes the scratch for a frame of `bodies` (marks start and end all clear).
    fn prepare(&mut self, bodies: usize) {
        self.marks.resize(bodies.div_ceil(64), 0);
        self.near.resize(bodies, 0.0);
    }
}

impl ClientView {
    /// A client that has seen nothing.
    pub fn new() -> ClientView {
        ClientView::default()
    }

    /// The client received the snapshot of `tick`. Acknowledgements only move forward;
    /// the view it leads to is made, and views older than it can no longer be baselines
    /// and are dropped (unless a snapshot not acknowledged yet was built against one).
    pub fn acknowledge(&mut self, tick: u64) {
        self.history
            .acknowledge(tick, &mut self.members, &mut self.members_of);
    }

    /// The entities the client holds after the newest snapshot sent, sorted by id (`None`
    /// before any). Made anew on each call: for tests and reports.
    pub fn latest(&self) -> Option<Vec<EntityState>> {
        self.history.latest()
    }

    /// Builds this tick's snapshot datagram for the client whose character is `me` at
    /// `at`, within `budget_bytes`, and records the view it leads to. The datagram is a
    /// new vector; [`ClientView::snapshot_into`] writes into one the caller keeps.
    pub fn snapshot(
        &mut self,
        frame: &Frame,
        scratch: &mut Scratch,
        me: NetId,
        at: (f32, f32),
        header: (u64, u32),
        budget_bytes: usize,
    ) -> Result<Vec<u8>, BuildError> {
        let mut datagram = Vec::new();
        self.snapshot_into(frame, scratch, me, at, header, budget_bytes, &mut datagram)?;
        Ok(datagram)
    }

    /// [`ClientView::snapshot`] into `datagram` (cleared first, grown to the datagram
    /// limit once): once warm, building a snapshot allocates nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn snapshot_into(
        &mut self,
        frame: &Frame,
        scratch: &mut Scratch,
        me: NetId,
        at: (f32, f32),
        header: (u64, u32),
        budget_bytes: usize,
        datagram: &mut Vec<u8>,
    ) -> Result<(), BuildError> {
        let (tick, last_input_seq) = header;
        let range = frame.range;
        let outer = range.radius_m + range.hysteresis_m.max(0.0);
        let outer2 = outer * outer;
        scratch.prepare(frame.len());
        let Scratch { marks, near, plan } = scratch;
        let mut diff = self.history.spare_diff();
        let (baseline_tick, base) = self.history.baseline();
        let header = (tick, baseline_tick, last_input_seq);
        let gap = schedule::gap(tick, baseline_tick);
        let scan = schedule::scans(tick, gap, base.backlog, me);
        let gap = gap.unwrap_or(u64::MAX);
        // The baseline's members are looked up by rank while the frame's ranks still name
        // them ([`delta::Plan::merge_members`] tells), with their bits kept from the last
        // snapshot when it was built against the same baseline or led to it.
        let words = frame.len().div_ceil(64);
        if baseline_tick.is_none()
            || self.members_of != baseline_tick
            || self.members.len() != words
        {
            self.members_of = None;
            self.members.clear();
            self.members.resize(words, 0);
            for &rank in &base.ranks {
                if let Some(word) = self.members.get_mut(rank as usize / 64) {
                    *word |= 1 << (rank % 64);
                }
            }
            self.members_of = baseline_tick;
        }
        let members = delta::Members {
            frame,
            members: &self.members[..],
            me,
            at,
            radius: range.radius_m,
            outer2,
            base,
            tick,
            gap,
            scan,
        };
        let built = match plan.merge_members(members) {
            Some(merged) => plan.build(
                (frame, base),
                merged,
                delta::Ranks::Baseline,
                header,
                budget_bytes,
                (&mut diff, datagram),
            ),
            None => {
                let mut marked = 0;
                // Without a branch: a body the circle misses sets no mark, and what it
                // writes in `near` is never read.
                frame.near(at, outer, |rank, d2| {
                    let inside = d2 <= outer2;
                    marks[(rank / 64) as usize] |= u64::from(inside) << (rank % 64);
                    near[rank as usize] = d2;
                    marked += usize::from(inside);
                });
                let inputs = delta::Inputs {
                    frame,
                    marks,
                    marked,
                    near,
                    me,
                    radius2: range.radius_m * range.radius_m,
                    base,
                    at,
                    tick,
                    gap,
                    scan,
                };
                plan.merge_and_build(inputs, header, budget_bytes, &mut diff, datagram)
            }
        };
        match built {
            Ok(()) => {
                self.history.record(tick, baseline_tick, diff);
                Ok(())
            }
            Err(err) => {
                self.history.keep_diff(diff);
                Err(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use protocol::{EntityKind, Motion, QPos, ServerDatagram};

    use super::*;

    /// An idle NPC of radius 40 cm at (`x`, `y`) metres: the crate's tests' entity.
    pub(crate) fn npc_state(index: u32, x: f32, y: f32) -> EntityState {
        EntityState {
            id: NetId {
                index,
                generation: 0,
            },
            kind: EntityKind::Npc,
            radius_cm: 40,
            pos: QPos::from_metres(x, y),
            motion: Motion::Idle,
        }
    }

    fn npc(index: u32, x: f32, y: f32) -> (EntityState, (f32, f32)) {
        (npc_state(index, x, y), (x, y))
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

    fn ids(view: Vec<EntityState>) -> Vec<u32> {
        view.iter().map(|e| e.id.index).collect()
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
        client.acknowledge(1);
        // Entity 1 moves to 11 m: it stays (within the hysteresis); entity 2 still out.
        let f = frame(&[me, npc(1, 61.0, 50.0), npc(2, 50.0, 61.0)]);
        client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (2, 0), 1100)
            .unwrap();
        assert_eq!(ids(client.latest().unwrap()), vec![0, 1]);
        client.acknowledge(2);
        // Beyond 12 m it leaves, on the first of the next two ticks that looks at it (it is
        // held between 8 and 16 m: looked at every second tick).
        let f = frame(&[me, npc(1, 62.5, 50.0), npc(2, 50.0, 61.0)]);
        let mut left = None;
        for tick in 3..=4 {
            client
                .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (tick, 0), 1100)
                .unwrap();
            client.acknowledge(tick);
            if ids(client.latest().unwrap()) == vec![0] {
                left = Some(tick);
                break;
            }
        }
        assert!(left.is_some(), "entity 1 is still in view at tick 4");
    }

    /// The hysteresis keeps what the client holds: the baseline it applies the snapshot to.
    /// Without an acknowledgement that is the empty view, so an entity in the hysteresis's
    /// band is out, whatever an unacknowledged snapshot showed.
    #[test]
    fn hysteresis_goes_by_the_baseline() {
        let mut scratch = Scratch::default();
        let me = npc(0, 50.0, 50.0);
        let mut client = ClientView::new();
        let f = frame(&[me, npc(1, 59.0, 50.0)]);
        client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (1, 0), 1100)
            .unwrap();
        assert_eq!(ids(client.latest().unwrap()), vec![0, 1]);
        let f = frame(&[me, npc(1, 61.0, 50.0)]);
        client
            .snapshot(&f, &mut scratch, me.0.id, (50.0, 50.0), (2, 0), 1100)
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

    /// An acknowledgement of a tick no snapshot was sent for (ahead of every tick, or one
    /// skipped) changes nothing: the deltas go on against the last true one, and true ones
    /// after it count.
    #[test]
    fn acknowledgements_of_ticks_never_sent_change_nothing() {
        let mut scratch = Scratch::default();
        let me = npc(0, 50.0, 50.0);
        let mut client = ClientView::new();
        let f = frame(&[me, npc(1, 55.0, 50.0)]);
        let baseline = |client: &mut ClientView, scratch: &mut Scratch, tick: u64| {
            let bytes = client
                .snapshot(&f, scratch, me.0.id, (50.0, 50.0), (tick, 0), 1100)
                .unwrap();
            match protocol::codec::decode_datagram(&bytes).unwrap() {
                ServerDatagram::Snapshot(s) => s.baseline_tick,
            }
        };
        assert_eq!(baseline(&mut client, &mut scratch, 1), None);
        client.acknowledge(1);
        for never_sent in [u64::MAX, 3] {
            client.acknowledge(never_sent);
            assert_eq!(baseline(&mut client, &mut scratch, 2), Some(1));
        }
        client.acknowledge(2);
        assert_eq!(baseline(&mut client, &mut scratch, 4), Some(2));
    }

    /// Once warm, a snapshot allocates nothing: the marks, the builder's items and lists,
    /// the views and the datagram are reused (a reused buffer could still grow when a crowd
    /// grows; this one does not).
    #[test]
    fn a_warm_snapshot_allocates_nothing() {
        warm_snapshots_allocate_nothing(1, 0);
    }

    /// The same for a client that acknowledges every other snapshot (the load test's bots
    /// acknowledge every 100 ms): each acknowledgement drops two views at once, and both
    /// are kept for the views to come.
    #[test]
    fn a_warm_snapshot_acknowledged_every_other_tick_allocates_nothing() {
        warm_snapshots_allocate_nothing(2, 0);
    }

    /// The same a tick late, as over a round trip: the snapshot after the acknowledged one
    /// was built against the same baseline, which is kept as the way back from the new view.
    #[test]
    fn a_warm_snapshot_acknowledged_every_other_tick_a_tick_late_allocates_nothing() {
        warm_snapshots_allocate_nothing(2, 1);
    }

    /// Snapshots of a crowd all in view, acknowledged every `every` ticks, `late` ticks
    /// late: none allocates once warm.
    fn warm_snapshots_allocate_nothing(every: u64, late: u64) {
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
        let mut datagram = Vec::new();
        let mut step = |client: &mut ClientView, scratch: &mut Scratch| {
            tick += 1;
            let f = &frames[tick as usize % frames.len()];
            client
                .snapshot_into(f, scratch, me, (50.0, 50.0), (tick, 0), 800, &mut datagram)
                .unwrap();
            if tick > late && tick.is_multiple_of(every) {
                client.acknowledge(tick - late);
            }
            datagram.len()
        };
        // Warm: the crowd is all in view, and every buffer has grown to hold it.
        for _ in 0..60 {
            step(&mut client, &mut scratch);
        }
        let snapshots = 40;
        let info = allocation_counter::measure(|| {
            for _ in 0..snapshots {
                std::hint::black_box(step(&mut client, &mut scratch));
            }
        });
        assert_eq!(
            info.count_total, 0,
            "allocations in {snapshots} warm snapshots ({info:?})"
        );
    }
}
