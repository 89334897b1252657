//! The world thread's answers to admin requests.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::*;
use crate::game::tests::{Recorder, arena, test_config};
use crate::game::{GameConfig, Joined, ToWorld};
use crate::metrics::Metrics;

fn game() -> Game {
    let config = GameConfig {
        doors: vec![[1.0, 1.0, 1.0, 3.0]],
        ..test_config(5, 10)
    };
    let mut game = Game::new(arena(), config, Arc::new(Metrics::default()));
    game.tick(Instant::now());
    game
}

/// Asks and returns the answer, ticking once if the world owes it until after a tick.
fn ask<T: std::fmt::Debug>(
    game: &mut Game,
    request: impl FnOnce(Reply<T>) -> AdminRequest,
) -> Result<T, AdminRefusal> {
    let (reply, mut answer) = oneshot::channel();
    game.handle(ToWorld::Admin(request(reply)));
    if let Ok(answer) = answer.try_recv() {
        return answer;
    }
    game.tick(Instant::now());
    answer.try_recv().expect("answered after the tick")
}

fn join(
    game: &mut Game,
    session: SessionId,
    spectate: Option<Vec2>,
) -> (
    oneshot::Receiver<Result<Joined, DisconnectReason>>,
    mpsc::Receiver<Kick>,
) {
    let (kick, kicks) = mpsc::channel(4);
    let (reply, answer) = oneshot::channel();
    game.handle(ToWorld::Join {
        session,
        name: format!("p{session}"),
        login: 0,
        resume_at: None,
        saved_order: None,
        spectate,
        sink: Box::new(Recorder),
        kick,
        reply,
    });
    (answer, kicks)
}

/// Asks for `count` NPCs at random places; answered after the next tick.
fn spawn_npcs(game: &mut Game, count: u32) -> oneshot::Receiver<Result<Vec<NetId>, AdminRefusal>> {
    let (reply, answer) = oneshot::channel();
    game.handle(ToWorld::Admin(AdminRequest::SpawnNpcs {
        count,
        at: None,
        reply,
    }));
    answer
}

/// The world's id of the entity a client knows as `id`.
fn world_id(id: NetId) -> EntityId {
    EntityId {
        index: id.index,
        generation: id.generation,
    }
}

#[test]
fn spawns_in_the_tick_of_a_join_get_their_own_ids() {
    let mut game = game();
    let (mut joined, _kicks) = join(&mut game, 1, None);
    let mut spawned = spawn_npcs(&mut game, 3);
    assert!(spawned.try_recv().is_err(), "answered before the tick");
    game.tick(Instant::now());
    let player = joined.try_recv().unwrap().unwrap().entity;
    let ids = spawned.try_recv().unwrap().unwrap();
    assert_eq!(ids.len(), 3);
    for &id in &ids {
        assert_eq!(game.world().body(world_id(id)).unwrap().kind, Kind::Npc);
    }
    assert!(!ids.contains(&player));
    let info = ask(&mut game, AdminRequest::World).unwrap();
    assert_eq!((info.npcs, info.players, info.sessions), (8, 1, 1));
    let npc = format!("{}.{}", ids[0].index, ids[0].generation);
    let id = world_id(ids[0]);
    let entity = ask(&mut game, |reply| AdminRequest::Entity { id, reply }).unwrap();
    assert_eq!((entity.id.as_str(), entity.brain), (npc.as_str(), "wander"));
    // The player's character is no NPC; the NPC goes, answered after its tick.
    let me = world_id(player);
    let refused = ask(&mut game, |reply| AdminRequest::DespawnNpc {
        id: me,
        reply,
    });
    assert!(
        matches!(refused, Err(AdminRefusal::NotAnNpc(_))),
        "{refused:?}"
    );
    ask(&mut game, |reply| AdminRequest::DespawnNpc { id, reply }).unwrap();
    assert!(game.world().body(id).is_none());
    let again = ask(&mut game, |reply| AdminRequest::DespawnNpc { id, reply });
    assert_eq!(again, Err(AdminRefusal::NoSuchEntity(npc)));
}

/// Spawns the world refuses (here made invalid in the queue, as nothing the server
/// queues today is) cost only their own requests: every other join and admin request
/// still gets the bodies its own inputs made.
#[test]
fn a_refused_spawn_takes_no_one_elses_body() {
    let mut game = game();
    let (mut refused_join, _kicks) = join(&mut game, 1, None);
    let (mut joined, _kicks) = join(&mut game, 2, None);
    let mut partly = spawn_npcs(&mut game, 2);
    let mut whole = spawn_npcs(&mut game, 1);
    let refuse = |input: &mut Input| {
        if let Input::Spawn { pos, .. } = input {
            *pos = Vec2::new(f32::NAN, 0.0);
        }
    };
    let first_join = game.joins[0].input;
    refuse(&mut game.inputs[first_join]);
    refuse(&mut game.admin.spawns[0]);
    game.tick(Instant::now());
    assert_eq!(
        refused_join.try_recv().unwrap().unwrap_err(),
        DisconnectReason::Internal
    );
    let player = joined.try_recv().unwrap().unwrap().entity;
    let kind_of = |game: &Game, id: NetId| game.world().body(world_id(id)).map(|body| body.kind);
    assert_eq!(kind_of(&game, player), Some(Kind::Player));
    assert_eq!(partly.try_recv().unwrap(), Err(AdminRefusal::NotApplied));
    let npc = whole.try_recv().unwrap().unwrap();
    assert_eq!(npc.len(), 1);
    assert_eq!(kind_of(&game, npc[0]), Some(Kind::Npc));
    let info = ask(&mut game, AdminRequest::World).unwrap();
    assert_eq!((info.players, info.sessions), (1, 1));
}

#[test]
fn doors_change_after_their_tick_and_spectators_are_sessions() {
    let mut game = game();
    let door = ask(&mut game, |reply| AdminRequest::SetDoor {
        door: 0,
        closed: true,
        reply,
    })
    .unwrap();
    assert!(door.closed);
    assert_eq!(game.world().doors_closed(), &[true]);
    let unknown = ask(&mut game, |reply| AdminRequest::SetDoor {
        door: 1,
        closed: true,
        reply,
    });
    assert_eq!(
        unknown.unwrap_err(),
        AdminRefusal::NoSuchDoor { door: 1, doors: 1 }
    );

    let (_player, _) = join(&mut game, 1, None);
    let (_spectator, mut kicks) = join(&mut game, 2, Some(Vec2::new(2.0, 2.0)));
    game.tick(Instant::now());
    let sessions = ask(&mut game, AdminRequest::Sessions).unwrap();
    let kinds: Vec<(SessionId, bool, bool)> = sessions
        .iter()
        .map(|s| (s.id, s.spectator, s.entity.is_some()))
        .collect();
    assert_eq!(kinds, [(1, false, true), (2, true, false)]);
    let text = "bye".to_owned();
    ask(&mut game, |reply| AdminRequest::Kick {
        session: 2,
        text,
        reply,
    })
    .unwrap();
    let kick = kicks.try_recv().unwrap();
    assert_eq!(
        (kick.reason, kick.text.as_str()),
        (DisconnectReason::Kicked, "bye")
    );
    let missing = ask(&mut game, |reply| AdminRequest::Kick {
        session: 9,
        text: String::new(),
        reply,
    });
    assert_eq!(missing, Err(AdminRefusal::NoSuchSession(9)));
}

/// NPCs asked for round a point in the arena's narrow corridor: those placed stand clear
/// of the walls and of each other (the spiral's points beyond the walls are passed over,
/// not moved onto the walkable area on top of one another).
#[test]
fn npcs_spawned_round_a_point_by_a_wall_stand_clear_of_walls_and_each_other() {
    let mut game = game();
    let at = Some(Vec2::new(28.0, 15.0));
    let ids = ask(&mut game, |reply| AdminRequest::SpawnNpcs {
        count: 20,
        at,
        reply,
    })
    .unwrap();
    assert!(!ids.is_empty() && ids.len() <= 20, "{} placed", ids.len());
    let mesh = game.world().mesh();
    let spots: Vec<Vec2> = ids
        .iter()
        .map(|&id| game.world().body(world_id(id)).unwrap().pos)
        .collect();
    for (k, p) in spots.iter().enumerate() {
        let point = navmesh::Point::new(f64::from(p.x), f64::from(p.y));
        let clearance = mesh.clearance(point, 1.0);
        assert!(
            clearance >= f64::from(RADIUS_M) - 1e-3,
            "{p:?} is {clearance} m from a wall"
        );
        for q in &spots[k + 1..] {
            assert!(
                (*p - *q).length() >= 2.0 * RADIUS_M - 1e-3,
                "{p:?} and {q:?} overlap"
            );
        }
    }
}
