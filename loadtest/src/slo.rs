//! Service-level objectives: thresholds from a TOML file, checked against a report. A run
//! that misses any exits non-zero, naming each miss, so CI and operators can gate on it.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::report::Report;

/// Thresholds; each is optional and checked only when given.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Most bots that may fail to log in.
    pub max_failed_connections: Option<u64>,
    /// Most sessions that may end before the run does.
    pub max_dropped: Option<u64>,
    /// Most violations.
    pub max_violations: Option<u64>,
    /// Largest p99 snapshot interval, ms.
    pub snapshot_interval_p99_ms: Option<f64>,
    /// Largest p99 input round trip, ms.
    pub rtt_p99_ms: Option<f64>,
    /// Most received bytes per bot per second.
    pub max_bytes_in_per_bot_per_sec: Option<f64>,
    /// Largest server tick p99 (from its metrics), ms.
    pub server_tick_p99_ms: Option<f64>,
}

impl Slo {
    /// Reads a TOML file of thresholds.
    pub fn from_file(path: &Path) -> Result<Slo> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read SLO file {}", path.display()))?;
        Slo::from_toml(&text).with_context(|| format!("SLO file {}", path.display()))
    }

    /// Parses TOML thresholds.
    pub fn from_toml(text: &str) -> Result<Slo> {
        toml::from_str(text).map_err(|err| anyhow::anyhow!("{err}"))
    }

    /// Every threshold the report misses, as a sentence each.
    pub fn misses(&self, report: &Report) -> Vec<String> {
        let mut misses = Vec::new();
        let mut at_most = |name: &str, limit: Option<f64>, value: f64| {
            if let Some(limit) = limit
                && (value > limit || value.is_nan())
            {
                misses.push(format!("{name}: {value} is above the limit of {limit}"));
            }
        };
        at_most(
            "failed connections",
            self.max_failed_connections.map(|v| v as f64),
            report.failed_count() as f64,
        );
        at_most(
            "dropped sessions",
            self.max_dropped.map(|v| v as f64),
            report.dropped_count() as f64,
        );
        at_most(
            "violations",
            self.max_violations.map(|v| v as f64),
            report.violation_count() as f64,
        );
        at_most(
            "snapshot interval p99 (ms)",
            self.snapshot_interval_p99_ms,
            report.snapshot_interval.p99_ms,
        );
        at_most(
            "input round trip p99 (ms)",
            self.rtt_p99_ms,
            report.rtt.p99_ms,
        );
        at_most(
            "bytes in per bot per second",
            self.max_bytes_in_per_bot_per_sec,
            report.bytes_in_per_bot_per_sec,
        );
        if let Some(limit) = self.server_tick_p99_ms {
            match &report.server_figures {
                Some(server) => at_most("server tick p99 (ms)", Some(limit), server.tick_p99_ms),
                None => misses
                    .push("server tick p99: no server metrics (give --metrics URL)".to_owned()),
            }
        }
        if report.snapshot_interval.count == 0 && self.snapshot_interval_p99_ms.is_some() {
            misses.push("snapshot interval: no snapshots were measured".to_owned());
        }
        misses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_name_each_threshold() {
        let slo = Slo::from_toml("max_violations = 0\nsnapshot_interval_p99_ms = 60\n").unwrap();
        let mut report = Report::default();
        report.snapshot_interval.count = 10;
        report.snapshot_interval.p99_ms = 75.0;
        report.violations.insert("tick_backwards".to_owned(), 2);
        let misses = slo.misses(&report);
        assert_eq!(misses.len(), 2, "{misses:?}");
        assert!(misses[0].starts_with("violations"));
        assert!(misses[1].starts_with("snapshot interval p99"));
        assert!(Slo::from_toml("max_violation = 0\n").is_err());
    }
}
