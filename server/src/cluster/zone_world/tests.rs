use std::sync::Arc;

use navmesh_builder::load::build_source;
use navmesh_builder::pipeline::SourceKind;
use protocol::bus::{Custody, FrameBody, JoinRequest, ZoneFrame};
use protocol::{EntityKind, Motion, NetId};
use sim::{Kind, Vec2};

use super::spawns::{FLIGHT_MAX, MAX_ZONE_BODIES};
use super::{NPC_SPAWN_WAIT_TICKS, PLAYER_BIT, ZoneIn, ZoneWorld};
use crate::cluster::ClusterFile;

/// Zone `west` of an open 40 m by 20 m map split at x = 20, its east neighbour silent (as
/// one not started yet, or killed) until a test feeds it a frame.
fn west() -> ZoneWorld {
    let rows = vec![".".repeat(40); 20].join("\n");
    let map = format!("type octile\nheight 20\nwidth 40\nmap\n{rows}\n");
    let mesh = build_source("open", &map, SourceKind::Grid).unwrap().mesh;
    let file = ClusterFile::from_toml(
        "npcs = 10\nnats = \"nats://127.0.0.1:4222\"\n\
         [[zones]]\nname = \"west\"\nregion = [0.0, 0.0, 20.0, 20.0]\n\
         [[zones]]\nname = \"east\"\nregion = [20.0, 0.0, 40.0, 20.0]\n",
    )
    .unwrap();
    ZoneWorld::new(Arc::new(mesh), Arc::new(file), 0, 1, None)
}

/// [`west`] with no NPCs to place, one tick in.
fn west_without_npcs() -> ZoneWorld {
    let mut zone = west();
    zone.npcs_to_place.clear();
    zone.tick();
    zone
}

/// A player's character offered by the neighbour in the tests of offers.
const PLAYER: NetId = NetId {
    index: PLAYER_BIT | 3,
    generation: 1,
};

fn join_at(at: [f32; 2]) -> ZoneIn {
    ZoneIn::Join(
        JoinRequest {
            gateway: "gw1".to_owned(),
            id: NetId {
                index: PLAYER_BIT | 1,
                generation: 1,
            },
            account: "ann".to_owned(),
            at,
            login: 0,
            epoch: 0,
        },
        None,
    )
}

/// East's frame with one NPC of its standing at `pos`.
fn east_frame(tick: u64, pos: [f32; 2]) -> ZoneIn {
    ZoneIn::Frame(Box::new(ZoneFrame {
        zone: "east".to_owned(),
        incarnation: 9,
        tick,
        bodies: vec![FrameBody {
            id: NetId {
                index: (2 << 24) | 5,
                generation: 9,
            },
            epoch: 1,
            custody: Custody::Real,
            kind: EntityKind::Npc,
            pos,
            radius_m: 0.4,
            speed_mps: 1.5,
            motion: Motion::Idle,
        }],
        applied: Vec::new(),
    }))
}

fn bodies(zone: &ZoneWorld) -> Vec<(Kind, Vec2)> {
    zone.world.bodies().map(|b| (b.kind, b.pos)).collect()
}

#[test]
fn a_join_and_an_npc_spawn_point_in_one_place_do_not_land_on_each_other() {
    let mut zone = west();
    // A player asks to join on a spawn point of the NPCs while both wait for the silent
    // neighbour.
    zone.npcs_to_place = vec![Vec2::new(10.0, 10.0), Vec2::new(5.0, 5.0)];
    zone.handle(join_at([10.0, 10.0]));
    for tick in 0..NPC_SPAWN_WAIT_TICKS + 2 {
        let (out, _) = zone.tick();
        assert_eq!(out.overlapping_pairs, 0, "tick {tick}");
    }
    let all = bodies(&zone);
    assert_eq!(all.len(), 3, "{all:?}");
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!((a.1 - b.1).length() >= 0.8, "{all:?}");
        }
    }
}

#[test]
fn a_join_waits_for_the_neighbours_frame_and_keeps_off_its_bodies() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    zone.tick();
    // A zone just started: a character is asked for (where east's NPC stands, inside
    // west's region: it walked in while west was down) before east's first frame is in.
    zone.handle(join_at([19.0, 10.0]));
    zone.tick();
    assert!(
        bodies(&zone).is_empty(),
        "joined before the neighbour was heard from"
    );
    for tick in 3..30 {
        zone.handle(east_frame(tick, [19.0, 10.0]));
        let (out, _) = zone.tick();
        assert_eq!(out.overlapping_pairs, 0, "tick {tick}: {:?}", bodies(&zone));
    }
    let all = bodies(&zone);
    let player = all.iter().find(|b| b.0 == Kind::Player).expect("joined").1;
    assert!((player - Vec2::new(19.0, 10.0)).length() >= 0.8, "{all:?}");
}

#[test]
fn a_join_asked_after_a_new_frame_keeps_off_the_bodies_of_that_frame() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    zone.handle(east_frame(1, [30.0, 5.0]));
    zone.tick();
    // East's next frame has a body where the character asks to appear; the join comes
    // in before the tick that turns that frame into ghosts.
    zone.handle(east_frame(2, [19.0, 10.0]));
    zone.handle(join_at([19.0, 10.0]));
    for tick in 3..10 {
        let (out, _) = zone.tick();
        assert_eq!(out.overlapping_pairs, 0, "tick {tick}: {:?}", bodies(&zone));
        zone.handle(east_frame(tick, [19.0, 10.0]));
    }
    let all = bodies(&zone);
    let player = all.iter().find(|b| b.0 == Kind::Player).expect("joined").1;
    assert!((player - Vec2::new(19.0, 10.0)).length() >= 0.8, "{all:?}");
}

#[test]
fn a_handoff_refused_before_the_next_tick_leaves_one_body_and_no_ghost_of_it() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    // East is up (its frame is in, its one NPC far off), and a character stands 3 m
    // inside east's region: more than the 2 m margin out of west's.
    zone.handle(east_frame(1, [35.0, 15.0]));
    zone.handle(join_at([23.0, 10.0]));
    zone.tick();
    // Joined and offered to east in that tick; east answers "no" before the next one.
    let (&id, flight) = zone.in_flight.iter().next().expect("offered");
    let epoch = flight.epoch;
    zone.handle(ZoneIn::HandoffAnswer {
        id,
        epoch,
        ack: None,
    });
    zone.handle(east_frame(2, [35.0, 15.0]));
    let (out, _) = zone.tick();
    assert_eq!(out.overlapping_pairs, 0, "{:?}", bodies(&zone));
    let players: Vec<Vec2> = bodies(&zone)
        .iter()
        .filter(|b| b.0 == Kind::Player)
        .map(|b| b.1)
        .collect();
    assert_eq!(players.len(), 1, "{:?}", bodies(&zone));
    // Real here again with an epoch newer than the one offered (and, still past the
    // margin, offered anew at the tick's end); no ghost of it here.
    let claim = zone.reals.get(&id).map(|r| r.epoch);
    let offered = zone.in_flight.get(&id).map(|f| f.epoch - 1);
    assert!(
        claim.or(offered).is_some_and(|e| e > epoch),
        "{claim:?} {offered:?}"
    );
    assert!(!zone.ghosts.contains_key(&id));
    // Only east's NPC is a ghost here: the character and that one make two bodies.
    assert_eq!(bodies(&zone).len(), 2, "{:?}", bodies(&zone));
}

/// Epochs travel on the bus: a body offered back and forth at the top of the range keeps
/// the largest epoch instead of overflowing (a panic in a debug build) or wrapping to 0
/// (which would look older than every claim).
#[test]
fn an_epoch_at_the_top_of_its_range_stays_there() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    zone.handle(east_frame(1, [35.0, 15.0]));
    zone.handle(join_at([23.0, 10.0]));
    zone.tick();
    let (&id, flight) = zone.in_flight.iter_mut().next().expect("offered");
    flight.epoch = u32::MAX - 1;
    for tick in 2..6 {
        // East refuses every offer, whatever its epoch; the character stays past the
        // margin, so it is taken back and offered anew each tick (its wait before the
        // next offer cut short).
        let epoch = zone.in_flight.get(&id).expect("offered again").epoch;
        zone.handle(ZoneIn::HandoffAnswer {
            id,
            epoch,
            ack: None,
        });
        zone.offer_after.clear();
        zone.handle(east_frame(tick, [35.0, 15.0]));
        zone.tick();
    }
    let claim = zone.reals.get(&id).map(|r| r.epoch);
    let offered = zone.in_flight.get(&id).map(|f| f.epoch);
    assert_eq!(claim.or(offered), Some(u32::MAX), "{claim:?} {offered:?}");
}

/// A neighbour's body the world cannot take as a ghost (a radius of 0) costs that ghost
/// only: a character joining in the same tick still gets its own body, not the place in
/// the spawn order the ghost left empty.
#[test]
fn a_ghost_the_world_refuses_leaves_the_other_spawns_of_the_tick_paired() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    let ZoneIn::Frame(mut frame) = east_frame(1, [22.0, 10.0]) else {
        panic!("a frame")
    };
    frame.bodies[0].radius_m = 0.0;
    zone.handle(ZoneIn::Frame(frame));
    zone.handle(join_at([5.0, 10.0]));
    zone.tick();
    let id = NetId {
        index: PLAYER_BIT | 1,
        generation: 1,
    };
    let real = zone.reals.get(&id).expect("the character is real here");
    let body = zone.world.body(real.local).expect("its body");
    assert_eq!(body.kind, Kind::Player);
    assert!(zone.ghosts.is_empty(), "no ghost of the refused body");
}

/// A frame under a name the cluster file does not give a zone makes no ghosts here and is
/// not kept.
#[test]
fn a_frame_from_a_zone_the_file_does_not_name_is_ignored() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    let ZoneIn::Frame(mut frame) = east_frame(1, [22.0, 10.0]) else {
        panic!("a frame")
    };
    frame.zone = "nowhere".to_owned();
    zone.handle(ZoneIn::Frame(frame));
    zone.tick();
    assert!(zone.frames.is_empty());
    assert!(zone.ghosts.is_empty());
    zone.handle(east_frame(2, [22.0, 10.0]));
    zone.tick();
    assert_eq!(zone.ghosts.len(), 1, "east's body is a ghost here");
}

/// A body as a neighbour offers it: `kind` standing at `pos` in west's region.
fn offer(id: NetId, epoch: u32, kind: EntityKind, pos: [f32; 2]) -> ZoneIn {
    use protocol::bus::{CarriedBody, CarriedBrain, Handoff, HandoffPlayer};
    let player = (kind == EntityKind::Player).then(|| HandoffPlayer {
        account: "bo".to_owned(),
        applied_seq: 0,
        login: 0,
    });
    let body = CarriedBody {
        kind,
        brain: CarriedBrain::Idle,
        pos,
        vel: [0.0, 0.0],
        radius_m: 0.4,
        speed_mps: 1.5,
        goal: None,
        direction: None,
        path: Vec::new(),
        heading: None,
        motion: Motion::Idle,
        patrol_next: 0,
        stalled_ticks: 0,
        best_goal_dist: 0.0,
    };
    let from = "east".to_owned();
    ZoneIn::Handoff(
        Box::new(Handoff {
            from,
            id,
            epoch,
            player,
            body,
        }),
        None,
    )
}

/// A player who leaves while its character is offered to the neighbour: the leave goes
/// on to the neighbour, which refuses the offer (or never answers); the character taken
/// back leaves then, answered before the next tick or after it.
#[test]
fn a_leave_while_offered_holds_when_the_neighbour_does_not_take_the_body() {
    for ticks_before_the_answer in [0, 1] {
        let mut zone = west();
        zone.npcs_to_place.clear();
        zone.handle(east_frame(1, [35.0, 15.0]));
        zone.handle(join_at([23.0, 10.0]));
        zone.tick();
        let (&id, flight) = zone.in_flight.iter().next().expect("offered to east");
        let epoch = flight.epoch;
        zone.handle(ZoneIn::Leave(id));
        for tick in 2..2 + ticks_before_the_answer {
            zone.handle(east_frame(tick, [35.0, 15.0]));
            zone.tick();
        }
        zone.handle(ZoneIn::HandoffAnswer {
            id,
            epoch,
            ack: None,
        });
        for tick in 4..7 {
            zone.handle(east_frame(tick, [35.0, 15.0]));
            zone.tick();
        }
        let players: Vec<_> = bodies(&zone)
            .into_iter()
            .filter(|b| b.0 == Kind::Player)
            .collect();
        assert!(
            !zone.reals.contains_key(&id) && !zone.in_flight.contains_key(&id),
            "answered after {ticks_before_the_answer} ticks: still held"
        );
        assert!(players.is_empty(), "a character nobody plays: {players:?}");
    }
}

/// The leave a neighbour passes on with its offer, both taken before one tick (the body
/// still spawning here), or the leave first: the offer is a request of its own, and may
/// come after the leave. Either way the body taken over leaves as soon as it is made,
/// instead of staying here with nobody playing it.
#[test]
fn a_leave_that_comes_with_or_before_the_offer_holds() {
    for leave_first in [false, true] {
        let mut zone = west_without_npcs();
        let id = PLAYER;
        let offered = || offer(id, 1, EntityKind::Player, [17.0, 10.0]);
        if leave_first {
            zone.handle(ZoneIn::Leave(id));
            zone.handle(offered());
        } else {
            zone.handle(offered());
            zone.handle(ZoneIn::Leave(id));
        }
        for _ in 0..10 {
            zone.handle(ZoneIn::GatewayAlive {
                index: 0,
                incarnation: 1,
            });
            zone.tick();
        }
        let order = if leave_first {
            "leave first"
        } else {
            "offer first"
        };
        assert!(
            !zone.reals.contains_key(&id),
            "{order}: the character stayed"
        );
        assert!(bodies(&zone).is_empty(), "{order}: {:?}", bodies(&zone));
    }
}

/// Two offers of one body taken before one tick (this zone's thread was slow: the
/// neighbour's first offer timed out, it took the body back and offered it again at a
/// newer epoch), in either order: one body in the world, at the newer epoch.
#[test]
fn two_offers_of_one_body_in_one_tick_make_one_body() {
    let id = NetId {
        index: (2 << 24) | 7,
        generation: 9,
    };
    for epochs in [[1, 3], [3, 1]] {
        let mut zone = west();
        zone.npcs_to_place.clear();
        zone.tick();
        for epoch in epochs {
            zone.handle(offer(id, epoch, EntityKind::Npc, [17.0, 10.0]));
        }
        zone.tick();
        zone.tick();
        assert_eq!(zone.reals.len(), 1);
        assert_eq!(zone.reals[&id].epoch, 3, "offers at epochs {epochs:?}");
        assert_eq!(bodies(&zone).len(), 1, "offers at epochs {epochs:?}");
    }
}

/// An offer whose request never left (dropped on a full outbox) or whose answer was lost
/// is taken back once it has waited [`FLIGHT_MAX`]: the body is real here again, not in
/// flight for good.
#[test]
fn an_offer_unanswered_is_taken_back() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    zone.handle(east_frame(1, [35.0, 15.0]));
    zone.handle(join_at([23.0, 10.0]));
    let _ = zone.tick();
    let (&id, flight) = zone.in_flight.iter().next().expect("offered");
    let (since, offered) = (flight.since, flight.epoch);
    assert_eq!(
        zone.expire_flights(since + FLIGHT_MAX / 2),
        0,
        "taken back early"
    );
    for tick in 2..5 {
        zone.handle(east_frame(tick, [35.0, 15.0]));
        let _ = zone.tick();
    }
    assert_eq!(zone.expire_flights(since + FLIGHT_MAX * 2), 1);
    assert!(zone.in_flight.is_empty(), "still in flight");
    zone.handle(east_frame(5, [35.0, 15.0]));
    let _ = zone.tick();
    // Taken back at a newer epoch; standing past the border, it is offered again at once.
    let epoch = (zone.reals.get(&id).map(|real| real.epoch))
        .or_else(|| zone.in_flight.get(&id).map(|flight| flight.epoch));
    assert!(
        epoch.is_some_and(|epoch| epoch > offered),
        "taken back at {epoch:?}, not above the offer's {offered}"
    );
}

/// A handoff that names a zone the cluster file does not (or this zone itself) is refused.
#[test]
fn a_handoff_from_a_zone_the_file_does_not_name_is_refused() {
    for from in ["nowhere", "west"] {
        let mut zone = west_without_npcs();
        let id = PLAYER;
        let ZoneIn::Handoff(mut handoff, reply) = offer(id, 1, EntityKind::Player, [17.0, 10.0])
        else {
            unreachable!("an offer is a handoff")
        };
        handoff.from = from.to_owned();
        zone.handle(ZoneIn::Handoff(handoff, reply));
        zone.tick();
        assert!(
            !zone.reals.contains_key(&id),
            "a body from {from:?} was taken"
        );
    }
}

/// A frame of [`MAX_ZONE_BODIES`] bodies, every number as large as it can be and each
/// body a player with an applied input, fits in one bus message.
#[test]
fn a_full_zone_frame_fits_in_one_bus_message() {
    let body = |k: u32| FrameBody {
        id: NetId {
            index: PLAYER_BIT | k,
            generation: u32::MAX,
        },
        epoch: u32::MAX,
        custody: Custody::InFlight,
        kind: EntityKind::Player,
        pos: [f32::MAX, f32::MAX],
        radius_m: f32::MAX,
        speed_mps: f32::MAX,
        motion: Motion::Repulsed,
    };
    let bodies: Vec<FrameBody> = (0..MAX_ZONE_BODIES as u32).map(body).collect();
    let frame = ZoneFrame {
        zone: "z".repeat(64),
        incarnation: u32::MAX,
        tick: u64::MAX,
        applied: bodies.iter().map(|b| (b.id, u32::MAX)).collect(),
        bodies,
    };
    let message = protocol::bus::BusMessage::Frame(frame);
    let bytes = crate::cluster::bus::encode(&message).expect("a full zone's frame is sent");
    assert!(bytes.len() <= protocol::codec::MAX_BUS_BYTES);
}

/// A body whose offer is refused (a full neighbour, say) is offered again a second later,
/// not at every tick.
#[test]
fn a_refused_offer_waits_before_it_is_made_again() {
    let mut zone = west();
    zone.npcs_to_place.clear();
    zone.handle(east_frame(1, [35.0, 15.0]));
    zone.handle(join_at([23.0, 10.0]));
    let mut offers = 0;
    for tick in 2..22 {
        let (_, said) = zone.tick();
        for out in said {
            if let super::ZoneOut::Request(_, _, id, epoch) = out {
                offers += 1;
                let refused = Some("zone east is full (20000 bodies)".to_owned());
                let ack = protocol::bus::HandoffAck { id, epoch, refused };
                zone.handle(ZoneIn::HandoffAnswer {
                    id,
                    epoch,
                    ack: Some(ack),
                });
            }
        }
        zone.handle(east_frame(tick, [35.0, 15.0]));
    }
    assert_eq!(offers, 1, "{offers} offers in 20 ticks");
}

/// Ghosts spawning in a tick take no room: a zone whose neighbour's bodies stand in its
/// band still spawns all its room's NPCs.
#[test]
fn ghosts_take_no_npc_room() {
    let mut zone = west();
    zone.npcs_to_place = vec![Vec2::new(5.0, 5.0); super::NPC_ROOM];
    zone.handle(east_frame(1, [21.0, 10.0]));
    zone.sync_ghosts();
    zone.place_npcs();
    let npcs = (zone.spawning.iter())
        .filter(|(_, what)| matches!(what, super::Spawning::Npc))
        .count();
    assert_eq!(npcs, super::NPC_ROOM);
}
