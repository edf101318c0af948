//! TLS for both ends: the receiver presents its [`Identity`]; the sender trusts it by a pinned
//! SHA-256 fingerprint (`--pin`, `--cert`) or through a CA file (`--ca`). There is no trust on
//! first use and no "accept anything" mode.
//!
//! Mutual TLS: the receiver asks every client for a certificate (TLS 1.3 CertificateRequest,
//! RFC 8446 section 4.3.2) and the sender presents its own self-signed identity. TLS proves the
//! sender holds the certificate's key (CertificateVerify, section 4.4.3, checked here with
//! rustls' ring provider); which certificates are *allowed* is decided on the fingerprint
//! after the handshake ([`crate::senders`]), so that a refused sender hears why instead of a
//! bare TLS alert. A client without a certificate still completes the handshake (bulk-only
//! receivers may be open, and a token may stand in for the certificate).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::error::{Result, TransferError};
use crate::identity::{Fingerprint, Identity};

/// How the sender decides to trust the receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The end-entity certificate must have this SHA-256 fingerprint (`--pin`); the name in
    /// the certificate is not checked, so that an IP address works.
    Pin(Fingerprint),
    /// Like [`Trust::Pin`] with the fingerprint of the first certificate of a PEM file
    /// (`--cert`, a copy of the receiver's `cert.pem`).
    CertFile(PathBuf),
    /// The chain must lead to a root in this PEM file and name the host (`--ca`).
    Ca(PathBuf),
}

/// Why the last handshake's pin check failed, shared with the verifier so that the sender can
/// say so instead of relaying a bare TLS alert.
#[derive(Debug, Clone, Default)]
pub(crate) struct PinReport(Arc<Mutex<Option<(Fingerprint, Fingerprint)>>>);

impl PinReport {
    /// `(expected, presented)` of the last mismatch, if any.
    pub fn mismatch(&self) -> Option<(Fingerprint, Fingerprint)> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A handshake signature checked with the provider's algorithms (TLS 1.3 or 1.2 rules).
fn signature(
    provider: &CryptoProvider,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    tls13: bool,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    let algs = &provider.signature_verification_algorithms;
    if tls13 {
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    } else {
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }
}

fn schemes(provider: &CryptoProvider) -> Vec<SignatureScheme> {
    provider
        .signature_verification_algorithms
        .supported_schemes()
}

#[derive(Debug)]
struct PinVerifier {
    pin: Fingerprint,
    report: PinReport,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got = Fingerprint::of(end_entity.as_ref());
        if got == self.pin {
            Ok(ServerCertVerified::assertion())
        } else {
            *self.report.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((self.pin, got));
            Err(rustls::Error::General(format!(
                "certificate pin mismatch: expected sha256 {}, got {got}",
                self.pin
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        signature(&self.provider, message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        signature(&self.provider, message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        schemes(&self.provider)
    }
}

/// Accepts any client certificate whose handshake signature verifies: possession of the key is
/// proved here, the fingerprint is judged by the job layer ([`crate::senders`]).
#[derive(Debug)]
struct SenderCertVerifier {
    provider: Arc<CryptoProvider>,
}

impl ClientCertVerifier for SenderCertVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        signature(&self.provider, message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        signature(&self.provider, message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        schemes(&self.provider)
    }
}

/// The SHA-256 fingerprint of the certificate the peer of `conn` presented, if any.
pub(crate) fn peer_fingerprint(conn: &quinn::Connection) -> Option<Fingerprint> {
    let any = conn.peer_identity()?;
    let chain = any.downcast::<Vec<CertificateDer<'static>>>().ok()?;
    chain.first().map(|c| Fingerprint::of(c.as_ref()))
}

/// A rustls client configuration for `trust` (ALPN `hare/1`, TLS 1.3 as QUIC requires)
/// presenting no certificate of its own, and the handle that reports a pin mismatch.
pub(crate) fn client_crypto(trust: &Trust) -> Result<(rustls::ClientConfig, PinReport)> {
    client_crypto_as(trust, None)
}

/// Like [`client_crypto`], presenting `identity` (the sender's own certificate) when the
/// receiver asks for one.
pub(crate) fn client_crypto_as(
    trust: &Trust,
    identity: Option<&Identity>,
) -> Result<(rustls::ClientConfig, PinReport)> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TransferError::Config(e.to_string()))?;
    let report = PinReport::default();
    let cfg = match trust {
        Trust::Pin(_) | Trust::CertFile(_) => {
            let pin = match trust {
                Trust::Pin(p) => *p,
                Trust::CertFile(path) => Fingerprint::of_pem_file(path)?,
                Trust::Ca(_) => unreachable!("matched above"),
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinVerifier {
                    pin,
                    report: report.clone(),
                    provider,
                }))
        }
        Trust::Ca(path) => {
            let mut roots = rustls::RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| TransferError::Trust(format!("{}: {e}", path.display())))?;
            for c in certs {
                let c = c.map_err(|e| TransferError::Trust(format!("{}: {e}", path.display())))?;
                roots
                    .add(c)
                    .map_err(|e| TransferError::Trust(format!("{}: {e}", path.display())))?;
            }
            if roots.is_empty() {
                return Err(TransferError::Trust(format!(
                    "{}: no CA certificate in the file",
                    path.display()
                )));
            }
            builder.with_root_certificates(roots)
        }
    };
    let mut cfg = match identity {
        Some(id) => cfg
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(|e| TransferError::Identity {
                dir: id.cert_path.clone(),
                message: format!("the sender's certificate and key do not work together: {e}"),
            })?,
        None => cfg.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![crate::protocol::ALPN.to_vec()];
    Ok((cfg, report))
}

/// A rustls server configuration presenting `identity` (ALPN `hare/1`, TLS 1.3) and asking
/// clients for their certificate (optional at the TLS level, see the module doc).
pub(crate) fn server_crypto(identity: &Identity) -> Result<rustls::ServerConfig> {
    let provider = provider();
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TransferError::Config(e.to_string()))?
        .with_client_cert_verifier(Arc::new(SenderCertVerifier { provider }))
        .with_single_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(|e| TransferError::Identity {
            dir: identity.cert_path.clone(),
            message: format!("certificate and key do not work together: {e}"),
        })?;
    cfg.alpn_protocols = vec![crate::protocol::ALPN.to_vec()];
    Ok(cfg)
}

/// True when `given` matches the receiver's `required` token. Both are hashed first so the
/// comparison takes the same time whatever the lengths and contents.
pub(crate) fn token_matches(required: &str, given: Option<&str>) -> bool {
    let Some(given) = given else {
        return false;
    };
    let a = Fingerprint::of(required.as_bytes()).0;
    let b = Fingerprint::of(given.as_bytes()).0;
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_exactly() {
        assert!(token_matches("s3cret", Some("s3cret")));
        assert!(!token_matches("s3cret", Some("s3cre")));
        assert!(!token_matches("s3cret", None));
        assert!(!token_matches("s3cret", Some("")));
    }
}
