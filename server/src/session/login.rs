//! Who may log in, without I/O: the name rules, the token check against the configured
//! public key ([`check`]), and the set of accounts with a live session ([`LiveAccounts`]).
//!
//! With a public key configured, a login must carry a token ([`auth`]'s format) signed by
//! the matching private key; the account is the token's, and the login's name must equal
//! it. Without one the server is in development mode: the name is the account, unproven.
//!
//! One live session per account: a second login of an account whose session is still
//! running is refused (`LoginRejected`, "already logged in"), it does not take the first
//! session over. Taking over would end a session, and save its character, while the new one
//! starts, racing the two in the world; refusing keeps one owner of each character at a
//! time. A client that crashed has its old session end when its connection times out
//! (`idle_timeout_secs`), after which the account logs in again.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use auth::{PublicKey, VerifyError};
use protocol::{DisconnectReason, MAX_NAME_CHARS};

use super::machine::End;

/// Why a login was refused (`LoginRejected`), one label value of
/// `mmo_logins_rejected_total{why}` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoginRefusal {
    /// The name breaks the rules of `Login.name`.
    BadName,
    /// A public key is configured and the login carries no token.
    NoToken,
    /// The token is too long, not of the token format or of another format version.
    Malformed,
    /// The token's signature is not the configured key's.
    BadSignature,
    /// The token has expired.
    Expired,
    /// The token names another account than the login's name.
    AccountMismatch,
    /// The account already has a live session.
    AlreadyLoggedIn,
}

impl LoginRefusal {
    /// Every refusal, in label order.
    pub const ALL: [LoginRefusal; 7] = [
        LoginRefusal::BadName,
        LoginRefusal::NoToken,
        LoginRefusal::Malformed,
        LoginRefusal::BadSignature,
        LoginRefusal::Expired,
        LoginRefusal::AccountMismatch,
        LoginRefusal::AlreadyLoggedIn,
    ];

    /// The metric label value.
    pub fn name(self) -> &'static str {
        match self {
            LoginRefusal::BadName => "bad_name",
            LoginRefusal::NoToken => "no_token",
            LoginRefusal::Malformed => "malformed",
            LoginRefusal::BadSignature => "bad_signature",
            LoginRefusal::Expired => "expired",
            LoginRefusal::AccountMismatch => "account_mismatch",
            LoginRefusal::AlreadyLoggedIn => "already_logged_in",
        }
    }

    fn of(err: &VerifyError) -> LoginRefusal {
        match err {
            VerifyError::TooLong(_) | VerifyError::Malformed(_) | VerifyError::WrongVersion(_) => {
                LoginRefusal::Malformed
            }
            VerifyError::BadSignature => LoginRefusal::BadSignature,
            VerifyError::Expired { .. } => LoginRefusal::Expired,
        }
    }
}

/// A refused login: why (for the metric) and the end sent to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Why, as a label.
    pub why: LoginRefusal,
    /// The disconnect, `LoginRejected` with a text for the user.
    pub end: End,
}

impl Rejected {
    fn new(why: LoginRefusal, text: impl Into<String>) -> Rejected {
        Rejected {
            why,
            end: End::new(DisconnectReason::LoginRejected, text),
        }
    }

    /// The refusal of a second session of `account`.
    pub fn already_logged_in(account: &str) -> Rejected {
        Rejected::new(
            LoginRefusal::AlreadyLoggedIn,
            format!(
                "account {account:?} is already logged in; one session per account (the other ends when its connection times out)"
            ),
        )
    }
}

/// Checks a login's name and token at `now_unix_secs` and returns its account. `key`:
/// the configured public key; `None` is development mode, where the name is the account.
pub fn check(
    name: &str,
    token: Option<&str>,
    key: Option<&PublicKey>,
    now_unix_secs: u64,
) -> Result<String, Rejected> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(Rejected::new(
            LoginRefusal::BadName,
            format!(
                "a name is 1 to {MAX_NAME_CHARS} characters without control characters, got {chars} characters"
            ),
        ));
    }
    let Some(key) = key else {
        return Ok(name.to_owned());
    };
    let Some(token) = token else {
        return Err(Rejected::new(
            LoginRefusal::NoToken,
            "this server requires a login token; none was sent",
        ));
    };
    let claims = key
        .verify(token, now_unix_secs)
        .map_err(|err| Rejected::new(LoginRefusal::of(&err), format!("bad login token: {err}")))?;
    if claims.account != name {
        return Err(Rejected::new(
            LoginRefusal::AccountMismatch,
            format!(
                "the login token is for account {:?}, not for {name:?}",
                claims.account
            ),
        ));
    }
    Ok(claims.account)
}

/// The accounts with a live session, shared by every session of a server.
#[derive(Debug, Default)]
pub struct LiveAccounts {
    live: Mutex<HashSet<String>>,
}

impl LiveAccounts {
    /// Marks `account` live until the returned claim is dropped; `None` when it already
    /// is.
    pub fn claim(self: &Arc<Self>, account: &str) -> Option<AccountClaim> {
        // A panic while the lock was held cannot leave the set half-changed (each use is
        // one insert or one remove), so a poisoned lock is used as it is.
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.insert(account.to_owned()).then(|| AccountClaim {
            accounts: Arc::clone(self),
            account: account.to_owned(),
        })
    }

    /// How many accounts are live.
    pub fn len(&self) -> usize {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no account is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An account's live session; dropping it frees the account.
#[derive(Debug)]
pub struct AccountClaim {
    accounts: Arc<LiveAccounts>,
    account: String,
}

impl AccountClaim {
    /// The account.
    pub fn account(&self) -> &str {
        &self.account
    }
}

impl Drop for AccountClaim {
    fn drop(&mut self) {
        let mut live = self
            .accounts
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        live.remove(&self.account);
    }
}

#[cfg(test)]
mod tests {
    use auth::{CLOCK_SKEW_SECS, SigningKey};

    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn why(result: Result<String, Rejected>) -> LoginRefusal {
        let rejected = result.unwrap_err();
        assert_eq!(rejected.end.reason, DisconnectReason::LoginRejected);
        rejected.why
    }

    #[test]
    fn without_a_key_the_name_is_the_account() {
        assert_eq!(check("ada", None, None, NOW).unwrap(), "ada");
        // A token is ignored in development mode, whatever it holds.
        assert_eq!(check("ada", Some("junk"), None, NOW).unwrap(), "ada");
        assert_eq!(why(check("", None, None, NOW)), LoginRefusal::BadName);
    }

    #[test]
    fn with_a_key_only_a_valid_token_of_the_same_account_logs_in() {
        let key = SigningKey::generate().unwrap();
        let public = key.public_key();
        let ada = key.mint("ada", NOW + 60).unwrap();
        assert_eq!(check("ada", Some(&ada), Some(&public), NOW).unwrap(), "ada");
        assert_eq!(
            why(check("ada", None, Some(&public), NOW)),
            LoginRefusal::NoToken
        );
        assert_eq!(
            why(check("bob", Some(&ada), Some(&public), NOW)),
            LoginRefusal::AccountMismatch
        );
        let forged = SigningKey::generate()
            .unwrap()
            .mint("ada", NOW + 60)
            .unwrap();
        assert_eq!(
            why(check("ada", Some(&forged), Some(&public), NOW)),
            LoginRefusal::BadSignature
        );
        let old = key.mint("ada", NOW - CLOCK_SKEW_SECS - 1).unwrap();
        let expired = check("ada", Some(&old), Some(&public), NOW).unwrap_err();
        assert_eq!(expired.why, LoginRefusal::Expired);
        assert!(expired.end.text.contains("expired"), "{}", expired.end.text);
        for junk in ["", "v1", "v9.a.b", &"x".repeat(10_000)] {
            assert_eq!(
                why(check("ada", Some(junk), Some(&public), NOW)),
                LoginRefusal::Malformed,
                "{junk:?}"
            );
        }
        // The name rules come first, token or not.
        assert_eq!(
            why(check("ada\n", Some(&ada), Some(&public), NOW)),
            LoginRefusal::BadName
        );
    }

    #[test]
    fn an_account_is_live_once_until_its_claim_drops() {
        let accounts = Arc::new(LiveAccounts::default());
        let first = accounts.claim("ada").unwrap();
        assert_eq!(first.account(), "ada");
        assert!(accounts.claim("ada").is_none());
        let bob = accounts.claim("bob").unwrap();
        assert_eq!(accounts.len(), 2);
        drop(first);
        assert!(accounts.claim("ada").is_some());
        drop(bob);
        assert!(accounts.is_empty());
    }

    #[test]
    fn every_refusal_has_its_own_label() {
        let names: HashSet<_> = LoginRefusal::ALL.iter().map(|why| why.name()).collect();
        assert_eq!(names.len(), LoginRefusal::ALL.len());
    }
}
