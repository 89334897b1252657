//! The admin API's requests that a gateway can answer: its sessions, and kicking one. The
//! world's own questions (entities, doors, NPCs, its figures) are the zones' to answer,
//! and a gateway refuses them ([`AdminRefusal::NoWorldHere`]).

use super::Router;
use crate::game::admin::{AdminRefusal, AdminRequest, SessionInfo, kick_session};

impl Router {
    /// Answers one admin request.
    pub(super) fn admin(&mut self, request: AdminRequest) {
        match request {
            AdminRequest::Sessions(reply) => {
                let _ = reply.send(Ok(self.session_infos()));
            }
            AdminRequest::Kick {
                session,
                text,
                reply,
            } => {
                let kick = match self.players.get(&session) {
                    Some(player) => Some(&player.kick),
                    None => self.watchers.get(&session).map(|w| &w.kick),
                };
                kick_session(kick, session, text, reply);
            }
            other => other.refuse(AdminRefusal::NoWorldHere),
        }
    }

    /// The sessions with a character, then the spectators, each by session number.
    fn session_infos(&self) -> Vec<SessionInfo> {
        let players = self.players.iter().map(|(&id, player)| SessionInfo {
            id,
            account: player.account.clone(),
            remote: player.remote.clone(),
            spectator: false,
            entity: Some(format!("{}.{}", player.id.index, player.id.generation)),
            connected_since_ms: player.since_ms,
            pos: Some([player.at.0, player.at.1]),
        });
        let watchers = self.watchers.iter().map(|(&id, watcher)| SessionInfo {
            id,
            account: watcher.account.clone(),
            remote: watcher.remote.clone(),
            spectator: true,
            entity: None,
            connected_since_ms: watcher.since_ms,
            pos: Some([watcher.at.0, watcher.at.1]),
        });
        let mut infos: Vec<SessionInfo> = players.chain(watchers).collect();
        infos.sort_by_key(|info| info.id);
        infos
    }
}
