//! The command-line tool end to end: real files in a temporary folder, one clear error
//! message and a non-zero exit for every kind of bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::map_path;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_navmesh-builder"))
        .args(args)
        .output()
        .unwrap()
}

fn scratch(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("navmesh-builder-it-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn assert_fails_with(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "stderr: {stderr}");
    assert!(
        stderr.contains(needle),
        "stderr {stderr:?} does not mention {needle:?}"
    );
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

#[test]
fn build_info_render_round_trip() {
    let dir = scratch("roundtrip");
    let mesh = dir.join("arena.navmesh");
    let svg = dir.join("arena.svg");
    let out = run(&[
        "build",
        s(&map_path("movingai/arena.map")),
        "-o",
        s(&mesh),
        "--svg",
        s(&svg),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    for field in [
        "vertices",
        "triangles",
        "islands",
        "walkable",
        "triangulate",
        "bake",
    ] {
        assert!(summary.contains(field), "summary lacks {field}: {summary}");
    }
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.trim_end().ends_with("</svg>"));

    let info = run(&["info", s(&mesh)]);
    assert!(info.status.success());
    let info_text = String::from_utf8_lossy(&info.stdout);
    // `info` on the file repeats the mesh part of the build summary exactly.
    for line in info_text.lines() {
        assert!(
            summary.lines().any(|l| l == line),
            "info line {line:?} not in build summary"
        );
    }
    let rendered = dir.join("again.svg");
    let out = run(&["render", s(&mesh), "-o", s(&rendered)]);
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&rendered).unwrap(), svg_text);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_inputs_give_one_clear_error() {
    let dir = scratch("bad");
    let out = dir.join("out.navmesh");

    assert_fails_with(
        &run(&["build", s(&dir.join("missing.map")), "-o", s(&out)]),
        "cannot read",
    );
    let txt = dir.join("map.txt");
    std::fs::write(&txt, "hello").unwrap();
    assert_fails_with(
        &run(&["build", s(&txt), "-o", s(&out)]),
        "unknown map format",
    );

    let bad_json = dir.join("bad.json");
    std::fs::write(
        &bad_json,
        "{\"regions\": [\n  {\"outer\": [[0, 0], [1, 0]\n",
    )
    .unwrap();
    assert_fails_with(&run(&["build", s(&bad_json), "-o", s(&out)]), "line");

    let crossing = dir.join("crossing.json");
    std::fs::write(
        &crossing,
        r#"{"regions": [{"outer": [[0, 0], [4, 4], [4, 0], [0, 4]]}]}"#,
    )
    .unwrap();
    assert_fails_with(&run(&["build", s(&crossing), "-o", s(&out)]), "region 0");

    let bad_map = dir.join("bad.map");
    std::fs::write(&bad_map, "type octile\nheight 2\nwidth 2\nmap\n..\n.x\n").unwrap();
    assert_fails_with(&run(&["build", s(&bad_map), "-o", s(&out)]), "line 6");

    assert_fails_with(
        &run(&[
            "build",
            s(&map_path("arena.json")),
            "-o",
            s(&out),
            "--min-angle",
            "60",
        ]),
        "--min-angle",
    );

    let not_mesh = dir.join("not.navmesh");
    std::fs::write(&not_mesh, "definitely not a navmesh").unwrap();
    assert_fails_with(&run(&["info", s(&not_mesh)]), "not a navmesh file");

    // A real mesh with one byte flipped in the middle.
    let good = dir.join("good.navmesh");
    assert!(
        run(&["build", s(&map_path("arena.json")), "-o", s(&good)])
            .status
            .success()
    );
    let mut bytes = std::fs::read(&good).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&not_mesh, &bytes).unwrap();
    assert_fails_with(&run(&["info", s(&not_mesh)]), "checksum");
    std::fs::remove_dir_all(dir).unwrap();
}
