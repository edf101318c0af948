//! Whose a partial file is. A kept partial is bound to the sender that wrote it: its name
//! carries a tag derived from the sender's identity ([`crate::names::part_name`]), so another
//! sender's `--resume` of the same name reaches a different file and learns nothing of this
//! one (neither its length nor its digest), and can neither take it over nor remove it.

use crate::identity::Fingerprint;

/// The sender a job's files belong to, as the 64-bit tag in their part names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner(u64);

/// Domain separation of the tags (BLAKE3's key derivation mode).
const CONTEXT: &str = "hare-recv 2026-12 partial file owner";

impl Owner {
    /// A sender known by its certificate (mutual TLS).
    pub fn certificate(fp: &Fingerprint) -> Self {
        Self::derive(b"certificate", &fp.0)
    }

    /// Senders known only by the token they present (a token-only receiver, or kernel TCP,
    /// which carries no certificate): every holder of the token is one owner. The tag is a
    /// one-way derivation, so a file name does not show the token.
    pub fn token(token: &str) -> Self {
        Self::derive(b"token", token.as_bytes())
    }

    /// A sender named by the receiver itself (a pull through ssh: the ssh login, which ssh
    /// authenticated, since the remote sender's certificate is new on every run).
    pub fn named(name: &str) -> Self {
        Self::derive(b"named", name.as_bytes())
    }

    /// A sender with neither (an `--open` receiver and no certificate).
    pub fn anonymous() -> Self {
        Self::derive(b"anonymous", &[])
    }

    /// The owner of a job, by how its sender was let in: by an allowed certificate, then by
    /// the token (token-only receivers), then by whatever certificate it showed.
    pub fn of_job(
        allowed_cert: Option<&Fingerprint>,
        token: Option<&str>,
        cert: Option<&Fingerprint>,
    ) -> Self {
        match (allowed_cert, token, cert) {
            (Some(fp), _, _) => Self::certificate(fp),
            (None, Some(t), _) => Self::token(t),
            (None, None, Some(fp)) => Self::certificate(fp),
            (None, None, None) => Self::anonymous(),
        }
    }

    fn derive(kind: &[u8], data: &[u8]) -> Self {
        let mut h = blake3::Hasher::new_derive_key(CONTEXT);
        h.update(&(kind.len() as u64).to_be_bytes());
        h.update(kind);
        h.update(data);
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&h.finalize().as_bytes()[..8]);
        Self(u64::from_be_bytes(tag))
    }

    /// An owner with this tag (unit tests).
    #[cfg(test)]
    pub(crate) const fn for_tests(tag: u64) -> Self {
        Self(tag)
    }

    /// The tag in part names.
    pub fn tag(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_differ_by_kind_and_identity() {
        let a = Fingerprint([1; 32]);
        let b = Fingerprint([2; 32]);
        assert_ne!(Owner::certificate(&a), Owner::certificate(&b));
        assert_eq!(
            Owner::certificate(&a),
            Owner::certificate(&Fingerprint([1; 32]))
        );
        assert_ne!(Owner::token("t"), Owner::token("u"));
        assert_ne!(Owner::token(""), Owner::anonymous());
        assert_eq!(Owner::of_job(None, Some("t"), Some(&a)), Owner::token("t"));
        assert_eq!(
            Owner::of_job(Some(&a), Some("t"), Some(&a)),
            Owner::certificate(&a)
        );
        assert_eq!(Owner::of_job(None, None, Some(&b)), Owner::certificate(&b));
    }
}
