//! auth: the login tokens a game client carries in its `Login`, and the Ed25519 keys that
//! sign and check them. The login service (in production, the game's own; in development
//! and load tests, `server token` and `loadtest --auth-key`) mints a token with the
//! [`SigningKey`]; the game server checks it with the matching [`PublicKey`] and takes the
//! account from it.
//!
//! Rules: this crate reads no clock and no file; the time is passed in as Unix seconds and
//! keys come in as text. Every input is bounded before it is decoded, and no input makes
//! it panic: a bad token is a [`VerifyError`], a bad key a [`KeyError`]. ring is the only
//! cryptography.
//!
//! # Token format, version 1
//!
//! A token is ASCII text in three parts joined by dots:
//!
//! ```text
//! v1.<payload>.<signature>
//! ```
//!
//! - `v1` is the format version, the two bytes `v` and `1`.
//! - `<payload>` is base64url without padding (RFC 4648 §5, alphabet `A–Z a–z 0–9 - _`,
//!   no `=`) of the payload bytes: the expiry as 8 bytes, an unsigned big-endian count of
//!   seconds since the Unix epoch (UTC), then the account name in UTF-8, 1 to
//!   [`MAX_ACCOUNT_BYTES`] (128) bytes, to the end of the payload.
//! - `<signature>` is base64url without padding of the 64-byte Ed25519 signature (RFC
//!   8032) of the ASCII bytes `v1.<payload>`: the version, the dot and the payload *as
//!   text*. Signing the version with the payload means a signature made for one format
//!   version can never be read as one of another.
//!
//! A token is at most [`MAX_TOKEN_BYTES`] (512) bytes; a longer one is refused before
//! anything is decoded. Base64 with padding, whitespace or non-canonical trailing bits is
//! refused as malformed.
//!
//! A token is valid when its signature checks against the server's public key and `now <=
//! expiry + CLOCK_SKEW_SECS` ([`CLOCK_SKEW_SECS`] = 30): a token is still taken 30 s past
//! its expiry, so a login service whose clock is a little behind the game server's does
//! not see its fresh short-lived tokens refused (a token carries its expiry only: how long
//! it lives is the login service's to decide). Keep token lifetimes short (minutes) and
//! issue one per login.
//!
//! Example in Python (with the `cryptography` package), producing what
//! [`SigningKey::mint`] produces:
//!
//! ```text
//! import base64, struct
//! b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")
//! signed = b"v1." + b64(struct.pack(">Q", expiry_unix_secs) + account.encode("utf-8"))
//! token = (signed + b"." + b64(private_key.sign(signed))).decode("ascii")
//! ```
//!
//! # Key files
//!
//! Both keys are PEM text, the formats OpenSSL writes, so a login service may use
//! `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout` instead of `server
//! keygen`:
//!
//! - the signing key: `-----BEGIN PRIVATE KEY-----`, a PKCS#8 (RFC 8410) Ed25519 private key
//!   ([`SigningKey::from_pem`], [`SigningKey::generate`]);
//! - the public key: `-----BEGIN PUBLIC KEY-----`, a SubjectPublicKeyInfo (RFC 8410)
//!   holding the 32-byte Ed25519 public key ([`PublicKey::from_pem`]).

mod keys;
mod token;

pub use keys::{KeyError, PublicKey, SigningKey};
pub use token::{Claims, MintError, VerifyError};

/// The format version, the token's first part.
pub const TOKEN_VERSION: &str = "v1";

/// The longest token taken, bytes; a longer one is refused before it is decoded.
pub const MAX_TOKEN_BYTES: usize = 512;

/// The longest account name in a token, bytes of UTF-8 (32 characters of up to 4 bytes).
pub const MAX_ACCOUNT_BYTES: usize = 128;

/// How long past its expiry a token is still taken, seconds: room for the login service's
/// clock to run a little behind the game server's.
pub const CLOCK_SKEW_SECS: u64 = 30;
