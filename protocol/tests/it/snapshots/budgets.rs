//! How `build_snapshot` spends a byte budget on random entities and on crowds that fill
//! a datagram, and the inputs `View::apply` and `build_snapshot` refuse.

use super::*;

/// A strategy for positions far from the ends of `i32`, so that the difference of two
/// stays in range (the documented domain: ±21,000 km).
fn safe_pos() -> impl Strategy<Value = QPos> {
    let cm = -(1 << 29)..(1 << 29);
    (cm.clone(), cm).prop_map(|(x_cm, y_cm)| QPos { x_cm, y_cm })
}

/// Entities with ids from a pool of 40 slots and 2 generations, so that a baseline and a
/// current set overlap.
fn pooled_entity() -> impl Strategy<Value = EntityState> {
    (
        0..40u32,
        0..2u32,
        kind(),
        prop_oneof![Just(40u16), any::<u16>()],
        prop_oneof![
            safe_pos(),
            (-50..50i32, -50..50i32).prop_map(|(x_cm, y_cm)| QPos { x_cm, y_cm })
        ],
        motion(),
    )
        .prop_map(
            |(index, generation, kind, radius_cm, pos, motion)| EntityState {
                id: NetId { index, generation },
                kind,
                radius_cm,
                pos,
                motion,
            },
        )
}

/// Current entities, sorted by id without repeats, with priorities that tie often.
fn candidates() -> impl Strategy<Value = Vec<Candidate>> {
    vec((pooled_entity(), 0..20u8), 0..20).prop_map(|entities| {
        let states: BTreeMap<NetId, (EntityState, u8)> = entities
            .into_iter()
            .map(|(state, priority)| (state.id, (state, priority)))
            .collect();
        states
            .into_values()
            .map(|(state, priority)| Candidate {
                state,
                priority: f32::from(priority),
            })
            .collect()
    })
}

/// The smallest budget that holds a snapshot with this header (the error names it).
fn needed_budget(header: SnapshotHeader) -> usize {
    match build_snapshot(header, &View::new(), &[], 0) {
        Err(BuildError::BudgetTooSmall { needed, .. }) => needed,
        other => panic!("a budget of 0 bytes was accepted: {other:?}"),
    }
}

proptest! {
    #![proptest_config(crate::config(1024))]

    /// With room for everything, every snapshot the client applies gives exactly the
    /// world's state of its tick, through loss, delay and lost acknowledgements.
    #[test]
    fn delta_reconstructs_the_world(steps in steps()) {
        simulate(&steps, MAX_DATAGRAM_BYTES, true)?;
    }

    /// With a small budget, client and server agree on every view, snapshots keep the
    /// budget and spend it nearest first, and the client catches up once the world is
    /// still.
    #[test]
    fn small_budgets_agree_and_converge(steps in steps(), budget in 36..=160usize) {
        simulate(&steps, budget, false)?;
    }

    /// The fixed small budget the server might use.
    #[test]
    fn budget_of_200_bytes(steps in steps()) {
        simulate(&steps, 200, false)?;
    }

    /// Any baseline and current set, with wide ids and positions: the snapshot takes the
    /// baseline to the view the server expects, within any budget that holds its header,
    /// and to the current set itself when the budget holds everything.
    #[test]
    fn any_delta_applies_to_the_promised_view(
        baseline in vec(pooled_entity(), 0..20),
        current in candidates(),
        tick in any::<u64>(),
        baseline_tick in proptest::option::of(any::<u64>()),
        last_input_seq in any::<u32>(),
        budget in prop_oneof![Just(MAX_DATAGRAM_BYTES), 0..=MAX_DATAGRAM_BYTES],
    ) {
        let baseline = View::from_entities(baseline);
        let header = SnapshotHeader { tick, baseline_tick, last_input_seq };
        let needed = needed_budget(header);
        match build_snapshot(header, &baseline, &current, budget) {
            Ok((snapshot, view)) => {
                prop_assert!(budget >= needed);
                prop_assert_eq!(snapshot.tick, tick);
                prop_assert_eq!(snapshot.baseline_tick, baseline_tick);
                prop_assert_eq!(snapshot.last_input_seq, last_input_seq);
                let bytes = encode_datagram(&ServerDatagram::Snapshot(snapshot.clone()))
                    .map_err(fail)?;
                prop_assert!(bytes.len() <= budget);
                prop_assert_eq!(&baseline.apply(&snapshot).map_err(fail)?, &view);
                check_budget_spending(&baseline, &current, &snapshot, bytes.len(), budget)?;
                if budget == MAX_DATAGRAM_BYTES {
                    let states = current.iter().map(|c| c.state).collect();
                    prop_assert_eq!(view, View::from_entities(states));
                }
            }
            Err(err) => {
                prop_assert!(budget < needed);
                prop_assert_eq!(err, BuildError::BudgetTooSmall { budget, needed });
            }
        }
    }

    /// `View::apply` refuses a snapshot that does not fit its view: leaving or changing an
    /// entity it does not hold, entering one it does, and any id listed twice.
    #[test]
    fn apply_refuses_snapshots_of_another_baseline(
        entities in vec(pooled_entity(), 0..10),
        other in pooled_entity(),
        list in 0..3usize,
    ) {
        let view = View::from_entities(entities);
        let id = other.id;
        let change = Change { id, dx_cm: 1, dy_cm: 0, motion: None };
        if let Some(&held) = view.get(id) {
            let entered = Snapshot { entered: vec![other], ..Snapshot::default() };
            prop_assert_eq!(view.apply(&entered), Err(ApplyError::EnteredTwice(id)));
            // Leaving and entering in one snapshot is how an entity is replaced.
            let replaced = Snapshot { left: vec![id], entered: vec![other], ..Snapshot::default() };
            let after = view.apply(&replaced).map_err(fail)?;
            prop_assert_eq!(after.get(id), Some(&other));
            prop_assert_eq!(after.len(), view.len());
            // Changing an entity that leaves in the same snapshot is a contradiction.
            let both = Snapshot { left: vec![id], changed: vec![change], ..Snapshot::default() };
            prop_assert_eq!(view.apply(&both), Err(ApplyError::ChangedUnknown(id)));
            let moved = view.apply(&Snapshot { changed: vec![change], ..Snapshot::default() })
                .map_err(fail)?;
            prop_assert_eq!(moved.get(id).map(|e| e.pos.x_cm), Some(held.pos.x_cm + 1));
        } else {
            let left = Snapshot { left: vec![id], ..Snapshot::default() };
            prop_assert_eq!(view.apply(&left), Err(ApplyError::LeftUnknown(id)));
            let changed = Snapshot { changed: vec![change], ..Snapshot::default() };
            prop_assert_eq!(view.apply(&changed), Err(ApplyError::ChangedUnknown(id)));
            let entered = view
                .apply(&Snapshot { entered: vec![other], ..Snapshot::default() })
                .map_err(fail)?;
            prop_assert_eq!(entered.get(id), Some(&other));
        }
        // Duplicates are refused whatever the view holds.
        let twice = match list {
            0 => Snapshot { left: vec![id, id], ..Snapshot::default() },
            1 => Snapshot { changed: vec![change, change], ..Snapshot::default() },
            _ => Snapshot { entered: vec![other, other], ..Snapshot::default() },
        };
        prop_assert_eq!(view.apply(&twice), Err(ApplyError::Duplicate(id)));
    }

    /// `build_snapshot` refuses current entities out of order or repeated, naming the
    /// first id out of place.
    #[test]
    fn build_refuses_unsorted_entities(current in candidates(), at in any::<usize>(), swap in any::<bool>()) {
        prop_assume!(current.len() >= 2);
        let at = at % (current.len() - 1);
        let mut broken = current.clone();
        let expected = current[at].state.id;
        if swap {
            broken.swap(at, at + 1);
        } else {
            broken.insert(at + 1, current[at]);
        }
        let header = SnapshotHeader { tick: 1, baseline_tick: None, last_input_seq: 0 };
        prop_assert_eq!(
            build_snapshot(header, &View::new(), &broken, MAX_DATAGRAM_BYTES),
            Err(BuildError::Unsorted(expected))
        );
    }

    /// The smallest budget holds an empty snapshot of the header and nothing more; a
    /// byte less is refused.
    #[test]
    fn build_refuses_budgets_below_an_empty_snapshot(
        tick in any::<u64>(),
        baseline_tick in proptest::option::of(any::<u64>()),
        last_input_seq in any::<u32>(),
        current in candidates(),
    ) {
        let header = SnapshotHeader { tick, baseline_tick, last_input_seq };
        let needed = needed_budget(header);
        let empty = Snapshot { tick, baseline_tick, last_input_seq, ..Snapshot::default() };
        prop_assert!(needed > encoded_len(&ServerDatagram::Snapshot(empty.clone())));
        prop_assert_eq!(
            build_snapshot(header, &View::new(), &current, needed - 1),
            Err(BuildError::BudgetTooSmall { budget: needed - 1, needed })
        );
        let (snapshot, view) = build_snapshot(header, &View::new(), &current, needed)
            .map_err(fail)?;
        prop_assert_eq!(snapshot, empty);
        prop_assert!(view.is_empty());
    }
}

/// Entities near the origin with small ids: each takes few bytes on the wire but a full
/// `EntityState` in memory, the most entities one datagram can carry.
fn crowd() -> impl Strategy<Value = Vec<Candidate>> {
    vec(
        (0..400u32, 0..2u32, kind(), -60..60i32, -60..60i32, motion()),
        0..300,
    )
    .prop_map(|entities| {
        let states: BTreeMap<NetId, EntityState> = entities
            .into_iter()
            .map(|(index, generation, kind, x_cm, y_cm, motion)| {
                let id = NetId { index, generation };
                let pos = QPos { x_cm, y_cm };
                (
                    id,
                    EntityState {
                        id,
                        kind,
                        radius_cm: 40,
                        pos,
                        motion,
                    },
                )
            })
            .collect();
        states
            .into_values()
            .map(|state| Candidate {
                state,
                priority: f32::from(state.pos.x_cm.unsigned_abs() as u16),
            })
            .collect()
    })
}

/// Builds, encodes, decodes and applies one snapshot; checks that it decodes whatever it
/// holds, keeps its budget and gives the promised view. Returns that view.
fn send_and_apply(
    tick: u64,
    baseline: (Option<u64>, &View),
    current: &[Candidate],
    budget: usize,
) -> Result<View, TestCaseError> {
    let header = SnapshotHeader {
        tick,
        baseline_tick: baseline.0,
        last_input_seq: 0,
    };
    let (snapshot, view) = build_snapshot(header, baseline.1, current, budget).map_err(fail)?;
    let bytes = encode_datagram(&ServerDatagram::Snapshot(snapshot.clone())).map_err(fail)?;
    prop_assert!(
        bytes.len() <= budget,
        "{} bytes for a budget of {budget}",
        bytes.len()
    );
    let ServerDatagram::Snapshot(decoded) =
        decode_datagram::<ServerDatagram>(&bytes).map_err(|err| {
            fail(format!(
                "{} entered, {} changed, {} left in {} bytes: {err}",
                snapshot.entered.len(),
                snapshot.changed.len(),
                snapshot.left.len(),
                bytes.len()
            ))
        })?;
    prop_assert_eq!(&decoded, &snapshot);
    prop_assert_eq!(&baseline.1.apply(&decoded).map_err(fail)?, &view);
    Ok(view)
}

proptest! {
    #![proptest_config(crate::config(256))]

    /// Every snapshot the budget admits decodes, however many entities it holds (the
    /// decoder's limits must not be stricter than the encoder's: bincode's decode limit
    /// counts the in-memory size of what it reads, several times the wire size here), and
    /// lists long enough for their length prefix to take three bytes stay in budget.
    #[test]
    fn crowded_snapshots_decode(
        current in crowd(),
        budget in prop_oneof![Just(MAX_DATAGRAM_BYTES), 600..=MAX_DATAGRAM_BYTES],
    ) {
        // Everyone enters, over as many snapshots as it takes.
        let mut tick = 1;
        let mut view = send_and_apply(tick, (None, &View::new()), &current, budget)?;
        while view.len() < current.len() {
            prop_assert!(tick < 20, "no progress");
            tick += 1;
            view = send_and_apply(tick, (Some(tick - 1), &view), &current, budget)?;
        }
        // Everyone moves a step: snapshots full of changes.
        let moved: Vec<Candidate> = current
            .iter()
            .map(|c| {
                let mut state = c.state;
                state.pos.x_cm += 1;
                Candidate { state, ..*c }
            })
            .collect();
        tick += 1;
        view = send_and_apply(tick, (Some(tick - 1), &view), &moved, budget)?;
        // Everyone leaves: up to 300 leaves of 2 to 4 bytes in one list.
        tick += 1;
        send_and_apply(tick, (Some(tick - 1), &view), &[], budget)?;
    }
}

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

/// The refusals of `View::apply`, one by one, with ids below, between and above the
/// view's (a merge can go wrong at either end).
#[test]
fn apply_refusals() {
    let view = View::from_entities(vec![entity(2, 0), entity(4, i32::MAX)]);
    let id = |index| NetId {
        index,
        generation: 0,
    };
    let change = |index| Change {
        id: id(index),
        dx_cm: 1,
        dy_cm: 0,
        motion: Some(Motion::Moving),
    };
    for unknown in [1, 3, 5] {
        let left = Snapshot {
            left: vec![id(unknown)],
            ..Snapshot::default()
        };
        assert_eq!(view.apply(&left), Err(ApplyError::LeftUnknown(id(unknown))));
        let changed = Snapshot {
            changed: vec![change(unknown)],
            ..Snapshot::default()
        };
        assert_eq!(
            view.apply(&changed),
            Err(ApplyError::ChangedUnknown(id(unknown)))
        );
    }
    let entered = Snapshot {
        entered: vec![entity(5, 0), entity(2, 7)],
        ..Snapshot::default()
    };
    assert_eq!(view.apply(&entered), Err(ApplyError::EnteredTwice(id(2))));
    let twice = Snapshot {
        left: vec![id(4), id(2), id(4)],
        ..Snapshot::default()
    };
    assert_eq!(view.apply(&twice), Err(ApplyError::Duplicate(id(4))));
    let overflow = Snapshot {
        changed: vec![change(4)],
        ..Snapshot::default()
    };
    assert_eq!(view.apply(&overflow), Err(ApplyError::Overflow(id(4))));
    // Lists in any order apply as if sorted.
    let unsorted = Snapshot {
        left: vec![id(4), id(2)],
        entered: vec![entity(9, 1), entity(1, 1)],
        ..Snapshot::default()
    };
    assert_eq!(
        view.apply(&unsorted),
        Ok(View::from_entities(vec![entity(1, 1), entity(9, 1)]))
    );
}

/// A list of 251 items or more takes three bytes for its length instead of one; the
/// budget must allow for that at every size. Only leaves (2 bytes each with small ids)
/// come in such numbers within a datagram.
#[test]
fn long_lists_stay_in_budget() {
    let baseline = View::from_entities(
        (0..300)
            .map(|at| EntityState {
                id: NetId {
                    index: at % 250,
                    generation: at / 250,
                },
                ..entity(0, 0)
            })
            .collect(),
    );
    let header = SnapshotHeader {
        tick: 2,
        baseline_tick: Some(1),
        last_input_seq: 0,
    };
    let mut longest = 0;
    for budget in needed_budget(header)..=MAX_DATAGRAM_BYTES {
        let (snapshot, view) = build_snapshot(header, &baseline, &[], budget).expect("builds");
        longest = longest.max(snapshot.left.len());
        let bytes = encode_datagram(&ServerDatagram::Snapshot(snapshot)).expect("encodes");
        assert!(bytes.len() <= budget, "{} bytes for {budget}", bytes.len());
        let ServerDatagram::Snapshot(decoded) = decode_datagram(&bytes).expect("decodes");
        assert_eq!(baseline.apply(&decoded), Ok(view));
    }
    assert_eq!(longest, 300);
}

/// A budget that cannot hold everything sends the nearest first and keeps the baseline's
/// state for the rest, which later snapshots then send.
#[test]
fn far_entities_wait_for_later_snapshots() {
    let current: Vec<Candidate> = (0..60)
        .map(|index| Candidate {
            // Positions of equal encoded size: every entry costs the same bytes.
            state: entity(index, 1_000 + 100 * index as i32),
            // Odd slots are near, even ones far.
            priority: if index % 2 == 1 { 1.0 } else { 1_000.0 },
        })
        .collect();
    let header = |tick, baseline_tick| SnapshotHeader {
        tick,
        baseline_tick,
        last_input_seq: 0,
    };
    let (first, view) =
        build_snapshot(header(1, None), &View::new(), &current, 200).expect("builds");
    assert!(!first.entered.is_empty() && first.entered.len() < current.len());
    assert!(first.entered.iter().all(|entity| entity.id.index % 2 == 1));
    assert_eq!(View::new().apply(&first), Ok(view.clone()));

    let mut view = view;
    let mut tick = 1;
    while view.len() < current.len() {
        tick += 1;
        let (next, after) =
            build_snapshot(header(tick, Some(tick - 1)), &view, &current, 200).expect("builds");
        assert!(!next.entered.is_empty(), "no progress at tick {tick}");
        assert_eq!(view.apply(&next), Ok(after.clone()));
        view = after;
    }
    let states = current.iter().map(|c| c.state).collect();
    assert_eq!(view, View::from_entities(states));
}
