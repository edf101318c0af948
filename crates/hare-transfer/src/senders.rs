//! Which senders a receiver lets in: SHA-256 fingerprints of sender certificates (mutual TLS,
//! see [`crate::trust`]), from `--allow` and an allow-list file in the spirit of ssh's
//! `authorized_keys`, and/or a token.
//!
//! The file holds one fingerprint per line (64 hex digits, colons and a `sha256:` prefix
//! allowed, as `hare-send id` prints it), optionally followed by white space and a comment
//! (who it is); blank lines and lines starting with `#` are ignored. Its default place is
//! `allowed-senders` in the receiver's identity directory ([`default_allow_file`]).

use std::path::{Path, PathBuf};

use crate::error::{Result, TransferError};
use crate::identity::Fingerprint;

/// Name of the allow-list file in the receiver's identity directory.
pub(crate) const ALLOW_FILE: &str = "allowed-senders";

/// The default allow-list file for a receiver whose identity lives in `identity_dir`.
pub fn default_allow_file(identity_dir: &Path) -> PathBuf {
    identity_dir.join(ALLOW_FILE)
}

/// Parse an allow list; an error names the line.
pub(crate) fn parse_allow_list(text: &str) -> Result<Vec<Fingerprint>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line.split_whitespace().next().unwrap_or(line);
        let fp = first.parse::<Fingerprint>().map_err(|_| {
            format!(
                "line {}: `{first}` is not a SHA-256 fingerprint (64 hex digits, colons allowed)",
                n + 1
            )
        })?;
        out.push(fp);
    }
    Ok(out)
}

/// Read the allow list at `path`. `Ok(None)` when the file does not exist.
pub fn load_allow_file(path: &Path) -> Result<Option<Vec<Fingerprint>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TransferError::io(format!("reading {}", path.display()), e)),
    };
    parse_allow_list(&text)
        .map(Some)
        .map_err(|e| TransferError::Usage(format!("{}: {e}", path.display())))
}

/// How a receiver authorises senders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Authorisation {
    /// Sender certificate fingerprints let in.
    pub allow: Vec<Fingerprint>,
    /// The token that lets a sender in (`--token`).
    pub token: Option<String>,
}

impl Authorisation {
    /// True when neither fingerprints nor a token are configured: anyone who reaches the port
    /// gets in.
    pub(crate) fn is_open(&self) -> bool {
        self.allow.is_empty() && self.token.is_none()
    }

    /// Decide on a sender that presented certificate `peer` (if any) and `token`. Either an
    /// allowed fingerprint or the right token lets it in; `Err` is the reason for the sender.
    pub fn check(&self, peer: Option<Fingerprint>, token: Option<&str>) -> Result<(), String> {
        if self.is_open() {
            return Ok(());
        }
        if peer.is_some_and(|p| self.allow.contains(&p)) {
            return Ok(());
        }
        if let Some(required) = &self.token {
            if crate::trust::token_matches(required, token) {
                return Ok(());
            }
        }
        let token_part = match (&self.token, token) {
            (None, _) => None,
            (Some(_), Some(_)) => Some("wrong token"),
            (Some(_), None) => Some("a token is required (--token or HARE_TOKEN)"),
        };
        let cert_part = match (self.allow.is_empty(), peer) {
            (true, _) => None,
            (false, Some(p)) => Some(format!(
                "sender certificate sha256 {p} is not allowed (the receiver's owner can add it \
                 with hare-recv --allow or to its {ALLOW_FILE} file)"
            )),
            (false, None) => Some("no sender certificate presented".to_owned()),
        };
        Err(match (token_part, cert_part) {
            (Some(t), None) => format!("not authorised: {t}"),
            (None, Some(c)) => format!("not authorised: {c}"),
            (Some(t), Some(c)) => format!("not authorised: {c}, and {t}"),
            (None, None) => "not authorised".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_list_lines_comments_and_errors() {
        let a = Fingerprint::of(b"a");
        let b = Fingerprint::of(b"b");
        let text = format!("# senders\n\n{a}  laptop\n  sha256:{b}\n");
        assert_eq!(parse_allow_list(&text), Ok(vec![a, b]));
        let e = parse_allow_list("# x\nnot-a-fingerprint\n").expect_err("bad line");
        assert!(e.starts_with("line 2: "), "{e}");
    }

    #[test]
    fn either_credential_lets_a_sender_in() {
        let good = Fingerprint::of(b"good");
        let other = Fingerprint::of(b"other");
        let auth = Authorisation {
            allow: vec![good],
            token: Some("s3cret".into()),
        };
        assert!(auth.check(Some(good), None).is_ok());
        assert!(auth.check(Some(other), Some("s3cret")).is_ok());
        let e = auth.check(Some(other), Some("nope")).expect_err("refused");
        assert!(
            e.contains(&other.to_string()) && e.contains("wrong token"),
            "{e}"
        );
        let only_certs = Authorisation {
            allow: vec![good],
            token: None,
        };
        assert_eq!(
            only_certs.check(None, Some("s3cret")),
            Err("not authorised: no sender certificate presented".to_owned())
        );
        assert!(Authorisation::default().check(None, None).is_ok());
    }
}
