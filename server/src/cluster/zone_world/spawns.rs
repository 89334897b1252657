//! Pairing a tick's spawned bodies with what each was spawned for (an NPC, a joining
//! character, an adopted or taken-back body, a ghost), by the place of the input that
//! spawned it, and telling whoever asked when the world refused one.

use protocol::NetId;
use sim::EntityId;
use tracing::{debug, error, info, warn};

use sim::Input;

use super::{Player, Real, Spawning, ZoneWorld};

impl ZoneWorld {
    /// Notes what the input just queued spawns a body for.
    pub(super) fn spawned_for(&mut self, what: Spawning) {
        self.spawning.push((self.inputs.len() - 1, what));
    }

    /// The newest epoch at which body `id` is spawning this tick (joining, taken over or
    /// taken back), if it is.
    pub(super) fn spawning_epoch(&self, id: NetId) -> Option<u32> {
        let epochs = self.spawning.iter().filter_map(|(_, what)| match what {
            Spawning::Join(request, _) if request.id == id => Some(request.epoch),
            Spawning::Adopt(handoff, _) if handoff.id == id => Some(handoff.epoch),
            Spawning::TakeBack(taken, epoch, _) if *taken == id => Some(*epoch),
            _ => None,
        });
        epochs.max()
    }

    /// Makes `real` this zone's body `id`. Should a body hold the id already (two offers
    /// of one body, or an offer and a join, spawned in one tick), the one of the older
    /// epoch is removed from the world: one id, one body. Should its player have left
    /// while the body was not real here, it leaves now, saved where it stands.
    pub(super) fn make_real(&mut self, id: NetId, real: Real) {
        let removed = match self.reals.remove(&id) {
            Some(held) if held.epoch > real.epoch => {
                let local = real.local;
                self.reals.insert(id, held);
                Some(local)
            }
            held => {
                self.reals.insert(id, real);
                held.map(|held| held.local)
            }
        };
        if let Some(local) = removed {
            let zone = &self.spec.name;
            warn!(%zone, ?id, "two bodies for one id: the older epoch's is removed");
            self.inputs.push(Input::Despawn(local));
        }
        if self.left.remove(&id).is_some() {
            info!(zone = %self.spec.name, ?id, "a player that left while in flight leaves here");
            self.leave(id);
        }
    }

    /// Pairs this tick's spawned bodies with what they were spawned for, by the place of
    /// the input that spawned each (`spawned_by`); what the world refused to spawn is
    /// refused in turn.
    pub(super) fn take_spawned(&mut self, spawned: &[EntityId], spawned_by: &[usize]) {
        let spawning = std::mem::take(&mut self.spawning);
        let mut made = spawned_by.iter().zip(spawned).peekable();
        for (at, what) in spawning {
            let Some((_, &local)) = made.next_if(|&(&by, _)| by == at) else {
                self.not_spawned(what);
                continue;
            };
            match what {
                Spawning::Npc => {
                    let id = NetId {
                        index: ((self.index as u32 + 1) << 24) | (self.next_npc & 0xff_ffff),
                        generation: self.incarnation,
                    };
                    self.next_npc = self.next_npc.wrapping_add(1);
                    self.reals.insert(
                        id,
                        Real {
                            local,
                            epoch: 0,
                            player: None,
                        },
                    );
                }
                Spawning::Join(request, reply) => {
                    info!(zone = %self.spec.name, id = ?request.id, account = %request.account, "player joined");
                    let (id, reply) = (request.id, reply);
                    self.make_real(
                        id,
                        Real {
                            local,
                            epoch: request.epoch,
                            player: Some(Player {
                                account: request.account,
                                login: request.login,
                                taken_seq: None,
                                applied_seq: 0,
                                pending: None,
                                last_saved: None,
                            }),
                        },
                    );
                    self.answer_join(reply, id, None);
                }
                Spawning::Adopt(handoff, reply) => {
                    debug!(zone = %self.spec.name, id = ?handoff.id, from = %handoff.from, "body taken over");
                    let player = handoff.player.map(|p| Player {
                        account: p.account,
                        login: p.login,
                        taken_seq: Some(p.applied_seq),
                        applied_seq: p.applied_seq,
                        pending: None,
                        last_saved: None,
                    });
                    let real = Real {
                        local,
                        epoch: handoff.epoch,
                        player,
                    };
                    self.make_real(handoff.id, real);
                    self.answer_handoff(reply, (handoff.id, handoff.epoch), None);
                }
                Spawning::Ghost(id, epoch) => {
                    self.ghosts.insert(id, (local, epoch));
                }
                Spawning::TakeBack(id, epoch, mut player) => {
                    // Saved afresh at its new epoch: the neighbour may have saved it at
                    // the epoch it was offered with before its answer was lost.
                    if let Some(player) = player.as_mut() {
                        player.last_saved = None;
                    }
                    self.make_real(
                        id,
                        Real {
                            local,
                            epoch,
                            player,
                        },
                    );
                }
            }
        }
    }

    /// What was to be spawned and was not: the world refused the input (numbers it
    /// cannot use, no walkable point within its reach). Whoever asked is told.
    fn not_spawned(&mut self, what: Spawning) {
        let zone = &self.spec.name;
        match what {
            Spawning::Npc => warn!(%zone, "an NPC's spawn was refused"),
            Spawning::Join(request, reply) => {
                warn!(%zone, id = ?request.id, at = ?request.at, "a joining character's body was refused");
                let why = format!("no body can stand at {:?}", request.at);
                self.answer_join(reply, request.id, Some(why));
            }
            Spawning::Adopt(handoff, reply) => {
                let why = format!("no walkable point near {:?}", handoff.body.pos);
                warn!(%zone, id = ?handoff.id, %why, "handoff refused");
                self.answer_handoff(reply, (handoff.id, handoff.epoch), Some(why));
            }
            // Tried again with the neighbour's next frame while it is in the band.
            Spawning::Ghost(id, _) => debug!(%zone, ?id, "a ghost's body was refused"),
            Spawning::TakeBack(id, _, player) => error!(
                %zone, ?id, account = ?player.map(|p| p.account),
                "a body taken back from a refused handoff was refused by the world: it is lost"
            ),
        }
    }
}
