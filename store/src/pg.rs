//! The PostgreSQL store: the synchronous `postgres` client, one connection, reconnected on
//! demand.
//!
//! The connection has no TLS (`NoTls`): the client is built without openssl or any TLS
//! provider, so the database must be reached over a trusted network or a unix socket.

use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, Config, NoTls, Row, Statement};

use crate::{Character, CharacterStore, Save, StoreError, validate_batch};

/// The advisory lock key that serialises migrations between processes opening at once.
const MIGRATION_LOCK_KEY: i64 = 0x6d6d_6f5f_7374_6f72; // "mmo_stor"

/// The schema, one step per version, applied in order and recorded in `schema_migrations`.
/// Steps are never edited once released: a change is a new step.
const MIGRATIONS: &[(i32, &str)] = &[(
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
)];

/// Writes a whole batch in one statement (one round trip, one transaction): the arrays are
/// the batch's columns, one account per row.
const SAVE_SQL: &str = "INSERT INTO characters AS c
        (account, name, x, y, map, version, created_ms, updated_ms)
    SELECT account, name, x, y, map, 1, now_ms, now_ms
    FROM unnest($1::text[], $2::text[], $3::real[], $4::real[], $5::text[], $6::bigint[])
        AS batch(account, name, x, y, map, now_ms)
    ON CONFLICT (account) DO UPDATE SET
        name = EXCLUDED.name, x = EXCLUDED.x, y = EXCLUDED.y, map = EXCLUDED.map,
        version = c.version + 1, updated_ms = EXCLUDED.updated_ms";

const COLUMNS: &str = "account, name, x, y, map, version, created_ms, updated_ms";

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
            source: source.into(),
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
                    source: source.into(),
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

    fn save_batch(&mut self, saves: &[Save]) -> Result<(), StoreError> {
        let batch = validate_batch(saves)?;
        if batch.is_empty() {
            return Ok(());
        }
        let accounts: Vec<&str> = batch.keys().copied().collect();
        let names: Vec<&str> = batch.values().map(|s| s.name.as_str()).collect();
        let xs: Vec<f32> = batch.values().map(|s| s.pos[0]).collect();
        let ys: Vec<f32> = batch.values().map(|s| s.pos[1]).collect();
        let maps: Vec<&str> = batch.values().map(|s| s.map.as_str()).collect();
        let now_ms: Vec<i64> = batch.values().map(|s| s.now_ms).collect();
        self.with_conn(|conn, target| {
            conn.client
                .execute(&conn.save, &[&accounts, &names, &xs, &ys, &maps, &now_ms])
                .map_err(|e| classify(target, e))?;
            Ok(())
        })
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        self.with_conn(|conn, target| {
            conn.client
                .batch_execute("SELECT 1")
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
                .map(|row| {
                    let account: String = row.try_get(0).map_err(|e| StoreError::Corrupt {
                        account: String::new(),
                        reason: format!("unreadable account: {e}"),
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
    })
}

/// Applies the missing migrations in one transaction under an advisory lock, so that two
/// processes opening at once apply each step once and neither sees half a schema.
fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let latest = MIGRATIONS.last().map_or(0, |(v, _)| *v);
    let failed = |version: i32| {
        move |e: postgres::Error| StoreError::Migration {
            version,
            source: e.into(),
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
            source: error.into(),
        }
    } else {
        StoreError::Backend {
            target,
            source: error.into(),
        }
    }
}

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

/// `url` with its password replaced by `***`, both in the user-info part
/// (`postgres://user:secret@host`) and in a `password=` parameter.
pub(crate) fn redact_url(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some((scheme, rest)) = url.split_once("://") {
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if let Some((userinfo, host)) = authority.rsplit_once('@')
            && let Some((user, _password)) = userinfo.split_once(':')
        {
            out = format!("{scheme}://{user}:***@{host}{tail}");
        }
    }
    let mut redacted = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.to_ascii_lowercase().find("password=") {
        let value_start = at + "password=".len();
        redacted.push_str(&rest[..value_start]);
        redacted.push_str("***");
        let value_len = rest[value_start..]
            .find(['&', ' '])
            .unwrap_or(rest.len() - value_start);
        rest = &rest[value_start + value_len..];
    }
    redacted.push_str(rest);
    redacted
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn redact_url_hides_every_password() {
        assert_eq!(
            redact_url("postgres://mmo:s3cret@db.local:5432/game"),
            "postgres://mmo:***@db.local:5432/game"
        );
        assert_eq!(
            redact_url("postgresql://mmo@db/game?password=s3cret&sslmode=disable"),
            "postgresql://mmo@db/game?password=***&sslmode=disable"
        );
        assert_eq!(
            redact_url("postgres://a:b@h/d?PASSWORD=x"),
            "postgres://a:***@h/d?PASSWORD=***"
        );
        assert_eq!(
            redact_url("postgres://mmo@db/game"),
            "postgres://mmo@db/game"
        );
        assert_eq!(
            redact_url("host=db password=x user=y"),
            "host=db password=*** user=y"
        );
    }
}
