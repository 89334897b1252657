//! The writer's tests: saves the store refuses, damaged records, an unreachable store.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

use super::*;

/// A directory under the system's temporary one, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("mmo-persist-{tag}-{}-{nanos}", std::process::id()));
        TempDir(dir)
    }

    fn spec(&self) -> store::StoreSpec {
        store::StoreSpec::Embedded {
            dir: self.0.clone(),
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn save(account: &str, pos: [f32; 2]) -> Save {
    Save {
        account: account.to_owned(),
        name: account.to_owned(),
        pos,
        map: "house".to_owned(),
        now_ms: 1_700_000_000_000,
        order: None,
    }
}

/// Saves the store refuses, one reason each, among valid ones.
fn mixed_batch() -> Vec<Save> {
    vec![
        save("ada", [1.0, 2.0]),
        save("", [1.0, 1.0]),
        save("nul\0here", [1.0, 1.0]),
        save(&"x".repeat(store::MAX_TEXT_BYTES + 1), [1.0, 1.0]),
        save("dan", [3.0, 4.0]),
        save("nan", [f32::NAN, 0.0]),
    ]
}

fn state(store: Box<dyn CharacterStore>) -> (State, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::new());
    metrics.store_up.set(1);
    let state = State::new(store, Arc::new(AtomicBool::new(true)), Arc::clone(&metrics));
    (state, metrics)
}

fn accounts(store: &mut dyn CharacterStore) -> Vec<(String, [f32; 2], u64)> {
    store
        .all()
        .unwrap()
        .into_iter()
        .map(|c| (c.account, c.pos, c.version))
        .collect()
}

#[test]
fn invalid_saves_are_dropped_and_the_valid_ones_and_later_saves_land() {
    let dir = TempDir::new("invalid");
    let (mut state, metrics) = state(store::open(&dir.spec()).unwrap());
    state.queue(mixed_batch());
    state.write();
    assert!(
        state.pending.is_empty(),
        "still pending: {:?}",
        state.pending.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        accounts(state.store.as_mut()),
        [
            ("ada".to_owned(), [1.0, 2.0], 1),
            ("dan".to_owned(), [3.0, 4.0], 1)
        ]
    );
    // Bad records are no outage: the store stays up, nothing waits for a retry.
    assert!(state.up.load(Ordering::Relaxed));
    assert_eq!(metrics.store_up.get(), 1);
    assert_eq!(metrics.save_failures.get(), 0);
    // Each refused save is counted once: the empty account, the NUL, the long text, the NaN.
    assert_eq!(metrics.saves_dropped.get(), 4);
    assert_eq!(metrics.saves_pending.get(), 0);
    assert!(state.retry_at.is_none());

    // Later saves, bad ones among them again, land at the next round.
    state.queue(vec![
        save("ada", [5.0, 6.0]),
        save("", [0.0, 0.0]),
        save("eve", [7.0, 8.0]),
    ]);
    state.write();
    assert!(state.pending.is_empty());
    assert_eq!(
        accounts(state.store.as_mut()),
        [
            ("ada".to_owned(), [5.0, 6.0], 2),
            ("dan".to_owned(), [3.0, 4.0], 1),
            ("eve".to_owned(), [7.0, 8.0], 1)
        ]
    );
    assert_eq!(metrics.saves.get(), 2 + 2);
    assert_eq!(metrics.saves_dropped.get(), 4 + 1);
    assert_eq!(metrics.store_up.get(), 1);
}

/// The writer thread end to end: an invalid save among valid ones does not hold the
/// others back, later saves land, and the store never reads as down.
#[test]
fn the_writer_keeps_saving_after_an_invalid_save() {
    let dir = TempDir::new("writer");
    let metrics = Arc::new(Metrics::new());
    let (persist, writer) = Persist::start(&dir.spec(), Arc::clone(&metrics)).unwrap();
    let wait_written = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            assert!(persist.is_up(), "{what}: the store was marked down");
            assert_eq!(metrics.store_up.get(), 1, "{what}: mmo_store_up fell to 0");
            if metrics.saves_pending.get() == 0 && metrics.saves.get() > 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {} saves still pending after 5 s",
                metrics.saves_pending.get()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    persist.try_save(mixed_batch()).unwrap();
    wait_written("first batch");
    let written = metrics.saves.get();
    persist
        .try_save(vec![save("ada", [9.0, 9.0]), save("", [0.0, 0.0])])
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while metrics.saves.get() == written {
        assert!(Instant::now() < deadline, "the later save never landed");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_written("second batch");
    writer.stop();
    drop(persist);
    let mut store = store::open(&dir.spec()).unwrap();
    assert_eq!(
        accounts(store.as_mut()),
        [
            ("ada".to_owned(), [9.0, 9.0], 2),
            ("dan".to_owned(), [3.0, 4.0], 1)
        ]
    );
}

/// A stopping world hands its last saves over, however busy the writer's queue: all of
/// them to a live writer, and to a writer that is gone none, which it says (and returns).
#[test]
fn the_last_saves_are_handed_over_or_said_lost() {
    let dir = TempDir::new("hand-over");
    let metrics = Arc::new(Metrics::new());
    let (persist, writer) = Persist::start(&dir.spec(), Arc::clone(&metrics)).unwrap();
    let mut saver = Saver::new(persist.clone(), "house".to_owned());
    let mut last = None;
    saver.record("ada", "ada", [1.0, 2.0], None, &mut last, 1_700_000_000_000);
    assert_eq!(saver.hand_over_all(Duration::from_secs(2)), 0);
    writer.stop();
    let mut last = None;
    saver.record("bob", "bob", [3.0, 4.0], None, &mut last, 1_700_000_000_000);
    assert_eq!(saver.hand_over_all(Duration::from_millis(50)), 1);
    drop((saver, persist));
    let mut store = store::open(&dir.spec()).unwrap();
    assert_eq!(
        accounts(store.as_mut()),
        [("ada".to_owned(), [1.0, 2.0], 1)]
    );
}

/// A claim the session no longer waits for is not held: asked after the session gave
/// up, it is not made; granted, its guard released when dropped unread. A session of the
/// same account ending just before a new login does not take the new login's claim away.
#[test]
fn a_claim_nobody_holds_is_released() {
    let (store, _) = Scripted::new(&[]);
    let (mut state, _) = state(Box::new(store));
    let released = claims::Released::default();
    let holder = claims::Holder {
        name: "gw1 1".to_owned(),
        earlier: None,
    };
    state.claims = Some(claims::Claims::new(holder, released));
    let held = |state: &State| state.claims.as_ref().unwrap().held().clone();
    let ask = |state: &mut State, account: &str, read: bool| {
        let (reply, answer) = oneshot::channel();
        if !read {
            drop(answer);
            state.take(Request::Claim {
                account: account.to_owned(),
                reply,
            });
            return None;
        }
        state.take(Request::Claim {
            account: account.to_owned(),
            reply,
        });
        let mut answer = answer;
        match answer.try_recv() {
            Ok(Ok(claimed)) => claimed,
            other => panic!("{other:?}"),
        }
    };
    // Gave up before the writer came to it.
    assert!(ask(&mut state, "ada", false).is_none());
    assert!(held(&state).is_empty());
    // Granted: held until its guard drops, even unread.
    let bob = ask(&mut state, "bob", true).expect("bob's claim");
    assert_eq!(held(&state), ["bob".to_owned()].into());
    drop(bob);
    state.tend_claims();
    assert!(held(&state).is_empty());
    // Bob logs out and in again at once: the new claim stays.
    let bob = ask(&mut state, "bob", true).expect("bob's claim");
    drop(bob);
    let again = ask(&mut state, "bob", true).expect("bob's new claim");
    state.tend_claims();
    assert_eq!(held(&state), ["bob".to_owned()].into());
    drop(again);
}

/// A claim handed over with a save is given back once the save is written, and not
/// before; a login of the account meanwhile takes the claim over instead (the ended
/// session's guard does not give back, later, the claim the new session holds).
#[test]
fn a_claim_handed_with_a_save_goes_back_once_the_save_is_written() {
    let (store, written) = Scripted::new(&[]);
    let (mut state, _) = state(Box::new(store));
    let holder = claims::Holder {
        name: "gw1 1".to_owned(),
        earlier: None,
    };
    state.claims = Some(claims::Claims::new(holder, claims::Released::default()));
    let held = |state: &State| state.claims.as_ref().unwrap().held();
    let claim = |state: &mut State, account: &str| {
        let (reply, mut answer) = oneshot::channel();
        let account = account.to_owned();
        state.take(Request::Claim { account, reply });
        answer.try_recv().unwrap().unwrap().expect("a free account")
    };
    let last_seen = |account: &str| Save {
        account: account.to_owned(),
        name: account.to_owned(),
        pos: [3.0, 4.0],
        map: "m".to_owned(),
        now_ms: 1,
        order: None,
    };
    for login_again in [false, true] {
        let ada = claim(&mut state, "ada");
        state.take(Request::SaveThenRelease {
            save: last_seen("ada"),
            claim: ada,
        });
        state.tend_claims();
        assert_eq!(held(&state), ["ada".to_owned()].into(), "before the write");
        let again = login_again.then(|| claim(&mut state, "ada"));
        state.write();
        state.release_saved();
        state.tend_claims();
        assert!(written.lock().unwrap().contains(&"ada".to_owned()));
        let want: BTreeSet<String> = again.iter().map(|_| "ada".to_owned()).collect();
        assert_eq!(held(&state), want, "logged in again: {login_again}");
        drop(again);
        state.tend_claims();
        assert!(held(&state).is_empty());
    }
}

/// A store whose answers a test sets, and which records what it took.
struct Scripted {
    /// Accounts whose stored record is damaged (load and save say `Corrupt`).
    corrupt: Vec<String>,
    /// When set, every call fails with this (made fresh per call).
    failing: Option<fn() -> StoreError>,
    written: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn new(corrupt: &[&str]) -> (Scripted, Arc<Mutex<Vec<String>>>) {
        let written = Arc::new(Mutex::new(Vec::new()));
        let store = Scripted {
            corrupt: corrupt.iter().map(|a| (*a).to_owned()).collect(),
            failing: None,
            written: Arc::clone(&written),
        };
        (store, written)
    }

    fn damaged(account: &str) -> StoreError {
        StoreError::Corrupt {
            account: account.to_owned(),
            reason: "unknown format version 9".to_owned(),
        }
    }
}

fn unavailable() -> StoreError {
    StoreError::Unavailable {
        target: "test".to_owned(),
        source: "connection refused".into(),
    }
}

fn backend() -> StoreError {
    StoreError::Backend {
        target: "test".to_owned(),
        source: "permission denied for table characters".into(),
    }
}

impl CharacterStore for Scripted {
    fn load(&mut self, account: &str) -> Result<Option<Character>, StoreError> {
        if let Some(fail) = self.failing {
            return Err(fail());
        }
        if self.corrupt.iter().any(|a| a == account) {
            return Err(Scripted::damaged(account));
        }
        Ok(None)
    }

    fn save_batch(&mut self, saves: &[Save]) -> Result<usize, StoreError> {
        if let Some(fail) = self.failing {
            return Err(fail());
        }
        if let Some(bad) = saves.iter().find(|s| self.corrupt.contains(&s.account)) {
            return Err(Scripted::damaged(&bad.account));
        }
        let mut written = self.written.lock().unwrap();
        written.extend(saves.iter().map(|s| s.account.clone()));
        Ok(0)
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        match self.failing {
            Some(fail) => Err(fail()),
            None => Ok(()),
        }
    }

    fn all(&mut self) -> Result<Vec<Character>, StoreError> {
        Ok(Vec::new())
    }
}

#[test]
fn a_corrupt_record_refuses_its_login_and_the_store_stays_up() {
    let (store, _) = Scripted::new(&["ada"]);
    let (mut state, metrics) = state(Box::new(store));
    match state.load("ada") {
        Err(LoadError::Corrupt { account, reason }) => {
            assert_eq!(account, "ada");
            assert!(reason.contains("format version"), "{reason}");
        }
        other => panic!("expected a corrupt record, got {other:?}"),
    }
    assert!(state.up.load(Ordering::Relaxed));
    assert_eq!(metrics.store_up.get(), 1);
    // Another account loads as usual.
    assert!(matches!(state.load("bob"), Ok(None)));
}

#[test]
fn a_store_that_cannot_be_reached_is_marked_down_at_load() {
    let (mut store, _) = Scripted::new(&[]);
    store.failing = Some(unavailable);
    let (mut state, metrics) = state(Box::new(store));
    assert!(matches!(state.load("ada"), Err(LoadError::Unavailable)));
    assert!(!state.up.load(Ordering::Relaxed));
    assert_eq!(metrics.store_up.get(), 0);
}

#[test]
fn a_save_over_a_corrupt_record_is_dropped_and_the_others_land() {
    let (store, written) = Scripted::new(&["bob"]);
    let (mut state, metrics) = state(Box::new(store));
    state.queue(vec![
        save("ada", [1.0, 1.0]),
        save("bob", [2.0, 2.0]),
        save("cy", [3.0, 3.0]),
    ]);
    state.write();
    assert!(state.pending.is_empty());
    assert_eq!(*written.lock().unwrap(), ["ada", "cy"]);
    assert_eq!(metrics.store_up.get(), 1);
    assert_eq!(metrics.save_failures.get(), 0);
    assert_eq!(metrics.saves_dropped.get(), 1);
}

/// Errors that name no save are the store's: the whole batch waits and is retried,
/// and the store reads as down, as before.
#[test]
fn store_failures_keep_every_save_pending_for_a_retry() {
    for fail in [unavailable as fn() -> StoreError, backend] {
        let (mut store, _) = Scripted::new(&[]);
        store.failing = Some(fail);
        let (mut state, metrics) = state(Box::new(store));
        state.queue(vec![save("ada", [1.0, 1.0]), save("", [2.0, 2.0])]);
        state.write();
        assert_eq!(state.pending.len(), 2, "{}", fail());
        assert!(state.retry_at.is_some());
        assert_eq!(metrics.store_up.get(), 0);
        assert_eq!(metrics.save_failures.get(), 1);
        // Kept for the retry, not dropped.
        assert_eq!(metrics.saves_dropped.get(), 0);
        assert_eq!(metrics.saves_pending.get(), 2);
    }
}

/// Of two saves of one account waiting to be written, the newer by their orders stays,
/// whichever came last; without orders, the last one.
#[test]
fn an_older_save_recorded_later_does_not_replace_a_newer_one() {
    let mut saves = BTreeMap::new();
    let ordered = |x: f32, session: u64, epoch: u32| Save {
        order: Some(store::SaveOrder { session, epoch }),
        ..save("ada", [x, 0.0])
    };
    super::keep_newest(&mut saves, ordered(1.0, 2, 0));
    super::keep_newest(&mut saves, ordered(2.0, 1, 5));
    assert_eq!(saves["ada"].pos, [1.0, 0.0]);
    super::keep_newest(&mut saves, ordered(3.0, 2, 0));
    assert_eq!(saves["ada"].pos, [3.0, 0.0]);
    super::keep_newest(&mut saves, save("ada", [4.0, 0.0]));
    assert_eq!(saves["ada"].pos, [4.0, 0.0]);
}

/// A writer stopped through [`StopWriter`] releases its claims, unless it is set to keep
/// them and its thread is unwinding from a panic (a gateway's router): then another
/// process still finds the account held until the claim lapses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_gateway_leaves_its_claims_to_lapse() {
    let db = store::test_postgres::TestPostgres::start().unwrap();
    let spec = store::StoreSpec::Postgres { url: db.url() };
    let held_elsewhere = |account: &'static str| {
        let spec = spec.clone();
        std::thread::spawn(move || {
            let mut other = store::open(&spec).unwrap();
            other
                .claim(account, "another process", CLAIM_TTL)
                .unwrap()
                .is_none()
        })
        .join()
        .unwrap()
    };
    for (account, panics, keep_claims_on_panic, held_after) in [
        ("ada", true, true, true),
        ("bob", false, true, false),
        ("cy", true, false, false),
    ] {
        let holder = gateway_holder("gw1");
        let (persist, writer) =
            Persist::start_claiming(&spec, Arc::new(Metrics::new()), Some(holder)).unwrap();
        let claimed = persist
            .claim(account)
            .await
            .unwrap()
            .expect("a free account");
        assert!(held_elsewhere(account));
        let stopping = StopWriter {
            writer: Some(writer),
            keep_claims_on_panic,
        };
        let ended = std::thread::spawn(move || {
            let _stopping = stopping;
            assert!(!panics, "the router panicked (on purpose, in a test)");
        })
        .join();
        assert_eq!(ended.is_err(), panics);
        assert_eq!(held_elsewhere(account), held_after, "{account}");
        drop(claimed);
    }
}

/// Each claimed account's holder, as a [`ClaimBook`] keeps them.
type Book = Arc<Mutex<BTreeMap<String, String>>>;

/// The account whose claim [`ClaimBook`] finds damaged.
const DAMAGED: &str = "damaged";

/// A store that keeps claims as PostgreSQL does (one holder an account; the holder may
/// claim again) and fails every call while `down` is set.
struct ClaimBook {
    claims: Book,
    down: Arc<AtomicBool>,
}

impl ClaimBook {
    fn new() -> (ClaimBook, Book, Arc<AtomicBool>) {
        let book = ClaimBook {
            claims: Arc::default(),
            down: Arc::default(),
        };
        let (claims, down) = (Arc::clone(&book.claims), Arc::clone(&book.down));
        (book, claims, down)
    }

    fn reached(&self) -> Result<(), StoreError> {
        match self.down.load(Ordering::Relaxed) {
            true => Err(unavailable()),
            false => Ok(()),
        }
    }
}

impl CharacterStore for ClaimBook {
    fn load(&mut self, _: &str) -> Result<Option<Character>, StoreError> {
        self.reached().map(|()| None)
    }

    fn save_batch(&mut self, _: &[Save]) -> Result<usize, StoreError> {
        self.reached().map(|()| 0)
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        self.reached()
    }

    fn all(&mut self) -> Result<Vec<Character>, StoreError> {
        Ok(Vec::new())
    }

    fn claim(
        &mut self,
        account: &str,
        holder: &str,
        _: Duration,
    ) -> Result<Option<u64>, StoreError> {
        self.reached()?;
        if account == DAMAGED {
            return Err(StoreError::Corrupt {
                account: account.to_owned(),
                reason: "its claim's session count is -9, below 1".to_owned(),
            });
        }
        let mut claims = self.claims.lock().unwrap();
        let taken = claims.get(account).is_some_and(|by| by != holder);
        if !taken {
            claims.insert(account.to_owned(), holder.to_owned());
        }
        Ok((!taken).then_some(1))
    }

    fn release_claims(&mut self, holder: &str, accounts: &[String]) -> Result<(), StoreError> {
        self.reached()?;
        let mut claims = self.claims.lock().unwrap();
        claims.retain(|account, by| by != holder || !accounts.contains(account));
        Ok(())
    }
}

fn claim_book_state() -> (State, Book, Arc<AtomicBool>) {
    let (book, claims, down) = ClaimBook::new();
    let (mut state, _) = state(Box::new(book));
    let holder = claims::Holder {
        name: "gw1 1".to_owned(),
        earlier: None,
    };
    state.claims = Some(claims::Claims::new(holder, claims::Released::default()));
    (state, claims, down)
}

fn ask_claim(state: &mut State, account: &str) -> Result<Option<Claimed>, LoadError> {
    let (reply, mut answer) = oneshot::channel();
    let account = account.to_owned();
    state.take(Request::Claim { account, reply });
    answer.try_recv().expect("the writer answers at once")
}

/// An account whose claim cannot be read is refused as damaged, like a record that cannot
/// be read: the store answered, so it is not marked down, and other logins go on.
#[test]
fn a_damaged_claim_refuses_its_login_and_the_store_stays_up() {
    let (mut state, _, _) = claim_book_state();
    match ask_claim(&mut state, DAMAGED) {
        Err(LoadError::Corrupt { account, .. }) => assert_eq!(account, DAMAGED),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(
        state.up.load(Ordering::Relaxed),
        "the store was marked down"
    );
    assert!(ask_claim(&mut state, "ada").unwrap().is_some());
}

/// A session's claim travels to the world thread and drops there up to a tick after the
/// session ended: a login of the same account in that time claims first, and the ended
/// session's guard, dropped after it, must leave the new login's claim held, in the
/// process and in the store (else another process could log the account in as well).
#[test]
fn an_ended_sessions_claim_dropped_after_the_next_login_leaves_that_login_claimed() {
    let (mut state, book, _) = claim_book_state();
    let ended = ask_claim(&mut state, "ada")
        .unwrap()
        .expect("a free account");
    let live = ask_claim(&mut state, "ada")
        .unwrap()
        .expect("held by this process");
    drop(ended);
    state.tend_claims();
    let held = state.claims.as_ref().unwrap().held();
    assert_eq!(
        held,
        ["ada".to_owned()].into(),
        "the process gave the claim up"
    );
    assert!(
        book.lock().unwrap().contains_key("ada"),
        "the store's claim was released"
    );
    drop(live);
    state.tend_claims();
    assert!(state.claims.as_ref().unwrap().held().is_empty());
    assert!(
        book.lock().unwrap().is_empty(),
        "the live session's claim is given back"
    );
}

/// A logout while the store is down keeps the account's claim until the save is written;
/// a login of the account meanwhile, refused because the store is down, must not leave
/// the claim held with no session (it would be renewed, and the account refused by every
/// other process, for as long as this one runs).
#[test]
fn a_login_refused_while_the_store_is_down_leaves_no_claim_behind() {
    let (mut state, book, down) = claim_book_state();
    let ada = ask_claim(&mut state, "ada")
        .unwrap()
        .expect("a free account");
    down.store(true, Ordering::Relaxed);
    state.take(Request::SaveThenRelease {
        save: save("ada", [1.0, 2.0]),
        claim: ada,
    });
    state.write();
    assert!(matches!(
        ask_claim(&mut state, "ada"),
        Err(LoadError::Unavailable)
    ));
    down.store(false, Ordering::Relaxed);
    state.retry_at = None;
    state.write();
    state.release_saved();
    state.tend_claims();
    let held = state.claims.as_ref().unwrap().held();
    assert!(held.is_empty(), "held with no session: {held:?}");
    assert!(
        book.lock().unwrap().is_empty(),
        "the store still holds the claim"
    );
}
