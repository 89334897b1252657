//! A gate: a segment across a passage that counts the bodies walking through it, each
//! way, per 10 simulated seconds, and how densely they stand within 2 m of it. What a
//! passage carries, beside what the crowd asks of it, tells a jam that rules could ease
//! from one that is the passage's capacity (docs/benchmarks.md, issue 17).

use std::collections::HashMap;
use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use sim::{EntityId, World};

/// Ticks in one window of the gate's counts (10 s at 20 Hz).
const WINDOW_TICKS: u64 = 200;

/// How far from the segment a body counts toward the density beside it, metres.
const NEAR_M: f32 = 2.0;

/// A segment from `a` to `b`, with the side each body stood on last tick.
pub(crate) struct Gate {
    a: (f32, f32),
    b: (f32, f32),
    /// Left of the segment (seen from `a` toward `b`) or not, per body.
    side: HashMap<EntityId, bool>,
    windows: Vec<Window>,
    current: Window,
    ticks_in_window: u64,
}

/// One window's counts.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Window {
    /// Bodies that crossed from the segment's left to its right (seen from its start).
    pub left_to_right: u64,
    /// Bodies that crossed from its right to its left.
    pub right_to_left: u64,
    /// Bodies within 2 m of the segment, summed over the window's ticks.
    #[serde(skip)]
    near_ticks: u64,
    /// Bodies per square metre within 2 m of the segment, on average over the window.
    pub density_near_per_m2: f32,
}

/// What the report says of the gate.
#[derive(Debug, Serialize)]
pub(crate) struct GateReport {
    pub from: (f32, f32),
    pub to: (f32, f32),
    pub length_m: f32,
    pub left_to_right: u64,
    pub right_to_left: u64,
    /// Crossings either way per second over the run's second half.
    pub per_second_second_half: f32,
    /// 10 s windows, in order (a last, shorter one is left out).
    pub windows: Vec<Window>,
}

impl Gate {
    /// Parses `X0,Y0,X1,Y1` (metres, map coordinates).
    pub(crate) fn parse(text: &str) -> Result<Gate> {
        let numbers = text
            .split(',')
            .map(|n| n.trim().parse::<f32>())
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("the gate `{text}` is not four numbers X0,Y0,X1,Y1"))?;
        let [x0, y0, x1, y1] = numbers[..] else {
            bail!(
                "the gate `{text}` has {} numbers, not four (X0,Y0,X1,Y1)",
                numbers.len()
            );
        };
        if numbers.iter().any(|n| !n.is_finite()) || (x0 == x1 && y0 == y1) {
            bail!("the gate `{text}` is not a segment of two finite, distinct points");
        }
        Ok(Gate {
            a: (x0, y0),
            b: (x1, y1),
            side: HashMap::new(),
            windows: Vec::new(),
            current: Window::default(),
            ticks_in_window: 0,
        })
    }

    fn length(&self) -> f32 {
        (self.b.0 - self.a.0).hypot(self.b.1 - self.a.1)
    }

    /// Counts the bodies that crossed the segment since the last tick.
    pub(crate) fn tick(&mut self, world: &World) {
        let (ax, ay) = self.a;
        let (dx, dy) = (self.b.0 - ax, self.b.1 - ay);
        let length2 = dx * dx + dy * dy;
        let length = length2.sqrt();
        for body in world.bodies() {
            let (px, py) = (body.pos.x - ax, body.pos.y - ay);
            // Where along the segment (0 to 1) the body stands, and how far beside it.
            let along = (px * dx + py * dy) / length2;
            let beside = (dx * py - dy * px) / length;
            let within = (0.0..=1.0).contains(&along);
            let left = beside > 0.0;
            if within && beside.abs() <= NEAR_M {
                self.current.near_ticks += 1;
            }
            // A body moves a few centimetres a tick: a change of side within the
            // segment's span is a crossing there.
            if let Some(was_left) = self.side.insert(body.id, left)
                && was_left != left
                && within
            {
                if was_left {
                    self.current.left_to_right += 1;
                } else {
                    self.current.right_to_left += 1;
                }
            }
        }
        self.ticks_in_window += 1;
        if self.ticks_in_window == WINDOW_TICKS {
            let area = 2.0 * NEAR_M * self.length();
            self.current.density_near_per_m2 =
                self.current.near_ticks as f32 / WINDOW_TICKS as f32 / area;
            self.windows.push(std::mem::take(&mut self.current));
            self.ticks_in_window = 0;
        }
    }

    pub(crate) fn report(&self) -> GateReport {
        let sum = |windows: &[Window]| {
            windows.iter().fold((0, 0), |(l, r), w| {
                (l + w.left_to_right, r + w.right_to_left)
            })
        };
        let mut all = self.windows.clone();
        all.push(self.current);
        let (left_to_right, right_to_left) = sum(&all);
        let late = &self.windows[self.windows.len() / 2..];
        let (l, r) = sum(late);
        let secs = late.len() as f32 * WINDOW_TICKS as f32 / 20.0;
        GateReport {
            from: self.a,
            to: self.b,
            length_m: self.length(),
            left_to_right,
            right_to_left,
            per_second_second_half: if secs > 0.0 {
                (l + r) as f32 / secs
            } else {
                0.0
            },
            windows: self.windows.clone(),
        }
    }
}

impl GateReport {
    /// The table's lines.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "gate             ({}, {}) to ({}, {}), {:.1} m: {} left to right, {} right to left, \
             {:.1} a second over the second half",
            self.from.0,
            self.from.1,
            self.to.0,
            self.to.1,
            self.length_m,
            self.left_to_right,
            self.right_to_left,
            self.per_second_second_half
        );
        let per_window: Vec<String> = self
            .windows
            .iter()
            .map(|w| {
                format!(
                    "{}+{} ({:.2}/m²)",
                    w.left_to_right, w.right_to_left, w.density_near_per_m2
                )
            })
            .collect();
        let _ = writeln!(out, "                 per 10 s: {}", per_window.join(", "));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_that_is_not_a_segment_is_refused_by_name() {
        for bad in ["1,2,3", "1,2,3,x", "1,2,1,2", "1,2,3,inf", ""] {
            let error = Gate::parse(bad).err().map(|e| format!("{e:#}"));
            assert!(
                error.as_deref().is_some_and(|e| e.contains(bad)),
                "{bad}: {error:?}"
            );
        }
        assert!(Gate::parse("158, 130, 184, 130").is_ok());
    }

    /// Three walkers through the gate, two of them from its right, and one past its end.
    #[test]
    fn walkers_through_the_gate_are_counted_each_way() {
        use std::sync::Arc;

        use navmesh_builder::pipeline::{SourceKind, build};
        use sim::{Brain, Input, Kind, Vec2, WorldConfig};

        let room = r#"{"regions": [{"outer": [[0, 0], [30, 0], [30, 30], [0, 30]]}]}"#;
        let mesh = build(
            "room",
            room,
            SourceKind::Polygon,
            &Default::default(),
            &mut |_| {},
        )
        .expect("an open room builds")
        .mesh;
        let mut world = World::new(WorldConfig::default(), Arc::new(mesh), 1);
        let walker = |x: f32, y: f32| Input::Spawn {
            kind: Kind::Npc,
            pos: Vec2::new(x, y),
            radius_m: 0.4,
            speed_mps: 1.5,
            brain: Brain::Idle,
        };
        let ids = world
            .step(&[
                walker(4.0, 5.0),
                walker(7.0, 25.0),
                walker(10.0, 5.0),
                walker(25.0, 5.0),
            ])
            .spawned;
        let goals = [(4.0, 25.0), (7.0, 5.0), (10.0, 25.0), (25.0, 25.0)];
        let orders: Vec<Input> = ids
            .iter()
            .zip(goals)
            .map(|(&id, (x, y))| Input::MoveTo(id, Vec2::new(x, y)))
            .collect();
        world.step(&orders);
        // Across x 2 to 12 at y = 15: from (2, 15) toward +x, its left is +y.
        let mut gate = Gate::parse("2,15,12,15").expect("a segment");
        for _ in 0..WINDOW_TICKS * 2 {
            world.step(&[]);
            gate.tick(&world);
        }
        let report = gate.report();
        assert_eq!((report.left_to_right, report.right_to_left), (1, 2));
        assert_eq!(report.windows.len(), 2);
        let first = report.windows[0];
        assert_eq!((first.left_to_right, first.right_to_left), (1, 2));
        assert!(first.density_near_per_m2 > 0.0);
    }
}
