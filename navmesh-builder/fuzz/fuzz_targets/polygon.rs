//! Polygon maps made of the fuzzer's bytes: up to three regions of up to three holes,
//! rings of 3 to 18 points on a small grid of integers and halves, so that rings touch,
//! cross, overlap, repeat points and lie on each other's edges far more often than random
//! floats would. The builder must refuse such a map with an error or build a mesh that
//! answers queries; it must never panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use navmesh_builder::pipeline::{build, SourceKind};
use navmesh_builder::triangulate::RefineParams;

mod common;
use common::{check_mesh, Bytes};

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let ring = |bytes: &mut Bytes<'_>| -> String {
        let points: Vec<String> = (0..3 + bytes.next() % 16)
            .map(|_| {
                let x = f64::from(bytes.next() % 64) / 2.0;
                let y = f64::from(bytes.next() % 64) / 2.0;
                format!("[{x}, {y}]")
            })
            .collect();
        format!("[{}]", points.join(", "))
    };
    let regions: Vec<String> = (0..1 + bytes.next() % 3)
        .map(|_| {
            let outer = ring(&mut bytes);
            let holes: Vec<String> = (0..bytes.next() % 4).map(|_| ring(&mut bytes)).collect();
            format!(r#"{{"outer": {outer}, "holes": [{}]}}"#, holes.join(", "))
        })
        .collect();
    let text = format!(r#"{{"regions": [{}]}}"#, regions.join(", "));
    let refine = match bytes.next() % 3 {
        0 => RefineParams::default(),
        1 => RefineParams {
            min_angle_deg: Some(25.0),
            max_area: None,
        },
        _ => RefineParams {
            min_angle_deg: Some(20.0),
            max_area: Some(4.0),
        },
    };
    if let Ok(built) = build("fuzz", &text, SourceKind::Polygon, &refine, &mut |_| {}) {
        let area = built.mesh.walkable_area();
        assert!(
            (area - built.outline_area).abs() <= 1e-6 * built.outline_area.max(1.0),
            "mesh area {area} against the outline's {}",
            built.outline_area
        );
        check_mesh(&built.mesh, &mut bytes);
    }
});
