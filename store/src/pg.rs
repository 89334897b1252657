//! The PostgreSQL store: the synchronous `postgres` client, one connection, reconnected on
//! demand.
//!
//! The connection has no TLS (`NoTls`): the client is built without openssl or any TLS
//! provider, so the database must be reached over a trusted network or a unix socket.

use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, Config, GenericClient, NoTls, Row, Statement};

use crate::{Character, CharacterStore, Save, StoreError, validate_batch};

mod claims;

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
];

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
    /// Writes `saves` (one per account) in one statement.
    fn save(&mut self, saves: &[&Save]) -> Result<(), postgres::Error> {
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
            Ok(()) => None,
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

    fn save_batch(&mut self, saves: &[Save]) -> Result<(), StoreError> {
        let batch = validate_batch(saves)?;
        if batch.is_empty() {
            return Ok(());
        }
        let saves: Vec<&Save> = batch.into_values().collect();
        self.with_conn(|conn, target| match conn.save(&saves) {
            Ok(()) => Ok(()),
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

    fn claim(&mut self, account: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        self.with_conn(|conn, target| {
            claims::claim(&mut conn.client, account, holder, ttl).map_err(|e| classify(target, e))
        })
    }

    fn renew_claims(
        &mut self,
        holder: &str,
        accounts: &[String],
        ttl: Duration,
    ) -> Result<(), StoreError> {
        self.with_conn(|conn, target| {
            claims::renew(&mut conn.client, holder, accounts, ttl).map_err(|e| classify(target, e))
        })
    }

    fn release_claims(&mut self, holder: &str, accounts: &[String]) -> Result<(), StoreError> {
        self.with_conn(|conn, target| {
            claims::release(&mut conn.client, holder, accounts).map_err(|e| classify(target, e))
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

/// Writes `saves` (one per account) with the prepared [`SAVE_SQL`] in one statement.
fn write_saves(
    client: &mut impl GenericClient,
    statement: &Statement,
    saves: &[&Save],
) -> Result<(), postgres::Error> {
    let accounts: Vec<&str> = saves.iter().map(|s| s.account.as_str()).collect();
    let names: Vec<&str> = saves.iter().map(|s| s.name.as_str()).collect();
    let xs: Vec<f32> = saves.iter().map(|s| s.pos[0]).collect();
    let ys: Vec<f32> = saves.iter().map(|s| s.pos[1]).collect();
    let maps: Vec<&str> = saves.iter().map(|s| s.map.as_str()).collect();
    let now_ms: Vec<i64> = saves.iter().map(|s| s.now_ms).collect();
    client.execute(statement, &[&accounts, &names, &xs, &ys, &maps, &now_ms])?;
    Ok(())
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

/// `url` with every password replaced by `***`, for logs and error messages.
///
/// It reads `url` as `postgres::Config` does. A URL (`scheme://…`): the user info runs to
/// the first `@`, whatever comes before it (`/`, `?` and `:` included), and its password
/// from its first `:`; a query parameter's value runs to the next `&`, and its name is
/// percent-decoded. Anything else is read as `key=value` pairs: spaces around `=`, values
/// in single quotes, backslash escapes. It errs towards hiding more: a raw `@` in a
/// password (the parser would stop at it, and fail to connect) hides everything up to the
/// last `@` before the query; any parameter whose name holds `password`, in any case, is
/// hidden; the rest of a `key=value` string the parser would reject is hidden when it
/// mentions a password.
pub(crate) fn redact_url(url: &str) -> String {
    match url_scheme_len(url) {
        Some(len) => redact_url_form(url, len),
        None => redact_key_value(url),
    }
}

/// The length of `s`'s `scheme://` prefix, when it has one.
fn url_scheme_len(s: &str) -> Option<usize> {
    let (scheme, _) = s.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let scheme_chars = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first.is_ascii_alphabetic() && scheme_chars).then_some(scheme.len() + "://".len())
}

/// [`redact_url`] of a URL whose `scheme://` is `url[..start]`.
fn redact_url_form(url: &str, start: usize) -> String {
    let (scheme, rest) = url.split_at(start);
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    let mut tail = rest;
    if let Some(first_at) = rest.find('@') {
        // The parser's user info ends at the first '@'. Host names hold no '@', so more of
        // them before the query's first `name=` mean a password with a raw '@': the user
        // info ends at the last one.
        let after = &rest[first_at + 1..];
        let before_query = &after[..after.find('=').unwrap_or(after.len())];
        let userinfo_end = before_query
            .rfind('@')
            .map_or(first_at, |at| first_at + 1 + at);
        if let Some(colon) = rest[..userinfo_end].find(':') {
            out.push_str(&rest[..=colon]);
            out.push_str("***");
            tail = &rest[userinfo_end..];
        }
    }
    out.push_str(&redact_query(tail));
    out
}

/// `s` (a URL after its user info) with the value of every parameter named like a password
/// hidden: a parameter starts `s` or follows a `?` or `&`, and its value runs to the next
/// `&`, as the parser reads it.
fn redact_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let name_len = rest.find(['=', '&', '?']).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_len);
        if let Some(value) = after.strip_prefix('=')
            && names_password(&percent_decode(name))
        {
            out.push_str(name);
            out.push_str("=***");
            rest = &value[value.find('&').unwrap_or(value.len())..];
        }
        match rest.find(['&', '?']) {
            Some(at) => {
                out.push_str(&rest[..=at]);
                rest = &rest[at + 1..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// `s` with `%XX` escapes decoded (other bytes as they are; invalid UTF-8 replaced).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| Some((hex_digit(hex[0])? << 4) | hex_digit(hex[1])?));
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Whether a parameter's name may carry a password (`password`, in any case).
fn names_password(name: &str) -> bool {
    name.to_ascii_lowercase().contains("password")
}

/// [`redact_url`] of a `key=value` connection string, read as the parser reads it.
fn redact_key_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let key_start = rest.len() - rest.trim_start().len();
        let key_len = rest[key_start..]
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(rest.len() - key_start);
        if key_len == 0 {
            // Only whitespace left, or a '=' with no key: the parser ends or fails here.
            if !names_password(rest) {
                out.push_str(rest);
            } else {
                out.push_str(&rest[..key_start]);
                out.push_str("***");
            }
            return out;
        }
        let key_end = key_start + key_len;
        let secret = names_password(&rest[key_start..key_end]);
        let Some(after_eq) = rest[key_end..].trim_start().strip_prefix('=') else {
            // No '=' after the key: the parser fails here. Keep what cannot be a password.
            out.push_str(&rest[..key_end]);
            let after = &rest[key_end..];
            if secret || names_password(after) {
                if !after.trim().is_empty() {
                    out.push_str(" ***");
                }
            } else {
                out.push_str(after);
            }
            return out;
        };
        let value = after_eq.trim_start();
        let value_start = rest.len() - value.len();
        let value_len = key_value_len(value);
        out.push_str(&rest[..value_start]);
        out.push_str(if secret { "***" } else { &value[..value_len] });
        rest = &value[value_len..];
    }
}

/// The length of the value `s` starts with, in a `key=value` string: up to the closing
/// quote of a quoted value (the end of `s` when it has none), else up to whitespace; a
/// backslash escapes the character after it.
fn key_value_len(s: &str) -> usize {
    let quoted = s.starts_with('\'');
    let mut chars = s.char_indices().skip(usize::from(quoted));
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if quoted => return at + 1,
            c if !quoted && c.is_whitespace() => return at,
            _ => {}
        }
    }
    s.len()
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

    /// The password `postgres::Config` reads from `url`, which must parse.
    fn parsed_password(url: &str) -> String {
        let config: postgres::Config = url.parse().unwrap_or_else(|err| panic!("{url}: {err}"));
        let password = config
            .get_password()
            .unwrap_or_else(|| panic!("{url}: no password"));
        String::from_utf8(password.to_vec()).unwrap()
    }

    /// Passwords holding the characters that end a URL's authority or user info: the parser
    /// takes the user info up to the first '@', so '/', '?' and ':' are part of the password,
    /// and redaction hides all of it.
    #[test]
    fn redact_url_hides_passwords_holding_url_delimiters() {
        let cases = [
            ("postgres://mmo:s3cr/et@db/game", "s3cr/et"),
            ("postgres://mmo:s3c?ret@db:5432/game", "s3c?ret"),
            ("postgresql://mmo:s3:cr:et@db:5432/game", "s3:cr:et"),
            (
                "postgres://mmo:a/b?c:d&e=f@db/game?sslmode=disable",
                "a/b?c:d&e=f",
            ),
            ("postgres://mmo:s3c%40ret@db/game", "s3c@ret"),
            (
                "postgres://mmo:s3cr/et@/game?host=/run/postgresql",
                "s3cr/et",
            ),
        ];
        for (url, password) in cases {
            assert_eq!(parsed_password(url), password, "{url}");
            let redacted = redact_url(url);
            assert!(!redacted.contains(password), "{url} -> {redacted}");
            assert!(redacted.starts_with("postgres") && redacted.contains("mmo:***@"));
        }
        assert_eq!(
            redact_url("postgres://mmo:s3cr/et@db/game"),
            "postgres://mmo:***@db/game"
        );
        assert_eq!(
            redact_url("postgres://mmo:s3c?ret@db:5432/game"),
            "postgres://mmo:***@db:5432/game"
        );
        assert_eq!(
            redact_url("postgres://mmo:a/b?c:d&e=f@db/game?sslmode=disable"),
            "postgres://mmo:***@db/game?sslmode=disable"
        );
        // A raw '@': the parser stops at the first one (and the login fails); nothing of what
        // was meant as the password shows.
        assert_eq!(
            redact_url("postgres://mmo:s3c@r@et@db/game?application_name=me@home"),
            "postgres://mmo:***@db/game?application_name=me@home"
        );
        assert_eq!(
            redact_url("postgres://me@corp:s3cret@db/game"),
            "postgres://me@corp:***@db/game"
        );
        // Not a postgres:// URL (refused by StoreSpec, and echoed in its error): the same.
        assert_eq!(
            redact_url("mysql://mmo:s3cr/et@db/game"),
            "mysql://mmo:***@db/game"
        );
    }

    #[test]
    fn redact_url_leaves_urls_without_a_password_alone() {
        for url in [
            "postgres://mmo@db/game",
            "postgres://db:5432/game?sslmode=disable&application_name=a:b",
            "postgresql:///game?host=/run/postgresql&user=mmo",
            "postgres://mmo@db:5432",
            "postgres://",
        ] {
            let config: postgres::Config = url.parse().unwrap();
            assert!(config.get_password().is_none(), "{url}");
            assert_eq!(redact_url(url), url);
        }
    }

    /// A password query parameter's value runs to the next '&' ('?' and spaces included),
    /// and its name may be percent-encoded.
    #[test]
    fn redact_url_hides_password_parameters_as_the_parser_reads_them() {
        let cases = [
            (
                "postgres://mmo@db/game?password=s3c?r et&sslmode=disable",
                "s3c?r et",
                "postgres://mmo@db/game?password=***&sslmode=disable",
            ),
            (
                "postgres://mmo@db/game?sslmode=disable&pass%77ord=s3c/ret",
                "s3c/ret",
                "postgres://mmo@db/game?sslmode=disable&pass%77ord=***",
            ),
            (
                "postgres://mmo:one@db/game?password=two",
                "two",
                "postgres://mmo:***@db/game?password=***",
            ),
        ];
        for (url, password, redacted) in cases {
            assert_eq!(parsed_password(url), password, "{url}");
            assert_eq!(redact_url(url), redacted);
        }
    }

    /// `key=value` strings: spaces around '=', quoted values, backslash escapes.
    #[test]
    fn redact_url_hides_key_value_passwords() {
        let cases = [
            (
                "host=db password=s3cret user=mmo",
                "s3cret",
                "host=db password=*** user=mmo",
            ),
            (
                "host=db password = 's3 cr\\'et' user=mmo",
                "s3 cr'et",
                "host=db password = *** user=mmo",
            ),
            (
                "password=s3\\ cret dbname=game",
                "s3 cret",
                "password=*** dbname=game",
            ),
            (
                "user=mmo\tpassword=s3cr/et@x",
                "s3cr/et@x",
                "user=mmo\tpassword=***",
            ),
        ];
        for (conninfo, password, redacted) in cases {
            assert_eq!(parsed_password(conninfo), password, "{conninfo}");
            assert_eq!(redact_url(conninfo), redacted);
            for part in password.split(' ') {
                assert!(!redact_url(conninfo).contains(part), "{conninfo}");
            }
        }
        // What the parser refuses keeps no word that may be the password.
        assert_eq!(
            redact_url("host=db password 's3 cret'"),
            "host=db password ***"
        );
        assert_eq!(redact_url("host db password=s3cret"), "host ***");
        assert_eq!(redact_url("password='s3 cret"), "password=***");
        assert_eq!(redact_url("host=db port"), "host=db port");
    }
}
