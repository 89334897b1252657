//! Delta snapshots. A [`View`] is what one client knows: the entities it sees, sorted by id.
//! The server builds each snapshot as a delta from the view the client acknowledged
//! ([`build_snapshot`]); the client rebuilds the new view from its copy of that baseline
//! ([`View::apply`]). Both sides compute the same view, entity for entity: positions travel
//! as whole centimetres and deltas as exact integer differences, so nothing drifts.

use thiserror::Error;

use crate::codec::{DATAGRAM_HEADER_BYTES, change_len, encoded_len, entity_len, net_id_len};
use crate::messages::{Change, EntityState, NetId, ServerDatagram, Snapshot};

/// The entities one client sees, sorted by id, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    entities: Vec<EntityState>,
}

/// Why a snapshot cannot be applied to a view (the client's baseline is not the one the
/// server used, or the snapshot is corrupt).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ApplyError {
    /// A snapshot says an entity left that the baseline does not hold.
    #[error("entity {0:?} left but was not in view")]
    LeftUnknown(NetId),
    /// A snapshot changes an entity the baseline does not hold.
    #[error("entity {0:?} changed but was not in view")]
    ChangedUnknown(NetId),
    /// A snapshot brings in an entity already in view.
    #[error("entity {0:?} entered but was already in view")]
    EnteredTwice(NetId),
    /// The same entity appears twice in one list.
    #[error("entity {0:?} listed twice")]
    Duplicate(NetId),
    /// A position delta overflows the coordinate range.
    #[error("position delta of entity {0:?} overflows")]
    Overflow(NetId),
}

/// Why a snapshot could not be built.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BuildError {
    /// The current entities were not sorted by id, or held an id twice.
    #[error("current entities must be sorted by id without repeats (at {0:?})")]
    Unsorted(NetId),
    /// Not even an empty snapshot fits the byte budget.
    #[error("a budget of {budget} bytes cannot hold an empty snapshot of {needed} bytes")]
    BudgetTooSmall {
        /// The budget given.
        budget: usize,
        /// Bytes an empty snapshot takes.
        needed: usize,
    },
}

impl View {
    /// No entities.
    pub fn new() -> View {
        View::default()
    }

    /// A view holding these entities (any order; the last of repeated ids wins).
    pub fn from_entities(mut entities: Vec<EntityState>) -> View {
        entities.reverse();
        entities.sort_by_key(|entity| entity.id);
        entities.dedup_by_key(|entity| entity.id);
        View { entities }
    }

    /// The entities, sorted by id.
    pub fn entities(&self) -> &[EntityState] {
        &self.entities
    }

    /// One entity, if in view.
    pub fn get(&self, id: NetId) -> Option<&EntityState> {
        self.entities
            .binary_search_by_key(&id, |entity| entity.id)
            .ok()
            .map(|at| &self.entities[at])
    }

    /// The entities, to reuse their memory.
    pub fn into_entities(self) -> Vec<EntityState> {
        self.entities
    }

    /// Number of entities in view.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether nothing is in view.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The view after `snapshot`, with `self` as its baseline: entities that left are
    /// removed, changed ones move by their delta (and take the new motion), entered ones are
    /// added. Everything else is unchanged. The client must apply a snapshot to the view of
    /// the snapshot's `baseline_tick` (an empty view when it is `None`).
    pub fn apply(&self, snapshot: &Snapshot) -> Result<View, ApplyError> {
        let left = sorted_unique(snapshot.left.clone(), |id| *id)?;
        let changed = sorted_unique(snapshot.changed.clone(), |change| change.id)?;
        let entered = sorted_unique(snapshot.entered.clone(), |entity| entity.id)?;

        let mut kept = Vec::with_capacity(self.entities.len() + entered.len());
        let mut left_at = 0;
        let mut changed_at = 0;
        for entity in &self.entities {
            if let Some(&id) = left.get(left_at).filter(|id| **id < entity.id) {
                return Err(ApplyError::LeftUnknown(id));
            }
            if let Some(change) = changed.get(changed_at).filter(|c| c.id < entity.id) {
                return Err(ApplyError::ChangedUnknown(change.id));
            }
            let leaves = left.get(left_at) == Some(&entity.id);
            let change = changed.get(changed_at).filter(|c| c.id == entity.id);
            if leaves {
                left_at += 1;
                if let Some(change) = change {
                    return Err(ApplyError::ChangedUnknown(change.id));
                }
                continue;
            }
            let mut entity = *entity;
            if let Some(change) = change {
                changed_at += 1;
                entity.pos.x_cm = entity
                    .pos
                    .x_cm
                    .checked_add(change.dx_cm)
                    .ok_or(ApplyError::Overflow(entity.id))?;
                entity.pos.y_cm = entity
                    .pos
                    .y_cm
                    .checked_add(change.dy_cm)
                    .ok_or(ApplyError::Overflow(entity.id))?;
                if let Some(motion) = change.motion {
                    entity.motion = motion;
                }
            }
            kept.push(entity);
        }
        if let Some(&id) = left.get(left_at) {
            return Err(ApplyError::LeftUnknown(id));
        }
        if let Some(change) = changed.get(changed_at) {
            return Err(ApplyError::ChangedUnknown(change.id));
        }

        // Merge the entered entities into the (sorted) kept ones.
        let mut entities = Vec::with_capacity(kept.len() + entered.len());
        let mut kept = kept.into_iter().peekable();
        for entity in entered {
            while let Some(old) = kept.next_if(|old| old.id < entity.id) {
                entities.push(old);
            }
            if kept.peek().is_some_and(|old| old.id == entity.id) {
                return Err(ApplyError::EnteredTwice(entity.id));
            }
            entities.push(entity);
        }
        entities.extend(kept);
        Ok(View { entities })
    }
}

fn sorted_unique<T>(mut items: Vec<T>, key: impl Fn(&T) -> NetId) -> Result<Vec<T>, ApplyError> {
    items.sort_by_key(&key);
    if let Some(pair) = items.windows(2).find(|pair| key(&pair[0]) == key(&pair[1])) {
        return Err(ApplyError::Duplicate(key(&pair[0])));
    }
    Ok(items)
}

/// What became of a snapshot handed to [`ViewHistory::receive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// Applied: its view is now the newest.
    Applied,
    /// Not newer than the newest view (datagrams can arrive out of order): dropped.
    Stale,
    /// Its baseline is no longer held: dropped (a later snapshot will apply).
    MissingBaseline,
}

/// A client's views of its most recent snapshots, by tick: the client half of the delta
/// scheme. Each received snapshot is applied to the view of its baseline tick (or to the
/// empty view), and the newest tick is what the client acknowledges.
#[derive(Clone, Debug, Default)]
pub struct ViewHistory {
    views: std::collections::VecDeque<(u64, View)>,
}

impl ViewHistory {
    /// Views kept as possible baselines (the server keeps fewer).
    pub const KEPT: usize = 32;

    /// No views yet.
    pub fn new() -> ViewHistory {
        ViewHistory::default()
    }

    /// Applies a snapshot to its baseline. An error means the snapshot contradicts its
    /// baseline (a broken server or a corrupt datagram); the history is unchanged then.
    pub fn receive(&mut self, snapshot: &Snapshot) -> Result<Received, ApplyError> {
        if self
            .views
            .back()
            .is_some_and(|(tick, _)| *tick >= snapshot.tick)
        {
            return Ok(Received::Stale);
        }
        let empty = View::new();
        let baseline = match snapshot.baseline_tick {
            None => Some(&empty),
            Some(tick) => self.views.iter().find(|(t, _)| *t == tick).map(|(_, v)| v),
        };
        let Some(baseline) = baseline else {
            return Ok(Received::MissingBaseline);
        };
        let view = baseline.apply(snapshot)?;
        self.views.push_back((snapshot.tick, view));
        if self.views.len() > ViewHistory::KEPT {
            self.views.pop_front();
        }
        Ok(Received::Applied)
    }

    /// The newest view and its tick (the tick to acknowledge).
    pub fn newest(&self) -> Option<(u64, &View)> {
        self.views.back().map(|(tick, view)| (*tick, view))
    }
}

/// One entity the server wants the client to see, with its priority: when the byte budget
/// cannot hold every change, lower priorities go first (the server uses the distance from
/// the client's character).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The entity's state now.
    pub state: EntityState,
    /// Lower goes first.
    pub priority: f32,
}

/// What goes into one snapshot besides the entities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// The tick the snapshot shows.
    pub tick: u64,
    /// The tick of the baseline view, `None` for an empty baseline.
    pub baseline_tick: Option<u64>,
    /// The client's last input the world applied.
    pub last_input_seq: u32,
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    /// In the baseline and current, unchanged: stays.
    Keep(u32),
    /// In the baseline only.
    Leave(u32),
    /// In current only.
    Enter(u32),
    /// In both, with another position or motion.
    Change(u32, u32),
    /// In both with another kind or radius: leaves and enters in one snapshot.
    Replace(u32, u32),
}

/// Working memory of [`build_snapshot`], kept between calls so that building a snapshot
/// allocates nothing but the snapshot's own lists once warm.
#[derive(Debug, Default)]
pub struct SnapshotBuilder {
    slots: Vec<Slot>,
    /// Slots that send something, as [`rank_key`]s.
    order: Vec<u64>,
    sent: Vec<bool>,
    /// The lists of a snapshot handed back with [`SnapshotBuilder::recycle`], for the next.
    spare: Snapshot,
}

/// A slot's place in the send order as one integer: the rank (lower first, ordered like
/// `f32::total_cmp`) in the high half, the slot's position in the low half (ties go in
/// id order). Public for servers that build the same snapshots their own way.
pub fn rank_key(rank: f32, slot: u32) -> u64 {
    let bits = rank.to_bits();
    let ordered = if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    (u64::from(ordered) << 32) | u64::from(slot)
}

/// The slot a [`rank_key`] names.
fn slot_of(key: u64) -> usize {
    key as u32 as usize
}

/// Builds the snapshot that takes a client from `baseline` toward `current` within
/// `budget_bytes` (the whole datagram, version byte included), and the view the client will
/// hold after applying it.
///
/// Entities that left come first, then entries and changes by priority; what does not fit
/// is left out and the returned view keeps the baseline's state for it, so the next
/// snapshot (built against that view) sends it again. `current` must be sorted by id
/// without repeats.
pub fn build_snapshot(
    header: SnapshotHeader,
    baseline: &View,
    current: &[Candidate],
    budget_bytes: usize,
) -> Result<(Snapshot, View), BuildError> {
    SnapshotBuilder::default().build(header, baseline, current, budget_bytes, Vec::new())
}

impl SnapshotBuilder {
    /// Takes back a snapshot this builder built (once it is encoded), so that the next
    /// build reuses its lists' memory instead of allocating.
    pub fn recycle(&mut self, mut snapshot: Snapshot) {
        snapshot.entered.clear();
        snapshot.changed.clear();
        snapshot.left.clear();
        self.spare = snapshot;
    }

    /// [`build_snapshot`] with this builder's working memory; the returned view is built in
    /// `recycled` (cleared first), for instance the entities of a view no longer needed.
    pub fn build(
        &mut self,
        header: SnapshotHeader,
        baseline: &View,
        current: &[Candidate],
        budget_bytes: usize,
        recycled: Vec<EntityState>,
    ) -> Result<(Snapshot, View), BuildError> {
        if let Some(pair) = current
            .windows(2)
            .find(|pair| pair[0].state.id >= pair[1].state.id)
        {
            return Err(BuildError::Unsorted(pair[1].state.id));
        }
        let base = &baseline.entities;

        // Merge baseline and current by id into slots; every slot that sends something
        // also goes into `order` with its rank (see `rank_key`).
        let slots = &mut self.slots;
        let order = &mut self.order;
        slots.clear();
        order.clear();
        let mut leaves = 0;
        let (mut b, mut c) = (0, 0);
        while b < base.len() || c < current.len() {
            let order_by_id = match (base.get(b), current.get(c)) {
                (Some(old), Some(new)) => old.id.cmp(&new.state.id),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, _) => std::cmp::Ordering::Greater,
            };
            let at = slots.len() as u32;
            match order_by_id {
                std::cmp::Ordering::Less => {
                    slots.push(Slot::Leave(b as u32));
                    order.push(rank_key(f32::NEG_INFINITY, at));
                    leaves += 1;
                    b += 1;
                }
                std::cmp::Ordering::Greater => {
                    slots.push(Slot::Enter(c as u32));
                    order.push(rank_key(current[c].priority, at));
                    c += 1;
                }
                std::cmp::Ordering::Equal => {
                    let (old, new) = (&base[b], &current[c].state);
                    let (bi, ci) = (b as u32, c as u32);
                    if old.kind != new.kind || old.radius_cm != new.radius_cm {
                        slots.push(Slot::Replace(bi, ci));
                        order.push(rank_key(current[c].priority, at));
                    } else if old == new {
                        slots.push(Slot::Keep(bi));
                    } else {
                        slots.push(Slot::Change(bi, ci));
                        order.push(rank_key(current[c].priority, at));
                    }
                    b += 1;
                    c += 1;
                }
            }
        }

        let mut snapshot = std::mem::take(&mut self.spare);
        snapshot.tick = header.tick;
        snapshot.baseline_tick = header.baseline_tick;
        snapshot.last_input_seq = header.last_input_seq;
        // Each list's length prefix grows from one byte to at most three (counts below 2^16).
        const LENGTH_SLACK: usize = 3 * 2;
        let empty =
            DATAGRAM_HEADER_BYTES + encoded_len(&ServerDatagram::Snapshot(snapshot.clone()));
        let mut used = empty + LENGTH_SLACK;
        if used > budget_bytes {
            return Err(BuildError::BudgetTooSmall {
                budget: budget_bytes,
                needed: used,
            });
        }

        // Visit the slots that send something, leaves first, then by priority.
        // A leave costs at least two bytes (an id) and anything else at least five (an id, two
        // deltas, a motion flag), so at most `leaves + room / 5` items fit: only that many
        // best-ranked slots need ordering at first. Should some of them not fit and room
        // remain, the rest is ordered too, so the visiting order is always the full ranking.
        const MIN_LEAVE_BYTES: usize = 2;
        const MIN_OTHER_BYTES: usize = 5;
        let fit = (leaves + (budget_bytes - used) / MIN_OTHER_BYTES).min(order.len());
        if fit < order.len() {
            order.select_nth_unstable(fit);
        }
        let (head, tail) = order.split_at_mut(fit);
        let sent = &mut self.sent;
        sent.clear();
        sent.resize(slots.len(), false);
        for (round, is_tail) in [(head, false), (tail, true)] {
            let room = budget_bytes - used;
            if room < MIN_LEAVE_BYTES {
                break;
            }
            // The tail ranks after the whole head. Room only shrinks, so of the tail only
            // what fits the room left now can ever be sent: just that part is ordered.
            let round = if is_tail {
                let fitting = partition(round, |&key| {
                    slot_cost(slots[slot_of(key)], base, current) <= room
                });
                &mut round[..fitting]
            } else {
                round
            };
            round.sort_unstable();
            for &mut key in round {
                if budget_bytes - used < MIN_LEAVE_BYTES {
                    break;
                }
                let at = slot_of(key);
                send_slot(
                    slots[at],
                    base,
                    current,
                    &mut snapshot,
                    &mut used,
                    budget_bytes,
                    &mut sent[at],
                );
            }
        }

        // The view the client holds after applying what was sent, in id order.
        let mut entities = recycled;
        entities.clear();
        for (slot, sent) in slots.iter().zip(sent.iter().copied()) {
            let state = match (*slot, sent) {
                (Slot::Keep(b), _) => Some(base[b as usize]),
                (Slot::Leave(_), true) => None,
                (Slot::Leave(b), false) => Some(base[b as usize]),
                (Slot::Enter(c), true) => Some(current[c as usize].state),
                (Slot::Enter(_), false) => None,
                (Slot::Change(_, c) | Slot::Replace(_, c), true) => Some(current[c as usize].state),
                (Slot::Change(b, _) | Slot::Replace(b, _), false) => Some(base[b as usize]),
            };
            entities.extend(state);
        }
        Ok((snapshot, View { entities }))
    }
}

/// Moves the items for which `keep` holds to the front; returns how many there are.
fn partition<T>(items: &mut [T], keep: impl Fn(&T) -> bool) -> usize {
    let mut kept = 0;
    for at in 0..items.len() {
        if keep(&items[at]) {
            items.swap(kept, at);
            kept += 1;
        }
    }
    kept
}

/// The bytes a slot's items take in a snapshot.
fn slot_cost(slot: Slot, base: &[EntityState], current: &[Candidate]) -> usize {
    match slot {
        Slot::Keep(_) => 0,
        Slot::Leave(b) => net_id_len(&base[b as usize].id),
        Slot::Enter(c) => entity_len(&current[c as usize].state),
        Slot::Change(b, c) => change_len(&Change::between(
            &base[b as usize],
            &current[c as usize].state,
        )),
        Slot::Replace(b, c) => {
            net_id_len(&base[b as usize].id) + entity_len(&current[c as usize].state)
        }
    }
}

/// Adds a slot's items to the snapshot when they fit in what is left of the budget.
fn send_slot(
    slot: Slot,
    base: &[EntityState],
    current: &[Candidate],
    snapshot: &mut Snapshot,
    used: &mut usize,
    budget_bytes: usize,
    sent: &mut bool,
) {
    let cost = slot_cost(slot, base, current);
    if *used + cost > budget_bytes {
        return;
    }
    *used += cost;
    *sent = true;
    match slot {
        Slot::Keep(_) => {}
        Slot::Leave(b) => snapshot.left.push(base[b as usize].id),
        Slot::Enter(c) => snapshot.entered.push(current[c as usize].state),
        Slot::Change(b, c) => snapshot.changed.push(Change::between(
            &base[b as usize],
            &current[c as usize].state,
        )),
        Slot::Replace(b, c) => {
            snapshot.left.push(base[b as usize].id);
            snapshot.entered.push(current[c as usize].state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{EntityKind, Motion, QPos};

    fn entity(index: u32, x_cm: i32) -> EntityState {
        EntityState {
            id: NetId {
                index,
                generation: 0,
            },
            kind: EntityKind::Npc,
            radius_cm: 40,
            pos: QPos { x_cm, y_cm: 0 },
            motion: Motion::Idle,
        }
    }

    fn snapshot(tick: u64, baseline_tick: Option<u64>) -> Snapshot {
        Snapshot {
            tick,
            baseline_tick,
            ..Snapshot::default()
        }
    }

    #[test]
    fn history_applies_in_order_and_drops_what_cannot_apply() {
        let mut history = ViewHistory::new();
        let mut first = snapshot(10, None);
        first.entered.push(entity(1, 0));
        assert_eq!(history.receive(&first), Ok(Received::Applied));
        let mut second = snapshot(11, Some(10));
        second.changed.push(Change {
            id: entity(1, 0).id,
            dx_cm: 5,
            dy_cm: 0,
            motion: None,
        });
        assert_eq!(history.receive(&second), Ok(Received::Applied));
        assert_eq!(
            history.newest().map(|(t, v)| (t, v.entities()[0].pos.x_cm)),
            Some((11, 5))
        );
        // Out of order, and against a baseline never received.
        assert_eq!(
            history.receive(&snapshot(11, Some(10))),
            Ok(Received::Stale)
        );
        assert_eq!(
            history.receive(&snapshot(13, Some(12))),
            Ok(Received::MissingBaseline)
        );
        // A delta that contradicts its baseline is an error and changes nothing.
        let mut bad = snapshot(14, Some(11));
        bad.left.push(entity(2, 0).id);
        assert_eq!(
            history.receive(&bad),
            Err(ApplyError::LeftUnknown(entity(2, 0).id))
        );
        assert_eq!(history.newest().map(|(t, _)| t), Some(11));
    }
}
