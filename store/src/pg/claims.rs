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

/// Taken when free, lapsed or already the holder's; `RETURNING` a row only then.
const CLAIM: &str = "INSERT INTO account_claims AS c (account, holder, until_ms)
    VALUES ($1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $3)
    ON CONFLICT (account) DO UPDATE SET holder = EXCLUDED.holder, until_ms = EXCLUDED.until_ms
    WHERE c.holder = EXCLUDED.holder
        OR c.until_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    RETURNING holder";

const RENEW: &str = "UPDATE account_claims
    SET until_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $3
    WHERE holder = $1 AND account = ANY($2)";

const RELEASE: &str = "DELETE FROM account_claims WHERE holder = $1 AND account = ANY($2)";

fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2)
}

/// [`crate::CharacterStore::claim`].
pub(super) fn claim(
    client: &mut Client,
    account: &str,
    holder: &str,
    ttl: Duration,
) -> Result<bool, postgres::Error> {
    let row = client.query_opt(CLAIM, &[&account, &holder, &millis(ttl)])?;
    Ok(row.is_some())
}

/// [`crate::CharacterStore::renew_claims`].
pub(super) fn renew(
    client: &mut Client,
    holder: &str,
    accounts: &[String],
    ttl: Duration,
) -> Result<(), postgres::Error> {
    if accounts.is_empty() {
        return Ok(());
    }
    client.execute(RENEW, &[&holder, &accounts, &millis(ttl)])?;
    Ok(())
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
