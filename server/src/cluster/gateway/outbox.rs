//! The router's side of the bus queue: inputs may be dropped when it is full, joins and
//! leaves never are.
//!
//! While NATS is slow or reconnecting the publisher stops taking from the queue, and the
//! players' inputs fill it. A join dropped then would leave its session waiting for an
//! answer that never comes; a leave dropped would leave its character in a zone for
//! good. So inputs may only take the queue while more than a reserve of its slots is
//! free (the rest are dropped and counted), and joins and leaves that find even the
//! reserve taken wait, in order, in a backlog that is offered again before anything else.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, error::TrySendError};
use tracing::{error, warn};

use super::GatewayOut;

/// The share of the queue's slots kept for joins and leaves: 1/16 (1,024 of 16,384).
const RESERVED_SHARE: usize = 16;
/// Joins and leaves waiting in the backlog beyond which new logins are refused (leaves
/// and joins of characters already in the game still wait: they are never dropped).
pub(super) const MAX_BACKLOG: usize = 4096;

/// The bus queue as the router sees it.
pub(super) struct Outbox {
    tx: mpsc::Sender<GatewayOut>,
    /// Joins and leaves the queue could not take yet, oldest first.
    backlog: VecDeque<GatewayOut>,
    /// Inputs dropped since [`Outbox::take_dropped_inputs`] last looked.
    dropped_inputs: u64,
    /// The backlog length at which the next warning is logged.
    loud_at: usize,
    /// The publisher has stopped (the gateway is going down); said once.
    closed: bool,
}

impl Outbox {
    pub(super) fn new(tx: mpsc::Sender<GatewayOut>) -> Outbox {
        Outbox {
            tx,
            backlog: VecDeque::new(),
            dropped_inputs: 0,
            loud_at: 1,
            closed: false,
        }
    }

    /// Slots only joins and leaves may take.
    fn reserved(&self) -> usize {
        (self.tx.max_capacity() / RESERVED_SHARE).max(1)
    }

    /// Queues an input unless the queue is down to its reserve (or joins and leaves are
    /// waiting): then it is dropped and counted. `false` when dropped.
    pub(super) fn input(&mut self, out: GatewayOut) -> bool {
        self.flush();
        if !self.backlog.is_empty() || self.tx.capacity() <= self.reserved() {
            self.dropped_inputs += 1;
            return false;
        }
        match self.tx.try_send(out) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped_inputs += 1;
                false
            }
            Err(TrySendError::Closed(_)) => {
                self.stopped();
                false
            }
        }
    }

    /// Queues a join or a leave; what the queue cannot take now waits in the backlog,
    /// behind the joins and leaves already waiting there.
    pub(super) fn control(&mut self, out: GatewayOut) {
        self.flush();
        if self.closed {
            return;
        }
        if self.backlog.is_empty() {
            match self.tx.try_send(out) {
                Ok(()) => return,
                Err(TrySendError::Full(out)) => self.backlog.push_back(out),
                Err(TrySendError::Closed(_)) => {
                    self.stopped();
                    return;
                }
            }
        } else {
            self.backlog.push_back(out);
        }
        if self.backlog.len() >= self.loud_at {
            warn!(
                waiting = self.backlog.len(),
                "the gateway's bus queue is full: joins and leaves wait for it (inputs are dropped)"
            );
            self.loud_at = self.backlog.len() * 2;
        }
    }

    /// Hands the queue what waits in the backlog, as far as it takes it.
    pub(super) fn flush(&mut self) {
        while let Some(out) = self.backlog.pop_front() {
            match self.tx.try_send(out) {
                Ok(()) => {}
                Err(TrySendError::Full(out)) => {
                    self.backlog.push_front(out);
                    return;
                }
                Err(TrySendError::Closed(_)) => {
                    self.stopped();
                    return;
                }
            }
        }
        self.loud_at = 1;
    }

    /// Hands the backlog to the queue as the gateway stops, waiting for room up to
    /// `patience`: the leaves of the sessions that ended with the shutdown are in it.
    /// `false` when some were left (the publisher stuck or gone).
    pub(super) fn finish(&mut self, patience: Duration) -> bool {
        let deadline = Instant::now() + patience;
        loop {
            self.flush();
            if self.backlog.is_empty() {
                return !self.closed;
            }
            if Instant::now() >= deadline {
                error!(
                    waiting = self.backlog.len(),
                    "joins and leaves the bus did not take before the gateway stopped"
                );
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Joins and leaves waiting for the queue.
    pub(super) fn backlog(&self) -> usize {
        self.backlog.len()
    }

    /// The inputs dropped since the last call.
    pub(super) fn take_dropped_inputs(&mut self) -> u64 {
        std::mem::take(&mut self.dropped_inputs)
    }

    fn stopped(&mut self) {
        if !self.closed {
            error!(
                waiting = self.backlog.len(),
                "the gateway's bus publisher has stopped; nothing more goes to the zones"
            );
        }
        self.closed = true;
        self.backlog.clear();
    }
}
