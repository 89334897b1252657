//! One client's delta, built in one pass: the entities of the frame near the viewer and the
//! acknowledged view (the baseline) are merged by id in a single walk, which records each
//! entity the snapshot would send (an item) and what ranks it; unchanged entities leave no
//! item. What ranks an item is how wrong the client's picture of it will be if it is left
//! out: the client applies the snapshot to the baseline, so that is the baseline's state,
//! whatever newer snapshots not yet acknowledged carried. The items are then ranked (in one
//! branch-free loop), sorted by rank (a radix sort: [`order`]) and spent against the byte
//! budget (an item's wire cost is worked out when the spending reaches it); then one walk
//! over the sent items in id order encodes each one's entry ([`SnapshotEncoder`]: no
//! snapshot lists are built to be encoded afterwards) and what the view the client will hold
//! takes of it (the baseline with what was sent applied), and the datagram is put together.
//!
//! The result is exactly [`protocol::build_snapshot`]'s over the same candidates, encoded
//! by [`protocol::codec::encode_datagram`]: the same ranking and tie-breaks (items, like its
//! slots, are in id order), the same greedy spending of the budget. The reference stays in
//! `protocol` as the specification; `tests/same_bytes.rs` compares the two on moving
//! crowds.

use protocol::codec::{SnapshotEncoder, net_id_len};
use protocol::view::rank_key;
use protocol::{BuildError, EntityState, NetId};

use crate::frame::Frame;
use crate::history::{Diff, Op};
use crate::schedule;

mod members;
mod order;

pub(crate) use members::Members;

/// What a snapshot would do with one entity, when it fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    /// In the baseline only.
    Leave,
    /// Now only.
    Enter,
    /// In both, with another position or motion.
    Change,
    /// In both with another kind or radius: leaves and enters in one snapshot.
    Replace,
}

impl Act {
    /// What a snapshot would do with an entity the baseline holds as `old`, now `now`
    /// (`None`: nothing, it is unchanged).
    #[inline(always)]
    fn between(old: &EntityState, now: &EntityState) -> Option<Act> {
        // Each field compared without short-circuits: one branch per entity, not five.
        let same_shape = (old.kind == now.kind) & (old.radius_cm == now.radius_cm);
        let still = (old.pos.x_cm == now.pos.x_cm)
            & (old.pos.y_cm == now.pos.y_cm)
            & (old.motion == now.motion);
        if !same_shape {
            Some(Act::Replace)
        } else if still {
            None
        } else {
            Some(Act::Change)
        }
    }

    /// Whether an entity known to keep its kind and radius changed: [`Act::between`]'s
    /// `Some(Act::Change)`.
    #[inline(always)]
    fn moved(old: &EntityState, now: &EntityState) -> bool {
        let still = (old.pos.x_cm == now.pos.x_cm)
            & (old.pos.y_cm == now.pos.y_cm)
            & (old.motion == now.motion);
        !still
    }
}

/// What a merge wrote: the number of items, of leaves and entering bodies among them, and
/// of the baseline's members whose kind or radius changed (looked at or held).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Merged {
    pub count: usize,
    pub leaves: usize,
    pub enters: usize,
    pub replaces: usize,
}

/// One entity the snapshot would send: its act, where it is in the baseline (for an entity
/// entering, where it would be inserted) and its rank in the frame (for a leave, none). Its wire
/// cost is worked out only when the spending reaches it ([`item_cost`]): most items are
/// never reached.
#[derive(Clone, Copy, Debug)]
struct Item {
    act: Act,
    base: u32,
    now: u32,
}

/// The builder's working memory, reused from client to client and tick to tick.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// What would be sent, in id order (unchanged entities have no item): the first
    /// items of a buffer that only grows.
    items: Vec<Item>,
    /// What ranks each item.
    terms: Vec<Terms>,
    /// The items as rank keys (rank in the high half, item in the low: ties go in id
    /// order, as in `protocol::build_snapshot`, whose slots are in id order too).
    order: Vec<u64>,
    /// One bit per item, set when sent.
    sent: Vec<u64>,
    /// The snapshot's datagram, written entry by entry in id order once the budget is
    /// spent.
    encoder: SnapshotEncoder,
    /// The ranked items after the first `fit` that could still fit, for a second pass.
    later: Vec<u64>,
    /// Working memory of the sort of `order`.
    spare: Vec<u64>,
    /// For each baseline entity, its rank in this frame when the id merge found it there
    /// (else `u32::MAX`): the new view's ranks.
    base_ranks: Vec<u32>,
    /// Bodies near the viewer that are not in its baseline: rank, squared distance.
    enters: Vec<(u32, f32)>,
    /// The places in the baseline of the members a snapshot looks at, and a flag for each
    /// member telling whether it is one.
    due: Vec<u32>,
    flags: Vec<u8>,
}

/// Where the new view's ranks come from: the baseline's own (its members were looked up
/// by rank), or what the id merge found.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ranks {
    Baseline,
    Merged,
}

/// The two passes over the ranking: the best `fit` items, then whatever of the rest fits
/// the room left.
#[derive(Clone, Copy)]
enum Pass {
    Head,
    Tail,
}

/// What a client holds after one snapshot: its entities sorted by id (the merge compares
/// their ids as [`key`]s, read from the states themselves), and each one's rank in the
/// frame the view was made from (`u32::MAX` where that frame has no such entity), so that
/// a snapshot against it can look its members up without merging ids while the frame's
/// ids stay the same ([`Plan::merge_members`]).
#[derive(Debug, Default)]
pub(crate) struct Known {
    pub states: Vec<EntityState>,
    pub ranks: Vec<u32>,
    /// The roster ([`Frame::follow`]) in whose frames every entity's rank names a body with
    /// its id, kind and radius, when there is one: a snapshot against this view from a
    /// frame of that roster need not check who each member is.
    pub roster: Option<u64>,
    /// Whether bodies entering the view were left out of it for want of room: the next
    /// snapshot against it scans for them again ([`crate::schedule::scans`]).
    pub backlog: bool,
}

impl Known {
    pub(crate) fn clear(&mut self) {
        self.states.clear();
        self.ranks.clear();
        self.roster = None;
        self.backlog = false;
    }

    /// Makes this a copy of `other`.
    pub(crate) fn copy_from(&mut self, other: &Known) {
        self.clear();
        self.states.extend_from_slice(&other.states);
        self.ranks.extend_from_slice(&other.ranks);
        self.roster = other.roster;
        self.backlog = other.backlog;
    }

    /// The id of the entity at `at` as a [`key`], if there is one.
    #[inline]
    fn key_at(&self, at: usize) -> Option<u64> {
        self.states.get(at).map(|state| key(state.id))
    }
}

/// The part of the frame near one viewer, with what the viewer knows.
pub(crate) struct Inputs<'a> {
    pub frame: &'a Frame,
    /// One bit per frame body in id order, set for those within the view's outer reach
    /// (cleared here).
    pub marks: &'a mut [u64],
    /// How many bits are set.
    pub marked: usize,
    /// For every marked body, by rank: its squared distance from the viewer.
    pub near: &'a [f32],
    pub me: NetId,
    /// Squared view radius: bodies beyond it enter no view, but stay in one up to the outer
    /// reach.
    pub radius2: f32,
    /// The acknowledged view (empty without one).
    pub base: &'a Known,
    /// The viewer's position, the snapshot's tick and whether it scans for entering
    /// bodies: which members it looks at and whether bodies enter ([`crate::schedule`]).
    pub at: (f32, f32),
    pub tick: u64,
    pub gap: u64,
    pub scan: bool,
}

/// Ids as one integer, ordered like `NetId`'s `Ord` (index, then generation).
pub(crate) fn key(id: NetId) -> u64 {
    (u64::from(id.index) << 32) | u64::from(id.generation)
}

/// Whether two ids are the same, in one comparison.
#[inline(always)]
pub(crate) fn same_id(a: NetId, b: NetId) -> bool {
    (a.index ^ b.index) | (a.generation ^ b.generation) == 0
}

/// What an item's rank is worked out from: the position error's terms before scaling to
/// metres, whether the motion changed (1 or 0: an integer, so that the merge writes it
/// without a branch and the ranking's loop scales it), and the squared distance from the
/// viewer.
#[derive(Clone, Copy, Debug, Default)]
struct Terms {
    dx_cm: f32,
    dy_cm: f32,
    motion_changed: u32,
    distance2_m2: f32,
}

impl Terms {
    /// Terms that rank first: the client's own character, and leaves.
    const FIRST: Terms = Terms {
        dx_cm: f32::INFINITY,
        dy_cm: 0.0,
        motion_changed: 0,
        distance2_m2: 0.0,
    };

    /// The terms of the client's own character (`is_me`: first) or of another entity
    /// ([`Terms::new`]).
    fn of(is_me: bool, distance2_m2: f32, known: Option<&EntityState>, now: &EntityState) -> Terms {
        if is_me {
            Terms::FIRST
        } else {
            Terms::new(distance2_m2, known, now)
        }
    }

    /// The terms of an entity `distance2_m2` away, as the client knows it (`None`: not at
    /// all) and as it is now.
    fn new(distance2_m2: f32, known: Option<&EntityState>, now: &EntityState) -> Terms {
        match known {
            // 10 m wrong: 1,000 cm, exactly 100 m² once scaled.
            None => Terms {
                dx_cm: 1000.0,
                dy_cm: 0.0,
                motion_changed: 0,
                distance2_m2,
            },
            Some(old) => Terms {
                dx_cm: now.pos.x_cm as f32 - old.pos.x_cm as f32,
                dy_cm: now.pos.y_cm as f32 - old.pos.y_cm as f32,
                motion_changed: u32::from(now.motion != old.motion),
                distance2_m2,
            },
        }
    }

    /// Send order when a datagram cannot hold every change (lower first): the client's own
    /// character and leaves, then entities by how wrong the client's picture of them is
    /// relative to how near they are: error² / (distance² + 1 m²), which orders like
    /// error / distance without a square root. A new entity counts as 10 m wrong, a changed
    /// motion as 10 cm. So near entities update often, far ones less often but never
    /// starve: their error grows until they win.
    ///
    /// Branch-free, so that the ranks of all items are worked out in one loop the compiler
    /// vectorizes, after the merge (its divisions then overlap).
    #[inline]
    fn rank(self) -> f32 {
        let dx = self.dx_cm / 100.0;
        let dy = self.dy_cm / 100.0;
        let motion = self.motion_changed as f32 * 0.01;
        let error2_m2 = dx * dx + dy * dy + motion;
        -error2_m2 / (self.distance2_m2 + 1.0)
    }
}

/// Bytes of a position delta on the wire (zigzag, then bincode's varint: one byte up to
/// 250, three up to 65,535, else five), as `protocol::codec::change_len` counts them.
#[inline(always)]
fn delta_len(value: i32) -> usize {
    let zigzag = ((value << 1) ^ (value >> 31)) as u32;
    1 + 2 * usize::from(zigzag > 250) + 2 * usize::from(zigzag > 0xffff)
}

/// The wire cost of an item: what [`protocol::codec::change_len`] and
/// [`protocol::codec::entity_len`] count for what it sends.
#[inline(always)]
fn item_cost(item: Item, frame: &Frame, base: &Known) -> usize {
    let now = || &frame.by_rank[item.now as usize];
    let old = || &base.states[item.base as usize];
    match item.act {
        Act::Leave => net_id_len(&old().id),
        Act::Enter => usize::from(now().enter_cost),
        Act::Replace => net_id_len(&old().id) + usize::from(now().enter_cost),
        Act::Change => {
            let (old, now) = (old(), now());
            let dx = now.state.pos.x_cm.wrapping_sub(old.pos.x_cm);
            let dy = now.state.pos.y_cm.wrapping_sub(old.pos.y_cm);
            // The id, both deltas, the motion's option tag and, when it changed, the
            // motion.
            let motion = 1 + usize::from(now.state.motion != old.motion);
            usize::from(now.id_cost) + delta_len(dx) + delta_len(dy) + motion
        }
    }
}

/// Bytes each list's length prefix may grow by (from one byte to three: counts below 2^16).
const LENGTH_SLACK: usize = 3 * 2;
/// A leave costs at least two bytes (an id), anything else at least five.
const MIN_LEAVE_BYTES: usize = 2;
const MIN_OTHER_BYTES: usize = 5;

/// The items and what ranks them as the merge writes them: into slices sized beforehand
/// for every candidate and every baseline entity, so that a push is two stores.
struct Out<'a> {
    items: &'a mut [Item],
    terms: &'a mut [Terms],
    len: usize,
}

impl Out<'_> {
    #[inline]
    fn push(&mut self, item: Item, terms: Terms) {
        self.push_if(item, terms, true);
    }

    /// Writes the item in the next slot, and keeps it there if `keep` (else the next
    /// push overwrites it; the slot is one the item could have been kept in).
    #[inline(always)]
    fn push_if(&mut self, item: Item, terms: Terms, keep: bool) {
        self.terms[self.len] = terms;
        self.items[self.len] = item;
        self.len += usize::from(keep);
    }
}

impl Plan {
    /// Merges the marked bodies and the baseline by id into the items that would be sent.
    fn merge(&mut self, inputs: Inputs<'_>) -> Merged {
        let Inputs {
            frame,
            marks,
            marked,
            near,
            me,
            radius2,
            base,
            at,
            tick,
            gap,
            scan,
        } = inputs;
        self.reserve(marked + base.states.len());
        // Every baseline entity is either found (its rank is written) or leaves (`u32::MAX`).
        if self.base_ranks.len() < base.states.len() {
            self.base_ranks.resize(base.states.len(), u32::MAX);
        }
        let mut out = Out {
            items: &mut self.items,
            terms: &mut self.terms,
            len: 0,
        };
        let (mut at_base, mut leaves, mut enters, mut replaces) = (0, 0, 0, 0);
        let me = key(me);
        let base_states = &base.states[..];
        let leave = |out: &mut Out<'_>, b: usize| {
            let item = Item {
                act: Act::Leave,
                base: b as u32,
                now: u32::MAX,
            };
            out.push(item, Terms::FIRST);
        };
        let looked_at = |old: &EntityState| schedule::due(tick, gap, old, at) || key(old.id) == me;
        // A member beyond the outer reach leaves when looked at; until then it is held,
        // unless it is gone from the world. Returns its rank when held.
        let held = |old: &EntityState| {
            if looked_at(old) {
                None
            } else {
                frame.rank_of(old.id)
            }
        };
        // A held member whose kind or radius changed: the new view's ranks do not name it
        // in the frame's roster.
        let reshaped = |old: &EntityState, rank: u32| {
            let now = &frame.by_rank[rank as usize].state;
            usize::from(Act::between(old, now) == Some(Act::Replace))
        };
        // The marks, walked in rank order, visit the candidates in id order; the baseline is
        // walked alongside.
        for (w, word) in marks.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let rank = w * 64 + bits.trailing_zeros() as usize;
                let d2 = near[rank];
                bits &= bits - 1;
                let body = &frame.by_rank[rank];
                let id = key(body.state.id);
                // Baseline entities before this one are beyond the outer reach: they leave
                // when looked at.
                while base.key_at(at_base).is_some_and(|key| key < id) {
                    if let Some(rank) = held(&base_states[at_base]) {
                        self.base_ranks[at_base] = rank;
                        replaces += reshaped(&base_states[at_base], rank);
                    } else {
                        leave(&mut out, at_base);
                        self.base_ranks[at_base] = u32::MAX;
                        leaves += 1;
                    }
                    at_base += 1;
                }
                let in_base = base.key_at(at_base) == Some(id);
                let known = in_base.then(|| &base_states[at_base]);
                let is_me = id == me;
                if !is_me && (d2 > radius2 || !scan) && known.is_none() {
                    // Out of view, or not scanned for; should the baseline hold it, it
                    // leaves (next round).
                    continue;
                }
                if let Some(old) = known.filter(|old| !looked_at(old)) {
                    // Held as the baseline has it.
                    self.base_ranks[at_base] = rank as u32;
                    replaces += reshaped(old, rank as u32);
                    at_base += 1;
                    continue;
                }
                let state = &body.state;
                let item = if in_base {
                    let old = &base_states[at_base];
                    self.base_ranks[at_base] = rank as u32;
                    at_base += 1;
                    let Some(act) = Act::between(old, state) else {
                        continue;
                    };
                    replaces += usize::from(act == Act::Replace);
                    Item {
                        act,
                        base: at_base as u32 - 1,
                        now: rank as u32,
                    }
                } else {
                    enters += 1;
                    // Where it would go in the baseline.
                    Item {
                        act: Act::Enter,
                        base: at_base as u32,
                        now: rank as u32,
                    }
                };
                out.push(item, Terms::of(is_me, d2, known, state));
            }
        }
        for (b, old) in base_states.iter().enumerate().skip(at_base) {
            if let Some(rank) = held(old) {
                self.base_ranks[b] = rank;
                replaces += reshaped(old, rank);
            } else {
                leave(&mut out, b);
                self.base_ranks[b] = u32::MAX;
                leaves += 1;
            }
        }
        let count = out.len;
        self.rank_items(count);
        Merged {
            count,
            leaves,
            enters,
            replaces,
        }
    }

    /// Makes room for `most` items.
    fn reserve(&mut self, most: usize) {
        if self.items.len() < most {
            let none = Item {
                act: Act::Leave,
                base: 0,
                now: 0,
            };
            self.items.resize(most, none);
            self.terms.resize(most, Terms::default());
            self.order.resize(most, 0);
        }
    }

    /// Works out the rank keys of the first `count` items.
    fn rank_items(&mut self, count: usize) {
        let ranked = self.order[..count].iter_mut().zip(&self.terms[..count]);
        for (i, (key, terms)) in ranked.enumerate() {
            *key = rank_key(terms.rank(), i as u32);
        }
    }

    /// Merges by id ([`Plan::merge`]) and builds the snapshot ([`Plan::build`]).
    pub(crate) fn merge_and_build(
        &mut self,
        inputs: Inputs<'_>,
        header: (u64, Option<u64>, u32),
        budget_bytes: usize,
        diff: &mut Diff,
        datagram: &mut Vec<u8>,
    ) -> Result<(), BuildError> {
        let (frame, base) = (inputs.frame, inputs.base);
        let merged = self.merge(inputs);
        let out = (diff, datagram);
        self.build(
            (frame, base),
            merged,
            Ranks::Merged,
            header,
            budget_bytes,
            out,
        )
    }

    /// Builds the client's snapshot datagram in `datagram` (cleared first; header: tick,
    /// baseline tick, input sequence) within `budget_bytes` from the `merged` items, and
    /// what it changes in its baseline in `diff` (cleared first).
    pub(crate) fn build(
        &mut self,
        (frame, base): (&Frame, &Known),
        merged: Merged,
        ranks: Ranks,
        header: (u64, Option<u64>, u32),
        budget_bytes: usize,
        (diff, datagram): (&mut Diff, &mut Vec<u8>),
    ) -> Result<(), BuildError> {
        let (tick, baseline_tick, last_input_seq) = header;
        let Plan {
            items,
            order,
            sent,
            terms: _,
            encoder,
            later,
            spare,
            base_ranks,
            enters: _,
            due: _,
            flags: _,
        } = self;
        let Merged {
            count,
            leaves,
            enters,
            replaces,
        } = merged;
        let by_members = matches!(ranks, Ranks::Baseline);
        let ranks: &[u32] = match ranks {
            Ranks::Baseline => &base.ranks,
            Ranks::Merged => base_ranks,
        };
        let (items, order) = (&items[..count], &mut order[..count]);
        encoder.begin(tick, baseline_tick, last_input_seq);
        let mut used = encoder.header_len() + LENGTH_SLACK;
        if used > budget_bytes {
            return Err(BuildError::BudgetTooSmall {
                budget: budget_bytes,
                needed: used,
            });
        }

        // Leaves first, then by rank (every item ordered, by a radix sort that branches on
        // the ranks only where a few share their top bits: [`order`]). At most `leaves +
        // room / 5` items fit, so the spending visits that many best-ranked items first;
        // should some not fit and room remain, of the rest only what fits the room left
        // then: the visiting order is the full ranking, skipping only what could never fit.
        sent.clear();
        sent.resize(items.len().div_ceil(64), 0);
        let fit = (leaves + (budget_bytes - used) / MIN_OTHER_BYTES).min(order.len());
        order::sort_by_rank(order, spare);
        let (head, tail) = order.split_at(fit);
        for pass in [Pass::Head, Pass::Tail] {
            let room = budget_bytes - used;
            if room < MIN_LEAVE_BYTES {
                break;
            }
            let keys: &[u64] = match pass {
                Pass::Head => head,
                // Everything in the tail costs at least `MIN_OTHER_BYTES` (the leaves rank
                // first: they are all in the head).
                Pass::Tail if room < MIN_OTHER_BYTES => break,
                Pass::Tail => {
                    later.clear();
                    later
                        .extend(tail.iter().filter(|&&k| {
                            item_cost(items[k as u32 as usize], frame, base) <= room
                        }));
                    later
                }
            };
            for &k in keys {
                if budget_bytes - used < MIN_LEAVE_BYTES {
                    break;
                }
                let at = k as u32 as usize;
                let item = items[at];
                let cost = item_cost(item, frame, base);
                if used + cost > budget_bytes {
                    continue;
                }
                used += cost;
                sent[at / 64] |= 1 << (at % 64);
            }
        }

        // The snapshot's entries and what it changes in the baseline, both in id order.
        diff.clear();
        if !by_members {
            diff.ranks.extend_from_slice(&ranks[..base.states.len()]);
            diff.reranked = true;
        }
        let (mut sent_leaves, mut sent_enters, mut sent_replaces) = (0, 0, 0);
        for (w, &word) in sent.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let item = items[w * 64 + bits.trailing_zeros() as usize];
                bits &= bits - 1;
                let at = item.base as usize;
                // A leave has no body in the frame: read it only for the other acts.
                let now = || &frame.by_rank[item.now as usize];
                let old = || &base.states[at];
                let (rank, state) = match item.act {
                    Act::Leave => {
                        sent_leaves += 1;
                        encoder.leave(&old().id);
                        (u32::MAX, *old())
                    }
                    Act::Enter => {
                        sent_enters += 1;
                        let now = now();
                        encoder.enter(&now.state);
                        (item.now, now.state)
                    }
                    Act::Change => {
                        let now = &now().state;
                        encoder.change_between(old(), now);
                        (ranks[at], *now)
                    }
                    Act::Replace => {
                        sent_replaces += 1;
                        let now = now();
                        encoder.leave(&old().id);
                        encoder.enter(&now.state);
                        (item.now, now.state)
                    }
                };
                diff.ops.push(Op {
                    at: item.base,
                    act: item.act,
                    rank,
                    state,
                });
            }
        }
        // Every rank of the new view names its entity in this frame's roster, unless a
        // replacement was left out (the view keeps the old kind or radius) or, after an id
        // merge, a leave was (the merge gives leaving entities no rank).
        let named = sent_replaces == replaces && (by_members || sent_leaves == leaves);
        diff.roster = named.then_some(frame.roster);
        diff.backlog = sent_enters < enters;
        // The budget is at most the datagram limit; should encoding ever refuse, the
        // snapshot is dropped like one over budget.
        encoder
            .finish(datagram)
            .map_err(|_| BuildError::BudgetTooSmall {
                budget: budget_bytes,
                needed: budget_bytes + 1,
            })
    }
}
