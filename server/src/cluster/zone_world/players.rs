//! A zone's players: joins from gateways, their commands, leaves, and their saves.

use protocol::NetId;
use protocol::bus::{BusMessage, JoinReply, JoinRequest};
use sim::{Brain, Input, Kind, Vec2};

use super::{Spawning, ZoneOut, ZoneWorld};
use crate::cluster::bus::Verb;
use crate::game::{RADIUS_M, SPEED_MPS, command_input};
use crate::persist::now_ms;

impl ZoneWorld {
    pub(super) fn join(&mut self, request: JoinRequest, reply: Option<String>) {
        if self.reals.contains_key(&request.id) || self.in_flight.contains_key(&request.id) {
            // Asked again (the gateway's first answer was lost): it is here already.
            if let Some(reply) = reply {
                self.answers.push(ZoneOut::Publish(
                    reply,
                    BusMessage::Joined(JoinReply {
                        id: request.id,
                        refused: None,
                    }),
                ));
            }
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
        let Some(pos) = pos else {
            if let Some(reply) = reply {
                self.answers.push(ZoneOut::Publish(
                    reply,
                    BusMessage::Joined(JoinReply {
                        id: request.id,
                        refused: Some(format!("no walkable point near {:?}", request.at)),
                    }),
                ));
            }
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
        self.spawning.push(Spawning::Join(request, reply));
    }

    pub(super) fn leave(&mut self, id: NetId) {
        if let Some(mut real) = self.reals.remove(&id) {
            if let (Some(saver), Some(player), Some(body)) = (
                self.saver.as_mut(),
                real.player.as_mut(),
                self.world.body(real.local),
            ) {
                player.last_saved = None;
                let pos = [body.pos.x, body.pos.y];
                saver.record(
                    &player.account,
                    &player.account,
                    pos,
                    &mut player.last_saved,
                    now_ms(),
                );
                saver.flush();
            }
            self.inputs.push(Input::Despawn(real.local));
        } else if let Some(flight) = self.in_flight.get(&id) {
            let to = flight.to.clone();
            self.forward(
                &to,
                Verb::Leave,
                BusMessage::Leave(protocol::bus::PlayerLeave { id }),
            );
        } else if let Some((to, _)) = self.handed_to.get(&id).cloned() {
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
            saver.record(
                &player.account,
                &player.account,
                pos,
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
    }
}
