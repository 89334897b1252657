//! Scenario tests for the world: real meshes built from maps, the world stepped tick by
//! tick, properties checked every tick.

// Test setup may panic on failure: that is the report.
#![allow(clippy::unwrap_used)]

mod commands;
mod congestion;
mod crossing;
mod ghosts;
mod giving_up;
mod handoff;
mod scenarios;

use std::sync::Arc;

use navmesh::NavMesh;
use navmesh_builder::pipeline::{SourceKind, build};
use sim::{Brain, Input, Kind, Vec2};

/// Builds a mesh from polygon JSON text.
pub fn polygon_mesh(json: &str) -> Arc<NavMesh> {
    Arc::new(
        build(
            "test",
            json,
            SourceKind::Polygon,
            &Default::default(),
            &mut |_| {},
        )
        .unwrap()
        .mesh,
    )
}

/// Builds a shipped Moving AI map.
pub fn grid_mesh(name: &str) -> Arc<NavMesh> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../maps/movingai")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    Arc::new(
        build(
            name,
            &text,
            SourceKind::Grid,
            &Default::default(),
            &mut |_| {},
        )
        .unwrap()
        .mesh,
    )
}

/// A spawn input for an NPC.
pub fn npc(x: f32, y: f32, radius: f32, brain: Brain) -> Input {
    Input::Spawn {
        kind: Kind::Npc,
        pos: Vec2::new(x, y),
        radius_m: radius,
        speed_mps: 1.5,
        brain,
    }
}

/// Spawn inputs for `count` wanderers of radius 0.4 m in rows of `per_row`, `spacing`
/// metres apart, from (60, 100): an open stretch of den520d.
pub fn wanderer_rows(count: usize, per_row: usize, spacing: f32) -> Vec<Input> {
    (0..count)
        .map(|i| {
            npc(
                60.0 + (i % per_row) as f32 * spacing,
                100.0 + (i / per_row) as f32 * spacing,
                0.4,
                Brain::Wander,
            )
        })
        .collect()
}

/// A spawn input for a player character of radius 0.4 m (players have no brain).
pub fn player(x: f32, y: f32, speed_mps: f32) -> Input {
    Input::Spawn {
        kind: Kind::Player,
        pos: Vec2::new(x, y),
        radius_m: 0.4,
        speed_mps,
        brain: Brain::Idle,
    }
}
