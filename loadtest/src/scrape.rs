//! The server's own figures, from its Prometheus `/metrics`: scraped at the start and the
//! end of a run, the difference says how the server ticked while the bots played.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Counters read from one scrape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scrape {
    /// `mmo_tick_seconds_bucket` counts by upper bound (seconds), cumulative.
    pub tick_buckets: Vec<(f64, f64)>,
    /// `mmo_ticks_total`.
    pub ticks: f64,
    /// `mmo_tick_overruns_total`.
    pub overruns: f64,
    /// `mmo_clients_connected`.
    pub clients: f64,
    /// `mmo_tick_phase_seconds_sum` and `_count` by phase.
    pub phases: BTreeMap<String, (f64, f64)>,
}

/// The server over the run: differences between two scrapes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerFigures {
    /// Ticks run.
    pub ticks: u64,
    /// Ticks over their 50 ms slot.
    pub overruns: u64,
    /// Upper bound of the histogram bucket holding the 99th percentile tick, ms.
    pub tick_p99_ms: f64,
    /// Clients connected at the end.
    pub clients: u64,
    /// Mean time per tick of each phase, ms.
    pub phase_mean_ms: BTreeMap<String, f64>,
}

/// Fetches and parses `url` (`http://HOST:PORT/PATH`), within five seconds.
pub async fn scrape(url: &str) -> Result<Scrape> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("metrics URL must start with http://, got {url}"))?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/metrics".to_owned()), |(h, p)| (h, format!("/{p}")));
    let fetch = async {
        let mut stream = TcpStream::connect(host)
            .await
            .with_context(|| format!("cannot connect to {host}"))?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut body = Vec::new();
        stream.take(16 << 20).read_to_end(&mut body).await?;
        anyhow::Ok(String::from_utf8_lossy(&body).into_owned())
    };
    let text = tokio::time::timeout(Duration::from_secs(5), fetch)
        .await
        .with_context(|| format!("{url} did not answer within 5 s"))??;
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        bail!("{url}: not an HTTP response");
    };
    if !head.starts_with("HTTP/1.1 200") {
        bail!("{url}: {}", head.lines().next().unwrap_or(""));
    }
    Ok(parse(body))
}

/// Parses the text exposition format, keeping the metrics this tool reports.
pub fn parse(text: &str) -> Scrape {
    let mut scrape = Scrape::default();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let label = |key: &str| {
            let start = name.find(&format!("{key}=\""))? + key.len() + 2;
            let end = name[start..].find('"')? + start;
            Some(name[start..end].to_owned())
        };
        if name.starts_with("mmo_tick_seconds_bucket") {
            let bound = label("le").map_or(f64::INFINITY, |le| le.parse().unwrap_or(f64::INFINITY));
            scrape.tick_buckets.push((bound, value));
        } else if name == "mmo_ticks_total" {
            scrape.ticks = value;
        } else if name == "mmo_tick_overruns_total" {
            scrape.overruns = value;
        } else if name == "mmo_clients_connected" {
            scrape.clients = value;
        } else if let Some(phase) = label("phase") {
            let entry = scrape.phases.entry(phase).or_default();
            if name.starts_with("mmo_tick_phase_seconds_sum") {
                entry.0 = value;
            } else if name.starts_with("mmo_tick_phase_seconds_count") {
                entry.1 = value;
            }
        }
    }
    scrape
}

/// The server's figures between two scrapes.
pub fn between(start: &Scrape, end: &Scrape) -> ServerFigures {
    let ticks = (end.ticks - start.ticks).max(0.0);
    // The 99th percentile lies in the first bucket whose count (over the run) reaches 99%.
    let mut tick_p99_ms = f64::INFINITY;
    for (bound, count) in &end.tick_buckets {
        let before = start
            .tick_buckets
            .iter()
            .find(|(b, _)| b == bound)
            .map_or(0.0, |(_, c)| *c);
        if ticks > 0.0 && (count - before) >= 0.99 * ticks {
            tick_p99_ms = bound * 1e3;
            break;
        }
    }
    let phase_mean_ms = end
        .phases
        .iter()
        .map(|(phase, (sum, count))| {
            let (sum0, count0) = start.phases.get(phase).copied().unwrap_or_default();
            let n = (count - count0).max(1.0);
            (phase.clone(), (sum - sum0) / n * 1e3)
        })
        .collect();
    ServerFigures {
        ticks: ticks as u64,
        overruns: (end.overruns - start.overruns).max(0.0) as u64,
        tick_p99_ms,
        clients: end.clients as u64,
        phase_mean_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_from_bucket_differences() {
        let start = parse(
            "mmo_ticks_total 100\nmmo_tick_seconds_bucket{le=\"0.01\"} 100\nmmo_tick_seconds_bucket{le=\"0.025\"} 100\nmmo_tick_seconds_bucket{le=\"+Inf\"} 100\n",
        );
        let end = parse(
            "mmo_ticks_total 300\nmmo_tick_seconds_bucket{le=\"0.01\"} 250\nmmo_tick_seconds_bucket{le=\"0.025\"} 299\nmmo_tick_seconds_bucket{le=\"+Inf\"} 300\nmmo_tick_phase_seconds_sum{phase=\"paths\"} 0.4\nmmo_tick_phase_seconds_count{phase=\"paths\"} 200\n",
        );
        let figures = between(&start, &end);
        assert_eq!(figures.ticks, 200);
        // 150 of 200 ticks under 10 ms, 199 under 25 ms: the 99th is in the 25 ms bucket.
        assert_eq!(figures.tick_p99_ms, 25.0);
        assert_eq!(figures.phase_mean_ms["paths"], 2.0);
    }
}
