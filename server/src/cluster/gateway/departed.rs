//! Where the characters of ended sessions were last seen, for a login right after a
//! logout. The session that logs in loads its character through the gateway's own store
//! connection, and the zone's save of the leave may not be in the store yet: a zone cut
//! off from the store keeps its saves until it reaches it again. Loaded then, the
//! character would go on from an older save, and the late save would be skipped as older
//! than the new login's (the store's save order): the minutes before the logout lost.
//!
//! A zone saves a character that leaves with its epoch plus two, newer than every other
//! save of that login. So the gateway, which knows the login and the newest epoch it saw,
//! knows the order of that last save, and whether the store holds it: when the loaded
//! record is older, the character goes on from where the gateway last saw it (its last
//! frame, at most a tick or two before the zone's save), and the new login's saves make
//! that durable. (The gateway's own save below does not cover this: the new session's
//! load can reach the store writer before the router has handled the old session's leave,
//! whereas the router handles the leave before the new session's join.)
//!
//! For a login through another gateway, this gateway also saves where it last saw the
//! character, at the epoch plus one (below the zone's save of the leave, which wins when
//! it reaches the store), and gives the account's claim back only once that save is
//! written ([`crate::persist::Persist::save_then_release`]): the other gateway, which
//! waits for the claim, then loads at least that.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use store::SaveOrder;
use tracing::warn;

use super::{Player, Router};
use crate::persist::{Claimed, Persist};

/// How long the gateway remembers where a departed character was: longer than a zone is
/// expected to stay cut off from the store with its saves waiting.
pub(super) const KEEP: Duration = Duration::from_secs(3600);

/// Most characters remembered at once; past that, the oldest are forgotten first.
const MOST: usize = 1 << 16;

/// One character whose session ended.
#[derive(Clone, Copy, Debug)]
struct Departed {
    /// Where its last frame showed it.
    at: (f32, f32),
    /// The order of the zone's save of its leave.
    order: SaveOrder,
    left: Instant,
}

/// The departed characters, by account, and the accounts in the order they departed
/// (with when: an account that departed again, or logged in again, leaves an entry that
/// no longer names its newest departure, skipped when it comes up).
#[derive(Debug, Default)]
pub(super) struct Departures {
    by_account: HashMap<String, Departed>,
    in_order: VecDeque<(String, Instant)>,
}

impl Departures {
    /// The session of `account` (login `login`, the newest epoch seen `epoch`) ended with
    /// its character last seen at `at`. Logins not numbered by a store (0) have no order
    /// and are not remembered.
    pub(super) fn record(
        &mut self,
        account: &str,
        at: (f32, f32),
        (login, epoch): (u64, u32),
        now: Instant,
    ) {
        if login == 0 {
            return;
        }
        while self.by_account.len() >= MOST || self.in_order.len() >= 2 * MOST {
            self.forget_oldest();
        }
        let order = SaveOrder {
            session: login,
            epoch: epoch.saturating_add(2),
        };
        let departed = Departed {
            at,
            order,
            left: now,
        };
        self.by_account.insert(account.to_owned(), departed);
        self.in_order.push_back((account.to_owned(), now));
    }

    /// A new session of `account` whose stored record has the order `stored` (`None`: no
    /// record, or one without an order): where its character goes on from, when the
    /// gateway saw it after the store's record (the store does not hold the save of its
    /// last leave yet). The account is forgotten either way.
    pub(super) fn resume(
        &mut self,
        account: &str,
        stored: Option<SaveOrder>,
    ) -> Option<(f32, f32)> {
        let departed = self.by_account.remove(account)?;
        stored
            .is_none_or(|stored| stored < departed.order)
            .then_some(departed.at)
    }

    /// Forgets the characters that departed more than [`KEEP`] ago.
    pub(super) fn expire(&mut self, now: Instant) {
        while self
            .in_order
            .front()
            .is_some_and(|(_, left)| now.duration_since(*left) >= KEEP)
        {
            self.forget_oldest();
        }
    }

    /// Forgets the departure that came first (nothing when its account departed again
    /// since, or logged in again).
    fn forget_oldest(&mut self) {
        let Some((account, left)) = self.in_order.pop_front() else {
            return;
        };
        if self
            .by_account
            .get(&account)
            .is_some_and(|d| d.left == left)
        {
            self.by_account.remove(&account);
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_account.len()
    }
}

impl Router {
    /// Saves, through `persist`, where each character that logs out was last seen, before
    /// its account's claim is given back ([`Router::save_last_seen`]).
    pub(crate) fn keep_last_seen(&mut self, persist: Persist, map: String) {
        self.store = Some((persist, map));
    }

    /// Hands the store a save of where `player`'s last frame showed its character, ordered
    /// just below its zone's save of the leave (epoch + 2: the zone's own, when it reaches
    /// the store, wins), and the session's `claim` to give back once that is written: a
    /// login through another gateway waits for the claim and then loads at least this,
    /// even while the zone cannot reach the store.
    pub(super) fn save_last_seen(&self, player: &Player, claim: Claimed) {
        let Some((persist, map)) = &self.store else {
            return;
        };
        if player.login == 0 {
            return;
        }
        let save = store::Save {
            account: player.account.clone(),
            name: player.account.clone(),
            pos: [player.at.0, player.at.1],
            map: map.clone(),
            now_ms: crate::persist::now_ms(),
            order: Some(store::SaveOrder {
                session: player.login,
                epoch: player.epoch.saturating_add(1),
            }),
        };
        if !persist.save_then_release(save, claim) {
            let account = &player.account;
            warn!(%account, "the store writer is backed up; the last position was not saved");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(session: u64, epoch: u32) -> Option<SaveOrder> {
        Some(SaveOrder { session, epoch })
    }

    /// The last position is used only while the store's record is older than the leave's
    /// save: none, an earlier login's, or this login's at the same epoch or one before.
    #[test]
    fn the_last_position_goes_on_only_when_the_store_lacks_the_last_save() {
        let now = Instant::now();
        let cases = [
            (None, true),
            (order(6, 9), true),
            (order(7, 2), true),
            (order(7, 3), true),
            // The gateway's own save of where it last saw the character (epoch 3 + 1).
            (order(7, 4), true),
            // The zone's save of the leave (epoch 3 + 2), and anything newer.
            (order(7, 5), false),
            (order(7, 6), false),
            (order(8, 0), false),
        ];
        for (stored, resumed) in cases {
            let mut departures = Departures::default();
            departures.record("ada", (5.0, 6.0), (7, 3), now);
            let want = resumed.then_some((5.0, 6.0));
            assert_eq!(departures.resume("ada", stored), want, "{stored:?}");
            // Forgotten once used.
            assert_eq!(departures.resume("ada", None), None);
        }
    }

    #[test]
    fn unnumbered_logins_are_not_remembered_and_old_ones_expire() {
        let now = Instant::now();
        let mut departures = Departures::default();
        departures.record("ada", (1.0, 1.0), (0, 0), now);
        assert_eq!(departures.len(), 0);
        departures.record("bob", (1.0, 1.0), (3, 0), now);
        departures.expire(now + KEEP / 2);
        assert_eq!(departures.len(), 1);
        departures.expire(now + KEEP);
        assert_eq!(departures.len(), 0);
    }

    /// Past [`MOST`] departures the oldest are forgotten first, and an account that
    /// departed again keeps its newest departure.
    #[test]
    fn the_oldest_departures_go_first() {
        let start = Instant::now();
        let mut departures = Departures::default();
        let at = |i: usize| start + Duration::from_millis(i as u64);
        departures.record("ada", (1.0, 1.0), (3, 0), at(0));
        departures.record("ada", (2.0, 2.0), (3, 0), at(1));
        for i in 0..MOST {
            departures.record(&format!("p{i}"), (0.0, 0.0), (1, 0), at(2 + i));
        }
        assert_eq!(departures.len(), MOST);
        // Ada's first entry went without taking her second; her second went next.
        assert_eq!(departures.resume("ada", None), None);
        assert_eq!(departures.resume("p0", None), Some((0.0, 0.0)));
        // Expired by when they departed: p1 to p(MOST / 2 - 2) (p0 logged in again).
        departures.expire(at(MOST / 2) + KEEP);
        assert_eq!(departures.len(), MOST / 2 + 1);
        assert_eq!(departures.resume(&format!("p{}", MOST / 2 - 2), None), None);
        assert!(
            departures
                .resume(&format!("p{}", MOST / 2 - 1), None)
                .is_some()
        );
    }
}
