//! One live session per account across the processes that share a PostgreSQL store (a
//! cluster's gateways, or `server run` processes): each session's login claims its account
//! in the store
//! ([`store::CharacterStore::claim`]) as well as in its own process, and a login whose
//! account another process holds is refused as "already logged in". The writer thread
//! renews its process's claims every [`RENEW_EVERY`] and releases each when its session
//! ends; the claims of a process killed with SIGKILL lapse [`CLAIM_TTL`] after their last
//! renewal, by which time the zones have removed its players' characters
//! ([`crate::cluster`]'s gateway heartbeats take 5 s). A process that knows which earlier
//! starts of itself have stopped ([`Holder::earlier`]) takes their claims over before its
//! first login, so that a server started again after a crash does not turn its players
//! away until the claims lapse.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use store::{CharacterStore, StoreError};
use tokio::sync::watch;
use tracing::{debug, info, warn};

/// How long a claim lasts unless its holder renews it.
pub const CLAIM_TTL: Duration = Duration::from_secs(15);
/// How often the writer renews its process's claims.
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// How soon it tries again when a renewal failed.
const RETRY_RENEW: Duration = Duration::from_secs(1);

/// Claims whose sessions ended, for the writer to release: each account with the number
/// of the claim ([`Claims::claim`] numbers them in the process); a list the sessions push
/// to (never full, never blocking) and the writer empties.
pub(super) type Released = Arc<Mutex<Vec<(String, u64)>>>;

/// Who claims: this process start's name in the store's claims, unique among the
/// processes sharing it.
#[derive(Clone, Debug)]
pub struct Holder {
    /// The name.
    pub name: String,
    /// The prefix of the names of this process's earlier starts, which have stopped for
    /// sure when this one runs (`server run` names itself by the machine's boot, its
    /// network namespace and its QUIC address, which one process holds at a time): their
    /// claims are this start's to take over. `None` for a gateway, whose players the zones hold for a while after it
    /// stops.
    pub earlier: Option<String>,
}

/// This start of gateway `name` in the store's claims: its name, process id and start
/// time. A gateway started again does not take its last start's claims over (they lapse):
/// the zones hold its players' characters for a few seconds after it stops.
pub fn gateway_holder(name: &str) -> Holder {
    Holder {
        name: format!("gateway {name} {}", this_start()),
        earlier: None,
    }
}

/// This start of `server run` in the store's claims: the machine's boot, its network
/// namespace, the QUIC address, the process id and the start time. One process at a time
/// holds a UDP address in a network namespace, and a namespace's number is given again
/// only once nothing lives in it, so every earlier holder with the same boot, namespace
/// and address has stopped: its claims are taken over at its first login (a server started
/// again after a crash lets its players back in). Where the boot or the namespace cannot
/// be read (not Linux), nothing is taken over and the claims lapse.
pub fn server_holder(quic_addr: SocketAddr) -> Holder {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty() && !id.contains(' '));
    let net = std::fs::read_link("/proc/self/ns/net")
        .ok()
        .and_then(|link| link.to_str().map(str::to_owned))
        .filter(|ns| !ns.contains(' '));
    match (boot, net) {
        (Some(boot), Some(net)) => {
            let earlier = format!("server {boot} {net} {quic_addr} ");
            Holder {
                name: format!("{earlier}{}", this_start()),
                earlier: Some(earlier),
            }
        }
        _ => Holder {
            name: format!("server {quic_addr} {}", this_start()),
            earlier: None,
        },
    }
}

/// The process id and start time, which tell this start from every other.
fn this_start() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{} {nanos}", std::process::id())
}

/// A process's claims, kept by the writer thread.
pub(super) struct Claims {
    /// This process start, as the store knows it.
    holder: String,
    /// The earlier starts' prefix, until their claims are taken over.
    earlier: Option<String>,
    /// The accounts held, each with its newest claim's number and what tells that
    /// claim's session should another process take it (the claim lapsed while the store
    /// was out of reach).
    held: BTreeMap<String, Held>,
    /// The number of the next claim: each claim of this process has its own, so that a
    /// session's claim given back after a newer login of its account (a logout and a
    /// login within a tick, or a logout's claim kept until its save is written) is told
    /// apart from the newer one, which stays.
    next: u64,
    renewed: Instant,
    /// [`RENEW_EVERY`], or [`RETRY_RENEW`] after a renewal failed.
    renew_every: Duration,
    released: Released,
}

impl Claims {
    pub(super) fn new(holder: Holder, released: Released) -> Claims {
        Claims {
            holder: holder.name,
            earlier: holder.earlier,
            held: BTreeMap::new(),
            next: 0,
            renewed: Instant::now(),
            renew_every: RENEW_EVERY,
            released,
        }
    }

    /// Claims `account` for this process: its session's guard, or `None` while another
    /// process holds it. The account may be held already, by a session that ended (its
    /// guard not dropped yet, or kept until its save is written): the new claim takes its
    /// place, and the ended session's guard, dropped later, gives nothing back. Should the
    /// store not answer, the account stays as it was held.
    pub(super) fn claim(
        &mut self,
        store: &mut dyn CharacterStore,
        account: &str,
    ) -> Result<Option<Claimed>, StoreError> {
        self.release_ended(store);
        if let Some(prefix) = &self.earlier {
            let taken = store.release_earlier_claims(prefix, &self.holder)?;
            if taken > 0 {
                info!(
                    claims = taken,
                    "took over the claims of this server's last start"
                );
            }
            self.earlier = None;
        }
        let Some(login) = store.claim(account, &self.holder, CLAIM_TTL)? else {
            return Ok(None);
        };
        let (lost, lost_rx) = watch::channel(false);
        let number = self.next;
        self.next += 1;
        self.held.insert(
            account.to_owned(),
            Held {
                claim: number,
                lost,
            },
        );
        let mut claimed = Claimed::new(Some(Arc::clone(&self.released)), account, login);
        claimed.claim = number;
        claimed.lost = Some(lost_rx);
        Ok(Some(claimed))
    }

    /// Releases the claims whose sessions ended and renews the others when due. A store
    /// that does not answer leaves them to lapse, or to a renewal tried again soon.
    pub(super) fn tend(&mut self, store: &mut dyn CharacterStore) {
        self.release_ended(store);
        if self.renewed.elapsed() < self.renew_every {
            return;
        }
        self.renewed = Instant::now();
        let held: Vec<String> = self.held.keys().cloned().collect();
        match store.renew_claims(&self.holder, &held, CLAIM_TTL) {
            Ok(renewed) => {
                self.renew_every = RENEW_EVERY;
                let renewed: BTreeSet<String> = renewed.into_iter().collect();
                self.held.retain(|account, held| {
                    let kept = renewed.contains(account);
                    if !kept {
                        warn!(%account, "another process took this account's lapsed claim");
                        held.lost.send_replace(true);
                    }
                    kept
                });
            }
            Err(err) => {
                self.renew_every = RETRY_RENEW;
                warn!(%err, accounts = held.len(), "the sessions' claims were not renewed");
            }
        }
    }

    /// Releases the claims whose sessions ended, unless a newer claim of the account took
    /// their place (the store holds one claim an account, the newer session's now).
    fn release_ended(&mut self, store: &mut dyn CharacterStore) {
        let given_back =
            std::mem::take(&mut *self.released.lock().unwrap_or_else(PoisonError::into_inner));
        let mut ended = Vec::with_capacity(given_back.len());
        for (account, claim) in given_back {
            if self
                .held
                .get(&account)
                .is_some_and(|held| held.claim == claim)
            {
                self.held.remove(&account);
                ended.push(account);
            }
        }
        if ended.is_empty() {
            return;
        }
        if let Err(err) = store.release_claims(&self.holder, &ended) {
            debug!(%err, accounts = ended.len(), "claims not released; they lapse");
        }
    }

    /// The accounts this process holds.
    #[cfg(test)]
    pub(super) fn held(&self) -> BTreeSet<String> {
        self.held.keys().cloned().collect()
    }

    /// Releases every claim: the process stops.
    pub(super) fn release_all(&mut self, store: &mut dyn CharacterStore) {
        self.release_ended(store);
        let held: Vec<String> = std::mem::take(&mut self.held).into_keys().collect();
        if let Err(err) = store.release_claims(&self.holder, &held) {
            debug!(%err, accounts = held.len(), "claims not released at stop; they lapse");
        }
    }
}

/// One account held by a process: its newest claim.
struct Held {
    /// The claim's number in the process.
    claim: u64,
    /// Turns `true` should another process take the account.
    lost: watch::Sender<bool>,
}

/// A session's claim on its account, given back when dropped.
#[derive(Debug)]
pub struct Claimed {
    /// Where to give it back; `None` when the process claims nothing in the store.
    released: Option<Released>,
    account: String,
    /// Its number in the process ([`Claims::claim`]).
    claim: u64,
    login: u64,
    /// Turns `true` should another process take the account ([`Claimed::lost`]).
    lost: Option<watch::Receiver<bool>>,
}

impl Claimed {
    pub(super) fn new(released: Option<Released>, account: &str, login: u64) -> Claimed {
        Claimed {
            released,
            account: account.to_owned(),
            claim: 0,
            login,
            lost: None,
        }
    }

    /// `true` once another process has taken the account while this claim was held (it
    /// lapsed while the store was out of this process's reach, and the renewal that
    /// reached it again found another holder): the session must end, the account being
    /// live elsewhere. `false` as soon as that can no longer happen: the claim was given
    /// back, or the process claims nothing.
    pub fn lost(&self) -> impl std::future::Future<Output = bool> + Send + 'static {
        let lost = self.lost.clone();
        async move {
            match lost {
                Some(mut lost) => lost.wait_for(|taken| *taken).await.is_ok(),
                None => false,
            }
        }
    }

    /// The login's number in the store, which orders its character's saves across the
    /// processes that save it ([`store::SaveOrder::session`]); 0 when the store does not
    /// number logins.
    pub fn login(&self) -> u64 {
        self.login
    }

    /// The account claimed.
    pub(super) fn account(&self) -> &str {
        &self.account
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        if let Some(released) = &self.released {
            released
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((std::mem::take(&mut self.account), self.claim));
        }
    }
}
