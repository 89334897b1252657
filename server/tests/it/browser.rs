//! The viewer page in a real browser: Debian's headless Chromium, driven over WebDriver,
//! opens `/`, joins over WebTransport (HTTP/3 on the server's QUIC port, the generated
//! certificate accepted by its hash), shows entities, and walks its character where a real
//! mouse click lands; `/?spectate` watches without a character and pans by dragging.
//! Screenshots are kept in `target/artifacts/viewer.png` and `spectator.png`.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use server::config::Config;
use server::run::start;

use crate::webdriver::Browser;

fn config(npcs: u32) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        npcs,
        spawn_point: Some([68.5, 164.5]),
        shutdown_grace_secs: 0.5,
        ..Config::default()
    }
}

fn artifacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `window.mmoStats` once the page is connected, sees entities and has its character.
const STATS: &str = "return window.mmoStats";

fn playing(stats: &Value) -> bool {
    stats["connected"] == true && stats["entities"].as_u64() > Some(1) && stats["me"].is_object()
}

/// A point to walk to: 1 m short of an NPC 6 to 20 m away (so on walkable ground in
/// practice), with no body within 1 m of it (so the click is not taken as selecting one),
/// and where it is on the canvas.
const PICK_TARGET: &str = r#"
const s = window.mmoStats;
const canvas = document.getElementById('world');
const ppm = Math.min(canvas.width, canvas.height) / 60;
const bodies = window.mmoBodies();
for (const b of bodies) {
  const d = Math.hypot(b.x - s.me.x, b.y - s.me.y);
  if (b.kind !== 'npc' || d < 6 || d > 20) continue;
  const x = b.x - (b.x - s.me.x) / d, y = b.y - (b.y - s.me.y) / d;
  if (bodies.some((o) => Math.hypot(o.x - x, o.y - y) < 1)) continue;
  return { x, y, sx: Math.round((x - s.me.x) * ppm + canvas.width / 2),
    sy: Math.round((y - s.me.y) * ppm + canvas.height / 2) };
}
return null;
"#;

/// A walking NPC near the middle of the canvas, where it is on screen.
const SELECT_NPC: &str = r#"
const canvas = document.getElementById('world');
const npc = window.mmoBodies().find((b) => {
  if (b.kind !== 'npc' || b.motion !== 'moving') return false;
  const [sx, sy] = window.mmoToScreen(b.x, b.y);
  return sx > 50 && sy > 50 && sx < canvas.width - 50 && sy < canvas.height - 50;
});
if (!npc) return null;
const [sx, sy] = window.mmoToScreen(npc.x, npc.y);
return { id: npc.id, sx: Math.round(sx), sy: Math.round(sy) };
"#;

/// The mean position of the bodies the page shows.
const CENTROID: &str = r#"
const b = window.mmoBodies();
if (b.length === 0) return { n: 0 };
return { n: b.length, x: b.reduce((s, e) => s + e.x, 0) / b.length,
  y: b.reduce((s, e) => s + e.y, 0) / b.length };
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_plays_over_webtransport_in_chromium() {
    let server = start(config(400)).await.unwrap();
    let page = format!("http://{}/?name=browser", server.metrics_addr);
    let spectate = format!("http://{}/?spectate&name=watcher", server.metrics_addr);
    tokio::task::spawn_blocking(move || {
        let browser = Browser::start(1000, 800);
        browser.goto(&page);
        let stats = browser.wait_for(STATS, Duration::from_secs(30), playing);
        let me = &stats["me"];
        let target = browser.wait_for(PICK_TARGET, Duration::from_secs(10), Value::is_object);
        let (tx, ty) = (target["x"].as_f64().unwrap(), target["y"].as_f64().unwrap());
        let start = (me["x"].as_f64().unwrap() - tx).hypot(me["y"].as_f64().unwrap() - ty);
        browser.click_at(
            target["sx"].as_i64().unwrap(),
            target["sy"].as_i64().unwrap(),
        );
        // The character walks there: in later snapshots it is at most half as far.
        let arrived = browser.wait_for(STATS, Duration::from_secs(25), |stats| {
            let (x, y) = (stats["me"]["x"].as_f64(), stats["me"]["y"].as_f64());
            matches!((x, y), (Some(x), Some(y)) if (x - tx).hypot(y - ty) <= (start / 2.0).max(1.0))
        });
        assert!(arrived["tick"].as_u64() > stats["tick"].as_u64());
        let png = browser.screenshot();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG screenshot");
        std::fs::write(artifacts().join("viewer.png"), png).unwrap();

        // A spectator has no character and sees the NPCs of its region; dragging the map
        // moves the region, and the server sends what is there.
        browser.goto(&spectate);
        let watching = browser.wait_for(STATS, Duration::from_secs(30), |stats| {
            stats["connected"] == true
                && stats["spectating"] == true
                && stats["me"].is_null()
                && stats["entities"].as_u64() >= Some(5)
        });
        let npcs = browser.eval("return window.mmoBodies().filter((b) => b.kind === 'npc').length");
        assert!(npcs.as_u64() >= Some(5), "{watching}");
        let before = browser.eval(CENTROID);
        // Dragging the map to the right moves the view centre to the left (smaller x).
        browser.drag(500, 330, 250, 0);
        let moved = browser.wait_for(CENTROID, Duration::from_secs(15), |now| {
            let (Some(a), Some(b)) = (before["x"].as_f64(), now["x"].as_f64()) else {
                return false;
            };
            a - b > 8.0
        });
        assert!(moved["n"].as_u64() > Some(0));
        // Clicking an NPC selects it: the page asks the server for its path and draws it.
        // (It walks, so a click may land beside it: then the page recentres, and the test
        // tries again.)
        let selected = browser.wait_for(SELECT_NPC, Duration::from_secs(20), |npc| {
            let (Some(x), Some(y)) = (npc["sx"].as_i64(), npc["sy"].as_i64()) else {
                return false;
            };
            browser.click_at(x, y);
            std::thread::sleep(Duration::from_millis(100));
            browser.eval("return window.mmoStats.selected") == npc["id"]
        });
        let path = browser.wait_for(STATS, Duration::from_secs(15), |stats| {
            stats["selectedPath"].as_u64() >= Some(2)
        });
        assert!(path["selectedPath"].as_u64() >= Some(2), "{selected}");
        std::fs::write(artifacts().join("spectator.png"), browser.screenshot()).unwrap();
    })
    .await
    .unwrap();
    server.shutdown().await.unwrap();
}

/// The viewer's drawing rule (`wire.shown`, as `protocol::Shown`) in Chromium, over the
/// snapshots of `protocol::view::shown`'s unit test: against baselines two chains apart,
/// the view steps entity 1 back to an older state and the drawing does not; leaves, and
/// entities a chain has not carried yet, are drawn as that test says.
const DRAWN_AS_SHOWN: &str = r#"
return import('/viewer/wire.js').then((wire) => {
  const id = (index) => ({ index, generation: 0 });
  const ent = (index, x) => ({ id: id(index), kind: 'npc', radiusCm: 40, x, y: 0, motion: 'moving' });
  const mv = (index, dx) => ({ id: id(index), dx, dy: 0, motion: null });
  const views = new Map();
  let shown = new Map(), gone = new Map();
  const list = (m) => [...m.values()].map((e) => [e.id.index, e.x]).sort((a, b) => a[0] - b[0]);
  const steps = [];
  const receive = (tick, baselineTick, lists) => {
    const snap = { tick, baselineTick, entered: [], changed: [], left: [], ...lists };
    const base = baselineTick === null ? new Map() : views.get(baselineTick);
    const view = wire.apply(base, snap);
    views.set(tick, view);
    [shown, gone] = wire.shown(shown, gone, view, snap);
    steps.push({ tick, view: list(view), drawn: list(shown) });
  };
  receive(10, null, { entered: [ent(1, 0), ent(2, 0)] });
  receive(11, 10, { changed: [mv(1, 100)] });
  receive(12, 10, { changed: [mv(2, 200)] });
  receive(13, 11, { left: [id(2)] });
  receive(14, 12, {});
  receive(15, 13, { entered: [ent(3, 500)] });
  receive(16, 14, { left: [id(2)] });
  receive(17, 16, {});
  receive(18, 17, { changed: [mv(1, 150)] });
  return steps;
});
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_draws_the_newest_news_not_the_newest_view() {
    let server = start(config(20)).await.unwrap();
    let page = format!("http://{}/?spectate&name=rule", server.metrics_addr);
    let steps = tokio::task::spawn_blocking(move || {
        let browser = Browser::start(400, 300);
        browser.goto(&page);
        browser.eval(DRAWN_AS_SHOWN)
    })
    .await
    .unwrap();
    server.shutdown().await.unwrap();
    // Each step: the view's and the drawing's (id, x) pairs.
    type Entities = Vec<(i64, i64)>;
    let pairs = |v: &Value| -> Entities {
        v.as_array()
            .unwrap_or_else(|| panic!("not a list: {v}"))
            .iter()
            .map(|p| (p[0].as_i64().unwrap(), p[1].as_i64().unwrap()))
            .collect()
    };
    let got: Vec<(Entities, Entities)> = steps
        .as_array()
        .unwrap_or_else(|| panic!("the script failed: {steps}"))
        .iter()
        .map(|step| (pairs(&step["view"]), pairs(&step["drawn"])))
        .collect();
    let want = vec![
        (vec![(1, 0), (2, 0)], vec![(1, 0), (2, 0)]),
        (vec![(1, 100), (2, 0)], vec![(1, 100), (2, 0)]),
        (vec![(1, 0), (2, 200)], vec![(1, 100), (2, 200)]),
        (vec![(1, 100)], vec![(1, 100)]),
        (vec![(1, 0), (2, 200)], vec![(1, 100)]),
        (vec![(1, 100), (3, 500)], vec![(1, 100), (3, 500)]),
        (vec![(1, 0)], vec![(1, 100), (3, 500)]),
        (vec![(1, 0)], vec![(1, 100)]),
        (vec![(1, 150)], vec![(1, 150)]),
    ];
    assert_eq!(got, want);
}
