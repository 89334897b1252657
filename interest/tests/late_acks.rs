//! A client whose acknowledgements arrive a few ticks late (a round trip longer than a
//! tick, the common case over the internet) must see its crowd about as well as one that
//! acknowledges at once: every snapshot is applied to the acknowledged baseline, so what
//! a snapshot leaves out the client holds as the baseline had it, and that is what the
//! priorities must weigh.

use interest::{ClientView, Frame, Scratch, ViewRange};
use protocol::{EntityKind, EntityState, Motion, NetId, QPos};

mod common;

use common::Rng;

const SIDE_M: f32 = 120.0;
const STEP_M: f32 = 0.075;

/// The mean distance, in metres, between where the entities in a client's view are and
/// where the client holds them after each snapshot, for clients whose acknowledgement of
/// tick `t` arrives before the snapshot of tick `t + delay` is built. A crowd of walkers
/// (7.5 cm a tick, turning now and then) dense enough that 800-byte snapshots carry about
/// a third of the changes.
fn mean_error_m(delay: u64) -> f64 {
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
    let (mut error_sum, mut seen) = (0.0f64, 0u64);
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
            client
                .snapshot(&frame, &mut scratch, id, at, (tick, 0), 800)
                .expect("800 bytes hold a snapshot");
            if tick <= 100 {
                continue;
            }
            for held in client.latest().expect("a snapshot was built") {
                let (x, y) = positions[held.id.index as usize];
                let (hx, hy) = (held.pos.x_cm as f32 / 100.0, held.pos.y_cm as f32 / 100.0);
                error_sum += f64::from(((hx - x).powi(2) + (hy - y).powi(2)).sqrt());
                seen += 1;
            }
        }
    }
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
