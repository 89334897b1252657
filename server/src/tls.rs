//! The server's TLS identity (a fresh self-signed certificate, or one read from PEM files)
//! and the QUIC server configuration built on it.
//!
//! The client half (the [`Fingerprint`] a client pins, the certificate check, the transport
//! both ends share) lives in the `client` crate; the server uses its `Fingerprint` so that
//! what it reports is exactly what a client pins.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use client::tls::transport_config;
pub use client::tls::{Fingerprint, TransportLimits};
use quinn::crypto::rustls::QuicServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

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
        let names = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        let certified =
            rcgen::generate_simple_self_signed(names).context("cannot generate a certificate")?;
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

/// The QUIC server configuration: TLS 1.3 with this identity and the protocol's ALPN, one
/// bidirectional stream per connection, no unidirectional streams, small receive windows.
pub fn server_config(identity: Identity, limits: TransportLimits) -> Result<quinn::ServerConfig> {
    let mut tls = rustls::ServerConfig::builder_with_provider(client::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 is unavailable")?
        .with_no_client_auth()
        .with_single_cert(identity.chain, identity.key)
        .context("the certificate and key do not form a usable identity")?;
    tls.alpn_protocols = vec![protocol::ALPN.to_vec()];
    tls.max_early_data_size = 0;
    let crypto = QuicServerConfig::try_from(tls).context("TLS configuration unusable for QUIC")?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    // Each client may open its one control stream.
    let transport = transport_config(limits, 1).context("QUIC transport")?;
    config.transport_config(Arc::new(transport));
    // Address migration lets a client move between networks; an MMO client rarely needs it
    // and it widens what an attacker can do with spoofed addresses.
    config.migration(false);
    Ok(config)
}
