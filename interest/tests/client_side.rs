//! The engine against a real client's half of the delta scheme ([`protocol::ViewHistory`]):
//! every datagram decoded and applied as a client does, over links that lose datagrams and
//! acknowledgements and deliver them late, while bodies join and leave the world. What
//! the client holds must be what the engine believes it holds, and the client's own
//! character must always be where it is.

use std::collections::VecDeque;

use interest::{ClientView, Frame, Scratch, ViewRange};
use protocol::codec::decode_snapshot_datagram;
use protocol::{EntityKind, EntityState, Motion, NetId, QPos, Received, Snapshot, ViewHistory};

mod common;

use common::Rng;

const SIDE_M: f32 = 120.0;

struct Walker {
    state: EntityState,
    at: (f32, f32),
    step: (f32, f32),
}

fn walker(rng: &mut Rng, index: u32, generation: u32) -> Walker {
    let at = (rng.unit() * SIDE_M, rng.unit() * SIDE_M);
    let angle = rng.unit() * std::f32::consts::TAU;
    Walker {
        state: EntityState {
            id: NetId { index, generation },
            kind: EntityKind::Npc,
            radius_cm: 40,
            pos: QPos::from_metres(at.0, at.1),
            motion: Motion::Moving,
        },
        at,
        step: (0.075 * angle.cos(), 0.075 * angle.sin()),
    }
}

/// One client: the engine's side, the client's side, and the datagrams and
/// acknowledgements in flight (arrival tick, payload).
struct Link {
    engine: ClientView,
    client: ViewHistory,
    me: NetId,
    datagrams: VecDeque<(u64, Vec<u8>)>,
    acks: VecDeque<(u64, u64)>,
}

/// `viewers` clients watch a crowd of walkers for `ticks` ticks, each link losing one
/// datagram and one acknowledgement in `loss` and delaying each by up to `delay` ticks
/// (in order), each client acknowledging the newest snapshot it holds every `ack_every`
/// ticks (as a client does that acknowledges with its inputs); now and then a walker is
/// replaced by a new generation. No snapshot may need a baseline the client no longer
/// holds.
fn run(seed: u64, viewers: usize, ticks: u64, (loss, delay, ack_every): (u64, u64, u64)) {
    let mut rng = Rng(seed);
    let mut walkers: Vec<Walker> = (0..2_000).map(|i| walker(&mut rng, i, 0)).collect();
    let range = ViewRange {
        radius_m: 30.0,
        hysteresis_m: 4.0,
    };
    let mut links: Vec<Link> = (0..viewers)
        .map(|v| Link {
            engine: ClientView::new(),
            client: ViewHistory::new(),
            me: walkers[v * 97].state.id,
            datagrams: VecDeque::new(),
            acks: VecDeque::new(),
        })
        .collect();
    let mut scratch = Scratch::default();
    let mut previous: Option<Frame> = None;
    let (mut applied, mut checked_me, mut missing) = (0, 0, 0);
    for tick in 1..=ticks {
        for w in walkers.iter_mut() {
            w.at.0 = (w.at.0 + w.step.0).rem_euclid(SIDE_M);
            w.at.1 = (w.at.1 + w.step.1).rem_euclid(SIDE_M);
            w.state.pos = QPos::from_metres(w.at.0, w.at.1);
        }
        if tick % 7 == 0 {
            // A walker (never a viewer's character) is replaced: a new generation.
            let i = 1 + rng.below(walkers.len() as u64 - 1) as usize;
            if !links.iter().any(|l| l.me == walkers[i].state.id) {
                let generation = walkers[i].state.id.generation + 1;
                walkers[i] = walker(&mut rng, walkers[i].state.id.index, generation);
            }
        }
        let mut frame = Frame::from_states(
            walkers.iter().map(|w| w.state).collect(),
            walkers.iter().map(|w| w.at).collect(),
            (0.0, 0.0),
            (SIDE_M, SIDE_M),
            range,
        );
        if let Some(previous) = &previous {
            frame.follow(previous);
        }
        for link in links.iter_mut() {
            while let Some(&(arrives, acked)) = link.acks.front()
                && arrives <= tick
            {
                link.acks.pop_front();
                link.engine.acknowledge(acked);
            }
            let me = walkers
                .iter()
                .find(|w| w.state.id == link.me)
                .expect("viewers' characters are never replaced");
            let datagram = link
                .engine
                .snapshot(&frame, &mut scratch, link.me, me.at, (tick, 0), 800)
                .expect("800 bytes hold a snapshot");
            if rng.below(loss) != 0 {
                let arrives = tick + rng.below(delay + 1);
                let arrives = arrives.max(link.datagrams.back().map_or(0, |d| d.0));
                link.datagrams.push_back((arrives, datagram));
            }
            while let Some((arrives, _)) = link.datagrams.front()
                && *arrives <= tick
                && let Some((_, bytes)) = link.datagrams.pop_front()
            {
                let mut snapshot = Snapshot::default();
                decode_snapshot_datagram(&bytes, &mut snapshot).expect("a snapshot decodes");
                let received = link.client.receive(&snapshot).expect("a snapshot applies");
                missing += usize::from(received == Received::MissingBaseline);
                if received != Received::Applied {
                    continue;
                }
                applied += 1;
                let (newest, view) = link.client.newest().expect("a snapshot was applied");
                // The client's own character is always sent, and where it was then.
                if newest == tick {
                    let held = view.get(link.me).expect("the client sees itself");
                    assert_eq!(held, &me.state, "tick {tick}: the client's own character");
                    checked_me += 1;
                    // What the client holds is what the engine believes it holds.
                    let believed = link.engine.latest().expect("a snapshot was sent");
                    assert_eq!(view.entities(), &believed[..], "tick {tick}");
                }
            }
            if tick.is_multiple_of(ack_every)
                && rng.below(loss) != 0
                && let Some((newest, _)) = link.client.newest()
            {
                let arrives = tick + rng.below(delay + 1);
                let arrives = arrives.max(link.acks.back().map_or(0, |a| a.0));
                link.acks.push_back((arrives, newest));
            }
        }
        previous = Some(frame);
    }
    assert!(applied > ticks as usize * viewers / 3, "{applied} applied");
    assert!(checked_me > 0, "the own character was never checked");
    assert_eq!(
        missing, 0,
        "snapshots against a baseline the client dropped"
    );
}

#[test]
fn a_client_on_a_good_link_holds_what_the_engine_believes() {
    run(1, 6, 300, (1_000, 0, 1));
}

#[test]
fn a_client_on_a_lossy_late_link_holds_what_the_engine_believes() {
    run(2, 6, 300, (10, 3, 1));
}

/// Acknowledgements every three seconds: the engine falls back to full snapshots once the
/// acknowledged view is older than its last [`interest::HISTORY`] snapshots, before the
/// client (which keeps more) drops it.
#[test]
fn a_client_acknowledging_rarely_applies_every_snapshot() {
    run(3, 6, 300, (1_000, 1, 60));
}
