//! Which entities a snapshot looks at. A datagram holds a fraction of what changes in a
//! crowd in view (800 bytes carry about 150 of 630 moving entities), so looking at every
//! entity in view every tick, only to leave most of them out, is work spent on nothing.
//! Instead each member of the client's view is looked at on its own cadence, set by how
//! far from the viewer the client holds it: every tick within 8 m, every second tick
//! within 16 m, every fourth within 24 m, every eighth beyond (0.4 s). A member's ticks are
//! spread by its id, so each tick looks at about a quarter of the crowd in view. A member
//! not looked at is held as the baseline has it: the snapshot leaves it out, as it leaves
//! out an unchanged one. The viewer's own character is looked at every tick, and so is a
//! member that is gone from the world (it leaves at once).
//!
//! The periods count along each chain of baselines: a snapshot against the baseline of
//! `g` ticks before looks at every member one of whose ticks falls in those `g` ticks. So
//! a client that acknowledges late, or every other tick, gets each member at least as
//! often, and the cadence saves less work for it: against a baseline three ticks back, a
//! snapshot looks at about 60% of the crowd.
//!
//! Entities enter the view when the view's circle is scanned for them: every
//! [`SCAN_EVERY`] ticks (0.2 s at 20 Hz), spread by the viewer's id; on every snapshot
//! built against no baseline (the first ones, or after acknowledgements stopped); and on
//! every snapshot whose baseline's snapshot left entering entities out for want of room,
//! so that a view fills up as fast as the datagrams allow.
//!
//! Both rules go only by what the snapshot's inputs say (its tick and its baseline's, the
//! baseline's states and whether its snapshot left entering entities out, the viewer's id
//! and position), so a test or another server can tell which entities a snapshot
//! considered; within those, the ranking and the byte budget decide what is sent, as
//! before. What it costs the picture, and saves, is in `docs/benchmarks.md`.

use protocol::{EntityState, NetId};

/// Ticks between scans of a view's circle for entities that enter it.
pub const SCAN_EVERY: u64 = 4;

/// Squared distances (cm²: the members' positions are in centimetres) beyond which a
/// member is looked at every 2nd, 4th, 8th tick: 8, 16 and 24 m.
const BANDS_CM2: [f32; 3] = [800.0 * 800.0, 1600.0 * 1600.0, 2400.0 * 2400.0];

/// Where in its cadence an entity's ticks fall: 0 to 7, spread by the id's index.
#[inline(always)]
fn phase(id: NetId) -> u32 {
    id.index.wrapping_mul(0x9e37_79b9) >> 29
}

/// Whether a snapshot of `tick` built against the baseline of `tick - gap`, for a viewer
/// at `at` (metres), looks at `member`, an entity of that baseline held at `member.pos`:
/// whether one of the member's ticks falls after the baseline, up to this one. (A client
/// that acknowledges two ticks late gets snapshots on two chains of baselines, odd ticks
/// and even ones; each chain must look at each member once per period.) The viewer's own
/// character is always looked at; so is a member gone from the world (the caller knows
/// which).
#[inline(always)]
pub fn due(tick: u64, gap: u64, member: &EntityState, at: (f32, f32)) -> bool {
    // In centimetres, as the member's position is (the viewer's is scaled once for a
    // whole view's members).
    let dx = member.pos.x_cm as f32 - at.0 * 100.0;
    let dy = member.pos.y_cm as f32 - at.1 * 100.0;
    let d2 = dx * dx + dy * dy;
    // Period minus one: 0, 1, 3 or 7 (the bands are nested). A position that is not a
    // number compares false everywhere: every tick.
    let mask = u32::from(d2 > BANDS_CM2[0])
        | u32::from(d2 > BANDS_CM2[1]) << 1
        | u32::from(d2 > BANDS_CM2[2]) << 2;
    // Ticks since the member's last tick, up to this one (periods divide 2^32: the low
    // bits of the tick tell).
    let since = (tick as u32).wrapping_add(phase(member.id)) & mask;
    // Compared in 32 bits (`since` is below 8, so a gap of 8 or more looks at every
    // member): the loop over a view's members then stays in 32-bit lanes.
    since < gap.min(8) as u32
}

/// Whether a snapshot of `tick` for the viewer whose character is `me`, built against the
/// baseline of `tick - gap` (`None`: against no baseline), scans the view's circle for
/// entities that enter: whether one of the viewer's scan ticks falls after the baseline,
/// up to this one, or the baseline's snapshot left entering entities out for want of room
/// (`backlog`: a view filling up scans every tick until it is full).
#[inline]
pub fn scans(tick: u64, gap: Option<u64>, backlog: bool, me: NetId) -> bool {
    gap.is_none_or(|gap| backlog || tick.wrapping_add(u64::from(phase(me))) % SCAN_EVERY < gap)
}

/// Ticks from a snapshot's baseline to it (at least one), `None` without a baseline.
#[inline]
pub fn gap(tick: u64, baseline_tick: Option<u64>) -> Option<u64> {
    baseline_tick.map(|b| tick.saturating_sub(b).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::npc_state as at;

    /// Each band's members are looked at once per period, whatever their phase.
    #[test]
    fn each_band_looks_once_per_period() {
        for (distance, period) in [(5.0, 1), (12.0, 2), (20.0, 4), (30.0, 8)] {
            for index in 0..64 {
                let member = at(index, 100.0 + distance, 100.0);
                let looks = (0..64)
                    .filter(|&t| due(t, 1, &member, (100.0, 100.0)))
                    .count();
                assert_eq!(looks, 64 / period, "{distance} m, id {index}");
                // Against baselines two ticks back, on either chain of baselines (odd
                // ticks, even ticks), at least once per period.
                for chain in 0..2 {
                    let looks = (0..64)
                        .filter(|&t| t % 2 == chain && due(t, 2, &member, (100.0, 100.0)))
                        .count();
                    assert!(looks >= 64 / period / 2, "{distance} m, chain {chain}");
                }
            }
        }
    }

    /// Phases spread a band over its period: no tick looks at all of them.
    #[test]
    fn phases_spread_over_the_period() {
        let members: Vec<EntityState> = (0..800).map(|i| at(i, 130.0, 100.0)).collect();
        for tick in 0..8 {
            let looked = members
                .iter()
                .filter(|m| due(tick, 1, m, (100.0, 100.0)))
                .count();
            assert!((60..140).contains(&looked), "tick {tick}: {looked} of 800");
        }
    }

    #[test]
    fn scans_every_fourth_tick_after_the_baseline_or_without_one() {
        let me = NetId {
            index: 7,
            generation: 0,
        };
        assert_eq!((0..16).filter(|&t| scans(t, Some(1), false, me)).count(), 4);
        assert_eq!((0..16).filter(|&t| scans(t, Some(2), false, me)).count(), 8);
        assert!((0..16).all(|t| scans(t, None, false, me)));
        assert!((0..16).all(|t| scans(t, Some(1), true, me)));
    }
}
