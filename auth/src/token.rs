//! Minting and verifying tokens (the format is in the crate docs).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::{
    CLOCK_SKEW_SECS, MAX_ACCOUNT_BYTES, MAX_TOKEN_BYTES, PublicKey, SigningKey, TOKEN_VERSION,
};

/// What a valid token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    /// The account the token was issued to.
    pub account: String,
    /// When the token expires, seconds since the Unix epoch.
    pub expires_unix_secs: u64,
}

/// Why a token cannot be minted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MintError {
    /// The account name is empty or longer than [`MAX_ACCOUNT_BYTES`].
    #[error("an account name is 1 to {MAX_ACCOUNT_BYTES} bytes, got {0} bytes")]
    AccountLength(usize),
}

/// Why a token is refused. [`VerifyError::label`] names each kind in one word, for
/// metrics.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// Longer than [`MAX_TOKEN_BYTES`]; not decoded.
    #[error("the token is {0} bytes, more than {MAX_TOKEN_BYTES}")]
    TooLong(usize),
    /// Not `<version>.<payload>.<signature>`, or a part that does not decode.
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    /// A format version other than [`TOKEN_VERSION`].
    #[error("token format version {0:?} is not {TOKEN_VERSION:?}")]
    WrongVersion(String),
    /// The signature is not the configured key's signature of the token.
    #[error("the token's signature does not check against the server's key")]
    BadSignature,
    /// The token expired (more than [`CLOCK_SKEW_SECS`] ago).
    #[error("the token expired at {expired_unix_secs} (Unix seconds); it is now {now_unix_secs}")]
    Expired {
        /// The token's expiry.
        expired_unix_secs: u64,
        /// The time it was checked at.
        now_unix_secs: u64,
    },
}

impl VerifyError {
    /// The kind in one word: `too_long`, `malformed`, `wrong_version`, `bad_signature` or
    /// `expired`.
    pub fn label(&self) -> &'static str {
        match self {
            VerifyError::TooLong(_) => "too_long",
            VerifyError::Malformed(_) => "malformed",
            VerifyError::WrongVersion(_) => "wrong_version",
            VerifyError::BadSignature => "bad_signature",
            VerifyError::Expired { .. } => "expired",
        }
    }
}

impl SigningKey {
    /// A token for `account` that expires at `expires_unix_secs`.
    pub fn mint(&self, account: &str, expires_unix_secs: u64) -> Result<String, MintError> {
        if account.is_empty() || account.len() > MAX_ACCOUNT_BYTES {
            return Err(MintError::AccountLength(account.len()));
        }
        let mut payload = Vec::with_capacity(8 + account.len());
        payload.extend_from_slice(&expires_unix_secs.to_be_bytes());
        payload.extend_from_slice(account.as_bytes());
        let mut token = format!("{TOKEN_VERSION}.{}", URL_SAFE_NO_PAD.encode(&payload));
        let signature = self.sign(token.as_bytes());
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature));
        Ok(token)
    }
}

impl PublicKey {
    /// Checks `token` at `now_unix_secs` and returns what it says: its signature must be
    /// this key's and it must not have expired more than [`CLOCK_SKEW_SECS`] ago.
    pub fn verify(&self, token: &str, now_unix_secs: u64) -> Result<Claims, VerifyError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(VerifyError::TooLong(token.len()));
        }
        // The signature is over everything before the last dot.
        let (signed, signature) = token
            .rsplit_once('.')
            .ok_or(VerifyError::Malformed("no dot before the signature"))?;
        let (version, payload) = signed
            .split_once('.')
            .ok_or(VerifyError::Malformed("no dot after the version"))?;
        if version != TOKEN_VERSION {
            let shown: String = version.chars().take(8).collect();
            return Err(VerifyError::WrongVersion(shown));
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| VerifyError::Malformed("the signature is not base64url"))?;
        if signature.len() != 64 {
            return Err(VerifyError::Malformed("the signature is not 64 bytes"));
        }
        // The signature is checked before the payload is read: nothing of an unsigned
        // payload is looked at.
        if !self.checks(signed.as_bytes(), &signature) {
            return Err(VerifyError::BadSignature);
        }
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| VerifyError::Malformed("the payload is not base64url"))?;
        let (expiry, account) = payload
            .split_first_chunk::<8>()
            .ok_or(VerifyError::Malformed(
                "the payload is shorter than 8 bytes",
            ))?;
        if account.is_empty() || account.len() > MAX_ACCOUNT_BYTES {
            return Err(VerifyError::Malformed(
                "the account is not 1 to 128 bytes long",
            ));
        }
        let account = std::str::from_utf8(account)
            .map_err(|_| VerifyError::Malformed("the account is not UTF-8"))?;
        let expires_unix_secs = u64::from_be_bytes(*expiry);
        if now_unix_secs > expires_unix_secs.saturating_add(CLOCK_SKEW_SECS) {
            return Err(VerifyError::Expired {
                expired_unix_secs: expires_unix_secs,
                now_unix_secs,
            });
        }
        Ok(Claims {
            account: account.to_owned(),
            expires_unix_secs,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn key() -> SigningKey {
        SigningKey::generate().unwrap()
    }

    #[test]
    fn a_minted_token_verifies_and_names_its_account() {
        let key = key();
        for account in [
            "ada",
            "bot-17",
            "é李 with spaces",
            &"x".repeat(MAX_ACCOUNT_BYTES),
        ] {
            let token = key.mint(account, NOW + 60).unwrap();
            assert!(token.starts_with("v1.") && token.len() <= MAX_TOKEN_BYTES);
            let claims = key.public_key().verify(&token, NOW).unwrap();
            assert_eq!(claims.account, account);
            assert_eq!(claims.expires_unix_secs, NOW + 60);
        }
        assert_eq!(key.mint("", NOW), Err(MintError::AccountLength(0)));
        assert_eq!(
            key.mint(&"x".repeat(MAX_ACCOUNT_BYTES + 1), NOW),
            Err(MintError::AccountLength(MAX_ACCOUNT_BYTES + 1))
        );
    }

    #[test]
    fn the_format_is_as_documented() {
        // Built by hand from the crate docs, signed with the key.
        let key = key();
        let mut payload = (NOW + 5).to_be_bytes().to_vec();
        payload.extend_from_slice("ada".as_bytes());
        let signed = format!("v1.{}", URL_SAFE_NO_PAD.encode(&payload));
        let token = format!(
            "{signed}.{}",
            URL_SAFE_NO_PAD.encode(key.sign(signed.as_bytes()))
        );
        assert_eq!(token, key.mint("ada", NOW + 5).unwrap());
        assert!(!token.contains('=') && !token.contains('+') && !token.contains('/'));
    }

    #[test]
    fn expiry_allows_the_clock_skew_and_no_more() {
        let key = key();
        let token = key.mint("ada", NOW).unwrap();
        let public = key.public_key();
        assert!(public.verify(&token, NOW + CLOCK_SKEW_SECS).is_ok());
        assert_eq!(
            public.verify(&token, NOW + CLOCK_SKEW_SECS + 1),
            Err(VerifyError::Expired {
                expired_unix_secs: NOW,
                now_unix_secs: NOW + CLOCK_SKEW_SECS + 1
            })
        );
        // The far future does not overflow.
        let forever = key.mint("ada", u64::MAX).unwrap();
        assert!(public.verify(&forever, u64::MAX).is_ok());
    }

    #[test]
    fn forged_and_foreign_tokens_are_refused() {
        let key = key();
        let token = key.mint("ada", NOW + 60).unwrap();
        let other = SigningKey::generate().unwrap().public_key();
        assert_eq!(other.verify(&token, NOW), Err(VerifyError::BadSignature));
        // Another account's payload under ada's signature.
        let bob = key.mint("bob", NOW + 60).unwrap();
        let (_, ada_signature) = token.rsplit_once('.').unwrap();
        let (bob_signed, _) = bob.rsplit_once('.').unwrap();
        let spliced = format!("{bob_signed}.{ada_signature}");
        assert_eq!(
            key.public_key().verify(&spliced, NOW),
            Err(VerifyError::BadSignature)
        );
        // The same payload and signature under another version label.
        let relabelled = format!("v2{}", &token[2..]);
        assert_eq!(
            key.public_key().verify(&relabelled, NOW),
            Err(VerifyError::WrongVersion("v2".to_owned()))
        );
    }

    #[test]
    fn malformed_tokens_are_refused_by_kind() {
        let key = key();
        let public = key.public_key();
        let token = key.mint("ada", NOW + 60).unwrap();
        let zero_signature = format!("v1.AAAA.{}", "A".repeat(86));
        let cases = [
            ("", "malformed"),
            ("v1", "malformed"),
            ("v1.abc", "malformed"),
            ("v1..", "malformed"),
            ("x.y.z", "wrong_version"),
            ("v1.AAAA.!!!", "malformed"),
            ("v1.AAAA.AAAA", "malformed"),
            (&zero_signature, "bad_signature"),
        ];
        for (text, label) in cases {
            assert_eq!(
                public.verify(text, NOW).unwrap_err().label(),
                label,
                "{text:?}"
            );
        }
        // Padding or whitespace make it malformed; the signature no longer decodes.
        let padded = format!("{token}=");
        assert_eq!(
            public.verify(&padded, NOW).unwrap_err().label(),
            "malformed"
        );
        let spaced = format!("{token} ");
        assert_eq!(
            public.verify(&spaced, NOW).unwrap_err().label(),
            "malformed"
        );
        let long = format!("{token}{}", "A".repeat(MAX_TOKEN_BYTES));
        assert_eq!(
            public.verify(&long, NOW),
            Err(VerifyError::TooLong(long.len()))
        );
    }

    #[test]
    fn a_signed_payload_of_a_bad_shape_is_malformed() {
        // Only a key holder can sign these; they still must not pass or panic.
        let key = key();
        for payload in [vec![], vec![1; 7], vec![0; 8], {
            let mut p = NOW.to_be_bytes().to_vec();
            p.extend_from_slice(&[0xff, 0xfe]);
            p
        }] {
            let signed = format!("v1.{}", URL_SAFE_NO_PAD.encode(&payload));
            let token = format!(
                "{signed}.{}",
                URL_SAFE_NO_PAD.encode(key.sign(signed.as_bytes()))
            );
            assert_eq!(
                key.public_key().verify(&token, NOW).unwrap_err().label(),
                "malformed",
                "{payload:?}"
            );
        }
    }

    #[test]
    fn changing_any_byte_of_a_token_breaks_it() {
        let key = key();
        let public = key.public_key();
        let token = key.mint("ada", NOW + 60).unwrap();
        for at in 0..token.len() {
            for replacement in [b'A', b'_', b'.', b'0', 0x7f] {
                let mut bytes = token.clone().into_bytes();
                if bytes[at] == replacement {
                    continue;
                }
                bytes[at] = replacement;
                let tampered = String::from_utf8(bytes).unwrap();
                assert!(
                    public.verify(&tampered, NOW).is_err(),
                    "byte {at} set to {replacement} still verifies: {tampered}"
                );
            }
        }
    }

    /// Under the key whose bytes are all 0 (a point of order 4), the identity for `R`
    /// and 0 for `S` is the signature of about one message in four: a token for any
    /// account, forged without a private key, would check after a few tries of its
    /// expiry. No such token checks, under that key or any other of small order.
    #[test]
    fn a_small_order_key_checks_no_forged_token() {
        let mut signature = [0u8; 64];
        signature[0] = 1;
        let signature = URL_SAFE_NO_PAD.encode(signature);
        for key in [[0u8; 32], {
            let mut one = [0u8; 32];
            one[0] = 1;
            one
        }] {
            let public = PublicKey::from_bytes(key);
            for expiry in 2_000_000_000u64..2_000_000_064 {
                let mut payload = expiry.to_be_bytes().to_vec();
                payload.extend_from_slice(b"admin");
                let token = format!("v1.{}.{signature}", URL_SAFE_NO_PAD.encode(&payload));
                assert!(
                    public.verify(&token, NOW).is_err(),
                    "forged token verifies: {token}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn any_text_is_refused_without_panic(text in "\\PC{0,600}") {
            let public = PublicKey::from_bytes([9; 32]);
            prop_assert!(public.verify(&text, NOW).is_err());
        }

        #[test]
        fn any_token_shaped_text_is_refused_without_panic(
            payload in "[A-Za-z0-9_-]{0,200}",
            signature in "[A-Za-z0-9_-]{0,100}",
        ) {
            let public = key().public_key();
            let text = format!("v1.{payload}.{signature}");
            prop_assert!(public.verify(&text, NOW).is_err());
        }
    }
}
