//! Where the characters that left this process stood, for a few seconds: a player who
//! logs out and straight back in goes on from there, not from an older save. The new
//! login's load can reach the store writer before the world has handled the old
//! session's leave (the leave waits for the world's next tick; the load goes straight to
//! the writer), or find the leave's save still waiting for room in the writer's queue;
//! the world handles the old session's leave before the new session's join either way (a
//! session's account is free for a new login only once its leave is queued).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sim::Vec2;

/// How long a departure is remembered.
const REMEMBER: Duration = Duration::from_secs(10);

/// The characters that left lately, by account.
#[derive(Default)]
pub(super) struct Departed {
    last: HashMap<String, Seen>,
}

struct Seen {
    pos: Vec2,
    /// The login that left ([`crate::persist::Claimed::login`]).
    login: u64,
    at: Instant,
}

impl Departed {
    /// `account`'s login `login` left with its character at `pos`.
    pub(super) fn left(&mut self, account: &str, pos: Vec2, login: u64) {
        let now = Instant::now();
        self.last
            .retain(|_, seen| now.duration_since(seen.at) < REMEMBER);
        let seen = Seen {
            pos,
            login,
            at: now,
        };
        self.last.insert(account.to_owned(), seen);
    }

    /// Where `account`'s new login `login` goes on from, when its character left this
    /// process lately and no other login of the account came between: the store numbers
    /// the logins of an account one after the other, and a login of another process
    /// between the two would have saved the character since (0: logins are not numbered,
    /// and the store is this process's alone).
    pub(super) fn resume(&mut self, account: &str, login: u64) -> Option<Vec2> {
        let seen = self.last.remove(account)?;
        let next = login == 0 || seen.login.checked_add(1) == Some(login);
        (next && seen.at.elapsed() < REMEMBER).then_some(seen.pos)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::{mpsc, oneshot};

    use super::*;
    use crate::game::tests::{Recorder, arena, test_config};
    use crate::game::{Game, ToWorld};
    use crate::metrics::Metrics;

    type Answer = oneshot::Receiver<Result<crate::game::Joined, protocol::DisconnectReason>>;

    /// Session `session` of `ada` asks for her character, saved (the store says) at `at`.
    fn join(game: &mut Game, session: u64, at: Vec2) -> Answer {
        let (kick, _) = mpsc::channel(1);
        let (reply, answer) = oneshot::channel();
        game.handle(ToWorld::Join {
            session,
            name: "ada".to_owned(),
            login: 0,
            resume_at: Some(at),
            saved_order: None,
            spectate: None,
            sink: Box::new(Recorder),
            kick,
            reply,
        });
        answer
    }

    /// Ada logs out and straight back in, and the store's record is older than where she
    /// left (the new login's load beat the leave's save): she goes on from where she left.
    #[test]
    fn a_login_right_after_a_logout_goes_on_from_where_the_character_left() {
        let mut game = Game::new(arena(), test_config(0, 10), Arc::new(Metrics::default()));
        let (left_at, stale) = (game.spawn_points[0], game.spawn_points[1]);
        assert!((left_at - stale).length() > 5.0, "two spawn points apart");
        let _first = join(&mut game, 1, left_at);
        game.tick(Instant::now());
        game.handle(ToWorld::Leave {
            session: 1,
            claim: None,
        });
        let _second = join(&mut game, 2, stale);
        game.tick(Instant::now());
        let ada = game.clients.get(&2).expect("ada is back").entity;
        let at = game.world().body(ada).expect("her character").pos;
        assert!(
            (at - left_at).length() < 1.0,
            "at {at:?}, left at {left_at:?}"
        );
    }

    /// Two characters saved at one point, joining in one tick: the second lands clear of
    /// the first, not on it.
    #[test]
    fn characters_joining_on_one_point_do_not_land_on_each_other() {
        let mut game = Game::new(arena(), test_config(0, 10), Arc::new(Metrics::default()));
        let at = game.spawn_points[0];
        let _first = join(&mut game, 1, at);
        let _second = join(&mut game, 2, at);
        game.tick(Instant::now());
        let spots: Vec<Vec2> = [1, 2]
            .iter()
            .map(|session| {
                let entity = game.clients.get(session).expect("joined").entity;
                game.world().body(entity).expect("a body").pos
            })
            .collect();
        let apart = (spots[0] - spots[1]).length();
        assert!(apart >= 0.8, "{spots:?}: {apart} m apart");
    }

    #[test]
    fn the_next_login_goes_on_from_where_the_last_one_left_and_only_it() {
        let mut departed = Departed::default();
        let there = Vec2::new(3.0, 4.0);
        departed.left("ada", there, 0);
        assert_eq!(departed.resume("bo", 0), None);
        assert_eq!(departed.resume("ada", 0), Some(there));
        assert_eq!(departed.resume("ada", 0), None, "taken once");
        // Numbered logins: the next one, not one after another login elsewhere.
        departed.left("ada", there, 7);
        assert_eq!(departed.resume("ada", 8), Some(there));
        departed.left("ada", there, 7);
        assert_eq!(departed.resume("ada", 9), None);
        // Remembered for a while only.
        departed.left("ada", there, 0);
        if let Some(seen) = departed.last.get_mut("ada") {
            seen.at -= REMEMBER;
        }
        assert_eq!(departed.resume("ada", 0), None);
    }
}
