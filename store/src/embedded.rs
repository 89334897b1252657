//! The embedded store: one redb file in the data directory, one table keyed by account.

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};

use crate::error::Cause;
use crate::{Character, CharacterStore, Save, StoreError, record, validate_batch};

/// The file the embedded store keeps in its directory.
pub const EMBEDDED_FILE_NAME: &str = "characters.redb";

/// Account → record (see `record` for the value's format).
const CHARACTERS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("characters");

/// A redb database holding the characters table.
pub(crate) struct EmbeddedStore {
    /// The open database; `None` after an I/O failure until it is opened again.
    db: RefCell<Option<Database>>,
    /// Set by an I/O failure: redb fails every later call on a database whose I/O failed
    /// once (`PreviousIo`), however the fault passed, so the next call opens the file
    /// again (redb repairs it on open) instead of failing for as long as the process runs.
    reopen: Cell<bool>,
    /// The directory, for error messages.
    dir: PathBuf,
}

impl EmbeddedStore {
    /// Creates `dir` when missing and opens (or creates) the database file in it.
    pub(crate) fn open(dir: &Path) -> Result<Self, StoreError> {
        let open_error = |source: Cause| StoreError::Open {
            target: dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_error(e.into()))?;
        let db = Database::create(dir.join(EMBEDDED_FILE_NAME)).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => open_error(
                "another process has it open (is another server running with this data \
                 directory?)"
                    .into(),
            ),
            e => open_error(e.into()),
        })?;
        let store = Self {
            db: RefCell::new(Some(db)),
            reopen: Cell::new(false),
            dir: dir.to_owned(),
        };
        // Create the table now, so that readers never meet a database without it.
        store.write(|_| Ok(())).map_err(|e| open_error(e.into()))?;
        Ok(store)
    }

    /// Runs `f` on the database, opened again first when an I/O failure closed it.
    /// Failing to open it is an I/O failure too: retryable, tried again at the next call.
    fn with_db<T>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let closed = || StoreError::Unavailable {
            target: self.dir.display().to_string(),
            source: "the database is closed after an I/O failure".into(),
        };
        if self.reopen.get() {
            let mut slot = self.db.try_borrow_mut().map_err(|_| closed())?;
            // Closed before it is opened again: redb refuses a second handle on one file.
            *slot = None;
            let db = Database::create(self.dir.join(EMBEDDED_FILE_NAME)).map_err(|e| {
                StoreError::Unavailable {
                    target: self.dir.display().to_string(),
                    source: redb::Error::from(e).into(),
                }
            })?;
            *slot = Some(db);
            self.reopen.set(false);
        }
        let slot = self.db.try_borrow().map_err(|_| closed())?;
        f(slot.as_ref().ok_or_else(closed)?)
    }

    /// Runs `f` on the characters table in one durable write transaction, committed when
    /// `f` succeeds and aborted (dropped) otherwise.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut redb::Table<'_, &'static str, &'static [u8]>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.with_db(|db| self.write_in(db, f))
    }

    fn write_in<T>(
        &self,
        db: &Database,
        f: impl FnOnce(&mut redb::Table<'_, &'static str, &'static [u8]>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut txn = db.begin_write().map_err(|e| self.fail(e))?;
        // Immediate is redb's default; it is set here because the crash guarantee rests on it.
        txn.set_durability(Durability::Immediate)
            .map_err(|e| self.fail(e))?;
        {
            let mut table = txn.open_table(CHARACTERS).map_err(|e| self.fail(e))?;
            let out = f(&mut table)?;
            drop(table);
            txn.commit().map_err(|e| self.fail(e))?;
            Ok(out)
        }
    }

    /// Maps a redb error: I/O failures may pass (a full disk, a flaky device) and are
    /// retryable, the database opened again at the next call; everything else is a backend
    /// failure.
    fn fail(&self, error: impl Into<redb::Error>) -> StoreError {
        let error: redb::Error = error.into();
        let target = self.dir.display().to_string();
        match error {
            redb::Error::Io(_) | redb::Error::PreviousIo => {
                self.reopen.set(true);
                StoreError::Unavailable {
                    target,
                    source: error.into(),
                }
            }
            _ => StoreError::Backend {
                target,
                source: error.into(),
            },
        }
    }
}

impl CharacterStore for EmbeddedStore {
    fn load(&mut self, account: &str) -> Result<Option<Character>, StoreError> {
        self.with_db(|db| {
            let txn = db.begin_read().map_err(|e| self.fail(e))?;
            let table = txn.open_table(CHARACTERS).map_err(|e| self.fail(e))?;
            let Some(value) = table.get(account).map_err(|e| self.fail(e))? else {
                return Ok(None);
            };
            record::decode(account, value.value()).map(Some)
        })
    }

    fn save_batch(&mut self, saves: &[Save]) -> Result<usize, StoreError> {
        let batch = validate_batch(saves)?;
        if batch.is_empty() {
            return Ok(0);
        }
        self.write(|table| {
            let mut stale = 0;
            for (account, save) in batch {
                let previous = match table.get(account).map_err(|e| self.fail(e))? {
                    Some(value) => Some(record::decode(account, value.value())?),
                    None => None,
                };
                let stored_order = previous.as_ref().and_then(|p| p.order);
                if let (Some(stored), Some(order)) = (stored_order, save.order)
                    && stored > order
                {
                    stale += 1;
                    continue;
                }
                let character = Character {
                    account: account.to_owned(),
                    name: save.name.clone(),
                    pos: save.pos,
                    map: save.map.clone(),
                    version: previous.as_ref().map_or(1, |p| p.version.saturating_add(1)),
                    created_ms: previous.as_ref().map_or(save.now_ms, |p| p.created_ms),
                    updated_ms: save.now_ms,
                    order: save.order.or(stored_order),
                };
                table
                    .insert(account, record::encode(&character).as_slice())
                    .map_err(|e| self.fail(e))?;
            }
            Ok(stale)
        })
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        self.with_db(|db| {
            let txn = db.begin_read().map_err(|e| self.fail(e))?;
            let table = txn.open_table(CHARACTERS).map_err(|e| self.fail(e))?;
            table.len().map_err(|e| self.fail(e))?;
            Ok(())
        })
    }

    fn all(&mut self) -> Result<Vec<Character>, StoreError> {
        self.with_db(|db| {
            let txn = db.begin_read().map_err(|e| self.fail(e))?;
            let table = txn.open_table(CHARACTERS).map_err(|e| self.fail(e))?;
            let mut characters = Vec::new();
            for entry in table.iter().map_err(|e| self.fail(e))? {
                let (key, value) = entry.map_err(|e| self.fail(e))?;
                // redb reads a `&str` key with a panic when its bytes are not UTF-8 (a
                // damaged page): caught, it is a damaged record like any other.
                let account =
                    std::panic::catch_unwind(AssertUnwindSafe(|| key.value())).map_err(|_| {
                        StoreError::Corrupt {
                            account: "(a key that is not UTF-8)".to_owned(),
                            reason: format!("a damaged key after {} records", characters.len()),
                        }
                    })?;
                characters.push(record::decode(account, value.value())?);
            }
            Ok(characters)
        })
    }
}
