//! The suite both stores pass. Each function takes a [`Backend`], which opens handles on one
//! fresh store; `suite!` turns the list into tests for a backend.

use store::{CharacterStore, MAX_TEXT_BYTES, Save, SaveOrder, StoreError};

use crate::{expected, save};

/// Opens handles on one fresh store; every handle sees the same data.
pub(crate) trait Backend {
    /// A new handle on the store.
    fn open(&self) -> Box<dyn CharacterStore>;
}

/// One `#[test]` per suite function, each on a backend made by `$make`.
macro_rules! suite {
    ($make:expr) => {
        #[test]
        fn empty_store() {
            crate::suite::empty_store(&$make);
        }
        #[test]
        fn save_then_load() {
            crate::suite::save_then_load(&$make);
        }
        #[test]
        fn version_grows_per_write() {
            crate::suite::version_grows_per_write(&$make);
        }
        #[test]
        fn last_save_of_an_account_in_a_batch_wins() {
            crate::suite::last_save_of_an_account_in_a_batch_wins(&$make);
        }
        #[test]
        fn an_invalid_save_fails_the_whole_batch() {
            crate::suite::an_invalid_save_fails_the_whole_batch(&$make);
        }
        #[test]
        fn many_accounts_in_byte_order() {
            crate::suite::many_accounts_in_byte_order(&$make);
        }
        #[test]
        fn reopen_keeps_everything() {
            crate::suite::reopen_keeps_everything(&$make);
        }
        #[test]
        fn a_save_older_than_the_stored_one_is_skipped() {
            crate::suite::a_save_older_than_the_stored_one_is_skipped(&$make);
        }
        #[test]
        fn text_and_numbers_round_trip_exactly() {
            crate::suite::text_and_numbers_round_trip_exactly(&$make);
        }
    };
}
pub(crate) use suite;

pub(crate) fn empty_store(backend: &dyn Backend) {
    let mut store = backend.open();
    store.ping().unwrap();
    assert_eq!(store.load("nobody").unwrap(), None);
    assert_eq!(store.all().unwrap(), vec![]);
    store.save_batch(&[]).unwrap();
    assert_eq!(store.all().unwrap(), vec![]);
}

pub(crate) fn save_then_load(backend: &dyn Backend) {
    let mut store = backend.open();
    let ada = save("ada", [3.5, -4.25], 1_000);
    store.save_batch(std::slice::from_ref(&ada)).unwrap();
    assert_eq!(store.load("ada").unwrap(), Some(expected(&ada, 1, 1_000)));
    assert_eq!(store.load("ad").unwrap(), None);
    assert_eq!(store.load("ada ").unwrap(), None);
    assert_eq!(store.all().unwrap(), vec![expected(&ada, 1, 1_000)]);
}

pub(crate) fn version_grows_per_write(backend: &dyn Backend) {
    let mut store = backend.open();
    let mut last = save("ada", [0.0, 0.0], 0);
    for version in 1..=5u8 {
        let now_ms = 1_000 * i64::from(version);
        last = Save {
            name: format!("Ada {version}"),
            map: format!("zone-{version}"),
            ..save("ada", [f32::from(version), -f32::from(version)], now_ms)
        };
        store.save_batch(std::slice::from_ref(&last)).unwrap();
        let loaded = store.load("ada").unwrap().unwrap();
        assert_eq!(loaded, expected(&last, u64::from(version), 1_000));
    }
    // Another account in the same store starts at version 1 and leaves ada alone.
    store.save_batch(&[save("bob", [1.0, 1.0], 9_000)]).unwrap();
    assert_eq!(store.load("bob").unwrap().unwrap().version, 1);
    assert_eq!(store.load("ada").unwrap(), Some(expected(&last, 5, 1_000)));
}

pub(crate) fn last_save_of_an_account_in_a_batch_wins(backend: &dyn Backend) {
    let mut store = backend.open();
    store.save_batch(&[save("ada", [0.0, 0.0], 10)]).unwrap();
    let batch = [
        save("ada", [1.0, 1.0], 20),
        save("bob", [5.0, 5.0], 20),
        save("ada", [2.0, 2.0], 21),
        save("ada", [3.0, 3.0], 22),
    ];
    store.save_batch(&batch).unwrap();
    assert_eq!(store.load("ada").unwrap(), Some(expected(&batch[3], 2, 10)));
    assert_eq!(store.load("bob").unwrap(), Some(expected(&batch[1], 1, 20)));
}

pub(crate) fn an_invalid_save_fails_the_whole_batch(backend: &dyn Backend) {
    let mut store = backend.open();
    let ada = save("ada", [1.0, 2.0], 100);
    store.save_batch(std::slice::from_ref(&ada)).unwrap();
    let before = store.all().unwrap();

    let long = "x".repeat(MAX_TEXT_BYTES + 1);
    let invalid: Vec<(&str, Save)> = vec![
        ("nan", save("carl", [f32::NAN, 0.0], 200)),
        ("infinity", save("carl", [0.0, f32::NEG_INFINITY], 200)),
        ("empty account", save("", [0.0, 0.0], 200)),
        ("long account", save(&long, [0.0, 0.0], 200)),
        (
            "long name",
            Save {
                name: long.clone(),
                ..save("carl", [0.0, 0.0], 200)
            },
        ),
        (
            "long map",
            Save {
                map: long.clone(),
                ..save("carl", [0.0, 0.0], 200)
            },
        ),
        (
            "nul in name",
            Save {
                name: "a\0b".into(),
                ..save("carl", [0.0, 0.0], 200)
            },
        ),
        ("nul in account", save("ca\0rl", [0.0, 0.0], 200)),
        (
            "session beyond a bigint",
            Save {
                order: Some(SaveOrder {
                    session: u64::MAX,
                    epoch: 0,
                }),
                ..save("carl", [0.0, 0.0], 200)
            },
        ),
    ];
    for (what, bad) in invalid {
        // The bad save sits between good ones: an existing account and a new one.
        let batch = [
            save("ada", [9.0, 9.0], 200),
            bad.clone(),
            save("bob", [3.0, 3.0], 200),
        ];
        match store.save_batch(&batch) {
            Err(StoreError::Invalid { account, .. }) => assert_eq!(account, bad.account, "{what}"),
            other => panic!("{what}: expected Invalid, got {other:?}"),
        }
        assert_eq!(
            store.all().unwrap(),
            before,
            "{what}: something was written"
        );
    }
    // The store still works after the refusals.
    store.save_batch(&[save("bob", [3.0, 3.0], 300)]).unwrap();
    assert_eq!(store.all().unwrap().len(), 2);
}

pub(crate) fn many_accounts_in_byte_order(backend: &dyn Backend) {
    let mut store = backend.open();
    // Upper case, digits, punctuation and non-ASCII: a locale collation would order these
    // differently from bytes.
    let mut accounts: Vec<String> = (0..1500)
        .map(|i| match i % 5 {
            0 => format!("player{i}"),
            1 => format!("Player{i}"),
            2 => format!("é{i}"),
            3 => format!("_{i}"),
            _ => format!("{i}z"),
        })
        .collect();
    let saves: Vec<Save> = accounts
        .iter()
        .enumerate()
        .map(|(i, a)| save(a, [i as f32 * 0.5, -(i as f32)], 5_000 + i as i64))
        .collect();
    store.save_batch(&saves[..1000]).unwrap();
    store.save_batch(&saves[1000..]).unwrap();
    // A second write to a slice of them.
    store.save_batch(&saves[100..300]).unwrap();

    accounts.sort();
    let all = store.all().unwrap();
    let got: Vec<&str> = all.iter().map(|c| c.account.as_str()).collect();
    assert_eq!(got, accounts);
    for (i, s) in saves.iter().enumerate() {
        let version = if (100..300).contains(&i) { 2 } else { 1 };
        assert_eq!(
            store.load(&s.account).unwrap(),
            Some(expected(s, version, s.now_ms))
        );
    }
}

pub(crate) fn reopen_keeps_everything(backend: &dyn Backend) {
    let saves: Vec<Save> = (0..50)
        .map(|i| save(&format!("p{i:02}"), [i as f32, 1.0], i))
        .collect();
    let before = {
        let mut store = backend.open();
        store.save_batch(&saves).unwrap();
        store.save_batch(&saves[..10]).unwrap();
        store.all().unwrap()
    };
    assert_eq!(before.len(), 50);
    let mut store = backend.open();
    assert_eq!(store.all().unwrap(), before);
    store.save_batch(&saves[..1]).unwrap();
    assert_eq!(store.load("p00").unwrap().unwrap().version, 3);
}

pub(crate) fn text_and_numbers_round_trip_exactly(backend: &dyn Backend) {
    let mut store = backend.open();
    let longest = "é".repeat(MAX_TEXT_BYTES / 2);
    let saves = [
        Save {
            name: "Zoë 🐉 \"quoted\" 'single' \\ back".into(),
            map: "Map/with spaces & symbols %".into(),
            ..save("unicode ✓", [f32::MAX, f32::MIN_POSITIVE], i64::MAX)
        },
        Save {
            name: longest.clone(),
            map: longest.clone(),
            ..save(&longest, [-f32::MAX, 1.0e-40], i64::MIN)
        },
        Save {
            name: String::new(),
            map: String::new(),
            ..save("a", [0.1, -0.0], 0)
        },
    ];
    store.save_batch(&saves).unwrap();
    for s in &saves {
        let loaded = store.load(&s.account).unwrap().unwrap();
        assert_eq!(loaded, expected(s, 1, s.now_ms));
        // Exact bits, not just equal values.
        assert_eq!(loaded.pos.map(f32::to_bits), s.pos.map(f32::to_bits));
    }
}

/// Saves with an order are written in that order whatever order they arrive in: an older
/// one is skipped and counted; an equal or newer one is written; one without an order is
/// always written and keeps the stored order.
pub(crate) fn a_save_older_than_the_stored_one_is_skipped(backend: &dyn Backend) {
    let mut store = backend.open();
    let at = |x: f32, session: u64, epoch: u32| Save {
        order: Some(SaveOrder { session, epoch }),
        ..save("ada", [x, 0.0], i64::from(epoch))
    };
    let order = |store: &mut Box<dyn CharacterStore>| {
        let ada = store.load("ada").unwrap().unwrap();
        (
            ada.pos[0],
            ada.order.map(|o| (o.session, o.epoch)),
            ada.version,
        )
    };
    assert_eq!(store.save_batch(&[at(2.0, 5, 2)]).unwrap(), 0);
    // The zone the character left writes late: skipped, nothing changes.
    assert_eq!(store.save_batch(&[at(1.0, 5, 1)]).unwrap(), 1);
    assert_eq!(order(&mut store), (2.0, Some((5, 2)), 1));
    // An earlier login's save is older than any of this one's, whatever its epoch.
    assert_eq!(
        store
            .save_batch(&[at(9.0, 4, 30), save("bob", [1.0, 1.0], 7)])
            .unwrap(),
        1
    );
    assert_eq!(order(&mut store), (2.0, Some((5, 2)), 1));
    assert!(store.load("bob").unwrap().is_some(), "the rest is written");
    // The same order again (one zone's saves in a row) and newer ones are written.
    assert_eq!(store.save_batch(&[at(3.0, 5, 2)]).unwrap(), 0);
    assert_eq!(order(&mut store), (3.0, Some((5, 2)), 2));
    assert_eq!(store.save_batch(&[at(4.0, 6, 1)]).unwrap(), 0);
    assert_eq!(order(&mut store), (4.0, Some((6, 1)), 3));
    // A save without an order is written and leaves the order as it was.
    assert_eq!(store.save_batch(&[save("ada", [5.0, 0.0], 99)]).unwrap(), 0);
    assert_eq!(order(&mut store), (5.0, Some((6, 1)), 4));
    assert_eq!(store.save_batch(&[at(6.0, 5, 9)]).unwrap(), 1);
    // The order is kept across handles (the embedded store's one at a time).
    drop(store);
    let mut other = backend.open();
    assert_eq!(order(&mut other), (5.0, Some((6, 1)), 4));
    // Of two saves of one batch, the newer by order, whichever comes last.
    assert_eq!(
        other.save_batch(&[at(8.0, 7, 5), at(7.0, 7, 3)]).unwrap(),
        0
    );
    assert_eq!(order(&mut other), (8.0, Some((7, 5)), 5));
}
