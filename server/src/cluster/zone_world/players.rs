//! A zone's players: joins from gateways, their commands, leaves, and their saves.

use protocol::NetId;
use protocol::bus::{BusMessage, JoinRequest};
use sim::{Brain, Input, Kind, Vec2};

use tracing::warn;

use super::{LEFT_AHEAD_MAX, PLAYER_BIT, Spawning, ZoneWorld};
use crate::cluster::bus::Verb;
use crate::game::{RADIUS_M, SPEED_MPS, command_input};
use crate::persist::now_ms;
use crate::session::login;

/// Characters of a refused account shown in the log and the refusal.
const SHOWN_ACCOUNT_CHARS: usize = 40;

/// Why `account`, as it came from the bus (a join, a handoff's player), cannot be a
/// player's here; `None` when it can. The rules are a login's ([`login::check`]: 1 to
/// `MAX_NAME_CHARS` characters, no control character), which every gateway applied
/// before asking, and which keep an account within what the character store accepts: a
/// save the store refuses would be dropped, the character's progress with it.
pub(super) fn account_problem(account: &str) -> Option<String> {
    let rejected = login::check(account, None, None, 0).err()?;
    let mut shown: String = account.chars().take(SHOWN_ACCOUNT_CHARS).collect();
    if shown.len() < account.len() {
        shown.push('…');
    }
    Some(format!("bad account {shown:?}: {}", rejected.end.text))
}

impl ZoneWorld {
    pub(super) fn join(&mut self, request: JoinRequest, reply: Option<String>) {
        if let Some(why) = account_problem(&request.account) {
            warn!(zone = %self.spec.name, id = ?request.id, gateway = %request.gateway, %why, "join refused");
            self.answer_join(reply, request.id, Some(why));
            return;
        }
        if self.reals.contains_key(&request.id) || self.in_flight.contains_key(&request.id) {
            // Asked again (the gateway's first answer was lost): it is here already.
            self.answer_join(reply, request.id, None);
            return;
        }
        // Placed at the next tick, after its ghosts are synced from the neighbours'
        // newest frames, and only once every neighbour has been heard from: a zone
        // started again, whose players the gateways ask for at once, would otherwise put
        // them on the neighbours' bodies at its edge. Asked again meanwhile: the newer
        // reply subject is answered.
        self.deferred_joins.retain(|(r, _)| r.id != request.id);
        self.deferred_joins.push((request, reply));
    }

    /// Puts a joining character on a free spot near where it asked to appear (see
    /// [`ZoneWorld::join`]; the tick calls this after syncing the ghosts).
    pub(super) fn place_join(&mut self, request: JoinRequest, reply: Option<String>) {
        if let Some(why) = self.no_room(false) {
            warn!(zone = %self.spec.name, id = ?request.id, %why, "join refused");
            self.answer_join(reply, request.id, Some(why));
            return;
        }
        let [x, y] = request.at;
        let pos = if x.is_finite() && y.is_finite() {
            let wanted = navmesh::Point::new(f64::from(x), f64::from(y));
            self.world
                .mesh()
                .nearest_point(wanted, 1e3)
                .map(|(p, _)| Vec2::new(p.x as f32, p.y as f32))
        } else {
            None
        };
        let pos = pos.map(|wanted| self.free_spot(wanted));
        let Some(pos) = pos else {
            let why = format!("no walkable point near {:?}", request.at);
            self.answer_join(reply, request.id, Some(why));
            return;
        };
        if let Some((ghost, _)) = self.ghosts.remove(&request.id) {
            self.inputs.push(Input::Despawn(ghost));
        }
        self.inputs.push(Input::Spawn {
            kind: Kind::Player,
            pos,
            radius_m: RADIUS_M,
            speed_mps: SPEED_MPS,
            brain: Brain::Idle,
        });
        self.spawned_for(Spawning::Join(request, reply));
    }

    /// A point near `wanted` where a joining character overlaps no body: the zone's own
    /// bodies and ghosts, and the bodies spawned or taken over in this tick's inputs
    /// ([`crate::sample::free_spot`]).
    fn free_spot(&self, wanted: Vec2) -> Vec2 {
        crate::sample::free_spot(self.world.mesh(), wanted, self.occupied())
    }

    pub(super) fn leave(&mut self, id: NetId) {
        self.deferred_joins.retain(|(r, _)| r.id != id);
        if let Some(mut real) = self.reals.remove(&id) {
            if let (Some(saver), Some(player), Some(body)) = (
                self.saver.as_mut(),
                real.player.as_mut(),
                self.world.body(real.local),
            ) {
                player.last_saved = None;
                let pos = [body.pos.x, body.pos.y];
                // A leave's save carries the epoch plus two: newer than every save this
                // login made, the gateway's save of where it last saw the character
                // (epoch plus one) included, so that the gateway can tell whether the
                // store holds it yet (`gateway::departed`).
                let order = player.order(real.epoch.saturating_add(2));
                saver.record(
                    &player.account,
                    &player.account,
                    pos,
                    order,
                    &mut player.last_saved,
                    now_ms(),
                );
                saver.flush();
            }
            self.inputs.push(Input::Despawn(real.local));
            return;
        }
        // Not real here: offered to a neighbour (which may refuse it, and then it is taken
        // back), handed over, or taken over and spawning this tick. The leave follows it,
        // and is remembered should the body become real here after all
        // ([`ZoneWorld::make_real`]). A player's leave for a body this zone has not heard
        // of is remembered too: a neighbour forwards the leave of a body it is offering
        // here, and the offer (a request of its own) may come after it. Player ids are
        // never given again, so a remembered leave cannot end a later login.
        let to = (self.in_flight.get(&id).map(|flight| flight.to.clone()))
            .or_else(|| self.handed_to.get(&id).map(|(to, _)| to.clone()));
        let ahead = id.index & PLAYER_BIT != 0 && self.left.len() < LEFT_AHEAD_MAX;
        if to.is_some() || self.spawning_epoch(id).is_some() || ahead {
            self.left.insert(id, self.ticks);
        }
        if let Some(to) = to {
            self.forward(
                &to,
                Verb::Leave,
                BusMessage::Leave(protocol::bus::PlayerLeave { id }),
            );
        }
    }

    pub(super) fn players_commands(&mut self) {
        for real in self.reals.values_mut() {
            let Some(player) = real.player.as_mut() else {
                continue;
            };
            if let Some(seq) = player.taken_seq {
                player.applied_seq = seq;
            }
            let Some(command) = player.pending.take() else {
                continue;
            };
            if let Some(input) = command_input(&self.world, real.local, command) {
                self.inputs.push(input);
            }
        }
    }

    pub(super) fn save_moved(&mut self) {
        let Some(saver) = self.saver.as_mut() else {
            return;
        };
        let now = now_ms();
        for real in self.reals.values_mut() {
            let (Some(player), Some(body)) = (real.player.as_mut(), self.world.body(real.local))
            else {
                continue;
            };
            let pos = [body.pos.x, body.pos.y];
            let order = player.order(real.epoch);
            saver.record(
                &player.account,
                &player.account,
                pos,
                order,
                &mut player.last_saved,
                now,
            );
        }
        saver.flush();
    }

    /// Saves every player where it stands (the zone is stopping).
    pub(crate) fn save_everyone(&mut self) {
        for real in self.reals.values_mut() {
            if let Some(player) = real.player.as_mut() {
                player.last_saved = None;
            }
        }
        self.save_moved();
        if let Some(saver) = self.saver.as_mut() {
            saver.hand_over_all(crate::persist::HAND_OVER_PATIENCE);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use navmesh_builder::load::build_source;
    use navmesh_builder::pipeline::SourceKind;
    use protocol::NetId;
    use protocol::bus::JoinRequest;

    use protocol::bus::{BusMessage, Handoff, HandoffAck, HandoffPlayer, JoinReply};

    use super::super::{PLAYER_BIT, ZoneIn, ZoneOut, ZoneWorld};
    use crate::cluster::ClusterFile;
    use crate::cluster::carry::carried_body;
    use crate::game::RADIUS_M;

    /// A 30 m square room in one zone, no NPCs.
    fn zone() -> ZoneWorld {
        let row = ".".repeat(30);
        let rows = vec![row; 30].join("\n");
        let text = format!("type octile\nheight 30\nwidth 30\nmap\n{rows}\n");
        let mesh = build_source("room", &text, SourceKind::Grid).unwrap().mesh;
        let file = ClusterFile::from_toml(
            "npcs = 0\nnats = \"nats://127.0.0.1:4222\"\n\
             [[zones]]\nname = \"all\"\nregion = [0, 0, 30, 30]\n\
             [[zones]]\nname = \"far\"\nregion = [900, 900, 930, 930]\n",
        )
        .unwrap();
        ZoneWorld::new(Arc::new(mesh), Arc::new(file), 0, 1, None)
    }

    fn request(n: u32, at: [f32; 2]) -> JoinRequest {
        JoinRequest {
            gateway: "gw".to_owned(),
            id: NetId {
                index: PLAYER_BIT | n,
                generation: 1,
            },
            account: format!("p{n}"),
            at,
            login: 0,
            epoch: 0,
        }
    }

    #[test]
    fn players_joining_on_one_point_land_apart_and_near_it() {
        let mut zone = zone();
        // Three in one tick, two more on the next, all asking for the same point.
        for n in 0..3 {
            zone.join(request(n, [15.0, 15.0]), None);
        }
        zone.tick();
        for n in 3..5 {
            zone.join(request(n, [15.0, 15.0]), None);
        }
        zone.tick();
        let at: Vec<sim::Vec2> = zone.world.bodies().map(|b| b.pos).collect();
        assert_eq!(at.len(), 5);
        for (i, a) in at.iter().enumerate() {
            assert!(
                (*a - sim::Vec2::new(15.0, 15.0)).length() <= 4.0 + 0.5,
                "{a:?}"
            );
            for b in &at[i + 1..] {
                assert!((*a - *b).length() >= 2.0 * RADIUS_M, "{a:?} {b:?}");
            }
        }
    }

    /// Accounts no login may have: empty, with a NUL or another control character, too
    /// long for a name (and, at 300 bytes, for the store).
    fn bad_accounts() -> Vec<String> {
        vec![
            String::new(),
            "nul\0here".to_owned(),
            "line\nbreak".to_owned(),
            "x".repeat(300),
        ]
    }

    /// What the zone answered on `subject` so far.
    fn answers_on(zone: &ZoneWorld, subject: &str) -> Vec<BusMessage> {
        zone.answers
            .iter()
            .filter_map(|out| match out {
                ZoneOut::Publish(s, message) if s == subject => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_join_with_an_account_no_login_may_have_is_refused_and_others_still_join() {
        let mut zone = zone();
        for (n, account) in bad_accounts().into_iter().enumerate() {
            let mut join = request(n as u32, [15.0, 15.0]);
            join.account = account.clone();
            let id = join.id;
            let reply = format!("reply.{n}");
            zone.join(join, Some(reply.clone()));
            match answers_on(&zone, &reply).as_slice() {
                [
                    BusMessage::Joined(JoinReply {
                        id: answered,
                        refused: Some(why),
                    }),
                ] => {
                    assert_eq!(*answered, id);
                    assert!(why.starts_with("bad account"), "{why}");
                    assert!(
                        why.len() < 200,
                        "the refusal echoes the whole account: {why}"
                    );
                }
                other => panic!("account {account:?}: expected a refusal, got {other:?}"),
            }
        }
        zone.join(request(9, [15.0, 15.0]), Some("reply.ok".to_owned()));
        for _ in 0..2 {
            zone.tick();
        }
        let accounts: Vec<&str> = zone
            .reals
            .values()
            .filter_map(|r| r.player.as_ref())
            .map(|p| p.account.as_str())
            .collect();
        assert_eq!(accounts, ["p9"]);
    }

    #[test]
    fn a_handoff_of_a_player_with_an_account_no_login_may_have_is_refused() {
        // A body to hand over: a player joined in another zone of the same map.
        let mut from = zone();
        from.join(request(1, [15.0, 15.0]), None);
        from.tick();
        let (&id, real) = from.reals.iter().next().expect("joined");
        let body = carried_body(&from.world.carry(real.local).expect("a body"));
        for (n, account) in bad_accounts().into_iter().enumerate() {
            let mut to = zone();
            let reply = format!("ack.{n}");
            let handoff = Handoff {
                from: "far".to_owned(),
                id,
                epoch: 1,
                player: Some(HandoffPlayer {
                    account: account.clone(),
                    applied_seq: 0,
                    login: 0,
                }),
                body: body.clone(),
            };
            to.handle(ZoneIn::Handoff(Box::new(handoff), Some(reply.clone())));
            match answers_on(&to, &reply).as_slice() {
                [
                    BusMessage::HandoffAck(HandoffAck {
                        refused: Some(why), ..
                    }),
                ] => assert!(why.starts_with("bad account"), "{why}"),
                other => panic!("account {account:?}: expected a refusal, got {other:?}"),
            }
            to.tick();
            assert!(to.reals.is_empty(), "account {account:?} was taken over");
        }
        // The same body with a good account is taken.
        let mut to = zone();
        let handoff = Handoff {
            from: "far".to_owned(),
            id,
            epoch: 1,
            player: Some(HandoffPlayer {
                account: "p1".to_owned(),
                applied_seq: 0,
                login: 0,
            }),
            body,
        };
        to.handle(ZoneIn::Handoff(Box::new(handoff), None));
        to.tick();
        assert_eq!(to.reals.len(), 1);
    }

    /// A zone's saves carry their order: the login the gateway numbered and the
    /// character's epoch here, from a join or a handoff; the save of a leave, the epoch
    /// plus two (newer than every other save of that login).
    #[test]
    fn a_zones_saves_carry_the_login_and_the_epoch() {
        use std::sync::Arc as StdArc;
        use store::SaveOrder;
        let dir = std::env::temp_dir().join(format!(
            "mmo-zone-save-order-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let spec = store::StoreSpec::Embedded { dir: dir.clone() };
        let metrics = StdArc::new(crate::metrics::Metrics::new());
        let (persist, writer) = crate::persist::Persist::start(&spec, metrics).unwrap();
        let row = ".".repeat(30);
        let text = format!(
            "type octile\nheight 30\nwidth 30\nmap\n{}\n",
            vec![row; 30].join("\n")
        );
        let mesh = Arc::new(build_source("room", &text, SourceKind::Grid).unwrap().mesh);
        let file = Arc::new(
            ClusterFile::from_toml(
                "npcs = 0\nnats = \"nats://127.0.0.1:4222\"\n\
                 [[zones]]\nname = \"all\"\nregion = [0, 0, 30, 30]\n\
             [[zones]]\nname = \"far\"\nregion = [900, 900, 930, 930]\n",
            )
            .unwrap(),
        );
        let saver = || {
            Some(crate::persist::Saver::new(
                persist.clone(),
                "room".to_owned(),
            ))
        };
        let mut zone = ZoneWorld::new(Arc::clone(&mesh), Arc::clone(&file), 0, 1, saver());
        let joined = JoinRequest {
            login: 7,
            epoch: 3,
            ..request(1, [5.0, 5.0])
        };
        let id = joined.id;
        zone.join(joined, None);
        zone.tick();
        zone.tick();
        assert_eq!(zone.reals.get(&id).map(|r| r.epoch), Some(3));
        // Taken over by another zone at the next epoch, its login carried along.
        let body = carried_body(&zone.world.carry(zone.reals[&id].local).unwrap());
        let mut next = ZoneWorld::new(mesh, file, 0, 2, saver());
        next.handle(ZoneIn::Handoff(
            Box::new(Handoff {
                from: "far".to_owned(),
                id,
                epoch: 4,
                player: Some(HandoffPlayer {
                    account: "p2".to_owned(),
                    applied_seq: 0,
                    login: 9,
                }),
                body,
            }),
            None,
        ));
        next.tick();
        zone.leave(id);
        zone.tick();
        next.save_everyone();
        // The writer's queue is written before it stops.
        writer.stop();
        drop((zone, next, persist));
        let mut store = store::open(&spec).unwrap();
        let mut order = |account: &str| store.load(account).unwrap().and_then(|c| c.order);
        assert_eq!(
            order("p1"),
            Some(SaveOrder {
                session: 7,
                epoch: 5
            })
        );
        assert_eq!(
            order("p2"),
            Some(SaveOrder {
                session: 9,
                epoch: 4
            })
        );
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A gateway that saw a newer real claim on a character elsewhere (a zone that is no
    /// neighbour of this one) has this zone drop its claim, only while it is older.
    #[test]
    fn a_claim_a_gateway_saw_superseded_is_dropped_only_while_older() {
        let mut zone = zone();
        let joined = JoinRequest {
            epoch: 5,
            ..request(1, [15.0, 15.0])
        };
        let id = joined.id;
        zone.join(joined, None);
        zone.tick();
        assert_eq!(zone.reals.get(&id).map(|r| r.epoch), Some(5));
        let bodies = |zone: &ZoneWorld| zone.world.bodies().count();
        let before = bodies(&zone);
        // Not newer: kept.
        for epoch in [3, 5] {
            zone.handle(ZoneIn::Superseded(id, epoch));
            zone.tick();
            assert!(zone.reals.contains_key(&id), "dropped for epoch {epoch}");
        }
        // Newer: dropped, its body with it; no leave is forwarded anywhere.
        zone.handle(ZoneIn::Superseded(id, 5 + 4096));
        let (_, out) = zone.tick();
        assert!(!zone.reals.contains_key(&id));
        assert_eq!(bodies(&zone), before - 1);
        assert!(
            !out.iter()
                .any(|o| matches!(o, ZoneOut::Publish(_, BusMessage::Leave(_)))),
            "{out:?}"
        );
    }
}
