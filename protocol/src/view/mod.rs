//! Delta snapshots. A [`View`] is what one client knows: the entities it sees, sorted by id.
//! The server builds each snapshot as a delta from the view the client acknowledged
//! ([`build_snapshot`]); the client rebuilds the new view from its copy of that baseline
//! ([`View::apply`]). Both sides compute the same view, entity for entity: positions travel
//! as whole centimetres and deltas as exact integer differences, so nothing drifts.

use thiserror::Error;

use crate::messages::{Change, EntityState, NetId, Snapshot};

mod build;
mod shown;

pub use build::{BuildError, Candidate, SnapshotBuilder, SnapshotHeader, build_snapshot, rank_key};
pub use shown::Shown;

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
                entity = moved(entity, change)?;
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

impl View {
    /// [`View::apply`] without allocating once warm: the view after `snapshot` is built in
    /// `out` (whatever it held is replaced; its memory is reused), with `scratch` as working
    /// memory. The result is exactly `apply`'s: the same view, or the same error for the
    /// same snapshot, in which case `out` is left empty.
    pub fn apply_into(
        &self,
        snapshot: &Snapshot,
        scratch: &mut ApplyScratch,
        out: &mut View,
    ) -> Result<(), ApplyError> {
        out.entities.clear();
        let result = self.merge_into(snapshot, scratch, &mut out.entities);
        if result.is_err() {
            out.entities.clear();
        }
        result
    }

    /// One pass over the baseline, the snapshot's lists in id order beside it: the runs of
    /// entities no list names are copied whole. An entered entity that is already in view is
    /// only reported after the pass, as `apply` reports it after every other error.
    fn merge_into(
        &self,
        snapshot: &Snapshot,
        scratch: &mut ApplyScratch,
        out: &mut Vec<EntityState>,
    ) -> Result<(), ApplyError> {
        let left = in_id_order(&snapshot.left, &mut scratch.left, |id| *id)?;
        let changed = in_id_order(&snapshot.changed, &mut scratch.changed, |c| c.id)?;
        let entered = in_id_order(&snapshot.entered, &mut scratch.entered, |e| e.id)?;

        let base = &self.entities;
        out.reserve(base.len() + entered.len());
        let (mut left_at, mut changed_at, mut entered_at) = (0, 0, 0);
        let mut entered_twice = None;
        let mut at = 0;
        loop {
            // The baseline's entities before the next id a list names stay as they are.
            let next = [
                left.get(left_at).copied(),
                changed.get(changed_at).map(|change| change.id),
                entered.get(entered_at).map(|new| new.id),
            ]
            .map(|id| id.map_or(u64::MAX, id_order))
            .into_iter()
            .min()
            .unwrap_or(u64::MAX);
            let run = base[at..]
                .iter()
                .position(|entity| id_order(entity.id) >= next)
                .unwrap_or(base.len() - at);
            out.extend_from_slice(&base[at..at + run]);
            at += run;
            let Some(entity) = base.get(at) else {
                break;
            };
            at += 1;
            let id = entity.id;
            if let Some(&unknown) = left.get(left_at).filter(|left| **left < id) {
                return Err(ApplyError::LeftUnknown(unknown));
            }
            if let Some(change) = changed.get(changed_at).filter(|c| c.id < id) {
                return Err(ApplyError::ChangedUnknown(change.id));
            }
            while let Some(new) = entered.get(entered_at).filter(|new| new.id < id) {
                out.push(*new);
                entered_at += 1;
            }
            let enters = entered.get(entered_at).filter(|new| new.id == id);
            entered_at += usize::from(enters.is_some());
            let change = changed.get(changed_at).filter(|c| c.id == id);
            if left.get(left_at) == Some(&id) {
                left_at += 1;
                if let Some(change) = change {
                    return Err(ApplyError::ChangedUnknown(change.id));
                }
                // Left and entered again in one snapshot: the new state replaces the old.
                out.extend(enters);
                continue;
            }
            if enters.is_some() {
                entered_twice = entered_twice.or(Some(id));
            }
            match change {
                Some(change) => {
                    changed_at += 1;
                    out.push(moved(*entity, change)?);
                }
                None => out.push(*entity),
            }
        }
        if let Some(&unknown) = left.get(left_at) {
            return Err(ApplyError::LeftUnknown(unknown));
        }
        if let Some(change) = changed.get(changed_at) {
            return Err(ApplyError::ChangedUnknown(change.id));
        }
        if let Some(id) = entered_twice {
            return Err(ApplyError::EnteredTwice(id));
        }
        out.extend_from_slice(&entered[entered_at..]);
        Ok(())
    }
}

fn sorted_unique<T>(mut items: Vec<T>, key: impl Fn(&T) -> NetId) -> Result<Vec<T>, ApplyError> {
    items.sort_by_key(&key);
    unique(&items, key)?;
    Ok(items)
}

/// Sorted items without repeats, or the first repeated id.
fn unique<T>(sorted: &[T], key: impl Fn(&T) -> NetId) -> Result<(), ApplyError> {
    match sorted
        .windows(2)
        .find(|pair| key(&pair[0]) == key(&pair[1]))
    {
        Some(pair) => Err(ApplyError::Duplicate(key(&pair[0]))),
        None => Ok(()),
    }
}

/// An id's place in id order as one integer: its index, then its generation.
fn id_order(id: NetId) -> u64 {
    (u64::from(id.index) << 32) | u64::from(id.generation)
}

/// An entity after its change: moved by the delta, with the new motion if any.
fn moved(mut entity: EntityState, change: &Change) -> Result<EntityState, ApplyError> {
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
    Ok(entity)
}

/// Working memory of [`View::apply_into`]: room for a snapshot's lists in id order, kept
/// between calls, so that applying a snapshot allocates nothing once warm.
#[derive(Clone, Debug, Default)]
pub struct ApplyScratch {
    left: Vec<NetId>,
    changed: Vec<Change>,
    entered: Vec<EntityState>,
}

/// The items in id order: as they are when already sorted without repeats, else sorted in
/// `spare`; the first repeated id is an error.
fn in_id_order<'a, T: Copy>(
    items: &'a [T],
    spare: &'a mut Vec<T>,
    key: impl Fn(&T) -> NetId,
) -> Result<&'a [T], ApplyError> {
    if items.is_sorted_by(|a, b| key(a) < key(b)) {
        return Ok(items);
    }
    spare.clear();
    spare.extend_from_slice(items);
    // Ids are unique once the check below passes, so an unstable sort gives the same order.
    spare.sort_unstable_by_key(|item| id_order(key(item)));
    unique(spare, key)?;
    Ok(spare)
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
///
/// Only views that can still be baselines are kept: once a snapshot built against tick
/// `B` has arrived, the server holds the client's acknowledgement of `B`, and as its
/// acknowledgements only move forward it never builds against an older view again; those
/// are dropped. A client acknowledging every 100 ms over a short round trip then holds a
/// handful of views instead of [`ViewHistory::KEPT`], so each new one is made in memory
/// that was in use moments before.
///
/// Views are built with [`View::apply_into`] in the memory of views dropped from the
/// history, so that receiving allocates nothing once warm.
#[derive(Clone, Debug, Default)]
pub struct ViewHistory {
    views: std::collections::VecDeque<(u64, View)>,
    /// Views dropped, their memory for the next ones (at most [`SPARES`]).
    spares: Vec<View>,
    scratch: ApplyScratch,
}

/// Dropped views whose memory is kept for the views to come: a snapshot whose baseline
/// moved on by several ticks drops several at once, and the next few snapshots take them.
const SPARES: usize = 4;

impl ViewHistory {
    /// Views kept at most as possible baselines (the server keeps fewer), when snapshots
    /// do not say that older ones are done with (against no baseline, they cannot).
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
        let mut view = self.spares.pop().unwrap_or_default();
        if let Err(err) = baseline.apply_into(snapshot, &mut self.scratch, &mut view) {
            self.spares.push(view);
            return Err(err);
        }
        self.views.push_back((snapshot.tick, view));
        // Views older than this snapshot's baseline are never baselines again.
        let done_before = snapshot.baseline_tick.unwrap_or(0);
        while self.views.len() > ViewHistory::KEPT
            || self
                .views
                .front()
                .is_some_and(|(tick, _)| *tick < done_before)
        {
            let Some((_, dropped)) = self.views.pop_front() else {
                break;
            };
            if self.spares.len() < SPARES {
                self.spares.push(dropped);
            }
        }
        Ok(Received::Applied)
    }

    /// The newest view and its tick (the tick to acknowledge).
    pub fn newest(&self) -> Option<(u64, &View)> {
        self.views.back().map(|(tick, view)| (*tick, view))
    }

    /// How many views are held (each a possible baseline).
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Whether no view is held yet.
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
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
