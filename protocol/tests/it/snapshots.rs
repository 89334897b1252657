//! Delta snapshots: a server and a client over a network that loses, delays and reorders
//! snapshots and acknowledgements; how `build_snapshot` spends a byte budget; and the
//! inputs `View::apply` and `build_snapshot` refuse.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use protocol::codec::{decode_datagram, encode_datagram, encoded_len};
use protocol::{
    ApplyError, BuildError, Candidate, Change, EntityKind, EntityState, MAX_DATAGRAM_BYTES, Motion,
    NetId, QPos, ServerDatagram, Snapshot, SnapshotHeader, View, build_snapshot,
};

use crate::strategies::{kind, motion};

mod budgets;

/// Entity slots of the simulated world: few, so that entities keep leaving and coming back
/// (with a new generation, or the same one with another radius).
const POOL: u32 = 12;
/// Ticks without changes at the end of a simulation, every snapshot delivered and
/// acknowledged: enough for a small budget to catch up with every pending slot (at most
/// two per pool slot, an old generation leaving and a new one entering), one per tick.
/// A budget of 36 bytes holds a snapshot's header (15 bytes with the slack for list
/// lengths) and any one entity (at most 17 bytes: an id leaving and a state entering).
const QUIET_TICKS: usize = 2 * POOL as usize + 6;
/// Bytes `build_snapshot` may keep unused for list length prefixes that grow from one byte
/// to three (three lists).
const LENGTH_SLACK: usize = 6;

/// One change to the simulated world.
#[derive(Clone, Debug)]
enum Op {
    /// Puts an entity in the slot, replacing any there.
    Spawn(EntityState),
    Despawn(u32),
    Move {
        index: u32,
        dx_cm: i32,
        dy_cm: i32,
    },
    SetMotion(u32, Motion),
    /// Kind and radius never change on the wire: the snapshot replaces the entity.
    SetRadius(u32, u16),
}

fn op() -> impl Strategy<Value = Op> {
    let index = 0..POOL;
    prop_oneof![
        2 => (index.clone(), 0..3u32, kind(), 20..80u16, -5_000..5_000i32, -5_000..5_000i32, motion())
            .prop_map(|(index, generation, kind, radius_cm, x_cm, y_cm, motion)| {
                Op::Spawn(EntityState {
                    id: NetId { index, generation },
                    kind,
                    radius_cm,
                    pos: QPos { x_cm, y_cm },
                    motion,
                })
            }),
        1 => index.clone().prop_map(Op::Despawn),
        4 => (index.clone(), -300..300i32, -300..300i32)
            .prop_map(|(index, dx_cm, dy_cm)| Op::Move { index, dx_cm, dy_cm }),
        2 => (index.clone(), motion()).prop_map(|(index, motion)| Op::SetMotion(index, motion)),
        1 => (index, 20..80u16).prop_map(|(index, radius)| Op::SetRadius(index, radius)),
    ]
}

/// What happens to one tick's snapshot on the way to the client.
#[derive(Clone, Copy, Debug)]
enum Delivery {
    Lost,
    /// Arrives this many ticks after it was sent.
    After(u64),
}

/// One tick: the world's changes, the snapshot's fate, and whether the client's
/// acknowledgement reaches the server.
#[derive(Clone, Debug)]
struct Step {
    ops: Vec<Op>,
    delivery: Delivery,
    ack_arrives: bool,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let delivery = prop_oneof![
        1 => Just(Delivery::Lost),
        4 => Just(Delivery::After(0)),
        1 => Just(Delivery::After(1)),
        1 => Just(Delivery::After(3)),
    ];
    let step = (vec(op(), 0..5), delivery, proptest::bool::weighted(0.7)).prop_map(
        |(ops, delivery, ack_arrives)| Step {
            ops,
            delivery,
            ack_arrives,
        },
    );
    vec(step, 1..48)
}

/// The server's world: at most one entity per slot.
#[derive(Default)]
struct World {
    entities: BTreeMap<u32, EntityState>,
}

impl World {
    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Spawn(state) => {
                self.entities.insert(state.id.index, state);
            }
            Op::Despawn(index) => {
                self.entities.remove(&index);
            }
            Op::Move {
                index,
                dx_cm,
                dy_cm,
            } => {
                if let Some(entity) = self.entities.get_mut(&index) {
                    entity.pos.x_cm += dx_cm;
                    entity.pos.y_cm += dy_cm;
                }
            }
            Op::SetMotion(index, motion) => {
                if let Some(entity) = self.entities.get_mut(&index) {
                    entity.motion = motion;
                }
            }
            Op::SetRadius(index, radius_cm) => {
                if let Some(entity) = self.entities.get_mut(&index) {
                    entity.radius_cm = radius_cm;
                }
            }
        }
    }

    /// Every entity, sorted by id (one per slot, so slot order is id order), with its
    /// distance from the client's character at the origin as priority: far ones wait.
    fn candidates(&self) -> Vec<Candidate> {
        self.entities
            .values()
            .map(|&state| Candidate {
                state,
                priority: (f64::from(state.pos.x_cm).hypot(f64::from(state.pos.y_cm)) / 100.0)
                    as f32,
            })
            .collect()
    }

    fn view(&self) -> View {
        View::from_entities(self.entities.values().copied().collect())
    }
}

fn fail(err: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(err.to_string())
}

/// A client as the crate documentation describes one: it keeps the view of every
/// snapshot it applied by tick, drops snapshots not newer than the newest it applied, and
/// applies each to its baseline's view.
#[derive(Default)]
struct Client {
    views: BTreeMap<u64, View>,
    newest: Option<u64>,
}

impl Client {
    /// Receives one datagram. Returns the tick applied, `None` for a stale snapshot.
    fn receive(&mut self, bytes: &[u8]) -> Result<Option<(u64, &View)>, TestCaseError> {
        let ServerDatagram::Snapshot(snapshot) = decode_datagram(bytes).map_err(fail)?;
        if self.newest.is_some_and(|newest| snapshot.tick <= newest) {
            return Ok(None);
        }
        let baseline = match snapshot.baseline_tick {
            None => View::new(),
            // The server only deltas against a tick the client acknowledged, so the client
            // holds its view (it never forgets any here).
            Some(tick) => self
                .views
                .get(&tick)
                .cloned()
                .ok_or_else(|| fail(format!("baseline {tick} was never applied")))?,
        };
        let view = baseline.apply(&snapshot).map_err(fail)?;
        self.newest = Some(snapshot.tick);
        let view = self.views.entry(snapshot.tick).or_insert(view);
        Ok(Some((snapshot.tick, view)))
    }
}

/// Runs the world through `steps`, then `QUIET_TICKS` without changes, the server sending
/// a snapshot of at most `budget` bytes every tick. Checks that client and server agree
/// on every view, that every snapshot keeps its budget and spends it as documented, and
/// that the client ends with the world's state. With `everything_fits`, also that every
/// snapshot takes the client exactly to the world's state of its tick, which is also what
/// a full snapshot (against the empty view) gives.
fn simulate(steps: &[Step], budget: usize, everything_fits: bool) -> Result<(), TestCaseError> {
    let quiet = Step {
        ops: Vec::new(),
        delivery: Delivery::After(0),
        ack_arrives: true,
    };
    let mut world = World::default();
    let mut truth: BTreeMap<u64, View> = BTreeMap::new();
    let mut sent: BTreeMap<u64, View> = BTreeMap::new();
    let mut acked: Option<u64> = None;
    let mut client = Client::default();
    let mut in_flight: Vec<(u64, Vec<u8>)> = Vec::new();

    let ticks = (steps.len() + QUIET_TICKS) as u64;
    for tick in 0..ticks {
        let step = steps.get(tick as usize).unwrap_or(&quiet);
        for op in &step.ops {
            world.apply(op);
        }
        let candidates = world.candidates();
        let now = world.view();
        truth.insert(tick, now.clone());

        // The server deltas against the newest acknowledged view.
        let baseline = match acked {
            None => View::new(),
            Some(tick) => sent
                .get(&tick)
                .cloned()
                .ok_or_else(|| fail("acknowledged an unsent tick"))?,
        };
        let header = SnapshotHeader {
            tick,
            baseline_tick: acked,
            last_input_seq: tick as u32,
        };
        let (snapshot, view) =
            build_snapshot(header, &baseline, &candidates, budget).map_err(fail)?;
        let bytes = encode_datagram(&ServerDatagram::Snapshot(snapshot.clone())).map_err(fail)?;
        prop_assert!(
            bytes.len() <= budget,
            "{} bytes for a budget of {budget}",
            bytes.len()
        );
        check_budget_spending(&baseline, &candidates, &snapshot, bytes.len(), budget)?;
        if baseline == now {
            // Nothing changed since the baseline: the delta is empty.
            prop_assert!(
                snapshot.entered.is_empty()
                    && snapshot.changed.is_empty()
                    && snapshot.left.is_empty()
            );
        }
        if everything_fits {
            prop_assert_eq!(&view, &now);
            let full_header = SnapshotHeader {
                baseline_tick: None,
                ..header
            };
            let (full, full_view) =
                build_snapshot(full_header, &View::new(), &candidates, budget).map_err(fail)?;
            prop_assert!(full.changed.is_empty() && full.left.is_empty());
            prop_assert_eq!(full.entered.len(), now.len());
            prop_assert_eq!(&View::new().apply(&full).map_err(fail)?, &now);
            prop_assert_eq!(&full_view, &now);
        }
        sent.insert(tick, view);

        if let Delivery::After(delay) = step.delivery {
            in_flight.push((tick + delay, bytes));
        }
        // Delayed snapshots arrive after newer ones that were not: the client must drop
        // them as stale.
        let (arriving, later): (Vec<_>, Vec<_>) =
            in_flight.into_iter().partition(|(at, _)| *at == tick);
        in_flight = later;
        for (_, bytes) in arriving {
            if let Some((applied_tick, view)) = client.receive(&bytes)? {
                let server_view = sent
                    .get(&applied_tick)
                    .ok_or_else(|| fail("received an unsent tick"))?;
                prop_assert_eq!(view, server_view, "client and server disagree");
                if everything_fits {
                    prop_assert_eq!(Some(view), truth.get(&applied_tick));
                }
            }
        }
        if step.ack_arrives
            && let Some(newest) = client.newest
        {
            acked = Some(acked.map_or(newest, |old| old.max(newest)));
        }
    }

    // After the quiet ticks the client sees the world as it is.
    prop_assert_eq!(client.newest, Some(ticks - 1));
    prop_assert_eq!(client.views.get(&(ticks - 1)), Some(&world.view()));
    Ok(())
}

/// What the test expects of one entity in a snapshot (the test's own classification,
/// independent of `build_snapshot`'s).
struct Slot {
    id: NetId,
    /// Leaves rank before everything, the others by priority.
    rank: f32,
    /// Bytes it takes in the snapshot.
    cost: usize,
    sent: bool,
    leave: bool,
}

/// How a snapshot spent its budget, given the baseline and current entities:
/// - unchanged entities are not in it, and each other one either is, completely and
///   exactly (an entity with another kind or radius both leaves and enters), or is not;
/// - an entity left out did not fit in what remained (allowing the bytes kept for list
///   lengths);
/// - an entity left out ranks before every entity sent after it in the order, or is
///   larger than it (a smaller later one may fill the gap);
/// - leaves come first: while one is left out, no entry or change is sent (every leave
///   here is smaller than any entry or change).
fn check_budget_spending(
    baseline: &View,
    current: &[Candidate],
    snapshot: &Snapshot,
    encoded_bytes: usize,
    budget: usize,
) -> Result<(), TestCaseError> {
    // Each list is in id order, whatever the priorities (clients apply it in one merge).
    prop_assert!(
        snapshot.left.is_sorted_by(|a, b| a < b),
        "left out of id order"
    );
    prop_assert!(
        snapshot.entered.is_sorted_by(|a, b| a.id < b.id),
        "entered out of id order"
    );
    prop_assert!(
        snapshot.changed.is_sorted_by(|a, b| a.id < b.id),
        "changed out of id order"
    );
    let by_id: BTreeMap<NetId, &Candidate> = current.iter().map(|c| (c.state.id, c)).collect();
    let ids: BTreeSet<NetId> = baseline
        .entities()
        .iter()
        .map(|entity| entity.id)
        .chain(by_id.keys().copied())
        .collect();
    let (mut left, mut entered, mut changed) = (0, 0, 0);
    let mut slots = Vec::new();
    for id in ids {
        let in_left = snapshot.left.contains(&id);
        let in_entered = snapshot.entered.iter().any(|entity| entity.id == id);
        let in_changed = snapshot.changed.iter().any(|change| change.id == id);
        match (baseline.get(id), by_id.get(&id)) {
            (Some(_), None) => {
                prop_assert!(!in_entered && !in_changed);
                left += usize::from(in_left);
                slots.push(Slot {
                    id,
                    rank: f32::NEG_INFINITY,
                    cost: encoded_len(&id),
                    sent: in_left,
                    leave: true,
                });
            }
            (None, Some(new)) => {
                prop_assert!(!in_left && !in_changed);
                if in_entered {
                    prop_assert!(snapshot.entered.contains(&new.state));
                }
                entered += usize::from(in_entered);
                slots.push(Slot {
                    id,
                    rank: new.priority,
                    cost: encoded_len(&new.state),
                    sent: in_entered,
                    leave: false,
                });
            }
            (Some(old), Some(new))
                if old.kind != new.state.kind || old.radius_cm != new.state.radius_cm =>
            {
                prop_assert!(!in_changed);
                prop_assert_eq!(in_left, in_entered, "a replacement is sent whole");
                if in_entered {
                    prop_assert!(snapshot.entered.contains(&new.state));
                }
                left += usize::from(in_left);
                entered += usize::from(in_entered);
                slots.push(Slot {
                    id,
                    rank: new.priority,
                    cost: encoded_len(&id) + encoded_len(&new.state),
                    sent: in_entered,
                    leave: false,
                });
            }
            (Some(old), Some(new)) if *old == new.state => {
                prop_assert!(
                    !in_left && !in_entered && !in_changed,
                    "unchanged {id:?} was sent"
                );
            }
            (Some(old), Some(new)) => {
                prop_assert!(!in_left && !in_entered);
                let change = Change {
                    id,
                    dx_cm: new.state.pos.x_cm - old.pos.x_cm,
                    dy_cm: new.state.pos.y_cm - old.pos.y_cm,
                    motion: (new.state.motion != old.motion).then_some(new.state.motion),
                };
                if in_changed {
                    prop_assert!(snapshot.changed.contains(&change));
                }
                changed += usize::from(in_changed);
                slots.push(Slot {
                    id,
                    rank: new.priority,
                    cost: encoded_len(&change),
                    sent: in_changed,
                    leave: false,
                });
            }
            (None, None) => return Err(fail("an id from nowhere")),
        }
    }
    // Together with the checks above: the lists hold exactly the sent slots.
    prop_assert_eq!(left, snapshot.left.len());
    prop_assert_eq!(entered, snapshot.entered.len());
    prop_assert_eq!(changed, snapshot.changed.len());

    let any_other_sent = slots.iter().any(|slot| slot.sent && !slot.leave);
    for out in slots.iter().filter(|slot| !slot.sent) {
        prop_assert!(
            encoded_bytes + LENGTH_SLACK + out.cost > budget,
            "{:?} ({} bytes) was left out of {encoded_bytes} bytes with a budget of {budget}",
            out.id,
            out.cost
        );
        for later in slots
            .iter()
            .filter(|slot| slot.sent && slot.rank > out.rank)
        {
            prop_assert!(
                later.cost < out.cost,
                "{:?} (rank {}, {} bytes) was sent but {:?} (rank {}, {} bytes) was not",
                later.id,
                later.rank,
                later.cost,
                out.id,
                out.rank,
                out.cost
            );
        }
        if out.leave {
            prop_assert!(!any_other_sent, "{:?} left out for another entity", out.id);
        }
    }
    Ok(())
}
