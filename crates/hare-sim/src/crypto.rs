//! Packet protection of the simulated endpoints: real TLS 1.3 (rustls/ring) for the
//! handshake, and for 1-RTT packets either the real AEAD or a keyed null cipher.
//!
//! # Why a null cipher
//! At 10 Gbit/s the simulator moves about 140,000 datagrams (MTU 8952) or 860,000 (MTU 1452)
//! per simulated second, and a profile shows AES-GCM and header protection at about 28-40% of
//! all cycles. Nothing the simulator reports depends on the ciphertext: quinn's decisions
//! depend on packet *sizes* and *times*, and TLS's own randomness already makes every
//! ciphertext differ between reruns of a seed. So after the real handshake (whose Initial and
//! Handshake packets stay really protected), the 1-RTT keys are replaced by [`NullPacketKey`]
//! and [`NullHeaderKey`], which have the tag length, header-protection sample size and
//! confidentiality/integrity limits of the negotiated suite (AES-128-GCM: 16-byte tag,
//! 16-byte sample, 2^23 packets per key, RFC 9001 section 6.6). Every datagram therefore has
//! exactly the length it has under AES-GCM, key updates happen at the same packet counts,
//! and the run is byte-identical to one with real protection (tested in
//! `tests/crypto_modes.rs`).
//!
//! # Keyed
//! The null tag is not constant: it is a 16-byte fingerprint of the real key (the AEAD tag of
//! an empty message under it) mixed with the packet number. Decryption checks it, so a packet
//! opened with the wrong key (the other key phase around a key update, RFC 9001 section 6)
//! fails exactly as it would with AES-GCM, and quinn's key-update logic takes the same path.
//!
//! # Which keys
//! rustls hands quinn key sets in a fixed order (`KeyChange::Handshake`, then
//! `KeyChange::OneRtt`, rustls 0.23 `quic.rs`); the wrapper counts them and replaces the
//! second, and every later 1-RTT generation (`next_1rtt_keys`). Initial keys, 0-RTT (never
//! used: one connection per run) and Retry integrity stay real.

use std::any::Any;
use std::sync::Arc;

use bytes::BytesMut;
use quinn_proto::crypto::{
    self, CryptoError, ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey,
    UnsupportedVersion,
};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side, TransportError};

/// How 1-RTT packets are protected in a simulated run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CryptoMode {
    /// A keyed null cipher with the real suite's sizes and limits (the default: same packets,
    /// same report, a third less work).
    #[default]
    Null,
    /// The negotiated AEAD (AES-128-GCM) and header protection, as the binaries use.
    Real,
}

impl CryptoMode {
    /// `"null"` or `"real"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CryptoMode::Null => "null",
            CryptoMode::Real => "real",
        }
    }
}

impl std::fmt::Display for CryptoMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CryptoMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "null" => Ok(CryptoMode::Null),
            "real" => Ok(CryptoMode::Real),
            other => Err(format!(
                "unknown crypto mode {other:?}: expected \"null\" or \"real\""
            )),
        }
    }
}

/// A client TLS configuration whose sessions get null 1-RTT keys.
pub(crate) struct NullClientConfig {
    /// The real (rustls) configuration.
    pub inner: Arc<dyn crypto::ClientConfig>,
}

impl crypto::ClientConfig for NullClientConfig {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn crypto::Session>, ConnectError> {
        let inner = self
            .inner
            .clone()
            .start_session(version, server_name, params)?;
        Ok(Box::new(NullSession::new(inner)))
    }
}

/// A server TLS configuration whose sessions get null 1-RTT keys.
pub(crate) struct NullServerConfig {
    /// The real (rustls) configuration.
    pub inner: Arc<dyn crypto::ServerConfig>,
}

impl crypto::ServerConfig for NullServerConfig {
    fn initial_keys(
        &self,
        version: u32,
        dst_cid: &ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        self.inner.initial_keys(version, dst_cid)
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.inner.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(
        self: Arc<Self>,
        version: u32,
        params: &TransportParameters,
    ) -> Box<dyn crypto::Session> {
        Box::new(NullSession::new(
            self.inner.clone().start_session(version, params),
        ))
    }
}

/// A real TLS session whose 1-RTT keys are swapped for null ones.
struct NullSession {
    inner: Box<dyn crypto::Session>,
    /// Key sets returned by `write_handshake` so far (the second is 1-RTT).
    key_sets: u8,
}

impl NullSession {
    fn new(inner: Box<dyn crypto::Session>) -> Self {
        NullSession { inner, key_sets: 0 }
    }
}

impl crypto::Session for NullSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.inner.handshake_data()
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        self.inner.early_crypto()
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.inner.read_handshake(buf)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.inner.transport_parameters()
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let keys = self.inner.write_handshake(buf)?;
        self.key_sets = self.key_sets.saturating_add(1);
        if self.key_sets < 2 {
            // Handshake keys: really protected, like the Initial packets.
            return Some(keys);
        }
        Some(Keys {
            header: KeyPair {
                local: Box::new(NullHeaderKey::like(&*keys.header.local)),
                remote: Box::new(NullHeaderKey::like(&*keys.header.remote)),
            },
            packet: null_pair(keys.packet),
        })
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        // The real session still derives the next generation (cheap HKDF), so the null keys
        // stay keyed by the real secrets.
        self.inner.next_1rtt_keys().map(null_pair)
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

fn null_pair(real: KeyPair<Box<dyn PacketKey>>) -> KeyPair<Box<dyn PacketKey>> {
    KeyPair {
        local: Box::new(NullPacketKey::like(&*real.local)),
        remote: Box::new(NullPacketKey::like(&*real.remote)),
    }
}

/// Header protection that leaves the header as it is, with the real key's sample size (so
/// quinn pads short packets exactly as it would).
pub(crate) struct NullHeaderKey {
    sample_size: usize,
}

impl NullHeaderKey {
    fn like(real: &dyn HeaderKey) -> Self {
        NullHeaderKey {
            sample_size: real.sample_size(),
        }
    }
}

impl HeaderKey for NullHeaderKey {
    fn decrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn encrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn sample_size(&self) -> usize {
        self.sample_size
    }
}

/// A payload "cipher" that leaves the payload in clear and appends a keyed tag of the real
/// key's length.
pub(crate) struct NullPacketKey {
    /// The real key's AEAD tag of an empty message: a fingerprint of the key.
    fingerprint: Vec<u8>,
    confidentiality_limit: u64,
    integrity_limit: u64,
}

impl NullPacketKey {
    /// A null key standing in for `real`: same tag length and limits, keyed by it.
    pub(crate) fn like(real: &dyn PacketKey) -> Self {
        let mut probe = vec![0u8; real.tag_len()];
        // Empty header and payload: the whole buffer is the tag. Packet number 2^62 - 1 is
        // beyond any QUIC packet number (RFC 9000 section 12.3), so this nonce never
        // protects a real packet.
        real.encrypt((1 << 62) - 1, &mut probe, 0);
        NullPacketKey {
            fingerprint: probe,
            confidentiality_limit: real.confidentiality_limit(),
            integrity_limit: real.integrity_limit(),
        }
    }

    /// The tag of packet `pn`: the fingerprint with the packet number folded into its first
    /// eight bytes.
    fn tag_into(&self, pn: u64, out: &mut [u8]) {
        out.copy_from_slice(&self.fingerprint);
        for (o, p) in out.iter_mut().zip(pn.to_le_bytes()) {
            *o ^= p;
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Packets this thread protected with null keys (a unit test checks that a simulated
    /// run, which runs on the calling thread, uses them).
    static NULL_SEALED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl PacketKey for NullPacketKey {
    fn encrypt(&self, packet: u64, buf: &mut [u8], _header_len: usize) {
        #[cfg(test)]
        NULL_SEALED.with(|n| n.set(n.get() + 1));
        let tag_start = buf.len().saturating_sub(self.fingerprint.len());
        self.tag_into(packet, &mut buf[tag_start..]);
    }

    fn decrypt(
        &self,
        packet: u64,
        _header: &[u8],
        payload: &mut BytesMut,
    ) -> Result<(), CryptoError> {
        let tag_len = self.fingerprint.len();
        let Some(plain_len) = payload.len().checked_sub(tag_len) else {
            return Err(CryptoError);
        };
        let mut expected = [0u8; 64];
        let expected = expected.get_mut(..tag_len).ok_or(CryptoError)?;
        self.tag_into(packet, expected);
        if payload[plain_len..] != *expected {
            return Err(CryptoError);
        }
        payload.truncate(plain_len);
        Ok(())
    }

    fn tag_len(&self) -> usize {
        self.fingerprint.len()
    }

    fn confidentiality_limit(&self) -> u64 {
        self.confidentiality_limit
    }

    fn integrity_limit(&self) -> u64 {
        self.integrity_limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in "real" key with AES-128-GCM's sizes whose tag depends on a key byte.
    struct FakeKey(u8);

    impl PacketKey for FakeKey {
        fn encrypt(&self, packet: u64, buf: &mut [u8], _header_len: usize) {
            let n = buf.len();
            for (i, b) in buf[n - 16..].iter_mut().enumerate() {
                *b = self.0 ^ (i as u8) ^ (packet as u8);
            }
        }
        fn decrypt(&self, _: u64, _: &[u8], _: &mut BytesMut) -> Result<(), CryptoError> {
            Err(CryptoError)
        }
        fn tag_len(&self) -> usize {
            16
        }
        fn confidentiality_limit(&self) -> u64 {
            1 << 23
        }
        fn integrity_limit(&self) -> u64 {
            1 << 52
        }
    }

    #[test]
    fn null_key_round_trips_with_the_same_sizes() {
        let key = NullPacketKey::like(&FakeKey(7));
        assert_eq!(key.tag_len(), 16);
        assert_eq!(key.confidentiality_limit(), 1 << 23);
        assert_eq!(key.integrity_limit(), 1 << 52);
        let mut packet = vec![0u8; 5 + 100 + 16];
        packet[..5].copy_from_slice(b"hdr!!");
        packet[5..105].fill(0xab);
        key.encrypt(42, &mut packet, 5);
        assert_eq!(&packet[5..105], &[0xab; 100][..], "payload stays in clear");
        let mut payload = BytesMut::from(&packet[5..]);
        assert!(key.decrypt(42, &packet[..5], &mut payload).is_ok());
        assert_eq!(payload.len(), 100);
    }

    #[test]
    fn null_key_rejects_another_key_or_packet_number() {
        let a = NullPacketKey::like(&FakeKey(1));
        let b = NullPacketKey::like(&FakeKey(2));
        let mut packet = vec![0u8; 40];
        a.encrypt(9, &mut packet, 4);
        let body = BytesMut::from(&packet[4..]);
        assert!(b.decrypt(9, &packet[..4], &mut body.clone()).is_err());
        assert!(a.decrypt(10, &packet[..4], &mut body.clone()).is_err());
        assert!(a.decrypt(9, &packet[..4], &mut body.clone()).is_ok());
        assert!(a
            .decrypt(9, &[], &mut BytesMut::from(&[0u8; 3][..]))
            .is_err());
    }

    #[test]
    fn a_null_run_seals_with_null_keys_and_a_real_one_does_not() {
        use hare_link::PathConfig;
        let path = PathConfig::symmetric(
            hare_link::BitRate(50_000_000),
            hare_link::TimeSpan(10_000_000),
            None,
        );
        let mut cfg = crate::SimConfig::new("null-used", path.forward, path.reverse, "reno");
        cfg.workload = crate::Workload::Bytes(200_000);
        cfg.crypto = CryptoMode::Real;
        let before = NULL_SEALED.with(|n| n.get());
        let real = crate::simulate(&cfg, &mut |_| {}).expect("real run");
        let after_real = NULL_SEALED.with(|n| n.get());
        cfg.crypto = CryptoMode::Null;
        let null = crate::simulate(&cfg, &mut |_| {}).expect("null run");
        let after_null = NULL_SEALED.with(|n| n.get());
        assert_eq!(after_real, before, "a real run must not use null keys");
        assert!(
            after_null - after_real >= 100,
            "{} null seals",
            after_null - after_real
        );
        assert_eq!(real.datagrams, null.datagrams);
    }

    #[test]
    fn modes_parse_and_print() {
        assert_eq!("null".parse::<CryptoMode>(), Ok(CryptoMode::Null));
        assert_eq!("real".parse::<CryptoMode>(), Ok(CryptoMode::Real));
        assert!("aes".parse::<CryptoMode>().is_err());
        assert_eq!(CryptoMode::default().to_string(), "null");
    }
}
