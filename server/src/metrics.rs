//! The server's metrics, registered with a `prometheus-client` registry and rendered as
//! OpenMetrics text for `/metrics`.
//!
//! Every metric is known when the server starts: [`Metrics::new`] registers them all in
//! one registry per server (two servers in one test process keep separate figures).
//! Labelled metrics are families keyed by typed label enums ([`Invalid`], [`Refusal`],
//! [`Phase`], ...); every label value is created up front, so a scrape shows a zero
//! rather than nothing for a thing that has not happened yet.
//!
//! Names: OpenMetrics names a counter's family without its `_total` suffix and its sample
//! with it, so a counter registered here as `mmo_ticks` is the series `mmo_ticks_total`.
//! The series names are the ones this server has always exported; the list of them is
//! checked by the integration tests (`tests/it/metric_names.txt`).

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::registry::Registry;
use protocol::DisconnectReason;

use crate::session::login::LoginRefusal;

pub use prometheus_client::metrics::counter::Counter;
pub use prometheus_client::metrics::gauge::Gauge;
pub use prometheus_client::metrics::histogram::Histogram;

/// The HTTP content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds of the duration histograms' buckets, seconds: 0.25 ms to 100 ms.
const BUCKETS_SECS: [f64; 12] = [
    0.000_25, 0.000_5, 0.001, 0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.025, 0.050, 0.100,
];

/// Upper bounds of the buckets of the time between a client's snapshots, seconds: around
/// the 50 ms of one tick, finer up to 60 ms (the load test's mark for the interval a
/// client sees), then up to a second.
const SEND_INTERVAL_BUCKETS_SECS: [f64; 13] = [
    0.040, 0.045, 0.050, 0.0525, 0.055, 0.0575, 0.060, 0.065, 0.070, 0.080, 0.100, 0.250, 1.0,
];

/// A histogram of durations in seconds with the buckets of [`BUCKETS_SECS`].
#[derive(Clone, Copy, Debug)]
struct DurationBuckets;

impl MetricConstructor<Histogram> for DurationBuckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(BUCKETS_SECS)
    }
}

/// The values of one label: an enum whose every value has a fixed name.
trait LabelValue: Copy + Eq + Hash + fmt::Debug + Send + Sync + 'static {
    /// The label's name.
    const KEY: &'static str;
    /// Every value, in the order they are created.
    const ALL: &'static [Self];
    /// The value as rendered.
    fn name(self) -> &'static str;
}

/// A label set of exactly one label.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct By<V>(V);

impl<V: LabelValue> EncodeLabelSet for By<V> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), fmt::Error> {
        EncodeLabelSet::encode(&[(V::KEY, self.0.name())], encoder)
    }
}

/// A family with one series for every value of its label, zero until counted.
fn family_of_all<V, M, C>(family: Family<By<V>, M, C>) -> Family<By<V>, M, C>
where
    V: LabelValue,
    C: MetricConstructor<M>,
{
    for &value in V::ALL {
        drop(family.get_or_create(&By(value)));
    }
    family
}

/// Tick phases with their own histogram: the world's eight (the names of
/// `sim::PhaseTimes::named`), then the server's own two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The world applies player inputs.
    Inputs,
    /// NPC brains choose goals.
    Brains,
    /// The path queue is served.
    Paths,
    /// Bodies steer along their paths.
    Steering,
    /// The broad phase finds contacts.
    Contacts,
    /// Bodies circle around each other.
    Circling,
    /// Bodies push each other apart.
    Repulsion,
    /// Velocities move bodies.
    Integrate,
    /// The world thread drains the sessions' messages before the step.
    NetworkInputs,
    /// A snapshot worker builds and sends its shard's snapshots (observed once per worker
    /// per tick).
    Snapshots,
}

impl Phase {
    /// Every phase, world phases first in the order the world runs them.
    pub const ALL: [Phase; 10] = [
        Phase::Inputs,
        Phase::Brains,
        Phase::Paths,
        Phase::Steering,
        Phase::Contacts,
        Phase::Circling,
        Phase::Repulsion,
        Phase::Integrate,
        Phase::NetworkInputs,
        Phase::Snapshots,
    ];

    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Inputs => "inputs",
            Phase::Brains => "brains",
            Phase::Paths => "paths",
            Phase::Steering => "steering",
            Phase::Contacts => "contacts",
            Phase::Circling => "circling",
            Phase::Repulsion => "repulsion",
            Phase::Integrate => "integrate",
            Phase::NetworkInputs => "network_inputs",
            Phase::Snapshots => "snapshots",
        }
    }

    /// The world phase that `sim::PhaseTimes::named` calls `name`.
    pub fn of_world(name: &str) -> Option<Phase> {
        Phase::ALL[..8].iter().copied().find(|p| p.name() == name)
    }
}

impl LabelValue for Phase {
    const KEY: &'static str = "phase";
    const ALL: &'static [Self] = &Phase::ALL;
    fn name(self) -> &'static str {
        Phase::name(self)
    }
}

/// Why inputs were dropped before reaching the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputDrop {
    /// Above the session's input rate.
    RateLimited,
    /// The world's input queue was full.
    QueueFull,
    /// Not newer than an input already taken.
    Stale,
}

impl LabelValue for InputDrop {
    const KEY: &'static str = "why";
    const ALL: &'static [Self] = &[
        InputDrop::RateLimited,
        InputDrop::QueueFull,
        InputDrop::Stale,
    ];
    fn name(self) -> &'static str {
        match self {
            InputDrop::RateLimited => "rate_limited",
            InputDrop::QueueFull => "queue_full",
            InputDrop::Stale => "stale",
        }
    }
}

/// Why a snapshot was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SnapshotDrop {
    /// The client's bandwidth budget was spent.
    Budget,
    /// The connection's datagram send buffer was full (the client is not keeping up).
    Congested,
    /// A snapshot worker was still busy with an older tick (every client of its shard
    /// misses this tick's snapshot; counted once per worker per tick).
    Behind,
    /// The client's last snapshot was still waiting in its connection's send buffer (its
    /// QUIC stack had not sent it yet), so this one was not built.
    Backlog,
}

impl LabelValue for SnapshotDrop {
    const KEY: &'static str = "why";
    const ALL: &'static [Self] = &[
        SnapshotDrop::Budget,
        SnapshotDrop::Congested,
        SnapshotDrop::Behind,
        SnapshotDrop::Backlog,
    ];
    fn name(self) -> &'static str {
        match self {
            SnapshotDrop::Budget => "budget",
            SnapshotDrop::Congested => "congested",
            SnapshotDrop::Behind => "behind",
            SnapshotDrop::Backlog => "backlog",
        }
    }
}

/// Why a connection was refused before its session started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The server holds its maximum number of sessions.
    ServerFull,
    /// The address holds its maximum number of sessions.
    PerAddress,
    /// The server is shutting down.
    ShuttingDown,
}

impl LabelValue for Refusal {
    const KEY: &'static str = "why";
    const ALL: &'static [Self] = &[
        Refusal::ServerFull,
        Refusal::PerAddress,
        Refusal::ShuttingDown,
    ];
    fn name(self) -> &'static str {
        match self {
            Refusal::ServerFull => "server_full",
            Refusal::PerAddress => "per_address",
            Refusal::ShuttingDown => "shutting_down",
        }
    }
}

/// Kinds of invalid client messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invalid {
    /// A datagram that does not decode.
    Datagram,
    /// A control frame that does not decode or comes out of order.
    Frame,
    /// An input with non-finite numbers, a point outside the map or a zero direction.
    Input,
}

impl LabelValue for Invalid {
    const KEY: &'static str = "kind";
    const ALL: &'static [Self] = &[Invalid::Datagram, Invalid::Frame, Invalid::Input];
    fn name(self) -> &'static str {
        match self {
            Invalid::Datagram => "datagram",
            Invalid::Frame => "frame",
            Invalid::Input => "input",
        }
    }
}

/// Why a QUIC handshake did not give a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandshakeFailure {
    /// The handshake failed.
    Error,
    /// The handshake did not finish in time.
    Timeout,
}

impl LabelValue for HandshakeFailure {
    const KEY: &'static str = "why";
    const ALL: &'static [Self] = &[HandshakeFailure::Error, HandshakeFailure::Timeout];
    fn name(self) -> &'static str {
        match self {
            HandshakeFailure::Error => "error",
            HandshakeFailure::Timeout => "timeout",
        }
    }
}

impl LabelValue for LoginRefusal {
    const KEY: &'static str = "why";
    const ALL: &'static [Self] = &LoginRefusal::ALL;
    fn name(self) -> &'static str {
        LoginRefusal::name(self)
    }
}

impl LabelValue for DisconnectReason {
    const KEY: &'static str = "reason";
    const ALL: &'static [Self] = &DisconnectReason::ALL;
    fn name(self) -> &'static str {
        DisconnectReason::name(self)
    }
}

/// The kinds of bodies counted by `mmo_entities`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum BodyKind {
    Npc,
    Player,
}

impl LabelValue for BodyKind {
    const KEY: &'static str = "kind";
    const ALL: &'static [Self] = &[BodyKind::Npc, BodyKind::Player];
    fn name(self) -> &'static str {
        match self {
            BodyKind::Npc => "npc",
            BodyKind::Player => "player",
        }
    }
}

type Counters<V> = Family<By<V>, Counter>;

/// Every metric of one server.
///
/// Counters and gauges are handles: a clone counts into the same series.
#[derive(Debug)]
pub struct Metrics {
    /// Ticks run.
    pub ticks: Counter,
    /// Ticks that took longer than their 50 ms slot.
    pub tick_overruns: Counter,
    /// Whole tick duration (world step and snapshots).
    tick_seconds: Histogram,
    /// Duration by [`Phase`].
    phase_seconds: Family<By<Phase>, Histogram, DurationBuckets>,
    /// NPCs in the world (the `npc` series of `mmo_entities`).
    pub npcs: Gauge,
    /// Player characters in the world (the `player` series of `mmo_entities`).
    pub players: Gauge,
    /// Sessions that finished the handshake and have not ended.
    pub clients: Gauge,
    /// Path requests waiting in the world's queue.
    pub paths_waiting: Gauge,
    /// Ticks between a client's snapshots (1: every tick; more when the slowest snapshot
    /// worker cannot serve its clients in time).
    pub snapshot_stride: Gauge,
    /// Datagram and control-stream bytes received.
    pub bytes_in: Counter,
    /// Datagram and control-stream bytes sent.
    pub bytes_out: Counter,
    /// Time between two snapshots handed to the same client's connection.
    snapshot_send_interval_seconds: Histogram,
    /// Datagrams received.
    pub datagrams_in: Counter,
    /// Datagrams sent.
    pub datagrams_out: Counter,
    invalid: Counters<Invalid>,
    inputs_dropped: Counters<InputDrop>,
    snapshots_dropped: Counters<SnapshotDrop>,
    refused: Counters<Refusal>,
    disconnects: Counters<DisconnectReason>,
    logins_rejected: Counters<LoginRefusal>,
    /// Sessions whose QUIC connection was lost without a disconnect (timeouts, resets).
    pub connections_lost: Counter,
    handshakes_failed: Counters<HandshakeFailure>,
    /// Datagrams the kernel dropped at the QUIC socket (its receive buffer was full).
    pub udp_receive_drops: Counter,
    /// The QUIC socket's receive buffer as granted by the kernel, bytes.
    pub udp_receive_buffer_bytes: Gauge,
    /// The QUIC socket's send buffer as granted by the kernel, bytes.
    pub udp_send_buffer_bytes: Gauge,
    /// 1 while the character store answers, 0 while it fails.
    pub store_up: Gauge,
    /// Characters whose newest save the store has not taken yet.
    pub saves_pending: Gauge,
    /// Character saves the store took.
    pub saves: Counter,
    /// Batches of saves the store failed to take (they are retried).
    pub save_failures: Counter,
    /// Saves the store refused for themselves (invalid, or over a damaged record): dropped,
    /// never retried.
    pub saves_dropped: Counter,
    /// Saves the store skipped because it holds a newer save of the character (another
    /// zone saved it further on): nothing lost, counted.
    pub saves_stale: Counter,
    /// Time the store took per batch of saves.
    save_batch_seconds: Histogram,
    /// Admin API requests refused for a missing or wrong token.
    pub admin_unauthorized: Counter,
    /// Admin API requests answered 503 because the world did not answer in time.
    pub admin_world_busy: Counter,
    registry: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered for rendering.
    pub fn new() -> Metrics {
        let entities = family_of_all(Family::<By<BodyKind>, Gauge>::default());
        let mut metrics = Metrics {
            ticks: Counter::default(),
            tick_overruns: Counter::default(),
            tick_seconds: DurationBuckets.new_metric(),
            phase_seconds: family_of_all(Family::new_with_constructor(DurationBuckets)),
            npcs: entities.get_or_create_owned(&By(BodyKind::Npc)),
            players: entities.get_or_create_owned(&By(BodyKind::Player)),
            clients: Gauge::default(),
            paths_waiting: Gauge::default(),
            snapshot_stride: Gauge::default(),
            bytes_in: Counter::default(),
            bytes_out: Counter::default(),
            datagrams_in: Counter::default(),
            datagrams_out: Counter::default(),
            snapshot_send_interval_seconds: Histogram::new(SEND_INTERVAL_BUCKETS_SECS),
            invalid: family_of_all(Family::default()),
            inputs_dropped: family_of_all(Family::default()),
            snapshots_dropped: family_of_all(Family::default()),
            refused: family_of_all(Family::default()),
            disconnects: family_of_all(Family::default()),
            logins_rejected: family_of_all(Family::default()),
            connections_lost: Counter::default(),
            handshakes_failed: family_of_all(Family::default()),
            udp_receive_drops: Counter::default(),
            udp_receive_buffer_bytes: Gauge::default(),
            udp_send_buffer_bytes: Gauge::default(),
            store_up: Gauge::default(),
            saves_pending: Gauge::default(),
            saves: Counter::default(),
            save_failures: Counter::default(),
            saves_dropped: Counter::default(),
            saves_stale: Counter::default(),
            save_batch_seconds: DurationBuckets.new_metric(),
            admin_unauthorized: Counter::default(),
            admin_world_busy: Counter::default(),
            registry: Registry::default(),
        };
        metrics.registry = metrics.registry(entities);
        metrics
    }

    /// Registers one more metric, rendered with the rest: a zone's or a gateway's own.
    pub fn register_extra(
        &mut self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        self.registry.register(name, help, metric);
    }

    /// The registry of every metric: names and help texts (the registry appends the
    /// full stop to each help text, and `_total` to each counter's samples).
    fn registry(&self, entities: Family<By<BodyKind>, Gauge>) -> Registry {
        let mut r = Registry::default();
        r.register("mmo_ticks", "Ticks run", self.ticks.clone());
        r.register(
            "mmo_tick_overruns",
            "Ticks that took longer than their 50 ms slot",
            self.tick_overruns.clone(),
        );
        r.register(
            "mmo_tick_seconds",
            "Tick duration: world step and snapshots",
            self.tick_seconds.clone(),
        );
        r.register(
            "mmo_tick_phase_seconds",
            "Tick duration by phase",
            self.phase_seconds.clone(),
        );
        r.register("mmo_entities", "Bodies in the world", entities);
        r.register(
            "mmo_clients_connected",
            "Sessions past the handshake",
            self.clients.clone(),
        );
        r.register(
            "mmo_path_requests_waiting",
            "Path requests queued in the world",
            self.paths_waiting.clone(),
        );
        r.register(
            "mmo_snapshot_stride",
            "Ticks between a client's snapshots (1: every tick; more when the snapshot thread cannot serve every client in time)",
            self.snapshot_stride.clone(),
        );
        r.register("mmo_bytes_in", "Bytes received", self.bytes_in.clone());
        r.register("mmo_bytes_out", "Bytes sent", self.bytes_out.clone());
        r.register(
            "mmo_datagrams_in",
            "Datagrams received",
            self.datagrams_in.clone(),
        );
        r.register(
            "mmo_datagrams_out",
            "Datagrams sent",
            self.datagrams_out.clone(),
        );
        r.register(
            "mmo_snapshot_send_interval_seconds",
            "Time between two snapshots handed to the same client's connection (the interval the client sees, before QUIC, the network and the client add theirs)",
            self.snapshot_send_interval_seconds.clone(),
        );
        r.register(
            "mmo_invalid_messages",
            "Invalid client messages",
            self.invalid.clone(),
        );
        r.register(
            "mmo_inputs_dropped",
            "Inputs dropped before the world",
            self.inputs_dropped.clone(),
        );
        r.register(
            "mmo_snapshots_dropped",
            "Snapshots not sent (behind: ticks whose snapshots were skipped for all; backlog: the last one had not left yet)",
            self.snapshots_dropped.clone(),
        );
        r.register(
            "mmo_connections_refused",
            "Connections refused before a session started",
            self.refused.clone(),
        );
        r.register(
            "mmo_disconnects",
            "Sessions ended, by reason",
            self.disconnects.clone(),
        );
        r.register(
            "mmo_logins_rejected",
            "Logins refused (LoginRejected), by why",
            self.logins_rejected.clone(),
        );
        r.register(
            "mmo_handshakes_failed",
            "QUIC handshakes that failed or did not finish in time",
            self.handshakes_failed.clone(),
        );
        r.register(
            "mmo_connections_lost",
            "Sessions whose connection was lost without a disconnect",
            self.connections_lost.clone(),
        );
        r.register(
            "mmo_udp_receive_drops",
            "Datagrams the kernel dropped at the QUIC socket because its receive buffer was full",
            self.udp_receive_drops.clone(),
        );
        r.register(
            "mmo_udp_receive_buffer_bytes",
            "The QUIC socket's receive buffer as granted by the kernel",
            self.udp_receive_buffer_bytes.clone(),
        );
        r.register(
            "mmo_udp_send_buffer_bytes",
            "The QUIC socket's send buffer as granted by the kernel",
            self.udp_send_buffer_bytes.clone(),
        );
        r.register(
            "mmo_store_up",
            "1 while the character store answers, 0 while it fails",
            self.store_up.clone(),
        );
        r.register(
            "mmo_saves_pending",
            "Characters whose newest save the store has not taken yet",
            self.saves_pending.clone(),
        );
        r.register(
            "mmo_saves",
            "Character saves the store took",
            self.saves.clone(),
        );
        r.register(
            "mmo_save_failures",
            "Batches of character saves the store failed to take (retried)",
            self.save_failures.clone(),
        );
        r.register(
            "mmo_saves_dropped",
            "Character saves dropped because the store refused them (invalid, or over a damaged record)",
            self.saves_dropped.clone(),
        );
        r.register(
            "mmo_saves_stale",
            "Character saves skipped because the store holds a newer save of the character",
            self.saves_stale.clone(),
        );
        r.register(
            "mmo_save_batch_seconds",
            "Time the store took per batch of character saves",
            self.save_batch_seconds.clone(),
        );
        r.register(
            "mmo_admin_unauthorized",
            "Admin API requests refused for a missing or wrong token",
            self.admin_unauthorized.clone(),
        );
        r.register(
            "mmo_admin_world_busy",
            "Admin API requests answered 503 because the world did not answer in time",
            self.admin_world_busy.clone(),
        );
        r
    }

    /// Records a whole tick's duration.
    pub fn observe_tick(&self, took: Duration) {
        self.tick_seconds.observe(took.as_secs_f64());
    }
    /// Records the time between two snapshots handed to one client's connection.
    pub fn observe_send_interval(&self, took: Duration) {
        self.snapshot_send_interval_seconds
            .observe(took.as_secs_f64());
    }
    /// Records the time the store took for one batch of saves.
    pub fn observe_save_batch(&self, took: Duration) {
        self.save_batch_seconds.observe(took.as_secs_f64());
    }
    /// Records one phase's duration.
    pub fn observe_phase(&self, phase: Phase, took: Duration) {
        self.phase_seconds
            .get_or_create(&By(phase))
            .observe(took.as_secs_f64());
    }
    /// Counts an invalid message.
    pub fn invalid(&self, kind: Invalid) {
        self.invalid.get_or_create(&By(kind)).inc();
    }
    /// Counts a dropped input.
    pub fn input_dropped(&self, why: InputDrop) {
        self.inputs_dropped.get_or_create(&By(why)).inc();
    }
    /// Counts `n` dropped inputs.
    pub fn inputs_dropped(&self, why: InputDrop, n: u64) {
        if n > 0 {
            self.inputs_dropped.get_or_create(&By(why)).inc_by(n);
        }
    }
    /// Counts a snapshot not sent.
    pub fn snapshot_dropped(&self, why: SnapshotDrop) {
        self.snapshots_dropped.get_or_create(&By(why)).inc();
    }
    /// Counts a refused connection.
    pub fn refused(&self, why: Refusal) {
        self.refused.get_or_create(&By(why)).inc();
    }
    /// Counts a QUIC handshake that gave no connection.
    pub fn handshake_failed(&self, why: HandshakeFailure) {
        self.handshakes_failed.get_or_create(&By(why)).inc();
    }
    /// Counts an ended session.
    pub fn disconnected(&self, reason: DisconnectReason) {
        self.disconnects.get_or_create(&By(reason)).inc();
    }
    /// Counts a refused login.
    pub fn login_rejected(&self, why: LoginRefusal) {
        self.logins_rejected.get_or_create(&By(why)).inc();
    }
    /// Logins refused for this reason so far.
    pub fn logins_rejected_for(&self, why: LoginRefusal) -> u64 {
        self.logins_rejected.get_or_create(&By(why)).get()
    }
    /// Sessions ended for this reason so far.
    pub fn disconnects_for(&self, reason: DisconnectReason) -> u64 {
        self.disconnects.get_or_create(&By(reason)).get()
    }
    /// Handshakes failed this way so far.
    pub fn handshakes_failed_for(&self, why: HandshakeFailure) -> u64 {
        self.handshakes_failed.get_or_create(&By(why)).get()
    }
    /// Connections refused for this reason so far.
    pub fn refused_for(&self, why: Refusal) -> u64 {
        self.refused.get_or_create(&By(why)).get()
    }
    /// Invalid messages of this kind so far.
    pub fn invalid_for(&self, kind: Invalid) -> u64 {
        self.invalid.get_or_create(&By(kind)).get()
    }

    /// The OpenMetrics text exposition of every metric (served as [`CONTENT_TYPE`]).
    pub fn render(&self) -> Result<String, fmt::Error> {
        let mut out = String::with_capacity(16 * 1024);
        encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(metrics: &Metrics) -> String {
        metrics.render().expect("renders")
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let metrics = Metrics::default();
        metrics.observe_tick(Duration::from_micros(300));
        metrics.observe_tick(Duration::from_millis(7));
        metrics.observe_tick(Duration::from_secs(1));
        let text = render(&metrics);
        assert!(
            text.contains("mmo_tick_seconds_bucket{le=\"0.0005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("mmo_tick_seconds_bucket{le=\"0.008\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("mmo_tick_seconds_bucket{le=\"+Inf\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("mmo_tick_seconds_count 3\n"), "{text}");
    }

    #[test]
    fn labelled_counters_render_by_name() {
        let metrics = Metrics::default();
        metrics.disconnected(DisconnectReason::SlowClient);
        metrics.invalid(Invalid::Input);
        metrics.handshake_failed(HandshakeFailure::Timeout);
        let text = render(&metrics);
        assert!(text.contains("mmo_disconnects_total{reason=\"slow_client\"} 1\n"));
        assert!(text.contains("mmo_invalid_messages_total{kind=\"input\"} 1\n"));
        assert!(text.contains("mmo_invalid_messages_total{kind=\"datagram\"} 0\n"));
        assert!(text.contains("mmo_handshakes_failed_total{why=\"timeout\"} 1\n"));
        assert!(text.contains("mmo_handshakes_failed_total{why=\"error\"} 0\n"));
        assert_eq!(metrics.disconnects_for(DisconnectReason::SlowClient), 1);
        assert!(!text.contains("_total_total"), "{text}");
    }

    #[test]
    fn entity_gauges_are_series_of_one_family() {
        let metrics = Metrics::default();
        metrics.npcs.set(12);
        metrics.players.set(3);
        metrics.snapshot_stride.set(2);
        let text = render(&metrics);
        assert!(text.contains("mmo_entities{kind=\"npc\"} 12\n"), "{text}");
        assert!(text.contains("mmo_entities{kind=\"player\"} 3\n"), "{text}");
        assert!(text.contains("mmo_snapshot_stride 2\n"), "{text}");
    }

    #[test]
    fn every_world_phase_has_a_label() {
        let names = sim::PhaseTimes::default().named().map(|(name, _)| name);
        for name in names {
            assert!(Phase::of_world(name).is_some(), "no label for phase {name}");
        }
        assert_eq!(Phase::of_world("network_inputs"), None);
        let metrics = Metrics::default();
        metrics.observe_phase(Phase::Snapshots, Duration::from_millis(3));
        let text = render(&metrics);
        assert!(
            text.contains("mmo_tick_phase_seconds_count{phase=\"snapshots\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("mmo_tick_phase_seconds_count{phase=\"paths\"} 0\n"),
            "{text}"
        );
    }
}
