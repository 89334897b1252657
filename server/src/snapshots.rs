//! The snapshot thread: builds and sends every client's snapshot from a frame the world
//! thread hands over after each tick, while the world steps the next one.
//!
//! The world thread captures the frame (every body's wire state, a fraction of a
//! millisecond) and passes it with each client's character position, applied input and the
//! session changes since the last hand-over ([`SnapshotJob`]) through a channel that holds
//! one job. When the snapshot thread is still busy with the previous tick, the world does
//! not wait: that tick's snapshots are skipped (counted as `behind`) and the session
//! changes travel with the next job. So the tick's duration does not grow with the number
//! of clients.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use protocol::{DisconnectReason, NetId};
use tokio::sync::mpsc;

use crate::game::{DatagramSink, Kick, SessionId};
use crate::interest::{ClientView, Frame, Scratch};
use crate::metrics::{Metrics, SnapshotDrop};

/// A session the snapshot thread starts serving.
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

/// Everything the snapshot thread needs for one tick.
pub struct SnapshotJob {
    /// The tick.
    pub tick: u64,
    /// Every body's state.
    pub frame: Frame,
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
}

struct Viewer {
    sink: Box<dyn DatagramSink>,
    kick: mpsc::Sender<Kick>,
    view: ClientView,
    /// Bandwidth tokens, bytes.
    tokens: f64,
    congested_ticks: u32,
    kicked: bool,
}

/// The snapshot side of every session.
pub struct Snapshotter {
    viewers: BTreeMap<SessionId, Viewer>,
    config: SnapshotConfig,
    metrics: Arc<Metrics>,
    scratch: Scratch,
}

impl Snapshotter {
    /// No sessions yet.
    pub fn new(config: SnapshotConfig, metrics: Arc<Metrics>) -> Snapshotter {
        Snapshotter {
            viewers: BTreeMap::new(),
            config,
            metrics,
            scratch: Scratch::default(),
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
                    congested_ticks: 0,
                    kicked: false,
                },
            );
        }
        for (session, tick) in changes.acks {
            if let Some(viewer) = self.viewers.get_mut(&session) {
                viewer.view.acknowledge(tick);
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
            if viewer.kicked {
                continue;
            }
            // Bandwidth accrues for every tick since the client's last turn.
            viewer.tokens = (viewer.tokens + per_tick * stride as f64).min(bank * stride as f64);
            let Some(path_max) = viewer.sink.max_datagram_size() else {
                continue;
            };
            let budget = (self.config.snapshot_max_bytes as usize)
                .min(path_max)
                .min(viewer.tokens as usize);
            let built = viewer.view.snapshot(
                &job.frame,
                &mut self.scratch,
                client.me,
                client.at,
                (job.tick, client.applied_seq),
                budget,
            );
            let Ok(datagram) = built else {
                self.metrics.snapshot_dropped(SnapshotDrop::Budget);
                continue;
            };
            if viewer.sink.send_space() < datagram.len() {
                self.metrics.snapshot_dropped(SnapshotDrop::Congested);
                viewer.congested_ticks += 1;
                if viewer.congested_ticks >= self.config.slow_client_ticks {
                    viewer.kicked = true;
                    let _ = viewer.kick.try_send(Kick {
                        reason: DisconnectReason::SlowClient,
                        text: format!(
                            "your connection dropped {} snapshots in a row",
                            viewer.congested_ticks
                        ),
                    });
                }
                continue;
            }
            viewer.congested_ticks = 0;
            viewer.tokens -= datagram.len() as f64;
            self.metrics.bytes_out.add(datagram.len() as u64);
            self.metrics.datagrams_out.inc();
            viewer.sink.send(Bytes::from(datagram));
        }
    }
}
