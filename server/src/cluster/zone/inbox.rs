//! The zone's inbox from the bus, in two lanes.
//!
//! Inputs and neighbours' frames come by the thousand a second and may be dropped when the
//! world thread falls behind: the next one supersedes them. What settles who holds which
//! character (joins, leaves, handoffs and their answers) and the heartbeats that say a
//! gateway is alive come a few a second and must not be: a dropped leave keeps a character
//! in the world with nobody playing it, and five dropped heartbeats in a row make a zone
//! take a live gateway for gone and remove its players. They travel in a lane of their own,
//! which a flood of inputs cannot fill, and the world thread reads it first.

use tokio::sync::mpsc;

use super::super::zone_world::ZoneIn;

/// Inputs and frames waiting for the world thread.
pub(super) const DATA: usize = 65_536;
/// Joins, leaves, handoffs, answers and heartbeats waiting for the world thread.
pub(super) const CONTROL: usize = 16_384;

/// The bus's side: where each message goes.
#[derive(Clone)]
pub(super) struct InboxTx {
    control: mpsc::Sender<ZoneIn>,
    data: mpsc::Sender<ZoneIn>,
}

/// The world thread's side.
pub(super) struct InboxRx {
    control: mpsc::Receiver<ZoneIn>,
    data: mpsc::Receiver<ZoneIn>,
}

/// An inbox whose lanes hold `control` and `data` messages.
pub(super) fn inbox(control: usize, data: usize) -> (InboxTx, InboxRx) {
    let (control_tx, control_rx) = mpsc::channel(control);
    let (data_tx, data_rx) = mpsc::channel(data);
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

impl InboxTx {
    /// Queues `message` in its lane without waiting; `false` when that lane is full (the
    /// message is dropped).
    pub(super) fn offer(&self, message: ZoneIn) -> bool {
        let lane = if droppable(&message) {
            &self.data
        } else {
            &self.control
        };
        lane.try_send(message).is_ok()
    }

    /// Queues `message` in the control lane, waiting for room: for answers the world
    /// thread must always take.
    pub(super) async fn must_send(&self, message: ZoneIn) {
        // Closed only when the world thread has stopped, and then nobody needs it.
        let _ = self.control.send(message).await;
    }
}

impl InboxRx {
    /// The next message, the control lane's first; `None` when both are empty.
    pub(super) fn next(&mut self) -> Option<ZoneIn> {
        self.control
            .try_recv()
            .or_else(|_| self.data.try_recv())
            .ok()
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
        let (tx, mut rx) = inbox(4, 2);
        assert!(tx.offer(input(1)));
        assert!(tx.offer(input(2)));
        assert!(!tx.offer(input(3)), "the data lane holds two");
        assert!(tx.offer(ZoneIn::GatewayAlive {
            index: 0,
            incarnation: 7
        }));
        assert!(tx.offer(ZoneIn::Leave(NetId::NONE)));
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
}
