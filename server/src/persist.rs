//! Characters kept across restarts: the writer thread between the world and the store.
//!
//! The world thread never waits on the store. It hands saves over with `try_send` (and
//! keeps what did not fit for the next round); sessions ask for a character's saved state
//! at login through the same queue and wait for the answer, at most
//! [`LOAD_TIMEOUT`]. The writer thread owns the store ([`store::CharacterStore`]):
//!
//! - Saves are coalesced per account (the newest wins) in a pending map, written in one
//!   batch per round, and only dropped from the map once the store acknowledged the batch.
//!   A batch that fails stays pending and is retried with a growing pause (up to
//!   `MAX_RETRY_PAUSE`); the store's state is the `mmo_store_up` gauge and `/readyz`.
//! - A save the store refuses for itself ([`StoreError::Invalid`]: an empty account, text
//!   too long or with a NUL, a position that is not finite, text PostgreSQL's encoding
//!   cannot hold; [`StoreError::Corrupt`]: the
//!   account's stored record cannot be read, so it is left for an operator) is not a store
//!   failure: it is dropped with an error log naming the account and why, and the rest of
//!   the batch is written at once. Retrying it would fail forever and hold back every
//!   other save. Any other error (the store unreachable, or failing for a reason that
//!   names no save) keeps the whole batch pending, marks the store down and is retried.
//! - A load answers from the pending map first, so a player who logs out and straight back
//!   in resumes where the world last saw them even if that save has not reached the store.
//!   A stored record that cannot be decoded refuses that login ([`LoadError::Corrupt`]):
//!   the store is up, the record is damaged, so the store is not marked down for it.
//! - The pending map holds at most one entry per account. Should it pass
//!   `MAX_PENDING` accounts (a store down for a long time while many players come and
//!   go), the writer says so in an error log line every time it grows further; it drops
//!   no save for that.
//!
//! - It also claims each session's account in the store, renews the claims and releases
//!   them as sessions end (`claims`: one live session per account across the processes
//!   sharing a PostgreSQL store, a cluster's gateways or `server run` processes).
//!
//! On shutdown the thread keeps trying to write what is pending for
//! `SHUTDOWN_FLUSH` and logs an error naming the count of saves it could not write.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use store::{Character, CharacterStore, Save, SaveOrder, StoreError};
use tokio::sync::oneshot;
use tracing::{debug, error, info, warn};

use crate::metrics::Metrics;

/// Requests the writer can queue before senders are told it is full.
const QUEUE: usize = 4096;
/// Longest a login waits for its character.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest pause between two tries to write a failed batch.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(5);
/// Accounts pending beyond which every growth is logged as an error.
const MAX_PENDING: usize = 100_000;
/// How long shutdown keeps trying to write what is pending.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(3);
/// How often an idle writer checks that the store is still there.
const PING_EVERY: Duration = Duration::from_secs(1);

/// Unix time in milliseconds, for the records' timestamps.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Why a login could not get its character.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The store did not answer in time or failed; the player should try again.
    #[error("the character store is unavailable")]
    Unavailable,
    /// The account's stored record cannot be decoded. Trying again will not help: it
    /// stays as it is until an operator repairs it (the server's log names the account
    /// and what is wrong with the record).
    #[error(
        "the saved character of account {account:?} is damaged and cannot be loaded; \
         it is kept for an operator to repair"
    )]
    Corrupt {
        /// The account.
        account: String,
        /// What is wrong with the record (for the log; not told to the player).
        reason: String,
    },
}

enum Request {
    Saves(Vec<Save>),
    Load {
        account: String,
        reply: oneshot::Sender<Result<Option<Character>, LoadError>>,
    },
    Claim {
        account: String,
        reply: oneshot::Sender<Result<Option<Claimed>, LoadError>>,
    },
    /// A save whose claim is given back only once it is written.
    SaveThenRelease {
        save: Save,
        claim: Claimed,
    },
    /// Write what is pending and stop; release the claims too, or leave them to lapse.
    Stop {
        release_claims: bool,
    },
}

/// The handle the world thread and the sessions use; cheap to clone.
#[derive(Clone)]
pub struct Persist {
    tx: SyncSender<Request>,
    up: Arc<AtomicBool>,
    /// Where sessions give their accounts' claims back, when this process claims its
    /// sessions' accounts in the store.
    released: Option<claims::Released>,
}

/// The writer thread; stop it with [`Writer::stop`].
pub struct Writer {
    tx: SyncSender<Request>,
    thread: Option<JoinHandle<()>>,
}

impl Persist {
    /// Opens the store and starts the writer thread. Fails when the store cannot be
    /// opened (a missing directory that cannot be created, a database that refuses us),
    /// so a server never starts without a place to keep its players.
    pub fn start(spec: &store::StoreSpec, metrics: Arc<Metrics>) -> Result<(Persist, Writer)> {
        Persist::start_claiming(spec, metrics, None)
    }

    /// [`Persist::start`], and with a `holder` (this process start, as the store's claims
    /// name it) each session's account is claimed in the store too ([`Persist::claim`]).
    pub fn start_claiming(
        spec: &store::StoreSpec,
        metrics: Arc<Metrics>,
        holder: Option<Holder>,
    ) -> Result<(Persist, Writer)> {
        let (tx, rx) = sync_channel(QUEUE);
        let released = holder.as_ref().map(|_| claims::Released::default());
        let thread_claims = holder
            .zip(released.clone())
            .map(|(holder, released)| claims::Claims::new(holder, released));
        let up = Arc::new(AtomicBool::new(true));
        metrics.store_up.set(1);
        let thread_up = Arc::clone(&up);
        // The store is opened on the writer thread, which then owns it: a store may run its
        // own blocking runtime (PostgreSQL's client does), which must not start inside the
        // server's async runtime.
        let (opened_tx, opened) = sync_channel::<Result<(), String>>(1);
        let thread_spec = spec.clone();
        let thread = std::thread::Builder::new()
            .name("store-writer".to_owned())
            .spawn(move || match store::open(&thread_spec) {
                Ok(store) => {
                    let _ = opened_tx.send(Ok(()));
                    let mut state = State::new(store, thread_up, metrics);
                    state.claims = thread_claims;
                    run(state, rx);
                }
                Err(err) => {
                    let _ = opened_tx.send(Err(crate::error_chain(&err)));
                }
            })
            .context("cannot start the store writer thread")?;
        match opened.recv() {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                let _ = thread.join();
                anyhow::bail!("cannot open the character store {spec}: {err}");
            }
            Err(_) => anyhow::bail!("the store writer thread stopped while opening {spec}"),
        }
        let writer = Writer {
            tx: tx.clone(),
            thread: Some(thread),
        };
        Ok((Persist { tx, up, released }, writer))
    }

    /// Whether the store answered its last request or ping.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// Hands saves to the writer without waiting. When its queue is full the saves come
    /// back, for the caller to keep and offer again.
    pub fn try_save(&self, saves: Vec<Save>) -> Result<(), Vec<Save>> {
        if saves.is_empty() {
            return Ok(());
        }
        match self.tx.try_send(Request::Saves(saves)) {
            Ok(()) => Ok(()),
            Err(
                TrySendError::Full(Request::Saves(s))
                | TrySendError::Disconnected(Request::Saves(s)),
            ) => Err(s),
            Err(_) => Ok(()),
        }
    }

    /// Hands the writer a save of a session that ended and the session's claim, which the
    /// writer keeps (renewing it) until the save is in the store, and then gives back: a
    /// login of the account through another process, which waits for the claim, then
    /// loads the character with that save. A gateway saves so where it last saw a
    /// character that logged out, in case its zone cannot reach the store
    /// ([`crate::cluster`]). `false` when the writer's queue is full or gone: the claim
    /// is then given back at once, without the save.
    pub fn save_then_release(&self, save: Save, claim: Claimed) -> bool {
        self.tx
            .try_send(Request::SaveThenRelease { save, claim })
            .is_ok()
    }

    /// The saved character of `account`, waiting at most [`LOAD_TIMEOUT`].
    pub async fn load(&self, account: &str) -> Result<Option<Character>, LoadError> {
        let account = account.to_owned();
        self.ask(|reply| Request::Load { account, reply }).await
    }

    /// Claims `account`'s one live session for this process, waiting at most
    /// [`LOAD_TIMEOUT`]: `Ok(None)` while another process holds it. Without a holder
    /// ([`Persist::start`]) the process claims nothing in the store, and its own sessions
    /// say who is in.
    pub async fn claim(&self, account: &str) -> Result<Option<Claimed>, LoadError> {
        if self.released.is_none() {
            return Ok(Some(Claimed::new(None, account, 0)));
        }
        let account = account.to_owned();
        // The writer makes the guard: should this wait be given up, the answer dropped
        // unread releases the claim.
        self.ask(|reply| Request::Claim { account, reply }).await
    }

    /// Hands the writer the request `make` builds around its reply channel, and waits at
    /// most [`LOAD_TIMEOUT`] for the answer: a full queue or no answer is
    /// [`LoadError::Unavailable`].
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, LoadError>>) -> Request,
    ) -> Result<T, LoadError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .try_send(make(reply))
            .map_err(|_| LoadError::Unavailable)?;
        match tokio::time::timeout(LOAD_TIMEOUT, answer).await {
            Ok(Ok(result)) => result,
            _ => Err(LoadError::Unavailable),
        }
    }
}

impl Writer {
    /// Writes what is pending (trying for a few seconds), releases the process's claims
    /// and stops the thread.
    pub fn stop(mut self) {
        self.shut(true);
    }

    /// [`Writer::stop`], leaving the claims to lapse ([`CLAIM_TTL`]): for a process whose
    /// players' characters may live on without it for a while (a gateway's, in the zones).
    pub fn stop_keeping_claims(mut self) {
        self.shut(false);
    }

    fn shut(&mut self, release_claims: bool) {
        if let Some(thread) = self.thread.take() {
            // A full queue still takes the stop once the thread drains it.
            let _ = self.tx.send(Request::Stop { release_claims });
            let _ = thread.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.shut(true);
    }
}

/// Stops a writer when dropped: with [`Writer::stop`], or with
/// [`Writer::stop_keeping_claims`] when `keep_claims_on_panic` is set and the thread is
/// unwinding from a panic (a gateway's router that panicked: the zones hold its players'
/// characters until its heartbeats are missed, so their accounts must not be free before).
pub struct StopWriter {
    /// The writer, taken when dropped.
    pub writer: Option<Writer>,
    /// Whether a panic leaves the claims to lapse.
    pub keep_claims_on_panic: bool,
}

impl Drop for StopWriter {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            if self.keep_claims_on_panic && std::thread::panicking() {
                writer.stop_keeping_claims();
            } else {
                writer.stop();
            }
        }
    }
}

/// The writer's state between requests.
struct State {
    store: Box<dyn CharacterStore>,
    pending: BTreeMap<String, Save>,
    up: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
    /// When the next write may be tried, after a failure.
    retry_at: Option<Instant>,
    retry_pause: Duration,
    last_ping: Instant,
    loud_at: usize,
    /// This process's claims on its sessions' accounts, when it claims them in the store.
    claims: Option<claims::Claims>,
    /// Claims of ended sessions kept until their saves are written
    /// ([`Persist::save_then_release`]).
    releasing: Vec<Claimed>,
}

fn run(mut state: State, rx: Receiver<Request>) {
    let release_claims = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Request::Stop { release_claims }) => break release_claims,
            Err(RecvTimeoutError::Disconnected) => break true,
            Ok(request) => state.take(request),
            Err(RecvTimeoutError::Timeout) => {}
        }
        // Take everything already queued before writing, so one batch carries it all.
        while let Ok(request) = rx.try_recv() {
            if let Request::Stop { release_claims } = request {
                state.stop(release_claims);
                return;
            }
            state.take(request);
        }
        state.write();
        state.release_saved();
        state.tend_claims();
        state.ping_if_idle();
    };
    state.stop(release_claims);
}

impl State {
    fn new(store: Box<dyn CharacterStore>, up: Arc<AtomicBool>, metrics: Arc<Metrics>) -> State {
        State {
            store,
            pending: BTreeMap::new(),
            up,
            metrics,
            retry_at: None,
            retry_pause: Duration::from_millis(250),
            last_ping: Instant::now(),
            loud_at: MAX_PENDING,
            claims: None,
            releasing: Vec::new(),
        }
    }

    /// Carries out one request other than [`Request::Stop`] (which [`run`] handles).
    fn take(&mut self, request: Request) {
        match request {
            Request::Saves(saves) => self.queue(saves),
            Request::SaveThenRelease { save, claim } => {
                self.queue(vec![save]);
                self.releasing.push(claim);
            }
            Request::Load { account, reply } => {
                let answer = self.load(&account);
                let _ = reply.send(answer);
            }
            Request::Claim { account, reply } => {
                // A session that gave up waiting (the queue was slow) holds nothing: a
                // claim it never hears of would be renewed for as long as the process runs.
                // One it gives up on once granted is released as the unread answer drops.
                if reply.is_closed() {
                    return;
                }
                let _ = reply.send(self.claim(&account));
            }
            Request::Stop { .. } => {}
        }
    }

    /// Claims `account` for this process ([`claims::Claims::claim`]); without claims,
    /// a guard that gives nothing back.
    fn claim(&mut self, account: &str) -> Result<Option<Claimed>, LoadError> {
        // A claim of this account kept until an ended session's save is written gives
        // nothing back once this login's claim takes its place; should this claim fail,
        // it is given back when the save is written, as before (loads find the save
        // pending meanwhile).
        let Some(claims) = self.claims.as_mut() else {
            return Ok(Some(Claimed::new(None, account, 0)));
        };
        let claimed = claims.claim(self.store.as_mut(), account);
        self.answer(claimed)
    }

    /// A store call's answer to a login: the store is marked up or down by it, except that
    /// a damaged record (the store answered) refuses the login and leaves the store up.
    fn answer<T>(&mut self, result: Result<T, StoreError>) -> Result<T, LoadError> {
        match result {
            Ok(value) => {
                self.mark_up();
                Ok(value)
            }
            Err(StoreError::Corrupt { account, reason }) => {
                error!(
                    %account,
                    %reason,
                    "a stored record cannot be read: login refused, record kept for an operator"
                );
                Err(LoadError::Corrupt { account, reason })
            }
            Err(err) => {
                self.mark_down(&err);
                Err(LoadError::Unavailable)
            }
        }
    }

    /// Gives back the claims kept for saves that are now written.
    fn release_saved(&mut self) {
        let pending = &self.pending;
        self.releasing
            .retain(|claim| pending.contains_key(claim.account()));
    }

    /// Releases the claims of ended sessions and renews the rest when due.
    fn tend_claims(&mut self) {
        if let Some(claims) = self.claims.as_mut() {
            claims.tend(self.store.as_mut());
        }
    }

    /// Writes what is pending (trying for a few seconds) and releases every claim, unless
    /// told to leave them to lapse.
    fn stop(&mut self, release_claims: bool) {
        self.flush_for_shutdown();
        self.releasing.clear();
        if let Some(claims) = self.claims.as_mut().filter(|_| release_claims) {
            claims.release_all(self.store.as_mut());
        }
    }

    fn queue(&mut self, saves: Vec<Save>) {
        for save in saves {
            keep_newest(&mut self.pending, save);
        }
        self.metrics.saves_pending.set(self.pending.len() as i64);
        if self.pending.len() > self.loud_at {
            error!(
                pending = self.pending.len(),
                "character saves are piling up: the store has not taken them; none is dropped"
            );
            self.loud_at = self.pending.len() + self.pending.len() / 10;
        }
    }

    fn load(&mut self, account: &str) -> Result<Option<Character>, LoadError> {
        if let Some(save) = self.pending.get(account) {
            // Newer than anything in the store: the character as the world last saw it.
            return Ok(Some(Character {
                account: save.account.clone(),
                name: save.name.clone(),
                pos: save.pos,
                map: save.map.clone(),
                version: 0,
                created_ms: save.now_ms,
                updated_ms: save.now_ms,
                order: save.order,
            }));
        }
        let found = self.store.load(account);
        self.answer(found)
    }

    fn write(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if self.retry_at.is_some_and(|at| Instant::now() < at) {
            return;
        }
        // Each refused save leaves the map before the next try, so this makes at most one
        // try more than there are saves pending.
        while !self.pending.is_empty() {
            let batch: Vec<Save> = self.pending.values().cloned().collect();
            let started = Instant::now();
            match self.store.save_batch(&batch) {
                Ok(stale) => {
                    if stale > 0 {
                        // Another process saved these characters further on (see
                        // `store::SaveOrder`): nothing is lost by not writing them.
                        debug!(stale, "saves older than the stored ones were skipped");
                        self.metrics.saves_stale.inc_by(stale as u64);
                    }
                    self.metrics
                        .saves
                        .inc_by((batch.len() - stale.min(batch.len())) as u64);
                    self.metrics.observe_save_batch(started.elapsed());
                    self.pending.clear();
                    self.retry_at = None;
                    self.retry_pause = Duration::from_millis(250);
                    self.loud_at = MAX_PENDING;
                    self.mark_up();
                }
                Err(err) => match refused_save(&err) {
                    Some(account) if self.pending.contains_key(account) => {
                        // The store is fine; this one save is not. Drop it and write the
                        // rest now.
                        self.pending.remove(account);
                        self.metrics.saves_dropped.inc();
                        error!(
                            %account,
                            error = %err,
                            "a character save the store refuses is dropped; the others are written"
                        );
                    }
                    _ => {
                        self.metrics.save_failures.inc();
                        self.mark_down(&err);
                        self.retry_at = Some(Instant::now() + self.retry_pause);
                        self.retry_pause = (self.retry_pause * 2).min(MAX_RETRY_PAUSE);
                        break;
                    }
                },
            }
        }
        self.metrics.saves_pending.set(self.pending.len() as i64);
    }

    fn ping_if_idle(&mut self) {
        if self.last_ping.elapsed() < PING_EVERY {
            return;
        }
        self.last_ping = Instant::now();
        match self.store.ping() {
            Ok(()) => self.mark_up(),
            Err(err) => self.mark_down(&err),
        }
    }

    fn mark_up(&mut self) {
        if !self.up.swap(true, Ordering::Relaxed) {
            info!(pending = self.pending.len(), "the character store is back");
        }
        self.metrics.store_up.set(1);
    }

    fn mark_down(&mut self, err: &StoreError) {
        if self.up.swap(false, Ordering::Relaxed) {
            warn!(error = %err, pending = self.pending.len(), "the character store failed; saves wait and are retried");
        }
        self.metrics.store_up.set(0);
    }

    fn flush_for_shutdown(&mut self) {
        let deadline = Instant::now() + SHUTDOWN_FLUSH;
        while !self.pending.is_empty() && Instant::now() < deadline {
            self.retry_at = None;
            self.write();
            if !self.pending.is_empty() {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        if !self.pending.is_empty() {
            error!(
                unsaved = self.pending.len(),
                "shutting down with character saves the store did not take"
            );
        }
    }
}

/// The account whose save the store refused for that save alone (it is invalid, or the
/// account's stored record cannot be read): retrying it can never succeed, and the store
/// is not down. `None` for errors of the store itself (unreachable, or failing for a
/// reason that names no save), which keep today's retry.
fn refused_save(err: &StoreError) -> Option<&str> {
    match err {
        StoreError::Invalid { account, .. } | StoreError::Corrupt { account, .. } => {
            Some(account.as_str())
        }
        _ => None,
    }
}

/// Puts `save` in the place of the account's save waiting in `saves`, unless that one is
/// newer by their orders: one process may hold two copies of a character for a moment
/// (one of an earlier login, about to be removed), and its older saves then come last.
fn keep_newest(saves: &mut BTreeMap<String, Save>, save: Save) {
    match saves.get_mut(&save.account) {
        Some(waiting) if matches!((waiting.order, save.order), (Some(w), Some(s)) if w > s) => {}
        Some(waiting) => *waiting = save,
        None => {
            saves.insert(save.account.clone(), save);
        }
    }
}

/// The world thread's side: which characters moved since their last save, and the saves
/// the writer's queue could not take yet (coalesced per account, so they stay bounded by
/// the number of accounts).
pub struct Saver {
    persist: Persist,
    map: String,
    unsaved: BTreeMap<String, Save>,
}

/// How long a stopping world waits for the writer's queue to take its last saves.
pub const HAND_OVER_PATIENCE: Duration = Duration::from_secs(2);

/// Below this distance a character counts as not moved since its last save, metres.
const MOVED_M: f32 = 0.01;

impl Saver {
    /// Saves for characters on map `map`.
    pub fn new(persist: Persist, map: String) -> Saver {
        Saver {
            persist,
            map,
            unsaved: BTreeMap::new(),
        }
    }

    /// Records `account`'s position when it moved since `last_saved` (updated), with its
    /// order among the character's saves when several processes save it.
    pub fn record(
        &mut self,
        account: &str,
        name: &str,
        pos: [f32; 2],
        order: Option<SaveOrder>,
        last_saved: &mut Option<[f32; 2]>,
        now_ms: i64,
    ) {
        let moved = last_saved.is_none_or(|[x, y]| (pos[0] - x).hypot(pos[1] - y) >= MOVED_M);
        if !moved {
            return;
        }
        *last_saved = Some(pos);
        keep_newest(
            &mut self.unsaved,
            Save {
                account: account.to_owned(),
                name: name.to_owned(),
                pos,
                map: self.map.clone(),
                now_ms,
                order,
            },
        );
    }

    /// Saves `account`'s character whose session ended at `pos`, and gives the session's
    /// claim back once that save is in the store ([`Persist::save_then_release`]): a login
    /// through another process, which waits for the claim, loads this save. Its saves
    /// recorded before and not handed over yet are dropped: this one is newer. Should the
    /// writer's queue be full, the save waits with the others and the claim goes back at
    /// once; without a claim (a session the store does not claim for), it is recorded
    /// and offered as any other.
    pub fn save_then_release(
        &mut self,
        account: &str,
        name: &str,
        pos: [f32; 2],
        claim: Option<Claimed>,
        now_ms: i64,
    ) {
        self.unsaved.remove(account);
        let save = Save {
            account: account.to_owned(),
            name: name.to_owned(),
            pos,
            map: self.map.clone(),
            now_ms,
            order: None,
        };
        let Some(claim) = claim else {
            keep_newest(&mut self.unsaved, save);
            self.flush();
            return;
        };
        if !self.persist.save_then_release(save.clone(), claim) {
            keep_newest(&mut self.unsaved, save);
            self.flush();
        }
    }

    /// Offers everything recorded to the writer as the world stops, waiting up to
    /// `patience` for room in its queue; returns how many saves it could not hand over
    /// (the writer gone or stuck), which are logged as lost. Without this, saves a full
    /// queue sent back at the last tick were dropped with the world, unsaid.
    pub fn hand_over_all(&mut self, patience: Duration) -> usize {
        let deadline = Instant::now() + patience;
        loop {
            self.flush();
            if self.unsaved.is_empty() {
                return 0;
            }
            if Instant::now() >= deadline {
                let lost = self.unsaved.len();
                error!(
                    saves = lost,
                    accounts = ?self.unsaved.keys().take(8).collect::<Vec<_>>(),
                    "stopping with character saves the writer did not take: they are lost"
                );
                return lost;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Offers everything recorded to the writer; what its queue cannot take stays for the
    /// next call.
    pub fn flush(&mut self) {
        if self.unsaved.is_empty() {
            return;
        }
        let saves: Vec<Save> = std::mem::take(&mut self.unsaved).into_values().collect();
        if let Err(back) = self.persist.try_save(saves) {
            for save in back {
                // A newer save recorded meanwhile wins; there is none within one call.
                self.unsaved.entry(save.account.clone()).or_insert(save);
            }
        }
    }
}

mod claims;

pub use claims::{CLAIM_TTL, Claimed, Holder, gateway_holder, server_holder};

#[cfg(test)]
mod tests;
