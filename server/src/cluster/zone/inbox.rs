//! The zone's inbox from the bus, in two lanes.
//!
//! Inputs and neighbours' frames come by the thousand a second and may be dropped when the
//! world thread falls behind: the next one supersedes them. What settles who holds which
//! character (joins, leaves, handoffs and their answers) and the heartbeats that say a
//! gateway is alive come a few a second and must not be: a dropped leave keeps a character
//! in the world with nobody playing it, and five dropped heartbeats in a row make a zone
//! take a live gateway for gone and remove its players. They travel in a lane of their own,
//! which a flood of inputs cannot fill, and the world thread reads it first.
//!
//! Each lane is bounded by bytes as well as by count: a neighbour's frame or a handoff
//! (with its path) may be a thousand times the size of an input, so a count alone would
//! let a flood of large messages (from a stalled world thread, or from whoever publishes
//! on the bus) hold gigabytes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

use super::super::zone_world::ZoneIn;

/// Inputs and frames waiting for the world thread.
pub(super) const DATA: usize = 65_536;
/// The bus payload bytes of the inputs and frames waiting for the world thread, at most.
pub(super) const DATA_BYTES: usize = 64 * 1024 * 1024;
/// Joins, leaves, handoffs, answers and heartbeats waiting for the world thread.
pub(super) const CONTROL: usize = 16_384;
/// Their bus payload bytes, at most (answers to the zone's own requests count none).
pub(super) const CONTROL_BYTES: usize = 64 * 1024 * 1024;

/// How much a lane holds: messages, and bus payload bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bound {
    /// Messages.
    pub count: usize,
    /// Payload bytes.
    pub bytes: usize,
}

/// The bus's side: where each message goes.
#[derive(Clone)]
pub(super) struct InboxTx {
    control: LaneTx,
    data: LaneTx,
}

/// The world thread's side.
pub(super) struct InboxRx {
    control: LaneRx,
    data: LaneRx,
}

/// One lane's sending side: each message with the payload bytes it was counted for.
#[derive(Clone)]
struct LaneTx {
    tx: mpsc::Sender<(ZoneIn, usize)>,
    queued: Arc<Budget>,
}

struct LaneRx {
    rx: mpsc::Receiver<(ZoneIn, usize)>,
    queued: Arc<Budget>,
}

/// Bytes queued in a lane, and the most it may hold.
struct Budget {
    queued: AtomicUsize,
    most: usize,
}

fn lane(bound: Bound) -> (LaneTx, LaneRx) {
    let (tx, rx) = mpsc::channel(bound.count);
    let queued = Arc::new(Budget {
        queued: AtomicUsize::new(0),
        most: bound.bytes,
    });
    let rx = LaneRx {
        rx,
        queued: Arc::clone(&queued),
    };
    (LaneTx { tx, queued }, rx)
}

/// An inbox whose lanes hold what `control` and `data` allow.
pub(super) fn inbox(control: Bound, data: Bound) -> (InboxTx, InboxRx) {
    let (control_tx, control_rx) = lane(control);
    let (data_tx, data_rx) = lane(data);
    (
        InboxTx {
            control: control_tx,
            data: data_tx,
        },
        InboxRx {
            control: control_rx,
            data: data_rx,
        },
    )
}

/// Whether `message` may be dropped when its lane is full.
fn droppable(message: &ZoneIn) -> bool {
    match message {
        ZoneIn::Input(_) | ZoneIn::Frame(_) => true,
        ZoneIn::Join(..)
        | ZoneIn::Leave(_)
        | ZoneIn::Superseded(..)
        | ZoneIn::Handoff(..)
        | ZoneIn::HandoffAnswer { .. }
        | ZoneIn::Announced
        | ZoneIn::GatewayAlive { .. } => false,
    }
}

impl LaneTx {
    fn offer(&self, message: ZoneIn, bytes: usize) -> bool {
        let budget = &self.queued;
        let before = budget.queued.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > budget.most || self.tx.try_send((message, bytes)).is_err()
        {
            budget.queued.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl LaneRx {
    fn next(&mut self) -> Option<ZoneIn> {
        let (message, bytes) = self.rx.try_recv().ok()?;
        self.queued.queued.fetch_sub(bytes, Ordering::Relaxed);
        Some(message)
    }
}

impl InboxTx {
    /// Queues `message`, decoded from `bytes` bytes of payload, in its lane without
    /// waiting; `false` when that lane is full, by count or by bytes: the message is
    /// dropped.
    pub(super) fn offer(&self, message: ZoneIn, bytes: usize) -> bool {
        if droppable(&message) {
            self.data.offer(message, bytes)
        } else {
            self.control.offer(message, bytes)
        }
    }

    /// Queues `message` in the control lane, waiting for room (its bytes are not
    /// counted): for answers the world thread must always take.
    pub(super) async fn must_send(&self, message: ZoneIn) {
        // Closed only when the world thread has stopped, and then nobody needs it.
        let _ = self.control.tx.send((message, 0)).await;
    }
}

impl InboxRx {
    /// The next message, the control lane's first; `None` when both are empty.
    pub(super) fn next(&mut self) -> Option<ZoneIn> {
        self.control.next().or_else(|| self.data.next())
    }
}

#[cfg(test)]
mod tests {
    use protocol::NetId;
    use protocol::bus::PlayerInput;
    use protocol::messages::Command;

    use super::*;

    fn input(seq: u32) -> ZoneIn {
        ZoneIn::Input(PlayerInput {
            id: NetId::NONE,
            seq,
            command: Command::Nothing,
        })
    }

    #[test]
    fn a_flood_of_inputs_neither_drops_nor_delays_a_heartbeat_or_a_leave() {
        let (tx, mut rx) = inbox(bound(4, 1_000), bound(2, 1_000));
        assert!(tx.offer(input(1), 20));
        assert!(tx.offer(input(2), 20));
        assert!(!tx.offer(input(3), 20), "the data lane holds two");
        assert!(tx.offer(
            ZoneIn::GatewayAlive {
                index: 0,
                incarnation: 7
            },
            20
        ));
        assert!(tx.offer(ZoneIn::Leave(NetId::NONE), 20));
        let order: Vec<String> = std::iter::from_fn(|| rx.next())
            .map(|m| match m {
                ZoneIn::Input(input) => format!("input {}", input.seq),
                ZoneIn::GatewayAlive { .. } => "alive".to_owned(),
                ZoneIn::Leave(_) => "leave".to_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(order, ["alive", "leave", "input 1", "input 2"]);
    }

    fn bound(count: usize, bytes: usize) -> Bound {
        Bound { count, bytes }
    }

    /// Frames too large for the bytes left are dropped, however few are waiting; taking
    /// messages out gives their bytes back; control messages count in their own lane.
    #[test]
    fn the_data_lane_holds_a_bounded_number_of_bytes() {
        let (tx, mut rx) = inbox(bound(4, 10_000), bound(100, 1_000));
        assert!(tx.offer(input(1), 600));
        assert!(!tx.offer(input(2), 600), "1,200 bytes in a lane of 1,000");
        assert!(tx.offer(input(3), 400));
        assert!(!tx.offer(input(4), 1));
        assert!(tx.offer(ZoneIn::Leave(NetId::NONE), 5_000));
        assert!(matches!(rx.next(), Some(ZoneIn::Leave(_))));
        assert!(!tx.offer(input(5), 1), "the leave gave back no data bytes");
        assert!(matches!(rx.next(), Some(ZoneIn::Input(input)) if input.seq == 1));
        assert!(tx.offer(input(6), 600));
        assert!(!tx.offer(input(7), 1));
        let rest: Vec<u32> = std::iter::from_fn(|| rx.next())
            .map(|m| match m {
                ZoneIn::Input(input) => input.seq,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(rest, [3, 6]);
        assert!(tx.offer(input(8), 1_000));
    }

    /// Handoffs too large for the control lane's bytes left are dropped; answers the zone
    /// must take wait for room and count no bytes.
    #[tokio::test]
    async fn the_control_lane_holds_a_bounded_number_of_bytes() {
        let (tx, mut rx) = inbox(bound(8, 1_000), bound(8, 1_000));
        assert!(tx.offer(ZoneIn::Leave(NetId::NONE), 900));
        assert!(
            !tx.offer(ZoneIn::Leave(NetId::NONE), 200),
            "1,100 bytes in 1,000"
        );
        let answer = ZoneIn::HandoffAnswer {
            id: NetId::NONE,
            epoch: 1,
            ack: None,
        };
        tx.must_send(answer).await;
        assert!(
            tx.offer(input(1), 1_000),
            "the data lane's bytes are its own"
        );
        assert!(matches!(rx.next(), Some(ZoneIn::Leave(_))));
        assert!(tx.offer(ZoneIn::Leave(NetId::NONE), 1_000));
        assert!(matches!(rx.next(), Some(ZoneIn::HandoffAnswer { .. })));
        assert!(matches!(rx.next(), Some(ZoneIn::Leave(_))));
        assert!(matches!(rx.next(), Some(ZoneIn::Input(_))));
        assert!(rx.next().is_none());
    }
}
