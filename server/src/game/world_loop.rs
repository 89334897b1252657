//! The world's thread: the loop that drains the sessions' messages, ticks the game every
//! [`TICK`] and hands each tick's snapshot job to the workers, on a schedule that counts
//! overruns instead of catching up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::sync::mpsc;
use tracing::{error, warn};

use super::{Game, TICK, ToWorld};
use crate::metrics::{Metrics, Phase};
use crate::snapshot_pool::SnapshotPool;
use crate::snapshots::SnapshotConfig;

/// Keeps a loop on deadlines [`TICK`] apart: a late tick is counted as an overrun and the
/// schedule restarts from now rather than running missed ticks in a burst.
pub(crate) struct Pacer {
    deadline: Instant,
}

impl Pacer {
    /// A schedule starting now.
    pub(crate) fn new() -> Pacer {
        Pacer {
            deadline: Instant::now(),
        }
    }

    /// Sleeps until the next deadline; `true` (counted in `metrics`) when it had passed.
    pub(crate) fn wait(&mut self, metrics: &Metrics) -> bool {
        self.deadline += TICK;
        let now = Instant::now();
        if now > self.deadline {
            metrics.tick_overruns.inc();
            self.deadline = now;
            true
        } else {
            std::thread::sleep(self.deadline - now);
            false
        }
    }
}

/// Runs the world loop on the current thread until `stop` is set or every session sender
/// is gone. `ready` is set after the first tick.
pub fn run_loop(
    mut game: Game,
    mut inbox: mpsc::Receiver<ToWorld>,
    snapshots: SnapshotConfig,
    metrics: Arc<Metrics>,
    stop: Arc<AtomicBool>,
    ready: Arc<AtomicBool>,
) {
    let mut pool = match SnapshotPool::start(snapshots, Arc::clone(&metrics)) {
        Ok(pool) => pool,
        Err(err) => {
            error!(%err, "cannot start the snapshot workers");
            return;
        }
    };
    world_loop(&mut game, &mut inbox, &mut pool, &metrics, &stop, &ready);
    game.save_everyone();
    let panicked = pool.stop();
    if panicked > 0 {
        error!(panicked, "snapshot workers panicked");
    }
}

fn world_loop(
    game: &mut Game,
    inbox: &mut mpsc::Receiver<ToWorld>,
    pool: &mut SnapshotPool,
    metrics: &Metrics,
    stop: &AtomicBool,
    ready: &AtomicBool,
) {
    let origin = Instant::now();
    let mut pacer = Pacer::new();
    // Bounded work per tick: at most this many session messages are drained.
    const MAX_MESSAGES_PER_TICK: usize = 65_536;
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let mut drained = 0;
        loop {
            match inbox.try_recv() {
                Ok(message) => {
                    game.handle(message);
                    drained += 1;
                    if drained >= MAX_MESSAGES_PER_TICK {
                        break;
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        let drained_at = Instant::now();
        let phases = game.tick(origin);
        match game.snapshot_job() {
            Some(job) => match pool.offer(job) {
                Ok(undelivered) => game.undeliverable(undelivered),
                // A worker is gone (it panicked): its clients are not served any more.
                Err(_) => return,
            },
            None => pool.rest(),
        }
        let end = Instant::now();
        ready.store(true, Ordering::Relaxed);

        metrics.ticks.inc();
        metrics.observe_tick(end - start);
        game.note_tick_time(end - start);
        for (name, time) in phases.named() {
            if let Some(phase) = Phase::of_world(name) {
                metrics.observe_phase(phase, time);
            }
        }
        metrics.observe_phase(Phase::NetworkInputs, drained_at - start);

        if pacer.wait(metrics) {
            warn!(
                tick = game.world().tick().0,
                took_ms = (end - start).as_secs_f64() * 1e3,
                "tick overran its 50 ms slot"
            );
        }
    }
}
