//! Joins the router waits on: answered once a frame shows the character, refused when
//! the zone says no, and given up when no answer comes in time, so that no session waits
//! for ever for a join the bus lost.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use protocol::bus::{BusMessage, PlayerLeave, ZoneFrame};
use protocol::{DisconnectReason, NetId};
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use super::outbox::Outbox;
use super::{GatewayOut, Player};
use crate::cluster::bus::{REQUEST_TIMEOUT, Verb, subject};
use crate::game::{Joined, Kick, SessionId};
use crate::snapshots::{Membership, NewViewer};

/// How long an accepted join waits for a frame that shows its character.
pub(super) const JOIN_FRAME_WAIT: Duration = Duration::from_secs(2);
/// How long a join waits for its zone's answer before the gateway gives it up: the bus
/// request's own timeout, and as long again for the bus queue ahead of it.
pub(crate) const JOIN_ANSWER_WAIT: Duration = REQUEST_TIMEOUT.saturating_mul(2);
/// The longest the gateway takes to answer a session's join, one way or the other.
pub(crate) const JOIN_ANSWERED_WITHIN: Duration = JOIN_ANSWER_WAIT.saturating_add(JOIN_FRAME_WAIT);

pub(super) struct Pending {
    pub(super) session: SessionId,
    pub(super) account: String,
    /// The login's number in the store.
    pub(super) login: u64,
    /// The zone the join went to.
    pub(super) zone: String,
    pub(super) at: (f32, f32),
    pub(super) sink: Box<dyn crate::game::DatagramSink>,
    pub(super) kick: mpsc::Sender<Kick>,
    pub(super) reply: oneshot::Sender<Result<Joined, DisconnectReason>>,
    /// When the join was asked for.
    pub(super) asked: Instant,
    /// The zone's yes, and when it came: the session is answered once a frame shows the
    /// character (a zone's answer and its frames travel on different subscriptions, so
    /// the answer may overtake the frame).
    pub(super) accepted: Option<(String, Instant)>,
}

/// Tells `zone` to let character `id` go (a zone that does not hold it does nothing).
pub(super) fn leave(outbox: &mut Outbox, zone: &str, id: NetId) {
    outbox.control(GatewayOut::Publish(
        subject(zone, Verb::Leave),
        BusMessage::Leave(PlayerLeave { id }),
    ));
}

/// Tells `zone`, and every other zone whose latest frame lists character `id` (real, or
/// offered to a neighbour), to let it go: a zone whose offer was adopted but whose answer
/// was lost takes the body back, and must have heard the leave to let it go then.
pub(super) fn leave_everywhere(
    outbox: &mut Outbox,
    frames: &BTreeMap<String, (ZoneFrame, Instant)>,
    zone: &str,
    id: NetId,
) {
    leave(outbox, zone, id);
    for (name, (frame, _)) in frames {
        if name != zone && frame.bodies.iter().any(|body| body.id == id) {
            leave(outbox, name, id);
        }
    }
}

impl super::Router {
    /// Tells the zones to let every character of this gateway go, its players' and those
    /// of the joins still waiting: the gateway stops, and the sessions the shutdown cut
    /// short (aborted at the end of the grace period) sent no leave, while their accounts'
    /// claims are given back as the process ends (a login through another gateway would
    /// otherwise find the character still in its zone, and place a second one).
    pub(crate) fn let_everyone_go(&mut self) {
        for (_, player) in std::mem::take(&mut self.players) {
            leave_everywhere(&mut self.outbox, &self.frames, &player.zone, player.id);
        }
        for (id, pending) in std::mem::take(&mut self.pending) {
            leave(&mut self.outbox, &pending.zone, id);
        }
    }
}

/// What answering joins changes in the router.
pub(super) struct Joins<'a> {
    pub(super) pending: &'a mut HashMap<NetId, Pending>,
    pub(super) players: &'a mut BTreeMap<SessionId, Player>,
    pub(super) membership: &'a mut Membership,
    pub(super) outbox: &'a mut Outbox,
}

/// Answers the sessions whose characters a frame now shows (`shown`: each player
/// character in the live frames, by its frame, and where it stands), or that waited too
/// long for that frame; refuses the joins no zone answered within [`JOIN_ANSWER_WAIT`]
/// and tells their zone to let the character go, should it have placed it after all.
pub(super) fn finish_joins(
    joins: Joins<'_>,
    shown: &HashMap<NetId, (u32, (f32, f32))>,
    now: Instant,
) {
    let Joins {
        pending: waiting,
        players,
        membership,
        outbox,
    } = joins;
    if waiting.is_empty() {
        return;
    }
    let unanswered: Vec<NetId> = waiting
        .iter()
        .filter(|(_, p)| p.accepted.is_none() && now.duration_since(p.asked) >= JOIN_ANSWER_WAIT)
        .map(|(&id, _)| id)
        .collect();
    for id in unanswered {
        let Some(pending) = waiting.remove(&id) else {
            continue;
        };
        warn!(
            session = pending.session, account = %pending.account, ?id, zone = %pending.zone,
            waited = ?now.duration_since(pending.asked),
            "no zone answered the join in time; the login is refused"
        );
        let _ = pending.reply.send(Err(DisconnectReason::Internal));
        leave(outbox, &pending.zone, id);
    }
    let ready: Vec<NetId> = waiting
        .iter()
        .filter_map(|(&id, p)| {
            let (_, since) = p.accepted.as_ref()?;
            (shown.contains_key(&id) || now.duration_since(*since) >= JOIN_FRAME_WAIT).then_some(id)
        })
        .collect();
    for id in ready {
        let Some(pending) = waiting.remove(&id) else {
            continue;
        };
        let Some((zone, _)) = pending.accepted else {
            continue;
        };
        let at = shown.get(&id).map_or(pending.at, |(_, at)| *at);
        if pending.reply.send(Ok(Joined { entity: id })).is_err() {
            leave(outbox, &zone, id);
            continue;
        }
        info!(session = pending.session, account = %pending.account, ?id, %zone, "player joined");
        let remote = pending.sink.remote().map(|addr| addr.to_string());
        membership.joined.push(NewViewer {
            session: pending.session,
            sink: pending.sink,
            kick: pending.kick.clone(),
        });
        players.insert(
            pending.session,
            Player {
                id,
                account: pending.account,
                login: pending.login,
                epoch: 0,
                zone,
                kick: pending.kick,
                remote,
                since_ms: crate::persist::now_ms().max(0) as u64,
                taken_seq: None,
                forwarded_seq: 0,
                zone_applied: 0,
                at,
                missing_since: None,
                rejoining: false,
            },
        );
    }
}
