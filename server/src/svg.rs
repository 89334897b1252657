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

/// The final frame of `world` on `mesh` (the mesh the world runs on).
pub(crate) fn render_frame(mesh: &NavMesh, world: &World) -> String {
    let picture = render_svg(mesh, WIDTH_PX);
    let mut svg = picture
        .strip_suffix("</svg>\n")
        .unwrap_or(&picture)
        .to_owned();
    // The same frame as the mesh picture: map units, a pixel is `unit` of them.
    let b = mesh.bounds();
    let size = b.size();
    let margin = (size.x.max(size.y) * 0.02).max(0.5);
    let view_w = size.x + 2.0 * margin;
    let unit = view_w / WIDTH_PX;
    let origin = (b.min.x - margin, b.min.y - margin);

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
