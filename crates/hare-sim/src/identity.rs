//! A deterministic TLS identity and connection-id source for one run.
//!
//! Determinism needs more than a seeded endpoint RNG: anything whose *size* varies from run
//! to run changes packet sizes, hence timing, hence the whole report. ECDSA signatures are
//! DER-encoded and vary between 70 and 72 bytes, so the certificate and the handshake's
//! CertificateVerify use Ed25519, whose signatures are always 64 bytes (RFC 8032 section 5.1.6,
//! and deterministic). The key itself comes from the run seed, the serial number is fixed
//! (rcgen would otherwise derive one from a hash of the key, and DER drops leading zero bytes
//! of integers, so its length would vary), and the validity dates are rcgen's fixed defaults.
//! TLS still draws its own randomness (client random, X25519 key shares) from the system, but
//! those have fixed sizes, so only ciphertext bytes differ between reruns, never sizes or times.

use std::sync::Arc;

use quinn_proto::{ConnectionId, ConnectionIdGenerator};
use rcgen::{CertificateParams, KeyPair, SerialNumber, PKCS_ED25519};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::SimError;

/// The server name the client asks for and the certificate names.
pub(crate) const SERVER_NAME: &str = "hare-sim.invalid";

/// 32 pseudo-random bytes for `label`, a pure function of the run seed (SHA-256 of a
/// domain-separated string), so every derived secret differs per purpose and per seed.
pub(crate) fn derive(seed: u64, label: &str) -> [u8; 32] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"hare-sim/");
    ctx.update(label.as_bytes());
    ctx.update(&seed.to_le_bytes());
    let digest = ctx.finish();
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// The server's certificate chain and key.
pub(crate) struct Identity {
    /// Self-signed Ed25519 certificate.
    pub cert: CertificateDer<'static>,
    /// Its PKCS#8 key.
    pub key: PrivateKeyDer<'static>,
}

/// PKCS#8 v1 prefix of an Ed25519 private key (RFC 8410 section 7): SEQUENCE, version 0,
/// AlgorithmIdentifier id-Ed25519 (1.3.101.112), OCTET STRING wrapping the 32-byte seed.
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

impl Identity {
    /// The identity of a run with this seed.
    pub fn for_seed(seed: u64) -> Result<Identity, SimError> {
        let mut pkcs8 = Vec::with_capacity(48);
        pkcs8.extend_from_slice(&ED25519_PKCS8_PREFIX);
        pkcs8.extend_from_slice(&derive(seed, "ed25519-key"));
        let der = PrivatePkcs8KeyDer::from(pkcs8);
        let key_pair = KeyPair::from_pkcs8_der_and_sign_algo(&der, &PKCS_ED25519)
            .map_err(|e| SimError::Setup(format!("Ed25519 key: {e}")))?;
        let mut params = CertificateParams::new(vec![SERVER_NAME.to_string()])
            .map_err(|e| SimError::Setup(format!("certificate parameters: {e}")))?;
        params.serial_number = Some(SerialNumber::from_slice(&[0x48, 0x41, 0x52, 0x45]));
        let cert = params
            .self_signed(&key_pair)
            .map_err(|e| SimError::Setup(format!("self-signed certificate: {e}")))?;
        Ok(Identity {
            cert: cert.der().clone(),
            key: PrivateKeyDer::Pkcs8(der),
        })
    }
}

/// Connection ids from a seeded SplitMix64 stream (quinn's own generators draw from the
/// thread RNG), 8 bytes each like quinn's default length.
pub(crate) struct SeededCids {
    state: u64,
}

impl SeededCids {
    /// A generator whose sequence is a function of `seed` and `label`.
    pub fn new(seed: u64, label: &str) -> Self {
        let d = derive(seed, label);
        let mut s = [0u8; 8];
        s.copy_from_slice(&d[..8]);
        SeededCids {
            state: u64::from_le_bytes(s),
        }
    }

    /// SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators",
    /// OOPSLA 2014).
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Length of every id.
    pub const LEN: usize = 8;

    /// The next id.
    pub fn next_cid(&mut self) -> ConnectionId {
        ConnectionId::new(&self.next_u64().to_be_bytes())
    }
}

impl ConnectionIdGenerator for SeededCids {
    fn generate_cid(&mut self) -> ConnectionId {
        self.next_cid()
    }

    fn cid_len(&self) -> usize {
        Self::LEN
    }

    fn cid_lifetime(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A factory for `EndpointConfig::cid_generator`: each call starts the same seeded stream,
/// which is fine because each simulated endpoint builds exactly one generator.
pub(crate) fn cid_factory(
    seed: u64,
    label: &'static str,
) -> impl Fn() -> Box<dyn ConnectionIdGenerator> + Send + Sync + 'static {
    move || Box::new(SeededCids::new(seed, label))
}

/// The client's initial destination connection id provider (one connection per run), 20
/// bytes as quinn's default provider makes them.
pub(crate) fn initial_dcid_provider(seed: u64) -> Arc<dyn Fn() -> ConnectionId + Send + Sync> {
    let bytes = derive(seed, "initial-dcid");
    Arc::new(move || ConnectionId::new(&bytes[..20]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_a_function_of_the_seed() {
        let a = Identity::for_seed(7).map(|i| i.cert.to_vec()).ok();
        let b = Identity::for_seed(7).map(|i| i.cert.to_vec()).ok();
        let c = Identity::for_seed(8).map(|i| i.cert.to_vec()).ok();
        assert!(a.is_some());
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Same size whatever the seed: Ed25519 keys and signatures have fixed lengths.
        assert_eq!(a.map(|v| v.len()), c.map(|v| v.len()));
    }

    #[test]
    fn seeded_cids_repeat_per_seed() {
        let mut a = SeededCids::new(3, "x");
        let mut b = SeededCids::new(3, "x");
        let mut c = SeededCids::new(3, "y");
        let (a1, b1, c1) = (a.next_cid(), b.next_cid(), c.next_cid());
        assert_eq!(a1, b1);
        assert_ne!(a1, c1);
        assert_eq!(a1.len(), SeededCids::LEN);
        assert_ne!(a.next_cid(), a1);
    }
}
