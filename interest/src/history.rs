//! What one client has been sent: the snapshots it has not acknowledged yet, each kept as
//! what it sent (a [`Diff`] against its baseline), and the views they were built against.
//! A view is made of a snapshot only once the client acknowledges it, and then, when no
//! other snapshot still needs the baseline it was built against, in that baseline's own
//! memory: a client that acknowledges each snapshot has one view, patched where snapshots
//! changed it, instead of a new copy of its whole crowd each tick.

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
    /// its view is made, and what can no longer be a baseline is dropped. `members`, bits
    /// over the frame's ranks describing the view of `members_of`, describe the new view
    /// when it is made in that view's memory; else `members_of` becomes `None`.
    pub(crate) fn acknowledge(
        &mut self,
        tick: u64,
        members: &mut [u64],
        members_of: &mut Option<u64>,
    ) {
        if self.acked.is_some_and(|acked| acked >= tick) {
            return;
        }
        self.acked = Some(tick);
        if !self.make_view(tick, members, members_of) {
            *members_of = None;
        }
        // Snapshots older than the acknowledged one can no longer be acknowledged.
        while self.sent.front().is_some_and(|sent| sent.tick <= tick) {
            if let Some(sent) = self.sent.pop_front() {
                self.keep_diff(sent.diff);
            }
        }
        self.drop_unneeded_views();
    }

    /// Makes the view of the snapshot of `tick` from its baseline's, in that view's memory
    /// when no other snapshot needs it. Returns whether the bits (see
    /// [`History::acknowledge`]) describe it.
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
            Some(b) => {
                let Some(found) = self.views.iter().position(|(t, _)| *t == b) else {
                    return false;
                };
                if shared {
                    let mut view = self.spare_views.pop().unwrap_or_default();
                    view.copy_from(&self.views[found].1);
                    view
                } else {
                    self.views.swap_remove(found).1
                }
            }
        };
        // The bits follow the view when it is made from the one they describe, and that
        // one is not kept beside it.
        let diff = &self.sent[at].diff;
        let follows = baseline.is_some() && *members_of == baseline && !shared && !diff.reranked;
        let bits = follows.then_some(members);
        diff.apply(&mut view, bits);
        self.views.push((tick, view));
        *members_of = if follows { Some(tick) } else { None };
        follows
    }

    /// Drops the views that are neither acknowledged nor a baseline of a snapshot still
    /// waiting for its acknowledgement.
    fn drop_unneeded_views(&mut self) {
        let mut i = 0;
        while i < self.views.len() {
            let tick = self.views[i].0;
            let needed = (self.acked == Some(tick) && self.built.contains(&tick))
                || self.sent.iter().any(|sent| sent.baseline == Some(tick));
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
            Some(b) => view.copy_from(&self.views.iter().find(|(t, _)| *t == b)?.1),
        }
        newest.diff.apply(&mut view, None);
        Some(view.states)
    }
}
