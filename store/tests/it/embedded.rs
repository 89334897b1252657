//! The suite on the embedded store, and its own failure cases: damaged records written with
//! redb directly, a database another handle holds, a directory that cannot be made.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use store::{CharacterStore, EMBEDDED_FILE_NAME, StoreError, StoreSpec};

use crate::suite::{Backend, suite};
use crate::{expected, save};

/// A fresh directory under the system's temporary directory, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "store-embedded-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An embedded store in a directory that does not exist yet (open must create it).
struct Embedded {
    dir: TempDir,
}

impl Embedded {
    fn new() -> Self {
        Self {
            dir: TempDir::new(),
        }
    }

    fn spec(&self) -> StoreSpec {
        StoreSpec::Embedded {
            dir: self.dir.path().join("nested").join("data"),
        }
    }
}

impl Backend for Embedded {
    fn open(&self) -> Box<dyn CharacterStore> {
        store::open(&self.spec()).unwrap()
    }
}

suite!(Embedded::new());

const TABLE: redb::TableDefinition<'static, &str, &[u8]> = redb::TableDefinition::new("characters");

/// Writes `value` under `account` with redb itself, past the store's checks.
fn write_raw(spec: &StoreSpec, account: &str, value: &[u8]) {
    let StoreSpec::Embedded { dir } = spec else {
        unreachable!()
    };
    let db = redb::Database::create(dir.join(EMBEDDED_FILE_NAME)).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(TABLE)
        .unwrap()
        .insert(account, value)
        .unwrap();
    txn.commit().unwrap();
}

#[test]
fn a_damaged_record_is_corrupt_and_nothing_panics() {
    let backend = Embedded::new();
    let ada = save("ada", [1.0, 2.0], 10);
    let bob = save("bob", [3.0, 4.0], 10);
    backend
        .open()
        .save_batch(&[ada.clone(), bob.clone()])
        .unwrap();

    let damages: [&[u8]; 5] = [
        b"",
        b"\x01",
        b"\xffgarbage bytes that are no record at all",
        &[1, 200, 0, b'x'],
        &[0u8; 64],
    ];
    for damage in damages {
        write_raw(&backend.spec(), "ada", damage);
        let mut store = backend.open();
        match store.load("ada") {
            Err(StoreError::Corrupt { account, .. }) => assert_eq!(account, "ada"),
            other => panic!("{damage:?}: expected Corrupt, got {other:?}"),
        }
        assert!(
            matches!(store.all(), Err(StoreError::Corrupt { account, .. }) if account == "ada")
        );
        // Other records are intact and readable.
        assert_eq!(store.load("bob").unwrap(), Some(expected(&bob, 1, 10)));
        // A batch that would overwrite the damaged record fails whole: bob is not written
        // either, and the damaged bytes stay for an operator to inspect.
        let batch = [save("bob", [7.0, 7.0], 20), save("ada", [5.0, 5.0], 20)];
        let err = store.save_batch(&batch).unwrap_err();
        assert!(
            matches!(&err, StoreError::Corrupt { account, .. } if account == "ada"),
            "{err}"
        );
        assert!(!err.is_retryable());
        assert_eq!(store.load("bob").unwrap(), Some(expected(&bob, 1, 10)));
        assert!(err.to_string().contains("\"ada\""), "{err}");
    }
}

#[test]
fn a_second_handle_on_the_same_directory_is_refused_until_the_first_is_dropped() {
    let backend = Embedded::new();
    let mut first = backend.open();
    first.save_batch(&[save("ada", [1.0, 1.0], 1)]).unwrap();
    let Err(err) = store::open(&backend.spec()) else {
        panic!("a second handle opened the same database");
    };
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(
        err.to_string().contains("nested"),
        "the error should name the directory: {err}"
    );
    drop(first);
    let mut second = backend.open();
    assert_eq!(second.load("ada").unwrap().unwrap().version, 1);
}

#[test]
fn a_directory_that_cannot_be_made_is_an_open_error() {
    let dir = TempDir::new();
    std::fs::create_dir_all(dir.path()).unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let spec = StoreSpec::Embedded {
        dir: file.join("data"),
    };
    let Err(err) = store::open(&spec) else {
        panic!("opened a store under a file");
    };
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(err.to_string().contains("a-file"), "{err}");
    // A file that is not a redb database.
    let spec = StoreSpec::Embedded {
        dir: dir.path().join("garbage"),
    };
    std::fs::create_dir_all(dir.path().join("garbage")).unwrap();
    std::fs::write(
        dir.path().join("garbage").join(EMBEDDED_FILE_NAME),
        b"junk junk junk",
    )
    .unwrap();
    assert!(matches!(store::open(&spec), Err(StoreError::Open { .. })));
}
