//! What a client shows: the newest news of each entity that the received snapshots carried.
//!
//! A snapshot is a delta against the view of the tick the client acknowledged last (its
//! baseline), so for an entity the snapshot leaves out, the view it leads to holds the
//! baseline's state, even when a newer snapshot the client has not acknowledged yet
//! carried a newer one. A client whose acknowledgements take longer than a tick to reach
//! the server gets snapshots against baselines a tick or more behind, and its views then
//! alternate between older and newer states of the entities left out: drawn as they are,
//! those step back and forth. The views are right for the deltas; [`Shown`] is what to
//! draw. It knows, for each entity of each view, the tick of the snapshot that carried its
//! state (following each view's chain of baselines), and shows of each entity the state
//! carried last, or that it left.

use std::collections::VecDeque;

use super::{View, ViewHistory};
use crate::messages::{EntityState, NetId, Snapshot};

/// The entities to draw, kept from snapshot to snapshot. Update it with every snapshot
/// the client applies ([`Shown::update`], after [`ViewHistory::receive`] answers
/// [`super::Received::Applied`]), in the order applied.
#[derive(Clone, Debug, Default)]
pub struct Shown {
    /// The entities drawn, sorted by id, each with the tick of the snapshot that carried
    /// its state.
    entities: Vec<(EntityState, u64)>,
    /// For the views of the last snapshots (by tick), the tick that carried each of their
    /// entities' states, sorted by id: a later view's entities that its snapshot left out
    /// are told as its baseline's.
    told: VecDeque<(u64, Vec<(NetId, u64)>)>,
    /// Entities a snapshot said left, and its tick, sorted by id, for as long as a view
    /// may still hold them as before.
    gone: Vec<(NetId, u64)>,
    /// Working memory, reused.
    next: Vec<(EntityState, u64)>,
    next_gone: Vec<(NetId, u64)>,
    carried: Vec<NetId>,
    spare_told: Vec<(NetId, u64)>,
}

impl Shown {
    /// Nothing shown yet.
    pub fn new() -> Shown {
        Shown::default()
    }

    /// The entities to draw, sorted by id.
    pub fn entities(&self) -> impl ExactSizeIterator<Item = &EntityState> + '_ {
        self.entities.iter().map(|(entity, _)| entity)
    }

    /// The entity with `id`, if drawn.
    pub fn get(&self, id: NetId) -> Option<&EntityState> {
        self.entities
            .binary_search_by(|(entity, _)| entity.id.cmp(&id))
            .ok()
            .map(|at| &self.entities[at].0)
    }

    /// Takes in `snapshot`, which led to `view` (the view [`ViewHistory`] made of it).
    pub fn update(&mut self, snapshot: &Snapshot, view: &View) {
        let tick = snapshot.tick;
        self.carried.clear();
        self.carried
            .extend(snapshot.entered.iter().map(|entity| entity.id));
        self.carried
            .extend(snapshot.changed.iter().map(|change| change.id));
        self.carried.sort_unstable();
        // When each of the view's entities was told: now if carried, else as its
        // baseline's (a baseline this no longer knows counts as told at its tick).
        let base = snapshot.baseline_tick;
        let base_told = base.and_then(|b| self.told.iter().find(|(t, _)| *t == b));
        let mut told = std::mem::take(&mut self.spare_told);
        told.clear();
        let mut from = base_told
            .map_or(&[][..], |(_, told)| &told[..])
            .iter()
            .peekable();
        for entity in view.entities() {
            let when = if self.carried.binary_search(&entity.id).is_ok() {
                tick
            } else {
                while from.next_if(|(id, _)| *id < entity.id).is_some() {}
                match from.peek() {
                    Some((id, when)) if *id == entity.id => *when,
                    _ => base.unwrap_or(0),
                }
            };
            told.push((entity.id, when));
        }
        // Newer news than the baseline's: leaves since (and the one of now).
        let newer = |when: u64| base.is_some_and(|b| when > b);
        let mut gone = std::mem::take(&mut self.next_gone);
        gone.clear();
        gone.extend(self.gone.iter().copied().filter(|&(_, left)| newer(left)));
        for &id in &snapshot.left {
            if self.carried.binary_search(&id).is_ok() {
                // Left and entered again at once (a new kind or radius).
                continue;
            }
            match gone.binary_search_by(|(g, _)| g.cmp(&id)) {
                Ok(at) => gone[at].1 = tick,
                Err(at) => gone.insert(at, (id, tick)),
            }
        }
        let left_after = |id: NetId, when: u64| {
            gone.binary_search_by(|(g, _)| g.cmp(&id))
                .is_ok_and(|at| gone[at].1 > when)
        };
        // Of each entity, what was told last: the view's, or what was drawn before when
        // newer; an entity the view does not hold stays while its news is newer than the
        // baseline (the view's chain of snapshots may not have carried it yet).
        let mut next = std::mem::take(&mut self.next);
        next.clear();
        let mut before = self.entities.iter().peekable();
        for (&entity, &(_, when)) in view.entities().iter().zip(&told) {
            while let Some(&(old, old_when)) = before.next_if(|(e, _)| e.id < entity.id) {
                if newer(old_when) && !left_after(old.id, old_when) {
                    next.push((old, old_when));
                }
            }
            let newest = match before.next_if(|(e, _)| e.id == entity.id) {
                Some(&(old, old_when)) if old_when > when => (old, old_when),
                _ => (entity, when),
            };
            if !left_after(newest.0.id, newest.1) {
                next.push(newest);
            }
        }
        for &(old, old_when) in before {
            if newer(old_when) && !left_after(old.id, old_when) {
                next.push((old, old_when));
            }
        }
        self.told.push_back((tick, told));
        if self.told.len() > ViewHistory::KEPT
            && let Some((_, dropped)) = self.told.pop_front()
        {
            self.spare_told = dropped;
        }
        self.next = std::mem::replace(&mut self.entities, next);
        self.next_gone = std::mem::replace(&mut self.gone, gone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{Change, EntityKind, Motion, QPos};
    use crate::view::Received;

    fn id(index: u32) -> NetId {
        NetId {
            index,
            generation: 0,
        }
    }

    fn entity(index: u32, x_cm: i32) -> EntityState {
        EntityState {
            id: id(index),
            kind: EntityKind::Npc,
            radius_cm: 40,
            pos: QPos { x_cm, y_cm: 0 },
            motion: Motion::Moving,
        }
    }

    fn moved(index: u32, dx_cm: i32) -> Change {
        Change {
            id: id(index),
            dx_cm,
            dy_cm: 0,
            motion: None,
        }
    }

    /// Snapshots against baselines two chains apart, as a client acknowledging late gets.
    #[test]
    fn the_newest_news_is_drawn_whichever_chain_the_view_is_on() {
        let mut history = ViewHistory::new();
        let mut shown = Shown::new();
        let mut receive = |snapshot: Snapshot| {
            assert_eq!(history.receive(&snapshot), Ok(Received::Applied));
            let (_, view) = history.newest().expect("applied");
            shown.update(&snapshot, view);
            let view: Vec<_> = view
                .entities()
                .iter()
                .map(|e| (e.id.index, e.pos.x_cm))
                .collect();
            let drawn: Vec<_> = shown.entities().map(|e| (e.id.index, e.pos.x_cm)).collect();
            (view, drawn)
        };
        let snapshot = |tick, baseline_tick| Snapshot {
            tick,
            baseline_tick,
            ..Snapshot::default()
        };
        let mut first = snapshot(10, None);
        first.entered = vec![entity(1, 0), entity(2, 0)];
        assert_eq!(receive(first), (vec![(1, 0), (2, 0)], vec![(1, 0), (2, 0)]));
        let mut s = snapshot(11, Some(10));
        s.changed = vec![moved(1, 100)];
        assert_eq!(receive(s), (vec![(1, 100), (2, 0)], vec![(1, 100), (2, 0)]));
        // Against 10 again: entity 1 left out is at 10's state in the view, drawn at 11's.
        let mut s = snapshot(12, Some(10));
        s.changed = vec![moved(2, 200)];
        assert_eq!(
            receive(s),
            (vec![(1, 0), (2, 200)], vec![(1, 100), (2, 200)])
        );
        // Against 11: entity 2 leaves (and 11's view never had it at 200).
        let mut s = snapshot(13, Some(11));
        s.left = vec![id(2)];
        assert_eq!(receive(s), (vec![(1, 100)], vec![(1, 100)]));
        // Against 12: the view holds entity 2 again, which left at 13.
        assert_eq!(
            receive(snapshot(14, Some(12))),
            (vec![(1, 0), (2, 200)], vec![(1, 100)])
        );
        // Against 13: entity 3 enters.
        let mut s = snapshot(15, Some(13));
        s.entered = vec![entity(3, 500)];
        assert_eq!(
            receive(s),
            (vec![(1, 100), (3, 500)], vec![(1, 100), (3, 500)])
        );
        // Against 14 (entity 2 leaves again): entity 3, not in this chain yet, stays drawn.
        let mut s = snapshot(16, Some(14));
        s.left = vec![id(2)];
        assert_eq!(receive(s), (vec![(1, 0)], vec![(1, 100), (3, 500)]));
        // Against 16: the baseline is newer than entity 3's news, which this chain never
        // carried (the server sends it again while it is in view): no longer drawn. Entity
        // 1's newest news is still 11's, whatever chain the view is on.
        assert_eq!(
            receive(snapshot(17, Some(16))),
            (vec![(1, 0)], vec![(1, 100)])
        );
        // Prompt: the drawing is the view.
        let mut s = snapshot(18, Some(17));
        s.changed = vec![moved(1, 150)];
        assert_eq!(receive(s), (vec![(1, 150)], vec![(1, 150)]));
        assert_eq!(shown.get(id(1)).map(|e| e.pos.x_cm), Some(150));
        assert_eq!(shown.get(id(3)), None);
    }
}
