//! Service-level objectives: thresholds from a TOML file, checked against a report. A run
//! that misses any exits non-zero, naming each miss, so CI and operators can gate on it.
//!
//! Three gates hold even without a file ([`Slo::default`]): no bot may fail to log in, no
//! session may end before the run does, and no bot may see a violation. A run where
//! nothing worked (the server down, the wrong fingerprint, a server that died) is a
//! failure, never a pass. A file may loosen them by giving a larger count.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::bot::Violation;
use crate::report::Report;

/// Thresholds. The three counts hold always (0 unless given); the others are checked only
/// when given.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Slo {
    /// Most bots that may fail to log in.
    pub max_failed_connections: u64,
    /// Most sessions that may end before the run does.
    pub max_dropped: u64,
    /// Most violations.
    pub max_violations: u64,
    /// Kinds of violation left out of that count, by their names in the report (e.g.
    /// `["self_not_in_view"]` for a run that kills a zone, whose characters are missing
    /// while it is down: `own_missing_max_ms` bounds how long instead).
    pub violations_not_counted: Vec<Violation>,
    /// Largest p99 snapshot interval, ms.
    pub snapshot_interval_p99_ms: Option<f64>,
    /// Largest p99 input round trip, ms.
    pub rtt_p99_ms: Option<f64>,
    /// Most received bytes per bot per second.
    pub max_bytes_in_per_bot_per_sec: Option<f64>,
    /// Largest server tick p99 (from its metrics), ms.
    pub server_tick_p99_ms: Option<f64>,
    /// Longest time any bot may go without its own character in its snapshots, ms.
    pub own_missing_max_ms: Option<f64>,
    /// Fewest zone-border crossings every bot that logged in must see (runs with
    /// `--cluster`).
    pub min_crossings_per_bot: Option<u64>,
}

impl Slo {
    /// Reads a TOML file of thresholds.
    pub fn from_file(path: &Path) -> Result<Slo> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read SLO file {}", path.display()))?;
        Slo::from_toml(&text).with_context(|| format!("SLO file {}", path.display()))
    }

    /// Parses TOML thresholds. A limit that is not a number at least 0 (TOML takes
    /// `nan` and `inf`, and nothing is above `nan`) is refused, naming its key.
    pub fn from_toml(text: &str) -> Result<Slo> {
        let slo: Slo = toml::from_str(text).map_err(|err| anyhow::anyhow!("{err}"))?;
        let limits = [
            ("snapshot_interval_p99_ms", slo.snapshot_interval_p99_ms),
            ("rtt_p99_ms", slo.rtt_p99_ms),
            (
                "max_bytes_in_per_bot_per_sec",
                slo.max_bytes_in_per_bot_per_sec,
            ),
            ("server_tick_p99_ms", slo.server_tick_p99_ms),
            ("own_missing_max_ms", slo.own_missing_max_ms),
        ];
        for (key, limit) in limits {
            if let Some(limit) = limit
                && !(limit.is_finite() && limit >= 0.0)
            {
                anyhow::bail!("{key} is {limit}: a limit is a finite number, at least 0");
            }
        }
        Ok(slo)
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
            Some(self.max_failed_connections as f64),
            report.failed_count() as f64,
        );
        at_most(
            "dropped sessions",
            Some(self.max_dropped as f64),
            report.dropped_count() as f64,
        );
        let not_counted: Vec<String> = self
            .violations_not_counted
            .iter()
            .filter_map(|v| serde_json::to_value(v).ok()?.as_str().map(str::to_owned))
            .collect();
        let counted: u64 = report
            .violations
            .iter()
            .filter(|(name, _)| !not_counted.contains(name))
            .map(|(_, n)| n)
            .sum();
        at_most(
            "violations",
            Some(self.max_violations as f64),
            counted as f64,
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
        at_most(
            "own character missing, longest (ms)",
            self.own_missing_max_ms,
            report.own_missing_max_ms,
        );
        if let Some(limit) = self.server_tick_p99_ms {
            match &report.server_figures {
                Some(server) => at_most("server tick p99 (ms)", Some(limit), server.tick_p99_ms),
                None => misses
                    .push("server tick p99: no server metrics (give --metrics URL)".to_owned()),
            }
        }
        if let Some(least) = self.min_crossings_per_bot
            && report.crossings_per_bot_min < least
        {
            misses.push(format!(
                "crossings per bot: the fewest, {}, is below the minimum of {least}",
                report.crossings_per_bot_min
            ));
        }
        if report.snapshot_interval.count == 0 && self.snapshot_interval_p99_ms.is_some() {
            misses.push("snapshot interval: no snapshots were measured".to_owned());
        }
        if report.rtt.count == 0 && self.rtt_p99_ms.is_some() {
            misses.push("input round trip: no round trips were measured".to_owned());
        }
        misses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing is above `nan`: such a limit, or one below 0 or infinite, would gate
    /// nothing, and is refused with its key.
    #[test]
    fn limits_that_are_not_numbers_at_least_0_are_refused() {
        for bad in ["nan", "inf", "-1.0"] {
            let err = Slo::from_toml(&format!("rtt_p99_ms = {bad}\n")).unwrap_err();
            assert!(err.to_string().contains("rtt_p99_ms"), "{bad}: {err}");
        }
        assert!(Slo::from_toml("rtt_p99_ms = 0.0\nown_missing_max_ms = 500\n").is_ok());
    }

    #[test]
    fn violations_of_kinds_not_counted_pass_and_the_others_do_not() {
        let slo = Slo::from_toml("violations_not_counted = [\"self_not_in_view\"]\n").unwrap();
        let mut report = Report::default();
        report.violations.insert("self_not_in_view".to_owned(), 900);
        assert!(slo.misses(&report).is_empty(), "{:?}", slo.misses(&report));
        report.violations.insert("tick_backwards".to_owned(), 1);
        let misses = slo.misses(&report);
        assert_eq!(
            misses,
            vec!["violations: 1 is above the limit of 0".to_owned()]
        );
        assert!(Slo::default().misses(&report).len() == 1);
        let err = Slo::from_toml("violations_not_counted = [\"no_such_thing\"]\n").unwrap_err();
        assert!(format!("{err:#}").contains("no_such_thing"), "{err:#}");
    }

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

    #[test]
    fn without_a_file_failures_drops_and_violations_fail_the_run() {
        let slo = Slo::default();
        assert_eq!(slo, Slo::from_toml("").unwrap());
        assert_eq!(slo.misses(&Report::default()), Vec::<String>::new());
        let mut report = Report::default();
        report.failed_to_connect.insert("timeout".to_owned(), 3);
        report.dropped.insert("shutdown".to_owned(), 1);
        report.violations.insert("out_of_bounds".to_owned(), 1);
        let misses = slo.misses(&report);
        assert_eq!(misses.len(), 3, "{misses:?}");
        assert!(misses[0].starts_with("failed connections: 3"), "{misses:?}");
        assert!(misses[1].starts_with("dropped sessions: 1"), "{misses:?}");
        assert!(misses[2].starts_with("violations: 1"), "{misses:?}");
        // A file may tolerate some.
        let lenient = Slo::from_toml("max_failed_connections = 3\nmax_dropped = 1\n").unwrap();
        assert_eq!(lenient.misses(&report).len(), 1);
    }

    #[test]
    fn border_runs_gate_on_the_missing_character_and_the_crossings() {
        let slo = Slo::from_toml("own_missing_max_ms = 150\nmin_crossings_per_bot = 2\n").unwrap();
        let mut report = Report {
            own_missing_max_ms: 150.0,
            crossings_per_bot_min: 2,
            ..Report::default()
        };
        assert_eq!(slo.misses(&report), Vec::<String>::new());
        report.own_missing_max_ms = 151.0;
        report.crossings_per_bot_min = 1;
        let misses = slo.misses(&report);
        assert_eq!(misses.len(), 2, "{misses:?}");
        assert!(misses[0].starts_with("own character missing"), "{misses:?}");
        assert!(misses[1].starts_with("crossings per bot"), "{misses:?}");
    }

    #[test]
    fn a_latency_gate_without_samples_is_missed() {
        let slo = Slo::from_toml("rtt_p99_ms = 50\nsnapshot_interval_p99_ms = 60\n").unwrap();
        let misses = slo.misses(&Report::default());
        assert_eq!(misses.len(), 2, "{misses:?}");
    }
}
