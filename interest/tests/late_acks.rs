//! A client whose acknowledgements arrive a few ticks late (a round trip longer than a
//! tick, the common case over the internet) must see its crowd about as well as one that
//! acknowledges at once: every snapshot is applied to the acknowledged baseline, so what
//! a snapshot leaves out the client holds as the baseline had it, and that is what the
//! priorities must weigh.

use std::collections::{HashMap, VecDeque};

use interest::{ClientView, Frame, Scratch, ViewRange};
use protocol::codec::decode_snapshot_datagram;
use protocol::{
    EntityKind, EntityState, Motion, NetId, QPos, Received, Shown, Snapshot, ViewHistory,
};

mod common;

use common::Rng;

const SIDE_M: f32 = 120.0;
const STEP_M: f32 = 0.075;

/// Runs 6 clients through 300 ticks of a crowd of walkers (7.5 cm a tick, turning now
/// and then) dense enough that 800-byte snapshots carry about a third of the changes, each
/// client's acknowledgement of tick `t` arriving before the snapshot of tick `t + delay`
/// is built. `each` gets every snapshot: its tick, the client, its engine side, its
/// datagram, and where every walker is.
fn run_crowd(delay: u64, mut each: impl FnMut(u64, usize, &mut ClientView, &[u8], &[(f32, f32)])) {
    let mut rng = Rng(7);
    let count = 3_000usize;
    let mut positions: Vec<(f32, f32)> = (0..count)
        .map(|_| (rng.unit() * SIDE_M, rng.unit() * SIDE_M))
        .collect();
    let heading = |rng: &mut Rng| {
        let angle = rng.unit() * std::f32::consts::TAU;
        (STEP_M * angle.cos(), STEP_M * angle.sin())
    };
    let mut steps: Vec<(f32, f32)> = (0..count).map(|_| heading(&mut rng)).collect();
    let range = ViewRange {
        radius_m: 30.0,
        hysteresis_m: 4.0,
    };
    let viewers = 6;
    let mut clients: Vec<ClientView> = (0..viewers).map(|_| ClientView::new()).collect();
    let mut scratch = Scratch::default();
    for tick in 1..=300u64 {
        for (at, step) in positions.iter_mut().zip(&mut steps) {
            if rng.next().is_multiple_of(100) {
                *step = heading(&mut rng);
            }
            at.0 = (at.0 + step.0).rem_euclid(SIDE_M);
            at.1 = (at.1 + step.1).rem_euclid(SIDE_M);
        }
        let states: Vec<EntityState> = positions
            .iter()
            .enumerate()
            .map(|(i, &(x, y))| EntityState {
                id: NetId {
                    index: i as u32,
                    generation: 0,
                },
                kind: EntityKind::Npc,
                radius_cm: 40,
                pos: QPos::from_metres(x, y),
                motion: Motion::Moving,
            })
            .collect();
        let frame = Frame::from_states(
            states,
            positions.clone(),
            (0.0, 0.0),
            (SIDE_M, SIDE_M),
            range,
        );
        for (c, client) in clients.iter_mut().enumerate() {
            if tick > delay {
                client.acknowledge(tick - delay);
            }
            let me = c * 500;
            let at = positions[me];
            let id = NetId {
                index: me as u32,
                generation: 0,
            };
            let datagram = client
                .snapshot(&frame, &mut scratch, id, at, (tick, 0), 800)
                .expect("800 bytes hold a snapshot");
            each(tick, c, client, &datagram, &positions);
        }
    }
}

/// The mean distance, in metres, between where the entities in a client's view are and
/// where the client holds them after each snapshot, for clients whose acknowledgement of
/// tick `t` arrives before the snapshot of tick `t + delay` is built ([`run_crowd`]).
fn mean_error_m(delay: u64) -> f64 {
    let (mut error_sum, mut seen) = (0.0f64, 0u64);
    run_crowd(delay, |tick, _, client, _, positions| {
        if tick <= 100 {
            return;
        }
        for held in &client.latest().expect("a snapshot was built") {
            let (x, y) = positions[held.id.index as usize];
            let (hx, hy) = (held.pos.x_cm as f32 / 100.0, held.pos.y_cm as f32 / 100.0);
            error_sum += f64::from(((hx - x).powi(2) + (hy - y).powi(2)).sqrt());
            seen += 1;
        }
    });
    assert!(
        seen > 100_000,
        "too few entities in view to compare: {seen}"
    );
    error_sum / seen as f64
}

/// With acknowledgements `delay` ticks late, every change is carried by the snapshots
/// built until one that carried it is acknowledged: up to `delay` of them, so the budget
/// holds about `1 / delay` as many distinct changes, and the picture may be up to `delay`
/// times as wrong. Priorities that weigh the newest snapshot sent instead of the baseline
/// left it 5 times as wrong 2 ticks late and 15 times 3 ticks late: every change left out
/// of the next snapshot went back to the baseline's state.
#[test]
fn a_client_acknowledging_late_sees_its_crowd_about_as_well() {
    let prompt = mean_error_m(1);
    let late = [2, 3].map(|delay| (delay, mean_error_m(delay)));
    eprintln!("mean error: {prompt:.3} m acknowledging at once, late (ticks, m): {late:?}");
    for (delay, late) in late {
        assert!(
            late < 1.5 * delay as f64 * prompt,
            "acknowledging {delay} ticks late: {late:.3} m wrong on average, at once {prompt:.3} m"
        );
    }
}

/// What a client receiving every snapshot and acknowledging `delay` ticks late holds in
/// its newest view and draws ([`Shown`]).
#[derive(Debug, Default)]
struct Drawn {
    /// Entities in both the view and the drawing at two snapshots in a row (after the
    /// first 100 ticks), and how many of them the view and the drawing showed at an older
    /// tick than at the snapshot before: for each entity, the tick whose true state it
    /// holds (matched against the last 20 ticks' states).
    compared: u64,
    view_back: u64,
    drawn_back: u64,
    /// Entities held, summed over snapshots, and their distance from where they are
    /// (metres, summed), in the view and in the drawing.
    in_view: u64,
    drawn: u64,
    view_error_m: f64,
    drawn_error_m: f64,
    /// Snapshots after which the drawing was not the view.
    differed: u64,
}

fn steps_back(delay: u64) -> Drawn {
    let viewers = 6;
    let mut histories: Vec<ViewHistory> = (0..viewers).map(|_| ViewHistory::new()).collect();
    let mut shown: Vec<Shown> = (0..viewers).map(|_| Shown::new()).collect();
    // Per client, the entities in both the view and the drawing at the last snapshot,
    // with the ticks they showed.
    let mut last: Vec<HashMap<u32, (u64, u64)>> = (0..viewers).map(|_| HashMap::new()).collect();
    let mut truth: VecDeque<Vec<QPos>> = VecDeque::new();
    let mut out = Drawn::default();
    let mut snapshot = Snapshot::default();
    run_crowd(delay, |tick, c, _, datagram, positions| {
        if c == 0 {
            truth.push_front(
                positions
                    .iter()
                    .map(|&(x, y)| QPos::from_metres(x, y))
                    .collect(),
            );
            truth.truncate(20);
        }
        decode_snapshot_datagram(datagram, &mut snapshot).expect("the engine's datagram decodes");
        assert_eq!(histories[c].receive(&snapshot), Ok(Received::Applied));
        let (_, view) = histories[c].newest().expect("just applied");
        shown[c].update(&snapshot, view);
        // The tick whose true state `entity` holds (the newest that matches).
        let told = |entity: &EntityState| {
            let i = entity.id.index as usize;
            (0..truth.len() as u64)
                .find(|&back| truth[back as usize][i] == entity.pos)
                .map(|back| tick - back)
        };
        let error = |entity: &EntityState| {
            let (x, y) = positions[entity.id.index as usize];
            let (hx, hy) = (
                entity.pos.x_cm as f32 / 100.0,
                entity.pos.y_cm as f32 / 100.0,
            );
            f64::from(((hx - x).powi(2) + (hy - y).powi(2)).sqrt())
        };
        out.differed += u64::from(!shown[c].entities().eq(view.entities().iter()));
        if tick > 100 {
            out.in_view += view.len() as u64;
            out.drawn += shown[c].entities().len() as u64;
            out.view_error_m += view.entities().iter().map(error).sum::<f64>();
            out.drawn_error_m += shown[c].entities().map(error).sum::<f64>();
        }
        let drawn: HashMap<u32, u64> = shown[c]
            .entities()
            .filter_map(|e| told(e).map(|t| (e.id.index, t)))
            .collect();
        let mut now = HashMap::new();
        for entity in view.entities() {
            let (Some(in_view), Some(&in_shown)) = (told(entity), drawn.get(&entity.id.index))
            else {
                continue;
            };
            now.insert(entity.id.index, (in_view, in_shown));
            if tick <= 100 {
                continue;
            }
            if let Some(&(view_before, shown_before)) = last[c].get(&entity.id.index) {
                out.compared += 1;
                out.view_back += u64::from(in_view < view_before);
                out.drawn_back += u64::from(in_shown < shown_before);
            }
        }
        last[c] = now;
    });
    out
}

/// A client whose acknowledgements arrive late gets snapshots against older baselines, so
/// its newest view holds entities a snapshot left out as the baseline had them, older than
/// what the snapshot before carried: drawn as they are, they step back and forth. What
/// [`Shown`] keeps (of each entity, what the snapshots carried last) never steps back, is
/// nearer the truth than the view, and holds about the same entities; for a client that
/// acknowledges at once (one chain of views) it is the view.
#[test]
fn what_a_late_client_draws_never_steps_back() {
    let prompt = steps_back(1);
    assert_eq!(
        prompt.differed, 0,
        "acknowledging at once, the drawing is the view"
    );
    for delay in [2, 3] {
        let late = steps_back(delay);
        eprintln!("{delay} ticks late: {late:?}");
        let Drawn {
            compared,
            view_back,
            drawn_back,
            ..
        } = late;
        assert!(compared > 100_000, "too few entities compared: {compared}");
        assert!(
            view_back > compared / 20,
            "the views hardly step back ({view_back} of {compared}): the test shows nothing"
        );
        assert_eq!(
            drawn_back, 0,
            "drawn entities stepped back ({delay} ticks late)"
        );
        let (view_error, drawn_error) = (
            late.view_error_m / late.in_view as f64,
            late.drawn_error_m / late.drawn as f64,
        );
        assert!(
            drawn_error < view_error,
            "drawn {drawn_error:.3} m wrong on average, the view {view_error:.3} m"
        );
        let ratio = late.drawn as f64 / late.in_view as f64;
        assert!(
            (0.98..1.02).contains(&ratio),
            "{} entities drawn against {} in view",
            late.drawn,
            late.in_view
        );
    }
}
