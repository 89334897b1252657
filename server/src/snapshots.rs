//! The snapshot side of sessions: builds and sends clients' snapshots from a frame the
//! world thread hands over after each tick, while the world steps the next one.
//!
//! The world thread captures the frame (every body's wire state, a fraction of a
//! millisecond) and passes it with each client's character position, applied input and the
//! session changes since the last hand-over ([`SnapshotJob`]) to the snapshot workers
//! ([`crate::snapshot_pool`]), each of which runs a [`Snapshotter`] for its shard of the
//! clients. When a worker is still busy with an older tick, the world does not wait: that
//! tick's snapshots are skipped for the worker's shard (counted as `behind`) and the
//! shard's session changes travel with the next job. So the tick's duration does not grow
//! with the number of clients.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use protocol::{DisconnectReason, NetId};
use tokio::sync::mpsc;

use crate::game::{DatagramSink, Kick, SessionId};
use crate::interest::{ClientView, Frame, Scratch};
use crate::metrics::{Metrics, SnapshotDrop};

/// A session a snapshot worker starts serving.
pub struct NewViewer {
    /// The session.
    pub session: SessionId,
    /// Where its snapshots go.
    pub sink: Box<dyn DatagramSink>,
    /// Where to send a kick.
    pub kick: mpsc::Sender<Kick>,
}

/// Session changes since the last job.
#[derive(Default)]
pub struct Membership {
    /// Sessions that joined.
    pub joined: Vec<NewViewer>,
    /// The newest snapshot tick each session acknowledged.
    pub acks: BTreeMap<SessionId, u64>,
    /// Sessions that left.
    pub left: Vec<SessionId>,
}

impl Membership {
    /// Whether there is nothing to hand over.
    pub fn is_empty(&self) -> bool {
        self.joined.is_empty() && self.acks.is_empty() && self.left.is_empty()
    }

    /// Puts older, undelivered changes back in front of these.
    pub fn prepend(&mut self, older: Membership) {
        let mut joined = older.joined;
        joined.append(&mut self.joined);
        self.joined = joined;
        for (session, tick) in older.acks {
            let entry = self.acks.entry(session).or_insert(tick);
            *entry = (*entry).max(tick);
        }
        let mut left = older.left;
        left.append(&mut self.left);
        self.left = left;
    }
}

/// One client in one tick.
#[derive(Clone, Copy, Debug)]
pub struct ClientTick {
    /// The session.
    pub session: SessionId,
    /// Its character.
    pub me: NetId,
    /// Where the character is, metres.
    pub at: (f32, f32),
    /// The last input of this client the world applied.
    pub applied_seq: u32,
}

/// Everything a snapshot worker needs for one tick (for its shard).
pub struct SnapshotJob {
    /// The tick.
    pub tick: u64,
    /// Every body's state, shared by the workers.
    pub frame: Arc<Frame>,
    /// The clients in the world this tick.
    pub clients: Vec<ClientTick>,
    /// Session changes since the last job.
    pub changes: Membership,
}

/// Snapshot settings.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotConfig {
    /// Snapshot bytes per client per second.
    pub bandwidth_cap_bytes_per_sec: u32,
    /// Largest snapshot datagram.
    pub snapshot_max_bytes: u32,
    /// Consecutive congested snapshots before a client is disconnected.
    pub slow_client_ticks: u32,
    /// Snapshot worker threads ([`crate::snapshot_pool`]); 0: the cores left after the
    /// world's thread.
    pub workers: usize,
    /// Niceness each worker thread asks for ([`crate::config::Config::snapshot_nice`]; 0
    /// leaves it).
    pub nice: i32,
}

struct Viewer {
    sink: Box<dyn DatagramSink>,
    kick: mpsc::Sender<Kick>,
    view: ClientView,
    /// Bandwidth tokens, bytes.
    tokens: f64,
    /// The most free space its send buffer has shown: less means a snapshot still waits
    /// there.
    send_room: usize,
    congested_ticks: u32,
    kicked: bool,
    /// The newest snapshot the client acknowledged that its view has not taken yet: taken
    /// just before the client's next snapshot is built, while the view it changes is in
    /// the cache for that snapshot (taken at once, it would be read from memory twice
    /// a tick, once for the acknowledgement and once for the snapshot).
    pending_ack: Option<u64>,
    /// When its last snapshot was handed to its connection.
    last_sent: Option<Instant>,
}

impl Viewer {
    /// One more snapshot in a row that the connection could not take; at `limit`, the
    /// session is told to end (a client that does not keep up).
    fn note_congested(&mut self, limit: u32) {
        self.congested_ticks += 1;
        if self.congested_ticks >= limit {
            self.kicked = true;
            let _ = self.kick.try_send(Kick {
                reason: DisconnectReason::SlowClient,
                text: format!(
                    "your connection dropped {} snapshots in a row",
                    self.congested_ticks
                ),
            });
        }
    }
}

/// A sink that only counts the bytes sent to it (no limit, never congested): for benches
/// and tests of the snapshot path without a network.
pub struct ByteCounter(pub Arc<std::sync::atomic::AtomicUsize>);

impl DatagramSink for ByteCounter {
    fn max_datagram_size(&self) -> Option<usize> {
        Some(protocol::MAX_DATAGRAM_BYTES)
    }
    fn send_space(&self) -> usize {
        usize::MAX
    }
    fn send(&self, datagram: bytes::Bytes) -> bool {
        self.0
            .fetch_add(datagram.len(), std::sync::atomic::Ordering::Relaxed);
        true
    }
}

/// Bytes of each buffer that sent datagrams are cut from: about eighty snapshots share
/// one allocation, freed once QUIC has sent (or dropped) all of them.
const ARENA_BYTES: usize = 64 * 1024;

/// The snapshot side of every session.
pub struct Snapshotter {
    viewers: BTreeMap<SessionId, Viewer>,
    config: SnapshotConfig,
    metrics: Arc<Metrics>,
    scratch: Scratch,
    /// The datagram being built, reused for every client.
    datagram: Vec<u8>,
    /// Where datagrams handed to QUIC are copied and cut from.
    arena: BytesMut,
}

impl Snapshotter {
    /// No sessions yet.
    pub fn new(config: SnapshotConfig, metrics: Arc<Metrics>) -> Snapshotter {
        Snapshotter {
            viewers: BTreeMap::new(),
            config,
            metrics,
            scratch: Scratch::default(),
            datagram: Vec::new(),
            arena: BytesMut::new(),
        }
    }

    /// Sessions served.
    pub fn len(&self) -> usize {
        self.viewers.len()
    }

    /// Whether no session is served.
    pub fn is_empty(&self) -> bool {
        self.viewers.is_empty()
    }

    /// Applies the job's session changes, then builds and sends the snapshot of every
    /// `stride`-th client (those whose session number plus the tick divides by it; 1: all).
    pub fn serve(&mut self, job: SnapshotJob, stride: u64) {
        let stride = stride.max(1);
        let per_tick = f64::from(self.config.bandwidth_cap_bytes_per_sec) / 20.0;
        let changes = job.changes;
        for new in changes.joined {
            self.viewers.insert(
                new.session,
                Viewer {
                    sink: new.sink,
                    kick: new.kick,
                    view: ClientView::new(),
                    tokens: per_tick,
                    send_room: 0,
                    congested_ticks: 0,
                    kicked: false,
                    pending_ack: None,
                    last_sent: None,
                },
            );
        }
        for (session, tick) in changes.acks {
            if let Some(viewer) = self.viewers.get_mut(&session) {
                // One the client's view has not taken yet (it had no turn since) is taken
                // now, so that acknowledgements still reach the view in order.
                if let Some(older) = viewer.pending_ack.replace(tick) {
                    viewer.view.acknowledge(older);
                }
            }
        }
        for session in changes.left {
            self.viewers.remove(&session);
        }

        // A client may bank two ticks of bandwidth, so a burst of entries fits.
        let bank = 2.0 * per_tick;
        for client in &job.clients {
            if !(client.session + job.tick).is_multiple_of(stride) {
                continue;
            }
            let Some(viewer) = self.viewers.get_mut(&client.session) else {
                continue;
            };
            if let Some(tick) = viewer.pending_ack.take() {
                viewer.view.acknowledge(tick);
            }
            if viewer.kicked {
                continue;
            }
            // Bandwidth accrues for every tick since the client's last turn.
            viewer.tokens = (viewer.tokens + per_tick * stride as f64).min(bank * stride as f64);
            let Some(path_max) = viewer.sink.max_datagram_size() else {
                continue;
            };
            // The last snapshot still waits in the connection's send buffer (its QUIC stack
            // is behind, or the path is congested): a new one would only queue behind it,
            // staler with every tick, so this turn is skipped before any work goes into it.
            // The bandwidth it would have used stays banked.
            let space = viewer.sink.send_space();
            viewer.send_room = viewer.send_room.max(space);
            if space < viewer.send_room {
                self.metrics.snapshot_dropped(SnapshotDrop::Backlog);
                viewer.note_congested(self.config.slow_client_ticks);
                continue;
            }
            let budget = (self.config.snapshot_max_bytes as usize)
                .min(path_max)
                .min(viewer.tokens as usize);
            let built = viewer.view.snapshot_into(
                &job.frame,
                &mut self.scratch,
                client.me,
                client.at,
                (job.tick, client.applied_seq),
                budget,
                &mut self.datagram,
            );
            if built.is_err() {
                self.metrics.snapshot_dropped(SnapshotDrop::Budget);
                continue;
            }
            let datagram = &self.datagram;
            // Only this worker queues datagrams on the connection, so the space read above
            // can only have grown since.
            if space < datagram.len() {
                self.metrics.snapshot_dropped(SnapshotDrop::Congested);
                viewer.note_congested(self.config.slow_client_ticks);
                continue;
            }
            viewer.congested_ticks = 0;
            viewer.tokens -= datagram.len() as f64;
            if self.arena.capacity() < datagram.len() {
                self.arena = BytesMut::with_capacity(ARENA_BYTES.max(datagram.len()));
            }
            self.arena.extend_from_slice(datagram);
            // A connection that is gone takes nothing: not counted as sent.
            if !viewer.sink.send(self.arena.split().freeze()) {
                continue;
            }
            self.metrics.bytes_out.inc_by(datagram.len() as u64);
            self.metrics.datagrams_out.inc();
            let now = Instant::now();
            if let Some(last) = viewer.last_sent.replace(now) {
                self.metrics.observe_send_interval(now - last);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;
    use protocol::{EntityKind, EntityState, Motion, QPos};

    use super::*;
    use crate::interest::ViewRange;

    /// Keeps every datagram sent to one session, in order (the pool's tests use it too).
    #[derive(Clone, Default)]
    pub(crate) struct Recorder(pub(crate) Arc<Mutex<Vec<Bytes>>>);

    impl DatagramSink for Recorder {
        fn max_datagram_size(&self) -> Option<usize> {
            Some(1_200)
        }
        fn send_space(&self) -> usize {
            usize::MAX
        }
        fn send(&self, datagram: Bytes) -> bool {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(datagram);
            true
        }
    }

    /// A connection's datagram send buffer of 10,000 bytes: what is sent waits there until
    /// the test lets the connection drain it.
    #[derive(Clone, Default)]
    struct SendBuffer {
        queued: Arc<AtomicUsize>,
        sent: Arc<AtomicUsize>,
    }

    impl SendBuffer {
        const CAPACITY: usize = 10_000;
        fn drain(&self) {
            self.queued.store(0, Ordering::Relaxed);
        }
    }

    impl DatagramSink for SendBuffer {
        fn max_datagram_size(&self) -> Option<usize> {
            Some(1_200)
        }
        fn send_space(&self) -> usize {
            Self::CAPACITY - self.queued.load(Ordering::Relaxed)
        }
        fn send(&self, datagram: Bytes) -> bool {
            self.queued.fetch_add(datagram.len(), Ordering::Relaxed);
            self.sent.fetch_add(1, Ordering::Relaxed);
            true
        }
    }

    /// 300 NPCs milling around the client at (50, 50), all moving every tick.
    fn frame(tick: u64) -> Frame {
        let mut states = Vec::new();
        let mut positions = Vec::new();
        for i in 0..300u32 {
            let angle = i as f32 * 0.37 + tick as f32 * 0.05;
            let r = 2.0 + (i % 25) as f32;
            let (x, y) = (50.0 + r * angle.cos(), 50.0 + r * angle.sin());
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

    /// A one-worker snapshotter with 800-byte snapshots, `cap` bytes a second a client, and
    /// slow clients ended after `slow_client_ticks`.
    fn snapshotter(cap: u32, slow_client_ticks: u32, metrics: Arc<Metrics>) -> Snapshotter {
        let config = SnapshotConfig {
            bandwidth_cap_bytes_per_sec: cap,
            snapshot_max_bytes: 800,
            slow_client_ticks,
            workers: 1,
            nice: 0,
        };
        Snapshotter::new(config, metrics)
    }

    /// Session 1 joining with `sink`, and the receiving end of its kicks.
    fn joining(sink: impl DatagramSink + 'static) -> (Membership, mpsc::Receiver<Kick>) {
        let (kick, kicks) = mpsc::channel(1);
        let mut changes = Membership::default();
        changes.joined.push(NewViewer {
            session: 1,
            sink: Box::new(sink),
            kick,
        });
        (changes, kicks)
    }

    /// Session 1 acknowledging the snapshot of `tick`.
    fn acked(tick: u64) -> Membership {
        let mut changes = Membership::default();
        changes.acks.insert(1, tick);
        changes
    }

    /// Tick `tick`'s job for session 1 alone, its character at (50, 50).
    fn one_client_job(tick: u64, frame: Arc<Frame>, changes: Membership) -> SnapshotJob {
        SnapshotJob {
            tick,
            frame,
            clients: vec![ClientTick {
                session: 1,
                me: NetId {
                    index: 0,
                    generation: 0,
                },
                at: (50.0, 50.0),
                applied_seq: 0,
            }],
            changes,
        }
    }

    /// Every snapshot after a client's first counts the time since the one before in
    /// `mmo_snapshot_send_interval_seconds`; a tick the client is skipped (here: a job
    /// that does not list it) makes that time longer.
    #[test]
    fn the_time_between_a_clients_snapshots_is_counted() {
        let metrics = Arc::new(Metrics::default());
        let mut snapshotter = snapshotter(100_000, 200, Arc::clone(&metrics));
        let (changes, _kicks) = joining(Recorder::default());
        snapshotter.serve(one_client_job(1, Arc::new(frame(1)), changes), 1);
        let count = |metrics: &Metrics| {
            let text = metrics.render().unwrap_or_default();
            let line = text
                .lines()
                .find(|line| line.starts_with("mmo_snapshot_send_interval_seconds_count"))
                .map(str::to_owned);
            line.and_then(|line| line.split(' ').nth(1)?.parse::<u64>().ok())
        };
        assert_eq!(count(&metrics), Some(0));
        std::thread::sleep(std::time::Duration::from_millis(70));
        snapshotter.serve(
            one_client_job(2, Arc::new(frame(2)), Membership::default()),
            1,
        );
        assert_eq!(count(&metrics), Some(1));
        // At least the 70 ms slept: not in the buckets up to 65 ms.
        let text = metrics.render().unwrap_or_default();
        assert!(
            text.contains("mmo_snapshot_send_interval_seconds_bucket{le=\"0.065\"} 0\n"),
            "{text}"
        );
    }

    /// A connection that is gone takes nothing: what its sink refuses is not counted as
    /// sent.
    #[test]
    fn datagrams_a_gone_connection_refuses_are_not_counted_as_sent() {
        #[derive(Clone)]
        struct Gone;
        impl DatagramSink for Gone {
            fn max_datagram_size(&self) -> Option<usize> {
                Some(1_200)
            }
            fn send_space(&self) -> usize {
                usize::MAX
            }
            fn send(&self, _: Bytes) -> bool {
                false
            }
        }
        fn counted(sink: impl DatagramSink + 'static) -> (u64, u64) {
            let metrics = Arc::new(Metrics::default());
            let mut served = snapshotter(100_000, 200, Arc::clone(&metrics));
            let (changes, _kicks) = joining(sink);
            served.serve(one_client_job(1, Arc::new(frame(1)), changes), 1);
            (metrics.datagrams_out.get(), metrics.bytes_out.get())
        }
        assert_eq!(counted(Gone), (0, 0));
        let (datagrams, bytes) = counted(Recorder::default());
        assert_eq!(datagrams, 1);
        assert!(bytes > 0);
    }

    #[test]
    fn a_client_never_gets_more_than_its_bandwidth_cap() {
        let cap = 4_000;
        let metrics = Arc::new(Metrics::default());
        let mut snapshotter = snapshotter(cap, 200, Arc::clone(&metrics));
        let sent = Recorder::default();
        let (mut changes, _kicks) = joining(sent.clone());
        let ticks = 100u64;
        for tick in 1..=ticks {
            let mut job = one_client_job(tick, Arc::new(frame(tick)), std::mem::take(&mut changes));
            // The client acknowledges each snapshot it got, one tick later.
            if tick > 1 {
                job.changes.acks.insert(1, tick - 1);
            }
            snapshotter.serve(job, 1);
        }
        let sizes: Vec<usize> = sent.0.lock().unwrap().iter().map(Bytes::len).collect();
        let total: usize = sizes.iter().sum();
        let seconds = ticks as f64 / 20.0;
        // At most the cap over the run, plus the two ticks of bandwidth a client may bank.
        let allowed = f64::from(cap) * seconds + 2.0 * f64::from(cap) / 20.0;
        assert!(total as f64 <= allowed, "{total} bytes in {seconds} s");
        // The budget was the limit, not the crowd: it was nearly used up.
        assert!(
            total as f64 >= 0.8 * f64::from(cap) * seconds,
            "{total} bytes"
        );
        // No datagram is larger than two ticks of bandwidth, and every tick sent one.
        assert!(
            sizes.iter().all(|&size| size <= 2 * cap as usize / 20),
            "{sizes:?}"
        );
        assert_eq!(sizes.len() as u64, ticks);
    }

    /// Once warm, serving a tick allocates next to nothing: the snapshot is built in
    /// reused memory and the datagram handed to QUIC is cut from a shared buffer, one
    /// allocation for dozens of snapshots.
    #[test]
    fn a_warm_snapshot_worker_allocates_once_in_dozens_of_snapshots() {
        let metrics = Arc::new(Metrics::default());
        let mut snapshotter = snapshotter(16_000, 200, metrics);
        let sent = Arc::new(AtomicUsize::new(0));
        let (changes, _kicks) = joining(ByteCounter(Arc::clone(&sent)));
        let frames: Vec<Arc<Frame>> = (0..40).map(|t| Arc::new(frame(t))).collect();
        let job = |tick: u64, changes: Membership| {
            one_client_job(
                tick,
                Arc::clone(&frames[tick as usize % frames.len()]),
                changes,
            )
        };
        snapshotter.serve(job(1, changes), 1);
        for tick in 2..=100 {
            snapshotter.serve(job(tick, acked(tick - 1)), 1);
        }
        let (ticks, before) = (400u64, sent.load(Ordering::Relaxed));
        let mut allocations = 0;
        for tick in 101..101 + ticks {
            let job = job(tick, acked(tick - 1));
            allocations += allocation_counter::measure(|| snapshotter.serve(job, 1)).count_total;
        }
        let bytes = sent.load(Ordering::Relaxed) - before;
        assert!(bytes >= 400 * ticks as usize, "{bytes} bytes sent");
        // A buffer per 64 KiB sent and its shared reference count, and nothing else.
        let buffers = bytes.div_ceil(ARENA_BYTES) as u64;
        assert!(
            allocations <= 2 * (buffers + 1),
            "{allocations} allocations for {ticks} snapshots of {bytes} bytes"
        );
    }

    /// A client whose connection has not sent its last snapshot yet gets no new one (none
    /// is built to queue behind the old); once the connection drains, snapshots flow again;
    /// a connection that never drains ends the session as a slow client.
    #[test]
    fn no_snapshot_is_built_while_the_last_one_waits_to_leave() {
        let metrics = Arc::new(Metrics::default());
        let slow_client_ticks = 5;
        let mut snapshotter = snapshotter(16_000, slow_client_ticks, Arc::clone(&metrics));
        let buffer = SendBuffer::default();
        let (mut changes, mut kicks) = joining(buffer.clone());
        let mut serve = |tick: u64, changes: Membership| {
            snapshotter.serve(one_client_job(tick, Arc::new(frame(tick)), changes), 1);
        };
        // Drained between ticks: one snapshot a tick.
        serve(1, std::mem::take(&mut changes));
        for tick in 2..=10 {
            buffer.drain();
            serve(tick, Membership::default());
        }
        assert_eq!(buffer.sent.load(Ordering::Relaxed), 10);
        // Not drained: the tick's snapshot is not built, a few ticks in a row.
        for tick in 11..=13 {
            serve(tick, Membership::default());
        }
        assert_eq!(buffer.sent.load(Ordering::Relaxed), 10);
        assert!(kicks.try_recv().is_err(), "kicked too early");
        // Drained again: the next tick has its snapshot.
        buffer.drain();
        serve(14, Membership::default());
        assert_eq!(buffer.sent.load(Ordering::Relaxed), 11);
        // Never drained again: after `slow_client_ticks` turns in a row, the session ends.
        for tick in 15..15 + u64::from(slow_client_ticks) {
            serve(tick, Membership::default());
        }
        assert_eq!(buffer.sent.load(Ordering::Relaxed), 11);
        let kicked = kicks.try_recv().expect("the slow client is told to go");
        assert_eq!(kicked.reason, DisconnectReason::SlowClient);
    }

    /// Acknowledgements that arrive while a client has no turn (the stride skips it) are
    /// taken, in order, before its next snapshot is built: that snapshot is a delta
    /// against the newest of them.
    #[test]
    fn acknowledgements_between_turns_reach_the_next_snapshot() {
        let mut snapshotter = snapshotter(16_000, 200, Arc::new(Metrics::default()));
        let sent = Recorder::default();
        let (changes, _kicks) = joining(sent.clone());
        let baseline_of_last = || {
            let datagrams = sent.0.lock().unwrap();
            let last = datagrams.last().expect("a snapshot was sent");
            match protocol::codec::decode_datagram(last).expect("a snapshot datagram") {
                protocol::ServerDatagram::Snapshot(snapshot) => snapshot.baseline_tick,
            }
        };
        // Ticks 1 to 3 at stride 1, nothing acknowledged: three snapshots against nothing.
        snapshotter.serve(one_client_job(1, Arc::new(frame(1)), changes), 1);
        for tick in 2..=3 {
            snapshotter.serve(
                one_client_job(tick, Arc::new(frame(tick)), Membership::default()),
                1,
            );
        }
        assert_eq!(sent.0.lock().unwrap().len(), 3);
        assert_eq!(baseline_of_last(), None);
        // At stride 4 session 1 has its turn at tick 7 only; snapshots 1 and 3 are
        // acknowledged at ticks 4 and 5, when it has none.
        snapshotter.serve(one_client_job(4, Arc::new(frame(4)), acked(1)), 4);
        snapshotter.serve(one_client_job(5, Arc::new(frame(5)), acked(3)), 4);
        snapshotter.serve(
            one_client_job(6, Arc::new(frame(6)), Membership::default()),
            4,
        );
        assert_eq!(sent.0.lock().unwrap().len(), 3);
        snapshotter.serve(
            one_client_job(7, Arc::new(frame(7)), Membership::default()),
            4,
        );
        assert_eq!(sent.0.lock().unwrap().len(), 4);
        assert_eq!(baseline_of_last(), Some(3));
    }
}
