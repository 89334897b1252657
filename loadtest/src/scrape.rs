//! The server's own figures, from its Prometheus `/metrics`: scraped at the start and the
//! end of a run, the difference says how the server ticked while the bots played.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use prometheus_parse::Value;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Counters read from one scrape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scrape {
    /// `mmo_tick_seconds_bucket` counts by upper bound (seconds), cumulative.
    pub tick_buckets: Vec<(f64, f64)>,
    /// `mmo_snapshot_send_interval_seconds_bucket`, the same way.
    pub send_interval_buckets: Vec<(f64, f64)>,
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
    /// Upper bound of the bucket holding the 99th percentile of the time between two
    /// snapshots the server handed to one client's connection, ms: the snapshot interval
    /// before QUIC, the network and the bots add theirs. `None` from a server that does
    /// not count it.
    #[serde(default)]
    pub send_interval_p99_ms: Option<f64>,
    /// Clients connected at the end.
    pub clients: u64,
    /// Mean time per tick of each phase, ms.
    pub phase_mean_ms: BTreeMap<String, f64>,
}

/// Fetches and parses `url` (`http://HOST:PORT/PATH`), within five seconds. The fetch is
/// one plain HTTP/1.1 GET with `Connection: close`, read to the end: the server's endpoint
/// answers exactly that, and an HTTP client library would outweigh the rest of the tool.
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

/// Parses the text exposition format (with `prometheus-parse`), keeping the metrics this
/// tool reports; lines it cannot read are skipped, so a malformed page gives zeros, not an
/// error.
pub fn parse(text: &str) -> Scrape {
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    // Errors come only from the line iterator, and ours yields none.
    let Ok(parsed) = prometheus_parse::Scrape::parse(lines) else {
        return Scrape::default();
    };
    let mut scrape = Scrape::default();
    for sample in parsed.samples {
        let value = match &sample.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(buckets) => {
                let kept = match sample.metric.as_str() {
                    "mmo_tick_seconds" => &mut scrape.tick_buckets,
                    "mmo_snapshot_send_interval_seconds" => &mut scrape.send_interval_buckets,
                    _ => continue,
                };
                *kept = buckets.iter().map(|b| (b.less_than, b.count)).collect();
                kept.sort_by(|a, b| a.0.total_cmp(&b.0));
                continue;
            }
            Value::Summary(_) => continue,
        };
        match sample.metric.as_str() {
            "mmo_ticks_total" => scrape.ticks = value,
            "mmo_tick_overruns_total" => scrape.overruns = value,
            "mmo_clients_connected" => scrape.clients = value,
            name @ ("mmo_tick_phase_seconds_sum" | "mmo_tick_phase_seconds_count") => {
                let Some(phase) = sample.labels.get("phase") else {
                    continue;
                };
                let entry = scrape.phases.entry(phase.to_owned()).or_default();
                if name.ends_with("_sum") {
                    entry.0 = value;
                } else {
                    entry.1 = value;
                }
            }
            _ => {}
        }
    }
    scrape
}

/// The upper bound, ms, of the bucket holding the 99th percentile of what a histogram
/// counted between two scrapes (cumulative counts by upper bound, seconds): the first
/// bucket whose count over the run reaches 99% of the run's count. Infinite without counts.
fn p99_bucket_ms(start: &[(f64, f64)], end: &[(f64, f64)]) -> f64 {
    let count_in = |buckets: &[(f64, f64)], bound: f64| {
        buckets
            .iter()
            .find(|(b, _)| *b == bound)
            .map_or(0.0, |(_, c)| *c)
    };
    let all = end
        .last()
        .map_or(0.0, |&(bound, count)| count - count_in(start, bound));
    end.iter()
        .find(|&&(bound, count)| all > 0.0 && count - count_in(start, bound) >= 0.99 * all)
        .map_or(f64::INFINITY, |&(bound, _)| bound * 1e3)
}

/// The server's figures between two scrapes.
pub fn between(start: &Scrape, end: &Scrape) -> ServerFigures {
    let ticks = (end.ticks - start.ticks).max(0.0);
    let tick_p99_ms = p99_bucket_ms(&start.tick_buckets, &end.tick_buckets);
    let send_interval_p99_ms = (!end.send_interval_buckets.is_empty())
        .then(|| p99_bucket_ms(&start.send_interval_buckets, &end.send_interval_buckets));
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
        send_interval_p99_ms,
        clients: end.clients as u64,
        phase_mean_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as the server renders it: help and type lines, a plain histogram, a
    /// histogram by phase, counters and a gauge.
    fn page(ticks: u32, buckets: [u32; 3], paths_sum: f64, paths_count: u32) -> String {
        let [b10, b25, inf] = buckets;
        format!(
            "# HELP mmo_ticks_total Ticks run.\n# TYPE mmo_ticks_total counter\nmmo_ticks_total {ticks}\n\
             # HELP mmo_tick_seconds Tick duration.\n# TYPE mmo_tick_seconds histogram\n\
             mmo_tick_seconds_bucket{{le=\"0.01\"}} {b10}\nmmo_tick_seconds_bucket{{le=\"0.025\"}} {b25}\n\
             mmo_tick_seconds_bucket{{le=\"+Inf\"}} {inf}\nmmo_tick_seconds_sum 1.5\nmmo_tick_seconds_count {inf}\n\
             # TYPE mmo_tick_phase_seconds histogram\n\
             mmo_tick_phase_seconds_bucket{{phase=\"paths\",le=\"+Inf\"}} {paths_count}\n\
             mmo_tick_phase_seconds_sum{{phase=\"paths\"}} {paths_sum}\n\
             mmo_tick_phase_seconds_count{{phase=\"paths\"}} {paths_count}\n\
             # TYPE mmo_tick_overruns_total counter\nmmo_tick_overruns_total 4\n\
             # TYPE mmo_clients_connected gauge\nmmo_clients_connected 7\n"
        )
    }

    #[test]
    fn p99_from_bucket_differences() {
        let start = parse(&page(100, [100, 100, 100], 0.0, 0));
        let end = parse(&page(300, [250, 299, 300], 0.4, 200));
        assert_eq!(end.overruns, 4.0);
        assert_eq!(end.clients, 7.0);
        assert_eq!(end.tick_buckets.len(), 3, "{:?}", end.tick_buckets);
        let figures = between(&start, &end);
        assert_eq!(figures.ticks, 200);
        // 150 of 200 ticks under 10 ms, 199 under 25 ms: the 99th is in the 25 ms bucket.
        assert_eq!(figures.tick_p99_ms, 25.0);
        assert_eq!(figures.phase_mean_ms["paths"], 2.0);
        assert_eq!(figures.clients, 7);
    }

    /// The send interval's percentile comes from its own histogram's counts over the run;
    /// a server that does not count it reports none.
    #[test]
    fn send_interval_p99_from_its_histogram() {
        let histogram = |b50: u32, b60: u32, inf: u32| {
            format!(
                "# TYPE mmo_snapshot_send_interval_seconds histogram\n\
                 mmo_snapshot_send_interval_seconds_bucket{{le=\"0.05\"}} {b50}\n\
                 mmo_snapshot_send_interval_seconds_bucket{{le=\"0.06\"}} {b60}\n\
                 mmo_snapshot_send_interval_seconds_bucket{{le=\"+Inf\"}} {inf}\n\
                 mmo_snapshot_send_interval_seconds_sum 1.0\n\
                 mmo_snapshot_send_interval_seconds_count {inf}\n"
            )
        };
        let start = parse(&(page(0, [0, 0, 0], 0.0, 0) + &histogram(500, 900, 1_000)));
        // Over the run: 1,000 intervals, 985 within 60 ms, 15 longer.
        let end = parse(&(page(0, [0, 0, 0], 0.0, 0) + &histogram(1_000, 1_885, 2_000)));
        assert_eq!(
            between(&start, &end).send_interval_p99_ms,
            Some(f64::INFINITY)
        );
        // 995 within 60 ms.
        let end = parse(&(page(0, [0, 0, 0], 0.0, 0) + &histogram(1_000, 1_895, 2_000)));
        assert_eq!(between(&start, &end).send_interval_p99_ms, Some(60.0));
        let none = parse(&page(0, [0, 0, 0], 0.0, 0));
        assert_eq!(between(&none, &none).send_interval_p99_ms, None);
    }

    #[test]
    fn a_page_that_is_not_metrics_gives_zeros() {
        for text in [
            "",
            "<html>not found</html>",
            "mmo_ticks_total abc\n{}{}\n# TYPE\n",
        ] {
            assert_eq!(parse(text), Scrape::default(), "{text:?}");
        }
    }
}
