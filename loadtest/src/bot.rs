//! One bot as a plain state machine: it is told what arrived ([`Bot::on_welcome`],
//! [`Bot::on_message`], [`Bot::on_datagram`]) and asked what to send
//! ([`Bot::next_input`]), always with the current time. It does no I/O and reads no
//! clock, so the swarm drives it over QUIC and tests drive it directly.
//!
//! Besides playing, a bot checks what the server tells it and counts every breach as a
//! [`Violation`]: snapshots must move forward in ticks and apply to their baseline, its
//! own character must be in its view, every position must lie inside the map bounds, and
//! its character must move when ordered somewhere.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use navmesh::Rng;
use protocol::codec::decode_datagram;
use protocol::{
    ClientMessage, Command, Input, NetId, Received, ServerDatagram, ServerMessage, Snapshot, View,
    ViewHistory, Welcome,
};
use serde::{Deserialize, Serialize};

/// How a bot plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Behaviour {
    /// Walks to a random point within 15 m every 3 to 8 seconds.
    Wander,
    /// Clicks like a player: a new point near the last every 0.4 to 1 second.
    Click,
    /// Stays connected and only acknowledges snapshots.
    Idle,
    /// Each bot picks one of the three by its number (half wander, a quarter each other).
    Mixed,
}

/// Something the server did wrong, as a bot saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Violation {
    /// A snapshot's tick was not newer than one already applied.
    TickBackwards,
    /// A snapshot did not apply to its baseline view, or did not decode.
    BadSnapshot,
    /// The bot's own character was missing from its view.
    SelfNotInView,
    /// An entity was outside the map bounds.
    OutOfBounds,
    /// The character did not move for 10 s while ordered to a point at least 3 m away.
    OrderIgnored,
    /// A message that has no place in the session (a second welcome, a bad frame).
    UnexpectedMessage,
}

impl Violation {
    /// Every kind, for reports.
    pub const ALL: [Violation; 6] = [
        Violation::TickBackwards,
        Violation::BadSnapshot,
        Violation::SelfNotInView,
        Violation::OutOfBounds,
        Violation::OrderIgnored,
        Violation::UnexpectedMessage,
    ];
}

/// A measurement or finding, drained by the driver with [`Bot::drain`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sample {
    /// Time from sending an input to the first snapshot that acknowledges it.
    Rtt(Duration),
    /// Time between two applied snapshots.
    SnapshotInterval(Duration),
    /// A breach of the protocol or the game's rules.
    Violation(Violation),
}

/// Inputs go out at least this often (each acknowledges the newest snapshot).
const INPUT_EVERY: Duration = Duration::from_millis(100);
/// An order not yet acknowledged is sent again after this long.
const RESEND_AFTER: Duration = Duration::from_millis(250);
/// Inputs remembered for round-trip times.
const SENT_KEPT: usize = 64;
/// How long an ordered character may stand still before it counts as ignored.
const STILL_LIMIT: Duration = Duration::from_secs(10);
/// Bounds slack for positions: centimetre rounding.
const BOUNDS_SLACK_M: f32 = 0.05;

struct Order {
    target: (f32, f32),
    seq: u32,
    sent_at: Instant,
    acked: bool,
}

/// One simulated player.
pub struct Bot {
    behaviour: Behaviour,
    rng: Rng,
    welcome: Option<Welcome>,
    history: ViewHistory,
    seq: u32,
    sent: VecDeque<(u32, Instant)>,
    last_applied_seq: u32,
    last_snapshot: Option<Instant>,
    next_input_at: Option<Instant>,
    next_order_at: Option<Instant>,
    order: Option<Order>,
    /// Where the character stood when it was last seen moving under an order.
    still_since: Option<(Instant, (f32, f32))>,
    samples: Vec<Sample>,
    /// Snapshots applied.
    pub snapshots: u64,
    /// Snapshots dropped because their baseline was no longer held.
    pub missing_baselines: u64,
}

impl Bot {
    /// A bot; `number` picks the behaviour of a mixed swarm and seeds its choices.
    pub fn new(behaviour: Behaviour, number: u64) -> Bot {
        let behaviour = match behaviour {
            Behaviour::Mixed => match number % 4 {
                0 | 1 => Behaviour::Wander,
                2 => Behaviour::Click,
                _ => Behaviour::Idle,
            },
            other => other,
        };
        Bot {
            behaviour,
            rng: Rng::new(number),
            welcome: None,
            history: ViewHistory::new(),
            seq: 0,
            sent: VecDeque::new(),
            last_applied_seq: 0,
            last_snapshot: None,
            next_input_at: None,
            next_order_at: None,
            order: None,
            still_since: None,
            samples: Vec::new(),
            snapshots: 0,
            missing_baselines: 0,
        }
    }

    /// What this bot does (a mixed swarm's bot has its own).
    pub fn behaviour(&self) -> Behaviour {
        self.behaviour
    }

    /// The login name for bot `number`.
    pub fn name(number: u64) -> String {
        format!("bot-{number}")
    }

    /// The session's welcome arrived.
    pub fn on_welcome(&mut self, welcome: Welcome, now: Instant) {
        if self.welcome.is_some() {
            self.samples
                .push(Sample::Violation(Violation::UnexpectedMessage));
        }
        self.welcome = Some(welcome);
        self.next_input_at = Some(now);
        self.next_order_at = Some(now + Duration::from_millis(self.random(0, 1000)));
    }

    /// A control message arrived; returns the answer to send, if any.
    pub fn on_message(&mut self, message: &ServerMessage, _now: Instant) -> Option<ClientMessage> {
        match message {
            ServerMessage::Ping { nonce } => Some(ClientMessage::Pong { nonce: *nonce }),
            ServerMessage::Welcome(_) => {
                self.samples
                    .push(Sample::Violation(Violation::UnexpectedMessage));
                None
            }
            ServerMessage::Pong { .. }
            | ServerMessage::Event(_)
            | ServerMessage::Disconnect { .. } => None,
        }
    }

    /// A datagram arrived.
    pub fn on_datagram(&mut self, bytes: &[u8], now: Instant) {
        match decode_datagram::<ServerDatagram>(bytes) {
            Ok(ServerDatagram::Snapshot(snapshot)) => self.on_snapshot(&snapshot, now),
            Err(_) => self.samples.push(Sample::Violation(Violation::BadSnapshot)),
        }
    }

    fn on_snapshot(&mut self, snapshot: &Snapshot, now: Instant) {
        let Some(welcome) = &self.welcome else {
            // Datagrams can overtake the welcome on the stream: nothing to check against yet.
            return;
        };
        match self.history.receive(snapshot) {
            Ok(Received::Applied) => {}
            Ok(Received::Stale) => {
                self.samples
                    .push(Sample::Violation(Violation::TickBackwards));
                return;
            }
            Ok(Received::MissingBaseline) => {
                self.missing_baselines += 1;
                return;
            }
            Err(_) => {
                self.samples.push(Sample::Violation(Violation::BadSnapshot));
                return;
            }
        }
        let Some((_, view)) = self.history.newest() else {
            return;
        };
        let bounds = welcome.bounds;
        let me = welcome.entity;
        let outside = view.entities().iter().any(|e| {
            let (x, y) = e.pos.to_metres();
            x < bounds.min_x - BOUNDS_SLACK_M
                || x > bounds.max_x + BOUNDS_SLACK_M
                || y < bounds.min_y - BOUNDS_SLACK_M
                || y > bounds.max_y + BOUNDS_SLACK_M
        });
        if outside {
            self.samples.push(Sample::Violation(Violation::OutOfBounds));
        }
        let position = view.get(me).map(|e| e.pos.to_metres());
        if position.is_none() {
            self.samples
                .push(Sample::Violation(Violation::SelfNotInView));
        }

        // Round trips: every input up to the acknowledged sequence is answered now.
        if snapshot.last_input_seq > self.last_applied_seq {
            self.last_applied_seq = snapshot.last_input_seq;
            while let Some(&(seq, sent_at)) = self.sent.front() {
                if seq > snapshot.last_input_seq {
                    break;
                }
                self.samples
                    .push(Sample::Rtt(now.saturating_duration_since(sent_at)));
                self.sent.pop_front();
            }
            if let Some(order) = &mut self.order
                && order.seq <= snapshot.last_input_seq
            {
                order.acked = true;
            }
        }
        if let Some(last) = self.last_snapshot {
            self.samples.push(Sample::SnapshotInterval(
                now.saturating_duration_since(last),
            ));
        }
        self.last_snapshot = Some(now);
        self.snapshots += 1;
        if let Some(position) = position {
            self.check_progress(position, now);
        }
    }

    /// An acknowledged order to a point 3 m or more away must move the character 0.3 m
    /// within 10 s.
    fn check_progress(&mut self, position: (f32, f32), now: Instant) {
        let ordered_far = self
            .order
            .as_ref()
            .is_some_and(|order| order.acked && distance(order.target, position) >= 3.0);
        if !ordered_far {
            self.still_since = None;
            return;
        }
        match self.still_since {
            Some((_, from)) if distance(from, position) >= 0.3 => {
                self.still_since = Some((now, position));
            }
            Some((since, _)) if now.saturating_duration_since(since) >= STILL_LIMIT => {
                self.samples
                    .push(Sample::Violation(Violation::OrderIgnored));
                self.still_since = Some((now, position));
            }
            Some(_) => {}
            None => self.still_since = Some((now, position)),
        }
    }

    /// The input to send now, if one is due: a new order when the behaviour wants one, an
    /// unacknowledged order again, or a plain acknowledgement at least every 100 ms.
    pub fn next_input(&mut self, now: Instant) -> Option<Input> {
        self.welcome.as_ref()?;
        let mut command = None;
        if self.next_order_at.is_some_and(|at| now >= at) {
            if let Some(target) = self.choose_target() {
                command = Some(Command::MoveTo {
                    x: target.0,
                    y: target.1,
                });
            }
            let wait = match self.behaviour {
                Behaviour::Wander => self.random(3_000, 8_000),
                Behaviour::Click => self.random(400, 1_000),
                Behaviour::Idle | Behaviour::Mixed => u64::MAX / 4,
            };
            self.next_order_at = Some(now + Duration::from_millis(wait));
        } else if let Some(order) = &self.order
            && !order.acked
            && now.saturating_duration_since(order.sent_at) >= RESEND_AFTER
        {
            command = Some(Command::MoveTo {
                x: order.target.0,
                y: order.target.1,
            });
        }
        let due = self.next_input_at.is_some_and(|at| now >= at);
        if command.is_none() && !due {
            return None;
        }
        self.seq += 1;
        self.next_input_at = Some(now + INPUT_EVERY);
        if let Some(Command::MoveTo { x, y }) = command {
            self.order = Some(Order {
                target: (x, y),
                seq: self.seq,
                sent_at: now,
                acked: false,
            });
            self.still_since = None;
        }
        self.sent.push_back((self.seq, now));
        if self.sent.len() > SENT_KEPT {
            self.sent.pop_front();
        }
        Some(Input {
            seq: self.seq,
            ack_tick: self.history.newest().map(|(tick, _)| tick),
            command: command.unwrap_or(Command::Nothing),
        })
    }

    /// When [`Bot::next_input`] next has something to send.
    pub fn next_wake(&self) -> Option<Instant> {
        let input = self.next_input_at?;
        Some(
            self.next_order_at
                .map_or(input, |order_at| input.min(order_at)),
        )
    }

    /// Takes the samples gathered since the last call.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Sample> {
        self.samples.drain(..)
    }

    /// The bot's character id, once welcomed.
    pub fn entity(&self) -> Option<NetId> {
        self.welcome.as_ref().map(|w| w.entity)
    }

    /// The newest view.
    pub fn view(&self) -> Option<&View> {
        self.history.newest().map(|(_, view)| view)
    }

    fn choose_target(&mut self) -> Option<(f32, f32)> {
        let welcome = self.welcome.as_ref()?;
        let (bounds, me) = (welcome.bounds, welcome.entity);
        let here = self.view()?.get(me)?.pos.to_metres();
        let (origin, spread) = match (self.behaviour, &self.order) {
            (Behaviour::Click, Some(order)) => (order.target, 3.0),
            (Behaviour::Wander | Behaviour::Click, _) => (here, 15.0),
            (Behaviour::Idle | Behaviour::Mixed, _) => return None,
        };
        let dx = (self.random(0, 2_000) as f32 / 1_000.0 - 1.0) * spread;
        let dy = (self.random(0, 2_000) as f32 / 1_000.0 - 1.0) * spread;
        let x = (origin.0 + dx).clamp(bounds.min_x, bounds.max_x);
        let y = (origin.1 + dy).clamp(bounds.min_y, bounds.max_y);
        Some((x, y))
    }

    /// A number in `lo..hi` (`lo` when the range is empty).
    fn random(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.range(lo, hi.max(lo + 1) - 1)
    }
}

fn distance(a: (f32, f32), b: (f32, f32)) -> f32 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::codec::encode_datagram;
    use protocol::{Bounds, EntityKind, EntityState, Motion, QPos};

    fn welcome() -> Welcome {
        Welcome {
            version: protocol::PROTOCOL_VERSION,
            entity: NetId {
                index: 7,
                generation: 0,
            },
            tick_rate_hz: 20,
            map_id: "test".to_owned(),
            bounds: Bounds {
                min_x: 0.0,
                min_y: 0.0,
                max_x: 100.0,
                max_y: 100.0,
            },
            view_radius_m: 30.0,
        }
    }

    fn me_at(x: f32, y: f32) -> EntityState {
        EntityState {
            id: welcome().entity,
            kind: EntityKind::Player,
            radius_cm: 40,
            pos: QPos::from_metres(x, y),
            motion: Motion::Idle,
        }
    }

    fn full(tick: u64, seq: u32, entities: Vec<EntityState>) -> Vec<u8> {
        encode_datagram(&ServerDatagram::Snapshot(Snapshot {
            tick,
            baseline_tick: None,
            last_input_seq: seq,
            entered: entities,
            changed: Vec::new(),
            left: Vec::new(),
        }))
        .unwrap()
    }

    fn violations(bot: &mut Bot) -> Vec<Violation> {
        bot.drain()
            .filter_map(|s| match s {
                Sample::Violation(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_correct_stream_has_no_violations_and_measures_round_trips() {
        let t0 = Instant::now();
        let mut bot = Bot::new(Behaviour::Wander, 1);
        bot.on_welcome(welcome(), t0);
        bot.on_datagram(&full(1, 0, vec![me_at(50.0, 50.0)]), t0);
        let input = bot.next_input(t0).expect("an input is due at once");
        let later = t0 + Duration::from_millis(40);
        bot.on_datagram(&full(2, input.seq, vec![me_at(50.0, 50.0)]), later);
        let samples: Vec<Sample> = bot.drain().collect();
        assert!(samples.contains(&Sample::Rtt(Duration::from_millis(40))));
        assert!(samples.contains(&Sample::SnapshotInterval(Duration::from_millis(40))));
        assert!(!samples.iter().any(|s| matches!(s, Sample::Violation(_))));
    }

    #[test]
    fn breaches_are_counted() {
        let t0 = Instant::now();
        let mut bot = Bot::new(Behaviour::Idle, 1);
        bot.on_welcome(welcome(), t0);
        bot.on_datagram(&full(5, 0, vec![me_at(50.0, 50.0)]), t0);
        bot.on_datagram(&full(5, 0, vec![me_at(50.0, 50.0)]), t0);
        assert_eq!(violations(&mut bot), vec![Violation::TickBackwards]);
        bot.on_datagram(&full(6, 0, vec![me_at(150.0, 50.0)]), t0);
        assert_eq!(violations(&mut bot), vec![Violation::OutOfBounds]);
        let mut other = me_at(10.0, 10.0);
        other.id.index = 8;
        bot.on_datagram(&full(7, 0, vec![other]), t0);
        assert_eq!(violations(&mut bot), vec![Violation::SelfNotInView]);
        bot.on_datagram(&[protocol::PROTOCOL_VERSION as u8, 0xff, 0xff], t0);
        assert_eq!(violations(&mut bot), vec![Violation::BadSnapshot]);
    }

    #[test]
    fn an_ignored_order_is_a_violation() {
        let t0 = Instant::now();
        let mut bot = Bot::new(Behaviour::Wander, 3);
        bot.on_welcome(welcome(), t0);
        bot.on_datagram(&full(1, 0, vec![me_at(50.0, 50.0)]), t0);
        // Orders until one points at least 3 m away.
        let mut now = t0;
        let seq = loop {
            now += Duration::from_secs(9);
            if let Some(Input {
                seq,
                command: Command::MoveTo { x, y },
                ..
            }) = bot.next_input(now)
                && distance((x, y), (50.0, 50.0)) >= 3.0
            {
                break seq;
            }
        };
        // The server acknowledges it but the character never moves.
        for tick in 2..(2 + 11 * 20) {
            now += Duration::from_millis(50);
            bot.on_datagram(&full(tick, seq, vec![me_at(50.0, 50.0)]), now);
        }
        assert!(violations(&mut bot).contains(&Violation::OrderIgnored));
    }
}
