//! The one error type of the stores.

/// The cause of an error from below the store (redb, PostgreSQL, the file system).
pub(crate) type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be opened: the directory or file could not be created or locked
    /// (another process holds it), or the first connection failed. `target` names the
    /// directory or the URL without its password.
    #[error("cannot open the store at {target}: {source}")]
    Open {
        /// The directory, or the URL without its password.
        target: String,
        /// What failed.
        #[source]
        source: Cause,
    },
    /// The storage cannot be reached now: the connection is lost or refused, or the disk
    /// failed. Retryable: the handle stays usable and the next call tries again (reconnecting
    /// to PostgreSQL).
    #[error("the store at {target} is unavailable: {source}")]
    Unavailable {
        /// The directory, or the URL without its password.
        target: String,
        /// What failed.
        #[source]
        source: Cause,
    },
    /// A stored record cannot be decoded. Nothing is changed; the record stays as it is for
    /// an operator to inspect.
    #[error("the record of account {account:?} is corrupt: {reason}")]
    Corrupt {
        /// The account whose record is damaged.
        account: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A save was refused for its own values, and nothing of its batch was written: checked
    /// before writing (empty account, text too long or with a NUL character, a position
    /// that is not finite), or refused by PostgreSQL (a character the database's encoding
    /// cannot hold, say: the batch is then halved, in transactions rolled back, until the
    /// one save it refuses is found). The rest of the batch may be written without it.
    #[error("invalid save for account {account:?}: {reason}")]
    Invalid {
        /// The account of the refused save.
        account: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The schema could not be brought to the current version at open.
    #[error("the migration to schema version {version} failed: {source}")]
    Migration {
        /// The schema version that was being applied.
        version: i32,
        /// What failed.
        #[source]
        source: Cause,
    },
    /// The string is not a store specification (a `postgres://` or `postgresql://` URL).
    #[error("bad store specification: {reason}")]
    Spec {
        /// What is wrong with it.
        reason: String,
    },
    /// The storage refused the operation for a reason retrying will not fix.
    #[error("the store at {target} failed: {source}")]
    Backend {
        /// The directory, or the URL without its password.
        target: String,
        /// What failed.
        #[source]
        source: Cause,
    },
}

impl StoreError {
    /// True when the same call may succeed later: the storage is unavailable, not wrong.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }
}
