//! The PostgreSQL store: the synchronous `postgres` client, one connection, reconnected on
//! demand.
//!
//! The connection has no TLS (`NoTls`): the client is built without openssl or any TLS
//! provider, so the database must be reached over a trusted network or a unix socket.

use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, Config, GenericClient, NoTls, Row, Statement};

use crate::error::Cause;
use crate::{Character, CharacterStore, Save, SaveOrder, StoreError, validate_batch};

mod claims;
mod redact;

pub(crate) use redact::redact_url;

/// The advisory lock key that serialises migrations between processes opening at once.
const MIGRATION_LOCK_KEY: i64 = 0x6d6d_6f5f_7374_6f72; // "mmo_stor"

/// The schema, one step per version, applied in order and recorded in `schema_migrations`.
/// Steps are never edited once released: a change is a new step.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        "CREATE TABLE characters (
        account text PRIMARY KEY,
        name text NOT NULL,
        x real NOT NULL,
        y real NOT NULL,
        map text NOT NULL,
        version bigint NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
    )",
    ),
    (2, claims::MIGRATION),
    (
        3,
        "ALTER TABLE characters ADD COLUMN session bigint, ADD COLUMN epoch bigint;
        ALTER TABLE account_claims ADD COLUMN sessions bigint NOT NULL DEFAULT 0",
    ),
];

/// Writes a whole batch in one statement (one round trip, one transaction): the arrays are
/// the batch's columns, one account per row.
/// A save with an order (session and epoch, both NULL without one) older than the stored
/// one updates nothing, so the statement's row count tells how many were skipped.
const SAVE_SQL: &str = "INSERT INTO characters AS c
        (account, name, x, y, map, version, created_ms, updated_ms, session, epoch)
    SELECT account, name, x, y, map, 1, now_ms, now_ms, session, epoch
    FROM unnest($1::text[], $2::text[], $3::real[], $4::real[], $5::text[], $6::bigint[],
            $7::bigint[], $8::bigint[])
        AS batch(account, name, x, y, map, now_ms, session, epoch)
    ON CONFLICT (account) DO UPDATE SET
        name = EXCLUDED.name, x = EXCLUDED.x, y = EXCLUDED.y, map = EXCLUDED.map,
        version = c.version + 1, updated_ms = EXCLUDED.updated_ms,
        session = coalesce(EXCLUDED.session, c.session),
        epoch = CASE WHEN EXCLUDED.session IS NULL THEN c.epoch ELSE EXCLUDED.epoch END
    WHERE EXCLUDED.session IS NULL OR c.session IS NULL
        OR (c.session, c.epoch) <= (EXCLUDED.session, EXCLUDED.epoch)";

const COLUMNS: &str = "account, name, x, y, map, version, created_ms, updated_ms, session, epoch";

/// When the URL sets no connect timeout: a dead host fails a call within this time.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// When the URL sets none: unacknowledged data for this long drops the connection.
const DEFAULT_TCP_USER_TIMEOUT: Duration = Duration::from_secs(15);

/// A PostgreSQL database holding the characters table.
pub(crate) struct PostgresStore {
    config: Config,
    /// The URL without its password, for error messages.
    target: String,
    /// `None` after a connection error; the next call reconnects.
    conn: Option<Conn>,
}

/// One live connection and its prepared statements.
struct Conn {
    client: Client,
    load: Statement,
    save: Statement,
    all: Statement,
}

impl PostgresStore {
    /// Connects and brings the schema to the current version.
    pub(crate) fn open(url: &str) -> Result<Self, StoreError> {
        let target = redact_url(url);
        let open_error = |source: postgres::Error| StoreError::Open {
            target: target.clone(),
            source: told(source),
        };
        let mut config: Config = url.parse().map_err(open_error)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(DEFAULT_TCP_USER_TIMEOUT);
        }
        let mut client = config.connect(NoTls).map_err(open_error)?;
        migrate(&mut client)?;
        let conn = Conn::prepare(client).map_err(open_error)?;
        Ok(Self {
            config,
            target,
            conn: Some(conn),
        })
    }

    /// Runs `f` on a live connection, connecting first when there is none. A retryable
    /// failure drops the connection, so that the next call starts on a fresh one.
    fn with_conn<T>(
        &mut self,
        f: impl FnOnce(&mut Conn, &str) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = match self.conn.take() {
            Some(conn) if !conn.client.is_closed() => conn,
            _ => self
                .config
                .connect(NoTls)
                .and_then(Conn::prepare)
                .map_err(|source| StoreError::Unavailable {
                    target: self.target.clone(),
                    source: told(source),
                })?,
        };
        let conn = self.conn.insert(conn);
        let result = f(conn, &self.target);
        if result.as_ref().is_err_and(StoreError::is_retryable) {
            self.conn = None;
        }
        result
    }
}

impl Conn {
    /// Writes `saves` (one per account) in one statement; how many it skipped as stale.
    fn save(&mut self, saves: &[&Save]) -> Result<usize, postgres::Error> {
        write_saves(&mut self.client, &self.save, saves)
    }

    /// After PostgreSQL refused a batch's values (`error`, a data exception): the save it
    /// refuses, found by halving the batch, each half tried in a transaction rolled back
    /// (nothing is written, so no save is written twice), as [`StoreError::Invalid`] with
    /// PostgreSQL's reason; the writer drops it and writes the rest. Should no single save
    /// be refused on its own, or the search fail otherwise, the batch's error as it is.
    fn refused_save(
        &mut self,
        saves: &[&Save],
        target: &str,
        error: postgres::Error,
    ) -> StoreError {
        let mut suspects = saves;
        while suspects.len() > 1 {
            let (first, second) = suspects.split_at(suspects.len() / 2);
            match self.refusal(first) {
                Ok(Some(_)) => suspects = first,
                Ok(None) => suspects = second,
                Err(e) => return classify(target, e),
            }
        }
        match (suspects, self.refusal(suspects)) {
            ([save], Ok(Some(refusal))) => StoreError::Invalid {
                account: save.account.clone(),
                reason: format!(
                    "PostgreSQL refuses it: {}",
                    refusal
                        .as_db_error()
                        .map_or_else(|| refusal.to_string(), |db| db.message().to_owned())
                ),
            },
            (_, Err(e)) => classify(target, e),
            _ => classify(target, error),
        }
    }

    /// PostgreSQL's refusal to write `saves` for their values (a data exception), if it
    /// refuses them, tried in a transaction that is rolled back.
    fn refusal(&mut self, saves: &[&Save]) -> Result<Option<postgres::Error>, postgres::Error> {
        let mut tx = self.client.transaction()?;
        let refusal = match write_saves(&mut tx, &self.save, saves) {
            Ok(_) => None,
            Err(e) if is_data_exception(&e) => Some(e),
            Err(e) => return Err(e),
        };
        tx.rollback()?;
        Ok(refusal)
    }

    fn prepare(mut client: Client) -> Result<Self, postgres::Error> {
        let load = client.prepare(&format!(
            "SELECT {COLUMNS} FROM characters WHERE account = $1"
        ))?;
        let save = client.prepare(SAVE_SQL)?;
        // Byte order, as the embedded store sorts its keys, whatever the database's collation.
        let all = client.prepare(&format!(
            "SELECT {COLUMNS} FROM characters ORDER BY account COLLATE \"C\""
        ))?;
        Ok(Self {
            client,
            load,
            save,
            all,
        })
    }
}

impl CharacterStore for PostgresStore {
    fn load(&mut self, account: &str) -> Result<Option<Character>, StoreError> {
        self.with_conn(|conn, target| {
            let row = conn
                .client
                .query_opt(&conn.load, &[&account])
                .map_err(|e| classify(target, e))?;
            row.map(|row| character(&row, account)).transpose()
        })
    }

    fn save_batch(&mut self, saves: &[Save]) -> Result<usize, StoreError> {
        let batch = validate_batch(saves)?;
        if batch.is_empty() {
            return Ok(0);
        }
        let saves: Vec<&Save> = batch.into_values().collect();
        self.with_conn(|conn, target| match conn.save(&saves) {
            Ok(stale) => Ok(stale),
            Err(e) if is_data_exception(&e) => Err(conn.refused_save(&saves, target, e)),
            Err(e) => Err(classify(target, e)),
        })
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        self.with_conn(|conn, target| {
            conn.client
                .batch_execute("SELECT 1")
                .map_err(|e| classify(target, e))
        })
    }

    fn claim(
        &mut self,
        account: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<u64>, StoreError> {
        let sessions = self.with_conn(|conn, target| {
            claims::claim(&mut conn.client, account, holder, ttl).map_err(|e| classify(target, e))
        })?;
        // Counted up from 1 by the statement, and from the stored save's session: below 1
        // only when rows were changed by hand to hold a negative session, which the load
        // refuses as corrupt anyway. A refusal here would come after the claim is taken
        // (held until it lapses), so the count is taken as at least 1.
        Ok(sessions.map(|sessions| u64::try_from(sessions).unwrap_or(1).max(1)))
    }

    fn renew_claims(
        &mut self,
        holder: &str,
        accounts: &[String],
        ttl: Duration,
    ) -> Result<Vec<String>, StoreError> {
        self.with_conn(|conn, target| {
            claims::renew(&mut conn.client, holder, accounts, ttl).map_err(|e| classify(target, e))
        })
    }

    fn release_claims(&mut self, holder: &str, accounts: &[String]) -> Result<(), StoreError> {
        self.with_conn(|conn, target| {
            claims::release(&mut conn.client, holder, accounts).map_err(|e| classify(target, e))
        })
    }

    fn release_earlier_claims(&mut self, prefix: &str, holder: &str) -> Result<u64, StoreError> {
        self.with_conn(|conn, target| {
            claims::release_earlier(&mut conn.client, prefix, holder)
                .map_err(|e| classify(target, e))
        })
    }

    fn all(&mut self) -> Result<Vec<Character>, StoreError> {
        self.with_conn(|conn, target| {
            let rows = conn
                .client
                .query(&conn.all, &[])
                .map_err(|e| classify(target, e))?;
            rows.iter()
                .enumerate()
                .map(|(at, row)| {
                    // No account to name: the row is named by its place in the listing,
                    // which is in the accounts' byte order.
                    let account: String = row.try_get(0).map_err(|e| StoreError::Corrupt {
                        account: String::new(),
                        reason: format!(
                            "the account of row {at} (from 0, by account) is unreadable: {e}"
                        ),
                    })?;
                    character(row, &account)
                })
                .collect()
        })
    }
}

/// Reads one row of `COLUMNS`; a value of the wrong type, NULL or out of range is
/// [`StoreError::Corrupt`].
fn character(row: &Row, account: &str) -> Result<Character, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        account: account.to_owned(),
        reason,
    };
    let field = |e: postgres::Error| corrupt(format!("unreadable column: {e}"));
    let version: i64 = row.try_get("version").map_err(field)?;
    let pos: [f32; 2] = [
        row.try_get("x").map_err(field)?,
        row.try_get("y").map_err(field)?,
    ];
    if !pos.iter().all(|c| c.is_finite()) {
        return Err(corrupt(format!("the position {pos:?} is not finite")));
    }
    let session: Option<i64> = row.try_get("session").map_err(field)?;
    let epoch: Option<i64> = row.try_get("epoch").map_err(field)?;
    let order = match (session, epoch) {
        (None, None) => None,
        (Some(session), Some(epoch)) => Some(SaveOrder {
            session: u64::try_from(session).map_err(|_| corrupt(format!("session {session}")))?,
            epoch: u32::try_from(epoch).map_err(|_| corrupt(format!("epoch {epoch}")))?,
        }),
        (session, epoch) => {
            return Err(corrupt(format!(
                "session {session:?} and epoch {epoch:?}: both or neither"
            )));
        }
    };
    Ok(Character {
        account: account.to_owned(),
        name: row.try_get("name").map_err(field)?,
        pos,
        map: row.try_get("map").map_err(field)?,
        version: u64::try_from(version)
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| corrupt(format!("version {version}")))?,
        created_ms: row.try_get("created_ms").map_err(field)?,
        updated_ms: row.try_get("updated_ms").map_err(field)?,
        order,
    })
}

/// Applies the missing migrations in one transaction under an advisory lock, so that two
/// processes opening at once apply each step once and neither sees half a schema.
fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let latest = MIGRATIONS.last().map_or(0, |(v, _)| *v);
    let failed = |version: i32| {
        move |e: postgres::Error| StoreError::Migration {
            version,
            source: told(e),
        }
    };
    let mut tx = client.transaction().map_err(failed(latest))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
        .map_err(failed(latest))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version integer PRIMARY KEY,
            applied_ms bigint NOT NULL
        )",
    )
    .map_err(failed(latest))?;
    let current: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM schema_migrations",
            &[],
        )
        .and_then(|row| row.try_get(0))
        .map_err(failed(latest))?;
    if current > latest {
        return Err(StoreError::Migration {
            version: current,
            source: format!(
                "the database is at schema version {current}, newer than this program's {latest}"
            )
            .into(),
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(sql).map_err(failed(*version))?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_ms)
             VALUES ($1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
            &[version],
        )
        .map_err(failed(*version))?;
    }
    tx.commit().map_err(failed(latest))
}

/// Writes `saves` (one per account) with the prepared [`SAVE_SQL`] in one statement.
fn write_saves(
    client: &mut impl GenericClient,
    statement: &Statement,
    saves: &[&Save],
) -> Result<usize, postgres::Error> {
    let accounts: Vec<&str> = saves.iter().map(|s| s.account.as_str()).collect();
    let names: Vec<&str> = saves.iter().map(|s| s.name.as_str()).collect();
    let xs: Vec<f32> = saves.iter().map(|s| s.pos[0]).collect();
    let ys: Vec<f32> = saves.iter().map(|s| s.pos[1]).collect();
    let maps: Vec<&str> = saves.iter().map(|s| s.map.as_str()).collect();
    let now_ms: Vec<i64> = saves.iter().map(|s| s.now_ms).collect();
    // `validate` refused sessions beyond i64::MAX.
    let sessions: Vec<Option<i64>> = saves
        .iter()
        .map(|s| {
            s.order
                .map(|o| i64::try_from(o.session).unwrap_or(i64::MAX))
        })
        .collect();
    let epochs: Vec<Option<i64>> = saves
        .iter()
        .map(|s| s.order.map(|o| i64::from(o.epoch)))
        .collect();
    let written = client.execute(
        statement,
        &[
            &accounts, &names, &xs, &ys, &maps, &now_ms, &sessions, &epochs,
        ],
    )?;
    Ok(saves.len().saturating_sub(written as usize))
}

/// Whether PostgreSQL refused a statement for the values it was given (SQLSTATE class 22,
/// data exception: a character the database's encoding cannot hold, a value out of a
/// column's range), which another save's values may not meet.
fn is_data_exception(error: &postgres::Error) -> bool {
    error
        .code()
        .is_some_and(|code| code.code().starts_with("22"))
}

/// Sorts a PostgreSQL error: connection trouble and transient server states are retryable
/// ([`StoreError::Unavailable`]); the rest is [`StoreError::Backend`].
fn classify(target: &str, error: postgres::Error) -> StoreError {
    let retryable = match error.code() {
        Some(code) => {
            let code = code.code();
            // Class 08: connection exception; 57P0x: the server is shutting down or starting;
            // 53: out of resources (too many connections, disk full); 40001 and 40P01: the
            // transaction lost a race and may be run again.
            code.starts_with("08")
                || code.starts_with("57P")
                || code.starts_with("53")
                || code == SqlState::T_R_SERIALIZATION_FAILURE.code()
                || code == SqlState::T_R_DEADLOCK_DETECTED.code()
        }
        // No SQL state: the server never answered (closed, reset, timed out).
        None => error.is_closed() || has_io_source(&error),
    };
    let target = target.to_owned();
    if retryable {
        StoreError::Unavailable {
            target,
            source: told(error),
        }
    } else {
        StoreError::Backend {
            target,
            source: told(error),
        }
    }
}

/// A PostgreSQL error as a cause that says what went wrong: `postgres::Error` displays
/// only "db error" for whatever the server said, and "error connecting to server" for
/// whatever failed on the way.
fn told(error: postgres::Error) -> Cause {
    Box::new(Told(error))
}

/// A PostgreSQL error displayed in full: the server's severity, code and message, with
/// its detail and the table and constraint it names; or, for an error of the client, its
/// causes.
#[derive(Debug)]
struct Told(postgres::Error);

impl std::fmt::Display for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(db) = self.0.as_db_error() else {
            write!(f, "{}", self.0)?;
            let mut cause = std::error::Error::source(&self.0);
            while let Some(error) = cause {
                write!(f, ": {error}")?;
                cause = error.source();
            }
            return Ok(());
        };
        write!(
            f,
            "{} {}: {}",
            db.severity(),
            db.code().code(),
            db.message()
        )?;
        if let Some(detail) = db.detail() {
            write!(f, " ({detail})")?;
        }
        if let Some(table) = db.table() {
            write!(f, "; table {table}")?;
        }
        if let Some(constraint) = db.constraint() {
            write!(f, "; constraint {constraint}")?;
        }
        Ok(())
    }
}

/// Its causes are in its text.
impl std::error::Error for Told {}

fn has_io_source(error: &postgres::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}
