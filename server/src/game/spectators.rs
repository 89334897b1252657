//! Spectators: sessions that watch without a character. Each has a view centre, moved by
//! its move-to commands and clamped into the map; the snapshot workers treat it as a
//! client whose character is [`NetId::NONE`] standing at that centre.

use protocol::{Command, DisconnectReason, NetId};
use sim::Vec2;
use tokio::sync::{mpsc, oneshot};
use tracing::info;

use super::{DatagramSink, Game, Joined, Kick, SessionId};
use crate::snapshots::NewViewer;

/// A session watching without a character.
pub(super) struct Spectator {
    pub(super) name: String,
    /// The centre of its view.
    pub(super) at: Vec2,
    /// Newest input sequence taken.
    pub(super) taken_seq: Option<u32>,
    /// Sequence of the last input the world applied.
    pub(super) applied_seq: u32,
    /// Its session's kick channel, address and start, for the admin API.
    pub(super) facts: super::admin::SessionFacts,
}

impl Game {
    /// Registers a spectator: answered at once (it waits for no spawn), its view starting
    /// at `at` clamped into the map.
    pub(super) fn add_spectator(
        &mut self,
        session: SessionId,
        name: String,
        at: Vec2,
        sink: Box<dyn DatagramSink>,
        kick: mpsc::Sender<Kick>,
        reply: oneshot::Sender<Result<Joined, DisconnectReason>>,
    ) {
        if reply
            .send(Ok(Joined {
                entity: NetId::NONE,
            }))
            .is_err()
        {
            return;
        }
        info!(session, %name, "spectator joined");
        let facts = super::admin::SessionFacts::new(&kick, sink.as_ref());
        self.membership.joined.push(NewViewer {
            session,
            sink,
            kick,
        });
        let at = self.clamp_to_map(at.x, at.y);
        self.spectators.insert(
            session,
            Spectator {
                name,
                at,
                taken_seq: None,
                applied_seq: 0,
                facts,
            },
        );
    }

    /// A spectator's input: a move-to point moves its view; the rest only acknowledges.
    pub(super) fn spectator_input(&mut self, session: SessionId, input: protocol::Input) {
        let moved = match input.command {
            Command::MoveTo { x, y } => Some(self.clamp_to_map(x, y)),
            _ => None,
        };
        let Some(spectator) = self.spectators.get_mut(&session) else {
            return;
        };
        let fresh = super::take_input(
            &mut spectator.taken_seq,
            session,
            &input,
            &mut self.membership,
            &self.metrics,
        );
        if let (true, Some(at)) = (fresh, moved) {
            spectator.at = at;
        }
    }

    fn clamp_to_map(&self, x: f32, y: f32) -> Vec2 {
        let b = self.world.mesh().bounds();
        Vec2::new(
            x.clamp(b.min.x as f32, b.max.x as f32),
            y.clamp(b.min.y as f32, b.max.y as f32),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;
    use crate::game::ToWorld;
    use crate::game::tests::{Recorder, arena, test_config};
    use crate::metrics::Metrics;

    #[test]
    fn a_spectator_has_no_character_and_moves_its_view() {
        let config = test_config(10, 10);
        let mut game = Game::new(arena(), config, Arc::new(Metrics::default()));
        let bodies = |game: &Game| game.world().bodies().count();
        game.tick(Instant::now());
        let before = bodies(&game);
        let (kick, _) = mpsc::channel(1);
        let (reply, mut answer) = oneshot::channel();
        game.handle(ToWorld::Join {
            session: 7,
            name: "eve".to_owned(),
            login: 0,
            resume_at: None,
            saved_order: None,
            spectate: Some(Vec2::new(-1.0e6, 1.0e6)),
            sink: Box::new(Recorder),
            kick,
            reply,
        });
        // Answered at once, with no entity.
        let joined = answer.try_recv().unwrap().unwrap();
        assert_eq!(joined.entity, NetId::NONE);
        game.tick(Instant::now());
        assert_eq!(bodies(&game), before, "a spectator spawns nothing");
        let job = game.snapshot_job().unwrap();
        let me = job.clients.iter().find(|c| c.session == 7).unwrap();
        assert_eq!(me.me, NetId::NONE);
        // Its far-away point was clamped into the map.
        let b = game.world().mesh().bounds();
        assert_eq!(me.at, (b.min.x as f32, b.max.y as f32));
        game.handle(ToWorld::Input {
            session: 7,
            input: protocol::Input {
                seq: 1,
                ack_tick: None,
                command: Command::MoveTo { x: 1.5, y: 2.5 },
            },
        });
        game.tick(Instant::now());
        let job = game.snapshot_job().unwrap();
        let me = job.clients.iter().find(|c| c.session == 7).unwrap();
        assert_eq!((me.at, me.applied_seq), ((1.5, 2.5), 1));
        game.handle(ToWorld::Leave {
            session: 7,
            claim: None,
        });
        game.tick(Instant::now());
        let job = game.snapshot_job().unwrap();
        assert!(job.clients.is_empty());
        assert_eq!(job.changes.left, vec![7]);
    }
}
