//! The newest view sent, walked beside the baseline, when it is not the baseline (a client
//! whose acknowledgements lag). Snapshots built on different baselines would otherwise form
//! interleaved chains of views, each with its own share of the changes, and the client
//! would show them in turn: an entity moved by one snapshot moved back by the next. So what
//! the newest view holds differently from the baseline is repeated first, with the newest
//! view's state: the new view then extends the newest one, and every view the one before.

use protocol::EntityState;

use super::{Act, Item, Known};

/// A walk down the newest view sent (none when it is the baseline), in id order, beside a
/// walk down the baseline.
pub(crate) struct Chain<'a> {
    newest: Option<&'a Known>,
    at: usize,
}

impl<'a> Chain<'a> {
    pub(crate) fn new(newest: Option<&'a Known>) -> Chain<'a> {
        Chain { newest, at: 0 }
    }

    /// The id (as a [`super::key`]) of the newest view's next entity, `u64::MAX` past the
    /// end or without a newest view.
    #[inline]
    pub(crate) fn next_key(&self) -> u64 {
        self.newest
            .and_then(|newest| newest.key_at(self.at))
            .unwrap_or(u64::MAX)
    }

    /// The newest view's next entity, which the baseline does not hold (it entered in a
    /// snapshot not yet acknowledged): it enters again, inserted at baseline position `b`.
    #[inline]
    pub(crate) fn take_entered(&mut self, b: usize) -> Item {
        let item = Item::repeat(Act::Enter, b, self.at);
        self.at += 1;
        item
    }

    /// The baseline's entity `old`, with id `key`, at position `b`, once every entity of
    /// the newest view before it is taken: what repeats it (a leave when the newest view
    /// no longer holds it, the newest view's state when that differs), or `None` when the
    /// two agree or there is no newest view.
    #[inline]
    pub(crate) fn at_base(&mut self, key: u64, old: &EntityState, b: usize) -> Option<Item> {
        let newest = self.newest?;
        if newest.key_at(self.at) != Some(key) {
            return Some(Item::leave(b));
        }
        let at = self.at;
        self.at += 1;
        Act::between(old, &newest.states[at]).map(|act| Item::repeat(act, b, at))
    }
}
