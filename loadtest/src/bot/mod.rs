//! One bot as a plain state machine: it is told what arrived ([`Bot::on_welcome`],
//! [`Bot::on_message`], [`Bot::on_datagram`]) and asked what to send
//! ([`Bot::next_input`]), always with the current time. It does no I/O and reads no
//! clock, so the swarm drives it over QUIC and tests drive it directly.
//!
//! Besides playing, a bot checks what the server tells it and counts every breach as a
//! [`Violation`]: snapshots must move forward in ticks and apply to their baseline, its
//! own character must be in its view, every position must lie inside the map bounds, and
//! its character must move when ordered somewhere.
//!
//! Given the cluster's zones ([`Bot::with_borders`]), a bot of any behaviour also counts the
//! zone borders its character crosses; and every bot measures how long its character is
//! missing from its snapshots ([`Bot::own_missing_max`]), the figure a zone handoff or a
//! zone's restart must keep short.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use navmesh::Rng;
use protocol::codec::decode_snapshot_datagram;
use protocol::{
    ClientMessage, Command, EntityState, Event, Input, NetId, QPos, Received, ServerMessage,
    Snapshot, View, ViewHistory, Welcome,
};
use serde::{Deserialize, Serialize};

use crate::borders::Borders;
use crate::targets::BorderTargets;

/// When a bot sends its inputs (each one acknowledges the newest snapshot it holds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum InputPace {
    /// Every 100 ms, whenever the snapshots come, and at once for an order.
    #[default]
    Timer,
    /// One as soon as each snapshot is applied, as a game client that sends its input every
    /// tick does (and every 100 ms should snapshots stop), and at once for an order. The
    /// server then sees each snapshot acknowledged before it builds the next, and QUIC's
    /// acknowledgements ride on the inputs instead of packets of their own.
    Snapshot,
}

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
    /// Walks across zone borders and back, ordering anew every 3 to 6 seconds (or on
    /// arrival); needs the cluster's zones ([`Bot::with_borders`]), and stands still
    /// without them. With the cluster's map ([`Bot::with_targets`]) it walks to walkable
    /// points past the handoff margin and turns only once across; without, to points 6 to
    /// 12 m straight across the nearest border.
    Border,
}

/// Something the server did wrong, as a bot saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Violation {
    /// A snapshot's tick was not newer than one already applied. Over loopback a server
    /// fault; over a network that reorders datagrams, a late one counts too (leave it out
    /// of an SLO's count there: [`crate::slo::Slo::violations_not_counted`]).
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
    /// The server said inputs of the bot were invalid ([`Event::InvalidInput`]): a bot
    /// sends only inputs the protocol allows, so the server refused what it should take.
    InputRefused,
}

impl Violation {
    /// Every kind, for reports.
    pub const ALL: [Violation; 7] = [
        Violation::TickBackwards,
        Violation::BadSnapshot,
        Violation::SelfNotInView,
        Violation::OutOfBounds,
        Violation::OrderIgnored,
        Violation::UnexpectedMessage,
        Violation::InputRefused,
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
/// A border bot whose character has not come [`STALL_GAIN_M`] closer to its target in
/// this long walks to another one, as a player held up in a crowd would.
const STALL_AFTER: Duration = Duration::from_secs(4);
/// See [`STALL_AFTER`], metres.
const STALL_GAIN_M: f32 = 1.0;
/// Bounds slack for positions: centimetre rounding.
const BOUNDS_SLACK_M: f32 = 0.05;
/// A border bot this close to its target has arrived and picks the next one (as does one
/// that stands where its targets begin, [`BorderTargets::crossed`]).
const ARRIVED_M: f32 = 1.0;

struct Order {
    target: (f32, f32),
    seq: u32,
    sent_at: Instant,
    acked: bool,
}

/// One simulated player.
pub struct Bot {
    behaviour: Behaviour,
    pace: InputPace,
    number: u64,
    /// Orders sent (resends not counted).
    orders: u64,
    /// Where the character was last seen.
    last_seen: Option<(f32, f32)>,
    /// How far it was seen to walk, metres (the sum of its steps between snapshots).
    walked_m: f32,
    /// A border bot's closest approach to its order's target, and when it last came
    /// [`STALL_GAIN_M`] closer (see [`STALL_AFTER`]).
    approach: Option<(f32, Instant)>,
    /// Its character was held up: the next order goes to another target.
    stalled: bool,
    /// Orders given to another target because the character was held up.
    pub retargets: u64,
    rng: Rng,
    welcome: Option<Welcome>,
    history: ViewHistory,
    /// The snapshot datagrams decode into (its lists' memory serves every datagram).
    received: Snapshot,
    seq: u32,
    sent: VecDeque<(u32, Instant)>,
    last_applied_seq: u32,
    last_snapshot: Option<Instant>,
    next_input_at: Option<Instant>,
    next_order_at: Option<Instant>,
    order: Option<Order>,
    /// Where the character stood when it was last seen moving under an order.
    still_since: Option<(Instant, (f32, f32))>,
    /// The cluster's zones, when given.
    borders: Option<Arc<Borders>>,
    /// The zone the character was last seen in.
    zone: Option<usize>,
    /// Walkable points past the borders, for the border behaviour.
    targets: Option<Arc<BorderTargets>>,
    /// The zone a border bot is walking into.
    heading: Option<usize>,
    own_missing: OwnMissing,
    samples: Vec<Sample>,
    /// Snapshots applied.
    pub snapshots: u64,
    /// Snapshots dropped because their baseline was no longer held.
    pub missing_baselines: u64,
    /// When the last snapshot was applied (`None`: none yet): datagrams that cannot be
    /// applied do not count as hearing from the server.
    pub last_applied: Option<Instant>,
    /// Times the character was seen in another zone than the last it was seen in (0
    /// without borders).
    pub crossings: u64,
}

/// Spells of applied snapshots without the bot's own character.
#[derive(Default)]
struct OwnMissing {
    /// When the current spell began: the first applied snapshot without the character.
    since: Option<Instant>,
    episodes: u64,
    longest: Duration,
}

impl OwnMissing {
    fn on_snapshot(&mut self, seen: bool, now: Instant) {
        match (seen, self.since) {
            (true, Some(since)) => {
                self.longest = self.longest.max(now.saturating_duration_since(since));
                self.since = None;
            }
            (false, None) => {
                self.episodes += 1;
                self.since = Some(now);
            }
            (true, None) | (false, Some(_)) => {}
        }
    }

    fn longest(&self, now: Instant) -> Duration {
        let open = self
            .since
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        self.longest.max(open)
    }
}

impl Bot {
    /// A bot that knows the cluster's zones: it counts the borders its character crosses,
    /// and with [`Behaviour::Border`] walks across them.
    pub fn with_borders(behaviour: Behaviour, number: u64, borders: Arc<Borders>) -> Bot {
        Bot {
            borders: Some(borders),
            ..Bot::new(behaviour, number)
        }
    }

    /// A border bot that walks to walkable points past the borders on the cluster's map
    /// ([`BorderTargets::next`]) rather than to points straight across the nearest
    /// border, which may lie in walls.
    pub fn with_targets(mut self, targets: Arc<BorderTargets>) -> Bot {
        self.targets = Some(targets);
        self
    }

    /// The same bot sending its inputs at `pace` (by default [`InputPace::Timer`]).
    pub fn with_pace(mut self, pace: InputPace) -> Bot {
        self.pace = pace;
        self
    }

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
            pace: InputPace::default(),
            number,
            orders: 0,
            last_seen: None,
            walked_m: 0.0,
            approach: None,
            stalled: false,
            retargets: 0,
            rng: Rng::new(number),
            welcome: None,
            history: ViewHistory::new(),
            received: Snapshot::default(),
            seq: 0,
            sent: VecDeque::new(),
            last_applied_seq: 0,
            last_snapshot: None,
            next_input_at: None,
            next_order_at: None,
            order: None,
            still_since: None,
            borders: None,
            zone: None,
            targets: None,
            heading: None,
            own_missing: OwnMissing::default(),
            samples: Vec::new(),
            snapshots: 0,
            missing_baselines: 0,
            last_applied: None,
            crossings: 0,
        }
    }

    /// Whether this bot knows the cluster's zones (and counts crossings).
    pub fn has_borders(&self) -> bool {
        self.borders.is_some()
    }

    /// What this bot does (a mixed swarm's bot has its own).
    pub fn behaviour(&self) -> Behaviour {
        self.behaviour
    }

    /// Where this bot's character walked, for a report on the bot that crossed the fewest
    /// borders: its name, where its character was last seen (and in which zone), the zone
    /// it heads for, the orders it sent and the last one's target.
    pub fn walk_summary(&self) -> String {
        let zone_name = |zone: Option<usize>| {
            zone.and_then(|z| self.borders.as_ref()?.zones().get(z))
                .map_or("none", |z| z.name.as_str())
                .to_owned()
        };
        let seen = self.last_seen.map_or("never seen".to_owned(), |(x, y)| {
            // Bodies whose edge is within 0.2 m of the character's (radii as sent).
            let crowd = self
                .welcome
                .as_ref()
                .zip(self.view())
                .map_or(0, |(welcome, view)| {
                    let me = view.get(welcome.entity);
                    view.entities()
                        .iter()
                        .filter(|e| {
                            me.is_some_and(|me| {
                                e.id != me.id
                                    && distance(e.pos.to_metres(), (x, y))
                                        <= (f32::from(e.radius_cm) + f32::from(me.radius_cm))
                                            / 100.0
                                            + 0.2
                            })
                        })
                        .count()
                });
            format!(
                "walked {:.0} m, last at ({x:.1}, {y:.1}) in {} beside {crowd} bodies",
                self.walked_m,
                zone_name(self.zone)
            )
        });
        let order = self.order.as_ref().map_or("none".to_owned(), |order| {
            format!(
                "({:.1}, {:.1}){}",
                order.target.0,
                order.target.1,
                if order.acked { "" } else { " not acknowledged" }
            )
        });
        format!(
            "{}: {seen}, heading for {}, {} orders ({} to another target when held up), \
             the last to {order}",
            Bot::name(self.number),
            zone_name(self.heading),
            self.orders,
            self.retargets
        )
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
            ServerMessage::Event(Event::InvalidInput { .. }) => {
                self.samples
                    .push(Sample::Violation(Violation::InputRefused));
                None
            }
            ServerMessage::Pong { .. }
            | ServerMessage::Event(_)
            | ServerMessage::Disconnect { .. } => None,
        }
    }

    /// A datagram arrived.
    pub fn on_datagram(&mut self, bytes: &[u8], now: Instant) {
        let mut snapshot = std::mem::take(&mut self.received);
        match decode_snapshot_datagram(bytes, &mut snapshot) {
            Ok(()) => self.on_snapshot(&snapshot, now),
            Err(_) => self.samples.push(Sample::Violation(Violation::BadSnapshot)),
        }
        self.received = snapshot;
    }

    fn on_snapshot(&mut self, snapshot: &Snapshot, now: Instant) {
        let Some(welcome) = &self.welcome else {
            // Datagrams can overtake the welcome on the stream: nothing to check against yet.
            return;
        };
        match self.history.receive(snapshot) {
            Ok(Received::Applied) => self.last_applied = Some(now),
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
        // Metres never decrease as centimetres grow, so an entity is outside exactly when
        // the smallest or largest coordinate in view is.
        let outside = extremes(view.entities()).is_some_and(|(lowest, highest)| {
            let (min_x, min_y) = lowest.to_metres();
            let (max_x, max_y) = highest.to_metres();
            min_x < bounds.min_x - BOUNDS_SLACK_M
                || max_x > bounds.max_x + BOUNDS_SLACK_M
                || min_y < bounds.min_y - BOUNDS_SLACK_M
                || max_y > bounds.max_y + BOUNDS_SLACK_M
        });
        if outside {
            self.samples.push(Sample::Violation(Violation::OutOfBounds));
        }
        let position = view.get(me).map(|e| e.pos.to_metres());
        if position.is_none() {
            self.samples
                .push(Sample::Violation(Violation::SelfNotInView));
        }
        self.own_missing.on_snapshot(position.is_some(), now);
        if let Some(position) = position {
            self.track_zone(position);
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
        if self.pace == InputPace::Snapshot && self.next_input_at.is_some() {
            self.next_input_at = Some(now);
        }
        if let Some(position) = position {
            if let Some(last) = self.last_seen {
                self.walked_m += distance(last, position);
            }
            self.last_seen = Some(position);
            self.check_progress(position, now);
            if self.behaviour == Behaviour::Border
                && self.targets.is_some()
                && self.held_up(position, now)
            {
                self.stalled = true;
                self.next_order_at = Some(now);
            }
            if self.behaviour == Behaviour::Border
                && (self
                    .order
                    .as_ref()
                    .is_some_and(|order| distance(order.target, position) <= ARRIVED_M)
                    || self.crossed(position))
            {
                self.next_order_at = Some(now);
            }
        }
    }

    /// Whether the character at `position` has not come [`STALL_GAIN_M`] closer to its
    /// acknowledged order's target in [`STALL_AFTER`].
    fn held_up(&mut self, position: (f32, f32), now: Instant) -> bool {
        let Some(order) = self.order.as_ref().filter(|order| order.acked) else {
            return false;
        };
        let left = distance(order.target, position);
        match self.approach {
            Some((closest, _)) if left > closest - STALL_GAIN_M => {}
            _ => self.approach = Some((left, now)),
        }
        self.approach
            .is_some_and(|(_, since)| now.saturating_duration_since(since) >= STALL_AFTER)
    }

    /// Whether a border bot walking to walkable targets stands in the zone it heads for,
    /// past the margin and the slack: as far as its targets begin, so it has crossed.
    fn crossed(&self, position: (f32, f32)) -> bool {
        match (&self.targets, &self.borders) {
            (Some(targets), Some(borders)) => targets.crossed(borders, self.heading, position),
            _ => false,
        }
    }

    /// Counts a crossing when the character is in another zone than it was last seen in.
    fn track_zone(&mut self, position: (f32, f32)) {
        let Some(zone) = self.borders.as_ref().and_then(|b| b.zone_of(position)) else {
            return;
        };
        if self.zone.is_some_and(|last| last != zone) {
            self.crossings += 1;
        }
        self.zone = Some(zone);
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
                self.orders += 1;
                command = Some(Command::MoveTo {
                    x: target.0,
                    y: target.1,
                });
            }
            let wait = match self.behaviour {
                Behaviour::Wander => self.random(3_000, 8_000),
                Behaviour::Click => self.random(400, 1_000),
                Behaviour::Border => self.random(3_000, 6_001),
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
            if self
                .order
                .as_ref()
                .is_none_or(|order| order.target != (x, y))
            {
                self.approach = None;
            }
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

    /// Spells of applied snapshots without the bot's own character so far, each from the
    /// first such snapshot to the next one with it.
    pub fn own_missing_episodes(&self) -> u64 {
        self.own_missing.episodes
    }

    /// The longest spell without its own character: from the first applied snapshot
    /// without it to the next applied snapshot with it; a spell not over yet counts up to
    /// `now`. Zero if the character was never missing.
    pub fn own_missing_max(&self, now: Instant) -> Duration {
        self.own_missing.longest(now)
    }

    fn choose_target(&mut self) -> Option<(f32, f32)> {
        let welcome = self.welcome.as_ref()?;
        let (bounds, me) = (welcome.bounds, welcome.entity);
        let here = self.view()?.get(me)?.pos.to_metres();
        let (origin, spread) = match (self.behaviour, &self.order) {
            (Behaviour::Click, Some(order)) => (order.target, 3.0),
            (Behaviour::Wander | Behaviour::Click, _) => (here, 15.0),
            (Behaviour::Border, _) => {
                if let Some(targets) = &self.targets {
                    let borders = self.borders.as_ref()?;
                    // Held up: a fresh target (of the same zone while the heading holds),
                    // and a fresh measure of the approach.
                    let stalled = std::mem::take(&mut self.stalled);
                    let last = self.order.as_ref().map(|order| order.target);
                    let last = last.filter(|_| !stalled);
                    if stalled {
                        self.retargets += 1;
                        self.approach = None;
                    }
                    return targets.next(borders, &mut self.heading, here, last, &mut self.rng);
                }
                let depth_m = self.random(6_000, 12_001) as f32 / 1_000.0;
                let slide_m = self.random(0, 6_001) as f32 / 1_000.0 - 3.0;
                return self
                    .borders
                    .as_ref()?
                    .target_across(here, depth_m, slide_m, bounds);
            }
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

/// The smallest and the largest coordinates of the entities, each axis on its own; `None`
/// without entities.
fn extremes(entities: &[EntityState]) -> Option<(QPos, QPos)> {
    let first = entities.first()?.pos;
    Some(
        entities
            .iter()
            .fold((first, first), |(lowest, highest), entity| {
                let pos = entity.pos;
                (
                    QPos {
                        x_cm: lowest.x_cm.min(pos.x_cm),
                        y_cm: lowest.y_cm.min(pos.y_cm),
                    },
                    QPos {
                        x_cm: highest.x_cm.max(pos.x_cm),
                        y_cm: highest.y_cm.max(pos.y_cm),
                    },
                )
            }),
    )
}

fn distance(a: (f32, f32), b: (f32, f32)) -> f32 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

#[cfg(test)]
mod tests;
