//! The server's TLS identity (a fresh self-signed certificate, or one read from PEM files)
//! and the QUIC server configuration built on it; the QUIC endpoint's configuration (its
//! connection ids).
//!
//! The client half (the [`Fingerprint`] a client pins, the certificate check, the transport
//! both ends share) lives in the `client` crate; the server uses its `Fingerprint` so that
//! what it reports is exactly what a client pins.

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use client::tls::transport_config;
pub use client::tls::{Fingerprint, TransportLimits};
use quinn::crypto::rustls::QuicServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The QUIC endpoint's configuration: quinn's defaults, with connection ids of 8 random bytes.
///
/// quinn's default ids carry 24 random bits (a 3-byte nonce, then a keyed hash of it). The id
/// a retry hands a new client is drawn without a check against the ids in use, and quinn
/// routes the client's next Initial to an established connection that holds the same id,
/// which drops it: the attempt times out. With a few ids per connection and a thousand
/// clients, that lost attempts in the load test (measured in `docs/benchmarks.md`). With 64
/// random bits the chance is negligible. (Short packets for
/// unknown ids are then answered with stateless resets, which quinn limits in rate and
/// size, instead of being dropped by the hash check.)
pub fn endpoint_config() -> quinn::EndpointConfig {
    let mut config = quinn::EndpointConfig::default();
    config.cid_generator(connection_ids);
    config
}

/// The generator of the endpoint's connection ids (see [`endpoint_config`]).
fn connection_ids() -> Box<dyn quinn::ConnectionIdGenerator> {
    Box::new(quinn_proto::RandomConnectionIdGenerator::new(8))
}

/// A certificate chain and its private key.
pub struct Identity {
    /// The chain, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's key.
    pub key: PrivateKeyDer<'static>,
}

impl Identity {
    /// A fresh self-signed certificate for `localhost`, `127.0.0.1` and `::1`.
    pub fn self_signed() -> Result<Identity> {
        let certified = rcgen::generate_simple_self_signed(local_names())
            .context("cannot generate a certificate")?;
        Ok(Identity {
            chain: vec![certified.cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
                certified.signing_key.serialize_der(),
            )),
        })
    }

    /// Reads a PEM certificate chain and a PEM private key.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Identity> {
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|err| anyhow!("cannot read certificates from {}: {err}", cert.display()))?;
        if chain.is_empty() {
            bail!("{} holds no PEM certificate", cert.display());
        }
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|err| anyhow!("cannot read a private key from {}: {err}", key.display()))?;
        Ok(Identity { chain, key })
    }

    /// The leaf certificate's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.chain[0])
    }
}

/// The QUIC server configuration: TLS 1.3 with these certificates, the protocol's ALPN
/// for native clients and `h3` for browsers' WebTransport; each client may open two
/// bidirectional streams (a browser's CONNECT and its session's stream; a native client
/// uses one) and four unidirectional ones (a browser's HTTP/3 control and QPACK streams).
pub fn server_config(
    certs: Arc<Certificates>,
    limits: TransportLimits,
) -> Result<quinn::ServerConfig> {
    let mut tls = rustls::ServerConfig::builder_with_provider(client::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 is unavailable")?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    tls.alpn_protocols = vec![protocol::ALPN.to_vec(), crate::webtransport::ALPN.to_vec()];
    tls.max_early_data_size = 0;
    let crypto = QuicServerConfig::try_from(tls).context("TLS configuration unusable for QUIC")?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = transport_config(limits, 2).context("QUIC transport")?;
    transport.max_concurrent_uni_streams(4u8.into());
    config.transport_config(Arc::new(transport));
    // Address migration lets a client move between networks; an MMO client rarely needs it
    // and it widens what an attacker can do with spoofed addresses.
    config.migration(false);
    Ok(config)
}

/// How long the generated WebTransport certificate is valid: browsers accept a certificate
/// by its hash (`serverCertificateHashes`) only when it is valid for at most 14 days.
pub const WEBTRANSPORT_CERT_VALIDITY: Duration = Duration::from_secs(13 * 24 * 3600);
/// A generated WebTransport certificate is replaced this long after it was made, well
/// before it expires.
pub const WEBTRANSPORT_CERT_ROTATION: Duration = Duration::from_secs(6 * 24 * 3600);
/// The generated certificate's validity starts this long before it was made, so a client
/// whose clock is a little behind still accepts it.
const CLOCK_SKEW: Duration = Duration::from_secs(3600);

/// The certificate a browser connects with when the operator configured none: ECDSA
/// P-256, valid for [`WEBTRANSPORT_CERT_VALIDITY`], named by its SHA-256.
#[derive(Clone)]
pub struct WebTransportCert {
    key: Arc<CertifiedKey>,
    /// SHA-256 of the certificate's DER bytes: what a page passes as
    /// `serverCertificateHashes`.
    pub sha256: [u8; 32],
    /// When it was made, Unix seconds.
    pub made_unix: u64,
    /// When it expires, Unix seconds.
    pub not_after_unix: u64,
}

impl WebTransportCert {
    /// A fresh certificate made at `now_unix`.
    pub fn generate(now_unix: u64) -> Result<WebTransportCert> {
        let mut params = rcgen::CertificateParams::new(local_names())
            .context("cannot name the WebTransport certificate")?;
        let at = |unix: u64| {
            time::OffsetDateTime::from_unix_timestamp(i64::try_from(unix).unwrap_or(i64::MAX))
                .context("the clock is out of range for a certificate")
        };
        let not_after_unix = now_unix + WEBTRANSPORT_CERT_VALIDITY.as_secs();
        params.not_before = at(now_unix.saturating_sub(CLOCK_SKEW.as_secs()))?;
        params.not_after = at(not_after_unix)?;
        let key_pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .context("cannot generate a P-256 key")?;
        let cert = params
            .self_signed(&key_pair)
            .context("cannot sign the WebTransport certificate")?;
        let der = cert.der().clone();
        let digest = ring::digest::digest(&ring::digest::SHA256, &der);
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(digest.as_ref());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_pair.serialize_der()));
        Ok(WebTransportCert {
            key: Arc::new(certified(vec![der], key)?),
            sha256,
            made_unix: now_unix,
            not_after_unix,
        })
    }

    /// The hash as lowercase hex.
    pub fn sha256_hex(&self) -> String {
        self.sha256.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The server's certificates, chosen per connection by ALPN: native clients always get
/// the main identity (its fingerprint stays what they pinned); browsers get the generated
/// short-lived certificate, or the main identity when the operator configured one (a
/// certificate a browser trusts through its authorities).
pub struct Certificates {
    main: Arc<CertifiedKey>,
    webtransport: Option<RwLock<WebTransportCert>>,
}

impl std::fmt::Debug for Certificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificates").finish_non_exhaustive()
    }
}

impl Certificates {
    /// `identity` for everyone; with `generated`, browsers get that certificate instead.
    pub fn new(identity: Identity, generated: Option<WebTransportCert>) -> Result<Certificates> {
        Ok(Certificates {
            main: Arc::new(certified(identity.chain, identity.key)?),
            webtransport: generated.map(RwLock::new),
        })
    }

    /// The generated WebTransport certificate now in use, if any.
    pub fn webtransport(&self) -> Option<WebTransportCert> {
        self.webtransport
            .as_ref()
            .map(|cert| cert.read().unwrap_or_else(|p| p.into_inner()).clone())
    }

    /// Replaces the generated certificate when it is due ([`WEBTRANSPORT_CERT_ROTATION`]
    /// after it was made); returns the new one. Connections already open keep theirs.
    pub fn rotate_if_due(&self, now_unix: u64) -> Result<Option<WebTransportCert>> {
        let Some(slot) = &self.webtransport else {
            return Ok(None);
        };
        let made = slot.read().unwrap_or_else(|p| p.into_inner()).made_unix;
        if now_unix < made + WEBTRANSPORT_CERT_ROTATION.as_secs() {
            return Ok(None);
        }
        let fresh = WebTransportCert::generate(now_unix)?;
        *slot.write().unwrap_or_else(|p| p.into_inner()) = fresh.clone();
        Ok(Some(fresh))
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let browser = hello
            .alpn()
            .is_some_and(|mut offered| offered.any(|p| p == crate::webtransport::ALPN));
        match (&self.webtransport, browser) {
            (Some(slot), true) => Some(Arc::clone(
                &slot.read().unwrap_or_else(|p| p.into_inner()).key,
            )),
            _ => Some(Arc::clone(&self.main)),
        }
    }
}

fn certified(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<CertifiedKey> {
    CertifiedKey::from_der(chain, key, &client::tls::provider())
        .context("the certificate and key do not form a usable identity")
}

fn local_names() -> Vec<String> {
    vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A retry's id is not checked against the ids in use, so ids must not repeat by chance:
    /// 100,000 of them, as many as a busy server hands out, are all different (quinn's
    /// default, with 24 random bits, repeats about 300 times in as many).
    #[test]
    fn connection_ids_do_not_repeat() {
        let mut ids = connection_ids();
        assert_eq!(ids.cid_len(), 8);
        let drawn: std::collections::HashSet<_> =
            (0..100_000).map(|_| ids.generate_cid()).collect();
        assert_eq!(drawn.len(), 100_000);
    }

    #[test]
    fn the_webtransport_certificate_is_short_lived_p256_and_rotates() {
        let now = 1_800_000_000;
        let cert = WebTransportCert::generate(now).unwrap();
        assert!(cert.not_after_unix - now <= 14 * 24 * 3600);
        // The whole validity period, clock skew included, stays within 14 days.
        assert!(WEBTRANSPORT_CERT_VALIDITY + CLOCK_SKEW <= Duration::from_secs(14 * 24 * 3600));
        assert_eq!(cert.sha256_hex().len(), 64);
        let main = Identity::self_signed().unwrap();
        let certs = Certificates::new(main, Some(cert.clone())).unwrap();
        assert!(certs.rotate_if_due(now + 3600).unwrap().is_none());
        let due = now + WEBTRANSPORT_CERT_ROTATION.as_secs();
        let fresh = certs.rotate_if_due(due).unwrap().expect("rotated");
        assert_ne!(fresh.sha256, cert.sha256);
        assert_eq!(certs.webtransport().unwrap().sha256, fresh.sha256);
        assert!(fresh.not_after_unix > cert.not_after_unix);
        // An operator's certificate serves browsers too: nothing to rotate.
        let configured = Certificates::new(Identity::self_signed().unwrap(), None).unwrap();
        assert!(configured.rotate_if_due(due).unwrap().is_none());
    }
}
