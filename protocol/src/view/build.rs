//! Building snapshots: the server half of the delta scheme ([`build_snapshot`]).

use thiserror::Error;

use super::View;
use crate::codec::{DATAGRAM_HEADER_BYTES, change_len, encoded_len, entity_len, net_id_len};
use crate::messages::{Change, EntityState, NetId, ServerDatagram, Snapshot};

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
/// The budget goes to entities that left first, then to entries and changes by priority;
/// what does not fit is left out and the returned view keeps the baseline's state for it,
/// so the next snapshot (built against that view) sends it again. Each of the snapshot's
/// lists is in id order, whatever the priorities, so that a client applies it in one merge
/// with its view. `current` must be sorted by id without repeats.
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
                    &mut used,
                    budget_bytes,
                    &mut sent[at],
                );
            }
        }

        // The snapshot's lists and the view the client holds after applying what was sent,
        // in id order.
        let mut entities = recycled;
        entities.clear();
        for (slot, sent) in slots.iter().zip(sent.iter().copied()) {
            if sent {
                list_slot(*slot, base, current, &mut snapshot);
            }
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

/// Marks a slot as sent when its items fit in what is left of the budget.
fn send_slot(
    slot: Slot,
    base: &[EntityState],
    current: &[Candidate],
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
}

/// Adds a sent slot's items to the snapshot's lists.
fn list_slot(slot: Slot, base: &[EntityState], current: &[Candidate], snapshot: &mut Snapshot) {
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
