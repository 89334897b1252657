//! The client half of the TLS setup: which server certificates a client accepts (a
//! [`Trust`]: one pinned [`Fingerprint`], or any on this machine) and the QUIC transport
//! both ends share.
//!
//! ring is the only crypto provider: every rustls configuration here names it explicitly,
//! so no process-wide default provider is needed. No certificate authority is involved: a
//! game server's certificate is self-signed or its own, and the client learns its
//! fingerprint out of band (the server logs it and can write it to a file).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::{NoInitialCipherSuite, QuicClientConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use thiserror::Error;

/// A SHA-256 certificate fingerprint.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

/// Why a text is not a certificate fingerprint.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FingerprintError {
    /// Not 64 hexadecimal digits once the colons between bytes are removed.
    #[error("a certificate fingerprint is 64 hex digits (SHA-256), got {0:?}")]
    Malformed(String),
}

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of(cert_der: &[u8]) -> Fingerprint {
        let digest = ring::digest::digest(&ring::digest::SHA256, cert_der);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest.as_ref());
        Fingerprint(bytes)
    }

    /// Parses 64 hex digits (colons between bytes allowed, as OpenSSL prints them).
    pub fn parse(text: &str) -> Result<Fingerprint, FingerprintError> {
        let digits: Vec<u8> = text.bytes().filter(|c| *c != b':').collect();
        if digits.len() != 64 || !digits.iter().all(u8::is_ascii_hexdigit) {
            return Err(FingerprintError::Malformed(text.to_owned()));
        }
        let nibble = |digit: u8| match digit {
            b'0'..=b'9' => digit - b'0',
            b'a'..=b'f' => digit - b'a' + 10,
            _ => digit - b'A' + 10,
        };
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            *byte = nibble(pair[0]) << 4 | nibble(pair[1]);
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

/// Which server certificates a client accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Exactly the certificate with this SHA-256 fingerprint.
    Pinned(Fingerprint),
    /// Any certificate: no protection against an impostor. For tests and load tests
    /// against a server on this machine only.
    AnyCertificate,
}

/// Why a QUIC configuration could not be built.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// rustls refused the protocol versions asked for (TLS 1.3 only).
    #[error("TLS 1.3 is unavailable: {0}")]
    Tls(#[from] rustls::Error),
    /// The TLS configuration has no cipher suite QUIC can start with.
    #[error("TLS configuration unusable for QUIC: {0}")]
    Quic(#[from] NoInitialCipherSuite),
    /// The idle timeout does not fit QUIC's variable-length integer.
    #[error("idle timeout too long: {0}")]
    IdleTimeout(#[from] quinn::VarIntBoundsExceeded),
}

/// How long a silent connection lives, and how often an end says it is still there.
#[derive(Clone, Copy, Debug)]
pub struct TransportLimits {
    /// Close a connection silent for this long.
    pub idle_timeout: Duration,
    /// Send keep-alives this often.
    pub keep_alive: Duration,
}

/// The ring crypto provider, named explicitly in every configuration.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The QUIC transport both ends use: no unidirectional streams, small receive windows
/// (control frames are at most 4 kB; inputs and snapshots are datagrams), the given
/// timeouts. `peer_bidi_streams` is how many bidirectional streams the peer may open: a
/// client lets the server open none; the server lets a client open two and, on top of
/// this, four unidirectional ones (what a browser's HTTP/3 needs for WebTransport).
pub fn transport_config(
    limits: TransportLimits,
    peer_bidi_streams: u8,
) -> Result<quinn::TransportConfig, ConfigError> {
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(peer_bidi_streams.into())
        .max_concurrent_uni_streams(0u8.into())
        .stream_receive_window(64_000u32.into())
        .receive_window(256_000u32.into())
        .send_window(1_000_000)
        .datagram_receive_buffer_size(Some(64 * 1024))
        .datagram_send_buffer_size(64 * 1024)
        .keep_alive_interval(Some(limits.keep_alive))
        .max_idle_timeout(Some(quinn::IdleTimeout::try_from(limits.idle_timeout)?));
    Ok(transport)
}

/// A client configuration that accepts the server certificates `trust` allows (no
/// certificate authority involved), speaking the protocol's ALPN over TLS 1.3.
pub fn client_config(
    trust: Trust,
    limits: TransportLimits,
) -> Result<quinn::ClientConfig, ConfigError> {
    client_config_with_alpn(trust, limits, protocol::ALPN)
}

/// [`client_config`] offering another ALPN (`h3` speaks WebTransport to the server, as a
/// browser does).
pub fn client_config_with_alpn(
    trust: Trust,
    limits: TransportLimits,
    alpn: &[u8],
) -> Result<quinn::ClientConfig, ConfigError> {
    let provider = provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedVerifier { trust, provider }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = QuicClientConfig::try_from(tls)?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport_config(limits, 0)?));
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
        assert_eq!(Fingerprint::parse(&text), Ok(fingerprint));
        let with_colons: Vec<String> = fingerprint.0.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(Fingerprint::parse(&with_colons.join(":")), Ok(fingerprint));
    }

    #[test]
    fn malformed_fingerprints_are_errors_not_panics() {
        for text in [
            "abc".to_owned(),
            "zz".repeat(32),
            // 64 bytes, but a multi-byte character straddles a digit pair.
            format!("{}é{}", "0".repeat(31), "0".repeat(31)),
            "+1".repeat(32),
            String::new(),
        ] {
            assert_eq!(
                Fingerprint::parse(&text),
                Err(FingerprintError::Malformed(text.clone())),
                "{text:?}"
            );
        }
    }
}
