//! SVG pictures of a mesh: triangles filled by island, triangle edges thin, walls thick.
//!
//! The picture uses map coordinates with `y` downwards, so a grid map looks like its text
//! file. Triangles of one island share one `<path>` element to keep large maps small.

use std::fmt::Write as _;

use navmesh::{NavMesh, TriId};

/// Fill colours for islands, chosen to be told apart; island `i` uses entry `i % len`.
const PALETTE: [&str; 10] = [
    "#9ecae1", "#a1d99b", "#fdae6b", "#bcbddc", "#fc9272", "#c7e9c0", "#fdd0a2", "#9e9ac8",
    "#d9d9d9", "#fa9fb5",
];

/// Renders the mesh as a standalone SVG document about `width_px` pixels wide.
pub fn render_svg(mesh: &NavMesh, width_px: f64) -> String {
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
        fmt(b.min.x - margin),
        fmt(b.min.y - margin),
        fmt(view_w),
        fmt(view_h)
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
        fmt(b.min.x - margin),
        fmt(b.min.y - margin),
        fmt(view_w),
        fmt(view_h)
    );

    let mut by_island: Vec<String> = vec![String::new(); mesh.island_count() as usize];
    for t in 0..mesh.triangle_count() {
        let tri = TriId(t as u32);
        let [p, q, r] = mesh.triangle_points(tri);
        let d = &mut by_island[mesh.island(tri).index()];
        let _ = write!(
            d,
            "M{} {}L{} {}L{} {}Z",
            fmt(p.x),
            fmt(p.y),
            fmt(q.x),
            fmt(q.y),
            fmt(r.x),
            fmt(r.y)
        );
    }
    for (i, d) in by_island.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<path fill="{}" stroke="#ffffff" stroke-opacity="0.6" stroke-width="{}" stroke-linejoin="round" d="{d}"/>"##,
            PALETTE[i % PALETTE.len()],
            fmt(unit * 0.6)
        );
    }
    let mut walls = String::new();
    for w in mesh.walls() {
        let a = mesh.vertices()[w.from.index()];
        let c = mesh.vertices()[w.to.index()];
        let _ = write!(
            walls,
            "M{} {}L{} {}",
            fmt(a.x),
            fmt(a.y),
            fmt(c.x),
            fmt(c.y)
        );
    }
    let _ = writeln!(
        svg,
        r##"<path fill="none" stroke="#101010" stroke-width="{}" stroke-linecap="round" d="{walls}"/>"##,
        fmt(unit * 2.0)
    );
    svg.push_str("</svg>\n");
    svg
}

/// Short decimal text for coordinates: at most three decimals, no trailing zeros.
fn fmt(v: f64) -> String {
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
    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(fmt(1.0), "1");
        assert_eq!(fmt(1.25), "1.25");
        assert_eq!(fmt(-0.0001), "0");
        assert_eq!(fmt(2.0 / 3.0), "0.667");
    }
}
