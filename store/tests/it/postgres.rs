//! The suite on a real PostgreSQL server, and its own cases: two handles writing at once,
//! migrations raced by several openers, a server stopped and restarted under a handle, rows
//! damaged with SQL, and connection errors that hide the password.

use std::sync::{Arc, Barrier};

use store::test_postgres::TestPostgres;
use store::{CharacterStore, StoreError, StoreSpec};

use crate::suite::{Backend, suite};
use crate::{expected, save};

/// A PostgreSQL server of its own for one test.
struct Postgres {
    server: TestPostgres,
}

impl Postgres {
    fn new() -> Self {
        Self {
            server: TestPostgres::start().expect("cannot start the test PostgreSQL server"),
        }
    }

    fn spec(&self) -> StoreSpec {
        self.server.url().parse().unwrap()
    }

    /// A plain SQL connection, for reaching under the store.
    fn sql(&self) -> postgres::Client {
        postgres::Client::connect(&self.server.url(), postgres::NoTls).unwrap()
    }
}

impl Backend for Postgres {
    fn open(&self) -> Box<dyn CharacterStore> {
        store::open(&self.spec()).unwrap()
    }
}

suite!(Postgres::new());

#[test]
fn two_handles_write_at_once_and_every_write_counts() {
    const BATCHES: u64 = 40;
    let pg = Postgres::new();
    let handles: Vec<_> = (0..2)
        .map(|thread| {
            let mut store = pg.open();
            std::thread::spawn(move || {
                for i in 0..BATCHES {
                    // Shared accounts in opposite orders, to invite lock-order deadlocks.
                    let mut batch: Vec<_> = (0..20)
                        .map(|a| save(&format!("shared{a:02}"), [i as f32, 0.0], i as i64))
                        .collect();
                    if thread == 1 {
                        batch.reverse();
                    }
                    batch.push(save(&format!("own{thread}"), [i as f32, 1.0], i as i64));
                    store.save_batch(&batch).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let all = pg.open().all().unwrap();
    assert_eq!(all.len(), 22);
    for character in all {
        let writes = if character.account.starts_with("shared") {
            2 * BATCHES
        } else {
            BATCHES
        };
        assert_eq!(character.version, writes, "{}", character.account);
    }
}

#[test]
fn openers_racing_apply_each_migration_once() {
    let pg = Postgres::new();
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (spec, barrier) = (pg.spec(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store::open(&spec).map(|_| ())
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap().unwrap();
    }
    let rows = pg
        .sql()
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, vec![1, 2, 3]);
}

#[test]
fn a_database_newer_than_the_program_is_refused() {
    let pg = Postgres::new();
    drop(pg.open());
    pg.sql()
        .execute("INSERT INTO schema_migrations VALUES (99, 0)", &[])
        .unwrap();
    match store::open(&pg.spec()) {
        Err(StoreError::Migration { version: 99, .. }) => {}
        Err(other) => panic!("expected a migration error, got {other}"),
        Ok(_) => panic!("opened a database from the future"),
    }
}

#[test]
fn a_stopped_server_gives_retryable_errors_and_the_same_handle_recovers() {
    let mut pg = Postgres::new();
    let mut store = pg.open();
    let ada = save("ada", [1.0, 2.0], 10);
    store.save_batch(std::slice::from_ref(&ada)).unwrap();

    pg.server.stop().unwrap();
    let results = [
        store.ping(),
        store.load("ada").map(|_| ()),
        store.save_batch(&[save("bob", [0.0, 0.0], 20)]).map(|_| ()),
        store.all().map(|_| ()),
        store.ping(),
    ];
    for result in results {
        let err = result.unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
        assert!(matches!(err, StoreError::Unavailable { .. }), "{err:?}");
    }

    pg.server.start_again().unwrap();
    store.ping().unwrap();
    assert_eq!(store.load("ada").unwrap(), Some(expected(&ada, 1, 10)));
    let bob = save("bob", [0.0, 0.0], 30);
    store.save_batch(std::slice::from_ref(&bob)).unwrap();
    assert_eq!(store.load("bob").unwrap(), Some(expected(&bob, 1, 30)));
}

#[test]
fn damaged_rows_are_corrupt_and_nothing_panics() {
    let pg = Postgres::new();
    let mut store = pg.open();
    let bob = save("bob", [3.0, 4.0], 10);
    store
        .save_batch(&[save("ada", [1.0, 2.0], 10), bob.clone()])
        .unwrap();
    let mut sql = pg.sql();
    for damage in [
        "UPDATE characters SET version = 0 WHERE account = 'ada'",
        "UPDATE characters SET version = -3 WHERE account = 'ada'",
        "UPDATE characters SET x = 'NaN' WHERE account = 'ada'",
        "UPDATE characters SET y = 'Infinity', version = 1 WHERE account = 'ada'",
        "ALTER TABLE characters ALTER COLUMN name DROP NOT NULL; \
         UPDATE characters SET name = NULL, y = 0 WHERE account = 'ada'",
    ] {
        sql.batch_execute(damage).unwrap();
        match store.load("ada") {
            Err(StoreError::Corrupt { account, .. }) => assert_eq!(account, "ada", "{damage}"),
            other => panic!("{damage}: expected Corrupt, got {other:?}"),
        }
        assert!(
            matches!(store.all(), Err(StoreError::Corrupt { account, .. }) if account == "ada")
        );
        assert_eq!(store.load("bob").unwrap(), Some(expected(&bob, 1, 10)));
    }
}

/// A database whose encoding cannot hold a save's name refuses that save, and only it: the
/// batch fails as `Invalid` naming its account, nothing of it written (each other save's
/// version grows once, when the rest is written), and the store is not down.
#[test]
fn a_save_the_database_encoding_cannot_hold_is_refused_alone() {
    let pg = Postgres::new();
    pg.sql()
        .batch_execute(
            "CREATE DATABASE latin ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' \
             TEMPLATE template0",
        )
        .unwrap();
    let url = pg
        .server
        .url()
        .replace(store::test_postgres::TEST_DATABASE, "latin");
    let mut store = store::open(&url.parse().unwrap()).unwrap();
    let mut saves: Vec<_> = (0..13)
        .map(|i| save(&format!("player{i:02}"), [i as f32, 1.0], 10))
        .collect();
    // Latin-1 holds "é", not "漢".
    saves[4].name = "Zoé".to_owned();
    saves[9].name = "漢".to_owned();
    match store.save_batch(&saves) {
        Err(err @ StoreError::Invalid { .. }) => {
            assert!(!err.is_retryable());
            let StoreError::Invalid { account, reason } = err else {
                unreachable!()
            };
            assert_eq!(account, "player09");
            assert!(reason.contains("LATIN1"), "{reason}");
        }
        other => panic!("expected Invalid for player09, got {other:?}"),
    }
    // Nothing was written, and the store is up.
    store.ping().unwrap();
    assert!(store.all().unwrap().is_empty());
    saves.remove(9);
    store.save_batch(&saves).unwrap();
    for s in &saves {
        assert_eq!(store.load(&s.account).unwrap(), Some(expected(s, 1, 10)));
    }
}

#[test]
fn connection_errors_name_the_server_without_the_password() {
    let pg = Postgres::new();
    // A port nobody listens on: the server's, right after it is stopped.
    let mut server = pg.server;
    let port = server.port();
    server.stop().unwrap();
    let url = format!("postgres://postgres:hunter2@127.0.0.1:{port}/store_test");
    let Err(err) = store::open(&url.parse().unwrap()) else {
        panic!("opened a store on a stopped server");
    };
    let message = format!("{err} {err:?}");
    assert!(matches!(err, StoreError::Open { .. }), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
}

/// One live session per account between the processes sharing the database: a claim is
/// refused while another holder's lasts, renewed by its own holder, free again once
/// released or lapsed, and renewing keeps it from lapsing.
#[test]
fn an_account_is_claimed_by_one_holder_at_a_time() {
    use std::time::Duration;
    let pg = Postgres::new();
    let (mut one, mut two) = (pg.open(), pg.open());
    let long = Duration::from_secs(60);
    assert_eq!(one.claim("ada", "gw1 1", long).unwrap(), Some(1));
    assert_eq!(two.claim("ada", "gw2 7", long).unwrap(), None);
    assert_eq!(
        one.claim("ada", "gw1 1", long).unwrap(),
        Some(2),
        "its own holder renews it, for a new session"
    );
    assert_eq!(two.claim("bob", "gw2 7", long).unwrap(), Some(1));
    // Releasing another holder's claim does nothing; its own frees it.
    two.release_claims("gw2 7", &["ada".to_owned()]).unwrap();
    assert_eq!(two.claim("ada", "gw2 7", long).unwrap(), None);
    one.release_claims("gw1 1", &["ada".to_owned()]).unwrap();
    assert_eq!(two.claim("ada", "gw2 7", long).unwrap(), Some(3));
    // A claim not renewed lapses; a renewed one does not.
    let short = Duration::from_millis(1_000);
    assert!(one.claim("cy", "gw1 1", short).unwrap().is_some());
    assert!(one.claim("dee", "gw1 1", short).unwrap().is_some());
    std::thread::sleep(Duration::from_millis(700));
    one.renew_claims("gw1 1", &["dee".to_owned()], short)
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        two.claim("cy", "gw2 7", long).unwrap(),
        Some(2),
        "cy's claim lapsed"
    );
    assert_eq!(
        two.claim("dee", "gw2 7", long).unwrap(),
        None,
        "dee's claim was renewed"
    );
    // Renewing tells which claims the holder still had: cy's was taken after it lapsed.
    let renewed = one
        .renew_claims("gw1 1", &["cy".to_owned(), "dee".to_owned()], short)
        .unwrap();
    assert_eq!(renewed, ["dee".to_owned()]);
    let rows = pg
        .sql()
        .query(
            "SELECT account, holder FROM account_claims WHERE until_ms > 0 ORDER BY account",
            &[],
        )
        .unwrap();
    let held: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        held,
        [
            ("ada".to_owned(), "gw2 7".to_owned()),
            ("bob".to_owned(), "gw2 7".to_owned()),
            ("cy".to_owned(), "gw2 7".to_owned()),
            ("dee".to_owned(), "gw1 1".to_owned()),
        ]
    );
}

/// A process start takes over the claims of the earlier starts its name's prefix names,
/// and no other holder's.
#[test]
fn a_start_takes_over_its_earlier_starts_claims() {
    use std::time::Duration;
    let pg = Postgres::new();
    let mut store = pg.open();
    let long = Duration::from_secs(60);
    assert!(
        store
            .claim("ada", "server h 1.2.3.4:5 10 1", long)
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .claim("bob", "server h 1.2.3.4:5 11 2", long)
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .claim("cy", "server h 1.2.3.4:55 12 3", long)
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .claim("dee", "gateway gw1 13 4", long)
            .unwrap()
            .is_some()
    );
    let me = "server h 1.2.3.4:5 14 5";
    assert!(store.claim("eve", me, long).unwrap().is_some());
    assert_eq!(
        store
            .release_earlier_claims("server h 1.2.3.4:5 ", me)
            .unwrap(),
        2
    );
    assert!(store.claim("ada", me, long).unwrap().is_some());
    assert!(store.claim("bob", me, long).unwrap().is_some());
    assert_eq!(
        store.claim("cy", me, long).unwrap(),
        None,
        "another address's"
    );
    assert_eq!(store.claim("dee", me, long).unwrap(), None, "a gateway's");
    assert!(
        store.claim("eve", me, long).unwrap().is_some(),
        "its own stays"
    );
    assert_eq!(
        store
            .release_earlier_claims("server h 1.2.3.4:5 ", me)
            .unwrap(),
        0
    );
}

/// A login is numbered above every session stored with the account's character, even when
/// the claims' own count is gone (the table emptied by hand): its saves are not taken for
/// older than the ones before it.
#[test]
fn a_session_is_numbered_above_the_saves_before_it() {
    use std::time::Duration;
    use store::SaveOrder;
    let pg = Postgres::new();
    let mut store = pg.open();
    let long = Duration::from_secs(60);
    let mut ada = crate::save("ada", [1.0, 1.0], 10);
    ada.order = Some(SaveOrder {
        session: 41,
        epoch: 3,
    });
    store.save_batch(std::slice::from_ref(&ada)).unwrap();
    assert_eq!(store.claim("ada", "gw1 1", long).unwrap(), Some(42));
    pg.sql()
        .batch_execute("DELETE FROM account_claims")
        .unwrap();
    assert_eq!(store.claim("ada", "gw1 1", long).unwrap(), Some(42));
    assert_eq!(store.claim("bob", "gw1 1", long).unwrap(), Some(1));
}

/// An error of the server says what the server said (its code, message and the table and
/// constraint it names), not only "db error".
#[test]
fn a_refusal_says_what_the_server_said() {
    let pg = Postgres::new();
    let mut store = pg.open();
    pg.sql()
        .batch_execute("ALTER TABLE characters ADD CONSTRAINT no_bob CHECK (account <> 'bob')")
        .unwrap();
    let err = store.save_batch(&[save("bob", [1.0, 1.0], 1)]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("23514") && text.contains("no_bob") && text.contains("characters"),
        "{text}"
    );
    assert!(!err.is_retryable(), "{text}");
}
