//! The server's TLS identity and the QUIC configurations built on it, for the server and
//! for clients that pin the server's certificate by its SHA-256 fingerprint.
//!
//! ring is the only crypto provider: every rustls configuration here names it explicitly,
//! so no process-wide default provider is needed.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A SHA-256 certificate fingerprint.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of(cert_der: &[u8]) -> Fingerprint {
        let digest = ring::digest::digest(&ring::digest::SHA256, cert_der);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest.as_ref());
        Fingerprint(bytes)
    }

    /// Parses 64 hex digits (colons between bytes allowed, as OpenSSL prints them).
    pub fn parse(text: &str) -> Result<Fingerprint> {
        let digits: String = text.chars().filter(|c| *c != ':').collect();
        if digits.len() != 64 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            bail!("a certificate fingerprint is 64 hex digits (SHA-256), got {text:?}");
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16)
                .map_err(|_| anyhow!("bad hex in fingerprint {text:?}"))?;
        }
        Ok(Fingerprint(bytes))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
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

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Transport limits for untrusted clients.
#[derive(Clone, Copy, Debug)]
pub struct TransportLimits {
    /// Close a connection silent for this long.
    pub idle_timeout: Duration,
    /// Send keep-alives this often.
    pub keep_alive: Duration,
}

/// The QUIC server configuration: TLS 1.3 with this identity and the protocol's ALPN, one
/// bidirectional stream per connection, no unidirectional streams, small receive windows.
pub fn server_config(identity: Identity, limits: TransportLimits) -> Result<quinn::ServerConfig> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 is unavailable")?
        .with_no_client_auth()
        .with_single_cert(identity.chain, identity.key)
        .context("the certificate and key do not form a usable identity")?;
    tls.alpn_protocols = vec![protocol::ALPN.to_vec()];
    tls.max_early_data_size = 0;
    let crypto = QuicServerConfig::try_from(tls).context("TLS configuration unusable for QUIC")?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport(limits, Side::Server)?));
    // Address migration lets a client move between networks; an MMO client rarely needs it
    // and it widens what an attacker can do with spoofed addresses.
    config.migration(false);
    Ok(config)
}

#[derive(PartialEq)]
enum Side {
    Server,
    Client,
}

fn transport(limits: TransportLimits, side: Side) -> Result<quinn::TransportConfig> {
    let mut transport = quinn::TransportConfig::default();
    let streams = if side == Side::Server { 1u8 } else { 0 };
    transport
        .max_concurrent_bidi_streams(streams.into())
        .max_concurrent_uni_streams(0u8.into())
        // Control frames are at most 4 kB; inputs are datagrams.
        .stream_receive_window(64_000u32.into())
        .receive_window(256_000u32.into())
        .send_window(1_000_000)
        .datagram_receive_buffer_size(Some(64 * 1024))
        .datagram_send_buffer_size(64 * 1024)
        .keep_alive_interval(Some(limits.keep_alive))
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(limits.idle_timeout).context("idle timeout too long")?,
        ));
    Ok(transport)
}

/// Which server certificates a client accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Exactly the certificate with this SHA-256 fingerprint.
    Pinned(Fingerprint),
    /// Any certificate: no protection against an impostor. For tests and load tests
    /// against a server on this machine only.
    AnyCertificate,
}

/// A client configuration that accepts the server certificates `trust` allows (no
/// certificate authority involved), speaking the protocol's ALPN.
pub fn client_config(trust: Trust, limits: TransportLimits) -> Result<quinn::ClientConfig> {
    let provider = provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 is unavailable")?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedVerifier { trust, provider }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![protocol::ALPN.to_vec()];
    let crypto = QuicClientConfig::try_from(tls).context("TLS configuration unusable for QUIC")?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport(limits, Side::Client)?));
    Ok(config)
}

/// Accepts the certificate `trust` allows; checks handshake signatures with it.
#[derive(Debug)]
struct PinnedVerifier {
    trust: Trust,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let accepted = match self.trust {
            Trust::Pinned(pinned) => Fingerprint::of(end_entity) == pinned,
            Trust::AnyCertificate => true,
        };
        if accepted {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_round_trips_through_text() {
        let fingerprint = Fingerprint::of(b"certificate");
        let text = fingerprint.to_string();
        assert_eq!(text.len(), 64);
        assert_eq!(Fingerprint::parse(&text).unwrap(), fingerprint);
        let with_colons: Vec<String> = fingerprint.0.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(
            Fingerprint::parse(&with_colons.join(":")).unwrap(),
            fingerprint
        );
        assert!(Fingerprint::parse("abc").is_err());
        assert!(Fingerprint::parse(&"zz".repeat(32)).is_err());
    }
}
