//! Moving AI grid maps made of the fuzzer's bytes: up to 24 by 24 cells, each passable or
//! not (with the format's other terrain letters among them), so that diagonal touches,
//! one-cell corridors, enclosed holes and islands come often. Every such map is valid: the
//! builder must build a mesh whose area is the passable cells' and that answers queries.

#![no_main]

use libfuzzer_sys::fuzz_target;
use navmesh_builder::pipeline::{build, SourceKind};
use navmesh_builder::triangulate::RefineParams;

mod common;
use common::{check_mesh, Bytes};

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let width = 1 + usize::from(bytes.next() % 24);
    let height = 1 + usize::from(bytes.next() % 24);
    let mut text = format!("type octile\nheight {height}\nwidth {width}\nmap\n");
    for _ in 0..height {
        for _ in 0..width {
            text.push(match bytes.next() % 8 {
                0..=3 => '.',
                4 => 'G',
                5 => '@',
                6 => 'T',
                _ => 'W',
            });
        }
        text.push('\n');
    }
    match build(
        "fuzz",
        &text,
        SourceKind::Grid,
        &RefineParams::default(),
        &mut |_| {},
    ) {
        Ok(built) => {
            let known = built.known_area.expect("a grid states its area");
            let area = built.mesh.walkable_area();
            assert!(
                (area - known).abs() < 1e-6,
                "mesh area {area}, passable cells {known}"
            );
            check_mesh(&built.mesh, &mut bytes);
        }
        // A map with no passable cell has nothing to build; any other refusal is a bug.
        Err(err) => assert!(
            !text.lines().skip(4).any(|row| row.contains(['.', 'G'])),
            "a grid map with passable cells was refused: {err:#}\n{text}"
        ),
    }
});
