//! The receiver's identity: a self-signed certificate and key made with rcgen on first start
//! and kept in a state directory, and SHA-256 fingerprints to pin it. A sender has an
//! identity of the same kind (its own directory, [`default_sender_dir`]), which it presents
//! to receivers that authorise senders by fingerprint.
//!
//! Files: `DIR/cert.pem` (the certificate chain, end entity first) and `DIR/key.pem` (PKCS#8,
//! created with mode 0600). A user can put a CA-issued pair there instead; the receiver uses
//! whatever it finds and makes a new self-signed pair only when neither file exists.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

use crate::error::{Result, TransferError};

/// The certificate chain and key of a receiver.
#[derive(Debug)]
pub struct Identity {
    /// Certificate chain, end entity first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key.
    pub key: PrivateKeyDer<'static>,
    /// SHA-256 fingerprint of the end-entity certificate.
    pub fingerprint: Fingerprint,
    /// True when this start created the pair.
    pub created: bool,
    /// Where the certificate lives.
    pub cert_path: PathBuf,
}

/// The default state directory: `$XDG_STATE_HOME/hare` (usually `~/.local/state/hare`).
pub fn default_dir() -> Option<PathBuf> {
    dirs::state_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))
        .map(|d| d.join("hare"))
}

/// The default state directory of a sender's own identity: `$XDG_STATE_HOME/hare/sender`
/// (a receiver on the same host keeps its pair one level up, so the two never mix).
pub fn default_sender_dir() -> Option<PathBuf> {
    default_dir().map(|d| d.join("sender"))
}

/// A fresh self-signed identity for `localhost` (+ `names`) held in memory only (tests and
/// embedders that keep no state).
pub fn ephemeral(names: &[String]) -> Result<Identity> {
    let mut sans = vec!["localhost".to_owned()];
    sans.extend(names.iter().filter(|n| *n != "localhost").cloned());
    let ck = rcgen::generate_simple_self_signed(sans).map_err(|e| TransferError::Identity {
        dir: PathBuf::new(),
        message: format!("cannot generate a certificate: {e}"),
    })?;
    let der = ck.cert.der().clone();
    let fingerprint = Fingerprint::of(der.as_ref());
    Ok(Identity {
        chain: vec![der],
        key: PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into()),
        fingerprint,
        created: true,
        cert_path: PathBuf::new(),
    })
}

/// A SHA-256 certificate fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of(der: &[u8]) -> Self {
        Self(Sha256::digest(der).into())
    }

    /// The fingerprint of the first certificate in a PEM file (a receiver's `cert.pem`).
    pub fn of_pem_file(path: &Path) -> Result<Self> {
        let cert = CertificateDer::pem_file_iter(path)
            .map_err(|e| TransferError::Trust(format!("{}: {e}", path.display())))?
            .next()
            .ok_or_else(|| {
                TransferError::Trust(format!("{}: no certificate in the file", path.display()))
            })?
            .map_err(|e| TransferError::Trust(format!("{}: {e}", path.display())))?;
        Ok(Self::of(cert.as_ref()))
    }
}

impl std::fmt::Display for Fingerprint {
    /// Lower-case hex, 64 digits, no separators.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Fingerprint {
    type Err = TransferError;

    /// Hex, case-insensitive, with optional `:` separators and an optional `sha256:` prefix.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim();
        let t = t
            .strip_prefix("sha256:")
            .or_else(|| t.strip_prefix("SHA256:"))
            .unwrap_or(t);
        let hex: String = t.chars().filter(|c| *c != ':').collect();
        let bad = || {
            TransferError::Trust(format!(
                "bad pin `{s}`: expected a SHA-256 fingerprint, 64 hex digits (colons allowed)"
            ))
        };
        if hex.len() != 64 || !hex.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Self(out))
    }
}

/// Load the identity in `dir`, creating a self-signed one (for `names`, plus `localhost`) when
/// the directory holds none.
pub fn load_or_create(dir: &Path, names: &[String]) -> Result<Identity> {
    let err = |message: String| TransferError::Identity {
        dir: dir.to_path_buf(),
        message,
    };
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    let mut created = false;
    match (cert_path.exists(), key_path.exists()) {
        (true, true) => {}
        (false, false) => {
            std::fs::create_dir_all(dir).map_err(|e| err(format!("cannot create: {e}")))?;
            // The state directory holds a private key: keep it to its owner.
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            let mut sans = vec!["localhost".to_owned()];
            sans.extend(names.iter().filter(|n| *n != "localhost").cloned());
            let ck = rcgen::generate_simple_self_signed(sans)
                .map_err(|e| err(format!("cannot generate a certificate: {e}")))?;
            write_new(&key_path, ck.key_pair.serialize_pem().as_bytes(), 0o600)
                .map_err(|e| err(format!("cannot write {}: {e}", key_path.display())))?;
            write_new(&cert_path, ck.cert.pem().as_bytes(), 0o644)
                .map_err(|e| err(format!("cannot write {}: {e}", cert_path.display())))?;
            created = true;
        }
        (c, _) => {
            let missing = if c { &key_path } else { &cert_path };
            return Err(err(format!(
                "{} is missing (remove the other file to make a new identity)",
                missing.display()
            )));
        }
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .map_err(|e| err(format!("{}: {e}", cert_path.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| err(format!("{}: {e}", cert_path.display())))?;
    let first = chain
        .first()
        .ok_or_else(|| err(format!("{}: no certificate", cert_path.display())))?;
    let fingerprint = Fingerprint::of(first.as_ref());
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .map_err(|e| err(format!("{}: {e}", key_path.display())))?;
    Ok(Identity {
        chain,
        key,
        fingerprint,
        created,
        cert_path,
    })
}

fn write_new(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_once_with_private_key_mode_then_reloads() {
        let d = tempfile::tempdir().expect("tempdir");
        let dir = d.path().join("state");
        let a = load_or_create(&dir, &[]).expect("create");
        assert!(a.created);
        let mode = std::fs::metadata(dir.join("key.pem"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let b = load_or_create(&dir, &[]).expect("reload");
        assert!(!b.created);
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_eq!(
            Fingerprint::of_pem_file(&dir.join("cert.pem")).ok(),
            Some(a.fingerprint)
        );
    }

    #[test]
    fn half_an_identity_is_an_error() {
        let d = tempfile::tempdir().expect("tempdir");
        load_or_create(d.path(), &[]).expect("create");
        std::fs::remove_file(d.path().join("key.pem")).expect("rm");
        assert!(load_or_create(d.path(), &[]).is_err());
    }

    #[test]
    fn fingerprint_parses_hex_with_colons_and_prefix() {
        let f = Fingerprint::of(b"abc");
        let hex = f.to_string();
        assert_eq!(hex.len(), 64);
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let colons: Vec<String> = f.0.iter().map(|b| format!("{b:02X}")).collect();
        let with = format!("sha256:{}", colons.join(":"));
        assert_eq!(with.parse::<Fingerprint>().ok(), Some(f));
        assert!("abcd".parse::<Fingerprint>().is_err());
        assert!("zz".repeat(32).parse::<Fingerprint>().is_err());
    }
}
