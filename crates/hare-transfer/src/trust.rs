//! TLS for both ends: the receiver presents its [`Identity`]; the sender trusts it by a pinned
//! SHA-256 fingerprint (`--pin`, `--cert`) or through a CA file (`--ca`). There is no trust on
//! first use and no "accept anything" mode.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

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
pub struct PinReport(Arc<Mutex<Option<(Fingerprint, Fingerprint)>>>);

impl PinReport {
    /// `(expected, presented)` of the last mismatch, if any.
    pub fn mismatch(&self) -> Option<(Fingerprint, Fingerprint)> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
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

/// A rustls client configuration for `trust` (ALPN `hare/1`, TLS 1.3 as QUIC requires), and
/// the handle that reports a pin mismatch.
pub fn client_crypto(trust: &Trust) -> Result<(rustls::ClientConfig, PinReport)> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TransferError::Config(e.to_string()))?;
    let report = PinReport::default();
    let mut cfg = match trust {
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
                .with_no_client_auth()
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
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    cfg.alpn_protocols = vec![crate::protocol::ALPN.to_vec()];
    Ok((cfg, report))
}

/// A rustls server configuration presenting `identity` (ALPN `hare/1`, TLS 1.3).
pub fn server_crypto(identity: &Identity) -> Result<rustls::ServerConfig> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TransferError::Config(e.to_string()))?
        .with_no_client_auth()
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
pub fn token_matches(required: &str, given: Option<&str>) -> bool {
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
