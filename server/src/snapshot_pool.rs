//! The snapshot workers: every client's snapshot is built on one of several threads, so
//! the fan-out uses the cores the world's thread leaves free.
//!
//! Each worker owns a fixed shard of the clients (session number modulo the worker count)
//! with their per-client state ([`Snapshotter`]), so workers never share mutable state and
//! a client's snapshots always come from the same delta history. The world thread splits
//! each tick's job by shard, shares the frame read-only, and offers every worker its part
//! with `try_send` through a channel that holds one job: a worker still busy with an older
//! tick skips this one for its shard (counted as `behind`), and that shard's session
//! changes go back to the world to travel with the next job. The world never waits.
//!
//! How many ticks a client waits between snapshots (the stride) follows the slowest
//! worker: each worker keeps its own smoothed estimate, and the world serves every shard at
//! the largest one, so all clients get the same rate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::metrics::{Metrics, Phase, SnapshotDrop};
use crate::snapshots::{Membership, SnapshotConfig, SnapshotJob, Snapshotter};

/// Why the pool cannot take jobs any more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// A worker thread ended (it panicked): its clients are no longer served.
    #[error("a snapshot worker is gone")]
    WorkerGone,
}

/// The worker count used for `workers = 0`: the cores left after the world's thread, at
/// least one.
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |cores| cores.get().saturating_sub(1))
        .max(1)
}

/// One shard's part of a tick, with the stride to serve it at.
struct ShardJob {
    job: SnapshotJob,
    stride: u64,
}

struct Worker {
    jobs: SyncSender<ShardJob>,
    thread: JoinHandle<()>,
    /// The stride this worker's own timings ask for.
    wanted_stride: Arc<AtomicU64>,
}

/// Jobs taken and finished, for [`SnapshotPool::wait_idle`].
#[derive(Default)]
struct Progress {
    finished: Mutex<u64>,
    changed: Condvar,
}

/// The snapshot worker threads and the world thread's handle on them.
pub struct SnapshotPool {
    workers: Vec<Worker>,
    metrics: Arc<Metrics>,
    progress: Arc<Progress>,
    /// Jobs the workers accepted.
    handed: u64,
}

impl SnapshotPool {
    /// Starts [`SnapshotConfig::workers`] threads (0: [`default_workers`]).
    pub fn start(config: SnapshotConfig, metrics: Arc<Metrics>) -> std::io::Result<SnapshotPool> {
        let count = if config.workers == 0 {
            default_workers()
        } else {
            config.workers
        };
        let progress = Arc::new(Progress::default());
        metrics.snapshot_stride.set(1);
        let mut pool = SnapshotPool {
            workers: Vec::with_capacity(count),
            metrics: Arc::clone(&metrics),
            progress: Arc::clone(&progress),
            handed: 0,
        };
        for shard in 0..count {
            let (jobs, inbox) = std::sync::mpsc::sync_channel::<ShardJob>(1);
            let wanted_stride = Arc::new(AtomicU64::new(1));
            let (wanted, metrics, progress) = (
                Arc::clone(&wanted_stride),
                Arc::clone(&metrics),
                Arc::clone(&progress),
            );
            // A worker ends when the pool drops its sender.
            let thread = std::thread::Builder::new()
                .name(format!("snapshots-{shard}"))
                .spawn(move || {
                    crate::priority::apply(&format!("snapshots-{shard}"), config.nice);
                    let mut snapshotter = Snapshotter::new(config, Arc::clone(&metrics));
                    let mut pace = Pace::default();
                    while let Ok(ShardJob { job, stride }) = inbox.recv() {
                        let serves = job.clients.len();
                        let start = Instant::now();
                        snapshotter.serve(job, stride);
                        let took = start.elapsed();
                        metrics.observe_phase(Phase::Snapshots, took);
                        pace.update(took, stride, serves);
                        wanted.store(pace.stride, Ordering::Relaxed);
                        let mut finished = progress
                            .finished
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner());
                        *finished += 1;
                        progress.changed.notify_all();
                    }
                })?;
            pool.workers.push(Worker {
                jobs,
                thread,
                wanted_stride,
            });
        }
        Ok(pool)
    }

    /// Worker threads.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// The stride every client is served at now: the largest any worker asks for.
    pub fn stride(&self) -> u64 {
        self.workers
            .iter()
            .map(|worker| worker.wanted_stride.load(Ordering::Relaxed))
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Tells the pool the world has no snapshot job this tick (no client, no session
    /// change): the stride gauge shows what the workers ask for now, which is 1 once each
    /// has served its last clients' departure.
    pub fn rest(&self) {
        self.metrics.snapshot_stride.set(self.stride() as i64);
    }

    /// Splits the job by shard and offers each worker its part without waiting. Returns
    /// the session changes of the shards whose worker was still busy, for the next job.
    pub fn offer(&mut self, job: SnapshotJob) -> Result<Membership, PoolError> {
        let stride = self.stride();
        self.metrics.snapshot_stride.set(stride as i64);
        let mut undelivered = Membership::default();
        for (worker, part) in self.workers.iter().zip(split(job, self.workers.len())) {
            match worker.jobs.try_send(ShardJob { job: part, stride }) {
                Ok(()) => self.handed += 1,
                Err(TrySendError::Full(busy)) => {
                    self.metrics.snapshot_dropped(SnapshotDrop::Behind);
                    undelivered.prepend(busy.job.changes);
                }
                Err(TrySendError::Disconnected(_)) => return Err(PoolError::WorkerGone),
            }
        }
        Ok(undelivered)
    }

    /// Blocks until every job handed over so far is served (benches and tests; the world
    /// never calls it).
    pub fn wait_idle(&self) {
        let mut finished = self
            .progress
            .finished
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while *finished < self.handed {
            finished = self
                .progress
                .changed
                .wait(finished)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Lets the workers finish their jobs and waits for them to end. Returns how many
    /// panicked.
    pub fn stop(self) -> usize {
        let mut panicked = 0;
        for worker in self.workers {
            drop(worker.jobs);
            if worker.thread.join().is_err() {
                panicked += 1;
            }
        }
        panicked
    }
}

/// The job's clients and session changes by shard (session number modulo `shards`), each
/// part sharing the frame.
fn split(job: SnapshotJob, shards: usize) -> Vec<SnapshotJob> {
    let shards = shards.max(1);
    let shard_of = |session: u64| (session % shards as u64) as usize;
    let mut parts: Vec<SnapshotJob> = (0..shards)
        .map(|_| SnapshotJob {
            tick: job.tick,
            frame: Arc::clone(&job.frame),
            clients: Vec::with_capacity(job.clients.len() / shards + 1),
            changes: Membership::default(),
        })
        .collect();
    for client in job.clients {
        parts[shard_of(client.session)].clients.push(client);
    }
    let changes = job.changes;
    for new in changes.joined {
        parts[shard_of(new.session)].changes.joined.push(new);
    }
    for (session, tick) in changes.acks {
        parts[shard_of(session)].changes.acks.insert(session, tick);
    }
    for session in changes.left {
        parts[shard_of(session)].changes.left.push(session);
    }
    parts
}

/// How many ticks a client waits between snapshots, as one worker's timings ask for: 1
/// while it keeps up, more when serving all its clients would take longer than
/// [`SNAPSHOT_BUDGET`]. Then each tick serves every `stride`-th client in turn, so every
/// client gets regular snapshots at a lower rate instead of whole ticks being skipped for
/// all.
#[derive(Debug)]
struct Pace {
    stride: u64,
    /// Smoothed time serving every client would take, seconds.
    full_secs: f64,
}

/// Time a worker may spend per tick before the clients are thinned out.
const SNAPSHOT_BUDGET: Duration = Duration::from_millis(40);
/// Longest wait between a client's snapshots, in ticks.
const MAX_STRIDE: u64 = 8;

impl Default for Pace {
    fn default() -> Self {
        Pace {
            stride: 1,
            full_secs: 0.0,
        }
    }
}

impl Pace {
    /// Takes the time one job of `clients` clients took when served at `stride`. A job
    /// with no client starts the pace afresh: the cost of clients who are gone says
    /// nothing of those who come next.
    fn update(&mut self, took: Duration, stride: u64, clients: usize) {
        if clients == 0 {
            *self = Pace::default();
            return;
        }
        let full = took.as_secs_f64() * stride.max(1) as f64;
        // Smoothed over about ten ticks, so one slow tick does not halve everyone's rate.
        self.full_secs += (full - self.full_secs) * 0.1;
        let wanted = (self.full_secs / SNAPSHOT_BUDGET.as_secs_f64()).ceil() as u64;
        self.stride = wanted.clamp(1, MAX_STRIDE);
    }
}

#[cfg(test)]
#[path = "snapshot_pool_tests.rs"]
mod tests;
