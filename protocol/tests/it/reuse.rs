//! The allocation-reusing receive path gives exactly the results of the plain one:
//! `View::apply_into` those of `View::apply` (the same view or the same error) on random
//! and malformed snapshots, and `ViewHistory::receive` those of applying each snapshot to
//! its baseline with `View::apply`; `decode_snapshot_datagram` those of `decode_datagram`
//! on valid, damaged and random datagrams.

use std::collections::VecDeque;

use proptest::collection::vec;
use proptest::prelude::*;
use protocol::codec::{decode_datagram, decode_snapshot_datagram, encode_datagram};
use protocol::{
    ApplyScratch, Change, EntityKind, EntityState, NetId, QPos, Received, ServerDatagram, Snapshot,
    View, ViewHistory,
};

use crate::strategies::{change_of, motion, server_datagram};

/// Ids from a small pool, so that lists repeat ids and name ids the view does (not) hold.
fn pooled_id() -> impl Strategy<Value = NetId> {
    (0..10u32, 0..2u32).prop_map(|(index, generation)| NetId { index, generation })
}

/// Mostly small coordinates and deltas, sometimes extreme ones, so that some deltas
/// overflow.
fn coordinate() -> impl Strategy<Value = i32> + Clone {
    prop_oneof![8 => -1_000..1_000i32, 1 => Just(i32::MAX - 3), 1 => Just(i32::MIN + 3)]
}

fn entity() -> impl Strategy<Value = EntityState> {
    (pooled_id(), coordinate(), coordinate(), motion()).prop_map(|(id, x_cm, y_cm, motion)| {
        EntityState {
            id,
            kind: EntityKind::Npc,
            radius_cm: 40,
            pos: QPos { x_cm, y_cm },
            motion,
        }
    })
}

/// A snapshot of random lists; with `sorted`, each list in id order (repeats kept), as a
/// server sends its leaves, to take the path that finds a list already sorted.
fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        vec(entity(), 0..6),
        vec(change_of(pooled_id(), coordinate()), 0..8),
        vec(pooled_id(), 0..6),
        any::<bool>(),
    )
        .prop_map(|(mut entered, mut changed, mut left, sorted)| {
            if sorted {
                entered.sort_by_key(|e| e.id);
                changed.sort_by_key(|c| c.id);
                left.sort();
            }
            Snapshot {
                entered,
                changed,
                left,
                ..Snapshot::default()
            }
        })
}

/// A snapshot that fits the view: the view's own entities leaving, changing (by small
/// deltas) and entering again after leaving, and new ones entering.
fn fitting(view: &View, picks: &[(usize, u8)], new: &[EntityState]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    let held = view.entities();
    for &(at, what) in picks.iter().filter(|_| !held.is_empty()) {
        let entity = held[at % held.len()];
        let id = entity.id;
        if snapshot.left.contains(&id) || snapshot.changed.iter().any(|c| c.id == id) {
            continue;
        }
        match what % 3 {
            0 => snapshot.left.push(id),
            1 => snapshot.changed.push(Change {
                id,
                dx_cm: i32::from(what) - 128,
                dy_cm: 1,
                motion: None,
            }),
            _ => {
                snapshot.left.push(id);
                snapshot.entered.push(entity);
            }
        }
    }
    for entity in new {
        if view.get(entity.id).is_none() && snapshot.entered.iter().all(|e| e.id != entity.id) {
            snapshot.entered.push(*entity);
        }
    }
    snapshot
}

proptest! {
    #![proptest_config(crate::config(512))]

    /// Snapshots in a row, through one scratch and one output view whose memory carries
    /// over from case to case: random snapshots (mostly refused: unknown ids, repeats,
    /// entries already in view, overflows) and snapshots that fit.
    #[test]
    fn apply_into_matches_apply(
        entities in vec(entity(), 0..12),
        random in vec(snapshot(), 1..6),
        picks in vec((any::<usize>(), any::<u8>()), 0..8),
        new in vec(entity(), 0..4),
    ) {
        let mut view = View::from_entities(entities);
        let mut scratch = ApplyScratch::default();
        let mut out = View::from_entities(new.clone());
        for (step, snapshot) in random.iter().enumerate() {
            let snapshot = if step % 2 == 0 {
                snapshot.clone()
            } else {
                fitting(&view, &picks, &new)
            };
            let expected = view.apply(&snapshot);
            let got = view.apply_into(&snapshot, &mut scratch, &mut out);
            match expected {
                Ok(expected) => {
                    prop_assert_eq!(got, Ok(()));
                    prop_assert_eq!(&out, &expected);
                    view = expected;
                }
                Err(err) => {
                    prop_assert_eq!(got, Err(err));
                    prop_assert!(out.is_empty());
                }
            }
        }
    }

    /// `ViewHistory::receive` against a model that applies each snapshot to its baseline
    /// with `View::apply` and keeps the newest `ViewHistory::KEPT` views, less those older
    /// than the baseline of the last snapshot applied (never baselines again).
    #[test]
    fn history_matches_applying_each_snapshot(
        steps in vec((1..6u64, proptest::option::of(0..4u64), snapshot(), any::<bool>()), 1..80),
        picks in vec((any::<usize>(), any::<u8>()), 0..8),
        new in vec(entity(), 0..4),
    ) {
        let mut history = ViewHistory::new();
        let mut model: VecDeque<(u64, View)> = VecDeque::new();
        let mut tick: u64 = 0;
        for (advance, back, random, fits) in steps {
            // Mostly forward, sometimes a tick already received.
            tick = if advance == 1 { tick.saturating_sub(1) } else { tick + advance - 1 };
            let newest = model.back().map(|(t, _)| *t);
            let baseline_tick = back.and_then(|back| newest.map(|newest| newest.saturating_sub(back * 9)));
            let baseline = match baseline_tick {
                None => Some(View::new()),
                Some(t) => model.iter().find(|(held, _)| *held == t).map(|(_, v)| v.clone()),
            };
            let mut snapshot = match (&baseline, fits) {
                (Some(view), true) => fitting(view, &picks, &new),
                _ => random,
            };
            snapshot.tick = tick;
            snapshot.baseline_tick = baseline_tick;
            let expected = if newest.is_some_and(|newest| newest >= tick) {
                Ok(Received::Stale)
            } else if let Some(baseline) = baseline {
                baseline.apply(&snapshot).map(|view| {
                    model.push_back((tick, view));
                    if model.len() > ViewHistory::KEPT {
                        model.pop_front();
                    }
                    model.retain(|(held, _)| *held >= baseline_tick.unwrap_or(0));
                    Received::Applied
                })
            } else {
                Ok(Received::MissingBaseline)
            };
            prop_assert_eq!(history.receive(&snapshot), expected);
            prop_assert_eq!(history.newest(), model.back().map(|(t, v)| (*t, v)));
            prop_assert_eq!(history.len(), model.len());
        }
    }
}

proptest! {
    // Each case decodes a datagram some fourteen times per byte.
    #![proptest_config(crate::config(64))]

    /// The hand-written snapshot decoder, into a snapshot that still holds the previous
    /// decode's lists, against bincode's: a valid datagram; the same with each byte in turn
    /// set to values that matter to the format (tags, small variant indices, varint
    /// markers), cut short at each length, or with a byte more; and a random body (integers
    /// written wider than needed, unknown variants and tags, lists longer than the bytes).
    #[test]
    fn snapshot_decoder_matches_decode_datagram(
        datagram in server_datagram(),
        extra in any::<u8>(),
        random in vec(prop_oneof![0..8u8, 248..=255u8, any::<u8>()], 0..40),
    ) {
        let Ok(bytes) = encode_datagram(&datagram) else {
            return Ok(());
        };
        let mut cases = vec![bytes.clone()];
        for at in 0..bytes.len() {
            for byte in [0, 1, 2, 3, 4, 5, 6, 250, 251, 252, 253, 254, 255] {
                let mut edited = bytes.clone();
                edited[at] = byte;
                cases.push(edited);
            }
            cases.push(bytes[..at].to_vec());
        }
        cases.push([&bytes[..], &[extra]].concat());
        cases.push([&[bytes[0], 0], &random[..]].concat());
        let ServerDatagram::Snapshot(mut into) = datagram;
        for case in cases {
            let expected = decode_datagram::<ServerDatagram>(&case);
            let got = decode_snapshot_datagram(&case, &mut into);
            match expected {
                Ok(ServerDatagram::Snapshot(expected)) => {
                    prop_assert_eq!(got, Ok(()));
                    prop_assert_eq!(&into, &expected);
                }
                Err(err) => prop_assert_eq!(got, Err(err)),
            }
        }
    }
}
