//! The server's metrics, rendered in the Prometheus text format for `/metrics`.
//!
//! A fixed set of counters, gauges and histograms held as atomics: every metric is known
//! at compile time, so a small registry of our own beats a global recorder (two servers in
//! one test process keep separate figures) and adds no dependency.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use protocol::DisconnectReason;

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.add(1);
    }
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// The count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// Subtracts one (never below zero).
    pub fn dec(&self) {
        // A failed update means the gauge was already zero, which is where it stays.
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
    }
    /// The value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds of the duration histograms' buckets, seconds: 0.25 ms to 100 ms.
const BUCKETS_SECS: [f64; 12] = [
    0.000_25, 0.000_5, 0.001, 0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.025, 0.050, 0.100,
];

/// A histogram of durations with fixed buckets from 0.25 ms to 100 ms.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS_SECS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// Records one duration.
    pub fn observe(&self, duration: Duration) {
        let secs = duration.as_secs_f64();
        if let Some(at) = BUCKETS_SECS.iter().position(|&bound| secs <= bound) {
            self.buckets[at].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// Tick phases with their own histogram: the world's eight, then the server's own.
pub const PHASES: [&str; 10] = [
    "inputs",
    "brains",
    "paths",
    "steering",
    "contacts",
    "circling",
    "repulsion",
    "integrate",
    "network_inputs",
    "snapshots",
];

/// Why inputs were dropped before reaching the world.
#[derive(Clone, Copy, Debug)]
pub enum InputDrop {
    /// Above the session's input rate.
    RateLimited,
    /// The world's input queue was full.
    QueueFull,
    /// Not newer than an input already taken.
    Stale,
}

/// Why a snapshot was not sent.
#[derive(Clone, Copy, Debug)]
pub enum SnapshotDrop {
    /// The client's bandwidth budget was spent.
    Budget,
    /// The connection's datagram send buffer was full (the client is not keeping up).
    Congested,
    /// The snapshot thread was still busy with the previous tick (every client misses
    /// this tick's snapshot; counted once per tick).
    Behind,
}

/// Why a connection was refused before its session started.
#[derive(Clone, Copy, Debug)]
pub enum Refusal {
    /// The server holds its maximum number of sessions.
    ServerFull,
    /// The address holds its maximum number of sessions.
    PerAddress,
    /// The server is shutting down.
    ShuttingDown,
}

/// Kinds of invalid client messages.
#[derive(Clone, Copy, Debug)]
pub enum Invalid {
    /// A datagram that does not decode.
    Datagram,
    /// A control frame that does not decode or comes out of order.
    Frame,
    /// An input with non-finite numbers, a point outside the map or a zero direction.
    Input,
}

/// Every metric of one server.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Ticks run.
    pub ticks: Counter,
    /// Ticks that took longer than their 50 ms slot.
    pub tick_overruns: Counter,
    /// Whole tick duration (world step and snapshots).
    pub tick_seconds: Histogram,
    /// Per phase, in [`PHASES`] order.
    pub phase_seconds: [Histogram; PHASES.len()],
    /// NPCs in the world.
    pub npcs: Gauge,
    /// Player characters in the world.
    pub players: Gauge,
    /// Sessions that finished the handshake and have not ended.
    pub clients: Gauge,
    /// Path requests waiting in the world's queue.
    pub paths_waiting: Gauge,
    /// Ticks between a client's snapshots (1: every tick; more when the snapshot thread
    /// cannot serve everyone in time).
    pub snapshot_stride: Gauge,
    /// Datagram and control-stream bytes received.
    pub bytes_in: Counter,
    /// Datagram and control-stream bytes sent.
    pub bytes_out: Counter,
    /// Datagrams received.
    pub datagrams_in: Counter,
    /// Datagrams sent.
    pub datagrams_out: Counter,
    /// Invalid messages, by [`Invalid`].
    pub invalid: [Counter; 3],
    /// Inputs dropped, by [`InputDrop`].
    pub inputs_dropped: [Counter; 3],
    /// Snapshots not sent, by [`SnapshotDrop`].
    pub snapshots_dropped: [Counter; 3],
    /// Connections refused, by [`Refusal`].
    pub refused: [Counter; 3],
    /// Sessions ended, by [`DisconnectReason`] (code order).
    pub disconnects: [Counter; DisconnectReason::ALL.len()],
    /// Sessions whose QUIC connection was lost without a disconnect (timeouts, resets).
    pub connections_lost: Counter,
    /// QUIC handshakes that failed (`[0]`) or did not finish in time (`[1]`).
    pub handshakes_failed: [Counter; 2],
    /// Datagrams the kernel dropped at the QUIC socket (its receive buffer was full).
    pub udp_receive_drops: Counter,
    /// The QUIC socket's receive buffer as granted by the kernel, bytes.
    pub udp_receive_buffer_bytes: Gauge,
    /// The QUIC socket's send buffer as granted by the kernel, bytes.
    pub udp_send_buffer_bytes: Gauge,
}

impl Metrics {
    /// Counts an invalid message.
    pub fn invalid(&self, kind: Invalid) {
        self.invalid[kind as usize].inc();
    }
    /// Counts a dropped input.
    pub fn input_dropped(&self, why: InputDrop) {
        self.inputs_dropped[why as usize].inc();
    }
    /// Counts a snapshot not sent.
    pub fn snapshot_dropped(&self, why: SnapshotDrop) {
        self.snapshots_dropped[why as usize].inc();
    }
    /// Counts a refused connection.
    pub fn refused(&self, why: Refusal) {
        self.refused[why as usize].inc();
    }
    /// Counts an ended session.
    pub fn disconnected(&self, reason: DisconnectReason) {
        self.disconnects[(reason.code() - 1) as usize].inc();
    }
    /// Sessions ended for this reason so far.
    pub fn disconnects_for(&self, reason: DisconnectReason) -> u64 {
        self.disconnects[(reason.code() - 1) as usize].get()
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        counter(&mut out, "mmo_ticks_total", "Ticks run.", &self.ticks);
        counter(
            &mut out,
            "mmo_tick_overruns_total",
            "Ticks that took longer than their 50 ms slot.",
            &self.tick_overruns,
        );
        header(
            &mut out,
            "mmo_tick_seconds",
            "Tick duration: world step and snapshots.",
            "histogram",
        );
        histogram(&mut out, "mmo_tick_seconds", "", &self.tick_seconds);
        header(
            &mut out,
            "mmo_tick_phase_seconds",
            "Tick duration by phase.",
            "histogram",
        );
        for (phase, hist) in PHASES.iter().zip(&self.phase_seconds) {
            histogram(
                &mut out,
                "mmo_tick_phase_seconds",
                &format!("phase=\"{phase}\""),
                hist,
            );
        }
        header(&mut out, "mmo_entities", "Bodies in the world.", "gauge");
        let _ = writeln!(out, "mmo_entities{{kind=\"npc\"}} {}", self.npcs.get());
        let _ = writeln!(
            out,
            "mmo_entities{{kind=\"player\"}} {}",
            self.players.get()
        );
        gauge(
            &mut out,
            "mmo_clients_connected",
            "Sessions past the handshake.",
            &self.clients,
        );
        gauge(
            &mut out,
            "mmo_path_requests_waiting",
            "Path requests queued in the world.",
            &self.paths_waiting,
        );
        counter(
            &mut out,
            "mmo_bytes_in_total",
            "Bytes received.",
            &self.bytes_in,
        );
        counter(
            &mut out,
            "mmo_bytes_out_total",
            "Bytes sent.",
            &self.bytes_out,
        );
        counter(
            &mut out,
            "mmo_datagrams_in_total",
            "Datagrams received.",
            &self.datagrams_in,
        );
        counter(
            &mut out,
            "mmo_datagrams_out_total",
            "Datagrams sent.",
            &self.datagrams_out,
        );
        labelled(
            &mut out,
            "mmo_invalid_messages_total",
            "Invalid client messages.",
            "kind",
            &["datagram", "frame", "input"],
            &self.invalid,
        );
        labelled(
            &mut out,
            "mmo_inputs_dropped_total",
            "Inputs dropped before the world.",
            "why",
            &["rate_limited", "queue_full", "stale"],
            &self.inputs_dropped,
        );
        labelled(
            &mut out,
            "mmo_snapshots_dropped_total",
            "Snapshots not sent (behind: ticks whose snapshots were skipped for all).",
            "why",
            &["budget", "congested", "behind"],
            &self.snapshots_dropped,
        );
        labelled(
            &mut out,
            "mmo_connections_refused_total",
            "Connections refused before a session started.",
            "why",
            &["server_full", "per_address", "shutting_down"],
            &self.refused,
        );
        let reasons = DisconnectReason::ALL.map(DisconnectReason::name);
        labelled(
            &mut out,
            "mmo_disconnects_total",
            "Sessions ended, by reason.",
            "reason",
            &reasons,
            &self.disconnects,
        );
        labelled(
            &mut out,
            "mmo_handshakes_failed_total",
            "QUIC handshakes that failed or did not finish in time.",
            "why",
            &["error", "timeout"],
            &self.handshakes_failed,
        );
        counter(
            &mut out,
            "mmo_connections_lost_total",
            "Sessions whose connection was lost without a disconnect.",
            &self.connections_lost,
        );
        counter(
            &mut out,
            "mmo_udp_receive_drops_total",
            "Datagrams the kernel dropped at the QUIC socket because its receive buffer was full.",
            &self.udp_receive_drops,
        );
        gauge(
            &mut out,
            "mmo_udp_receive_buffer_bytes",
            "The QUIC socket's receive buffer as granted by the kernel.",
            &self.udp_receive_buffer_bytes,
        );
        gauge(
            &mut out,
            "mmo_udp_send_buffer_bytes",
            "The QUIC socket's send buffer as granted by the kernel.",
            &self.udp_send_buffer_bytes,
        );
        out
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn counter(out: &mut String, name: &str, help: &str, value: &Counter) {
    header(out, name, help, "counter");
    let _ = writeln!(out, "{name} {}", value.get());
}

fn gauge(out: &mut String, name: &str, help: &str, value: &Gauge) {
    header(out, name, help, "gauge");
    let _ = writeln!(out, "{name} {}", value.get());
}

fn labelled(
    out: &mut String,
    name: &str,
    help: &str,
    label: &str,
    values: &[&str],
    counters: &[Counter],
) {
    header(out, name, help, "counter");
    for (value, count) in values.iter().zip(counters) {
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {}", count.get());
    }
}

fn histogram(out: &mut String, name: &str, labels: &str, hist: &Histogram) {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut cumulative = 0;
    for (bound, bucket) in BUCKETS_SECS.iter().zip(&hist.buckets) {
        cumulative += bucket.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
        );
    }
    let count = hist.count();
    let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
    let sum = hist.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {sum}");
    let _ = writeln!(out, "{name}_count{braces} {count}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let metrics = Metrics::default();
        metrics.tick_seconds.observe(Duration::from_micros(300));
        metrics.tick_seconds.observe(Duration::from_millis(7));
        metrics.tick_seconds.observe(Duration::from_secs(1));
        let text = metrics.render();
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
        let text = metrics.render();
        assert!(text.contains("mmo_disconnects_total{reason=\"slow_client\"} 1\n"));
        assert!(text.contains("mmo_invalid_messages_total{kind=\"input\"} 1\n"));
        assert!(text.contains("mmo_invalid_messages_total{kind=\"datagram\"} 0\n"));
        assert_eq!(metrics.disconnects_for(DisconnectReason::SlowClient), 1);
    }
}
