//! Character store throughput and latency, for both stores: `cargo bench -p store`.
//!
//! For each store (embedded redb in a temporary directory; PostgreSQL started fresh from
//! the Debian binaries with `fsync=on`, as a deployment runs it) it measures:
//! - saves per second, writing rounds of batches as the server's writer does (every
//!   player moved: one save per account per round), for 100 and 1,000 accounts;
//! - the time one login's `load` takes, p50 / p99 / max over 2,000 loads of random
//!   accounts among 1,000 saved ones.
//!
//! A plain harness (no criterion): what matters here is throughput of whole batches and a
//! latency distribution, which it prints as a table.

#![allow(clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

use store::test_postgres::TestPostgres;
use store::{CharacterStore, Save, StoreSpec};

fn saves(accounts: usize, round: usize) -> Vec<Save> {
    (0..accounts)
        .map(|i| Save {
            account: format!("player{i:05}"),
            name: format!("Player {i}"),
            pos: [
                i as f32 * 0.5 + round as f32 * 0.01,
                100.0 - round as f32 * 0.02,
            ],
            map: "den520d.map".to_owned(),
            now_ms: 1_800_000_000_000 + round as i64 * 500,
            order: None,
        })
        .collect()
}

/// Saves per second for rounds of `accounts` saves, over about two seconds.
fn throughput(store: &mut dyn CharacterStore, accounts: usize) -> (f64, Duration) {
    let mut written = 0usize;
    let mut batch_times = Vec::new();
    let start = Instant::now();
    let mut round = 0;
    while start.elapsed() < Duration::from_secs(2) || round < 3 {
        let batch = saves(accounts, round);
        let t = Instant::now();
        store.save_batch(&batch).unwrap();
        batch_times.push(t.elapsed());
        written += batch.len();
        round += 1;
    }
    batch_times.sort();
    let median = batch_times[batch_times.len() / 2];
    (written as f64 / start.elapsed().as_secs_f64(), median)
}

fn load_latency(store: &mut dyn CharacterStore) -> (Duration, Duration, Duration) {
    store.save_batch(&saves(1000, 0)).unwrap();
    let mut rng = navmesh_free_rng(7);
    let mut times: Vec<Duration> = (0..2000)
        .map(|_| {
            let account = format!("player{:05}", rng() % 1000);
            let t = Instant::now();
            let found = store.load(&account).unwrap();
            let took = t.elapsed();
            assert!(found.is_some());
            took
        })
        .collect();
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99), times[times.len() - 1])
}

/// A small xorshift for picking accounts (the bench needs no seeded world).
fn navmesh_free_rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.max(1);
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

fn report(name: &str, spec: &StoreSpec) {
    for accounts in [100, 1000] {
        let mut store = store::open(spec).unwrap();
        let (per_sec, median) = throughput(store.as_mut(), accounts);
        println!(
            "{name:<11} batches of {accounts:>5}: {per_sec:>9.0} saves/s (median batch {:.2} ms)",
            median.as_secs_f64() * 1e3
        );
    }
    let mut store = store::open(spec).unwrap();
    let (p50, p99, max) = load_latency(store.as_mut());
    println!(
        "{name:<11} load: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("store-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    report("embedded", &StoreSpec::Embedded { dir: dir.clone() });
    let _ = std::fs::remove_dir_all(&dir);
    let db = TestPostgres::start_durable().unwrap();
    report("postgresql", &StoreSpec::Postgres { url: db.url() });
}
