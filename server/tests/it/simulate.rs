//! `server simulate` end to end: a short simulation on a shipped map with its JSON report
//! and SVG frame, and one clear `error:` line for each kind of bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use navmesh_builder::pipeline::{SourceKind, build};
use navmesh_builder::triangulate::RefineParams;

/// A map shipped in the repository's `maps/` folder.
fn map_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../maps")
        .join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_server"))
        .args(args)
        .output()
        .unwrap()
}

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("server-it-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The run failed with exactly one line on stderr, `error: …` mentioning `needle`.
fn assert_fails_with(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "stderr: {stderr}");
    assert!(
        stderr.contains(needle),
        "stderr {stderr:?} does not mention {needle:?}"
    );
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

#[test]
fn simulate_arena_writes_report_and_frame() {
    let dir = scratch("arena");
    let (report, svg) = (dir.join("R.json"), dir.join("S.svg"));
    let out = run(&[
        "simulate",
        "--map",
        s(&map_path("arena.json")),
        "--npcs",
        "50",
        "--players",
        "3",
        "--seconds",
        "2",
        "--report",
        s(&report),
        "--svg",
        s(&svg),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    let table = String::from_utf8_lossy(&out.stdout);
    for row in [
        "ticks",
        "tick time",
        "phases",
        "max overlap",
        "in walls",
        "arrivals",
    ] {
        assert!(table.contains(row), "table lacks {row:?}:\n{table}");
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["ticks"], 40, "{json}");
    assert_eq!(json["npcs"], 50);
    assert_eq!(json["players"], 3);
    let bodies = json["bodies_end"].as_u64().unwrap();
    assert_eq!(bodies, 53);
    assert_eq!(json["invalid_inputs_total"], 0);
    let phases = json["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 8);
    let share: f64 = phases.iter().map(|p| p["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-6, "phase shares sum to {share}");
    for field in [
        "tick_ms_p50",
        "tick_ms_p99",
        "tick_ms_max",
        "max_overlap_worst",
    ] {
        assert!(json[field].as_f64().unwrap() >= 0.0, "{field}: {json}");
    }

    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg"));
    assert!(picture.ends_with("</svg>\n"));
    assert_eq!(
        picture.matches(r#"<circle class="body "#).count() as u64,
        bodies
    );
    assert_eq!(picture.matches(r#"class="body player""#).count(), 3);
}

#[test]
fn simulate_reports_the_flow_and_draws_the_jams() {
    let dir = scratch("jams");
    let run_with = |extra: &[&str], tag: &str| {
        let (report, jams) = (
            dir.join(format!("{tag}.json")),
            dir.join(format!("{tag}.svg")),
        );
        let map = map_path("arena.json");
        let mut args = vec!["simulate", "--map", s(&map)];
        let (report_s, jams_s) = (s(&report).to_owned(), s(&jams).to_owned());
        args.extend([
            "--npcs",
            "300",
            "--seconds",
            "5",
            "--report",
            &report_s,
            "--jam-svg",
            &jams_s,
        ]);
        args.extend_from_slice(extra);
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "stderr: {stderr}");
        let table = String::from_utf8_lossy(&out.stdout).into_owned();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        (table, json, std::fs::read_to_string(&jams).unwrap())
    };
    let (table, json, jams) = run_with(&[], "on");
    for row in ["flow", "overlaps"] {
        assert!(table.contains(row), "table lacks {row:?}:\n{table}");
    }
    for field in ["mean_speed_ratio_end", "mean_speed_ratio_run"] {
        let v = json[field].as_f64().unwrap();
        assert!(v > 0.0 && v <= 1.0, "{field}: {v}");
    }
    let crawling = json["crawling_end"].as_u64().unwrap();
    assert!(crawling <= 300, "{json}");
    assert_eq!(json["overlapping_pairs_end"], 0, "{json}");
    assert_eq!(json["overlapping_pairs_max"], 0, "{json}");
    // The jam picture: the mesh, a shaded square per cell where NPCs crawled (every NPC
    // crawls in the first tick, waiting for its path), and its legend.
    assert!(jams.starts_with("<svg") && jams.ends_with("</svg>\n"));
    assert!(jams.matches(r#"<rect class="jam""#).count() > 10);
    assert!(jams.contains("crawling below 10% of speed, 5 s"));
    // The switches reach the world: with other rules it is another world.
    let (_, off, _) = run_with(&["--no-anticipation"], "off");
    assert_ne!(json["state_hash_end"], off["state_hash_end"]);
    let (_, routed, _) = run_with(&["--no-congestion-routing"], "unrouted");
    assert_eq!(routed["overlapping_pairs_max"], 0, "{routed}");
}

#[test]
fn simulate_a_navmesh_file() {
    let dir = scratch("navmesh");
    let file = dir.join("town.navmesh");
    let path = map_path("town.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let built = build(
        "town.json",
        &text,
        SourceKind::from_path(&path).unwrap(),
        &RefineParams::default(),
        &mut |_| {},
    )
    .unwrap();
    std::fs::write(&file, navmesh::encode(&built.mesh)).unwrap();
    let report = dir.join("R.json");
    let out = run(&[
        "simulate",
        "--map",
        s(&file),
        "--npcs",
        "20",
        "--seconds",
        "0.5",
        "--report",
        s(&report),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["ticks"], 10);
    assert_eq!(json["triangles"], built.mesh.triangle_count());
    assert!(
        json["map_origin"]
            .as_str()
            .unwrap()
            .starts_with("navmesh file")
    );
}

#[test]
fn same_seed_same_figures() {
    let dir = scratch("seed");
    let figures = |name: &str| {
        let report = dir.join(name);
        let out = run(&[
            "simulate",
            "--map",
            s(&map_path("movingai/arena.map")),
            "--npcs",
            "30",
            "--players",
            "2",
            "--seconds",
            "1",
            "--seed",
            "9",
            "--report",
            s(&report),
        ]);
        assert!(out.status.success());
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        // Only the world's figures: times and the load line differ from run to run.
        let keep = [
            "ticks",
            "max_overlap_worst",
            "max_overlap_end",
            "p99_overlap_end",
            "bodies_in_walls_max",
            "arrivals_total",
            "paths_served_total",
            "spawn_blocked",
        ];
        json.as_object_mut()
            .unwrap()
            .retain(|k, _| keep.contains(&k.as_str()));
        json
    };
    assert_eq!(figures("a.json"), figures("b.json"));
}

#[test]
fn bad_inputs_fail_with_one_error_line() {
    let dir = scratch("bad");
    let arena = map_path("arena.json");
    let missing = dir.join("missing.json");
    let out = run(&[
        "simulate",
        "--map",
        s(&missing),
        "--npcs",
        "5",
        "--seconds",
        "1",
    ]);
    assert_fails_with(&out, "missing.json");

    for seconds in ["0", "-1", "inf", "NaN"] {
        let out = run(&[
            "simulate",
            "--map",
            s(&arena),
            "--npcs",
            "5",
            "--seconds",
            seconds,
        ]);
        assert_fails_with(&out, "--seconds");
    }

    let out = run(&[
        "simulate",
        "--map",
        s(&arena),
        "--npcs",
        "2000000",
        "--seconds",
        "1",
    ]);
    assert_fails_with(&out, "--npcs");

    for per_body in ["-1", "NaN", "inf"] {
        let flag = format!("--path-budget-per-body={per_body}");
        let out = run(&[
            "simulate",
            "--map",
            s(&arena),
            "--npcs",
            "5",
            "--seconds",
            "1",
            &flag,
        ]);
        assert_fails_with(&out, "--path-budget-per-body");
    }

    let unknown = dir.join("arena.txt");
    std::fs::copy(&arena, &unknown).unwrap();
    let out = run(&[
        "simulate",
        "--map",
        s(&unknown),
        "--npcs",
        "5",
        "--seconds",
        "1",
    ]);
    assert_fails_with(&out, "unknown map format");

    let garbage = dir.join("garbage.navmesh");
    std::fs::write(&garbage, b"not a navmesh").unwrap();
    let out = run(&[
        "simulate",
        "--map",
        s(&garbage),
        "--npcs",
        "5",
        "--seconds",
        "1",
    ]);
    assert_fails_with(&out, "garbage.navmesh is not a valid navmesh file");

    let broken = dir.join("broken.json");
    std::fs::write(&broken, b"{ not json").unwrap();
    let out = run(&[
        "simulate",
        "--map",
        s(&broken),
        "--npcs",
        "5",
        "--seconds",
        "1",
    ]);
    assert_fails_with(&out, "broken.json");
    // The parser's message appears once: the chain adds context at each level and never
    // repeats its cause.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cause = stderr.rsplit(": ").next().unwrap_or_default().trim_end();
    assert!(!cause.is_empty(), "stderr: {stderr}");
    assert_eq!(stderr.matches(cause).count(), 1, "stderr: {stderr}");
    assert!(stderr.contains("broken.json: parse: "), "stderr: {stderr}");

    let out = run(&[
        "simulate",
        "--map",
        s(&arena),
        "--npcs",
        "5",
        "--seconds",
        "1",
        "--report",
        s(&dir.join("no/such/dir/R.json")),
    ]);
    assert_fails_with(&out, "cannot write");
}
