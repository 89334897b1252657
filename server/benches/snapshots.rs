//! Snapshot building for 1,000 clients in a world of 10,000 NPCs on den520d (the embedded
//! default map), as the world thread runs it after each step. Two parts:
//! `snapshots/capture_10000_npcs` copies every body's wire state into the frame grid (once
//! per tick); `snapshots/1000_clients_10000_npcs` gathers each client's view and builds and
//! encodes its delta (per client) into one datagram buffer kept for every client, with the
//! builder's working memory kept from tick to tick, as a snapshot worker does. A tick's
//! snapshot cost is the sum.
//!
//! Setup: 10,000 wandering NPCs run 2 s, then 21 consecutive ticks are captured. Every
//! tenth NPC stands in for a client's character; each client acknowledges every snapshot,
//! so snapshots are deltas against the previous tick, as with a client on a good link.
//! Iterations walk the captured ticks back from the last one the warm-up served, then
//! forward and back, so consecutive snapshots are always one tick apart. Before measuring,
//! the bench prints the bytes per client per second over one simulated second with the
//! server's defaults (view radius 30 m, 800-byte snapshots).
//!
//! `snapshots/1000_clients_10000_npcs_acks_2_ticks_late` is the same per-client work with
//! each client acknowledging two ticks late, as over a 100 ms round trip: the baseline is
//! then older than the newest view sent, and changes sent since are sent again until one
//! that carried them is acknowledged. `…_acks_every_other_tick` acknowledges every second
//! snapshot at once (every 100 ms), and `…_acks_every_other_tick_a_tick_late` does so a
//! tick late, as the load test's bots do over a round trip: the snapshot after each one
//! acknowledged was then built against the same baseline, which is kept beside the new
//! view. All three first run until every client's view holds its whole crowd
//! ([`FILL_LATE_TICKS`]): they measure the steady state, as the on-time case does, not
//! views still filling up.
//!
//! `snapshots/1000_clients_10000_npcs_{1,2}_workers` runs the same per-client work through
//! the server's snapshot workers ([`SnapshotPool`]): the job split by shard, sessions'
//! acknowledgements routed to their worker, bandwidth accounting and sending into sinks
//! that count bytes; each iteration hands one tick to the pool and waits until every
//! worker is done, so it measures the tick's snapshot latency with that many threads. After
//! each it prints whether every measured tick served every client (stride 1): on a slow or
//! busy machine the pool thins the clients out, and the time is then for fewer snapshots.
//!
//! `cargo bench -p server --bench snapshots` runs it; add `-- --test` for a smoke run.

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use protocol::NetId;
use server::config::Config;
use server::game::{Game, GameConfig};
use server::interest::{ClientView, Frame, Scratch, ViewRange, capture, net_id};
use server::metrics::Metrics;
use server::snapshot_pool::SnapshotPool;
use server::snapshots::{
    ByteCounter, ClientTick, Membership, NewViewer, SnapshotConfig, SnapshotJob,
};

const NPCS: u32 = 10_000;
const CLIENT_EVERY: usize = 10;
const FRAMES: usize = 21;
/// Ticks a late case runs after its first simulated second, before it is measured. A view
/// fills by what each snapshot adds to its baseline (about 60 entering entities in 800
/// bytes), and a late client's baseline is two or three ticks old, so its view takes 40 to
/// 60 ticks to hold its whole crowd; measured earlier, the snapshots would still be filling
/// it (mostly entering entities, scanned for on almost every tick), not the steady state.
const FILL_LATE_TICKS: usize = 60;

struct Tick {
    frame: Arc<Frame>,
    /// Each client's character position this tick.
    positions: Vec<(f32, f32)>,
}

struct Setup {
    game: Game,
    ticks: Vec<Tick>,
    clients: Vec<NetId>,
    range: ViewRange,
    budget: usize,
    config: Config,
}

fn setup() -> Setup {
    let config = Config::default();
    let (mesh, _) = server::run::load_map(&config).expect("the embedded map builds");
    let range = ViewRange {
        radius_m: config.view_radius_m,
        hysteresis_m: config.view_hysteresis_m,
    };
    let mut game = Game::new(
        Arc::new(mesh),
        GameConfig {
            npcs: NPCS,
            seed: 1,
            path_budget: 20_000,
            path_budget_per_body: 2.5,
            path_corner_graph: false,
            spawn_point: None,
            spawn_spread_m: server::game::SPAWN_SPREAD_M,
            max_clients: 1,
            view: range,
            doors: Vec::new(),
        },
        Arc::new(Metrics::default()),
    );
    let origin = Instant::now();
    for _ in 0..40 {
        game.tick(origin);
    }
    let ids: Vec<_> = game
        .world()
        .bodies()
        .step_by(CLIENT_EVERY)
        .map(|b| b.id)
        .collect();
    let mut ticks: Vec<Tick> = Vec::with_capacity(FRAMES);
    for _ in 0..FRAMES {
        game.tick(origin);
        let world = game.world();
        let positions = ids
            .iter()
            .map(|&id| {
                let pos = world.body(id).expect("NPCs are never removed").pos;
                (pos.x, pos.y)
            })
            .collect();
        // As the server does: each frame takes the roster of the one before.
        let mut frame = capture(world, range);
        if let Some(last) = ticks.last() {
            frame.follow(&last.frame);
        }
        ticks.push(Tick {
            frame: Arc::new(frame),
            positions,
        });
    }
    Setup {
        game,
        ticks,
        clients: ids.into_iter().map(net_id).collect(),
        range,
        budget: config.snapshot_max_bytes as usize,
        config,
    }
}

/// How the clients acknowledge: how many ticks late (0, each snapshot before the next is
/// built, a client on a good link next to the server; 2, as over a 100 ms round trip), and
/// every how many ticks (1, every snapshot; 2, every 100 ms, as the load test's bots do).
#[derive(Clone, Copy)]
struct AckDelay(u64, u64);

thread_local! {
    /// The builder's working memory and one datagram buffer for every client, kept from
    /// tick to tick as a snapshot worker keeps its own.
    static WORK: RefCell<(Scratch, Vec<u8>)> = RefCell::default();
}

/// Builds every client's snapshot of one tick; returns the bytes sent.
fn snapshot_all(
    setup: &Setup,
    views: &mut [ClientView],
    tick: &Tick,
    number: u64,
    AckDelay(late, every): AckDelay,
) -> usize {
    WORK.with_borrow_mut(|(scratch, datagram)| {
        let mut bytes = 0;
        for ((view, &me), &at) in views.iter_mut().zip(&setup.clients).zip(&tick.positions) {
            let header = (number, 0);
            view.snapshot_into(&tick.frame, scratch, me, at, header, setup.budget, datagram)
                .expect("the budget holds a snapshot");
            bytes += datagram.len();
            if number > late && number.is_multiple_of(every) {
                view.acknowledge(number - late);
            }
        }
        bytes
    })
}

/// Views of every client made by the captured ticks in order, then [`FILL_LATE_TICKS`]
/// more along `order` (which the measurement goes on walking), acknowledged as `late`
/// says: full views, as a late client holds in the steady state. Returns them and the
/// number of the last snapshot built.
fn filled_views(
    setup: &Setup,
    late: AckDelay,
    order: &mut impl Iterator<Item = usize>,
) -> (Vec<ClientView>, u64) {
    let mut views: Vec<ClientView> = setup.clients.iter().map(|_| ClientView::new()).collect();
    let mut number = 0;
    let fill = (0..FILL_LATE_TICKS).map(|_| &setup.ticks[order.next().unwrap_or(0)]);
    for tick in setup.ticks.iter().chain(fill) {
        number += 1;
        snapshot_all(setup, &mut views, tick, number, late);
    }
    (views, number)
}

/// One measured tick of [`snapshot_all`], in a function of its own so that a profiler can
/// count these alone (`valgrind --tool=callgrind --toggle-collect='*measured_tick*'`), not
/// the first simulated second's snapshots, which fill the empty views.
#[inline(never)]
fn measured_tick(
    setup: &Setup,
    views: &mut [ClientView],
    tick: &Tick,
    number: u64,
    late: AckDelay,
) -> usize {
    snapshot_all(setup, views, tick, number, late)
}

/// The server's snapshot workers serving every client, which acknowledges each snapshot.
struct Served {
    pool: SnapshotPool,
    bytes: Arc<AtomicUsize>,
    /// The last snapshot tick handed over.
    number: u64,
    joined: bool,
    /// The largest stride a tick was served at: above 1, the pool thinned the clients out
    /// (a slow or busy machine) and served fewer snapshots than the single-thread path.
    largest_stride: u64,
    /// Kept so the sessions' kick channels stay open.
    _kicks: Vec<tokio::sync::mpsc::Receiver<server::game::Kick>>,
}

impl Served {
    fn new(setup: &Setup, workers: usize) -> Served {
        let config = SnapshotConfig {
            bandwidth_cap_bytes_per_sec: setup.config.bandwidth_cap_bytes_per_sec,
            snapshot_max_bytes: setup.config.snapshot_max_bytes,
            slow_client_ticks: setup.config.slow_client_ticks,
            workers,
            nice: 0,
        };
        let pool =
            SnapshotPool::start(config, Arc::new(Metrics::default())).expect("the workers start");
        Served {
            pool,
            bytes: Arc::new(AtomicUsize::new(0)),
            number: 0,
            joined: false,
            largest_stride: 1,
            _kicks: Vec::new(),
        }
    }

    /// Hands one tick to the workers and waits until all are done.
    fn serve(&mut self, setup: &Setup, tick: &Tick) {
        let mut changes = Membership::default();
        if !self.joined {
            self.joined = true;
            for session in 0..setup.clients.len() as u64 {
                let (kick, kicks) = tokio::sync::mpsc::channel(1);
                self._kicks.push(kicks);
                changes.joined.push(NewViewer {
                    session,
                    sink: Box::new(ByteCounter(Arc::clone(&self.bytes))),
                    kick,
                });
            }
        } else {
            for session in 0..setup.clients.len() as u64 {
                changes.acks.insert(session, self.number);
            }
        }
        self.number += 1;
        let clients = setup
            .clients
            .iter()
            .zip(&tick.positions)
            .enumerate()
            .map(|(session, (&me, &at))| ClientTick {
                session: session as u64,
                me,
                at,
                applied_seq: 0,
            })
            .collect();
        let job = SnapshotJob {
            tick: self.number,
            frame: Arc::clone(&tick.frame),
            clients,
            changes,
        };
        // `offer` serves the job at the stride the pool asks for now.
        self.largest_stride = self.largest_stride.max(self.pool.stride());
        let refused = self.pool.offer(job).expect("the workers run");
        assert!(refused.is_empty(), "an idle worker refused its job");
        self.pool.wait_idle();
    }
}

fn bench(c: &mut Criterion) {
    let setup = setup();
    let mut views: Vec<ClientView> = setup.clients.iter().map(|_| ClientView::new()).collect();

    // One simulated second after the first (full) snapshots: the steady delta stream.
    snapshot_all(&setup, &mut views, &setup.ticks[0], 1, AckDelay(0, 1));
    let mut number = 1;
    let mut bytes = 0;
    for tick in &setup.ticks[1..] {
        number += 1;
        bytes += snapshot_all(&setup, &mut views, tick, number, AckDelay(0, 1));
    }
    let seconds = (FRAMES - 1) as f64 / 20.0;
    let clients = setup.clients.len();
    let in_view: usize = views
        .iter()
        .map(|v| v.latest().map_or(0, |view| view.len()))
        .sum();
    println!(
        "{clients} clients, {NPCS} NPCs: {:.0} bytes per client per second, {:.0} entities in view on average",
        bytes as f64 / clients as f64 / seconds,
        in_view as f64 / clients as f64
    );

    let mut order = (0..FRAMES - 1).rev().chain(1..FRAMES).cycle();
    let mut group = c.benchmark_group("snapshots");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("1000_clients_10000_npcs", |b| {
        b.iter(|| {
            let k = order.next().unwrap_or(0);
            number += 1;
            black_box(measured_tick(
                &setup,
                &mut views,
                &setup.ticks[k],
                number,
                AckDelay(0, 1),
            ))
        });
    });
    // The same with acknowledgements that come late or paced: two ticks late (the baseline
    // is older than the newest view sent, which the priorities go by); every other tick,
    // each dropping two views at once; and every other tick, a tick late, as the load
    // test's bots send them (every 100 ms, over a round trip): the acknowledged snapshot's
    // baseline is then also that of the snapshot after it, so both views are kept.
    let late_cases = [
        ("1000_clients_10000_npcs_acks_2_ticks_late", AckDelay(2, 1)),
        (
            "1000_clients_10000_npcs_acks_every_other_tick",
            AckDelay(0, 2),
        ),
        (
            "1000_clients_10000_npcs_acks_every_other_tick_a_tick_late",
            AckDelay(1, 2),
        ),
    ];
    for (name, late) in late_cases {
        // Filled only when the case runs (criterion calls the routine only for the cases
        // its filter selects): filling takes seconds.
        let mut filled = None;
        group.bench_function(name, |b| {
            let (order, late_views, late_number) = filled.get_or_insert_with(|| {
                let mut order = (0..FRAMES - 1).rev().chain(1..FRAMES).cycle();
                let (views, number) = filled_views(&setup, late, &mut order);
                (order, views, number)
            });
            b.iter(|| {
                let k = order.next().unwrap_or(0);
                *late_number += 1;
                let tick = &setup.ticks[k];
                black_box(measured_tick(&setup, late_views, tick, *late_number, late))
            });
        });
    }
    for workers in [1, 2] {
        // Started only when the case runs, as the late cases are filled.
        let mut running: Option<(Served, _)> = None;
        group.bench_function(format!("1000_clients_10000_npcs_{workers}_workers"), |b| {
            let (served, order) = running.get_or_insert_with(|| {
                // The same simulated second as above, through the workers: the same bytes.
                let mut served = Served::new(&setup, workers);
                served.serve(&setup, &setup.ticks[0]);
                let full = served.bytes.load(Ordering::Relaxed);
                for tick in &setup.ticks[1..] {
                    served.serve(&setup, tick);
                }
                println!(
                    "{workers} workers: {:.0} bytes per client per second",
                    (served.bytes.load(Ordering::Relaxed) - full) as f64 / clients as f64 / seconds
                );
                served.largest_stride = 1;
                (served, (0..FRAMES - 1).rev().chain(1..FRAMES).cycle())
            });
            b.iter(|| {
                let k = order.next().unwrap_or(0);
                served.serve(&setup, &setup.ticks[k]);
            });
        });
        let Some((served, _)) = running else {
            continue;
        };
        if served.largest_stride > 1 {
            println!(
                "{workers} workers: the pool thinned the clients out (stride up to {}): \
                 the time above is for fewer snapshots a tick than the single-thread figure",
                served.largest_stride
            );
        } else {
            println!("{workers} workers: stride 1 throughout");
        }
        served.pool.stop();
    }
    group.bench_function("capture_10000_npcs", |b| {
        b.iter(|| black_box(capture(setup.game.world(), setup.range)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
