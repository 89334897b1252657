//! The items of a viewer whose baseline still matches the frame's ranks: its members are
//! looked up by the rank the baseline keeps for each (checked against the id found there),
//! and the view's circle is scanned only for bodies that are not members yet. No id is
//! merged: the walk goes down the baseline, with the bodies about to enter sorted by rank
//! in between.
//!
//! The items, their order and their terms are exactly those [`Plan::merge`] makes of the
//! same inputs; when a rank no longer holds
//! its member (bodies were added to or removed from the world since the baseline was
//! made), [`Plan::merge_members`] gives up and the caller merges ids instead.

use protocol::NetId;

use super::{Act, Item, Known, Out, Plan, Terms, key, same_id};
use crate::frame::Frame;

/// A viewer, its baseline, and the frame it looks at.
pub(crate) struct Members<'a> {
    pub frame: &'a Frame,
    /// One bit per frame body by rank, set for the baseline's members.
    pub members: &'a [u64],
    pub me: NetId,
    pub at: (f32, f32),
    /// The view's radius: bodies within it enter.
    pub radius: f32,
    /// Members within the outer reach stay; beyond it they leave.
    pub outer2: f32,
    /// The baseline, with its members' ranks.
    pub base: &'a Known,
}

impl Plan {
    /// Writes the items of `members` and returns their number and that of leaves among
    /// them, or `None` when the baseline's ranks do not name its members in this frame.
    pub(crate) fn merge_members(&mut self, members: Members<'_>) -> Option<(usize, usize)> {
        let Members {
            frame,
            members,
            me,
            at,
            radius,
            outer2,
            base,
        } = members;
        if base.ranks.len() != base.states.len() {
            return None;
        }
        let bodies = &frame.by_rank;
        let distance2 = |(x, y): (f32, f32)| (x - at.0).powi(2) + (y - at.1).powi(2);
        let is_member = |bits: &[u64], rank: u32| bits[rank as usize / 64] >> (rank % 64) & 1;
        let radius2 = radius * radius;
        let enters = &mut self.enters;
        enters.clear();
        frame.near(at, radius, |place, rank, d2| {
            if d2 <= radius2 && is_member(members, rank) == 0 {
                enters.push((rank, place, d2));
            }
        });
        // The viewer's own character is in view up to the outer reach.
        if let Some(rank) = frame.rank_of(me) {
            let body = &bodies[rank as usize];
            let d2 = distance2(body.pos);
            if is_member(members, rank) == 0 && d2 > radius2 && d2 <= outer2 {
                enters.push((rank, body.place, d2));
            }
        }
        enters.sort_unstable_by_key(|&(rank, _, _)| rank);
        let most = base.states.len() + enters.len();
        self.reserve(most);
        let enters = &self.enters;
        let mut out = Out {
            items: &mut self.items,
            terms: &mut self.terms,
            len: 0,
        };
        let me = key(me);
        let enter = |out: &mut Out<'_>, &(rank, place, d2): &(u32, u32, f32), at_base: usize| {
            let state = &bodies[rank as usize].state;
            let item = Item {
                act: Act::Enter,
                base: at_base as u32,
                now: place,
            };
            out.push(item, Terms::of(key(state.id) == me, d2, None, state));
        };
        let (mut next, mut leaves) = (0, 0);
        for (b, (old, &rank)) in base.states.iter().zip(&base.ranks).enumerate() {
            while let Some(new) = enters.get(next).filter(|new| new.0 < rank) {
                enter(&mut out, new, b);
                next += 1;
            }
            let body = bodies.get(rank as usize)?;
            if !same_id(body.state.id, old.id) {
                return None;
            }
            let d2 = distance2(body.pos);
            // Beyond the outer reach, or nowhere (a position that is not a number), as the
            // id merge's marks tell it.
            let within = d2 <= outer2;
            if !within {
                let item = Item {
                    act: Act::Leave,
                    base: b as u32,
                    now: u32::MAX,
                };
                out.push(item, Terms::FIRST);
                leaves += 1;
                continue;
            }
            let state = &body.state;
            let Some(act) = Act::between(old, state) else {
                continue;
            };
            let item = Item {
                act,
                base: b as u32,
                now: body.place,
            };
            out.push(item, Terms::of(key(state.id) == me, d2, Some(old), state));
        }
        for new in &enters[next..] {
            enter(&mut out, new, base.states.len());
        }
        let count = out.len;
        self.rank_items(count);
        Some((count, leaves))
    }
}
