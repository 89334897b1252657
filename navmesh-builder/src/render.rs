//! SVG pictures of a mesh: triangles filled by island, triangle edges thin, walls thick.
//!
//! The picture uses map coordinates with `y` downwards, so a grid map looks like its text
//! file. Triangles of one island share one `<path>` element to keep large maps small.
//!
//! [`render_svg_with_paths`] draws [`PathOverlay`]s on top: each path a polyline in a
//! saturated colour of its own, a filled disc at the start and a ring at the goal, and for
//! an agent radius `r > 0` a translucent band `2r` wide with round joins and caps along the
//! path, which is exactly the area the agent's disc sweeps.

use std::fmt::Write as _;

use navmesh::{NavMesh, Point, TriId};

/// Fill colours for islands, chosen to be told apart; island `i` uses entry `i % len`.
const PALETTE: [&str; 10] = [
    "#9ecae1", "#a1d99b", "#fdae6b", "#bcbddc", "#fc9272", "#c7e9c0", "#fdd0a2", "#9e9ac8",
    "#d9d9d9", "#fa9fb5",
];

/// Path colours: saturated, unlike the pastel island fills; path `i` uses entry `i % len`.
const PATH_PALETTE: [&str; 6] = [
    "#d7191c", "#0050c8", "#8e0096", "#e66101", "#007a33", "#c51b7d",
];

/// A path query to draw over the mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathOverlay<'a> {
    /// Where the query starts.
    pub start: Point,
    /// Where the query ends.
    pub goal: Point,
    /// The path's corners from start to goal, or `None` when no path was found: then only
    /// the markers and a thin dashed line from start to goal are drawn.
    pub points: Option<&'a [Point]>,
    /// Agent radius; above 0 the area the agent sweeps along the path is shaded.
    pub radius: f64,
}

/// Renders the mesh as a standalone SVG document about `width_px` pixels wide.
pub fn render_svg(mesh: &NavMesh, width_px: f64) -> String {
    render_svg_with_paths(mesh, width_px, &[])
}

/// Like [`render_svg`], with `paths` drawn over the mesh in order (later ones on top).
/// With no paths the document is exactly the one [`render_svg`] returns.
pub fn render_svg_with_paths(mesh: &NavMesh, width_px: f64, paths: &[PathOverlay<'_>]) -> String {
    let b = mesh.bounds();
    let size = b.size();
    let margin = (size.x.max(size.y) * 0.02).max(0.5);
    let view_w = size.x + 2.0 * margin;
    let view_h = size.y + 2.0 * margin;
    let height_px = width_px * view_h / view_w;
    // Stroke widths are in map units: scale them so they look the same at any map size.
    let unit = view_w / width_px;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width_px:.0}" height="{height_px:.0}" viewBox="{} {} {} {}">"#,
        svg_number(b.min.x - margin),
        svg_number(b.min.y - margin),
        svg_number(view_w),
        svg_number(view_h)
    );
    let _ = writeln!(
        svg,
        r#"<title>{} — {} triangles, {} islands</title>"#,
        escape(&mesh.info().source_name),
        mesh.triangle_count(),
        mesh.island_count()
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="#404040"/>"##,
        svg_number(b.min.x - margin),
        svg_number(b.min.y - margin),
        svg_number(view_w),
        svg_number(view_h)
    );

    let mut by_island: Vec<String> = vec![String::new(); mesh.island_count() as usize];
    for t in 0..mesh.triangle_count() {
        let tri = TriId(t as u32);
        let [p, q, r] = mesh.triangle_points(tri);
        let d = &mut by_island[mesh.island(tri).index()];
        let _ = write!(
            d,
            "M{} {}L{} {}L{} {}Z",
            svg_number(p.x),
            svg_number(p.y),
            svg_number(q.x),
            svg_number(q.y),
            svg_number(r.x),
            svg_number(r.y)
        );
    }
    for (i, d) in by_island.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<path fill="{}" stroke="#ffffff" stroke-opacity="0.6" stroke-width="{}" stroke-linejoin="round" d="{d}"/>"##,
            PALETTE[i % PALETTE.len()],
            svg_number(unit * 0.6)
        );
    }
    let mut walls = String::new();
    for w in mesh.walls() {
        let a = mesh.vertices()[w.from.index()];
        let c = mesh.vertices()[w.to.index()];
        let _ = write!(
            walls,
            "M{} {}L{} {}",
            svg_number(a.x),
            svg_number(a.y),
            svg_number(c.x),
            svg_number(c.y)
        );
    }
    let _ = writeln!(
        svg,
        r##"<path fill="none" stroke="#101010" stroke-width="{}" stroke-linecap="round" d="{walls}"/>"##,
        svg_number(unit * 2.0)
    );
    for (i, path) in paths.iter().enumerate() {
        draw_path(&mut svg, i, path, unit);
    }
    svg.push_str("</svg>\n");
    svg
}

/// Appends one path overlay as a `<g>` group; `unit` is the size of a pixel in map units.
fn draw_path(svg: &mut String, index: usize, path: &PathOverlay<'_>, unit: f64) {
    let colour = PATH_PALETTE[index % PATH_PALETTE.len()];
    let (s, g) = (path.start, path.goal);
    let summary = match path.points {
        Some(points) => format!(
            "{} corners, length {}",
            points.len(),
            svg_number(polyline_length(points))
        ),
        None => "no path".to_owned(),
    };
    let _ = writeln!(
        svg,
        "<g><title>path {}: ({}, {}) to ({}, {}), radius {}: {summary}</title>",
        index + 1,
        svg_number(s.x),
        svg_number(s.y),
        svg_number(g.x),
        svg_number(g.y),
        svg_number(path.radius)
    );
    match path.points {
        Some(points) if !points.is_empty() => {
            let mut d = String::new();
            for (k, p) in points.iter().enumerate() {
                let _ = write!(
                    d,
                    "{}{} {}",
                    if k == 0 { 'M' } else { 'L' },
                    svg_number(p.x),
                    svg_number(p.y)
                );
            }
            if points.len() == 1 {
                // A zero-length path: a degenerate segment, so the round caps still show.
                let _ = write!(
                    d,
                    "L{} {}",
                    svg_number(points[0].x),
                    svg_number(points[0].y)
                );
            }
            if path.radius > 0.0 {
                let _ = writeln!(
                    svg,
                    r#"<path fill="none" stroke="{colour}" stroke-opacity="0.25" stroke-width="{}" stroke-linecap="round" stroke-linejoin="round" d="{d}"/>"#,
                    svg_number(2.0 * path.radius)
                );
            }
            let _ = writeln!(
                svg,
                r#"<path fill="none" stroke="{colour}" stroke-width="{}" stroke-linecap="round" stroke-linejoin="round" d="{d}"/>"#,
                svg_number(unit * 2.5)
            );
            for p in &points[1..points.len() - 1] {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{}" cy="{}" r="{}" fill="{colour}"/>"#,
                    svg_number(p.x),
                    svg_number(p.y),
                    svg_number(unit * 2.5)
                );
            }
        }
        _ => {
            let _ = writeln!(
                svg,
                r#"<path fill="none" stroke="{colour}" stroke-width="{}" stroke-dasharray="{} {}" d="M{} {}L{} {}"/>"#,
                svg_number(unit * 1.5),
                svg_number(unit * 6.0),
                svg_number(unit * 4.0),
                svg_number(s.x),
                svg_number(s.y),
                svg_number(g.x),
                svg_number(g.y)
            );
        }
    }
    // Start: a filled disc; goal: a ring. Both outlined in white to stand out on any fill.
    let _ = writeln!(
        svg,
        r##"<circle cx="{}" cy="{}" r="{}" fill="{colour}" stroke="#ffffff" stroke-width="{}"/>"##,
        svg_number(s.x),
        svg_number(s.y),
        svg_number(unit * 6.0),
        svg_number(unit * 1.5)
    );
    let _ = writeln!(
        svg,
        r##"<circle cx="{}" cy="{}" r="{}" fill="#ffffff" stroke="{colour}" stroke-width="{}"/>"##,
        svg_number(g.x),
        svg_number(g.y),
        svg_number(unit * 5.0),
        svg_number(unit * 3.0)
    );
    svg.push_str("</g>\n");
}

/// Sum of the segment lengths of a polyline.
fn polyline_length(points: &[Point]) -> f64 {
    points
        .windows(2)
        .map(|w| (w[1].x - w[0].x).hypot(w[1].y - w[0].y))
        .sum()
}

/// Short decimal text for SVG coordinates: at most three decimals, no trailing zeros, no
/// negative zero. Shared by every SVG the project writes.
pub fn svg_number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use navmesh::VertId;

    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(svg_number(1.0), "1");
        assert_eq!(svg_number(1.25), "1.25");
        assert_eq!(svg_number(-0.0001), "0");
        assert_eq!(svg_number(2.0 / 3.0), "0.667");
    }

    fn square() -> NavMesh {
        let v = [
            Point::new(0.0, 0.0),
            Point::new(10.0, 0.0),
            Point::new(10.0, 10.0),
            Point::new(0.0, 10.0),
        ];
        let t = |a, b, c| [VertId(a), VertId(b), VertId(c)];
        NavMesh::new(
            navmesh::BuildInfo::default(),
            v.to_vec(),
            vec![t(0, 1, 2), t(0, 2, 3)],
        )
        .unwrap()
    }

    #[test]
    fn no_paths_is_the_plain_picture() {
        let mesh = square();
        assert_eq!(
            render_svg_with_paths(&mesh, 400.0, &[]),
            render_svg(&mesh, 400.0)
        );
    }

    #[test]
    fn paths_are_drawn_over_the_mesh() {
        let mesh = square();
        let points = [
            Point::new(1.0, 1.0),
            Point::new(5.0, 2.0),
            Point::new(9.0, 9.0),
        ];
        let overlays = [
            PathOverlay {
                start: points[0],
                goal: points[2],
                points: Some(&points),
                radius: 0.5,
            },
            PathOverlay {
                start: Point::new(2.0, 8.0),
                goal: Point::new(20.0, 20.0),
                points: None,
                radius: 0.0,
            },
        ];
        let svg = render_svg_with_paths(&mesh, 400.0, &overlays);
        let plain = render_svg(&mesh, 400.0);
        // The mesh picture is unchanged underneath; the paths follow it.
        let body = plain.strip_suffix("</svg>\n").unwrap();
        assert!(svg.starts_with(body));
        assert!(svg.ends_with("</g>\n</svg>\n"));
        assert_eq!(svg.matches("<g>").count(), 2);
        // Path 1: polyline, swept band 2r wide, corner dot, markers.
        assert!(svg.contains(r#"d="M1 1L5 2L9 9""#));
        assert!(svg.contains(r#"stroke-opacity="0.25" stroke-width="1""#));
        assert!(svg.contains(r#"<circle cx="5" cy="2""#));
        assert!(svg.contains(PATH_PALETTE[0]));
        // Path 2: no path, so a dashed line between the markers in the second colour.
        assert!(svg.contains("stroke-dasharray"));
        assert!(svg.contains(r#"d="M2 8L20 20""#));
        assert!(svg.contains(PATH_PALETTE[1]));
        assert!(svg.contains("path 2: (2, 8) to (20, 20), radius 0: no path"));
    }
}
