//! A client's receive path, as the load-test swarm runs it for every snapshot datagram:
//! decode the datagram, apply the snapshot to its baseline in a [`ViewHistory`], look at
//! the newest view. Two ways to decode: `decode_datagram` (a new snapshot each time) and
//! `decode_snapshot_datagram` (into one snapshot kept between datagrams, as the swarm does).
//!
//! The stream is built once, deterministically, by the server's own [`build_snapshot`]: a
//! client sees 640 entities (ids spread over 12,000 slots, as in a large world), each tick
//! 100 of them move by up to 40 cm, one in twenty of those changes its motion, and 8 leave
//! while 8 others enter. Every snapshot is a delta against the previous tick (a client on
//! a good link) within the server's 800-byte budget, so what does not fit waits for the
//! next; priorities are random, so everything gets its turn. 60 ticks fill the client's
//! view; the 200 after them are measured. The bench prints the stream's shape first (bytes
//! and list lengths per snapshot).
//!
//! `cargo bench -p protocol --bench receive` runs it (`-- --test` for a smoke run). For an
//! instruction count, run the bench binary under callgrind with `--callgrind` and `decode`
//! or `reuse`: it then receives the 200 measured datagrams once, in `receive_all`, which
//! `--toggle-collect='*receive_all*'` isolates from the setup.

use std::hint::black_box;

use criterion::{BatchSize, Criterion};
use protocol::codec::{decode_datagram, decode_snapshot_datagram, encode_snapshot_datagram};
use protocol::{
    Candidate, EntityKind, EntityState, Motion, NetId, QPos, Received, ServerDatagram, Snapshot,
    SnapshotHeader, View, ViewHistory, build_snapshot,
};

const IN_VIEW: usize = 640;
const SLOTS: u32 = 12_000;
const MOVING: usize = 100;
const TURNOVER: usize = 8;
const BUDGET_BYTES: usize = 800;
const WARM_TICKS: u64 = 60;
const MEASURED_TICKS: u64 = 200;

/// A small deterministic generator (xorshift64*), so every run builds the same stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn delta(&mut self) -> i32 {
        self.below(81) as i32 - 40
    }
}

const MOTIONS: [Motion; 5] = [
    Motion::Idle,
    Motion::Moving,
    Motion::WaitingForPath,
    Motion::Circling,
    Motion::Repulsed,
];

/// The datagrams of the warm-up and of the measured ticks.
struct Stream {
    warm: Vec<Vec<u8>>,
    measured: Vec<Vec<u8>>,
}

impl Stream {
    fn build() -> Stream {
        let mut rng = Rng(0x5eed_0f5e_a5e5_1a7e);
        let mut world: std::collections::BTreeMap<NetId, EntityState> = Default::default();
        let spawn = |rng: &mut Rng, world: &mut std::collections::BTreeMap<_, _>| loop {
            let id = NetId {
                index: rng.below(u64::from(SLOTS)) as u32,
                generation: rng.below(3) as u32,
            };
            if world.keys().any(|other: &NetId| other.index == id.index) {
                continue;
            }
            let state = EntityState {
                id,
                kind: if rng.below(10) == 0 {
                    EntityKind::Player
                } else {
                    EntityKind::Npc
                },
                radius_cm: 40,
                pos: QPos {
                    x_cm: 1_000_000 + rng.below(6_000) as i32,
                    y_cm: 1_000_000 + rng.below(6_000) as i32,
                },
                motion: MOTIONS[rng.below(5) as usize],
            };
            world.insert(id, state);
            return;
        };
        for _ in 0..IN_VIEW {
            spawn(&mut rng, &mut world);
        }
        let mut view = View::new();
        let mut acked = None;
        let mut datagrams = Vec::new();
        let mut bytes = Vec::new();
        for tick in 1..=WARM_TICKS + MEASURED_TICKS {
            let ids: Vec<NetId> = world.keys().copied().collect();
            for _ in 0..MOVING {
                let id = ids[rng.below(ids.len() as u64) as usize];
                let (dx, dy, turn) = (rng.delta(), rng.delta(), rng.below(20) == 0);
                let motion = MOTIONS[rng.below(5) as usize];
                if let Some(entity) = world.get_mut(&id) {
                    entity.pos.x_cm += dx;
                    entity.pos.y_cm += dy;
                    if turn {
                        entity.motion = motion;
                    }
                }
            }
            for _ in 0..TURNOVER {
                let id = ids[rng.below(ids.len() as u64) as usize];
                world.remove(&id);
                spawn(&mut rng, &mut world);
            }
            let current: Vec<Candidate> = world
                .values()
                .map(|&state| Candidate {
                    state,
                    priority: rng.below(1000) as f32,
                })
                .collect();
            let header = SnapshotHeader {
                tick,
                baseline_tick: acked,
                last_input_seq: tick as u32,
            };
            let (snapshot, next) =
                build_snapshot(header, &view, &current, BUDGET_BYTES).expect("builds");
            encode_snapshot_datagram(&snapshot, &mut bytes).expect("encodes");
            datagrams.push(bytes.clone());
            view = next;
            acked = Some(tick);
        }
        let measured = datagrams.split_off(WARM_TICKS as usize);
        Stream {
            warm: datagrams,
            measured,
        }
    }

    /// A client that has received the warm-up ticks.
    fn warmed(&self, decode: Decode) -> Client {
        let mut client = Client::default();
        for datagram in &self.warm {
            receive(&mut client, datagram, decode);
        }
        let view = client.history.newest().map_or(0, |(_, view)| view.len());
        assert!(view >= IN_VIEW - 2 * TURNOVER, "the warm-up fills the view");
        client
    }

    fn describe(&self) {
        let (mut entered, mut changed, mut left, mut bytes) = (0, 0, 0, 0);
        for datagram in &self.measured {
            let Ok(ServerDatagram::Snapshot(snapshot)) = decode_datagram(datagram) else {
                panic!("the stream decodes");
            };
            entered += snapshot.entered.len();
            changed += snapshot.changed.len();
            left += snapshot.left.len();
            bytes += datagram.len();
        }
        let n = self.measured.len() as f64;
        println!(
            "{} snapshots, {IN_VIEW} entities in view; per snapshot: {:.1} bytes, {:.1} entered, \
             {:.1} changed, {:.1} left",
            self.measured.len(),
            bytes as f64 / n,
            entered as f64 / n,
            changed as f64 / n,
            left as f64 / n,
        );
    }
}

/// How a datagram is decoded.
#[derive(Clone, Copy)]
enum Decode {
    /// `decode_datagram`: a new snapshot, its lists allocated.
    New,
    /// `decode_snapshot_datagram` into the snapshot held.
    Reuse,
}

/// A client: its history and the snapshot it decodes into.
#[derive(Clone, Default)]
struct Client {
    history: ViewHistory,
    snapshot: Snapshot,
}

/// Receives one datagram as the swarm's bot does.
#[inline(always)]
fn receive(client: &mut Client, datagram: &[u8], decode: Decode) {
    match decode {
        Decode::New => {
            let Ok(ServerDatagram::Snapshot(snapshot)) = decode_datagram(datagram) else {
                panic!("the stream decodes");
            };
            client.snapshot = snapshot;
        }
        Decode::Reuse => {
            decode_snapshot_datagram(datagram, &mut client.snapshot).expect("the stream decodes")
        }
    }
    let received = client.history.receive(&client.snapshot);
    assert_eq!(received, Ok(Received::Applied));
    black_box(client.history.newest());
}

/// Receives the datagrams in order; returns the newest view's size.
#[inline(never)]
fn receive_all(client: &mut Client, datagrams: &[Vec<u8>], decode: Decode) -> usize {
    for datagram in datagrams {
        receive(client, datagram, decode);
    }
    client.history.newest().map_or(0, |(_, view)| view.len())
}

fn main() {
    let stream = Stream::build();
    stream.describe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--callgrind") {
        let decode = if args.iter().any(|arg| arg == "reuse") {
            Decode::Reuse
        } else {
            Decode::New
        };
        let mut client = stream.warmed(decode);
        black_box(receive_all(&mut client, &stream.measured, decode));
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    for (name, decode) in [("decode", Decode::New), ("reuse", Decode::Reuse)] {
        criterion.bench_function(&format!("receive/200_snapshots_{name}"), |b| {
            b.iter_batched(
                || stream.warmed(decode),
                |mut client| receive_all(&mut client, &stream.measured, decode),
                BatchSize::SmallInput,
            )
        });
    }
    criterion.final_summary();
}
