use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use protocol::{EntityKind, EntityState, Motion, NetId, QPos};
use tokio::sync::mpsc;

use super::*;
use crate::game::{DatagramSink, SessionId};
use crate::interest::{Frame, ViewRange};
use crate::snapshots::tests::Recorder;
use crate::snapshots::{ClientTick, NewViewer};

const NPCS: u32 = 400;

/// NPCs circling four spots of a 100 m square, all moving every tick.
fn frame(tick: u64) -> Frame {
    let mut states = Vec::new();
    let mut positions = Vec::new();
    for i in 0..NPCS {
        let centre = [(25.0, 25.0), (75.0, 25.0), (25.0, 75.0), (75.0, 75.0)][i as usize % 4];
        let angle = i as f32 * 0.37 + tick as f32 * 0.05;
        let r = 2.0 + (i % 20) as f32;
        let (x, y) = (centre.0 + r * angle.cos(), centre.1 + r * angle.sin());
        states.push(EntityState {
            id: NetId {
                index: i,
                generation: 0,
            },
            kind: EntityKind::Npc,
            radius_cm: 40,
            pos: QPos::from_metres(x, y),
            motion: Motion::Moving,
        });
        positions.push((x, y));
    }
    let range = ViewRange {
        radius_m: 30.0,
        hysteresis_m: 4.0,
    };
    Frame::from_states(states, positions, (0.0, 0.0), (100.0, 100.0), range)
}

/// Serves 40 ticks to 9 sessions through `workers` workers (sessions join at different
/// ticks, one leaves, each acknowledges what it got), and returns what each received.
fn run(workers: usize) -> BTreeMap<SessionId, Vec<Bytes>> {
    let metrics = Arc::new(Metrics::default());
    let config = SnapshotConfig {
        bandwidth_cap_bytes_per_sec: 64_000,
        snapshot_max_bytes: 800,
        slow_client_ticks: 200,
        workers,
        nice: 0,
    };
    let mut pool = SnapshotPool::start(config, metrics).unwrap();
    assert_eq!(pool.workers(), workers);
    let sessions: Vec<SessionId> = (1..=9).collect();
    let recorders: BTreeMap<SessionId, Recorder> = sessions
        .iter()
        .map(|&session| (session, Recorder::default()))
        .collect();
    let mut kicks = Vec::new();
    let mut pending = Membership::default();
    for tick in 1..=40u64 {
        let mut changes = std::mem::take(&mut pending);
        for &session in &sessions {
            // Session k joins at tick k; session 4 leaves at tick 25.
            if tick == session {
                let (kick, inbox) = mpsc::channel(1);
                kicks.push(inbox);
                changes.joined.push(NewViewer {
                    session,
                    sink: Box::new(recorders[&session].clone()),
                    kick,
                });
            }
            if tick > session + 1 {
                changes.acks.insert(session, tick - 1);
            }
        }
        if tick == 25 {
            changes.left.push(4);
        }
        let clients = sessions
            .iter()
            .filter(|&&session| session <= tick && !(session == 4 && tick >= 25))
            .map(|&session| ClientTick {
                session,
                me: NetId {
                    index: session as u32 * 40,
                    generation: 0,
                },
                at: (
                    (session % 3) as f32 * 35.0 + 15.0,
                    (session / 3) as f32 * 30.0 + 10.0,
                ),
                applied_seq: tick as u32,
            })
            .collect();
        let job = SnapshotJob {
            tick,
            frame: Arc::new(frame(tick)),
            clients,
            changes,
        };
        pending = pool.offer(job).unwrap();
        assert!(pending.is_empty(), "an idle worker refused a job");
        pool.wait_idle();
    }
    assert_eq!(pool.stop(), 0);
    recorders
        .into_iter()
        .map(|(session, recorder)| {
            let sent = recorder.0.lock().unwrap().clone();
            (session, sent)
        })
        .collect()
}

#[test]
fn each_client_gets_the_same_datagrams_from_one_or_two_workers() {
    let one = run(1);
    let two = run(2);
    // Every session got a snapshot each tick it was in the world.
    assert_eq!(one[&1].len(), 40);
    assert_eq!(one[&9].len(), 32);
    assert_eq!(one[&4].len(), 21);
    assert!(one.values().flatten().any(|datagram| datagram.len() > 100));
    assert_eq!(one, two);
    assert_eq!(run(3), one);
}

/// Blocks the worker in `send` until the test lets it go, telling the test it got there.
struct Gate {
    entered: std::sync::mpsc::Sender<()>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl DatagramSink for Gate {
    fn max_datagram_size(&self) -> Option<usize> {
        Some(1_200)
    }
    fn send_space(&self) -> usize {
        usize::MAX
    }
    fn send(&self, _datagram: Bytes) -> bool {
        let _ = self.entered.send(());
        let release = self.release.lock().unwrap_or_else(|p| p.into_inner());
        let _ = release.recv();
        true
    }
}

/// Session 0 joining with a [`Gate`] for a sink: the join, where the gate tells it was
/// entered, and what lets it go.
struct Gated {
    changes: Membership,
    entered: std::sync::mpsc::Receiver<()>,
    release: std::sync::mpsc::Sender<()>,
    _kicks: mpsc::Receiver<crate::game::Kick>,
}

fn gated_join() -> Gated {
    let (entered, entered_inbox) = std::sync::mpsc::channel();
    let (release, release_inbox) = std::sync::mpsc::channel();
    let (kick, kicks) = mpsc::channel(1);
    let mut changes = Membership::default();
    changes.joined.push(NewViewer {
        session: 0,
        sink: Box::new(Gate {
            entered,
            release: Mutex::new(release_inbox),
        }),
        kick,
    });
    Gated {
        changes,
        entered: entered_inbox,
        release,
        _kicks: kicks,
    }
}

/// Session 0's client in a tick's job.
fn gated_client() -> ClientTick {
    ClientTick {
        session: 0,
        me: NetId {
            index: 0,
            generation: 0,
        },
        at: (25.0, 25.0),
        applied_seq: 0,
    }
}

#[test]
fn a_busy_worker_skips_the_tick_and_its_shards_changes_come_back() {
    let config = SnapshotConfig {
        bandwidth_cap_bytes_per_sec: 64_000,
        snapshot_max_bytes: 800,
        slow_client_ticks: 200,
        workers: 2,
        nice: 0,
    };
    let mut pool = SnapshotPool::start(config, Arc::new(Metrics::default())).unwrap();
    let frame = Arc::new(frame(1));
    let job = |tick: u64, clients: Vec<ClientTick>, changes: Membership| SnapshotJob {
        tick,
        frame: Arc::clone(&frame),
        clients,
        changes,
    };
    // Session 0 (shard 0) joins; its worker blocks sending its first snapshot.
    let gate = gated_join();
    let (changes, me) = (gate.changes, gated_client());
    assert!(pool.offer(job(1, vec![me], changes)).unwrap().is_empty());
    gate.entered.recv().unwrap();
    // The next job waits in worker 0's channel; the one after finds it full.
    assert!(
        pool.offer(job(2, Vec::new(), Membership::default()))
            .unwrap()
            .is_empty()
    );
    // Worker 1 finishes its (empty) jobs; worker 0 holds two unfinished ones.
    {
        let mut finished = pool.progress.finished.lock().unwrap();
        while *finished + 2 < pool.handed {
            finished = pool.progress.changed.wait(finished).unwrap();
        }
    }
    let mut changes = Membership::default();
    for session in 0..4 {
        changes.acks.insert(session, 2);
    }
    changes.left.push(5);
    let back = pool.offer(job(3, Vec::new(), changes)).unwrap();
    // Shard 1's worker took its part; shard 0's part comes back whole.
    assert_eq!(back.acks.keys().copied().collect::<Vec<_>>(), [0, 2]);
    assert!(back.left.is_empty());
    gate.release.send(()).unwrap();
    pool.wait_idle();
    assert_eq!(pool.stop(), 0);
}

#[test]
fn the_pace_thins_out_clients_when_snapshots_take_too_long() {
    let mut pace = Pace::default();
    for _ in 0..100 {
        pace.update(Duration::from_millis(10), pace.stride, 100);
    }
    assert_eq!(pace.stride, 1);
    // Serving everyone takes 100 ms: every third client per tick keeps within 40 ms.
    for _ in 0..200 {
        let took = Duration::from_secs_f64(0.1 / pace.stride as f64);
        pace.update(took, pace.stride, 100);
    }
    assert_eq!(pace.stride, 3);
    for _ in 0..200 {
        let took = Duration::from_secs_f64(0.02 / pace.stride as f64);
        pace.update(took, pace.stride, 100);
    }
    assert_eq!(pace.stride, 1);
}

/// Once a worker's last client is gone, its pace starts afresh and the stride gauge
/// shows 1 while nobody is served, not the stride of the crowd that left.
#[test]
fn the_stride_falls_back_to_one_when_the_last_client_leaves() {
    let config = SnapshotConfig {
        bandwidth_cap_bytes_per_sec: 64_000,
        snapshot_max_bytes: 800,
        slow_client_ticks: 200,
        workers: 1,
        nice: 0,
    };
    let metrics = Arc::new(Metrics::default());
    let mut pool = SnapshotPool::start(config, Arc::clone(&metrics)).unwrap();
    let frame = Arc::new(frame(1));
    let gate = gated_join();
    let (changes, me) = (gate.changes, gated_client());
    let job = |tick: u64, clients: Vec<ClientTick>, changes: Membership| SnapshotJob {
        tick,
        frame: Arc::clone(&frame),
        clients,
        changes,
    };
    // The one client's snapshot takes half a second to send: the worker asks for a
    // stride above 1 (a tenth of it, smoothed, is above the 40 ms budget).
    assert!(pool.offer(job(1, vec![me], changes)).unwrap().is_empty());
    gate.entered.recv().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    gate.release.send(()).unwrap();
    pool.wait_idle();
    let slow = pool.stride();
    assert!(slow > 1, "stride {slow}");
    let mut left = Membership::default();
    left.left.push(0);
    assert!(pool.offer(job(2, Vec::new(), left)).unwrap().is_empty());
    assert_eq!(metrics.snapshot_stride.get(), slow as i64);
    pool.wait_idle();
    assert_eq!(pool.stride(), 1);
    pool.rest();
    assert_eq!(metrics.snapshot_stride.get(), 1);
    assert_eq!(pool.stop(), 0);
}

#[test]
fn the_default_leaves_a_core_to_the_world() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(default_workers(), cores.saturating_sub(1).max(1));
}
