//! Giving up: a wanderer that makes no progress for half the stuck time gives up its
//! goal, and picks its next one away from the goal it gave up, so that a jam's bodies
//! leave instead of pressing back in.

use sim::{Brain, EntityId, Input, Vec2, World, WorldConfig};

use crate::{npc, polygon_mesh};

/// A 60 m square room with a wall down its middle (x 32–34) from y 10 to y 50.
const ROOM: &str = r#"{"regions": [{"outer": [[0, 0], [60, 0], [60, 60], [0, 60]],
    "holes": [[[32, 10], [32, 50], [34, 50], [34, 10]]]}]}"#;

/// Where the penned wanderers stand: west of the wall, close to it, so that the way to
/// [`GOAL`] (round the wall's nearer end) sets off far from the goal's direction.
const PENS: [(f32, f32); 12] = [
    (29.5, 16.0),
    (29.5, 21.0),
    (29.5, 26.0),
    (29.5, 34.0),
    (29.5, 39.0),
    (29.5, 44.0),
    (26.5, 16.0),
    (26.5, 21.0),
    (26.5, 26.0),
    (26.5, 34.0),
    (26.5, 39.0),
    (26.5, 44.0),
];

/// The goal every penned wanderer is sent to, just east of the wall.
const GOAL: Vec2 = Vec2::new(38.0, 30.0);

/// Pens a wanderer at each of [`PENS`] in a ring of six standing bodies (1 cm to spare),
/// sends each to [`GOAL`], and returns, per wanderer, where it stood, the direction it
/// wanted to walk in when it gave up, and the goal it picked next.
fn penned_wanderers_give_up() -> Vec<(Vec2, Vec2, Vec2)> {
    let mut world = World::new(WorldConfig::default(), polygon_mesh(ROOM), 11);
    let mut spawns = Vec::new();
    for &(x, y) in &PENS {
        spawns.push(npc(x, y, 0.4, Brain::Wander));
        for k in 0..6 {
            let a = (k as f32 * 60.0 + 30.0).to_radians();
            spawns.push(npc(
                x + 0.81 * a.cos(),
                y + 0.81 * a.sin(),
                0.4,
                Brain::Idle,
            ));
        }
    }
    let ids: Vec<EntityId> = world.step(&spawns).spawned;
    assert_eq!(ids.len(), PENS.len() * 7, "every body spawned");
    let wanderers: Vec<EntityId> = ids.iter().step_by(7).copied().collect();
    let orders: Vec<Input> = wanderers
        .iter()
        .map(|&id| Input::MoveTo(id, GOAL))
        .collect();
    world.step(&orders);
    let mut last_want = vec![Vec2::ZERO; wanderers.len()];
    let mut next: Vec<Option<(Vec2, Vec2, Vec2)>> = vec![None; wanderers.len()];
    // Half the stuck time is 2.5 s, 50 ticks; the first goal is given up by tick 60.
    for _ in 0..80 {
        world.step(&[]);
        for (k, &id) in wanderers.iter().enumerate() {
            let Some(detail) = world.inspect(id) else {
                panic!("wanderer {k} gone");
            };
            let goal = detail.goal.unwrap_or(GOAL);
            if next[k].is_none() && goal != GOAL {
                next[k] = Some((detail.view.pos, last_want[k], goal));
            }
            last_want[k] = detail.wanted_vel;
        }
    }
    next.into_iter()
        .enumerate()
        .map(|(k, n)| n.unwrap_or_else(|| panic!("wanderer {k} never gave up")))
        .collect()
}

#[test]
fn a_wanderer_that_gives_up_turns_away_from_the_goal_it_gave_up() {
    let picks = penned_wanderers_give_up();
    let (mut away_from_goal, mut away_from_want) = (0, 0);
    for (k, &(pos, want, next)) in picks.iter().enumerate() {
        let (to_goal, to_next) = ((GOAL - pos).normalize(), (next - pos).normalize());
        // Penned, it wanted to set off round an end of the wall, not at the goal.
        assert!(
            want.normalize().dot(to_goal) < 0.8,
            "wanderer {k} at {pos:?} wanted {want:?}, at the goal"
        );
        eprintln!("wanderer {k} at {pos:?}, wanting {want:?}, gave up {GOAL:?} for {next:?}");
        away_from_goal += usize::from(to_next.dot(to_goal) < 0.0);
        away_from_want += usize::from(to_next.dot(want) < 0.0);
    }
    eprintln!(
        "of {} picks, {away_from_goal} turn away from the goal given up, \
         {away_from_want} from the heading wanted",
        picks.len()
    );
    // A pick is a uniformly random point, redrawn up to eight times while it lies on the
    // goal's side: at least half the room is away from the goal from every pen, so all
    // twelve turn away but for a 1-in-500 chance each.
    assert!(away_from_goal >= 11, "{away_from_goal} of 12 turned away");
}
