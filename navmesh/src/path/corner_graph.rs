//! Point-agent queries answered through the corner graph ([`crate::corners`]), and the
//! width check that lets a radius query use the same path ([`crate::corridor`]).

use super::search::{NO_KEY, NO_ROOT, NO_VERTEX, Root};
use super::{NavMeshQuery, Search};
use crate::geom::Point;
use crate::mesh::NavMesh;

impl NavMeshQuery {
    /// A query answered through the corner graph (see [`crate::corners`]): the shortest
    /// point path is straight when the start sees the goal, otherwise through the best pair
    /// of a corner seen from the start and one seen from the goal, joined through the
    /// distance table. With a radius, that path is used only if the search's width rule
    /// admits it ([`crate::corridor`]); it is then also the search's answer. Leaves the
    /// search `Found` and returns true, or returns false (no roots kept) when the island has
    /// no table or the path is not admissible.
    pub(super) fn corner_query(
        &mut self,
        mesh: &NavMesh,
        start: Point,
        goal: Point,
        radius: f64,
    ) -> bool {
        let corners = mesh.corners();
        let island = mesh.island(self.start_tris[0]).0;
        if !corners.has_table(island) {
            return false;
        }
        let found = |root| Search::Found { goal, radius, root };
        let start_root = Root {
            point: start,
            vertex: NO_VERTEX,
            key: NO_KEY,
            parent: NO_ROOT,
            alt: 0.0,
        };
        let same_triangle = self.start_tris.iter().any(|t| self.goal_tris.contains(t));
        let visible = same_triangle
            || self.sweep.run(
                mesh,
                corners,
                start,
                &self.start_tris,
                Some((goal, &self.goal_tris)),
                &mut self.seen_start,
            );
        self.stats.expanded += self.sweep.expanded;
        if visible {
            self.roots.push(start_root);
            if !self.admits(mesh, goal, radius) {
                return false;
            }
            self.state = found(0);
            return true;
        }
        self.sweep.run(
            mesh,
            corners,
            goal,
            &self.goal_tris,
            None,
            &mut self.seen_goal,
        );
        self.stats.expanded += self.sweep.expanded;
        // The best pair. A pair can only win if its straight-line bound beats the best so
        // far; the table is read only then.
        let mut best = f64::INFINITY;
        let mut pair = None;
        for &(a, to_a) in &self.seen_start {
            let pa = corners.point(a);
            if to_a + pa.distance(goal) >= best {
                continue;
            }
            let row = corners.row(a);
            for &(b, to_b) in &self.seen_goal {
                let d = to_a + row[corners.local(b)] + to_b;
                if d < best {
                    best = d;
                    pair = Some((a, b));
                }
            }
        }
        let Some((a, b)) = pair else {
            return false;
        };
        self.roots.push(start_root);
        let mut at = a;
        let mut steps = 0;
        loop {
            self.roots.push(Root {
                point: corners.point(at),
                vertex: NO_VERTEX,
                key: NO_KEY,
                parent: self.roots.len() as u32 - 1,
                alt: 0.0,
            });
            if at == b {
                break;
            }
            steps += 1;
            match corners.next_hop(at, b) {
                Some(next) if steps <= corners.count() => at = next,
                _ => {
                    // The table and the edges disagree (cannot happen on a planar mesh).
                    self.roots.clear();
                    return false;
                }
            }
        }
        if !self.admits(mesh, goal, radius) {
            return false;
        }
        self.state = found(self.roots.len() as u32 - 1);
        true
    }

    /// Whether the point path in `roots` (then the goal) is admissible for `radius` under
    /// the search's width rule; if not, the roots are cleared for the search. Always true
    /// for a point agent.
    fn admits(&mut self, mesh: &NavMesh, goal: Point, radius: f64) -> bool {
        if radius == 0.0 {
            self.stats.corner_graph = true;
            return true;
        }
        self.point_path.clear();
        self.point_path
            .extend(self.roots.iter().map(|root| root.point));
        self.point_path.push(goal);
        let admitted = self
            .corridor
            .admits(mesh, &self.point_path, &self.start_tris, radius);
        if admitted {
            self.stats.corner_graph = true;
        } else {
            self.roots.clear();
        }
        admitted
    }
}
