//! The exit status of hare-send and hare-recv: every way a run can end, mapped to its number
//! in one place ([`ExitKind::code`]), and from the engine's errors in one place
//! ([`ExitKind::of`]). The numbers follow the conventions scripts already know: 0 success,
//! 1 any other error, 2 a bad command line (what clap itself exits with), 128 + the signal's
//! number for a run a signal cut short (as shells report it: 130 Ctrl-C, 143 SIGTERM, 129
//! SIGHUP), and small distinct numbers between for what rsync tells apart (its 23 "partial
//! transfer", 5 "error starting the client-server protocol" for refusals, 12 and 30 for a
//! broken stream and a timeout).

use crate::error::TransferError;

/// How a run ended, as its exit status says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// Everything asked for was done.
    Ok,
    /// An error not listed below (a local I/O error, the identity, a configuration).
    Error,
    /// A bad command line or option value (clap's own errors exit with 2 too).
    Usage,
    /// The job ran, but some files (or links) failed; each was reported with its reason.
    FilesFailed,
    /// The receiver refused the job (busy, limits, a name that exists, no `--dir`...).
    Refused,
    /// Authentication failed: the receiver did not authorise this sender (certificate or
    /// token), or the receiver's certificate did not match `--pin`/`--cert`/`--ca`.
    Auth,
    /// The peer could not be reached or went away: no answer, connection lost, idle timeout,
    /// the peer aborted or broke the protocol.
    Connection,
    /// A signal stopped a run that had not completed (the signal's number).
    Signal(u8),
}

impl ExitKind {
    /// The exit status.
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Error => 1,
            Self::Usage => 2,
            Self::FilesFailed => 3,
            Self::Refused => 4,
            Self::Auth => 5,
            Self::Connection => 6,
            Self::Signal(n) => 128u8.saturating_add(n),
        }
    }

    /// The kind of an engine error. An interrupted run without a known signal counts as
    /// Ctrl-C (SIGINT, 2).
    pub fn of(e: &TransferError) -> Self {
        match e {
            // The trust settings are what the user gave: a bad pin, no trust at all, a CA file
            // that cannot be read.
            TransferError::Usage(_) | TransferError::Trust(_) => Self::Usage,
            TransferError::File { .. } | TransferError::FilesFailed { .. } => Self::FilesFailed,
            TransferError::Refused(r) if is_unauthorised(r) => Self::Auth,
            TransferError::Refused(_) | TransferError::Busy(_) => Self::Refused,
            TransferError::PinMismatch { .. } => Self::Auth,
            TransferError::Connection(t) if is_certificate_refusal(t) => Self::Auth,
            TransferError::Connection(_)
            | TransferError::Broken { .. }
            | TransferError::Timeout(_)
            | TransferError::Protocol(_) => Self::Connection,
            TransferError::Interrupted => Self::Signal(2),
            TransferError::Io { .. }
            | TransferError::Identity { .. }
            | TransferError::Config(_) => Self::Error,
        }
    }
}

/// True for a receiver's refusal of the sender's credentials: hare-recv's authorisation
/// check ([`crate::senders`]) words every such refusal `not authorised...`.
fn is_unauthorised(reason: &str) -> bool {
    reason.starts_with("not authorised")
}

/// True for a TLS handshake that failed on the receiver's certificate (`--ca` or a name
/// check), as the sender words it (`sender::tls_text`).
fn is_certificate_refusal(text: &str) -> bool {
    text.contains("certificate was refused") || text.contains("certificate not valid for name")
}

/// The exit statuses of hare-send, for `--help`.
pub const SEND_EXIT_HELP: &str = "\
Exit status:
  0    done (a bulk run stopped by a signal still ends with its summary and 0, like nuttcp)
  1    an error not listed below (a source that cannot be read, local I/O, identity)
  2    bad command line or option value (also a bad or missing --pin/--cert/--ca)
  3    some files failed (each reported with its reason; like rsync's 23)
  4    the receiver refused the job (busy, limits, a name that exists...)
  5    authentication failed: the receiver did not authorise this sender, or its certificate
       did not match --pin/--cert/--ca
  6    the connection failed or was lost: no answer, the receiver went silent
       (--idle-timeout), aborted, reset or broke the protocol (like rsync's 10, 12 and 30)
  128+N  a file transfer stopped by signal N: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP";

/// The exit statuses of hare-recv, for `--help`.
pub const RECV_EXIT_HELP: &str = "\
Exit status:
  0    stopped by Ctrl-C, SIGTERM or SIGHUP (a server asked to stop), or the --one-shot job
       completed
  1    an error not listed below (address in use, identity, configuration)
  2    bad command line or option value
  With --one-shot, the job's end, as for hare-send:
  3    some files failed
  4    the job was refused (busy, limits, names)
  5    the sender was not authorised
  6    the connection was lost, timed out, or the sender broke the protocol
  128+N  the job was cut short by signal N (143 SIGTERM)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_status_and_errors_map_once() {
        let kinds = [
            ExitKind::Ok,
            ExitKind::Error,
            ExitKind::Usage,
            ExitKind::FilesFailed,
            ExitKind::Refused,
            ExitKind::Auth,
            ExitKind::Connection,
            ExitKind::Signal(2),
            ExitKind::Signal(15),
            ExitKind::Signal(1),
        ];
        let codes: Vec<u8> = kinds.iter().map(|k| k.code()).collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4, 5, 6, 130, 143, 129]);
        let refused = |r: &str| ExitKind::of(&TransferError::Refused(r.into()));
        assert_eq!(
            refused("not authorised: no sender certificate"),
            ExitKind::Auth
        );
        assert_eq!(refused("t/a: exists"), ExitKind::Refused);
        let conn = |t: &str| ExitKind::of(&TransferError::Connection(t.into()));
        assert_eq!(
            conn("h: the receiver's certificate was refused: it has expired"),
            ExitKind::Auth
        );
        assert_eq!(conn("h: no answer"), ExitKind::Connection);
        assert_eq!(
            ExitKind::of(&TransferError::Timeout("idle".into())),
            ExitKind::Connection
        );
        assert_eq!(
            ExitKind::of(&TransferError::FilesFailed {
                failed: 1,
                total: 2
            }),
            ExitKind::FilesFailed
        );
        assert_eq!(
            ExitKind::of(&TransferError::Usage("-P 0".into())),
            ExitKind::Usage
        );
    }
}
