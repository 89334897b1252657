//! Cul-de-sacs: parts of the mesh that hang off the rest by a single triangle edge.
//!
//! In the graph of triangles (one node per triangle, one link per shared edge), a *bridge*
//! is a link whose removal splits its island in two. A shortest path never crosses a bridge
//! into the side that does not hold its goal: it would have to come back out through the
//! same edge, and the straight run along that edge is never longer than the excursion. So
//! the search skips every such side whole (dead-end rooms, corridors leading nowhere),
//! however the heuristic rates them. Grid maps are full of them.
//!
//! Contracting each two-edge-connected component (the parts with no bridge inside) to a
//! node turns an island into a tree whose links are the bridges. Numbering the tree's nodes
//! in depth-first order gives each subtree a contiguous range, so "is the goal on the far
//! side of this bridge" is two comparisons.

use crate::mesh::{NavMesh, TriId};

const NONE: u32 = u32::MAX;

/// The bridge tree of a mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Bridges {
    /// Per triangle: its component's depth-first number in the bridge tree.
    order: Vec<u32>,
    /// Per component (by depth-first number): one past the last number in its subtree.
    end: Vec<u32>,
    /// Per triangle edge (`tri * 3 + edge`): for a bridge, the depth-first number of the
    /// component on its child side in the tree; `NONE` otherwise.
    child: Vec<u32>,
}

impl Bridges {
    /// Finds the bridges and builds the tree, in time linear in the triangle count.
    pub(crate) fn compute(mesh: &NavMesh) -> Bridges {
        let n = mesh.triangle_count();
        let neighbours = mesh.neighbours();
        let is_bridge = find_bridges(neighbours);

        // Components: flood fill without crossing bridges.
        let mut comp = vec![NONE; n];
        let mut comp_count = 0u32;
        let mut stack = Vec::new();
        for t in 0..n {
            if comp[t] != NONE {
                continue;
            }
            comp[t] = comp_count;
            stack.push(t);
            while let Some(u) = stack.pop() {
                for (e, v) in neighbours[u].iter().enumerate() {
                    if let Some(v) = v
                        && !is_bridge[u * 3 + e]
                        && comp[v.index()] == NONE
                    {
                        comp[v.index()] = comp_count;
                        stack.push(v.index());
                    }
                }
            }
            comp_count += 1;
        }

        // The tree: components linked by bridges, walked depth-first from the first
        // component of each island.
        let c = comp_count as usize;
        let mut links: Vec<Vec<u32>> = vec![Vec::new(); c];
        for u in 0..n {
            for (e, v) in neighbours[u].iter().enumerate() {
                if let Some(v) = v
                    && is_bridge[u * 3 + e]
                {
                    links[comp[u] as usize].push(comp[v.index()]);
                }
            }
        }
        let mut number = vec![NONE; c];
        let mut end = vec![0u32; c];
        let mut next = 0u32;
        // (component, index of the next link to follow)
        let mut walk: Vec<(u32, usize)> = Vec::new();
        for root in 0..c {
            if number[root] != NONE {
                continue;
            }
            number[root] = next;
            next += 1;
            walk.push((root as u32, 0));
            while let Some(&mut (node, ref mut k)) = walk.last_mut() {
                if let Some(&child) = links[node as usize].get(*k) {
                    *k += 1;
                    if number[child as usize] == NONE {
                        number[child as usize] = next;
                        next += 1;
                        walk.push((child, 0));
                    }
                } else {
                    end[number[node as usize] as usize] = next;
                    walk.pop();
                }
            }
        }
        let order: Vec<u32> = comp.iter().map(|&k| number[k as usize]).collect();
        let mut child = vec![NONE; n * 3];
        for u in 0..n {
            for (e, v) in neighbours[u].iter().enumerate() {
                if let Some(v) = v
                    && is_bridge[u * 3 + e]
                {
                    // The child side is the one numbered later (a tree link joins a node
                    // and its parent, and parents are numbered first).
                    child[u * 3 + e] = order[u].max(order[v.index()]);
                }
            }
        }
        Bridges { order, end, child }
    }

    /// Whether crossing edge `edge` of `tri` leads into a part of the mesh that holds none
    /// of `goal_tris`, so a shortest path to them never crosses it.
    pub(crate) fn leads_away(&self, tri: TriId, edge: usize, goal_tris: &[TriId]) -> bool {
        let child = self.child[tri.index() * 3 + edge];
        if child == NONE {
            return false;
        }
        let end = self.end[child as usize];
        let in_subtree = |t: &TriId| (child..end).contains(&self.order[t.index()]);
        if (child..end).contains(&self.order[tri.index()]) {
            // Leaving the subtree toward the rest of the island.
            goal_tris.iter().all(in_subtree)
        } else {
            !goal_tris.iter().any(in_subtree)
        }
    }
}

/// Marks every bridge of the triangle graph, both directions (`tri * 3 + edge`): Tarjan's
/// low-link test, iteratively so that long corridors cannot overflow the stack.
fn find_bridges(neighbours: &[[Option<TriId>; 3]]) -> Vec<bool> {
    let n = neighbours.len();
    let mut is_bridge = vec![false; n * 3];
    let mut disc = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut time = 0u32;
    // (triangle, edge it was entered by or 3 for a root, next edge to try)
    let mut stack: Vec<(usize, usize, usize)> = Vec::new();
    for root in 0..n {
        if disc[root] != NONE {
            continue;
        }
        disc[root] = time;
        low[root] = time;
        time += 1;
        stack.push((root, 3, 0));
        while let Some(top) = stack.last_mut() {
            let (u, parent_edge, e) = *top;
            if e < 3 {
                top.2 += 1;
                if e == parent_edge {
                    continue;
                }
                let Some(v) = neighbours[u][e] else { continue };
                let v = v.index();
                if disc[v] == NONE {
                    disc[v] = time;
                    low[v] = time;
                    time += 1;
                    let back = neighbours[v]
                        .iter()
                        .position(|w| *w == Some(TriId(u as u32)))
                        .unwrap_or(3);
                    stack.push((v, back, 0));
                } else {
                    low[u] = low[u].min(disc[v]);
                }
            } else {
                stack.pop();
                if let Some(&(p, _, pe)) = stack.last() {
                    low[p] = low[p].min(low[u]);
                    if low[u] > disc[p] {
                        // The edge p took to reach u was its edge `pe - 1`.
                        let e_p = pe - 1;
                        is_bridge[p * 3 + e_p] = true;
                        if parent_edge < 3 {
                            is_bridge[u * 3 + parent_edge] = true;
                        }
                    }
                }
            }
        }
    }
    is_bridge
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::geom::Point;
    use crate::mesh::{BuildInfo, VertId};

    /// A mesh of unit grid cells, two triangles each, and the triangles of each cell.
    fn cells(list: &[(i32, i32)]) -> (NavMesh, HashMap<(i32, i32), [TriId; 2]>) {
        let mut index = HashMap::new();
        let mut vertices = Vec::new();
        let mut vertex = |x: i32, y: i32| {
            *index.entry((x, y)).or_insert_with(|| {
                vertices.push(Point::new(f64::from(x), f64::from(y)));
                VertId(vertices.len() as u32 - 1)
            })
        };
        let mut triangles = Vec::new();
        let mut of_cell = HashMap::new();
        for &(x, y) in list {
            let (a, b, c, d) = (
                vertex(x, y),
                vertex(x + 1, y),
                vertex(x + 1, y + 1),
                vertex(x, y + 1),
            );
            let t = triangles.len() as u32;
            triangles.push([a, b, c]);
            triangles.push([a, c, d]);
            of_cell.insert((x, y), [TriId(t), TriId(t + 1)]);
        }
        let mesh = NavMesh::new(BuildInfo::default(), vertices, triangles).unwrap();
        (mesh, of_cell)
    }

    /// The edge of `from` shared with `to`.
    fn edge(mesh: &NavMesh, from: TriId, to: TriId) -> usize {
        mesh.neighbours()[from.index()]
            .iter()
            .position(|n| *n == Some(to))
            .unwrap()
    }

    #[test]
    fn a_ring_has_no_bridge_but_its_dead_end_triangles() {
        // Eight cells around (1, 1). Where a corner cell's diagonal cuts off its outer
        // corner, that triangle touches only its cell's other one, so the one link to it
        // is a bridge. No link of the ring itself is.
        let ring: Vec<(i32, i32)> = (0..3)
            .flat_map(|x| (0..3).map(move |y| (x, y)))
            .filter(|&c| c != (1, 1))
            .collect();
        let (mesh, tri) = cells(&ring);
        let goal = [tri[&(1, 0)][0]];
        let mut skipped = 0;
        for t in 0..mesh.triangle_count() {
            let t = TriId(t as u32);
            for (e, n) in mesh.neighbours()[t.index()].iter().enumerate() {
                let Some(n) = *n else { continue };
                let away = mesh.bridges().leads_away(t, e, &goal);
                assert_eq!(away, mesh.is_dead_end(n), "{t:?} -> {n:?}");
                skipped += usize::from(away);
            }
        }
        assert!(skipped > 0, "the corner cells have dead-end triangles");
    }

    #[test]
    fn a_tail_off_a_ring_is_skipped_unless_it_holds_the_goal() {
        // A ring of eight cells around (1, 1), and a corridor (3, 1)..(5, 1) off its side.
        let mut list: Vec<(i32, i32)> = (0..3)
            .flat_map(|x| (0..3).map(move |y| (x, y)))
            .filter(|&c| c != (1, 1))
            .collect();
        list.extend([(3, 1), (4, 1), (5, 1)]);
        let (mesh, tri) = cells(&list);
        let b = mesh.bridges();
        // Crossing from the ring into the corridor: the corridor's first triangle is the
        // one of cell (3, 1) that touches x = 3.
        let ring_side = tri[&(2, 1)]
            .into_iter()
            .find(|&t| {
                tri[&(3, 1)]
                    .iter()
                    .any(|&u| mesh.neighbours()[t.index()].contains(&Some(u)))
            })
            .unwrap();
        let tail_side = tri[&(3, 1)]
            .into_iter()
            .find(|&u| mesh.neighbours()[u.index()].contains(&Some(ring_side)))
            .unwrap();
        let into_tail = edge(&mesh, ring_side, tail_side);
        let out_of_tail = edge(&mesh, tail_side, ring_side);
        let ring_goal = [tri[&(0, 0)][0]];
        let tail_goal = [tri[&(5, 1)][1]];
        assert!(b.leads_away(ring_side, into_tail, &ring_goal));
        assert!(!b.leads_away(ring_side, into_tail, &tail_goal));
        assert!(b.leads_away(tail_side, out_of_tail, &tail_goal));
        assert!(!b.leads_away(tail_side, out_of_tail, &ring_goal));
        // A goal on the bridge edge itself lies in both triangles: neither way is skipped.
        let both = [ring_side, tail_side];
        assert!(!b.leads_away(ring_side, into_tail, &both));
        assert!(!b.leads_away(tail_side, out_of_tail, &both));
        // Inside the ring, no edge is a bridge.
        let inner = tri[&(0, 0)];
        assert!(!b.leads_away(inner[0], edge(&mesh, inner[0], inner[1]), &tail_goal));
    }

    #[test]
    fn every_link_of_a_corridor_is_a_bridge() {
        let (mesh, tri) = cells(&[(0, 0), (1, 0), (2, 0), (3, 0)]);
        let goal = tri[&(3, 0)][0];
        // Steps from each triangle to the goal through the triangle graph (a path here).
        let mut steps = vec![usize::MAX; mesh.triangle_count()];
        steps[goal.index()] = 0;
        let mut queue = std::collections::VecDeque::from([goal]);
        while let Some(t) = queue.pop_front() {
            for n in mesh.neighbours()[t.index()].iter().flatten() {
                if steps[n.index()] == usize::MAX {
                    steps[n.index()] = steps[t.index()] + 1;
                    queue.push_back(*n);
                }
            }
        }
        for t in 0..mesh.triangle_count() {
            let t = TriId(t as u32);
            for (e, n) in mesh.neighbours()[t.index()].iter().enumerate() {
                let Some(n) = *n else { continue };
                // Toward the goal is never skipped; away from it always is.
                let away = steps[n.index()] > steps[t.index()];
                assert_eq!(
                    mesh.bridges().leads_away(t, e, &[goal]),
                    away,
                    "{t:?} -> {n:?}"
                );
            }
        }
    }
}
