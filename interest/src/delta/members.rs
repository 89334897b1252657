//! The items of a viewer whose baseline still matches the frame's ranks: the members the
//! snapshot looks at ([`crate::schedule::due`]) are looked up by the rank the baseline
//! keeps for each (every member's rank is checked against the id found there, unless the
//! baseline was made from a frame of the same roster), and on the ticks the view's circle
//! is scanned ([`crate::schedule::scans`]), only bodies that are not members yet are kept.
//! No id is merged: the walk goes down the members looked at, in runs between the bodies
//! about to enter (sorted by rank). The walk and the scan keep what they find without a
//! branch on it (an unchanged member, a body on the circle's edge): on a moving crowd such
//! branches go either way at random, and their mispredictions cost more than the writes
//! that replace them.
//!
//! The items, their order and their terms are exactly those [`Plan::merge`] makes of the
//! same inputs; when a rank no longer holds
//! its member (bodies were added to or removed from the world since the baseline was
//! made), [`Plan::merge_members`] gives up and the caller merges ids instead.

use protocol::NetId;

use super::{Act, Item, Known, Merged, Out, Plan, Terms, key, same_id};
use crate::frame::Frame;
use crate::schedule;

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
    /// The snapshot's tick and the ticks since its baseline: which members it looks at
    /// ([`schedule::due`]).
    pub tick: u64,
    pub gap: u64,
    /// Whether it scans the view's circle for entering bodies ([`schedule::scans`]).
    pub scan: bool,
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
            tick,
            gap,
            scan,
        } = members;
        if base.ranks.len() != base.states.len() {
            return None;
        }
        let bodies = &frame.by_rank;
        // Members whose kind or radius changed, looked at this tick or not: the new view's
        // ranks name its members in the frame's roster only if all of them are sent.
        let mut replaces = 0;
        if CHECKED {
            // Every member, looked at this tick or not, must still be the body its rank
            // names: a scan tells entering bodies apart from members by rank.
            for (old, &rank) in base.states.iter().zip(&base.ranks) {
                let body = &bodies.get(rank as usize)?.state;
                if !same_id(body.id, old.id) {
                    return None;
                }
                replaces += usize::from(Act::between(old, body) == Some(Act::Replace));
            }
        }
        let distance2 = |(x, y): (f32, f32)| (x - at.0).powi(2) + (y - at.1).powi(2);
        let is_member = |bits: &[u64], rank: u32| bits[rank as usize / 64] >> (rank % 64) & 1;
        let radius2 = radius * radius;
        // Room for every body of the frame, and one more: each body the scan visits is
        // written, and kept only if it enters (no branch to mispredict on the circle's edge).
        if self.enters.len() <= frame.len() {
            self.enters.resize(frame.len() + 1, (0, 0.0));
        }
        let enters = &mut self.enters[..];
        let mut entering = 0;
        if scan {
            frame.near(at, radius, |rank, d2| {
                let enters_view = (d2 <= radius2) & (is_member(members, rank) == 0);
                enters[entering] = (rank, d2);
                entering += usize::from(enters_view);
            });
        }
        // The viewer's own character is in view up to the outer reach, scan or not.
        let my_rank = frame.rank_of(me);
        if let Some(rank) = my_rank {
            let body = &bodies[rank as usize];
            let d2 = distance2(body.pos);
            let scanned = scan && d2 <= radius2;
            if is_member(members, rank) == 0 && !scanned && d2 <= outer2 {
                enters[entering] = (rank, d2);
                entering += 1;
            }
        }
        let enters = &mut enters[..entering];
        enters.sort_unstable_by_key(|&(rank, _)| rank);
        // The members looked at this tick, by place in the baseline: a flag for each (in a
        // loop without branches or stores that depend on one another), then the places of
        // those flagged, eight flags at a time ([`places_of_flagged`], which writes up to
        // eight places past the last member).
        let count = base.states.len();
        if self.due.len() < count + 8 {
            self.due.resize(count + 8, 0);
            self.flags.resize(count + 8, 0);
        }
        let flags = &mut self.flags[..count];
        for (flag, old) in flags.iter_mut().zip(&base.states) {
            *flag = u8::from(schedule::due(tick, gap, old, at));
        }
        if let Ok(mine) = base
            .states
            .binary_search_by_key(&key(me), |old| key(old.id))
        {
            flags[mine] = 1;
        }
        let looked = places_of_flagged(flags, &mut self.due);
        let most = looked + entering;
        self.reserve(most);
        let enters = &self.enters[..entering];
        let mut out = Out {
            items: &mut self.items,
            terms: &mut self.terms,
            len: 0,
        };
        let my_rank = my_rank.unwrap_or(u32::MAX);
        // An entering body goes before the first member of a higher rank (the ranks name
        // the members, so they rise with their ids).
        let enter = |out: &mut Out<'_>, &(rank, d2): &(u32, f32)| {
            let state = &bodies[rank as usize].state;
            let item = Item {
                act: Act::Enter,
                base: base.ranks.partition_point(|&r| r < rank) as u32,
                now: rank,
            };
            out.push(item, Terms::of(rank == my_rank, d2, None, state));
        };
        let mut leaves = 0;
        // One member looked at: an item if it leaves or changed (written either way, kept
        // without a branch on whether it changed). A macro, not a closure or a function,
        // so that each loop below holds its body inline (a function of the same body, even
        // inlined, came out 1.7 to 3.0% more instructions a tick); its `continue` goes to
        // the loop it is written in.
        macro_rules! member {
            ($out:expr, $b:expr) => {{
                let (out, b): (&mut Out<'_>, u32) = ($out, $b);
                let (old, rank) = (&base.states[b as usize], base.ranks[b as usize]);
                let body = bodies.get(rank as usize)?;
                let d2 = distance2(body.pos);
                // Beyond the outer reach, or nowhere (a position that is not a number), as the
                // id merge's marks tell it.
                let within = d2 <= outer2;
                if !within {
                    let item = Item {
                        act: Act::Leave,
                        base: b,
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
                let item = Item {
                    act,
                    base: b,
                    now: rank,
                };
                let terms = Terms::of(rank == my_rank, d2, Some(old), state);
                out.push_if(item, terms, changed);
            }};
        }
        // The members looked at in runs between the bodies entering (most snapshots have
        // none): each entering body goes before the first member of a higher rank.
        let due = &self.due[..looked];
        let mut from = 0;
        for new in enters {
            let run = from + due[from..].partition_point(|&b| base.ranks[b as usize] < new.0);
            for &b in &due[from..run] {
                member!(&mut out, b);
            }
            enter(&mut out, new);
            from = run;
        }
        for &b in &due[from..] {
            member!(&mut out, b);
        }
        let count = out.len;
        self.rank_items(count);
        Some(Merged {
            count,
            leaves,
            enters: entering,
            replaces,
        })
    }
}

/// For each set of eight flags (as the bits of a byte), the places of those set, in
/// order, then how many are set.
const PLACES: [([u32; 8], u8); 256] = {
    let mut table = [([0; 8], 0); 256];
    let mut bits = 0;
    while bits < 256 {
        let mut count = 0;
        let mut place = 0;
        while place < 8 {
            if bits >> place & 1 == 1 {
                table[bits].0[count] = place as u32;
                count += 1;
            }
            place += 1;
        }
        table[bits].1 = count as u8;
        bits += 1;
    }
    table
};

/// Writes the places of the flags that are 1 (each flag 0 or 1) at the start of `places`
/// (which holds at least eight more than `flags`) and returns how many there are. Eight
/// flags at a time, without a branch on them: their eight bytes packed into the bits of
/// one by a multiplication, that byte's places read from a table and all eight written,
/// the count kept.
fn places_of_flagged(flags: &[u8], places: &mut [u32]) -> usize {
    let mut looked = 0;
    let chunks = flags.chunks_exact(8);
    let rest = chunks.remainder();
    for (c, chunk) in chunks.enumerate() {
        // Eight bytes, as `chunks_exact` promises (the default is never taken).
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        // Flag `i` (bit 8i) lands on bit 56 + i; no other product reaches the top byte.
        let packed = (word.wrapping_mul(0x0102_0408_1020_4080) >> 56) as usize;
        let (offsets, count) = PLACES[packed];
        let first = (c * 8) as u32;
        for (place, offset) in places[looked..looked + 8].iter_mut().zip(offsets) {
            *place = first + offset;
        }
        looked += usize::from(count);
    }
    let first = flags.len() - rest.len();
    for (b, &flag) in rest.iter().enumerate() {
        places[looked] = (first + b) as u32;
        looked += usize::from(flag);
    }
    looked
}

#[cfg(test)]
mod tests {
    use super::places_of_flagged;

    /// The places of the set flags, in order, for every pattern of a few flags and for
    /// long random runs (lengths that are and are not multiples of eight).
    #[test]
    fn places_of_flagged_lists_the_set_flags_in_order() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut cases: Vec<Vec<u8>> = (0..1u32 << 10)
            .map(|bits| (0..10).map(|i| (bits >> i & 1) as u8).collect())
            .collect();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 640, 643] {
            cases.push(
                (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        u8::from(seed.is_multiple_of(3))
                    })
                    .collect(),
            );
        }
        for flags in cases {
            let mut places = vec![u32::MAX; flags.len() + 8];
            let looked = places_of_flagged(&flags, &mut places);
            let want: Vec<u32> = (0..flags.len() as u32)
                .filter(|&b| flags[b as usize] == 1)
                .collect();
            assert_eq!(&places[..looked], &want[..], "flags {flags:?}");
        }
    }
}
