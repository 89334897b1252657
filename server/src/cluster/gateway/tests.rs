//! The router without NATS: a test plays the zones (answers, frames) and reads what the
//! router puts on the bus queue.

use std::sync::Arc;
use std::time::{Duration, Instant};

use navmesh_builder::load::build_source;
use navmesh_builder::pipeline::SourceKind;
use protocol::bus::{BusMessage, Custody, FrameBody, JoinRequest, ZoneFrame};
use protocol::{Command, DisconnectReason, EntityKind, Motion, NetId};
use tokio::sync::{mpsc, oneshot};

use super::joins::JOIN_ANSWER_WAIT;
use super::{GatewayIn, GatewayOut, ID_COUNTER, REJOIN_AFTER, Router};
use crate::cluster::ClusterFile;
use crate::game::{Joined, Kick, ToWorld};
use crate::interest::ViewRange;

use crate::test_support::NoSink;

/// Gateway gw1 in front of zones west and east of an open 40 m by 20 m map, its bus
/// queue `queue` slots long.
fn router(queue: usize) -> (Router, mpsc::Receiver<GatewayOut>) {
    let rows = vec![".".repeat(40); 20].join("\n");
    let map = format!("type octile\nheight 20\nwidth 40\nmap\n{rows}\n");
    let mesh = build_source("open", &map, SourceKind::Grid).unwrap().mesh;
    let file = ClusterFile::from_toml(
        "npcs = 0\nnats = \"nats://127.0.0.1:4222\"\n\
         [[zones]]\nname = \"west\"\nregion = [0.0, 0.0, 20.0, 20.0]\n\
         [[zones]]\nname = \"east\"\nregion = [20.0, 0.0, 40.0, 20.0]\n\
         [[gateways]]\nname = \"gw1\"\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let (tx, rx) = mpsc::channel(queue);
    let view = ViewRange {
        radius_m: 10.0,
        hysteresis_m: 1.0,
    };
    (Router::new(Arc::new(file), 0, &mesh, view, None, tx), rx)
}

type Answer = oneshot::Receiver<Result<Joined, DisconnectReason>>;

/// Session `session` of account `name` asks for its character (saved at 5, 5: zone west).
fn ask(router: &mut Router, session: u64, name: &str) -> (Answer, mpsc::Receiver<Kick>) {
    let (reply, answer) = oneshot::channel();
    let (kick, kicks) = mpsc::channel(4);
    router.handle(ToWorld::Join {
        session,
        name: name.to_owned(),
        login: 0,
        resume_at: Some(sim::Vec2::new(5.0, 5.0)),
        saved_order: None,
        spectate: None,
        sink: Box::new(NoSink),
        kick,
        reply,
    });
    (answer, kicks)
}

/// What the router said on the bus, in short.
#[derive(Debug, PartialEq)]
enum Said {
    Join(NetId, String),
    Leave(String, NetId),
    Input(NetId, u32),
}

fn said(rx: &mut mpsc::Receiver<GatewayOut>) -> Vec<Said> {
    let mut all = Vec::new();
    while let Ok(out) = rx.try_recv() {
        all.push(match out {
            GatewayOut::Join {
                request: JoinRequest { id, account, .. },
                ..
            } => Said::Join(id, account),
            GatewayOut::Publish(subject, BusMessage::Leave(leave)) => {
                Said::Leave(subject, leave.id)
            }
            GatewayOut::Publish(_, BusMessage::Input(input)) => Said::Input(input.id, input.seq),
            // Its heartbeat, every second (`a_gateway_says_it_is_alive_every_second`).
            GatewayOut::Publish(_, BusMessage::GatewayAlive(_)) => continue,
            GatewayOut::Publish(subject, other) => panic!("unexpected {other:?} on {subject}"),
        });
    }
    all
}

/// Zone west's frame showing these players at 5, 5.
fn west_frame(ids: &[NetId]) -> GatewayIn {
    GatewayIn::Frame(Box::new(ZoneFrame {
        zone: "west".to_owned(),
        incarnation: 1,
        tick: 1,
        bodies: ids
            .iter()
            .map(|&id| FrameBody {
                id,
                epoch: 1,
                custody: Custody::Real,
                kind: EntityKind::Player,
                pos: [5.0, 5.0],
                radius_m: 0.4,
                speed_mps: 1.5,
                motion: Motion::Idle,
            })
            .collect(),
        applied: Vec::new(),
    }))
}

/// A player in the game: asked for, placed by west, shown in its frame, answered.
fn live(
    router: &mut Router,
    rx: &mut mpsc::Receiver<GatewayOut>,
    session: u64,
    name: &str,
) -> (NetId, mpsc::Receiver<Kick>) {
    let (mut answer, kicks) = ask(router, session, name);
    let [Said::Join(id, _)] = said(rx)[..] else {
        panic!("no join on the bus");
    };
    router.on_bus(GatewayIn::Joined(id, "west".to_owned(), Ok(())));
    router.on_bus(west_frame(&[id]));
    router.tick();
    let joined = answer.try_recv().unwrap().unwrap();
    assert_eq!(joined.entity, id);
    // The tick's heartbeat leaves the queue, as the publisher would take it.
    assert!(said(rx).is_empty());
    (id, kicks)
}

/// The gateway says on the bus every second that it is alive, with its place in the
/// cluster file and its incarnation, which the ids it mints carry.
#[test]
fn a_gateway_says_it_is_alive_every_second() {
    let (mut router, mut rx) = router(64);
    let mut heard = Vec::new();
    for tick in 1..=41u64 {
        if tick % 20 == 1 && tick > 1 {
            // A second goes by.
            router.alive_at = router.alive_at.map(|at| at - super::ALIVE_EVERY);
        }
        router.tick();
        while let Ok(out) = rx.try_recv() {
            if let GatewayOut::Publish(subject, BusMessage::GatewayAlive(alive)) = out {
                assert_eq!(subject, "mmo.gateways");
                heard.push((tick, alive));
            }
        }
    }
    let ticks: Vec<u64> = heard.iter().map(|(tick, _)| *tick).collect();
    assert_eq!(ticks, [1, 21, 41]);
    let alive = &heard[0].1;
    assert_eq!((alive.gateway.as_str(), alive.index), ("gw1", 0));
    let id = router.mint_id().unwrap();
    assert_eq!(
        protocol::bus::GatewayAlive::minted(id),
        Some((alive.index, alive.incarnation))
    );
}

const WEST_LEAVE: &str = "mmo.zone.west.leave";

#[test]
fn a_join_no_zone_answers_is_refused_in_time_and_its_zone_told_to_let_go() {
    let (mut router, mut rx) = router(64);
    let (mut answer, _kicks) = ask(&mut router, 1, "ada");
    let [Said::Join(id, _)] = said(&mut rx)[..] else {
        panic!("no join on the bus");
    };
    // Not yet: the zone has time to answer.
    router.tick();
    assert!(matches!(
        answer.try_recv(),
        Err(oneshot::error::TryRecvError::Empty)
    ));
    assert!(said(&mut rx).is_empty());

    // No answer (the bus lost the request, or the answer) for the whole wait.
    let pending = router.pending.get_mut(&id).unwrap();
    pending.asked = Instant::now().checked_sub(JOIN_ANSWER_WAIT).unwrap();
    router.tick();
    assert!(
        matches!(answer.try_recv(), Ok(Err(DisconnectReason::Internal))),
        "the session was not answered"
    );
    assert!(router.pending.is_empty());
    assert_eq!(said(&mut rx), [Said::Leave(WEST_LEAVE.to_owned(), id)]);

    // The zone placed it after all and says so late: it is told to let it go.
    router.on_bus(GatewayIn::Joined(id, "west".to_owned(), Ok(())));
    assert_eq!(said(&mut rx), [Said::Leave(WEST_LEAVE.to_owned(), id)]);
    assert!(router.players.is_empty());
}

#[test]
fn joins_and_leaves_are_not_dropped_when_inputs_fill_the_bus_queue() {
    // 64 slots: 4 of them only joins and leaves may take.
    let (mut router, mut rx) = router(64);
    let (ada, _kicks) = live(&mut router, &mut rx, 1, "ada");
    // NATS is away: nothing leaves the queue while ada keeps moving.
    for seq in 1..=200 {
        router.handle(ToWorld::Input {
            session: 1,
            input: protocol::Input {
                seq,
                ack_tick: None,
                command: Command::MoveTo { x: 6.0, y: 6.0 },
            },
        });
    }
    assert_eq!(router.outbox.take_dropped_inputs(), 200 - 60);
    // Ten logins and ada's leave: more than the reserve holds.
    let mut answers = Vec::new();
    for session in 10..20 {
        answers.push(ask(&mut router, session, &format!("p{session}")));
    }
    router.handle(ToWorld::Leave {
        session: 1,
        claim: None,
    });
    assert!(router.outbox.backlog() > 0);
    // A login after the leave waits behind it.
    let _bob = ask(&mut router, 30, "bob");
    assert_eq!(router.pending.len(), 11);

    // NATS is back: the publisher drains the queue, the router hands it the backlog.
    let mut all = said(&mut rx);
    while router.outbox.backlog() > 0 {
        router.tick();
        all.extend(said(&mut rx));
    }
    let inputs = all
        .iter()
        .filter(|s| matches!(s, Said::Input(id, _) if *id == ada))
        .count();
    assert_eq!(inputs, 60);
    let rest: Vec<&Said> = all
        .iter()
        .filter(|s| !matches!(s, Said::Input(..)))
        .collect();
    let accounts: Vec<String> = rest
        .iter()
        .filter_map(|s| match s {
            Said::Join(_, account) => Some(account.clone()),
            _ => None,
        })
        .collect();
    let mut expected: Vec<String> = (10..20).map(|s| format!("p{s}")).collect();
    expected.push("bob".to_owned());
    assert_eq!(accounts, expected, "joins lost or out of order");
    // Ada's leave after the ten joins asked before it, before bob's.
    let leave_at = rest
        .iter()
        .position(|s| **s == Said::Leave(WEST_LEAVE.to_owned(), ada))
        .expect("ada's leave was dropped");
    assert_eq!(leave_at, 10);
}

/// With `MAX_BACKLOG` joins and leaves waiting for the bus queue, a new login is refused at
/// once (server full) and its account is not held; a leave of a player in the game still
/// waits, never dropped; once the queue drains, logins are taken again.
#[test]
fn logins_are_refused_while_the_backlog_is_full_and_leaves_still_wait() {
    let (mut router, mut rx) = router(64);
    let (ada, _kicks) = live(&mut router, &mut rx, 1, "ada");
    // NATS is away: 64 joins fill the queue, the next `MAX_BACKLOG` wait.
    let mut waiting = Vec::new();
    for session in 0..64 + super::outbox::MAX_BACKLOG as u64 {
        waiting.push(ask(&mut router, 100 + session, &format!("p{session}")));
    }
    assert_eq!(router.outbox.backlog(), super::outbox::MAX_BACKLOG);
    let (mut refused, _kicks) = ask(&mut router, 99, "late");
    assert!(
        matches!(refused.try_recv(), Ok(Err(DisconnectReason::ServerFull))),
        "a login was taken with the backlog full"
    );
    // Ada logs out: her leave waits behind the joins.
    router.handle(ToWorld::Leave {
        session: 1,
        claim: None,
    });
    assert_eq!(router.outbox.backlog(), super::outbox::MAX_BACKLOG + 1);

    // NATS is back: everything asked for reaches the bus, in order, ada's leave last.
    let mut all = said(&mut rx);
    while router.outbox.backlog() > 0 {
        router.tick();
        all.extend(said(&mut rx));
    }
    assert_eq!(all.len(), 64 + super::outbox::MAX_BACKLOG + 1);
    assert_eq!(all.last(), Some(&Said::Leave(WEST_LEAVE.to_owned(), ada)));
    assert!(
        !all.iter()
            .any(|s| matches!(s, Said::Join(_, a) if a == "late"))
    );
    // The refused account was not held: it can log in now.
    let _again = ask(&mut router, 98, "late");
    assert!(
        said(&mut rx)
            .iter()
            .any(|s| matches!(s, Said::Join(_, a) if a == "late")),
        "the refused account cannot log in again"
    );
}

#[test]
fn a_fresh_id_is_never_one_in_use_after_the_counter_comes_round() {
    let (mut router, mut rx) = router(64);
    router.next_id = ID_COUNTER;
    let (ada, _kicks) = live(&mut router, &mut rx, 1, "ada");
    assert_eq!(ada.index & ID_COUNTER, ID_COUNTER);
    // Ids minted since, until the counter is about to come round onto ada's again.
    let (_, _waiting) = ask(&mut router, 2, "bob");
    let [Said::Join(bob, _)] = said(&mut rx)[..] else {
        panic!("no join on the bus");
    };
    assert_eq!(bob.index & ID_COUNTER, 0);
    router.next_id = ID_COUNTER;
    let (mut answer, _kicks) = ask(&mut router, 3, "cy");
    let [Said::Join(cy, _)] = said(&mut rx)[..] else {
        panic!("no join on the bus");
    };
    assert_ne!(cy, ada, "minted the id of a live player");
    assert_ne!(cy, bob, "minted the id of a waiting join");
    // Cy's answer is cy's, not taken for a rejoin of ada.
    router.on_bus(GatewayIn::Joined(cy, "west".to_owned(), Ok(())));
    router.on_bus(west_frame(&[ada, cy]));
    router.tick();
    assert_eq!(answer.try_recv().unwrap().unwrap().entity, cy);
    let ids: Vec<NetId> = router.players.values().map(|p| p.id).collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
}

#[test]
fn a_character_whose_save_cannot_be_loaded_again_ends_its_session() {
    let (mut router, mut rx) = router(64);
    let (ada, mut kicks) = live(&mut router, &mut rx, 1, "ada");
    let end = crate::session::load_refused(&crate::persist::LoadError::Unavailable);
    router.on_bus(GatewayIn::LoadRefused(
        ada,
        Kick {
            reason: end.reason,
            text: end.text.clone(),
        },
    ));
    let kick = kicks.try_recv().expect("the session was not ended");
    assert_eq!(kick.reason, DisconnectReason::Internal);
    assert_eq!(kick.text, end.text);
}

/// A gateway asking for a character again (its zone died) whose store cannot answer
/// refuses it instead of placing it where it last saw it.
#[tokio::test]
async fn a_rejoin_the_store_cannot_load_is_refused_not_placed() {
    let dir = std::env::temp_dir().join(format!("mmo-gateway-reload-{}", std::process::id()));
    let spec = store::StoreSpec::Embedded { dir: dir.clone() };
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let (persist, writer) = crate::persist::Persist::start(&spec, metrics).unwrap();
    // The writer stopped: every load is `Unavailable`.
    writer.stop();
    let id = NetId {
        index: super::PLAYER_BIT | 7,
        generation: 1,
    };
    let request = JoinRequest {
        gateway: "gw1".to_owned(),
        id,
        account: "ada".to_owned(),
        at: [5.0, 5.0],
        login: 0,
        epoch: 0,
    };
    let refused = super::bus_io::reload_position(request.clone(), true, Some(&persist)).await;
    let _ = std::fs::remove_dir_all(&dir);
    match refused {
        Err(GatewayIn::LoadRefused(refused_id, kick)) => {
            assert_eq!(refused_id, id);
            assert_eq!(kick.reason, DisconnectReason::Internal);
            assert!(
                kick.text.contains("unavailable; try again"),
                "{}",
                kick.text
            );
        }
        Err(other) => panic!("expected a refusal, got {other:?}"),
        Ok(request) => panic!("placed at {:?} without its saved state", request.at),
    }
    // A first join loads nothing here (the session did): it goes ahead.
    let first = super::bus_io::reload_position(request, false, Some(&persist)).await;
    assert!(first.is_ok());
}

/// A character asked for again takes an epoch above every save of its login in the
/// store, so that the saves of the zone that takes it are not taken for older ones; a
/// save of another login, or a login the store does not number, changes nothing.
#[tokio::test]
async fn a_rejoin_takes_an_epoch_above_its_logins_saves() {
    let dir = std::env::temp_dir().join(format!("mmo-gateway-epoch-{}", std::process::id()));
    let spec = store::StoreSpec::Embedded { dir: dir.clone() };
    {
        let mut store = store::open(&spec).unwrap();
        store
            .save_batch(&[store::Save {
                account: "ada".to_owned(),
                name: "ada".to_owned(),
                pos: [3.0, 4.0],
                map: "room".to_owned(),
                now_ms: 1,
                order: Some(store::SaveOrder {
                    session: 5,
                    epoch: 9,
                }),
            }])
            .unwrap();
    }
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let (persist, writer) = crate::persist::Persist::start(&spec, metrics).unwrap();
    let request = |login: u64, epoch: u32| JoinRequest {
        gateway: "gw1".to_owned(),
        id: NetId {
            index: super::PLAYER_BIT | 7,
            generation: 1,
        },
        account: "ada".to_owned(),
        at: [5.0, 5.0],
        login,
        epoch,
    };
    let epoch = |r: Result<JoinRequest, GatewayIn>| r.map(|r| (r.at, r.epoch)).ok();
    let reload = super::bus_io::reload_position;
    let p = Some(&persist);
    assert_eq!(
        epoch(reload(request(5, 2), true, p).await),
        Some(([3.0, 4.0], 10))
    );
    assert_eq!(
        epoch(reload(request(5, 12), true, p).await),
        Some(([3.0, 4.0], 12))
    );
    assert_eq!(
        epoch(reload(request(6, 1), true, p).await),
        Some(([3.0, 4.0], 1))
    );
    assert_eq!(
        epoch(reload(request(0, 1), true, p).await),
        Some(([3.0, 4.0], 1))
    );
    writer.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A spawn point off the map, or with no open ground within its spread, finds no spawn
/// point (`server gateway` then refuses to start, as `server run` does); one on open
/// ground finds some.
#[test]
fn a_spawn_point_off_the_ground_finds_no_spawn_point() {
    let rows = vec![".".repeat(40); 20].join("\n");
    let map = format!("type octile\nheight 20\nwidth 40\nmap\n{rows}\n");
    let mesh = build_source("open", &map, SourceKind::Grid).unwrap().mesh;
    let file = Arc::new(
        ClusterFile::from_toml(
            "npcs = 0\nnats = \"nats://127.0.0.1:4222\"\n\
             [[zones]]\nname = \"west\"\nregion = [0.0, 0.0, 40.0, 20.0]\n\
             [[gateways]]\nname = \"gw1\"\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"127.0.0.1:0\"\n",
        )
        .unwrap(),
    );
    let view = ViewRange {
        radius_m: 10.0,
        hysteresis_m: 1.0,
    };
    let count = |spawn_point| {
        let (tx, _rx) = mpsc::channel(16);
        Router::new(Arc::clone(&file), 0, &mesh, view, spawn_point, tx).spawn_point_count()
    };
    assert_eq!(count(Some(((500.0, 500.0), 8.0))), 0);
    assert!(count(Some(((20.0, 10.0), 4.0))) > 0);
    assert!(count(None) > 0);
}

/// A frame under a name the cluster file does not give a zone shows its bodies to no
/// client and is not kept.
#[test]
fn a_frame_from_a_zone_the_file_does_not_name_is_ignored() {
    let (mut router, _rx) = router(16);
    let GatewayIn::Frame(mut frame) = west_frame(&[NetId {
        index: (1 << 31) | 7,
        generation: 1,
    }]) else {
        panic!("a frame")
    };
    frame.zone = "nowhere".to_owned();
    router.on_bus(GatewayIn::Frame(frame));
    assert!(router.frames.is_empty());
    router.on_bus(west_frame(&[]));
    assert_eq!(router.frames.keys().collect::<Vec<_>>(), ["west"]);
}

/// Session `session` of account `name`, login `login`, asks for its character, which the
/// store holds at 5, 5 with a save of order `saved`: the join's request.
fn ask_saved(
    router: &mut Router,
    rx: &mut mpsc::Receiver<GatewayOut>,
    (session, name, login): (u64, &str, u64),
    saved: Option<store::SaveOrder>,
) -> (JoinRequest, Answer) {
    let (reply, answer) = oneshot::channel();
    let (kick, _kicks) = mpsc::channel(4);
    router.handle(ToWorld::Join {
        session,
        name: name.to_owned(),
        login,
        resume_at: Some(sim::Vec2::new(5.0, 5.0)),
        saved_order: saved,
        spectate: None,
        sink: Box::new(NoSink),
        kick,
        reply,
    });
    match rx.try_recv() {
        Ok(GatewayOut::Join { request, .. }) => (request, answer),
        other => panic!("no join on the bus: {other:?}"),
    }
}

/// A login right after a logout goes on from where the gateway last saw the character
/// while the store does not hold the zone's save of the leave yet (a zone cut off from the
/// store keeps it until it reaches it), and from the store once it does.
#[test]
fn a_login_after_a_logout_goes_on_from_the_last_position_the_store_lacks() {
    let order = |session, epoch| Some(store::SaveOrder { session, epoch });
    // Stored: a save of login 7 at epoch 1 (before the leave), the gateway's own of
    // where it last saw the character (epoch 2), the zone's of the leave (epoch 3), the
    // next login's.
    for (stored, goes_on_from) in [
        (None, [8.0, 6.0]),
        (order(7, 1), [8.0, 6.0]),
        (order(7, 2), [8.0, 6.0]),
        (order(7, 3), [5.0, 5.0]),
        (order(8, 0), [5.0, 5.0]),
    ] {
        let (mut router, mut rx) = router(64);
        let (request, mut answer) = ask_saved(&mut router, &mut rx, (1, "ada", 7), order(6, 0));
        assert_eq!(request.at, [5.0, 5.0]);
        let id = request.id;
        router.on_bus(GatewayIn::Joined(id, "west".to_owned(), Ok(())));
        // It walks to 8, 6 (epoch 1 in west), and logs out.
        let GatewayIn::Frame(mut frame) = west_frame(&[id]) else {
            unreachable!()
        };
        frame.bodies[0].pos = [8.0, 6.0];
        router.on_bus(GatewayIn::Frame(frame));
        router.tick();
        assert!(answer.try_recv().unwrap().is_ok());
        while rx.try_recv().is_ok() {}
        router.handle(ToWorld::Leave {
            session: 1,
            claim: None,
        });
        assert_eq!(said(&mut rx), [Said::Leave(WEST_LEAVE.to_owned(), id)]);
        // Logs in again (login 8), the store holding `stored`.
        let (again, _answer) = ask_saved(&mut router, &mut rx, (2, "ada", 8), stored);
        assert_eq!(again.at, goes_on_from, "stored {stored:?}");
        assert_eq!(again.login, 8);
        // Used once: a third login goes by the store.
        router.handle(ToWorld::Leave {
            session: 2,
            claim: None,
        });
        while rx.try_recv().is_ok() {}
        let (third, _answer) = ask_saved(&mut router, &mut rx, (3, "ada", 9), order(7, 1));
        assert_eq!(third.at, [5.0, 5.0]);
    }
}

/// Of two real claims on one id in the zones' frames, the zone of the older one is told
/// it is superseded (at most once a second while the frames show both); frames that
/// agree tell nobody anything.
#[test]
fn a_zone_holding_an_older_real_claim_is_told_it_is_superseded() {
    let (mut router, mut rx) = router(64);
    let id = NetId {
        index: super::PLAYER_BIT | 3,
        generation: 1,
    };
    let frame = |zone: &str, epoch: u32, custody: Custody| {
        let GatewayIn::Frame(mut frame) = west_frame(&[id]) else {
            unreachable!()
        };
        frame.zone = zone.to_owned();
        frame.bodies[0].epoch = epoch;
        frame.bodies[0].custody = custody;
        GatewayIn::Frame(frame)
    };
    let superseded = |rx: &mut mpsc::Receiver<GatewayOut>| {
        let mut told = Vec::new();
        while let Ok(out) = rx.try_recv() {
            if let GatewayOut::Publish(subject, BusMessage::Superseded(s)) = out {
                told.push((subject, s.id, s.epoch));
            }
        }
        told
    };
    // East holds it in flight, west real: nothing to tell.
    router.on_bus(frame("west", 1, Custody::Real));
    router.on_bus(frame("east", 2, Custody::InFlight));
    router.tick();
    assert!(superseded(&mut rx).is_empty());
    // East holds it real at a far newer epoch (the gateway asked for it again): west is
    // told, once a second.
    router.on_bus(frame("east", 4097, Custody::Real));
    router.tick();
    assert_eq!(superseded(&mut rx), [(WEST_LEAVE.to_owned(), id, 4097)]);
    router.tick();
    assert!(superseded(&mut rx).is_empty());
    for told in router.told.values_mut() {
        *told -= Duration::from_secs(1);
    }
    router.tick();
    assert_eq!(superseded(&mut rx).len(), 1);
    // West dropped it.
    let GatewayIn::Frame(mut west) = west_frame(&[]) else {
        unreachable!()
    };
    west.tick = 2;
    router.on_bus(GatewayIn::Frame(west));
    router.tick();
    assert!(superseded(&mut rx).is_empty());
}

/// A session that leaves while its join waits (its leave may reach the zone before the
/// join, and be forgotten there), and a zone whose answer comes too late or never (the
/// request timed out): the zone is told again to let the character go, as when a join
/// someone waits for is refused.
#[test]
fn a_refused_join_nobody_waits_for_still_lets_the_character_go() {
    let (mut router, mut rx) = router(64);
    let (_answer, _kicks) = ask(&mut router, 1, "ada");
    let [Said::Join(id, _)] = said(&mut rx)[..] else {
        panic!("no join on the bus");
    };
    router.handle(ToWorld::Leave {
        session: 1,
        claim: None,
    });
    assert_eq!(said(&mut rx), [Said::Leave(WEST_LEAVE.to_owned(), id)]);
    let late = Err("zone west: request timed out".to_owned());
    router.on_bus(GatewayIn::Joined(id, "west".to_owned(), late));
    assert_eq!(
        said(&mut rx),
        [Said::Leave(WEST_LEAVE.to_owned(), id)],
        "no leave for a character the zone may hold"
    );
}

/// A player who logs out while west offers its character to east: east, whose frame shows
/// it real, and west, whose frame shows it in flight (and which takes it back should
/// east's answer be lost), are both told to let it go.
#[test]
fn a_leave_goes_to_every_zone_whose_frame_shows_the_character() {
    let (mut router, mut rx) = router(64);
    let (id, _kicks) = live(&mut router, &mut rx, 1, "ada");
    let frame = |zone: &str, custody: Custody| {
        let GatewayIn::Frame(mut frame) = west_frame(&[id]) else {
            unreachable!()
        };
        frame.zone = zone.to_owned();
        frame.tick = 2;
        frame.bodies[0].epoch = 2;
        frame.bodies[0].custody = custody;
        frame.bodies[0].pos = [20.5, 5.0];
        GatewayIn::Frame(frame)
    };
    router.on_bus(frame("west", Custody::InFlight));
    router.on_bus(frame("east", Custody::Real));
    router.tick();
    assert!(said(&mut rx).is_empty());
    router.handle(ToWorld::Leave {
        session: 1,
        claim: None,
    });
    let told = said(&mut rx);
    assert_eq!(told.len(), 2, "{told:?}");
    for zone in ["east", "west"] {
        let leave = Said::Leave(format!("mmo.zone.{zone}.leave"), id);
        assert!(told.contains(&leave), "{zone} not told: {told:?}");
    }
}

/// A stopping gateway tells the zones to let go of the characters whose sessions the
/// shutdown cut short (they sent no leave): its players' and those of the joins still
/// waiting, each once.
#[test]
fn a_stopping_gateway_lets_every_character_go() {
    let (mut router, mut rx) = router(64);
    let (ada, _kicks) = live(&mut router, &mut rx, 1, "ada");
    let (_answer, _bo_kicks) = ask(&mut router, 2, "bo");
    let [Said::Join(bo, _)] = said(&mut rx)[..] else {
        panic!("no join on the bus");
    };
    router.let_everyone_go();
    let told = said(&mut rx);
    assert_eq!(told.len(), 2, "{told:?}");
    for id in [ada, bo] {
        assert!(
            told.contains(&Said::Leave(WEST_LEAVE.to_owned(), id)),
            "{told:?}"
        );
    }
    router.let_everyone_go();
    assert!(said(&mut rx).is_empty(), "told twice");
}

/// A character asked for again whose join fails (last seen in east's region within the
/// handoff margin, still real in west when west died; its saved position, in west, sends
/// the join to west, which answers "no responders") is asked for again only once it has
/// been missing [`REJOIN_AFTER`] anew: not at every tick, each time with a store load, a
/// NATS request and its epoch raised.
#[test]
fn a_failed_rejoin_waits_before_it_is_asked_again() {
    let (mut router, mut rx) = router(1024);
    let (id, _kicks) = live(&mut router, &mut rx, 1, "ada");
    let GatewayIn::Frame(mut f) = west_frame(&[id]) else {
        unreachable!("a frame")
    };
    f.bodies[0].pos = [21.0, 5.0];
    router.on_bus(GatewayIn::Frame(f));
    router.tick();
    while rx.try_recv().is_ok() {}
    // West is killed: its last frame ages past ZONE_STALE; east goes on publishing.
    for (_, at) in router.frames.values_mut() {
        *at -= Duration::from_secs(2);
    }
    let east = ZoneFrame {
        zone: "east".to_owned(),
        incarnation: 2,
        tick: 1,
        bodies: Vec::new(),
        applied: Vec::new(),
    };
    let mut asked = 0;
    for tick in 0..20 {
        router.on_bus(GatewayIn::Frame(Box::new(east.clone())));
        if tick == 1 {
            // Missing (since the last tick) long enough to be asked for at once.
            for player in router.players.values_mut() {
                if let Some(since) = player.missing_since.as_mut() {
                    *since -= REJOIN_AFTER * 2;
                }
            }
        }
        router.tick();
        while let Ok(out) = rx.try_recv() {
            if let GatewayOut::Join { reload: true, .. } = out {
                asked += 1;
                let why = Err("zone west: no responders".to_owned());
                router.on_bus(GatewayIn::Joined(id, "west".to_owned(), why));
            }
        }
    }
    assert_eq!(asked, 1, "asked again at every tick");
}
