//! The items of a viewer whose baseline still matches the frame's ranks: its members are
//! looked up by the rank the baseline keeps for each (checked against the id found there,
//! unless the baseline was made from a frame of the same roster), and the view's circle is
//! scanned only for bodies that are not members yet. No id is merged: the walk goes down
//! the baseline, with the bodies about to enter sorted by rank in between. The walk and the
//! scan keep what they find without a branch on it (an unchanged member, a body on the
//! circle's edge): on a moving crowd such branches go either way at random, and their
//! mispredictions cost more than the writes that replace them.
//!
//! The items, their order and their terms are exactly those [`Plan::merge`] makes of the
//! same inputs; when a rank no longer holds
//! its member (bodies were added to or removed from the world since the baseline was
//! made), [`Plan::merge_members`] gives up and the caller merges ids instead.

use protocol::NetId;

use super::{Act, Item, Known, Merged, Out, Plan, Terms, same_id};
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
    /// Writes the items of `members` and returns what it wrote, or `None` when the
    /// baseline's ranks do not name its members in this frame. A baseline made from a
    /// frame of this frame's roster ([`crate::Frame::follow`]) is not checked member by
    /// member: the roster says who each rank is.
    pub(crate) fn merge_members(&mut self, members: Members<'_>) -> Option<Merged> {
        if members.base.roster == Some(members.frame.roster) {
            self.walk_members::<false>(members)
        } else {
            self.walk_members::<true>(members)
        }
    }

    /// [`Plan::merge_members`], checking that each member's rank names it in this frame
    /// (`CHECKED`), or relying on the baseline's roster being the frame's.
    #[inline(always)]
    fn walk_members<const CHECKED: bool>(&mut self, members: Members<'_>) -> Option<Merged> {
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
        // Room for every body of the frame, and one more: each body the scan visits is
        // written, and kept only if it enters (no branch to mispredict on the circle's edge).
        if self.enters.len() <= frame.len() {
            self.enters.resize(frame.len() + 1, (0, 0, 0.0));
        }
        let enters = &mut self.enters[..];
        let mut entering = 0;
        frame.near(at, radius, |place, rank, d2| {
            let enters_view = (d2 <= radius2) & (is_member(members, rank) == 0);
            enters[entering] = (rank, place, d2);
            entering += usize::from(enters_view);
        });
        // The viewer's own character is in view up to the outer reach.
        let my_rank = frame.rank_of(me);
        if let Some(rank) = my_rank {
            let body = &bodies[rank as usize];
            let d2 = distance2(body.pos);
            if is_member(members, rank) == 0 && d2 > radius2 && d2 <= outer2 {
                enters[entering] = (rank, body.place, d2);
                entering += 1;
            }
        }
        let enters = &mut enters[..entering];
        enters.sort_unstable_by_key(|&(rank, _, _)| rank);
        let most = base.states.len() + entering;
        self.reserve(most);
        let enters = &self.enters[..entering];
        let mut out = Out {
            items: &mut self.items,
            terms: &mut self.terms,
            len: 0,
        };
        let my_rank = my_rank.unwrap_or(u32::MAX);
        let enter = |out: &mut Out<'_>, &(rank, place, d2): &(u32, u32, f32), at_base: usize| {
            let state = &bodies[rank as usize].state;
            let item = Item {
                act: Act::Enter,
                base: at_base as u32,
                now: place,
            };
            out.push(item, Terms::of(rank == my_rank, d2, None, state));
        };
        let (mut next, mut leaves, mut replaces) = (0, 0, 0);
        for (b, (old, &rank)) in base.states.iter().zip(&base.ranks).enumerate() {
            while let Some(new) = enters.get(next).filter(|new| new.0 < rank) {
                enter(&mut out, new, b);
                next += 1;
            }
            let body = bodies.get(rank as usize)?;
            if CHECKED && !same_id(body.state.id, old.id) {
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
            // Without the check, the roster says the kind and radius are the same, and an
            // unchanged member is written but not kept (without a branch: how many members
            // stand still varies from one to the next).
            let (act, changed) = if CHECKED {
                match Act::between(old, state) {
                    Some(act) => (act, true),
                    None => continue,
                }
            } else {
                (Act::Change, Act::moved(old, state))
            };
            replaces += usize::from(act == Act::Replace);
            let item = Item {
                act,
                base: b as u32,
                now: body.place,
            };
            let terms = Terms::of(rank == my_rank, d2, Some(old), state);
            out.push_if(item, terms, changed);
        }
        for new in &enters[next..] {
            enter(&mut out, new, base.states.len());
        }
        let count = out.len;
        self.rank_items(count);
        Some(Merged {
            count,
            leaves,
            replaces,
        })
    }
}
