//! The final frame as SVG: the builder's mesh picture ([`render_svg`]) with every body as a
//! circle of its true radius, coloured by its motion (players in a colour of their own),
//! the remaining paths of a few NPCs as polylines, and a legend.
//!
//! Every body circle has `class="body …"` and nothing else does, so a picture can be
//! checked by counting them.

use navmesh_builder::render::svg_number;
use std::fmt::Write as _;

use navmesh::NavMesh;
use navmesh_builder::render::render_svg;
use sim::{EntityId, Kind, Motion, Vec2, World};

/// Picture width in pixels.
const WIDTH_PX: f64 = 1200.0;
/// How many NPCs have their remaining path drawn.
const SAMPLED_PATHS: usize = 5;
/// Path colours: dark, unlike the motion colours and the pastel island fills.
const PATH_COLOURS: [&str; SAMPLED_PATHS] = ["#000000", "#08306b", "#67001f", "#00441b", "#54278f"];
/// Players' fill.
const PLAYER_COLOUR: &str = "#0050c8";

/// Legend order of the NPC motions; players come after them.
const MOTIONS: [Motion; 5] = [
    Motion::Moving,
    Motion::Circling,
    Motion::Repulsed,
    Motion::WaitingForPath,
    Motion::Idle,
];

/// The index of a motion in [`MOTIONS`].
fn slot(motion: Motion) -> usize {
    match motion {
        Motion::Moving => 0,
        Motion::Circling => 1,
        Motion::Repulsed => 2,
        Motion::WaitingForPath => 3,
        Motion::Idle => 4,
    }
}

/// An NPC's class, fill and legend label by motion.
fn motion_style(motion: Motion) -> (&'static str, &'static str, &'static str) {
    match motion {
        Motion::Moving => ("moving", "#1a9641", "moving"),
        Motion::Circling => ("circling", "#e66101", "circling"),
        Motion::Repulsed => ("repulsed", "#d7191c", "repulsed"),
        Motion::WaitingForPath => ("waiting", "#c51b7d", "waiting for a path"),
        Motion::Idle => ("idle", "#606060", "idle"),
    }
}

/// The mesh picture, still open for more elements, with the size of a pixel in map units
/// and the map point at its top-left corner (the builder's picture has a 2% margin).
fn mesh_canvas(mesh: &NavMesh) -> (String, f64, (f64, f64)) {
    let picture = render_svg(mesh, WIDTH_PX);
    let svg = picture
        .strip_suffix("</svg>\n")
        .unwrap_or(&picture)
        .to_owned();
    let b = mesh.bounds();
    let size = b.size();
    let margin = (size.x.max(size.y) * 0.02).max(0.5);
    let unit = (size.x + 2.0 * margin) / WIDTH_PX;
    (svg, unit, (b.min.x - margin, b.min.y - margin))
}

/// The final frame of `world` on `mesh` (the mesh the world runs on).
pub(crate) fn render_frame(mesh: &NavMesh, world: &World) -> String {
    let (mut svg, unit, origin) = mesh_canvas(mesh);

    let mut counts = [0usize; MOTIONS.len() + 1];
    let mut with_paths: Vec<EntityId> = Vec::new();
    svg.push_str("<g id=\"bodies\" stroke=\"#ffffff\" stroke-opacity=\"0.7\"");
    let _ = writeln!(svg, " stroke-width=\"{}\">", svg_number(unit * 0.5));
    for sim::BodyView {
        id,
        kind,
        pos,
        radius_m: radius,
        motion,
    } in world.bodies()
    {
        let (class, fill) = match kind {
            Kind::Player => {
                counts[MOTIONS.len()] += 1;
                ("player", PLAYER_COLOUR)
            }
            Kind::Npc => {
                counts[slot(motion)] += 1;
                let (class, fill, _) = motion_style(motion);
                if world.path_of(id).len() >= 2 {
                    with_paths.push(id);
                }
                (class, fill)
            }
        };
        let _ = writeln!(
            svg,
            r#"<circle class="body {class}" cx="{}" cy="{}" r="{}" fill="{fill}"/>"#,
            svg_number(f64::from(pos.x)),
            svg_number(f64::from(pos.y)),
            svg_number(f64::from(radius))
        );
    }
    svg.push_str("</g>\n");

    // A few NPCs spread over the id range, each path from the body through its corners.
    let step = with_paths.len().div_ceil(SAMPLED_PATHS).max(1);
    for (k, id) in with_paths
        .iter()
        .step_by(step)
        .take(SAMPLED_PATHS)
        .enumerate()
    {
        let colour = PATH_COLOURS[k % PATH_COLOURS.len()];
        let points = world.path_of(*id);
        let _ = write!(
            svg,
            r#"<g><title>NPC {id}: {} corners left</title><polyline fill="none" stroke="{colour}" stroke-width="{}" stroke-linejoin="round" stroke-linecap="round" points=""#,
            points.len() - 1,
            svg_number(unit * 2.0)
        );
        for (i, p) in points.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let _ = write!(
                svg,
                "{sep}{},{}",
                svg_number(f64::from(p.x)),
                svg_number(f64::from(p.y))
            );
        }
        svg.push_str("\"/>");
        if let (Some(first), Some(last)) = (points.first(), points.last()) {
            ring(&mut svg, *first, unit * 5.0, colour, unit * 2.0);
            ring(&mut svg, *last, unit * 3.0, colour, unit * 2.0);
        }
        svg.push_str("</g>\n");
    }

    legend(&mut svg, origin, unit, &counts, world);
    svg.push_str("</svg>\n");
    svg
}

fn ring(svg: &mut String, at: Vec2, r: f64, colour: &str, width: f64) {
    let _ = write!(
        svg,
        r#"<circle cx="{}" cy="{}" r="{}" fill="none" stroke="{colour}" stroke-width="{}"/>"#,
        svg_number(f64::from(at.x)),
        svg_number(f64::from(at.y)),
        svg_number(r),
        svg_number(width)
    );
}

/// A box in the top-left corner: one swatch and count per body colour, and the path key.
fn legend(
    svg: &mut String,
    origin: (f64, f64),
    unit: f64,
    counts: &[usize; MOTIONS.len() + 1],
    world: &World,
) {
    let font = 12.0 * unit;
    let line = 16.0 * unit;
    let pad = 8.0 * unit;
    let mut rows: Vec<(&str, String)> = MOTIONS
        .iter()
        .map(|&m| {
            let (_, fill, label) = motion_style(m);
            (fill, format!("NPC {label}: {}", counts[slot(m)]))
        })
        .collect();
    rows.push((PLAYER_COLOUR, format!("player: {}", counts[MOTIONS.len()])));
    let (x0, y0) = (origin.0 + pad, origin.1 + pad);
    let height = line * (rows.len() as f64 + 2.0) + pad;
    let _ = writeln!(
        svg,
        r##"<g id="legend" font-family="sans-serif" font-size="{}"><rect x="{}" y="{}" width="{}" height="{}" fill="#ffffff" fill-opacity="0.85" stroke="#303030" stroke-width="{}"/>"##,
        svg_number(font),
        svg_number(x0),
        svg_number(y0),
        svg_number(200.0 * unit),
        svg_number(height),
        svg_number(unit)
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-weight="bold">tick {} ({} s)</text>"#,
        svg_number(x0 + pad),
        svg_number(y0 + line),
        world.tick().0,
        svg_number(world.tick().0 as f64 / crate::figures::ticks_per_second())
    );
    for (i, (fill, text)) in rows.iter().enumerate() {
        let y = y0 + line * (i as f64 + 2.0);
        let _ = writeln!(
            svg,
            r#"<rect x="{}" y="{}" width="{}" height="{}" rx="{}" fill="{fill}"/><text x="{}" y="{}">{text}</text>"#,
            svg_number(x0 + pad),
            svg_number(y - font * 0.8),
            svg_number(font * 0.8),
            svg_number(font * 0.8),
            svg_number(font * 0.4),
            svg_number(x0 + pad + font * 1.3),
            svg_number(y)
        );
    }
    let y = y0 + line * (rows.len() as f64 + 2.0);
    let _ = writeln!(
        svg,
        r#"<path d="M{} {}h{}" stroke="{}" stroke-width="{}"/><text x="{}" y="{}">remaining path (sample)</text></g>"#,
        svg_number(x0 + pad),
        svg_number(y - font * 0.4),
        svg_number(font * 0.8),
        PATH_COLOURS[0],
        svg_number(unit * 2.0),
        svg_number(x0 + pad + font * 1.3),
        svg_number(y)
    );
}

/// The jam picture's cell side, metres.
const JAM_CELL_M: f64 = 1.0;

/// Where NPCs crawled over a run: crawling NPC-ticks counted per square cell of
/// [`JAM_CELL_M`] over the mesh's bounds.
pub(crate) struct JamMap {
    origin: (f64, f64),
    cols: usize,
    rows: usize,
    ticks: Vec<u32>,
}

impl JamMap {
    /// An empty map over `mesh`'s bounds.
    pub(crate) fn new(mesh: &NavMesh) -> JamMap {
        let b = mesh.bounds();
        let size = b.size();
        let cols = ((size.x / JAM_CELL_M).ceil() as usize).clamp(1, 4096);
        let rows = ((size.y / JAM_CELL_M).ceil() as usize).clamp(1, 4096);
        JamMap {
            origin: (b.min.x, b.min.y),
            cols,
            rows,
            ticks: vec![0; cols * rows],
        }
    }

    /// Counts one tick of crawling at each of `positions`.
    pub(crate) fn add(&mut self, positions: impl Iterator<Item = Vec2>) {
        for p in positions {
            let cx = ((f64::from(p.x) - self.origin.0) / JAM_CELL_M).floor();
            let cy = ((f64::from(p.y) - self.origin.1) / JAM_CELL_M).floor();
            if cx >= 0.0 && cy >= 0.0 && (cx as usize) < self.cols && (cy as usize) < self.rows {
                let k = cy as usize * self.cols + cx as usize;
                self.ticks[k] = self.ticks[k].saturating_add(1);
            }
        }
    }
}

/// The jam picture: the mesh, and each cell where NPCs crawled shaded from yellow to dark
/// red by the NPC-seconds spent crawling there (a logarithmic scale up to the worst cell).
/// Every shaded cell is a `rect` of `class="jam"`, with its NPC-seconds as its title.
pub(crate) fn render_jams(mesh: &NavMesh, jams: &JamMap, ticks: u64) -> String {
    let (mut svg, unit, origin) = mesh_canvas(mesh);
    let per_sec = crate::figures::ticks_per_second();
    let worst = jams.ticks.iter().copied().max().unwrap_or(0);
    let top = (f64::from(worst.max(1)) / per_sec).ln_1p();
    let mut total = 0.0;
    svg.push_str("<g id=\"jams\">\n");
    for (k, &n) in jams.ticks.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let secs = f64::from(n) / per_sec;
        total += secs;
        let t = if top > 0.0 { secs.ln_1p() / top } else { 1.0 };
        // Yellow (255, 220, 0) to dark red (128, 0, 0).
        let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
        let (x, y) = (k % jams.cols, k / jams.cols);
        let _ = writeln!(
            svg,
            r##"<rect class="jam" x="{}" y="{}" width="{}" height="{}" fill="#{:02x}{:02x}{:02x}" fill-opacity="0.85"><title>{} NPC-s</title></rect>"##,
            svg_number(jams.origin.0 + x as f64 * JAM_CELL_M),
            svg_number(jams.origin.1 + y as f64 * JAM_CELL_M),
            svg_number(JAM_CELL_M),
            svg_number(JAM_CELL_M),
            lerp(255.0, 128.0),
            lerp(220.0, 0.0),
            0,
            svg_number((secs * 10.0).round() / 10.0)
        );
    }
    svg.push_str("</g>\n");
    let font = 12.0 * unit;
    let line = 16.0 * unit;
    let pad = 8.0 * unit;
    let (x0, y0) = (origin.0 + pad, origin.1 + pad);
    let _ = writeln!(
        svg,
        r##"<g id="legend" font-family="sans-serif" font-size="{}"><rect x="{}" y="{}" width="{}" height="{}" fill="#ffffff" fill-opacity="0.85" stroke="#303030" stroke-width="{}"/><text x="{}" y="{}" font-weight="bold">crawling below 10% of speed, {} s</text><text x="{}" y="{}">{} NPC-s in all; worst square metre {} NPC-s</text></g>"##,
        svg_number(font),
        svg_number(x0),
        svg_number(y0),
        svg_number(300.0 * unit),
        svg_number(line * 2.0 + pad * 1.5),
        svg_number(unit),
        svg_number(x0 + pad),
        svg_number(y0 + line),
        svg_number(ticks as f64 / per_sec),
        svg_number(x0 + pad),
        svg_number(y0 + line * 2.0),
        svg_number(total.round()),
        svg_number((f64::from(worst) / per_sec * 10.0).round() / 10.0)
    );
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use navmesh::{BuildInfo, Point, VertId};
    use sim::{Brain, Input, WorldConfig};

    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(svg_number(1.0), "1");
        assert_eq!(svg_number(0.4), "0.4");
        assert_eq!(svg_number(-0.0001), "0");
    }

    #[test]
    fn one_circle_per_body() {
        let v = vec![
            Point::new(0.0, 0.0),
            Point::new(20.0, 0.0),
            Point::new(20.0, 20.0),
            Point::new(0.0, 20.0),
        ];
        let t = |a, b, c| [VertId(a), VertId(b), VertId(c)];
        let mesh =
            Arc::new(NavMesh::new(BuildInfo::default(), v, vec![t(0, 1, 2), t(0, 2, 3)]).unwrap());
        let mut world = World::new(WorldConfig::default(), Arc::clone(&mesh), 1);
        let spawn = |kind, x: f32, brain| Input::Spawn {
            kind,
            pos: Vec2::new(x, 5.0),
            radius_m: 0.4,
            speed_mps: 1.5,
            brain,
        };
        world.step(&[
            spawn(Kind::Npc, 2.0, Brain::Wander),
            spawn(Kind::Npc, 6.0, Brain::Wander),
            spawn(Kind::Player, 10.0, Brain::Idle),
        ]);
        for _ in 0..5 {
            world.step(&[]);
        }
        let svg = render_frame(&mesh, &world);
        assert_eq!(svg.matches(r#"class="body "#).count(), 3);
        assert_eq!(svg.matches(r#"class="body player""#).count(), 1);
        assert!(svg.contains("<polyline"));
        assert!(svg.contains("player: 1"));
        assert!(svg.ends_with("</g>\n</svg>\n"));
    }
}
