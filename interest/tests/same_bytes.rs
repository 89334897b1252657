//! The engine's datagrams are byte for byte those of the reference: every body within the
//! view's reach found by brute force (of the baseline's members, those the documented
//! schedule does not look at held as the baseline has them; entering bodies only when it
//! scans), ranked by the documented priority, the snapshot built
//! by `protocol::build_snapshot` and encoded by `protocol::codec::encode_datagram`, with the
//! same history of views and acknowledgements. Checked on moving crowds where bodies come
//! and go (new generations), change radius and kind, switch motions, and leave the frame's
//! bounds; with acknowledgements delayed, lost and out of order; over budgets from a
//! datagram's header to the datagram limit.

use std::collections::VecDeque;

use interest::{ClientView, Frame, HISTORY, Scratch, ViewRange, schedule};
use protocol::codec::encode_datagram;
use protocol::{
    BuildError, Candidate, EntityKind, EntityState, Motion, NetId, QPos, ServerDatagram,
    SnapshotHeader, View, build_snapshot,
};

mod common;

use common::Rng;

/// The priority the engine documents: the client's own character first, then
/// error² / (distance² + 1 m²), a new entity counting as 10 m wrong and a changed motion
/// as 10 cm.
fn priority(is_me: bool, d2: f32, known: Option<&EntityState>, now: &EntityState) -> f32 {
    if is_me {
        return f32::NEG_INFINITY;
    }
    let error2 = match known {
        None => 100.0,
        Some(old) => {
            let dx = (now.pos.x_cm as f32 - old.pos.x_cm as f32) / 100.0;
            let dy = (now.pos.y_cm as f32 - old.pos.y_cm as f32) / 100.0;
            dx * dx + dy * dy + if now.motion == old.motion { 0.0 } else { 0.01 }
        }
    };
    -error2 / (d2 + 1.0)
}

/// The reference client state: views by tick and the newest acknowledgement.
#[derive(Default)]
struct Reference {
    /// Each view, and whether its snapshot left entering entities out.
    history: VecDeque<(u64, View, bool)>,
    acked: Option<u64>,
}

impl Reference {
    /// An acknowledgement of a tick with no view (never sent, or older than the history)
    /// changes nothing.
    fn acknowledge(&mut self, tick: u64) {
        if self.acked.is_some_and(|acked| acked >= tick)
            || !self.history.iter().any(|(t, _, _)| *t == tick)
        {
            return;
        }
        self.acked = Some(tick);
        while self.history.front().is_some_and(|(t, _, _)| *t < tick) {
            self.history.pop_front();
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn snapshot(
        &mut self,
        bodies: &[(EntityState, (f32, f32))],
        range: ViewRange,
        me: NetId,
        at: (f32, f32),
        tick: u64,
        seq: u32,
        budget: usize,
    ) -> Result<Vec<u8>, BuildError> {
        let outer = range.radius_m + range.hysteresis_m.max(0.0);
        let (outer2, radius2) = (outer * outer, range.radius_m * range.radius_m);
        let empty = View::new();
        let (baseline_tick, baseline, backlog) = match self
            .acked
            .and_then(|acked| self.history.iter().find(|(t, _, _)| *t == acked))
        {
            Some((t, view, backlog)) => (Some(*t), view, *backlog),
            None => (None, &empty, false),
        };
        // The client applies the snapshot to its baseline: an entity left out keeps the
        // baseline's state (or stays out of view), whatever newer snapshots carried.
        // Of the baseline's members, those the snapshot does not look at are held as the
        // baseline has them (unless gone from the world); entities enter only when the
        // view's circle is scanned.
        let gap = schedule::gap(tick, baseline_tick);
        let looked_at = |old: &EntityState| {
            old.id == me || schedule::due(tick, gap.unwrap_or(u64::MAX), old, at)
        };
        let scan = schedule::scans(tick, gap, backlog, me);
        let mut candidates = Vec::new();
        for (state, (x, y)) in bodies {
            let known = baseline.get(state.id);
            if let Some(old) = known.filter(|old| !looked_at(old)) {
                candidates.push(Candidate {
                    state: *old,
                    priority: 0.0,
                });
                continue;
            }
            let d2 = (x - at.0).powi(2) + (y - at.1).powi(2);
            if d2 > outer2 {
                continue;
            }
            let is_me = state.id == me;
            if !is_me && (d2 > radius2 || !scan) && known.is_none() {
                continue;
            }
            candidates.push(Candidate {
                state: *state,
                priority: priority(is_me, d2, known, state),
            });
        }
        let header = SnapshotHeader {
            tick,
            baseline_tick,
            last_input_seq: seq,
        };
        let (snapshot, view) = build_snapshot(header, baseline, &candidates, budget)?;
        let new = |id: NetId| baseline.get(id).is_none();
        let entering = candidates.iter().filter(|c| new(c.state.id)).count();
        let entered = snapshot.entered.iter().filter(|e| new(e.id)).count();
        let bytes = encode_datagram(&ServerDatagram::Snapshot(snapshot)).expect("fits");
        self.history.push_back((tick, view, entered < entering));
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        Ok(bytes)
    }
}

const SIDE_M: f32 = 100.0;

/// The view most tests use: 20 m, with 4 m of hysteresis.
const WIDE: ViewRange = ViewRange {
    radius_m: 20.0,
    hysteresis_m: 4.0,
};

fn body(rng: &mut Rng, index: u32, generation: u32) -> (EntityState, (f32, f32)) {
    let (x, y) = (rng.unit() * SIDE_M, rng.unit() * SIDE_M);
    (
        EntityState {
            id: NetId { index, generation },
            kind: if rng.below(10) == 0 {
                EntityKind::Player
            } else {
                EntityKind::Npc
            },
            radius_cm: 40,
            pos: QPos::from_metres(x, y),
            motion: Motion::Moving,
        },
        (x, y),
    )
}

/// How a crowd's bodies change from tick to tick, besides moving.
#[derive(Clone, Copy, PartialEq)]
enum Crowd {
    /// A few bodies every tick are replaced by a new generation or change radius.
    Reshaping,
    /// The same, and bodies leave the world and new ones join it (new ids, so that every
    /// body after them in id order moves up or down a rank).
    Churning,
    /// The same bodies with the same kinds and radii, but for one that changes its radius
    /// or kind every 20 ticks: frames keep their roster ([`Frame::follow`]) for stretches.
    Steady,
}

/// One tick of a crowd: most bodies step, some stop or turn, a few jump far past the
/// bounds and, when `reshape`, a few are replaced by a new generation or change radius.
fn step(rng: &mut Rng, bodies: &mut [(EntityState, (f32, f32))], reshape: bool) {
    for b in bodies.iter_mut() {
        match rng.below(200) {
            0 if reshape => *b = body(rng, b.0.id.index, b.0.id.generation + 1),
            1 if reshape => b.0.radius_cm = 30 + rng.below(30) as u16,
            0 | 1 => {}
            2 => b.0.motion = Motion::Idle,
            3 => b.0.motion = Motion::Circling,
            // A jump of hundreds of metres (a five-byte delta), far past the bounds, and back.
            4 => {
                let jump = if b.1.0 > SIDE_M { -400.0 } else { 400.0 };
                b.1.0 += jump;
                b.0.pos = QPos::from_metres(b.1.0, b.1.1);
            }
            5..=9 => {}
            _ => {
                let speed = if rng.below(50) == 0 { 3.0 } else { 0.08 };
                b.1.0 += (rng.unit() - 0.5) * speed;
                b.1.1 += (rng.unit() - 0.5) * speed;
                b.0.pos = QPos::from_metres(b.1.0, b.1.1);
                b.0.motion = Motion::Moving;
            }
        }
    }
}

/// Runs `viewers` clients through `ticks` ticks of a crowd of `count`, each built by the
/// engine and by the reference; every datagram must match.
fn compare(seed: u64, count: u32, viewers: usize, ticks: u64, range: ViewRange) {
    compare_with_ids(seed, count, 3, viewers, ticks, range);
}

/// [`compare`] with ids `stride` apart (some slots never used).
fn compare_with_ids(
    seed: u64,
    count: u32,
    stride: u32,
    viewers: usize,
    ticks: u64,
    range: ViewRange,
) {
    compare_crowd(seed, count, stride, Crowd::Reshaping, viewers, ticks, range);
}

/// [`compare_with_ids`] for a crowd that changes as `crowd` says. Each frame follows the
/// one before, as the server's do.
fn compare_crowd(
    seed: u64,
    count: u32,
    stride: u32,
    crowd: Crowd,
    viewers: usize,
    ticks: u64,
    range: ViewRange,
) {
    let churn = crowd == Crowd::Churning;
    let mut last_frame: Option<Frame> = None;
    let mut rng = Rng(seed);
    let mut bodies: Vec<_> = (0..count)
        .map(|i| body(&mut rng, i * stride + 1, 0))
        .collect();
    let mut next_index = count * stride + 1;
    let mut engine: Vec<ClientView> = (0..viewers).map(|_| ClientView::new()).collect();
    let mut reference: Vec<Reference> = (0..viewers).map(|_| Reference::default()).collect();
    // Acknowledgements in flight: (arrival tick, client, acknowledged tick).
    let mut acks: Vec<(u64, usize, u64)> = Vec::new();
    let mut scratch = Scratch::default();
    let budgets = [12usize, 40, 120, 400, 800, 1200];
    let mut sent = 0usize;
    for tick in 1..=ticks {
        step(&mut rng, &mut bodies, crowd != Crowd::Steady);
        if crowd == Crowd::Steady && tick % 20 == 0 {
            let b = &mut bodies[rng.below(u64::from(count)) as usize].0;
            if rng.below(2) == 0 {
                b.radius_cm = 30 + rng.below(30) as u16;
            } else {
                b.kind = match b.kind {
                    EntityKind::Npc => EntityKind::Player,
                    EntityKind::Player => EntityKind::Npc,
                };
            }
        }
        if churn && rng.below(3) == 0 {
            // Joins anywhere in id order (an index freed before), or at the end.
            let index = if rng.below(2) == 0 {
                rng.below(u64::from(next_index)) as u32 | 1
            } else {
                next_index += stride;
                next_index
            };
            if !bodies.iter().any(|b| b.0.id.index == index) {
                bodies.push(body(&mut rng, index, 0));
            }
        }
        if churn && rng.below(3) == 0 && bodies.len() > viewers * 7 {
            let gone = rng.below(bodies.len() as u64) as usize;
            bodies.swap_remove(gone);
        }
        // The reference takes its candidates in id order.
        bodies.sort_by_key(|b| b.0.id);
        let mut frame = Frame::from_states(
            bodies.iter().map(|b| b.0).collect(),
            bodies.iter().map(|b| b.1).collect(),
            (0.0, 0.0),
            (SIDE_M, SIDE_M),
            range,
        );
        if let Some(last) = &last_frame {
            frame.follow(last);
        }
        acks.retain(|&(arrives, client, acked)| {
            if arrives > tick {
                return true;
            }
            engine[client].acknowledge(acked);
            reference[client].acknowledge(acked);
            false
        });
        for client in 0..viewers {
            let me = bodies[client * 7 % bodies.len()];
            // Sometimes the viewer looks from elsewhere (a character being replaced).
            let at = if rng.below(40) == 0 {
                (rng.unit() * SIDE_M, rng.unit() * SIDE_M)
            } else {
                me.1
            };
            let budget = budgets[(tick as usize + client) % budgets.len()];
            let seq = tick as u32 * 3;
            let got =
                engine[client].snapshot(&frame, &mut scratch, me.0.id, at, (tick, seq), budget);
            let want = reference[client].snapshot(&bodies, range, me.0.id, at, tick, seq, budget);
            assert_eq!(
                got, want,
                "seed {seed}, tick {tick}, client {client}, budget {budget}"
            );
            sent += want.map_or(0, |bytes| bytes.len());
            // Lost, late or prompt acknowledgements.
            match rng.below(10) {
                0 => {}
                1..=2 => acks.push((tick + 1 + rng.below(20), client, tick)),
                _ => acks.push((tick + 1, client, tick)),
            }
        }
        last_frame = Some(frame);
    }
    assert!(
        sent > 0,
        "nothing was sent: the comparison compared nothing"
    );
}

#[test]
fn a_moving_crowd_gets_the_reference_bytes() {
    let range = WIDE;
    for seed in 1..=4u64 {
        compare(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 400, 6, 120, range);
    }
}

#[test]
fn a_dense_crowd_over_small_budgets_gets_the_reference_bytes() {
    let range = ViewRange {
        radius_m: 30.0,
        hysteresis_m: 2.0,
    };
    compare(77, 2_000, 4, 80, range);
}

#[test]
fn no_hysteresis_gets_the_reference_bytes() {
    let range = ViewRange {
        radius_m: 10.0,
        hysteresis_m: 0.0,
    };
    compare(5, 600, 5, 100, range);
}

/// Bodies leaving and joining the world, so that ranks in id order shift between the
/// frames a client's views were made from.
#[test]
fn bodies_joining_and_leaving_get_the_reference_bytes() {
    let range = WIDE;
    for seed in 1..=3u64 {
        compare_crowd(seed * 31, 400, 3, Crowd::Churning, 6, 150, range);
    }
}

/// The same bodies tick after tick, so that frames keep their roster and views look their
/// members up by rank without checking who each one is, but for a body that changes its
/// radius or kind now and then (a replacement that small budgets may leave out for a
/// while).
#[test]
fn a_steady_crowd_gets_the_reference_bytes() {
    let range = WIDE;
    for seed in 1..=3u64 {
        compare_crowd(seed * 17, 400, 3, Crowd::Steady, 6, 200, range);
    }
}

/// Ids far apart (indices up to hundreds of millions), as a gateway's frame of several
/// zones' bodies may have them.
#[test]
fn sparse_ids_get_the_reference_bytes() {
    let range = WIDE;
    compare_with_ids(11, 300, 1_000_003, 5, 100, range);
}
