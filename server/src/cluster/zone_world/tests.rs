use std::sync::Arc;

use navmesh_builder::load::build_source;
use navmesh_builder::pipeline::SourceKind;
use protocol::NetId;
use protocol::bus::JoinRequest;
use sim::{Kind, Vec2};

use super::{NPC_SPAWN_WAIT_TICKS, PLAYER_BIT, ZoneWorld};
use crate::cluster::ClusterFile;

/// Zone `west` of an open 40 m by 20 m map split at x = 20, its east neighbour silent (as
/// one not started yet, or killed).
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

#[test]
fn npcs_placed_late_keep_off_the_players_who_joined_while_they_waited() {
    let mut zone = west();
    // Two spawn points; a player joins on the first before the NPCs are placed (they wait
    // for the silent neighbour).
    zone.npcs_to_place = vec![Vec2::new(10.0, 10.0), Vec2::new(5.0, 5.0)];
    zone.join(
        JoinRequest {
            gateway: "gw1".to_owned(),
            id: NetId {
                index: PLAYER_BIT | 1,
                generation: 1,
            },
            account: "ann".to_owned(),
            at: [10.0, 10.0],
        },
        None,
    );
    for tick in 0..NPC_SPAWN_WAIT_TICKS + 2 {
        let (out, _) = zone.tick();
        assert_eq!(out.overlapping_pairs, 0, "tick {tick}");
    }
    let bodies: Vec<(Kind, Vec2)> = zone.world.bodies().map(|b| (b.kind, b.pos)).collect();
    let player = bodies.iter().find(|b| b.0 == Kind::Player).unwrap().1;
    assert!(
        (player - Vec2::new(10.0, 10.0)).length() < 0.5,
        "{bodies:?}"
    );
    // The NPC whose point the player stands on is not spawned; the other one is.
    let npcs: Vec<Vec2> = bodies
        .iter()
        .filter(|b| b.0 == Kind::Npc)
        .map(|b| b.1)
        .collect();
    assert_eq!(npcs.len(), 1, "{bodies:?}");
    assert!((npcs[0] - Vec2::new(5.0, 5.0)).length() < 1.0, "{bodies:?}");
}
