//! The run's figures: gathered tick by tick ([`Tally`]), then summed up in a [`Report`]
//! that prints as a table and serialises as JSON.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use sim::{PhaseTimes, StepOutput};

/// One phase's part of the run's time.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PhaseShare {
    /// Phase name, as in [`PhaseTimes::named`].
    pub(crate) phase: &'static str,
    /// Time spent in the phase over all ticks, milliseconds.
    pub(crate) total_ms: f64,
    /// Fraction of the time of all phases (0 to 1).
    pub(crate) share: f64,
}

/// Everything a run reports. Overlaps are fractions of the smaller body's radius; `_end`
/// figures are those of the last tick, `_worst`/`_max` the worst over all ticks.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Report {
    /// The run's setup (map, seed, bodies), flattened into the report's fields.
    #[serde(flatten)]
    pub(crate) setup: Setup,
    /// Ticks run.
    pub(crate) ticks: u64,
    /// Simulated seconds (ticks × 50 ms).
    pub(crate) simulated_secs: f64,
    /// Wall-clock time inside `step_timed`, summed over ticks, seconds.
    pub(crate) busy_secs: f64,
    /// Simulated time over busy time: how many times faster than real time.
    pub(crate) realtime_factor: f64,
    /// Median tick time, milliseconds.
    pub(crate) tick_ms_p50: f64,
    /// 99th percentile tick time, milliseconds.
    pub(crate) tick_ms_p99: f64,
    /// Slowest tick time, milliseconds.
    pub(crate) tick_ms_max: f64,
    /// The slowest tick's number (1 is the tick that spawns everything).
    pub(crate) tick_max_at: u64,
    /// Mean tick time, milliseconds.
    pub(crate) tick_ms_mean: f64,
    /// Each phase's share of the time, in tick order.
    pub(crate) phases: Vec<PhaseShare>,
    /// Deepest overlap between two bodies, worst over all ticks.
    pub(crate) max_overlap_worst: f64,
    /// The tick of `max_overlap_worst`.
    pub(crate) max_overlap_worst_at: u64,
    /// Deepest overlap between two bodies after the last tick.
    pub(crate) max_overlap_end: f64,
    /// 99th percentile over bodies of their deepest overlap, worst over all ticks.
    pub(crate) p99_overlap_worst: f64,
    /// 99th percentile over bodies of their deepest overlap, after the last tick.
    pub(crate) p99_overlap_end: f64,
    /// Most bodies reaching into walls at once, over all ticks.
    pub(crate) bodies_in_walls_max: usize,
    /// The tick of `bodies_in_walls_max` (0 when never any).
    pub(crate) bodies_in_walls_max_at: u64,
    /// Bodies reaching into walls after the last tick.
    pub(crate) bodies_in_walls_end: usize,
    /// Bodies circling after the last tick.
    pub(crate) circling_end: usize,
    /// Bodies being repulsed after the last tick.
    pub(crate) repulsed_end: usize,
    /// Bodies stuck (no progress toward their goal for the world's stuck time) at the end.
    pub(crate) stuck_end: usize,
    /// Most bodies stuck at once, over all ticks.
    pub(crate) stuck_max: usize,
    /// Goals reached, summed over all ticks.
    pub(crate) arrivals_total: u64,
    /// Goals wandering NPCs gave up (no progress along their path for half the stuck
    /// time), summed over ticks: the crowd's congestion figure.
    pub(crate) gave_up_total: u64,
    /// Path requests served, summed over all ticks.
    pub(crate) paths_served_total: u64,
    /// Most path requests waiting at the end of a tick.
    pub(crate) paths_waiting_max: usize,
    /// Path requests waiting after the last tick.
    pub(crate) paths_waiting_end: usize,
    /// The longest any path request waited to be served, seconds.
    pub(crate) path_wait_max_secs: f64,
    /// The first tick that ended with no path request waiting: the start-up burst (every
    /// NPC asking for its first path at once) had drained. `None`: it never did.
    pub(crate) paths_drained_at: Option<u64>,
    /// The longest any path request waited in the ticks after that one, seconds.
    pub(crate) path_wait_after_drain_secs: Option<f64>,
    /// Inputs the world rejected as invalid (0 unless this program has a bug).
    pub(crate) invalid_inputs_total: u64,
    /// Mean over NPCs of their speed in the last tick over their walking speed (0 to 1).
    pub(crate) mean_speed_ratio_end: f64,
    /// The same, averaged over all ticks of the run.
    pub(crate) mean_speed_ratio_run: f64,
    /// NPCs moving below 10% of their walking speed in the last tick (`sim::CRAWL_RATIO`).
    pub(crate) crawling_end: usize,
    /// Pairs of bodies overlapping by more than 1% of the smaller radius after the last
    /// tick.
    pub(crate) overlapping_pairs_end: usize,
    /// Most such pairs after any tick.
    pub(crate) overlapping_pairs_max: usize,
}

/// Figures gathered tick by tick.
#[derive(Default)]
pub(crate) struct Tally {
    tick_secs: Vec<f64>,
    phases: [Duration; 8],
    max_overlap_worst: (f32, u64),
    p99_overlap_worst: f32,
    in_walls_max: (usize, u64),
    stuck_max: usize,
    arrivals: u64,
    gave_up: u64,
    served: u64,
    waiting_max: usize,
    wait_ticks_max: u64,
    drained_at: Option<u64>,
    wait_ticks_after_drain: u64,
    invalid: u64,
    speed_ratio_sum: f64,
    overlapping_pairs_max: usize,
    last: StepOutput,
}

impl Tally {
    /// A tally for about `ticks` ticks.
    pub(crate) fn with_capacity(ticks: usize) -> Tally {
        Tally {
            tick_secs: Vec::with_capacity(ticks),
            ..Tally::default()
        }
    }

    /// Adds one tick: its wall-clock time and its output.
    pub(crate) fn add(&mut self, elapsed: Duration, out: StepOutput) {
        self.tick_secs.push(elapsed.as_secs_f64());
        for (slot, (_, t)) in self.phases.iter_mut().zip(out.phase_times.named()) {
            *slot += t;
        }
        let tick = out.tick.0;
        if out.max_overlap > self.max_overlap_worst.0 {
            self.max_overlap_worst = (out.max_overlap, tick);
        }
        self.p99_overlap_worst = self.p99_overlap_worst.max(out.p99_overlap);
        if out.bodies_in_walls > self.in_walls_max.0 {
            self.in_walls_max = (out.bodies_in_walls, tick);
        }
        self.stuck_max = self.stuck_max.max(out.stuck);
        self.arrivals += out.arrivals as u64;
        self.gave_up += out.gave_up as u64;
        self.served += out.paths_served as u64;
        self.waiting_max = self.waiting_max.max(out.paths_waiting);
        self.wait_ticks_max = self.wait_ticks_max.max(out.path_wait_ticks);
        if self.drained_at.is_some() {
            self.wait_ticks_after_drain = self.wait_ticks_after_drain.max(out.path_wait_ticks);
        } else if out.paths_waiting == 0 {
            self.drained_at = Some(tick);
        }
        self.invalid += out.invalid_inputs as u64;
        self.speed_ratio_sum += f64::from(out.mean_speed_ratio);
        self.overlapping_pairs_max = self.overlapping_pairs_max.max(out.overlapping_pairs);
        self.last = out;
    }

    /// Fills in the report's run figures; the setup fields are taken from `setup`.
    pub(crate) fn report(self, setup: Setup) -> Report {
        let ticks = self.tick_secs.len() as u64;
        let busy: f64 = self.tick_secs.iter().sum();
        let (max_at, max_secs) =
            self.tick_secs
                .iter()
                .copied()
                .enumerate()
                .fold((0, 0.0f64), |best, (i, t)| {
                    if t > best.1 { (i as u64 + 1, t) } else { best }
                });
        let mut sorted = self.tick_secs;
        sorted.sort_by(f64::total_cmp);
        let all: Duration = self.phases.iter().sum();
        let phases = PhaseTimes::default()
            .named()
            .iter()
            .zip(self.phases)
            .map(|(&(phase, _), t)| PhaseShare {
                phase,
                total_ms: t.as_secs_f64() * 1e3,
                share: if all.is_zero() {
                    0.0
                } else {
                    t.as_secs_f64() / all.as_secs_f64()
                },
            })
            .collect();
        let simulated_secs = ticks as f64 / ticks_per_second();
        let last = &self.last;
        Report {
            setup,
            ticks,
            simulated_secs,
            busy_secs: busy,
            realtime_factor: if busy > 0.0 {
                simulated_secs / busy
            } else {
                f64::INFINITY
            },
            tick_ms_p50: percentile(&sorted, 0.50) * 1e3,
            tick_ms_p99: percentile(&sorted, 0.99) * 1e3,
            tick_ms_max: max_secs * 1e3,
            tick_max_at: max_at,
            tick_ms_mean: if ticks > 0 {
                busy / ticks as f64 * 1e3
            } else {
                0.0
            },
            phases,
            max_overlap_worst: f64::from(self.max_overlap_worst.0),
            max_overlap_worst_at: self.max_overlap_worst.1,
            max_overlap_end: f64::from(last.max_overlap),
            p99_overlap_worst: f64::from(self.p99_overlap_worst),
            p99_overlap_end: f64::from(last.p99_overlap),
            bodies_in_walls_max: self.in_walls_max.0,
            bodies_in_walls_max_at: self.in_walls_max.1,
            bodies_in_walls_end: last.bodies_in_walls,
            circling_end: last.circling,
            repulsed_end: last.repulsed,
            stuck_end: last.stuck,
            stuck_max: self.stuck_max,
            arrivals_total: self.arrivals,
            gave_up_total: self.gave_up,
            paths_served_total: self.served,
            paths_waiting_max: self.waiting_max,
            paths_waiting_end: last.paths_waiting,
            path_wait_max_secs: self.wait_ticks_max as f64 * f64::from(sim::DT_SECS),
            paths_drained_at: self.drained_at,
            path_wait_after_drain_secs: self
                .drained_at
                .map(|_| self.wait_ticks_after_drain as f64 * f64::from(sim::DT_SECS)),
            invalid_inputs_total: self.invalid,
            mean_speed_ratio_end: f64::from(last.mean_speed_ratio),
            mean_speed_ratio_run: if ticks > 0 {
                self.speed_ratio_sum / ticks as f64
            } else {
                0.0
            },
            crawling_end: last.crawling,
            overlapping_pairs_end: last.overlapping_pairs,
            overlapping_pairs_max: self.overlapping_pairs_max,
        }
    }
}

/// What the report says about the setup rather than the run.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Setup {
    /// The map file as given.
    pub(crate) map: String,
    /// Whether it was loaded or built.
    pub(crate) map_origin: String,
    /// Mesh triangles.
    pub(crate) triangles: usize,
    /// Mesh islands.
    pub(crate) islands: u32,
    /// Walkable area, square metres.
    pub(crate) walkable_area_m2: f64,
    /// The seed.
    pub(crate) seed: u64,
    /// The world's path search budget per tick, node expansions, at least.
    pub(crate) path_budget: usize,
    /// The world's path search budget per body per tick (the budget is the larger of the
    /// two).
    pub(crate) path_budget_per_body: f32,
    /// NPCs spawned.
    pub(crate) npcs: u64,
    /// Players spawned.
    pub(crate) players: u64,
    /// Spawn points that could not be placed clear.
    pub(crate) spawn_blocked: usize,
    /// Live bodies at the end.
    pub(crate) bodies_end: usize,
    /// The world's state hash after the last tick (`sim::World::state_hash`), in hex: the
    /// same map, seed and settings give the same hash on every run and every machine.
    pub(crate) state_hash_end: String,
}

/// World ticks per simulated second (20).
pub(crate) fn ticks_per_second() -> f64 {
    (1.0 / f64::from(sim::DT_SECS)).round()
}

/// `tick N`, or `never` for tick 0 (a worst figure that was never above 0).
fn at(tick: u64) -> String {
    if tick == 0 {
        "never".to_owned()
    } else {
        format!("tick {tick}")
    }
}

/// Nearest-rank percentile of sorted values (0 for none).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[k.min(sorted.len() - 1)]
}

impl Report {
    /// The report as a plain-text table.
    pub(crate) fn table(&self) -> String {
        let mut s = String::new();
        let r = self;
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        let _ = writeln!(
            s,
            "map              {} ({})",
            r.setup.map, r.setup.map_origin
        );
        let _ = writeln!(
            s,
            "mesh             {} triangles, {} islands, {:.0} m² walkable",
            r.setup.triangles, r.setup.islands, r.setup.walkable_area_m2
        );
        let _ = writeln!(
            s,
            "bodies           {} NPCs + {} players, seed {}, {} spawned blocked (near a wall or body)",
            r.setup.npcs, r.setup.players, r.setup.seed, r.setup.spawn_blocked
        );
        let _ = writeln!(
            s,
            "state hash       {} (after the last tick)",
            r.setup.state_hash_end
        );
        let _ = writeln!(
            s,
            "ticks            {} ({} s simulated in {:.3} s of ticks: {:.1}× real time)",
            r.ticks, r.simulated_secs, r.busy_secs, r.realtime_factor
        );
        let _ = writeln!(
            s,
            "tick time        p50 {:.2} ms   p99 {:.2} ms   max {:.2} ms (tick {})   mean {:.2} ms",
            r.tick_ms_p50, r.tick_ms_p99, r.tick_ms_max, r.tick_max_at, r.tick_ms_mean
        );
        let _ = writeln!(s, "phases           share    total");
        for p in &r.phases {
            let _ = writeln!(
                s,
                "  {:<14} {:>5.1}%  {:>10.2} ms",
                p.phase,
                p.share * 100.0,
                p.total_ms
            );
        }
        let _ = writeln!(
            s,
            "max overlap      worst {} ({}), end {}   (fraction of radius)",
            pct(r.max_overlap_worst),
            at(r.max_overlap_worst_at),
            pct(r.max_overlap_end)
        );
        let _ = writeln!(
            s,
            "p99 overlap      worst {}, end {}",
            pct(r.p99_overlap_worst),
            pct(r.p99_overlap_end)
        );
        let _ = writeln!(
            s,
            "in walls         max {} ({}), end {}",
            r.bodies_in_walls_max,
            at(r.bodies_in_walls_max_at),
            r.bodies_in_walls_end
        );
        let _ = writeln!(
            s,
            "at the end       {} circling, {} repulsed, {} stuck (max stuck {})",
            r.circling_end, r.repulsed_end, r.stuck_end, r.stuck_max
        );
        let _ = writeln!(
            s,
            "arrivals         {} (goals given up in jams: {})",
            r.arrivals_total, r.gave_up_total
        );
        let _ = writeln!(
            s,
            "path requests    {} served, max {} waiting, {} waiting at the end, longest wait {:.2} s (budget {} nodes a tick, or {} a body)",
            r.paths_served_total,
            r.paths_waiting_max,
            r.paths_waiting_end,
            r.path_wait_max_secs,
            r.setup.path_budget,
            r.setup.path_budget_per_body
        );
        match (r.paths_drained_at, r.path_wait_after_drain_secs) {
            (Some(tick), Some(wait)) => {
                let _ = writeln!(
                    s,
                    "                 the start-up burst drained at tick {tick}; longest wait after it {wait:.2} s"
                );
            }
            _ => {
                let _ = writeln!(s, "                 the start-up burst never drained");
            }
        }
        let _ = writeln!(
            s,
            "flow             mean speed {:.3} of desired at the end, {:.3} over the run; {} crawling at the end (below 10%)",
            r.mean_speed_ratio_end, r.mean_speed_ratio_run, r.crawling_end
        );
        let _ = writeln!(
            s,
            "overlaps         {} pairs beyond 1% of the radius at the end, max {}",
            r.overlapping_pairs_end, r.overlapping_pairs_max
        );
        if r.invalid_inputs_total > 0 {
            let _ = writeln!(s, "invalid inputs   {}", r.invalid_inputs_total);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 1.0), 100.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn tally_keeps_worst_and_end() {
        let mut t = Tally::with_capacity(3);
        for (tick, overlap, walls, ms) in [(1, 0.5, 3, 4), (2, 0.9, 1, 2), (3, 0.1, 0, 3)] {
            let out = StepOutput {
                tick: sim::Tick(tick),
                max_overlap: overlap,
                p99_overlap: overlap / 2.0,
                bodies_in_walls: walls,
                arrivals: 2,
                paths_served: 5,
                paths_waiting: walls,
                path_wait_ticks: walls as u64 * 10,
                phase_times: PhaseTimes {
                    paths: Duration::from_millis(ms),
                    circling: Duration::from_millis(ms),
                    ..PhaseTimes::default()
                },
                ..StepOutput::default()
            };
            t.add(Duration::from_millis(ms), out);
        }
        let r = t.report(Setup {
            map: "m".into(),
            map_origin: "o".into(),
            triangles: 1,
            islands: 1,
            walkable_area_m2: 1.0,
            seed: 1,
            path_budget: 20_000,
            path_budget_per_body: 2.5,
            npcs: 1,
            players: 0,
            spawn_blocked: 0,
            bodies_end: 1,
            state_hash_end: "0123456789abcdef".to_owned(),
        });
        assert_eq!(r.ticks, 3);
        assert!((r.max_overlap_worst - 0.9).abs() < 1e-6);
        assert_eq!(r.max_overlap_worst_at, 2);
        assert!((r.max_overlap_end - 0.1).abs() < 1e-6);
        assert_eq!((r.bodies_in_walls_max, r.bodies_in_walls_max_at), (3, 1));
        assert_eq!(r.bodies_in_walls_end, 0);
        assert_eq!((r.arrivals_total, r.paths_served_total), (6, 15));
        assert_eq!(r.paths_waiting_max, 3);
        assert!((r.path_wait_max_secs - 1.5).abs() < 1e-6);
        // Waiting 3, 1, 0: drained at tick 3, nothing after it.
        assert_eq!(r.paths_drained_at, Some(3));
        assert_eq!(r.path_wait_after_drain_secs, Some(0.0));
        assert_eq!((r.tick_ms_max, r.tick_max_at), (4.0, 1));
        assert_eq!(r.tick_ms_p50, 3.0);
        let share: Vec<f64> = r.phases.iter().map(|p| p.share).collect();
        assert_eq!(share, [0.0, 0.0, 0.5, 0.0, 0.0, 0.5, 0.0, 0.0]);
        assert!(r.table().contains("tick time        p50 3.00 ms"));
    }
}
