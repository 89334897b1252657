//! Ed25519 keys and their PEM text.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::rand::SystemRandom;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey};

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE, the algorithm
/// identifier 1.3.101.112, then a BIT STRING of the 32 key bytes that follow.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The DER prefix of ring's PKCS#8 version 2 Ed25519 document, before the 32-byte seed.
const RING_PKCS8_V2_PREFIX: [u8; 16] = [
    0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The DER prefix of a PKCS#8 version 1 Ed25519 document (RFC 8410), before the 32-byte
/// seed: the form OpenSSL writes and reads.
const PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The longest key text read, bytes: a PEM Ed25519 key is near 120; anything far longer
/// is not one.
const MAX_PEM_BYTES: usize = 4096;

const PRIVATE_LABEL: &str = "PRIVATE KEY";
const PUBLIC_LABEL: &str = "PUBLIC KEY";

/// Why a key is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text is not one PEM block of the expected label.
    #[error("not a PEM \"{label}\" block: {why}")]
    NotPem {
        /// The label expected (`PRIVATE KEY` or `PUBLIC KEY`).
        label: &'static str,
        /// What is wrong.
        why: &'static str,
    },
    /// The PEM block holds something other than an Ed25519 key.
    #[error("not an Ed25519 {kind}: {why}")]
    NotEd25519 {
        /// `private key` or `public key`.
        kind: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The system's random generator failed while generating a key.
    #[error("the system random generator failed")]
    Random,
}

/// An Ed25519 private key, which mints tokens ([`SigningKey::mint`]).
pub struct SigningKey {
    pair: Ed25519KeyPair,
    /// The PKCS#8 document the key was made from, for [`SigningKey::to_pem`].
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for SigningKey {
    // The private key stays out of logs and panics; the public half names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public_key())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key from the system's random generator.
    pub fn generate() -> Result<SigningKey, KeyError> {
        let v2 =
            Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).map_err(|_| KeyError::Random)?;
        // ring writes PKCS#8 version 2, which OpenSSL does not read; the key is kept as
        // version 1 (the seed alone), which both read.
        let seed = v2
            .as_ref()
            .strip_prefix(&RING_PKCS8_V2_PREFIX)
            .and_then(|rest| rest.get(..32))
            .ok_or_else(|| KeyError::NotEd25519 {
                kind: "private key",
                why: "ring generated a document of an unknown layout".to_owned(),
            })?;
        let mut v1 = PKCS8_V1_PREFIX.to_vec();
        v1.extend_from_slice(seed);
        SigningKey::from_pkcs8(&v1)
    }

    /// The key in a PKCS#8 DER document (version 1, as OpenSSL writes, or version 2, as
    /// ring does).
    pub fn from_pkcs8(der: &[u8]) -> Result<SigningKey, KeyError> {
        let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der).map_err(|err| {
            KeyError::NotEd25519 {
                kind: "private key",
                why: err.to_string(),
            }
        })?;
        Ok(SigningKey {
            pair,
            pkcs8: der.to_vec(),
        })
    }

    /// The key in PEM text (`-----BEGIN PRIVATE KEY-----`, PKCS#8).
    pub fn from_pem(text: &str) -> Result<SigningKey, KeyError> {
        SigningKey::from_pkcs8(&pem_decode(text, PRIVATE_LABEL)?)
    }

    /// The key as PEM text, which [`SigningKey::from_pem`] reads back.
    pub fn to_pem(&self) -> String {
        pem_encode(PRIVATE_LABEL, &self.pkcs8)
    }

    /// The public key that checks this key's tokens.
    pub fn public_key(&self) -> PublicKey {
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(self.pair.public_key().as_ref());
        PublicKey { bytes }
    }

    /// Signs `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> [u8; 64] {
        let mut signature = [0u8; 64];
        signature.copy_from_slice(self.pair.sign(message).as_ref());
        signature
    }
}

/// An Ed25519 public key, which checks tokens ([`PublicKey::verify`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey {
    bytes: [u8; 32],
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", STANDARD.encode(self.bytes))
    }
}

/// The y coordinates (little-endian, the sign bit of x cleared) of the eight points of
/// order dividing 8: the identity (1), the point of order 2 (p − 1), the two of order 4
/// (0) and the four of order 8 (two values of y, each with either sign of x). Such a public
/// key checks signatures nobody's private key made: `R` the identity and `S` zero check
/// for a quarter of all messages under the key 0.
const SMALL_ORDER_Y: [[u8; 32]; 5] = [
    [0; 32],
    {
        let mut one = [0; 32];
        one[0] = 1;
        one
    },
    {
        let mut p_minus_1 = [0xff; 32];
        p_minus_1[0] = 0xec;
        p_minus_1[31] = 0x7f;
        p_minus_1
    },
    [
        0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98,
        0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53,
        0xfc, 0x05,
    ],
    [
        0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67,
        0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac,
        0x03, 0x7a,
    ],
];

/// Why 32 bytes are no key to check tokens with: a point of small order, or a y coordinate
/// not below p = 2^255 − 19 (a second spelling of 0 to 18, among them the small-order 0
/// and 1). `None` for a key that may be one.
fn weakness(bytes: &[u8; 32]) -> Option<&'static str> {
    let mut y = *bytes;
    y[31] &= 0x7f;
    // y ≥ p: every byte above the lowest at its largest, the lowest at least 0xed.
    let unreduced = y[31] == 0x7f && y[1..31].iter().all(|&b| b == 0xff) && y[0] >= 0xed;
    if unreduced {
        Some("the key's y coordinate is not below 2^255 - 19")
    } else if SMALL_ORDER_Y.contains(&y) {
        Some("the key is a point of small order, which checks signatures nobody made")
    } else {
        None
    }
}

impl PublicKey {
    /// The key from its 32 bytes (RFC 8032). Any 32 bytes are taken here; bytes that are
    /// not a point on the curve, a point of small order or an unreduced one check no
    /// signature ([`PublicKey::from_pem`] refuses the last two).
    pub fn from_bytes(bytes: [u8; 32]) -> PublicKey {
        PublicKey { bytes }
    }

    /// The key's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// The key in PEM text (`-----BEGIN PUBLIC KEY-----`, an Ed25519
    /// SubjectPublicKeyInfo).
    pub fn from_pem(text: &str) -> Result<PublicKey, KeyError> {
        let der = pem_decode(text, PUBLIC_LABEL)?;
        let not = |why: &str| KeyError::NotEd25519 {
            kind: "public key",
            why: why.to_owned(),
        };
        let key = der
            .strip_prefix(&SPKI_PREFIX)
            .ok_or_else(|| not("the key's algorithm is not Ed25519 (1.3.101.112)"))?;
        let bytes: [u8; 32] = key
            .try_into()
            .map_err(|_| not("an Ed25519 public key is 32 bytes"))?;
        if let Some(why) = weakness(&bytes) {
            return Err(not(why));
        }
        Ok(PublicKey { bytes })
    }

    /// The key as PEM text, which [`PublicKey::from_pem`] and OpenSSL read.
    pub fn to_pem(&self) -> String {
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(&self.bytes);
        pem_encode(PUBLIC_LABEL, &der)
    }

    /// Whether `signature` is this key's signature of `message`.
    pub(crate) fn checks(&self, message: &[u8], signature: &[u8]) -> bool {
        if weakness(&self.bytes).is_some() {
            return false;
        }
        UnparsedPublicKey::new(&ED25519, &self.bytes)
            .verify(message, signature)
            .is_ok()
    }
}

/// The bytes of the one PEM block labelled `label` in `text`.
fn pem_decode(text: &str, label: &'static str) -> Result<Vec<u8>, KeyError> {
    let not = |why| KeyError::NotPem { label, why };
    if text.len() > MAX_PEM_BYTES {
        return Err(not("the text is too long for an Ed25519 key"));
    }
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let mut lines = text
        .lines()
        .map(str::trim)
        .skip_while(|line| line.is_empty());
    if lines.next() != Some(begin.as_str()) {
        return Err(not("it does not start with the BEGIN line"));
    }
    let mut body = String::new();
    for line in lines.by_ref() {
        if line == end {
            if lines.any(|line| !line.is_empty()) {
                return Err(not("text follows the END line"));
            }
            return STANDARD
                .decode(body.as_bytes())
                .map_err(|_| not("the body is not base64"));
        }
        body.push_str(line);
    }
    Err(not("the END line is missing"))
}

/// `der` as a PEM block labelled `label`, 64 base64 characters a line.
fn pem_encode(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    // Base64 is ASCII, so splitting at any byte index is at a character boundary.
    for line in body.as_bytes().chunks(64) {
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key OpenSSL wrote (`openssl genpkey -algorithm ed25519`, PKCS#8 version 1) and
    /// its public key (`openssl pkey -pubout`): RFC 8410's example key.
    const OPENSSL_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
-----END PRIVATE KEY-----
";
    const OPENSSL_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=
-----END PUBLIC KEY-----
";

    #[test]
    fn generated_keys_round_trip_through_pem() {
        let key = SigningKey::generate().unwrap();
        let again = SigningKey::from_pem(&key.to_pem()).unwrap();
        assert_eq!(again.public_key(), key.public_key());
        let public = PublicKey::from_pem(&key.public_key().to_pem()).unwrap();
        assert_eq!(public, key.public_key());
        assert_ne!(
            SigningKey::generate().unwrap().public_key(),
            key.public_key()
        );
        // Written as PKCS#8 version 1, like OpenSSL's keys.
        assert!(
            key.to_pem().contains("\nMC4CAQAwBQYDK2VwBCIEI"),
            "{}",
            key.to_pem()
        );
        // The private key does not show in debug output.
        let shown = format!("{key:?}");
        assert!(!shown.contains(&key.to_pem()[28..60]), "{shown}");
    }

    /// Public keys of small order, in either sign of x, and y coordinates not below p are
    /// refused from PEM, saying why.
    #[test]
    fn weak_public_keys_are_refused() {
        let mut weak: Vec<[u8; 32]> = Vec::new();
        for y in SMALL_ORDER_Y {
            let mut negative = y;
            negative[31] |= 0x80;
            weak.extend([y, negative]);
        }
        for low in 0xed..=0xff {
            let mut unreduced = [0xff; 32];
            unreduced[0] = low;
            unreduced[31] = 0x7f;
            weak.push(unreduced);
        }
        for bytes in weak {
            let pem = PublicKey::from_bytes(bytes).to_pem();
            match PublicKey::from_pem(&pem) {
                Err(KeyError::NotEd25519 { why, .. }) => {
                    assert!(
                        why.contains("small order") || why.contains("2^255"),
                        "{why}"
                    )
                }
                other => panic!("{bytes:02x?}: {other:?}"),
            }
        }
        // The largest reduced y, and real keys, are taken.
        let mut largest = [0xff; 32];
        largest[0] = 0xec - 1;
        largest[31] = 0x7f;
        assert_eq!(weakness(&largest), None);
        let real = SigningKey::generate().unwrap().public_key();
        assert_eq!(PublicKey::from_pem(&real.to_pem()), Ok(real));
    }

    #[test]
    fn openssl_keys_are_read_and_match() {
        let key = SigningKey::from_pem(OPENSSL_PRIVATE).unwrap();
        let public = PublicKey::from_pem(OPENSSL_PUBLIC).unwrap();
        assert_eq!(key.public_key(), public);
        assert_eq!(public.to_pem(), OPENSSL_PUBLIC);
    }

    #[test]
    fn bad_key_texts_are_refused() {
        let public_as_private = SigningKey::from_pem(OPENSSL_PUBLIC).unwrap_err();
        assert!(matches!(public_as_private, KeyError::NotPem { .. }));
        assert!(matches!(
            PublicKey::from_pem(OPENSSL_PRIVATE).unwrap_err(),
            KeyError::NotPem { .. }
        ));
        for text in [
            "",
            "hello",
            "-----BEGIN PUBLIC KEY-----\nMCowBQ\n",
            "-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n",
            "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\nmore\n",
        ] {
            assert!(
                matches!(PublicKey::from_pem(text), Err(KeyError::NotPem { .. })),
                "{text:?}"
            );
        }
        // A well-formed PEM block of another key type, or of the wrong length.
        let rsa_like = pem_encode(PUBLIC_LABEL, &[0x30, 0x0d, 0x06, 0x09, 1, 2, 3]);
        assert!(matches!(
            PublicKey::from_pem(&rsa_like),
            Err(KeyError::NotEd25519 { .. })
        ));
        let mut short = SPKI_PREFIX.to_vec();
        short.extend_from_slice(&[7; 31]);
        assert!(matches!(
            PublicKey::from_pem(&pem_encode(PUBLIC_LABEL, &short)),
            Err(KeyError::NotEd25519 { .. })
        ));
        assert!(matches!(
            SigningKey::from_pem(&pem_encode(PRIVATE_LABEL, &[1, 2, 3])),
            Err(KeyError::NotEd25519 { .. })
        ));
        let huge = "A".repeat(MAX_PEM_BYTES + 1);
        assert!(matches!(
            SigningKey::from_pem(&huge),
            Err(KeyError::NotPem { .. })
        ));
    }
}
