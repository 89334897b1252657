//! What bodies cannot walk through: the mesh's walls and the doors as parry2d segments,
//! the static wall lists per cell, and the wall queries every phase asks (which walls are
//! near, how far the nearest is, how deep a disc reaches into them), with their scratch.

use navmesh::{NavMesh, Point};
use parry2d::query::PointQuery;
use parry2d::shape::Segment;

use super::{to_point, to_vec};
use crate::types::Vec2;
use crate::walls::WallCells;

/// The map's walls and doors, and the state of the doors.
pub(super) struct Obstacles {
    /// The mesh's walls, in [`NavMesh::walls`] order.
    walls: Vec<Segment>,
    doors: Vec<Segment>,
    doors_closed: Vec<bool>,
    /// The walls near each cell of the map (static), see [`WallCells`].
    cells: WallCells,
    /// Per slot, the last wall depth measured: `(pos, radius, depth)` (radius < 0: none).
    depth_memo: Vec<(Vec2, f32, f32)>,
    /// Per slot, the wall cell its last query read, with what [`WallCells::list`] gave for
    /// it: `(cell, bound, from, to)` (`u32::MAX`: none). A body stays in its cell (1 m)
    /// for many ticks, and its own slot's memory is warmer than the map's cell table. The
    /// lists never change, so a remembered one is the one a lookup would give.
    cell_memo: Vec<(u32, f32, u32, u32)>,
    /// Wall query scratch: the mesh's answer, and the same as `u32`.
    mesh_scratch: Vec<usize>,
    scratch: Vec<u32>,
}

/// The walls a query found near a point (see [`Obstacles::near`]).
pub(super) struct NearWalls<'a> {
    /// A lower bound on the distance from the point to any wall (0 when none is known).
    pub(super) bound: f32,
    /// The walls found: indices into `walls`.
    ids: &'a [u32],
    walls: &'a [Segment],
}

impl<'a> NearWalls<'a> {
    /// The walls found, each with its index.
    #[inline]
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &'a Segment)> + 'a {
        let walls = self.walls;
        self.ids.iter().map(move |&w| (w, &walls[w as usize]))
    }
}

impl Obstacles {
    /// The walls of `mesh` and the doors `doors`, closed where `closed` says so (open
    /// beyond its end).
    pub(super) fn new(mesh: &NavMesh, doors: &[(Vec2, Vec2)], closed: &[bool]) -> Obstacles {
        let walls = mesh
            .walls()
            .iter()
            .map(|w| {
                Segment::new(
                    to_vec(mesh.vertices()[w.from.index()]),
                    to_vec(mesh.vertices()[w.to.index()]),
                )
            })
            .collect();
        let doors: Vec<Segment> = doors.iter().map(|&(a, b)| Segment::new(a, b)).collect();
        let doors_closed = (0..doors.len())
            .map(|i| closed.get(i).copied().unwrap_or(false))
            .collect();
        Obstacles {
            walls,
            doors,
            doors_closed,
            cells: WallCells::new(mesh),
            depth_memo: Vec::new(),
            cell_memo: Vec::new(),
            mesh_scratch: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Whether each door is closed.
    pub(super) fn doors_closed(&self) -> &[bool] {
        &self.doors_closed
    }

    /// Opens or closes door `door`; false when there is no such door.
    pub(super) fn set_door(&mut self, door: usize, closed: bool) -> bool {
        match self.doors_closed.get_mut(door) {
            Some(state) => {
                *state = closed;
                // Wall depths change with the doors.
                self.depth_memo.clear();
                true
            }
            None => false,
        }
    }

    /// Whether any door is closed.
    pub(super) fn any_door_closed(&self) -> bool {
        self.doors_closed.iter().any(|&c| c)
    }

    /// Every door with whether it is closed.
    #[inline]
    pub(super) fn doors(&self) -> impl Iterator<Item = (&Segment, bool)> + '_ {
        self.doors.iter().zip(self.doors_closed.iter().copied())
    }

    /// Wall `w` (an index from [`NearWalls`]).
    #[inline]
    pub(super) fn wall(&self, w: u32) -> &Segment {
        &self.walls[w as usize]
    }

    /// The walls within `reach` of `p` (and perhaps a few farther ones): the map's static
    /// cell list, or, for reaches the lists do not cover, the mesh's answer. Empty when the
    /// cell's bound shows that no wall is within `limit` of `p` (the callers only use walls
    /// closer than that).
    pub(super) fn near(
        &mut self,
        mesh: &NavMesh,
        p: Vec2,
        reach: f32,
        limit: f32,
    ) -> NearWalls<'_> {
        self.near_for(usize::MAX, mesh, p, reach, limit)
    }

    /// [`Obstacles::near`] for the body in slot `slot`, whose last cell list is remembered
    /// (`usize::MAX`: no slot).
    // Always inlined: the circling phase asks once per body and tick, and a call costs
    // about as much as the cell lookup it wraps.
    #[inline(always)]
    pub(super) fn near_for(
        &mut self,
        slot: usize,
        mesh: &NavMesh,
        p: Vec2,
        reach: f32,
        limit: f32,
    ) -> NearWalls<'_> {
        let walls = &self.walls;
        if let Some(c) = self.cells.cell(p, reach) {
            let (bound, from, to) = match self.cell_memo.get_mut(slot) {
                Some(&mut (memo, bound, from, to)) if memo == c => (bound, from, to),
                Some(memo) => {
                    let (bound, from, to) = self.cells.list(c);
                    *memo = (c, bound, from, to);
                    (bound, from, to)
                }
                None => self.cells.list(c),
            };
            return NearWalls {
                bound,
                ids: if bound >= limit {
                    &[]
                } else {
                    self.cells.items(from, to)
                },
                walls,
            };
        }
        let r = f64::from(reach);
        let q = to_point(p);
        mesh.walls_near(
            q - Point::new(r, r),
            q + Point::new(r, r),
            &mut self.mesh_scratch,
        );
        self.scratch.clear();
        self.scratch
            .extend(self.mesh_scratch.iter().map(|&w| w as u32));
        NearWalls {
            bound: 0.0,
            ids: &self.scratch,
            walls,
        }
    }

    /// Distance from `pos` to the nearest wall or closed door, capped at `radius`, for
    /// the body in slot `slot` (see [`Obstacles::near_for`]).
    pub(super) fn clearance(&mut self, slot: usize, mesh: &NavMesh, pos: Vec2, radius: f32) -> f32 {
        let mut best = radius;
        for (_, wall) in self.near_for(slot, mesh, pos, radius, radius).iter() {
            best = best.min(wall.distance_to_local_point(pos, true));
        }
        for (d, closed) in self.doors() {
            if closed {
                best = best.min(d.distance_to_local_point(pos, true));
            }
        }
        best
    }

    /// How deep a disc at `pos` reaches into walls and closed doors (0 when clear), and,
    /// when the centre is off the mesh, at least the radius; for the body in slot `slot`
    /// (see [`Obstacles::near_for`]).
    pub(super) fn depth(&mut self, slot: usize, mesh: &NavMesh, pos: Vec2, radius: f32) -> f32 {
        let clearance = self.clearance(slot, mesh, pos, radius);
        if clearance >= radius {
            // A disc clear of every wall is wholly on the mesh or wholly inside an obstacle;
            // bodies never get wholly inside one (spawns snap to the mesh, walls win), so
            // the point location is only needed near walls.
            return 0.0;
        }
        let mut depth = (radius - clearance).max(0.0);
        if mesh.locate(to_point(pos)).is_none() {
            depth = depth.max(radius);
        }
        depth
    }

    /// [`Obstacles::depth`] for the body in slot `i` at `pos`, remembered per slot: a body
    /// standing still (waiting in a jam, or for its path) is not measured again every
    /// tick. The depth depends only on the point, the radius and the doors (the memo is
    /// dropped when a door changes), so the remembered value is the one a new measure
    /// would give.
    pub(super) fn body_depth(&mut self, mesh: &NavMesh, i: usize, pos: Vec2, radius: f32) -> f32 {
        if let Some(&(p, r, depth)) = self.depth_memo.get(i)
            && p == pos
            && r == radius
        {
            return depth;
        }
        let depth = self.depth(i, mesh, pos, radius);
        if let Some(m) = self.depth_memo.get_mut(i) {
            *m = (pos, radius, depth);
        }
        depth
    }

    /// Makes room in the memos for `slots` slots.
    pub(super) fn fit_memo(&mut self, slots: usize) {
        self.depth_memo.resize(slots, (Vec2::ZERO, -1.0, 0.0));
        self.cell_memo.resize(slots, (u32::MAX, 0.0, 0, 0));
    }
}
