//! The store's integration tests: one suite (`suite`) run against both stores, each store's
//! own failure cases (`embedded`, `postgres`), and `kill -9` of a writer (`crash`). The
//! PostgreSQL tests start a real server (`store::test_postgres`); they fail, never skip, when
//! its binaries are missing.

// Test setup may panic on failure: that is the report.
#![allow(clippy::unwrap_used)]

mod crash;
mod embedded;
mod faults;
mod postgres;
mod spec;
mod suite;

use store::{Character, Save};

/// A save of `account` at `pos` and time `now_ms`, named and mapped after the account.
pub(crate) fn save(account: &str, pos: [f32; 2], now_ms: i64) -> Save {
    Save {
        account: account.to_owned(),
        name: format!("{account} the brave"),
        pos,
        map: "house".to_owned(),
        now_ms,
        order: None,
    }
}

/// The character `save` should produce at `version`, first written at `created_ms`.
pub(crate) fn expected(save: &Save, version: u64, created_ms: i64) -> Character {
    Character {
        account: save.account.clone(),
        name: save.name.clone(),
        pos: save.pos,
        map: save.map.clone(),
        version,
        created_ms,
        updated_ms: save.now_ms,
        order: save.order,
    }
}
