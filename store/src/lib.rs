//! Character storage: where a player's character lives between sessions and across crashes.
//!
//! One trait, [`CharacterStore`], and two real stores behind it, chosen by a [`StoreSpec`] and
//! opened with [`open`]:
//!
//! - **embedded** (the default): a [redb](https://docs.rs/redb) file,
//!   `<dir>/characters.redb`. Every commit is durable (`Durability::Immediate`: redb syncs the
//!   file before `commit` returns), so once [`CharacterStore::save_batch`] has returned, a
//!   `kill -9` of the process loses nothing. One process at a time holds the file; a second
//!   [`open`] of the same directory fails with [`StoreError::Open`].
//! - **PostgreSQL** (`postgres://…` or `postgresql://…`): the synchronous `postgres` client.
//!   Migrations are applied at [`open`] under an advisory lock, so several servers may start
//!   at once. A lost connection is a retryable [`StoreError::Unavailable`], and the next call
//!   reconnects. The connection is plain TCP or a unix socket **without TLS**: run the store on
//!   a trusted network or a local socket until TLS support is added.
//!
//! # Rules
//! - The API is synchronous and blocking. The server calls it from a writer thread of its own,
//!   never from the world thread.
//! - Both stores behave the same, and one test suite (`tests/it/suite.rs`) checks them both.
//! - A batch is all or nothing: saves are validated up front ([`StoreError::Invalid`]) and
//!   written in one transaction. A save PostgreSQL refuses for its values (a character the
//!   database's encoding cannot hold) fails the batch as [`StoreError::Invalid`] naming that
//!   save's account, nothing written, so that the caller can write the rest without it. Saves of one account within a batch collapse to the last one,
//!   and its version grows by one per batch.
//! - Saves across processes keep their order: a save may carry a [`SaveOrder`] (the login
//!   it belongs to, and the character's epoch within it), and one older than what is stored
//!   is skipped, counted in `save_batch`'s answer, instead of writing an older position over
//!   a newer one (a zone that could not reach the store while the character moved on).
//! - A retryable error from `save_batch` means "not known to be written": when a connection
//!   drops while PostgreSQL commits, the batch may have landed. Saving it again is safe (the
//!   same positions; the version grows once more), so the writer simply retries.
//! - Nothing read from storage can panic: a damaged record is [`StoreError::Corrupt`], naming
//!   the account.
//! - Errors never show a database password: URLs are redacted before they enter a message.
//!
//! # Entry point
//! ```no_run
//! # fn main() -> Result<(), store::StoreError> {
//! let spec = store::StoreSpec::Embedded { dir: "data".into() };
//! let mut characters = store::open(&spec)?;
//! characters.save_batch(&[store::Save {
//!     account: "ada".into(),
//!     name: "Ada".into(),
//!     pos: [3.0, 4.5],
//!     map: "house".into(),
//!     now_ms: 1_700_000_000_000,
//!     order: None,
//! }])?;
//! assert_eq!(characters.load("ada")?.map(|c| c.version), Some(1));
//! # Ok(())
//! # }
//! ```

mod embedded;
mod error;
mod pg;
mod record;
#[cfg(feature = "test-postgres")]
pub mod test_postgres;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

pub use embedded::EMBEDDED_FILE_NAME;
pub use error::StoreError;
pub(crate) use pg::redact_url;

/// The longest account, name or map id a store accepts, in bytes.
pub const MAX_TEXT_BYTES: usize = 256;

/// One character as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Character {
    /// The account that owns the character; the primary key.
    pub account: String,
    /// The display name.
    pub name: String,
    /// Position in metres, in the map's frame.
    pub pos: [f32; 2],
    /// The zone or map the character was last in.
    pub map: String,
    /// Incremented by the store on every write; 1 after the first.
    pub version: u64,
    /// Unix milliseconds of the first write.
    pub created_ms: i64,
    /// Unix milliseconds of the last write.
    pub updated_ms: i64,
    /// The order of the last save that carried one.
    pub order: Option<SaveOrder>,
}

/// Where a save stands among the saves of one character, whichever process writes it:
/// compared by session first, then by epoch.
///
/// A cluster's zones save the characters they hold, and a character moves between them; a
/// zone cut off from the store keeps its saves and writes them once it can, by which time
/// another zone may have saved the character further on. The store skips a save whose
/// order is older than the stored one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SaveOrder {
    /// The login the save belongs to, as numbered by [`CharacterStore::claim`]: each login
    /// of an account gets a larger number than every earlier one.
    pub session: u64,
    /// The character's epoch within that login: 0 when it joins, one more at each handoff
    /// from zone to zone (and higher when its gateway asks for it again).
    pub epoch: u32,
}

/// What the server writes; the store assigns the version and the creation time.
#[derive(Clone, Debug, PartialEq)]
pub struct Save {
    /// The account that owns the character.
    pub account: String,
    /// The display name.
    pub name: String,
    /// Position in metres, in the map's frame; both coordinates must be finite.
    pub pos: [f32; 2],
    /// The zone or map the character is in.
    pub map: String,
    /// Unix milliseconds of this save (the caller owns the clock).
    pub now_ms: i64,
    /// Its order among the character's saves: written only when no newer one is stored.
    /// `None` (one process saves the character, in order): always written, and the stored
    /// order stays as it was.
    pub order: Option<SaveOrder>,
}

/// Where characters live, and how the server reads and writes them.
///
/// Every method blocks until the storage answered. A retryable error
/// ([`StoreError::is_retryable`]) leaves the handle usable: the next call tries again.
pub trait CharacterStore: Send {
    /// The saved character of `account`, if any.
    fn load(&mut self, account: &str) -> Result<Option<Character>, StoreError>;
    /// Writes every save in one transaction (all or nothing): insert or update, version + 1.
    /// Saves of the same account within one batch: the last one wins unless an earlier
    /// one has a newer [`SaveOrder`], version + 1 once per batch. An empty batch writes
    /// nothing and succeeds. A save whose [`SaveOrder`] is older than the stored
    /// character's is skipped; the answer is how many were.
    fn save_batch(&mut self, saves: &[Save]) -> Result<usize, StoreError>;
    /// Cheap liveness check (for `/readyz` and retry loops).
    fn ping(&mut self) -> Result<(), StoreError>;
    /// Every character, ordered by account (for tests and audits; fine to be slow).
    fn all(&mut self) -> Result<Vec<Character>, StoreError>;
    /// Claims `account`'s one live session for `holder` (a process start) for `ttl`:
    /// the session's number when the account was free, its last claim has lapsed, or
    /// `holder` holds it already (then renewed); `None` while another holder's claim lasts.
    /// Processes that share a PostgreSQL database (a cluster's gateways) hold one session
    /// per account between them this way, timed by the database's clock.
    ///
    /// Each claim numbers its session (the [`SaveOrder::session`] of its saves) above every
    /// earlier session of the account and every order stored with its character. The
    /// embedded store serves one process, whose own sessions say who is in and whose saves
    /// keep their order: always `Some(0)`, 0 meaning "not numbered".
    fn claim(
        &mut self,
        account: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<u64>, StoreError> {
        let _ = (account, holder, ttl);
        Ok(Some(0))
    }
    /// Makes `holder`'s claims on `accounts` last `ttl` from now; returns the accounts it
    /// still held (a claim that lapsed and was taken by another holder is not renewed).
    fn renew_claims(
        &mut self,
        holder: &str,
        accounts: &[String],
        ttl: Duration,
    ) -> Result<Vec<String>, StoreError> {
        let _ = (holder, ttl);
        Ok(accounts.to_vec())
    }
    /// Ends `holder`'s claims on `accounts` (another holder's claims stay).
    fn release_claims(&mut self, holder: &str, accounts: &[String]) -> Result<(), StoreError> {
        let _ = (holder, accounts);
        Ok(())
    }
    /// Ends every claim whose holder's name starts with `prefix`, other than `holder`'s
    /// own: a process start taking over what the earlier starts of the same process held,
    /// which it knows have stopped (it is the one `prefix` names). Returns how many.
    fn release_earlier_claims(&mut self, prefix: &str, holder: &str) -> Result<u64, StoreError> {
        let _ = (prefix, holder);
        Ok(0)
    }
}

/// Where characters live.
#[derive(Clone, Debug, PartialEq)]
pub enum StoreSpec {
    /// The embedded store, in `dir/characters.redb`; `dir` is created when missing.
    Embedded {
        /// The data directory.
        dir: PathBuf,
    },
    /// A PostgreSQL database, by connection URL (`postgres://user:password@host:port/db`).
    Postgres {
        /// The connection URL; it may hold a password, so never print it as is.
        url: String,
    },
}

impl FromStr for StoreSpec {
    type Err = StoreError;

    /// Parses a `postgres://` or `postgresql://` URL. Anything else is an error: the embedded
    /// store is chosen by a data directory, not by this string.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            // Parse it now, so that a malformed URL fails at the command line, not at open.
            s.parse::<postgres::Config>()
                .map_err(|source| StoreError::Spec {
                    reason: format!("bad PostgreSQL url {}: {source}", redact_url(s)),
                })?;
            Ok(Self::Postgres { url: s.to_owned() })
        } else {
            Err(StoreError::Spec {
                reason: format!(
                    "expected a postgres:// or postgresql:// url, got {:?}",
                    redact_url(s)
                ),
            })
        }
    }
}

impl std::fmt::Display for StoreSpec {
    /// The directory, or the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Embedded { dir } => write!(f, "embedded store in {}", dir.display()),
            Self::Postgres { url } => write!(f, "PostgreSQL at {}", redact_url(url)),
        }
    }
}

/// Opens the store `spec` names: creates the embedded directory and file, or connects to
/// PostgreSQL and applies the migrations.
pub fn open(spec: &StoreSpec) -> Result<Box<dyn CharacterStore>, StoreError> {
    match spec {
        StoreSpec::Embedded { dir } => Ok(Box::new(embedded::EmbeddedStore::open(dir)?)),
        StoreSpec::Postgres { url } => Ok(Box::new(pg::PostgresStore::open(url)?)),
    }
}

/// Checks every save of a batch and keeps the last save of each account (unless an
/// earlier one of it has a newer order), ordered by account.
///
/// Both stores write the result in this order, so two PostgreSQL writers lock rows in the
/// same order and cannot deadlock each other.
pub(crate) fn validate_batch(saves: &[Save]) -> Result<BTreeMap<&str, &Save>, StoreError> {
    let mut last = BTreeMap::new();
    for save in saves {
        validate(save)?;
        let kept: &mut &Save = last.entry(save.account.as_str()).or_insert(save);
        let newer_kept = matches!((kept.order, save.order), (Some(k), Some(s)) if k > s);
        if !newer_kept {
            *kept = save;
        }
    }
    Ok(last)
}

fn validate(save: &Save) -> Result<(), StoreError> {
    let invalid = |reason: String| StoreError::Invalid {
        account: save.account.clone(),
        reason,
    };
    if save.account.is_empty() {
        return Err(invalid("the account is empty".into()));
    }
    for (field, text) in [
        ("account", &save.account),
        ("name", &save.name),
        ("map", &save.map),
    ] {
        if text.len() > MAX_TEXT_BYTES {
            return Err(invalid(format!(
                "the {field} is {} bytes, more than {MAX_TEXT_BYTES}",
                text.len()
            )));
        }
        // PostgreSQL's text type cannot hold a NUL character; refusing it in both stores keeps
        // them alike.
        if text.contains('\0') {
            return Err(invalid(format!("the {field} contains a NUL character")));
        }
    }
    if let Some(order) = save.order
        && i64::try_from(order.session).is_err()
    {
        // PostgreSQL keeps it in a bigint; numbered logins count up from 1.
        return Err(invalid(format!(
            "the session {} is beyond a login's number",
            order.session
        )));
    }
    if !save.pos.iter().all(|c| c.is_finite()) {
        return Err(invalid(format!(
            "the position {:?} is not finite",
            save.pos
        )));
    }
    Ok(())
}
