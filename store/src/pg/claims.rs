//! Claims on accounts in PostgreSQL: which process start holds an account's one live
//! session, and until when by the database's clock (so that the processes' own clocks
//! need not agree). A claim lapses unless its holder renews it; a process killed without
//! releasing its claims holds them no longer than that.

use std::time::Duration;

use postgres::Client;

/// The claims table: an account, its holder, and the database time (milliseconds since
/// the Unix epoch) until which the claim lasts.
pub(super) const MIGRATION: &str = "CREATE TABLE account_claims (
        account text PRIMARY KEY,
        holder text NOT NULL,
        until_ms bigint NOT NULL
    )";

/// Taken when free, lapsed or already the holder's; `RETURNING` the session's number only
/// then: one more than the account's last session and than the session of the order stored
/// with its character (so that a claims row deleted by hand does not number a login below
/// the saves before it).
const CLAIM: &str = "INSERT INTO account_claims AS c (account, holder, until_ms, sessions)
    VALUES ($1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $3,
        coalesce((SELECT session FROM characters WHERE account = $1), 0) + 1)
    ON CONFLICT (account) DO UPDATE SET holder = EXCLUDED.holder, until_ms = EXCLUDED.until_ms,
        sessions = greatest(c.sessions + 1, EXCLUDED.sessions)
    WHERE c.holder = EXCLUDED.holder
        OR c.until_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    RETURNING sessions";

const RENEW: &str = "UPDATE account_claims
    SET until_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $3
    WHERE holder = $1 AND account = ANY($2)
    RETURNING account";

/// Lapsed at once; the row stays, for its count of sessions.
const RELEASE: &str = "UPDATE account_claims SET until_ms = 0
    WHERE holder = $1 AND account = ANY($2)";

/// Every live claim of the holders named `$1…` but `$2`.
const RELEASE_EARLIER: &str = "UPDATE account_claims SET until_ms = 0
    WHERE left(holder, length($1)) = $1 AND holder <> $2 AND until_ms > 0";

fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2)
}

/// [`crate::CharacterStore::claim`]: the session's number as the statement returned it
/// (counted up from 1, unless rows were damaged by hand: the caller takes it as at least 1).
pub(super) fn claim(
    client: &mut Client,
    account: &str,
    holder: &str,
    ttl: Duration,
) -> Result<Option<i64>, postgres::Error> {
    let row = client.query_opt(CLAIM, &[&account, &holder, &millis(ttl)])?;
    row.map(|row| row.try_get(0)).transpose()
}

/// [`crate::CharacterStore::renew_claims`].
pub(super) fn renew(
    client: &mut Client,
    holder: &str,
    accounts: &[String],
    ttl: Duration,
) -> Result<Vec<String>, postgres::Error> {
    if accounts.is_empty() {
        return Ok(Vec::new());
    }
    let rows = client.query(RENEW, &[&holder, &accounts, &millis(ttl)])?;
    rows.iter().map(|row| row.try_get(0)).collect()
}

/// [`crate::CharacterStore::release_earlier_claims`].
pub(super) fn release_earlier(
    client: &mut Client,
    prefix: &str,
    holder: &str,
) -> Result<u64, postgres::Error> {
    client.execute(RELEASE_EARLIER, &[&prefix, &holder])
}

/// [`crate::CharacterStore::release_claims`].
pub(super) fn release(
    client: &mut Client,
    holder: &str,
    accounts: &[String],
) -> Result<(), postgres::Error> {
    if accounts.is_empty() {
        return Ok(());
    }
    client.execute(RELEASE, &[&holder, &accounts])?;
    Ok(())
}
