//! What one client has been sent: the snapshots it has not acknowledged yet, each kept as
//! what it sent (a [`Diff`] against its baseline), and the views they were built against.
//! A view is made of a snapshot only once the client acknowledges it, and then, when no
//! other snapshot still needs the baseline it was built against, in that baseline's own
//! memory: a client that acknowledges each snapshot has one view, patched where snapshots
//! changed it, instead of a new copy of its whole crowd each tick. When a snapshot still
//! waiting was built against that baseline too (a client that acknowledges every other
//! snapshot, a tick late, as the load test's bots do), the baseline is still patched in
//! place, and kept as the way back: the inverse of what the acknowledged snapshot changed
//! (an [`Undone`] view), made into a view again only if that other snapshot is
//! acknowledged.

use std::collections::VecDeque;

use protocol::EntityState;

use crate::HISTORY;
use crate::delta::{Act, Known};

/// One entity a snapshot sent, as the view it leads to takes it: where (in the baseline:
/// its place, or for an entity entering, the place it goes before), what happened, and
/// its state and rank in the frame (for a leave, unused).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    pub at: u32,
    pub act: Act,
    pub rank: u32,
    pub state: EntityState,
}

/// What a snapshot changed in its baseline, in id order, and what the view it leads to
/// knows of itself.
#[derive(Debug, Default)]
pub(crate) struct Diff {
    pub ops: Vec<Op>,
    /// After an id merge, every baseline member's rank in the frame, by place
    /// (`u32::MAX`: none): the new view's ranks. Unused (`reranked` false) after a walk by
    /// rank, which keeps the baseline's.
    pub ranks: Vec<u32>,
    pub reranked: bool,
    pub roster: Option<u64>,
    pub backlog: bool,
}

impl Diff {
    pub(crate) fn clear(&mut self) {
        self.ops.clear();
        self.ranks.clear();
        self.reranked = false;
        self.roster = None;
        self.backlog = false;
    }

    /// Applies the diff to `view`, its baseline, in place. `members`, the baseline's
    /// members as bits over the frame's ranks (when the caller keeps them), become the new
    /// view's.
    fn apply(&self, view: &mut Known, mut members: Option<&mut [u64]>) {
        if self.reranked {
            let len = view.ranks.len();
            view.ranks.copy_from_slice(&self.ranks[..len]);
        }
        // Everything that keeps its place first, at the baseline's places; then what
        // leaves, closing the gaps; then what enters, opening them.
        let (mut leaves, mut enters) = (0, 0);
        for op in &self.ops {
            let at = op.at as usize;
            match op.act {
                Act::Change => view.states[at] = op.state,
                Act::Replace => {
                    if let Some(bits) = members.as_deref_mut() {
                        flip(bits, view.ranks[at], false);
                        flip(bits, op.rank, true);
                    }
                    view.states[at] = op.state;
                    view.ranks[at] = op.rank;
                }
                Act::Leave => {
                    if let Some(bits) = members.as_deref_mut() {
                        flip(bits, view.ranks[at], false);
                    }
                    leaves += 1;
                }
                Act::Enter => {
                    if let Some(bits) = members.as_deref_mut() {
                        flip(bits, op.rank, true);
                    }
                    enters += 1;
                }
            }
        }
        if leaves > 0 {
            let len = view.states.len();
            let mut gone = self.ops.iter().filter(|op| op.act == Act::Leave).peekable();
            let mut closed = 0;
            while let Some(op) = gone.next() {
                let at = op.at as usize;
                let end = gone.peek().map_or(len, |next| next.at as usize);
                view.states.copy_within(at + 1..end, at - closed);
                view.ranks.copy_within(at + 1..end, at - closed);
                closed += 1;
            }
            view.states.truncate(len - leaves);
            view.ranks.truncate(len - leaves);
        }
        if enters > 0 {
            // Where each entering entity goes once the leaves are gone: its place in the
            // baseline less the leaves before it. From the last one back, the entities
            // after each move up by the number entering up to it.
            let mut end = view.states.len();
            let filler = self.ops[0].state;
            view.states.resize(end + enters, filler);
            view.ranks.resize(end + enters, u32::MAX);
            let mut left_before = leaves;
            let mut entering = enters;
            for op in self.ops.iter().rev() {
                match op.act {
                    Act::Leave => left_before -= 1,
                    Act::Enter => {
                        entering -= 1;
                        let at = op.at as usize - left_before;
                        view.states.copy_within(at..end, at + entering + 1);
                        view.ranks.copy_within(at..end, at + entering + 1);
                        view.states[at + entering] = op.state;
                        view.ranks[at + entering] = op.rank;
                        end = at;
                    }
                    Act::Change | Act::Replace => {}
                }
            }
        }
        view.roster = self.roster;
        view.backlog = self.backlog;
    }

    /// Writes into `undo` the diff that takes the view this one makes of `base` back to
    /// `base`: each change, replacement, leave and entry turned around, at its place in
    /// the new view. Not for a diff that ranks the view anew (`reranked`).
    fn invert(&self, base: &Known, undo: &mut Diff) {
        undo.clear();
        undo.roster = base.roster;
        undo.backlog = base.backlog;
        // Entries less leaves so far: how far the baseline's places have moved.
        let mut shift = 0i64;
        for op in &self.ops {
            let at = op.at as usize;
            let here = (i64::from(op.at) + shift) as u32;
            let (act, rank, state) = match op.act {
                Act::Change => (Act::Change, base.ranks[at], base.states[at]),
                Act::Replace => (Act::Replace, base.ranks[at], base.states[at]),
                Act::Leave => {
                    shift -= 1;
                    (Act::Enter, base.ranks[at], base.states[at])
                }
                Act::Enter => {
                    shift += 1;
                    (Act::Leave, op.rank, op.state)
                }
            };
            undo.ops.push(Op {
                at: here,
                act,
                rank,
                state,
            });
        }
    }
}

/// Sets (`on`) or clears the bit of `rank`.
pub(crate) fn flip(bits: &mut [u64], rank: u32, on: bool) {
    if let Some(word) = bits.get_mut(rank as usize / 64) {
        let bit = 1 << (rank % 64);
        *word = if on { *word | bit } else { *word & !bit };
    }
}

/// A snapshot sent and not acknowledged.
#[derive(Debug)]
struct Sent {
    tick: u64,
    baseline: Option<u64>,
    diff: Diff,
}

/// A view kept as the way back from a newer one: the view of `tick` is the view of `from`
/// with `undo` applied.
#[derive(Debug)]
struct Undone {
    tick: u64,
    from: u64,
    undo: Diff,
}

/// One client's snapshots and views.
#[derive(Debug, Default)]
pub(crate) struct History {
    /// The snapshots not acknowledged yet, oldest first, of the last [`HISTORY`] built.
    sent: VecDeque<Sent>,
    /// The ticks of the last [`HISTORY`] snapshots built: a view is a baseline only while
    /// its snapshot is one of them (a client whose acknowledgements stop falls back to
    /// full snapshots, which it can always apply, instead of deltas against a view it may
    /// no longer hold).
    built: VecDeque<u64>,
    /// The views made: the acknowledged one, and any that a snapshot not acknowledged yet
    /// was built against.
    views: Vec<(u64, Known)>,
    /// Views kept as the way back from one of `views` (never from another of these).
    undone: Vec<Undone>,
    acked: Option<u64>,
    /// The view before the first snapshot, or without an acknowledged one.
    empty: Known,
    /// Memory of dropped views and diffs, for the next ones.
    spare_views: Vec<Known>,
    spare_diffs: Vec<Diff>,
}

impl History {
    /// The baseline of the next snapshot: the acknowledged view, if there is one.
    pub(crate) fn baseline(&self) -> (Option<u64>, &Known) {
        let recent = self.acked.filter(|acked| self.built.contains(acked));
        let acked = recent.and_then(|acked| {
            self.views
                .iter()
                .find(|(tick, _)| *tick == acked)
                .map(|(tick, view)| (Some(*tick), view))
        });
        acked.unwrap_or((None, &self.empty))
    }

    /// A diff to fill, cleared.
    pub(crate) fn spare_diff(&mut self) -> Diff {
        let mut diff = self.spare_diffs.pop().unwrap_or_default();
        diff.clear();
        diff
    }

    /// Keeps a diff's memory for a later one (as many as the snapshots that can wait, and
    /// the one being built).
    pub(crate) fn keep_diff(&mut self, diff: Diff) {
        if self.spare_diffs.len() <= HISTORY {
            self.spare_diffs.push(diff);
        }
    }

    fn keep_view(&mut self, view: Known) {
        if self.spare_views.len() < HISTORY {
            self.spare_views.push(view);
        }
    }

    /// Records the snapshot of `tick`, built against the baseline of `baseline`.
    pub(crate) fn record(&mut self, tick: u64, baseline: Option<u64>, diff: Diff) {
        self.sent.push_back(Sent {
            tick,
            baseline,
            diff,
        });
        self.built.push_back(tick);
        if self.built.len() > HISTORY {
            self.built.pop_front();
            let oldest = self.built.front().copied().unwrap_or(tick);
            while self.sent.front().is_some_and(|sent| sent.tick < oldest) {
                if let Some(dropped) = self.sent.pop_front() {
                    self.keep_diff(dropped.diff);
                }
            }
            self.drop_unneeded_views();
        }
    }

    /// The client received the snapshot of `tick` (acknowledgements only move forward):
    /// its view is made, and what can no longer be a baseline is dropped. A tick that names
    /// no snapshot waiting for its acknowledgement (one never sent, not built yet, or older
    /// than the history) changes nothing: a client cannot have received it, and taking it
    /// for acknowledged would leave no baseline (and an acknowledgement of a tick far ahead
    /// would make every true one after it look old, the client's snapshots full for good).
    /// `members`, bits
    /// over the frame's ranks describing the view of `members_of`, describe the new view
    /// when it is made in that view's memory; else `members_of` becomes `None`.
    pub(crate) fn acknowledge(
        &mut self,
        tick: u64,
        members: &mut [u64],
        members_of: &mut Option<u64>,
    ) {
        if self.acked.is_some_and(|acked| acked >= tick)
            || !self.sent.iter().any(|sent| sent.tick == tick)
        {
            return;
        }
        self.acked = Some(tick);
        // Snapshots older than the acknowledged one can no longer be acknowledged: the
        // views only they needed go first, so that the new view can be made in its
        // baseline's memory when nothing else needs that.
        if self.drop_sent(|sent| sent < tick) {
            self.drop_unneeded_views();
        }
        if !self.make_view(tick, members, members_of) {
            *members_of = None;
        }
        self.drop_sent(|sent| sent <= tick);
        self.drop_unneeded_views();
    }

    /// Drops the oldest snapshots waiting while `gone` says so of their ticks; returns
    /// whether there were any.
    fn drop_sent(&mut self, gone: impl Fn(u64) -> bool) -> bool {
        let mut dropped = false;
        while self.sent.front().is_some_and(|sent| gone(sent.tick)) {
            if let Some(sent) = self.sent.pop_front() {
                self.keep_diff(sent.diff);
                dropped = true;
            }
        }
        dropped
    }

    /// Makes the view of the snapshot of `tick` from its baseline's, in that view's memory
    /// (kept as the way back when another snapshot still needs it). Returns whether the
    /// bits (see [`History::acknowledge`]) describe it.
    fn make_view(&mut self, tick: u64, members: &mut [u64], members_of: &mut Option<u64>) -> bool {
        let Some(at) = self.sent.iter().position(|sent| sent.tick == tick) else {
            return false;
        };
        let baseline = self.sent[at].baseline;
        let shared = self
            .sent
            .iter()
            .any(|sent| sent.tick > tick && sent.baseline == baseline);
        let mut view = match baseline {
            None => {
                let mut view = self.spare_views.pop().unwrap_or_default();
                view.clear();
                view
            }
            Some(b) => match self.views.iter().position(|(t, _)| *t == b) {
                // A view another is kept as the way back from stays as it is; so does one
                // a diff that ranks the view anew would take away from a waiting snapshot.
                Some(found)
                    if self.undone.iter().any(|undone| undone.from == b)
                        || (shared && self.sent[at].diff.reranked) =>
                {
                    let mut view = self.spare_views.pop().unwrap_or_default();
                    view.copy_from(&self.views[found].1);
                    view
                }
                Some(found) => {
                    if shared {
                        let mut undo = self.spare_diff();
                        self.sent[at].diff.invert(&self.views[found].1, &mut undo);
                        self.undone.push(Undone {
                            tick: b,
                            from: tick,
                            undo,
                        });
                    }
                    self.views.swap_remove(found).1
                }
                None => {
                    let mut view = self.spare_views.pop().unwrap_or_default();
                    if !self.remake(b, &mut view) {
                        self.keep_view(view);
                        return false;
                    }
                    view
                }
            },
        };
        // The bits follow the view when it is made from the one they describe (kept beside
        // it or not: no snapshot is built against a view older than the acknowledged one).
        let diff = &self.sent[at].diff;
        let follows = baseline.is_some() && *members_of == baseline && !diff.reranked;
        let bits = follows.then_some(members);
        diff.apply(&mut view, bits);
        self.views.push((tick, view));
        *members_of = if follows { Some(tick) } else { None };
        follows
    }

    /// Makes `view` the view of `tick` kept as the way back from another. Returns whether
    /// there is such a view.
    fn remake(&self, tick: u64, view: &mut Known) -> bool {
        let Some(undone) = self.undone.iter().find(|undone| undone.tick == tick) else {
            return false;
        };
        let Some((_, from)) = self.views.iter().find(|(t, _)| *t == undone.from) else {
            return false;
        };
        view.copy_from(from);
        undone.undo.apply(view, None);
        true
    }

    /// Whether the view of `tick` is acknowledged or a baseline of a snapshot still
    /// waiting for its acknowledgement.
    fn needed(&self, tick: u64) -> bool {
        (self.acked == Some(tick) && self.built.contains(&tick))
            || self.sent.iter().any(|sent| sent.baseline == Some(tick))
    }

    /// Drops the views that are not needed, and those kept as the way back from another
    /// that are not.
    fn drop_unneeded_views(&mut self) {
        let mut i = 0;
        while i < self.undone.len() {
            if self.needed(self.undone[i].tick) {
                i += 1;
            } else {
                let undone = self.undone.swap_remove(i);
                self.keep_diff(undone.undo);
            }
        }
        let mut i = 0;
        while i < self.views.len() {
            let tick = self.views[i].0;
            let needed = self.needed(tick) || self.undone.iter().any(|undone| undone.from == tick);
            if needed {
                i += 1;
            } else {
                let (_, view) = self.views.swap_remove(i);
                self.keep_view(view);
            }
        }
    }

    /// The entities the client holds after the newest snapshot sent, sorted by id (`None`
    /// before any, or when its baseline is gone).
    pub(crate) fn latest(&self) -> Option<Vec<EntityState>> {
        let Some(newest) = self.sent.back() else {
            let (acked, view) = self.baseline();
            return acked.map(|_| view.states.clone());
        };
        let mut view = Known::default();
        match newest.baseline {
            None => {}
            Some(b) => match self.views.iter().find(|(t, _)| *t == b) {
                Some((_, found)) => view.copy_from(found),
                None if self.remake(b, &mut view) => {}
                None => return None,
            },
        }
        newest.diff.apply(&mut view, None);
        Some(view.states)
    }
}

#[cfg(test)]
mod tests {
    use protocol::{EntityKind, Motion, NetId, QPos};

    use super::*;

    fn state(index: u32, x_cm: i32, radius_cm: u16) -> EntityState {
        EntityState {
            id: NetId {
                index,
                generation: 0,
            },
            kind: EntityKind::Npc,
            radius_cm,
            pos: QPos { x_cm, y_cm: 0 },
            motion: Motion::Moving,
        }
    }

    /// A diff turned around takes the view it made back to its baseline, whatever it
    /// changed, replaced, removed and added, and wherever (random diffs over random views,
    /// entries before the first member and after the last among them).
    #[test]
    fn an_inverted_diff_takes_the_view_back_to_its_baseline() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for case in 0..500 {
            let len = next(40) as u32;
            // Members 10 apart by id, so that an entry fits before each.
            let base = Known {
                states: (0..len).map(|k| state(10 * k + 10, k as i32, 40)).collect(),
                ranks: (0..len).map(|k| 3 * k).collect(),
                roster: Some(case),
                backlog: case % 2 == 0,
            };
            let mut diff = Diff::default();
            for at in 0..=len {
                if next(4) == 0 {
                    diff.ops.push(Op {
                        at,
                        act: Act::Enter,
                        rank: 3 * at + 1,
                        state: state(10 * at + 5, -1, 40),
                    });
                }
                if at == len {
                    break;
                }
                let old = base.states[at as usize];
                let (act, rank, state) = match next(5) {
                    0 => (
                        Act::Change,
                        base.ranks[at as usize],
                        state(old.id.index, 99, 40),
                    ),
                    1 => (Act::Replace, 3 * at + 2, state(old.id.index, 98, 50)),
                    2 => (Act::Leave, u32::MAX, old),
                    _ => continue,
                };
                diff.ops.push(Op {
                    at,
                    act,
                    rank,
                    state,
                });
            }
            diff.roster = None;
            diff.backlog = case % 2 == 1;
            let mut view = Known::default();
            view.copy_from(&base);
            diff.apply(&mut view, None);
            let mut undo = Diff::default();
            diff.invert(&base, &mut undo);
            undo.apply(&mut view, None);
            assert_eq!(view.states, base.states, "case {case}: {diff:?}");
            assert_eq!(view.ranks, base.ranks, "case {case}");
            assert_eq!((view.roster, view.backlog), (base.roster, base.backlog));
        }
    }
}
