//! Why a file failed on the receiver, as the `file-result` message carries it: below both the
//! protocol (which carries it) and the error type (which holds it).

use serde::{Deserialize, Serialize};

/// Why a file failed on the receiver, carried to the sender beside the text so that it can
/// say it in words and choose its exit status. A code this version does not know reads as
/// [`FailCode::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailCode {
    /// No space or quota left (`ENOSPC`, `EDQUOT`, `EFBIG`).
    DiskFull,
    /// The receiver may not write there (`EACCES`, `EPERM`, `EROFS`).
    Permission,
    /// The name cannot be stored (refused by the receiver's name rules, or in the way).
    NameRefused,
    /// The file exists under its final name (no `--force`).
    Exists,
    /// The sender saw the file change while reading it.
    Changed,
    /// The data did not match the sender's digest.
    DigestMismatch,
    /// Anything else (a transport error, a misbehaving sender, an unexpected I/O error).
    #[serde(other)]
    Other,
}

impl FailCode {
    /// The kind of an I/O error.
    pub fn of_io(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => Self::DiskFull,
            Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => Self::Permission,
            Some(libc::EEXIST) => Self::Exists,
            Some(libc::ENAMETOOLONG) | Some(libc::EILSEQ) => Self::NameRefused,
            _ => Self::Other,
        }
    }

    /// The failure in a few words, for the sender's user.
    pub fn words(self) -> &'static str {
        match self {
            Self::DiskFull => "disk full on the receiver",
            Self::Permission => "permission denied on the receiver",
            Self::NameRefused => "name refused by the receiver",
            Self::Exists => "exists on the receiver",
            Self::Changed => "changed while being sent",
            Self::DigestMismatch => "corrupted in transit (digest mismatch)",
            Self::Other => "failed",
        }
    }
}
