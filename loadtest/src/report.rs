//! What a swarm run found: the report as a table and as JSON, and the aggregate the bots
//! feed while it runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::bot::{Bot, Violation};
use crate::scrape::ServerFigures;

/// Percentiles of a latency distribution, milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

impl Percentiles {
    /// From a histogram of microseconds.
    pub fn of(hist: &Histogram<u64>) -> Percentiles {
        let ms = |us: u64| us as f64 / 1_000.0;
        if hist.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: hist.len(),
            p50_ms: ms(hist.value_at_quantile(0.5)),
            p90_ms: ms(hist.value_at_quantile(0.9)),
            p99_ms: ms(hist.value_at_quantile(0.99)),
            p999_ms: ms(hist.value_at_quantile(0.999)),
            max_ms: ms(hist.max()),
        }
    }
}

/// One second of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Seconds since the start.
    pub t: u64,
    /// Bots in session at the end of the second.
    pub connected: u64,
    /// Snapshots applied during the second, all bots.
    pub snapshots: u64,
    /// Bytes received during the second, all bots (datagrams and frames).
    pub bytes_in: u64,
    /// Bytes sent during the second, all bots.
    pub bytes_out: u64,
    /// Round-trip p99 of the second, milliseconds.
    pub rtt_p99_ms: f64,
    /// Violations during the second.
    pub violations: u64,
}

/// The whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Server address.
    pub server: String,
    /// Bots asked for.
    pub bots: u64,
    /// Behaviour asked for.
    pub behaviour: String,
    /// When the bots sent their inputs (`timer`: every 100 ms; `snapshot`: on each
    /// snapshot).
    #[serde(default)]
    pub input_pace: String,
    /// Seconds the run lasted.
    pub duration_secs: f64,
    /// Seconds at the start left out of the percentiles and rates.
    pub warmup_secs: f64,
    /// Bots that logged in.
    pub connected: u64,
    /// Most bots in session at once.
    pub peak_connected: u64,
    /// Bots that never logged in, by reason.
    pub failed_to_connect: BTreeMap<String, u64>,
    /// Sessions that ended before the run did, by reason.
    pub dropped: BTreeMap<String, u64>,
    /// Input sent → first snapshot acknowledging it.
    pub rtt: Percentiles,
    /// Time between consecutive snapshots of one bot.
    pub snapshot_interval: Percentiles,
    /// Received bytes per connected bot per second, after the warm-up.
    pub bytes_in_per_bot_per_sec: f64,
    /// Sent bytes per connected bot per second, after the warm-up.
    pub bytes_out_per_bot_per_sec: f64,
    /// Snapshots applied per bot per second, after the warm-up.
    pub snapshots_per_bot_per_sec: f64,
    /// Protocol and game-rule violations seen by the bots, by kind.
    pub violations: BTreeMap<String, u64>,
    /// The server's own figures over the run, when its metrics were scraped.
    pub server_figures: Option<ServerFigures>,
    /// One entry per second.
    pub series: Vec<Second>,
    /// Zone borders crossed by the bots' characters, all bots, over the whole run (warm-up
    /// included, like the two own-character figures below); 0 without the cluster's zones.
    #[serde(default)]
    pub crossings: u64,
    /// Fewest crossings one bot that logged in saw.
    #[serde(default)]
    pub crossings_per_bot_min: u64,
    /// Most crossings one bot saw.
    #[serde(default)]
    pub crossings_per_bot_max: u64,
    /// Where the bot with the fewest crossings walked ([`Bot::walk_summary`]); `None`
    /// without the cluster's zones.
    #[serde(default)]
    pub fewest_crossings_bot: Option<String>,
    /// The longest time any bot went without its own character in its snapshots, from the
    /// first applied snapshot without it to the next with it (or the bot's end), ms.
    #[serde(default)]
    pub own_missing_max_ms: f64,
    /// Spells of snapshots without the bot's own character, all bots.
    #[serde(default)]
    pub own_missing_episodes: u64,
}

impl Report {
    /// Total violations.
    pub fn violation_count(&self) -> u64 {
        self.violations.values().sum()
    }

    /// Bots that failed to connect.
    pub fn failed_count(&self) -> u64 {
        self.failed_to_connect.values().sum()
    }

    /// Sessions dropped.
    pub fn dropped_count(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "load test of {} — {} {} bots (inputs paced by {}) for {:.0} s ({:.0} s warm-up excluded)",
            self.server,
            self.bots,
            self.behaviour,
            self.input_pace,
            self.duration_secs,
            self.warmup_secs
        );
        let _ = writeln!(
            out,
            "  bots connected      {} of {} (peak {} at once)",
            self.connected, self.bots, self.peak_connected
        );
        let _ = writeln!(
            out,
            "  failed to connect   {}{}",
            self.failed_count(),
            reasons(&self.failed_to_connect)
        );
        let _ = writeln!(
            out,
            "  dropped             {}{}",
            self.dropped_count(),
            reasons(&self.dropped)
        );
        let _ = writeln!(
            out,
            "  {:<22}{:>8}{:>8}{:>8}{:>8}{:>8}{:>10}",
            "ms", "p50", "p90", "p99", "p99.9", "max", "samples"
        );
        for (name, p) in [
            ("input → ack RTT", &self.rtt),
            ("snapshot interval", &self.snapshot_interval),
        ] {
            let _ = writeln!(
                out,
                "  {:<22}{:>8.1}{:>8.1}{:>8.1}{:>8.1}{:>8.1}{:>10}",
                name, p.p50_ms, p.p90_ms, p.p99_ms, p.p999_ms, p.max_ms, p.count
            );
        }
        let _ = writeln!(
            out,
            "  per bot per second  {:.0} B in, {:.0} B out, {:.1} snapshots",
            self.bytes_in_per_bot_per_sec,
            self.bytes_out_per_bot_per_sec,
            self.snapshots_per_bot_per_sec
        );
        let _ = writeln!(
            out,
            "  violations          {}{}",
            self.violation_count(),
            reasons(&self.violations)
        );
        let _ = writeln!(
            out,
            "  border crossings    {} (per bot {} to {})",
            self.crossings, self.crossings_per_bot_min, self.crossings_per_bot_max
        );
        if let Some(bot) = &self.fewest_crossings_bot {
            let _ = writeln!(out, "  fewest crossings    {bot}");
        }
        let _ = writeln!(
            out,
            "  own character gone  {} times, longest {:.0} ms",
            self.own_missing_episodes, self.own_missing_max_ms
        );
        if let Some(server) = &self.server_figures {
            let _ = writeln!(
                out,
                "  server              tick p99 ≤ {:.1} ms over {} ticks, {} overruns, {} clients at the end",
                server.tick_p99_ms, server.ticks, server.overruns, server.clients
            );
            let phases: Vec<String> = server
                .phase_mean_ms
                .iter()
                .map(|(phase, ms)| format!("{phase} {ms:.2}"))
                .collect();
            let _ = writeln!(out, "  server mean ms      {}", phases.join(", "));
            if let Some(p99) = server.send_interval_p99_ms {
                let _ = writeln!(
                    out,
                    "  server sent         snapshot interval p99 ≤ {p99:.1} ms (handed to QUIC, \
                     before the network and the bots)"
                );
            }
        }
        out
    }
}

fn reasons(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!(" ({})", parts.join(", "))
}

/// What the bots report while the swarm runs; the swarm turns it into a [`Report`].
pub struct Aggregate {
    /// Round trips after the warm-up, microseconds.
    pub rtt_us: Histogram<u64>,
    /// Snapshot intervals after the warm-up, microseconds.
    pub interval_us: Histogram<u64>,
    /// Round trips of the current second, microseconds.
    pub second_rtt_us: Histogram<u64>,
    /// Violations by kind.
    pub violations: BTreeMap<Violation, u64>,
    /// Failed logins by reason.
    pub failed: BTreeMap<String, u64>,
    /// Dropped sessions by reason.
    pub dropped: BTreeMap<String, u64>,
    /// Bots in session now.
    pub connected_now: u64,
    /// Bots that ever logged in.
    pub connected_ever: u64,
    /// Sessions whose end was counted (as dropped, or as lasting the run).
    pub ended: u64,
    /// Most at once.
    pub peak_connected: u64,
    /// Counters of the current second.
    pub second: Second,
    /// Bytes in after the warm-up.
    pub bytes_in: u64,
    /// Bytes out after the warm-up.
    pub bytes_out: u64,
    /// Snapshots after the warm-up.
    pub snapshots: u64,
    /// Sum over seconds after the warm-up of bots connected (bot-seconds), the run's last
    /// part of a second included.
    pub bot_seconds: f64,
    /// Whether the warm-up is over.
    pub measuring: bool,
    /// Crossings of every bot that has ended.
    pub crossings: u64,
    /// Fewest crossings of one ended bot; `None` before any ended.
    pub crossings_per_bot_min: Option<u64>,
    /// Most crossings of one ended bot.
    pub crossings_per_bot_max: u64,
    /// [`Bot::walk_summary`] of the ended bot with the fewest crossings.
    pub fewest_crossings_bot: Option<String>,
    /// Longest spell of one ended bot without its own character.
    pub own_missing_max: Duration,
    /// Spells without their own character of every ended bot.
    pub own_missing_episodes: u64,
}

fn histogram() -> Histogram<u64> {
    // One microsecond to one minute with three significant digits: a fixed, small table.
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("constant histogram bounds are valid")
}

impl Default for Aggregate {
    fn default() -> Self {
        Aggregate {
            rtt_us: histogram(),
            interval_us: histogram(),
            second_rtt_us: histogram(),
            violations: BTreeMap::new(),
            failed: BTreeMap::new(),
            dropped: BTreeMap::new(),
            connected_now: 0,
            connected_ever: 0,
            ended: 0,
            peak_connected: 0,
            second: Second::default(),
            bytes_in: 0,
            bytes_out: 0,
            snapshots: 0,
            bot_seconds: 0.0,
            measuring: false,
            crossings: 0,
            crossings_per_bot_min: None,
            crossings_per_bot_max: 0,
            fewest_crossings_bot: None,
            own_missing_max: Duration::ZERO,
            own_missing_episodes: 0,
        }
    }
}

impl Aggregate {
    /// Adds the totals of a bot whose session has ended (`now`: its end).
    pub fn add_bot_totals(&mut self, bot: &Bot, now: Instant) {
        self.crossings += bot.crossings;
        if bot.has_borders()
            && self
                .crossings_per_bot_min
                .is_none_or(|min| bot.crossings < min)
        {
            self.fewest_crossings_bot = Some(bot.walk_summary());
        }
        self.crossings_per_bot_min = Some(
            self.crossings_per_bot_min
                .map_or(bot.crossings, |min| min.min(bot.crossings)),
        );
        self.crossings_per_bot_max = self.crossings_per_bot_max.max(bot.crossings);
        self.own_missing_max = self.own_missing_max.max(bot.own_missing_max(now));
        self.own_missing_episodes += bot.own_missing_episodes();
    }

    /// Records a duration in a histogram (saturating at its bounds).
    pub fn record(hist: &mut Histogram<u64>, duration: Duration) {
        let us = u64::try_from(duration.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, 60_000_000);
        hist.saturating_record(us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::Behaviour;

    #[test]
    fn bot_totals_give_the_crossing_range_and_the_longest_spell() {
        let now = Instant::now();
        let mut agg = Aggregate::default();
        let zone = |name: &str, x0: f32, x1: f32| crate::borders::Zone {
            name: name.to_owned(),
            min: (x0, 0.0),
            max: (x1, 10.0),
        };
        let borders = std::sync::Arc::new(
            crate::borders::Borders::from_zones(vec![
                zone("west", 0.0, 5.0),
                zone("east", 5.0, 10.0),
            ])
            .unwrap(),
        );
        let mut busy = Bot::with_borders(Behaviour::Border, 1, borders.clone());
        busy.crossings = 7;
        let mut still = Bot::with_borders(Behaviour::Border, 2, borders);
        still.crossings = 2;
        agg.add_bot_totals(&busy, now);
        agg.add_bot_totals(&still, now);
        let fewest = agg.fewest_crossings_bot.as_deref().unwrap();
        assert!(
            fewest.starts_with("bot-2: never seen, heading for none, 0 orders (0 to another"),
            "{fewest}"
        );
        assert_eq!(agg.crossings, 9);
        assert_eq!(agg.crossings_per_bot_min, Some(2));
        assert_eq!(agg.crossings_per_bot_max, 7);
        assert_eq!(agg.own_missing_max, Duration::ZERO);
        // Reports written before these fields existed still read.
        let old = serde_json::to_value(Report::default()).unwrap();
        let mut old = old.as_object().unwrap().clone();
        old.remove("crossings");
        old.remove("fewest_crossings_bot");
        old.remove("own_missing_max_ms");
        let report: Report = serde_json::from_value(old.into()).unwrap();
        assert_eq!(report, Report::default());
    }
}
